"""Shadow catalog pages and heap redo: the catalog rows the WAL's catalog records write.

Owns, per (relfilenode, block) of the catalogs the history tracks, the tuples by line pointer:
seeded from full-page images as they appear, or else from the snapshot's own tuples of the page
(``Catalog.catalog_pages``) when a record at or after the snapshot's LSN first needs it, and kept
current with heap redo (heapam.c ``heap_xlog_insert``, ``_multi_insert``, ``_update`` with
prefix/suffix compression, ``_delete``'s and ``_update``'s xmax, ``_inplace``); a catalog
rewrite's transient heap (``pg_temp_<OID>``) is kept as that catalog's.  Hands each inserted and
deleted row, decoded (``pg_catalog.CatalogLayout``), and each record it cannot redo, to its sink
(the history), which files them per transaction; tuples leave the pages when their transaction ends.
"""

from __future__ import annotations

import struct

from ...errors import CorruptRecordError, DecompressionError, WALError
from ...wal.fpi import image_is_applied, restore_block_image
from ...heap.heaptuple import (  # src/include/access/htup_details.h
    HEAP_KEYS_UPDATED,
    HEAP_MOVED,
    HEAP_XMAX_BITS,
    HEAP_XMAX_INVALID,
    HEAP_XMAX_LOCK_ONLY,
    HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID,
    T_HOFF,
    T_INFOMASK2,
    T_XMAX,
    T_XMIN,
    HeapTupleHeaderData,
    SizeofHeapTupleHeader,
)
from ...pg.lsn import format_lsn
from ...pg.transam import xid_precedes
from ...rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_XLOG_ID
from ...rmgr.heap import (  # src/include/access/heapam_xlog.h, declared once in the rmgr module
    SizeOfHeapHeader,
    SizeOfHeapMultiInsert,
    SizeOfMultiInsertTuple,
    XLH_UPDATE_PREFIX_FROM_OLD,
    XLH_UPDATE_SUFFIX_FROM_OLD,
    XLOG_HEAP2_MULTI_INSERT,
    XLOG_HEAP_DELETE,
    XLOG_HEAP_HOT_UPDATE,
    XLOG_HEAP_INIT_PAGE,
    XLOG_HEAP_INPLACE,
    XLOG_HEAP_INSERT,
    XLOG_HEAP_OPMASK,
    XLOG_HEAP_UPDATE,
    fix_infomask_from_infobits,
    xl_heap_delete,
    xl_heap_header,
    xl_heap_insert,
    xl_heap_multi_insert,
    xl_heap_update,
    xl_multi_insert_tuple,
)
from ..model import Catalog, CatalogError, CatalogPages
from ..pg_catalog import DECODED_COLUMNS, OPTIONAL_CATALOGS, TRACKED_CATALOGS, CatalogLayout

# htup_details.h: HeapTupleHeaderData's fields rewritten in place (t_xmax; t_infomask2 and t_infomask together)
_t_xmax = struct.Struct("<I")
_t_infomasks = struct.Struct("<HH")
_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")


#: where a shadow page came from: all of its live tuples are known, except for _WAL
_IMAGE = "a full-page image"
_INIT = "a record that initialised it"
_SNAPSHOT = "the catalog snapshot"
_WAL = "the WAL"  # only the tuples the records read wrote


class _Page:
    """A catalog page as far as it is known: tuples by offset number, and where they came from
    (``source``, at ``lsn``).  Tuples deleted by a committed transaction, and inserted by an
    aborted one, are removed when that transaction ends (as pruning would): what stays is live."""

    __slots__ = ("tuples", "source", "lsn")

    def __init__(self, source: str, lsn: int, tuples: dict | None = None):
        self.tuples: dict[int, bytes] = {} if tuples is None else tuples
        self.source = source
        self.lsn = lsn


def _with_xmax(tup: bytes, xmax: int, infobits: int) -> bytes:
    """The tuple as heap_xlog_delete / heap_xlog_update leave the old version: t_xmax set, its
    infomask bits from the record."""
    infomask2, infomask = _t_infomasks.unpack_from(tup, T_INFOMASK2)
    infomask, infomask2 = fix_infomask_from_infobits(infobits, infomask & ~(HEAP_XMAX_BITS | HEAP_MOVED),
                                                      infomask2 & ~HEAP_KEYS_UPDATED)
    out = bytearray(tup)
    _t_xmax.pack_into(out, T_XMAX, xmax)
    _t_infomasks.pack_into(out, T_INFOMASK2, infomask2, infomask)
    return bytes(out)


def _without_xmax(tup: bytes) -> bytes:
    """The old version after its deleter aborted, as a hint bit would mark it: t_xmax invalid."""
    infomask2, infomask = _t_infomasks.unpack_from(tup, T_INFOMASK2)
    out = bytearray(tup)
    _t_xmax.pack_into(out, T_XMAX, 0)
    _t_infomasks.pack_into(out, T_INFOMASK2, infomask2 & ~HEAP_KEYS_UPDATED,
                           (infomask & ~HEAP_XMAX_BITS) | HEAP_XMAX_INVALID)
    return bytes(out)


class CatalogRedo:
    """The tracked catalogs' pages as far as the WAL read (and the snapshot) show them, kept current by
    redoing the heap records written to them."""

    def __init__(self, catalog: Catalog, major: int, sink, warn=None):
        self.base = catalog
        self.major = major
        self.sink = sink
        self.warn = warn
        self.db = catalog.database_oid
        self.dbspc = catalog.database_tablespace
        self.inactive_reason: str | None = None
        self.layouts: dict[int, CatalogLayout] = {}
        self.nodes: dict[int, int] = {}  # relfilenode (in the database's tablespace) -> catalog OID
        encoding = catalog.settings.get("server_encoding")
        for oid, columns in DECODED_COLUMNS.items():
            rel = catalog.relation(oid)
            if (rel is None or not rel.attributes or not rel.relfilenode) and oid in OPTIONAL_CATALOGS:
                continue
            if rel is None or not rel.attributes or not rel.relfilenode:
                self.inactive_reason = (f"the catalog snapshot has no {TRACKED_CATALOGS[oid]} (OID {oid}) with "
                                        "its columns and relfilenode: catalog changes in the WAL are not tracked")
                self.layouts.clear()
                self.nodes.clear()
                break
            if (rel.reltablespace or self.dbspc) != self.dbspc:
                continue
            self.layouts[oid] = CatalogLayout(rel, columns, encoding)
            self.nodes[rel.relfilenode] = oid
        # The snapshot's own tuples of the tracked catalogs: a page the WAL shows no image of is taken
        # from them when a record at or after the snapshot's LSN first needs it
        self._seed_lsn = catalog.lsn
        self._seeds: dict[int, CatalogPages] = {}  # relfilenode -> the snapshot's pages of that catalog
        for oid, pages in catalog.catalog_pages.items():
            if self.nodes.get(pages.relfilenode) == oid:
                self._seeds[pages.relfilenode] = pages
        self._seeded: set = set()  # (relfilenode, blkno) whose snapshot tuples were taken
        self.pages: dict[tuple, _Page] = {}
        # xid -> [(relfilenode, blkno, offnum, inserted)]: the tuples a (sub)transaction still running
        # inserted and deleted, removed from the shadow pages when it aborts, resp. commits
        self.writes: dict[int, list] = {}
        # xid -> relfilenodes of the transient heaps of catalogs it rewrites (VACUUM FULL, CLUSTER):
        # their pages are kept as the catalog's, and dropped if the transaction aborts
        self.rewrites: dict[int, set] = {}
        #: the first transaction whose catalog rows are events (tuples of older ones were there before the read)
        self.first_xid = 0

    @property
    def count(self) -> int:
        """How many pages are known (``BaseFacts`` looks again when this grows)."""
        return len(self.pages)

    def wants(self, rec) -> bool:
        """Does the record write or image a tracked catalog's page?  (Heap records name the page in block
        0, the old page of an update in block 1 of the same relation; XLOG FPI records image pages.)"""
        rmid = rec.xl_rmid
        if rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID:
            return bool(rec.blocks) and rec.blocks[0].relNumber in self.nodes
        return rmid == RM_XLOG_ID and bool(rec.blocks)

    def apply(self, rec) -> None:
        """Redo a record ``wants``: its full-page images of tracked pages, then its heap change."""
        if not self.first_xid and rec.xl_xid:
            self.first_xid = rec.xl_xid
        nodes = self.nodes
        restored = None
        for b in rec.blocks:
            if b.has_image and b.relNumber in nodes and b.forknum == 0 and b.dbOid == self.db \
                    and b.spcOid == self.dbspc and image_is_applied(b, self.major):
                if restored is None:
                    restored = {}
                key = (b.relNumber, b.blkno)
                restored[key] = self._page(b.relNumber, b.blkno, rec.lsn)  # as it was before the image
                where = f"full-page image at {format_lsn(rec.lsn)} of {b.spcOid}/{b.dbOid}/{b.relNumber}"
                try:
                    # lazy: catalog.datadir (construct, crc32c: 50 ms), only when a catalog page image comes
                    from ..datadir.heapscan import heap_page_tuples

                    tuples = heap_page_tuples(restore_block_image(b, self.major, rec.lsn), where, b.blkno)
                except (DecompressionError, CatalogError) as e:
                    self.pages.pop(key, None)  # unknown from here on, until the next image
                    self.sink.problem(rec, self.nodes[b.relNumber], b, 0,
                                      f"unreadable full-page image: {getattr(e, 'reason', e)}")
                    continue
                self.pages[key] = _Page(_IMAGE, rec.lsn, tuples)
        if rec.xl_rmid == RM_HEAP_ID:
            self._heap(rec, restored)
        elif rec.xl_rmid == RM_HEAP2_ID:
            self._heap2(rec, restored)

    # heap redo ----------------------------------------------------------------------------------

    def _catalog_block(self, rec, block_id: int = 0):
        b = rec.block(block_id)
        if b is None or b.forknum != 0 or b.dbOid != self.db or b.spcOid != self.dbspc:
            return None, None
        cat = self.nodes.get(b.relNumber)
        if cat is None:
            return None, None
        return b, cat

    def _heap(self, rec, restored) -> None:
        info = rec.xl_info & XLOG_HEAP_OPMASK
        blk, cat = self._catalog_block(rec)
        if blk is None:
            return
        try:
            if info == XLOG_HEAP_INSERT:
                self._redo_insert(rec, blk, cat, restored)
            elif info in (XLOG_HEAP_UPDATE, XLOG_HEAP_HOT_UPDATE):
                self._redo_update(rec, blk, cat, restored)
            elif info == XLOG_HEAP_DELETE:
                self._redo_delete(rec, blk, cat)
            elif info == XLOG_HEAP_INPLACE:
                self._redo_inplace(rec, blk, cat, restored)
            # LOCK and CONFIRM change tuple headers only
        except (CorruptRecordError, DecompressionError, struct.error, IndexError) as e:
            self.sink.problem(rec, cat, blk, 0, f"cannot decode the catalog record: {getattr(e, 'reason', e)}")

    def _heap2(self, rec, restored) -> None:
        info = rec.xl_info & XLOG_HEAP_OPMASK
        if info != XLOG_HEAP2_MULTI_INSERT:
            return  # prune, vacuum, freeze, visible, lock: line pointers and headers only
        blk, cat = self._catalog_block(rec)
        if blk is None:
            return
        try:
            self._redo_multi_insert(rec, blk, cat, restored)
        except (CorruptRecordError, DecompressionError, struct.error, IndexError) as e:
            self.sink.problem(rec, cat, blk, 0, f"cannot decode the catalog record: {getattr(e, 'reason', e)}")

    def _page(self, node: int, blkno: int, lsn: int) -> _Page | None:
        """The shadow page of block ``blkno`` of ``node`` as known for a record at ``lsn``.

        The snapshot's tuples of the block are taken the first time a record at or after the
        snapshot's LSN needs it (they describe the page then, not before); tuples the WAL wrote
        before that LSN stay where the snapshot has none (a row then in progress, say)."""
        key = (node, blkno)
        page = self.pages.get(key)
        if (page is None or page.source is _WAL) and self._seeds and lsn >= self._seed_lsn \
                and key not in self._seeded:
            pages = self._seeds.get(node)
            if pages is not None:
                self._seeded.add(key)
                try:
                    tuples = pages.tuples(blkno)
                except CatalogError as e:  # a damaged snapshot file: the block counts as not in it
                    tuples = None
                    if self.warn is not None:
                        self.warn(str(e))
                if tuples is not None:
                    source = _WAL if blkno in pages.partial else _SNAPSHOT
                    if page is None:
                        page = self.pages[key] = _Page(source, self._seed_lsn, tuples)
                    else:
                        page.tuples = {**page.tuples, **tuples}
                        page.source, page.lsn = source, self._seed_lsn
        return page

    def _page_for_write(self, rec, blk) -> _Page:
        key = (blk.relNumber, blk.blkno)
        if rec.xl_info & XLOG_HEAP_INIT_PAGE:
            page = self.pages[key] = _Page(_INIT, rec.lsn)
            return page
        page = self._page(blk.relNumber, blk.blkno, rec.lsn)
        if page is None:
            page = self.pages[key] = _Page(_WAL, rec.lsn)
        return page

    def _tuple(self, blk, offnum: int, lsn: int):
        page = self._page(blk.relNumber, blk.blkno, lsn)
        return None if page is None else page.tuples.get(offnum)

    def _why_missing(self, blk, offnum: int, lsn: int) -> str:
        page = self.pages.get((blk.relNumber, blk.blkno))
        if page is not None and page.source is _SNAPSHOT:
            return (f"the catalog snapshot (taken at {format_lsn(self._seed_lsn)}) has no live tuple at offset "
                    f"{offnum}: the row was written by a transaction still running when the snapshot was taken, "
                    "or after the snapshot and before the start of the WAL read")
        if page is not None and page.source is not _WAL:
            return f"the page (from {page.source} at {format_lsn(page.lsn)}) has no tuple at offset {offnum}"
        why = "the page was never seen: its last full-page image precedes the start of the WAL read"
        pages = self._seeds.get(blk.relNumber)
        cat = self.nodes.get(blk.relNumber)
        if pages is not None and lsn < self._seed_lsn:
            why += (f", and the catalog snapshot's pages describe the catalog at {format_lsn(self._seed_lsn)}, "
                    "after this record")
        elif pages is not None:
            why += ", and the catalog snapshot does not hold that page"
        elif cat is not None and not self.base.catalog_pages:
            why += (f", and the catalog snapshot carries no pages of {TRACKED_CATALOGS[cat]} (taken without them: "
                    "see waldecode catalog)")
        return why

    @staticmethod
    def _build_tuple(xid: int, blkno: int, offnum: int, infomask2: int, infomask: int, t_hoff: int,
                     body) -> bytes:
        return HeapTupleHeaderData.pack(xid, 0, 0, blkno >> 16, blkno & 0xFFFF, offnum, infomask2, infomask,
                                  t_hoff) + bytes(body)

    def _wrote(self, rec, blk, offnum: int, inserted: bool) -> None:
        """Remember a tuple a transaction inserted or deleted, to drop it when that is final."""
        if rec.xl_xid:
            self.writes.setdefault(rec.xl_xid, []).append((blk.relNumber, blk.blkno, offnum, inserted))

    def _redo_insert(self, rec, blk, cat: int, restored) -> None:
        offnum, _flags = xl_heap_insert.unpack_from(rec.main_data, 0)
        if restored is not None and (blk.relNumber, blk.blkno) in restored:
            tup = self._tuple(blk, offnum, rec.lsn)
            if tup is None:
                self.sink.problem(rec, cat, blk, offnum, "the full-page image has no tuple at the inserted offset")
                return
        else:
            data = blk.data
            if len(data) < SizeOfHeapHeader:
                self.sink.problem(rec, cat, blk, offnum, "the record carries no tuple")
                return
            infomask2, infomask, t_hoff = xl_heap_header.unpack_from(data, 0)
            tup = self._build_tuple(rec.xl_xid, blk.blkno, offnum, infomask2, infomask, t_hoff,
                                    data[SizeOfHeapHeader:])
            self._page_for_write(rec, blk).tuples[offnum] = tup
        self._wrote(rec, blk, offnum, True)
        self._add(rec, cat, blk, offnum, tup, False)

    def _redo_multi_insert(self, rec, blk, cat: int, restored) -> None:
        main = rec.main_data
        _flags, ntuples = xl_heap_multi_insert.unpack_from(main, 0)
        init = rec.xl_info & XLOG_HEAP_INIT_PAGE
        if init:
            offsets = list(range(1, ntuples + 1))
        else:
            offsets = list(struct.unpack_from(f"<{ntuples}H", main, SizeOfHeapMultiInsert))
        if restored is not None and (blk.relNumber, blk.blkno) in restored:
            for offnum in offsets:
                tup = self._tuple(blk, offnum, rec.lsn)
                if tup is None:
                    self.sink.problem(rec, cat, blk, offnum, "the full-page image has no tuple at an inserted offset")
                    continue
                self._wrote(rec, blk, offnum, True)
                self._add(rec, cat, blk, offnum, tup, False)
            return
        page = self._page_for_write(rec, blk)
        data = blk.data
        pos = 0
        for offnum in offsets:
            pos += pos & 1  # SHORTALIGN
            datalen, infomask2, infomask, t_hoff = xl_multi_insert_tuple.unpack_from(data, pos)
            pos += SizeOfMultiInsertTuple
            if pos + datalen > len(data):
                raise CorruptRecordError(f"multi-insert block data is shorter than its {ntuples} tuples")
            tup = self._build_tuple(rec.xl_xid, blk.blkno, offnum, infomask2, infomask, t_hoff,
                                    data[pos:pos + datalen])
            pos += datalen
            page.tuples[offnum] = tup
            self._wrote(rec, blk, offnum, True)
            self._add(rec, cat, blk, offnum, tup, False)

    def _redo_update(self, rec, blk, cat: int, restored) -> None:
        """heap_xlog_update: the old version is deleted, the new one inserted (maybe on another page)."""
        old_xmax, old_off, old_infobits, flags, _new_xmax, new_off = xl_heap_update.unpack_from(rec.main_data, 0)
        oldblk = rec.block(1) or blk
        oldtup = self._tuple(oldblk, old_off, rec.lsn)
        if oldtup is not None:
            self.pages[(oldblk.relNumber, oldblk.blkno)].tuples[old_off] = _with_xmax(oldtup, old_xmax, old_infobits)
            self._wrote(rec, oldblk, old_off, False)
        layout = self.layouts[cat]
        if restored is not None and (blk.relNumber, blk.blkno) in restored:
            newtup = self._tuple(blk, new_off, rec.lsn)
            if newtup is None:
                self.sink.problem(rec, cat, blk, new_off, "the full-page image has no tuple at the new offset",
                                  layout.decode(oldtup) if oldtup is not None else None)
        else:
            data = blk.data
            pos = prefixlen = suffixlen = 0
            if flags & XLH_UPDATE_PREFIX_FROM_OLD:
                prefixlen = _u16.unpack_from(data, pos)[0]
                pos += 2
            if flags & XLH_UPDATE_SUFFIX_FROM_OLD:
                suffixlen = _u16.unpack_from(data, pos)[0]
                pos += 2
            infomask2, infomask, t_hoff = xl_heap_header.unpack_from(data, pos)
            pos += SizeOfHeapHeader
            body = bytes(data[pos:])
            newtup = None
            if (prefixlen or suffixlen) and oldtup is None:
                # (the row's key lies in the bytes it shares with the old version: which row it is, is unknown)
                self.sink.problem(rec, cat, oldblk, old_off,
                                  "the new row is stored as a difference to the old one, which is unknown: "
                                  + self._why_missing(oldblk, old_off, rec.lsn))
            else:
                if prefixlen:
                    old_hoff = oldtup[T_HOFF]
                    nbits = t_hoff - SizeofHeapTupleHeader
                    body = body[:nbits] + oldtup[old_hoff:old_hoff + prefixlen] + body[nbits:]
                if suffixlen:
                    body += oldtup[len(oldtup) - suffixlen:]
                newtup = self._build_tuple(rec.xl_xid, blk.blkno, new_off, infomask2, infomask, t_hoff, body)
            page = self._page_for_write(rec, blk)
            if newtup is None:
                page.tuples.pop(new_off, None)
            else:
                page.tuples[new_off] = newtup
        if newtup is not None:
            self._wrote(rec, blk, new_off, True)
        oldrow = layout.decode(oldtup) if oldtup is not None else None
        newrow = layout.decode(newtup) if newtup is not None else None
        if oldrow is not None and newrow is not None and oldrow == newrow:
            return  # no column decoding reads changed (statistics, relhasindex, ...)
        if oldrow is not None:
            self.sink.row(rec, cat, oldrow, True)
        if newrow is not None:
            self.sink.row(rec, cat, newrow, False)

    def _redo_delete(self, rec, blk, cat: int) -> None:
        xmax, offnum, infobits, _flags = xl_heap_delete.unpack_from(rec.main_data, 0)
        tup = self._tuple(blk, offnum, rec.lsn)
        if tup is None:
            self.sink.problem(rec, cat, blk, offnum, "a row was deleted, but which one is unknown: "
                              + self._why_missing(blk, offnum, rec.lsn))
            return
        self.pages[(blk.relNumber, blk.blkno)].tuples[offnum] = _with_xmax(tup, xmax, infobits)
        self._wrote(rec, blk, offnum, False)
        self._add(rec, cat, blk, offnum, tup, True)

    def _redo_inplace(self, rec, blk, cat: int, restored) -> None:
        """heap_xlog_inplace: the tuple's data overwritten in place, not transactionally."""
        offnum = _u16.unpack_from(rec.main_data, 0)[0]
        key = (blk.relNumber, blk.blkno)
        if restored is not None and key in restored:
            before = restored[key]
            oldtup = before.tuples.get(offnum) if before is not None else None
            newtup = self._tuple(blk, offnum, rec.lsn)
        else:
            oldtup = self._tuple(blk, offnum, rec.lsn)
            if oldtup is None:
                return  # columns decoding reads are not changed in place; nothing to keep current
            t_hoff = oldtup[T_HOFF]
            newtup = oldtup[:t_hoff] + bytes(blk.data)
            self.pages[key].tuples[offnum] = newtup
        if oldtup is None or newtup is None:
            return
        layout = self.layouts[cat]
        oldrow, newrow = layout.decode(oldtup), layout.decode(newtup)
        if oldrow == newrow:
            return
        # A changed column we read (13-16 set pg_index flags in place): the version changes for everyone
        # who sees it — its inserting transaction if that is still open, else everybody from now on.
        writer = _u32.unpack_from(oldtup, 0)[0]  # t_xmin: WAL-built tuples carry their record's xid
        self.sink.inplace(rec, cat, writer, newrow)

    def _add(self, rec, cat: int, blk, offnum: int, tup, deleted: bool) -> None:
        self.sink.row(rec, cat, self.layouts[cat].decode(tup), deleted)

    # transactions' tuples -------------------------------------------------------------------------

    def end_writes(self, xids, committed: bool) -> None:
        """A (sub)transaction's tuples when it ends: those it deleted are gone if it committed; those it
        inserted are gone, and those it deleted live again, if it aborted.  (A rewrite's new heap
        becomes the catalog's storage, or is dropped.)"""
        for x in xids:
            nodes = self.rewrites.pop(x, None)
            if nodes and not committed:
                for node in nodes:
                    self.nodes.pop(node, None)
                for key in [k for k in self.pages if k[0] in nodes]:
                    del self.pages[key]
            writes = self.writes.pop(x, None)
            if not writes:
                continue
            for node, blkno, offnum, inserted in writes:
                page = self.pages.get((node, blkno))
                tup = page.tuples.get(offnum) if page is not None else None
                if tup is None:
                    continue
                if inserted:
                    if not committed and _u32.unpack_from(tup, T_XMIN)[0] == x:
                        del page.tuples[offnum]
                elif _u32.unpack_from(tup, T_XMAX)[0] == x:
                    if committed:
                        del page.tuples[offnum]
                    else:
                        page.tuples[offnum] = _without_xmax(tup)

    def rewrite_heap(self, xid: int, row: dict) -> None:
        """make_new_heap's transient heap "pg_temp_<OID>" of a catalog being rewritten (VACUUM FULL,
        CLUSTER): its pages, written as full-page images before the swap makes them the catalog's, are
        kept as that catalog's from now on, and dropped if the transaction aborts."""
        name = row["relname"]
        if not (name.startswith("pg_temp_") and name[8:].isdigit()):
            return
        cat = int(name[8:])
        if cat not in self.layouts or (row["reltablespace"] or self.dbspc) != self.dbspc:
            return
        # A mapped catalog's transient heap is mapped too (relfilenode 0 in pg_class); its storage is
        # named by its OID (heap.c heap_create_with_catalog: "The OID will be the relfilenode as well")
        node = row["relfilenode"] or row["oid"]
        if node not in self.nodes:
            self.nodes[node] = cat
            self.rewrites.setdefault(xid, set()).add(node)

    # what the pages show ---------------------------------------------------------------------------

    def rows(self, cat: int):
        """Rows of ``cat`` on the pages seen that were there before the range (written before
        ``first_xid``) and not deleted before it."""
        layout = self.layouts.get(cat)
        if layout is None:
            return
        nodes = {n for n, c in self.nodes.items() if c == cat}
        first = self.first_xid
        for (node, blkno), page in self.pages.items():
            if node not in nodes:
                continue
            for offnum, tup in page.tuples.items():
                xmin, xmax = struct.unpack_from("<II", tup, 0)
                if first and not xid_precedes(xmin, first):
                    continue  # written in the range: its events say whether it counts
                infomask = _u16.unpack_from(tup, 20)[0]
                if infomask & HEAP_XMIN_INVALID and not infomask & HEAP_XMIN_COMMITTED:  # (both: frozen)
                    continue
                if xmax and not infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_LOCK_ONLY):
                    if not (first and not xid_precedes(xmax, first)):  # deleted before the range
                        continue
                try:
                    yield layout.decode(tup)
                except WALError:
                    continue

    def materialize_pages(self, view, position: int) -> dict:
        """The tracked catalogs' pages as known at ``position``: the shadow pages, and the snapshot's
        blocks no record needed yet (passed on as they are)."""
        out = {}
        for cat in self.layouts:
            rel = view.relation(cat)
            if rel is None:
                continue
            node = rel.relfilenode
            seeds = self._seeds.get(node) if position >= self._seed_lsn else None
            blocks: dict = {}
            partial = set()
            if seeds is not None:
                for blkno, block in seeds.blocks.items():
                    if (node, blkno) not in self._seeded and (node, blkno) not in self.pages:
                        blocks[blkno] = block
                        if blkno in seeds.partial:
                            partial.add(blkno)
            for (n, blkno) in [k for k in self.pages if k[0] == node]:
                page = self._page(n, blkno, position)  # the snapshot's tuples merged, as the next record would
                blocks[blkno] = sorted(page.tuples.items())
                if page.source is _WAL:
                    partial.add(blkno)
            if blocks:
                out[cat] = CatalogPages(cat, node, "history", blocks, partial)
        return out

