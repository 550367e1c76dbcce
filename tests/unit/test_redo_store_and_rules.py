"""The page store, the page-LSN rule, masking and bad records, for ``waldecode.redo``.

The store keeps pages in sparse files and knows which blocks it holds (a page of zeros is not an
absent page); the LSN rule applies a record to a page only when the page's LSN is before the
record's end (XLogReadBufferForRedo); heap_mask hides exactly what may differ between a primary and
a replay; a record that does not fit the page is a ``CorruptRecordError`` naming its LSN.  The
redo routines themselves are checked against a real server by the live test
(``tests/live/test_heap_redo_consistency.py``).
"""

from __future__ import annotations

import os
import struct

import pytest

from waldecode.errors import CorruptRecordError
from waldecode.heap.heaptuple import HEAP_KEYS_UPDATED, HEAP_XMAX_LOCK_ONLY
from waldecode.redo import bufpage as bp
from waldecode.redo import htup_details as ht
from waldecode.redo.heapam_xlog import heap_mask
from waldecode.redo.pagestore import PageStore
from waldecode.redo.xlogrecovery import HeapRedo
from waldecode.rmgr import RM_HEAP_ID
from waldecode.rmgr import heap as h
from waldecode.wal.xlogrecord import BKPBLOCK_HAS_DATA, BLCKSZ, BlockRef, DecodedRecord

REL = (1663, 5, 16384)


def _page_with(n: int = 3, size: int = 40) -> bytearray:
    page = bytearray(BLCKSZ)
    bp.page_init(page, BLCKSZ, 0)
    for i in range(n):
        tup = bytearray(size)
        tup[ht.T_HOFF] = 24
        assert bp.page_add_item(page, tup, size, bp.InvalidOffsetNumber, False, True) == i + 1
    return page


# -- the page store -----------------------------------------------------------------------------

def test_store_round_trip_sparse_and_presence(tmp_path):
    page = _page_with()
    with PageStore(tmp_path) as store:
        store.write(REL, 0, 100_000, page)  # block 100000: 800 MB into the file
        store.write(REL, 0, 3, bytes(BLCKSZ))  # a page of zeros is a page
        assert store.read(REL, 0, 100_000) == page
        assert store.read(REL, 0, 3) == bytes(BLCKSZ)
        assert store.read(REL, 0, 4) is None  # a hole reads as zeros, but is no page
        assert store.read(REL, 1, 3) is None and store.read((1663, 5, 1), 0, 3) is None
        assert list(store.blocks(REL, 0)) == [3, 100_000]
    path = tmp_path / ("%u_%u_%u_main" % REL)
    assert os.stat(path).st_blocks * 512 < 1024 * 1024  # sparse: not 800 MB on disk
    with PageStore(tmp_path) as store:  # opened again: the index of present blocks was kept
        assert list(store.blocks(REL, 0)) == [3, 100_000]
        assert store.relations() == [(REL, 0)]
        store.truncate(REL, 0, 4)
        assert list(store.blocks(REL, 0)) == [3]
        assert store.read(REL, 0, 100_000) is None


@pytest.mark.parametrize("first, n", [(0, 1), (0, 8), (3, 5), (5, 20), (7, 1), (8, 16), (13, 300)])
def test_write_blocks_is_write_block_by_block(tmp_path, first, n):
    """Pages stored in one write (a relation file copied in) read back, and are marked present, as
    the same pages stored one at a time, whatever the byte boundaries of the presence bitmap."""
    pages = [bytes([i % 251 + 1]) * BLCKSZ for i in range(n)]
    with PageStore(tmp_path / "one") as one, PageStore(tmp_path / "each") as each:
        one.write(REL, 0, 2, pages[0])  # a page already present before the range
        each.write(REL, 0, 2, pages[0])
        one.write_blocks(REL, 0, first, b"".join(pages))
        for i, page in enumerate(pages):
            each.write(REL, 0, first + i, page)
        assert list(one.blocks(REL, 0)) == list(each.blocks(REL, 0))
        assert all(one.read(REL, 0, b) == each.read(REL, 0, b) for b in each.blocks(REL, 0))
        assert one.read(REL, 0, first + n) is None
    with PageStore(tmp_path / "one") as again:  # the presence bitmap was saved
        assert list(again.blocks(REL, 0)) == sorted({2, *range(first, first + n)})
    with pytest.raises(ValueError, match="whole number"):
        PageStore(tmp_path / "x").write_blocks(REL, 0, 0, b"x" * 100)


def test_store_keeps_a_bounded_number_of_files_open(tmp_path):
    with PageStore(tmp_path) as store:
        for rel in range(200):
            store.write((1663, 5, rel), 0, rel, _page_with(1))
        assert len(store._open) <= 64
        for rel in range(200):
            assert list(store.blocks((1663, 5, rel), 0)) == [rel]


# -- records by hand ------------------------------------------------------------------------------

def _insert_record(end_lsn: int, offnum: int, init: bool, xid: int = 1000,
                   body: bytes = b"\x00\x01\x00\x00\x00") -> DecodedRecord:
    data = h.xl_heap_header.pack(1, 0x0800, 24) + body  # natts 1, HEAP_XMAX_INVALID, t_hoff 24: a pad byte, an int4
    block = BlockRef(0, 0, BKPBLOCK_HAS_DATA, *REL, 7, False, 0, 0, 0, 0, None, data)
    info = h.XLOG_HEAP_INSERT | (h.XLOG_HEAP_INIT_PAGE if init else 0)
    return DecodedRecord(end_lsn - 100, end_lsn, 100, xid, 0, info, RM_HEAP_ID, 0, (block,),
                         h.xl_heap_insert.pack(offnum, 0), 0, 0)


def test_the_lsn_rule_init_page_and_missing_pages(tmp_path):
    with PageStore(tmp_path) as store:
        engine = HeapRedo(store, 15)
        # no page yet: a plain insert finds nothing to change
        rr = engine.redo(_insert_record(0x1000, 1, init=False))
        assert rr.actions == {0: 3} and store.read(REL, 0, 7) is None
        # XLOG_HEAP_INIT_PAGE initializes the page whatever the store holds
        engine.redo(_insert_record(0x2000, 1, init=True))
        page = store.read(REL, 0, 7)
        assert bp.page_get_lsn(page) == 0x2000 and bp.page_get_max_offset_number(page) == 1
        lp_off, flags, lp_len = bp.item_id(page, 1)
        assert (flags, lp_len) == (bp.LP_NORMAL, 23 + 5)  # the header up to t_bits, then the logged bytes
        assert struct.unpack_from("<I", page, lp_off)[0] == 1000  # xmin: the record's xid
        assert ht.get_ctid(page, lp_off) == (7, 1)
        # a record ending at or before the page's LSN is already there: BLK_DONE, nothing changes
        rr = engine.redo(_insert_record(0x2000, 2, init=False))
        assert rr.actions == {0: 1} and store.read(REL, 0, 7) == page
        # a later one is applied
        engine.redo(_insert_record(0x3000, 2, init=False, xid=1001))
        page = store.read(REL, 0, 7)
        assert bp.page_get_max_offset_number(page) == 2 and bp.page_get_lsn(page) == 0x3000
        assert dict(engine.blocks) == {"notfound": 1, "initialized": 1, "done": 1, "needs_redo": 1}


def test_a_record_that_does_not_fit_the_page_names_its_lsn(tmp_path):
    with PageStore(tmp_path) as store:
        engine = HeapRedo(store, 15)
        engine.redo(_insert_record(0x2000, 1, init=True))
        with pytest.raises(CorruptRecordError,
                           match=r"invalid max offset number 5 \(rel 1663/5/16384 main block 7\) at LSN 0/2F9C"):
            engine.redo(_insert_record(0x3000, 5, init=False))
        with pytest.raises(CorruptRecordError,
                           match=r"failed to add tuple at offset 1 \(rel 1663/5/16384 main block 7\) at LSN 0/3F9C"):
            engine.redo(_insert_record(0x4000, 1, init=False))  # offset 1 is taken


def test_the_wanted_relations_only(tmp_path):
    with PageStore(tmp_path) as store:
        engine = HeapRedo(store, 15, wanted=lambda locator: locator != REL)
        engine.redo(_insert_record(0x2000, 1, init=True))
        assert store.relations() == []


# -- heap_mask ---------------------------------------------------------------------------------

def test_heap_mask_hides_hints_and_replay_artifacts_only():
    page = _page_with(2, size=37)  # 3 bytes of alignment padding after each item
    tup = bp.item_id(page, 1)[0]
    other = bytearray(page)
    bp.page_set_lsn(other, 0x55)
    other[bp.PD_CHECKSUM_OFF] = 7
    bp.page_set_prunable(other, 1234)
    bp.set_pd_flags(other, bp.PD_ALL_VISIBLE | bp.PD_PAGE_FULL | bp.PD_HAS_FREE_LINES)
    ht.set_infomask(other, tup, 0x0100 | 0x0800 | ht.HEAP_COMBOCID)  # hint bits, not frozen
    ht.set_u32(other, tup + ht.T_CID, 77)
    other[bp.pd_lower(other) + 5] = 9  # the hole
    other[tup + 38] = 9  # the padding after the 37-byte item
    a, b = bytearray(page), bytearray(other)
    heap_mask(a, 0)
    heap_mask(b, 0)
    assert a == b
    # what the WAL carries is not masked: xmax, t_infomask2, t_ctid
    for pos, value in ((tup + ht.T_XMAX, 5), (tup + ht.T_INFOMASK2 + 1, HEAP_KEYS_UPDATED >> 8),
                       (tup + ht.T_INFOMASK2 + 1, ht.HEAP_HOT_UPDATED >> 8), (tup + ht.T_CTID + 4, 9)):
        c = bytearray(page)
        c[pos] = value
        heap_mask(c, 0)
        assert c != a


def test_heap_mask_keeps_a_frozen_tuples_xmin_bits_and_resets_speculative_tokens():
    page = _page_with(1)
    tup = bp.item_id(page, 1)[0]
    ht.set_infomask(page, tup, 0x0300)  # HEAP_XMIN_FROZEN
    frozen_lock = bytearray(page)
    ht.set_infomask(frozen_lock, tup, 0x0300 | HEAP_XMAX_LOCK_ONLY)
    a, b = bytearray(page), bytearray(frozen_lock)
    heap_mask(a, 0)
    heap_mask(b, 0)
    assert a != b  # a frozen tuple's xmax lock bits count
    spec = bytearray(page)
    ht.set_ctid(spec, tup, 0, ht.SpecTokenOffsetNumber)
    ht.set_ctid(page, tup, 4, 1)
    heap_mask(spec, 4)
    heap_mask(page, 4)
    assert spec == page


def test_masking_a_page_with_impossible_pointers_is_an_error():
    page = _page_with(1)
    struct.pack_into("<H", page, bp.PD_LOWER_OFF, 9000)
    with pytest.raises(CorruptRecordError, match="invalid page pd_lower 9000"):
        heap_mask(page, 0)


# -- a base backup's relation files (md.c layout) -------------------------------------------------

def test_load_base_backup_follows_md_c_layout(tmp_path):
    from waldecode.catalog.datadir.files import PlainDirectory
    from waldecode.errors import WALError
    from waldecode.redo.md import RELSEG_SIZE, load_base_backup

    def block(tag: int) -> bytes:
        return bytes([tag]) * BLCKSZ

    files = {
        "base/5/123": block(1) + block(2),
        "base/5/123.1": block(3),  # the second 1 GB segment
        "base/5/123_vm": block(4),
        "base/5/123_fsm": block(9),  # the free space map: not copied
        "base/5/t3_125": block(5),  # a temporary relation: not copied
        "base/5/pg_filenode.map": b"map",
        "global/1262": block(6),
        "pg_tblspc/16400/PG_15_202209061/5/124": block(7),
        "pg_tblspc/16400/PG_16_202307071/5/124": block(8),  # another major's directory
    }
    for rel, data in files.items():
        (tmp_path / "backup" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "backup" / rel).write_bytes(data)
    with PageStore(tmp_path / "store") as store:
        assert load_base_backup(store, PlainDirectory(tmp_path / "backup"), 15) == 6
        assert list(store.blocks((1663, 5, 123), 0)) == [0, 1, RELSEG_SIZE]
        assert store.read((1663, 5, 123), 0, RELSEG_SIZE) == block(3)
        assert store.read((1663, 5, 123), 2, 0) == block(4)
        assert store.read((1663, 5, 123), 1, 0) is None
        assert store.read((1664, 0, 1262), 0, 0) == block(6)
        assert store.read((16400, 5, 124), 0, 0) == block(7)
        assert store.read((1663, 5, 125), 0, 0) is None
        (tmp_path / "backup" / "base/5/126").write_bytes(b"x" * 100)
        with pytest.raises(WALError, match=r"not a multiple of 8192 in file .*base/5/126"):
            load_base_backup(store, PlainDirectory(tmp_path / "backup"), 15, wanted=lambda loc: loc[2] == 126)


def test_a_backup_file_another_relation_held_is_not_loaded():
    """``redo.table._own_backup_files``: the backup's file of a locator is the relation's own when the
    backup's catalog gives it to the same relation or to none; a file number the relation took after the
    backup's relation of that number was dropped is not (its pages would be that relation's rows)."""
    from types import SimpleNamespace as NS

    from waldecode.redo.table import _Scan, _own_backup_files

    def rel(oid, relfilenode, toast=0):
        return NS(oid=oid, relfilenode=relfilenode, reltablespace=0, reltoastrelid=toast)

    backup = NS(database_oid=5, database_tablespace=1663,
                relations={16384: rel(16384, 16384, 16387), 16387: rel(16387, 16387),
                           16390: rel(16390, 16500)})
    kept = _Scan(rel(16384, 16384, 16387), (1663, 5, 16384), (1663, 5, 16387), [])
    created = _Scan(rel(17000, 17001), (1663, 5, 17001), None, [])  # a file number nobody held
    reused = _Scan(rel(18000, 16500), (1663, 5, 16500), None, [])  # 16500 was 16390's
    assert _own_backup_files(backup, [kept, created, reused]) == {(1663, 5, 16384), (1663, 5, 16387),
                                                                  (1663, 5, 17001)}
