"""Catalog history: the catalog as of every LSN, from the catalog rows the WAL carries.

Owns what src/backend/replication/logical/snapbuild.c's historic snapshots give
PostgreSQL's decoder: each change is decoded with the catalog committed before its
LSN, plus its own transaction's (and subtransactions') catalog changes made before
it.  The catalog snapshot file (``catalog.Catalog``, taken before the decoded range)
is the base; on top of it this module keeps

* shadow copies of the pages of the catalogs decoding needs (pg_class, pg_attribute,
  pg_type, pg_namespace, pg_enum, pg_index, pg_range, pg_proc): per (relfilenode,
  block) the tuples by line pointer, seeded from full-page images as they appear, or
  else from the snapshot's own tuples of the page (``Catalog.catalog_pages``) when a
  record at or after the snapshot's LSN first needs it, and kept current with heap
  redo (``heap_xlog_insert``, ``heap_xlog_multi_insert``, ``heap_xlog_update`` with
  prefix/suffix compression, ``heap_xlog_delete``'s and ``heap_xlog_update``'s xmax,
  ``heap_xlog_inplace``; other records only change line pointers or hint bits).  A
  tuple deleted by a transaction that commits, or inserted by one that aborts, leaves
  the page when that transaction ends, as pruning would remove it;
* the pages a catalog rewrite (VACUUM FULL, CLUSTER) writes, as full-page images, into
  the relfilenode of its transient heap ``pg_temp_<catalog OID>`` before the swap
  makes it the catalog's: kept as that catalog's from the transient heap's pg_class
  row on, dropped if its transaction aborts;
* the catalog rows those records insert and delete, decoded with the catalogs' own
  pg_attribute rows from the base snapshot, as events of their transaction (the
  top-level one, learnt from XLOG_HEAP2_NEW_CID, XLR_BLOCK_ID_TOPLEVEL_XID and xact
  records);
* at each commit of a transaction with catalog events, a new committed state (an
  *epoch*): the commit LSNs form the timeline; aborted (sub)transactions' events are
  dropped, and so are temporary relations' rows, which decoding never needs;
* ``view(lsn, xid)``: a ``HistoricCatalog`` with the same interface as ``Catalog``
  (relations by OID and by (tablespace, relfilenode), types), built lazily from the
  base snapshot, the committed rows of the epoch at ``lsn`` and the events of ``xid``
  before ``lsn``, in the shapes ``catalog_dsn`` gives them (``format_type`` text,
  replica identity key, ``attmissingval`` text, TOAST relations, mapped catalogs and
  XLOG_RELMAP_UPDATE).

A record that needs a tuple no image, snapshot page or earlier record showed (a
deleted row, or an update stored as a difference to its old row: a snapshot without
pages, or a row written between the snapshot and the start of the WAL read) becomes
a ``problem`` (the catalog, the row when known, the page, the record, the
transaction, and what its decoded catalog changes concern), reported when its
transaction commits and named when a relation cannot be resolved.  A snapshot
without schema OIDs: they are learnt from the rows the range shows, else the first
schema of search_path is assumed (with a warning).

``materialize()`` writes the committed catalog as of the last record taken as a
``Catalog`` (relations, types, schemas and the shadow pages): a history started from
it continues as this one does, e.g. at a replication slot's restart point.  Takes
every ``DecodedRecord`` before the decoder dispatches it; hands views to
``replay.Replayer``.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import replace
from typing import NamedTuple

from .catalog import (
    TRACKED_CATALOGS,
    Attribute,
    AttributeRelationId,
    Catalog,
    CatalogError,
    CatalogPages,
    EnumRelationId,
    IndexRelationId,
    NamespaceRelationId,
    ProcedureRelationId,
    RangeRelationId,
    Relation,
    RelationRelationId,
    TypeInfo,
    TypeRelationId,
)
from .errors import CorruptRecordError, DecompressionError, WALError, format_lsn
from .fpi import image_is_applied, restore_block_image
from .heaptuple import (  # src/include/access/htup_details.h
    HEAP_KEYS_UPDATED,
    HEAP_MOVED,
    HEAP_NATTS_MASK,
    HEAP_XMAX_BITS,
    HEAP_XMAX_EXCL_LOCK,
    HEAP_XMAX_INVALID,
    HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_KEYSHR_LOCK,
    HEAP_XMAX_LOCK_ONLY,
    HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID,
    SizeofHeapTupleHeader,
    deform_tuple,
)
from .output.quote import quote_identifier
from .pg.encoding import python_codec
from .pg.quote import split_identifier_string
from .varlena import ToastPointer

__all__ = ["CatalogHistory", "HistoricCatalog", "CatalogProblem", "CatalogLayout", "TRACKED_CATALOGS",
           "DECODED_COLUMNS"]

#: pseudo-catalog: relation-mapper updates (XLOG_RELMAP_UPDATE), keyed by catalog OID
_RELMAP = 0
#: catalogs without which the history still works (pg_proc: output functions of new base types)
_OPTIONAL_CATALOGS = frozenset((ProcedureRelationId,))

# src/include/catalog/pg_namespace.dat
PG_CATALOG_NAMESPACE = 11
PG_TOAST_NAMESPACE = 99
PG_PUBLIC_NAMESPACE = 2200
_FIXED_NAMESPACES = {PG_CATALOG_NAMESPACE: "pg_catalog", PG_TOAST_NAMESPACE: "pg_toast"}

# src/include/catalog/pg_proc.dat: output functions of the types CREATE TYPE / CREATE TABLE make
_OUTPUT_FUNCTIONS = {751: "array_out", 2291: "record_out", 3507: "enum_out", 3835: "range_out",
                     4232: "multirange_out"}
# pg_proc.dat: F_ARRAY_SUBSCRIPT_HANDLER (IsTrueArrayType, 14+)
F_ARRAY_SUBSCRIPT_HANDLER = 6179

# src/include/catalog/pg_type.dat: OIDs format_type special-cases (utils/adt/format_type.c)
_FORMAT_TYPE_SPECIAL = {
    1560: "bit", 16: "boolean", 1042: "character", 700: "real", 701: "double precision", 21: "smallint",
    23: "integer", 20: "bigint", 1700: "numeric", 1186: "interval", 1083: "time without time zone",
    1266: "time with time zone", 1114: "timestamp without time zone", 1184: "timestamp with time zone",
    1562: "bit varying", 1043: "character varying",
}
JSONOID = 114

# src/include/catalog/pg_class.h: relkinds with storage (RELKIND_HAS_STORAGE)
_RELKINDS_WITH_STORAGE = frozenset("rtmSi")

# src/include/access/heapam_xlog.h, declared once in the rmgr module
from .rmgr.heap import (  # noqa: E402
    XLHL_KEYS_UPDATED,
    XLHL_XMAX_EXCL_LOCK,
    XLHL_XMAX_IS_MULTI,
    XLHL_XMAX_KEYSHR_LOCK,
    XLHL_XMAX_LOCK_ONLY,
    SizeOfHeapHeader,
    SizeOfHeapMultiInsert,
    SizeOfMultiInsertTuple,
    XLH_UPDATE_PREFIX_FROM_OLD,
    XLH_UPDATE_SUFFIX_FROM_OLD,
    XLOG_HEAP2_MULTI_INSERT,
    XLOG_HEAP2_NEW_CID,
    XLOG_HEAP_DELETE,
    XLOG_HEAP_HOT_UPDATE,
    XLOG_HEAP_INIT_PAGE,
    XLOG_HEAP_INPLACE,
    XLOG_HEAP_INSERT,
    XLOG_HEAP_OPMASK,
    XLOG_HEAP_UPDATE,
    xl_heap_delete,
    xl_heap_header,
    xl_heap_insert,
    xl_heap_multi_insert,
    xl_heap_update,
    xl_multi_insert_tuple,
)
# src/include/access/htup_details.h: HeapTupleHeaderData up to t_hoff (xmin, xmax, cid, ctid, masks, hoff)
_tuple_header = struct.Struct("<IIIHHHHHB")
_tuple_masks = struct.Struct("<HHB")  # at offset 18
_t_xmax = struct.Struct("<I")  # t_xmax @4
_t_infomasks = struct.Struct("<HH")  # t_infomask2, t_infomask @18
# src/include/utils/relmapper.h: xl_relmap_update {dbid, tsid, nbytes, data[]}; RelMapFile
xl_relmap_update = struct.Struct("<IIi")
_relmap_header = struct.Struct("<ii")  # magic, num_mappings
RELMAPPER_FILEMAGIC = 0x592717
from .rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_RELMAP_ID, RM_STANDBY_ID, RM_XACT_ID, RM_XLOG_ID  # noqa: E402
from .rmgr.standby import XLOG_RUNNING_XACTS  # noqa: E402
from .rmgr.xact import (  # noqa: E402
    XLOG_XACT_ABORT,
    XLOG_XACT_ABORT_PREPARED,
    XLOG_XACT_ASSIGNMENT,
    XLOG_XACT_COMMIT,
    XLOG_XACT_COMMIT_PREPARED,
    XLOG_XACT_OPMASK,
    XLOG_XACT_PREPARE,
)

_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")

#: the catalog columns each tracked catalog is read for, and its key column(s)
DECODED_COLUMNS = {
    RelationRelationId: ("oid", "relname", "relnamespace", "reltype", "relfilenode", "reltablespace",
                         "reltoastrelid", "relpersistence", "relkind", "relreplident", "relispartition",
                         "relrewrite"),
    AttributeRelationId: ("attrelid", "attname", "atttypid", "attlen", "attnum", "atttypmod", "attbyval",
                          "attalign", "attstorage", "attnotnull", "atthasmissing", "attgenerated",
                          "attisdropped", "attmissingval"),
    TypeRelationId: ("oid", "typname", "typnamespace", "typlen", "typbyval", "typtype", "typcategory",
                     "typdelim", "typrelid", "typsubscript", "typelem", "typarray", "typoutput", "typalign",
                     "typstorage", "typbasetype", "typtypmod"),
    NamespaceRelationId: ("oid", "nspname"),
    EnumRelationId: ("oid", "enumtypid", "enumsortorder", "enumlabel"),
    IndexRelationId: ("indexrelid", "indrelid", "indnkeyatts", "indisunique", "indisprimary", "indimmediate",
                      "indisvalid", "indislive", "indisreplident", "indkey", "indpred"),
    RangeRelationId: ("rngtypid", "rngsubtype", "rngmultitypid"),
    ProcedureRelationId: ("oid", "proname", "pronamespace"),
}

ABSENT = object()  # no row of this key in a layer at that point: the base snapshot's object holds


class CatalogProblem(NamedTuple):
    """A catalog record whose rows could not be (fully) decoded."""

    lsn: int
    xid: int
    catalog: str  # schema-qualified, e.g. "pg_catalog.pg_class"
    spc: int
    db: int
    relfilenode: int
    blkno: int
    offnum: int
    reason: str
    row: str = ""  # which row, when something tells ("relation public.t (OID 16390)"), else ""
    context: str = ""  # what the transaction's decoded catalog changes concern, filled in at its end

    def describe(self) -> str:
        which = f"the {self.catalog} row of {self.row}" if self.row else f"a {self.catalog} row (which one is unknown)"
        text = (f"{which} at block {self.blkno} offset {self.offnum} of {self.spc}/{self.db}/{self.relfilenode}, "
                f"changed by transaction {self.xid} at {format_lsn(self.lsn)}: {self.reason}")
        if self.context:
            text += f" (the transaction's decoded catalog changes concern {self.context})"
        return text


class _Event(NamedTuple):
    lsn: int
    xid: int
    cat: int
    key: object
    deleted: bool
    row: dict


# -- decoding catalog tuples ---------------------------------------------------------------------

def _int2vector(raw) -> list:
    """An int2vector payload (a one-dimensional int2 array without nulls) as a list."""
    if raw is None or len(raw) < 12:
        return []
    ndim = struct.unpack_from("<i", raw, 0)[0]
    if ndim == 0:
        return []
    n = struct.unpack_from("<i", raw, 12)[0]
    return list(struct.unpack_from(f"<{n}h", raw, 20))


class CatalogLayout:
    """One catalog's columns (from its pg_attribute rows in the base snapshot) and how to read them."""

    def __init__(self, rel: Relation, columns: tuple, encoding: str):
        self.name = rel.relname
        atts = rel.attributes
        index = {a.attname: i for i, a in enumerate(atts)}
        codec = python_codec(encoding)
        self.cols = []
        for name in columns:
            i = index.get(name)
            if i is None:
                continue  # a column this major version lacks (typsubscript 13, rngmultitypid 13)
            self.cols.append((name, i, self._converter(atts[i].atttypid, codec)))
        width = max(i for _n, i, _c in self.cols) + 1
        self.attrs = atts[:width]

    @staticmethod
    def _converter(typid: int, codec: str):
        if typid in (26, 24, 28):  # oid, regproc, xid
            return lambda v: None if v is None else _u32.unpack(v)[0]
        if typid == 23:
            return lambda v: None if v is None else struct.unpack("<i", v)[0]
        if typid == 21:
            return lambda v: None if v is None else struct.unpack("<h", v)[0]
        if typid == 16:
            return lambda v: None if v is None else v != b"\x00"
        if typid == 18:  # "char"
            return lambda v: None if v is None else ("" if v == b"\x00" else v.decode("latin-1"))
        if typid == 19:  # name
            return lambda v: None if v is None else v.split(b"\x00", 1)[0].decode(codec, "surrogateescape")
        if typid == 25:
            return lambda v: None if v is None else bytes(v).decode(codec, "surrogateescape")
        if typid == 700:
            return lambda v: None if v is None else struct.unpack("<f", v)[0]
        if typid == 22:
            return _int2vector
        return lambda v: v  # anyarray (attmissingval), pg_node_tree (indpred): payload bytes, or None

    def decode(self, tup) -> dict:
        """The columns of a whole on-page heap tuple (23-byte header included)."""
        infomask2, infomask, t_hoff = _tuple_masks.unpack_from(tup, 18)
        natts = min(infomask2 & HEAP_NATTS_MASK, len(self.attrs))
        values = deform_tuple(tup, (infomask2 & ~HEAP_NATTS_MASK) | natts, infomask, t_hoff, self.attrs,
                              start=SizeofHeapTupleHeader)
        return {name: conv(values[i]) for name, i, conv in self.cols}



def _key(cat: int, row: dict):
    if cat == AttributeRelationId:
        return (row["attrelid"], row["attnum"])
    if cat == IndexRelationId:
        return row["indexrelid"]
    if cat == RangeRelationId:
        return row["rngtypid"]
    return row["oid"]


def _links(cat: int, row: dict) -> tuple:
    """Secondary keys under which a row is found: (index name, value)."""
    if cat == RelationRelationId:
        return (("filenode", row["relfilenode"]),) if row["relfilenode"] else ()
    if cat == AttributeRelationId:
        return (("attrs", row["attrelid"]),)
    if cat == TypeRelationId:
        return (("types", 0), ("typname", row["typname"]))
    if cat == NamespaceRelationId:
        return (("nsp", 0),)
    if cat == EnumRelationId:
        return (("enum", row["enumtypid"]), ("enumtypes", 0))
    if cat == IndexRelationId:
        return (("index", row["indrelid"]),)
    if cat == RangeRelationId:
        multi = row.get("rngmultitypid")
        return (("ranges", 0),) + ((("multirange", multi),) if multi else ())
    if cat == _RELMAP:
        return (("filenode", row["filenode"]),)
    return ()


class _Layer:
    """Rows by (catalog, key), each a list of versions stamped with increasing numbers; a version is
    seen by a reader whose limit is above its stamp.  Commit epochs stamp the committed layer, event
    positions a transaction's own layer."""

    __slots__ = ("rows", "index")

    def __init__(self):
        self.rows: dict = {}  # (cat, key) -> ([stamps], [(deleted, row)])
        self.index: dict = {}  # (name, value) -> ([stamps], [key])

    def add(self, stamp: int, ev: _Event) -> None:
        ent = self.rows.get((ev.cat, ev.key))
        if ent is None:
            ent = self.rows[(ev.cat, ev.key)] = ([], [])
        if ent[0] and ent[0][-1] == stamp:
            ent[1][-1] = (ev.deleted, ev.row)
        else:
            ent[0].append(stamp)
            ent[1].append((ev.deleted, ev.row))
        for link in _links(ev.cat, ev.row):
            ix = self.index.get(link)
            if ix is None:
                ix = self.index[link] = ([], [])
            ix[0].append(stamp)
            ix[1].append((ev.cat, ev.key))

    def get(self, cat: int, key, limit: int):
        ent = self.rows.get((cat, key))
        if ent is None:
            return ABSENT
        stamps = ent[0]
        if stamps[-1] < limit:
            return ent[1][-1]
        i = bisect_left(stamps, limit)
        return ent[1][i - 1] if i else ABSENT

    def linked(self, name: str, value, limit: int, at_most: int | None = None) -> list:
        """Keys linked under (name, value) by versions below ``limit`` (the first ``at_most``)."""
        ix = self.index.get((name, value))
        if ix is None:
            return []
        n = len(ix[0]) if ix[0][-1] < limit else bisect_left(ix[0], limit)
        if at_most is not None:
            n = min(n, at_most)
        return ix[1][:n]


class _TxnEvents:
    """A top-level transaction's catalog events (its subtransactions' included), in LSN order."""

    __slots__ = ("top", "events", "lsns", "layer", "xids")

    def __init__(self, top: int, events=()):
        self.top = top
        self.events: list[_Event] = []
        self.lsns: list[int] = []
        self.layer = _Layer()
        self.xids: set = set()
        for ev in events:
            self.append(ev)

    def append(self, ev: _Event) -> None:
        self.layer.add(len(self.events), ev)
        self.events.append(ev)
        self.lsns.append(ev.lsn)
        self.xids.add(ev.xid)


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


def _fix_infomask_from_infobits(infobits: int, infomask: int, infomask2: int) -> tuple[int, int]:
    """heapam.c fix_infomask_from_infobits: the xmax bits a delete or update record carries."""
    if infobits & XLHL_XMAX_IS_MULTI:
        infomask |= HEAP_XMAX_IS_MULTI
    if infobits & XLHL_XMAX_LOCK_ONLY:
        infomask |= HEAP_XMAX_LOCK_ONLY
    if infobits & XLHL_XMAX_EXCL_LOCK:
        infomask |= HEAP_XMAX_EXCL_LOCK
    if infobits & XLHL_XMAX_KEYSHR_LOCK:  # HEAP_XMAX_SHR_LOCK is EXCL_LOCK | KEYSHR_LOCK: set by the two
        infomask |= HEAP_XMAX_KEYSHR_LOCK
    if infobits & XLHL_KEYS_UPDATED:
        infomask2 |= HEAP_KEYS_UPDATED
    return infomask, infomask2


def _with_xmax(tup: bytes, xmax: int, infobits: int) -> bytes:
    """The tuple as heap_xlog_delete / heap_xlog_update leave the old version: t_xmax set, its
    infomask bits from the record."""
    infomask2, infomask = _t_infomasks.unpack_from(tup, 18)
    infomask, infomask2 = _fix_infomask_from_infobits(infobits, infomask & ~(HEAP_XMAX_BITS | HEAP_MOVED),
                                                      infomask2 & ~HEAP_KEYS_UPDATED)
    out = bytearray(tup)
    _t_xmax.pack_into(out, 4, xmax)
    _t_infomasks.pack_into(out, 18, infomask2, infomask)
    return bytes(out)


def _without_xmax(tup: bytes) -> bytes:
    """The old version after its deleter aborted, as a hint bit would mark it: t_xmax invalid."""
    infomask2, infomask = _t_infomasks.unpack_from(tup, 18)
    out = bytearray(tup)
    _t_xmax.pack_into(out, 4, 0)
    _t_infomasks.pack_into(out, 18, infomask2 & ~HEAP_KEYS_UPDATED, (infomask & ~HEAP_XMAX_BITS) | HEAP_XMAX_INVALID)
    return bytes(out)


# -- the history ---------------------------------------------------------------------------------

class CatalogHistory:
    """The base catalog snapshot plus the catalog changes decoded from the WAL, by LSN."""

    def __init__(self, catalog: Catalog, major: int | None = None, warn=None):
        self.base = catalog
        self.major = major or catalog.major
        self.db = catalog.database_oid
        self.dbspc = catalog.database_tablespace
        self.warn = warn
        self.problems: list[CatalogProblem] = []
        self.inactive_reason: str | None = None
        #: the end of the last record taken (EndRecPtr): where ``materialize`` stands
        self.position = catalog.lsn
        self._layouts: dict[int, CatalogLayout] = {}
        self._nodes: dict[int, int] = {}  # relfilenode (in the database's tablespace) -> catalog OID
        encoding = catalog.settings.get("server_encoding")
        for oid, columns in DECODED_COLUMNS.items():
            rel = catalog.relation(oid)
            if (rel is None or not rel.attributes or not rel.relfilenode) and oid in _OPTIONAL_CATALOGS:
                continue
            if rel is None or not rel.attributes or not rel.relfilenode:
                self.inactive_reason = (f"the catalog snapshot has no {TRACKED_CATALOGS[oid]} (OID {oid}) with "
                                        "its columns and relfilenode: catalog changes in the WAL are not tracked")
                self._layouts.clear()
                self._nodes.clear()
                break
            if (rel.reltablespace or self.dbspc) != self.dbspc:
                continue
            self._layouts[oid] = CatalogLayout(rel, columns, encoding)
            self._nodes[rel.relfilenode] = oid
        # The snapshot's own tuples of the tracked catalogs: a page the WAL shows no image of is taken
        # from them when a record at or after the snapshot's LSN first needs it
        self._seed_lsn = catalog.lsn
        self._seeds: dict[int, CatalogPages] = {}  # relfilenode -> the snapshot's pages of that catalog
        for oid, pages in catalog.catalog_pages.items():
            if self._nodes.get(pages.relfilenode) == oid:
                self._seeds[pages.relfilenode] = pages
        self._seeded: set = set()  # (relfilenode, blkno) whose snapshot tuples were taken
        self.pages: dict[tuple, _Page] = {}
        self.committed = _Layer()
        self.commit_lsns: list[int] = []
        self.txns: dict[int, _TxnEvents] = {}  # pending, by top-level xid
        self.top_of: dict[int, int] = {}  # subtransaction -> top-level transaction
        self._replaying: dict[int, _TxnEvents] = {}  # committed by the record just processed
        self._pending_problems: dict[int, list] = {}  # xid -> problems not yet reported
        # xid -> [(relfilenode, blkno, offnum, inserted)]: the tuples a (sub)transaction still running
        # inserted and deleted, removed from the shadow pages when it aborts, resp. commits
        self._writes: dict[int, list] = {}
        # xid -> relfilenodes of the transient heaps of catalogs it rewrites (VACUUM FULL, CLUSTER):
        # their pages are kept as the catalog's, and dropped if the transaction aborts
        self._rewrites: dict[int, set] = {}
        self._first_versions: set = set()  # (catalog, OID) whose old version the range showed
        self._temp_oids: set = set()  # temporary relations and their row types: never decoded
        self._nsp_base: dict[int, str] = {}  # namespace OID -> its name before the range changed it
        self._views: dict = {}
        self._first_xid = 0
        self._base_type_names: dict | None = None
        self._nsp_harvested = -1  # how many pages there were when they were last searched for schemas
        self._nsp_guess: dict[int, str] = {}
        self._handlers = {RM_HEAP_ID: self._heap, RM_HEAP2_ID: self._heap2, RM_XACT_ID: self._xact,
                          RM_STANDBY_ID: self._standby, RM_RELMAP_ID: self._relmap}
        self._bookkeeping = frozenset((RM_XACT_ID, RM_STANDBY_ID, RM_RELMAP_ID))

    @property
    def active(self) -> bool:
        return bool(self._layouts)

    @property
    def has_changes(self) -> bool:
        """Is any catalog change known (committed, or of a transaction still to be decoded)?"""
        return bool(self.commit_lsns or self.txns or self._replaying)

    @property
    def has_uncommitted_changes(self) -> bool:
        """Is a transaction that changed the catalog (or wrote catalog records not decoded) still open?
        While it is, ``materialize`` refuses: its changes are neither in the committed state nor gone."""
        return bool(self.txns or self._pending_problems or self._writes or self._rewrites)

    # -- per record ------------------------------------------------------------------------------

    def process(self, rec) -> None:
        """Take one record (before the decoder dispatches it)."""
        self.position = rec.end_lsn
        rmid = rec.xl_rmid
        # Catalog heap pages are written by heap records (the page in block 0, the old page of an
        # update in block 1 of the same relation) and imaged by XLOG FPI records
        if rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID:
            blocks = rec.blocks
            if blocks:
                if blocks[0].relNumber not in self._nodes:
                    return
            elif rmid == RM_HEAP2_ID:
                self._heap2(rec, None)  # NEW_CID: the top-level transaction of a subtransaction
                return
            else:
                return
        elif rmid in self._bookkeeping:
            self._handlers[rmid](rec, None)
            return
        elif rmid != RM_XLOG_ID or not rec.blocks:
            return
        if not self._first_xid and rec.xl_xid:
            self._first_xid = rec.xl_xid
        if rec.toplevel_xid and rec.toplevel_xid != rec.xl_xid:
            self.top_of[rec.xl_xid] = rec.toplevel_xid
        nodes = self._nodes
        restored = None
        for b in rec.blocks:
            if b.has_image and b.relNumber in nodes and b.forknum == 0 and b.dbOid == self.db \
                    and b.spcOid == self.dbspc and image_is_applied(b, self.major):
                if restored is None:
                    restored = {}
                key = (b.relNumber, b.blkno)
                restored[key] = self._page(b.relNumber, b.blkno, rec.lsn)  # as it was before the image
                where = f"full-page image at {format_lsn(rec.lsn)} of {b.spcOid}/{b.dbOid}/{b.relNumber}"
                # imported here: the data-directory reader is large, and most runs see no catalog image
                from .catalog_datadir import heap_page_tuples

                try:
                    tuples = heap_page_tuples(restore_block_image(b, self.major, rec.lsn), where, b.blkno)
                except (DecompressionError, CatalogError) as e:
                    self.pages.pop(key, None)  # unknown from here on, until the next image
                    self._problem(rec, self._nodes[b.relNumber], b, 0,
                                  f"unreadable full-page image: {getattr(e, 'reason', e)}")
                    continue
                self.pages[key] = _Page(_IMAGE, rec.lsn, tuples)
        if rmid == RM_HEAP_ID:
            self._heap(rec, restored)
        elif rmid == RM_HEAP2_ID:
            self._heap2(rec, restored)

    # heap redo ----------------------------------------------------------------------------------

    def _catalog_block(self, rec, block_id: int = 0):
        b = rec.block(block_id)
        if b is None or b.forknum != 0 or b.dbOid != self.db or b.spcOid != self.dbspc:
            return None, None
        cat = self._nodes.get(b.relNumber)
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
            self._problem(rec, cat, blk, 0, f"cannot decode the catalog record: {getattr(e, 'reason', e)}")

    def _heap2(self, rec, restored) -> None:
        info = rec.xl_info & XLOG_HEAP_OPMASK
        if info == XLOG_HEAP2_NEW_CID:
            top = _u32.unpack_from(rec.main_data, 0)[0]
            if rec.xl_xid and top and top != rec.xl_xid:
                self.top_of[rec.xl_xid] = top
            return
        if info != XLOG_HEAP2_MULTI_INSERT:
            return  # prune, vacuum, freeze, visible, lock: line pointers and headers only
        blk, cat = self._catalog_block(rec)
        if blk is None:
            return
        try:
            self._redo_multi_insert(rec, blk, cat, restored)
        except (CorruptRecordError, DecompressionError, struct.error, IndexError) as e:
            self._problem(rec, cat, blk, 0, f"cannot decode the catalog record: {getattr(e, 'reason', e)}")

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
        cat = self._nodes.get(blk.relNumber)
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
        return _tuple_header.pack(xid, 0, 0, blkno >> 16, blkno & 0xFFFF, offnum, infomask2, infomask,
                                  t_hoff) + bytes(body)

    def _wrote(self, rec, blk, offnum: int, inserted: bool) -> None:
        """Remember a tuple a transaction inserted or deleted, to drop it when that is final."""
        if rec.xl_xid:
            self._writes.setdefault(rec.xl_xid, []).append((blk.relNumber, blk.blkno, offnum, inserted))

    def _redo_insert(self, rec, blk, cat: int, restored) -> None:
        offnum, _flags = xl_heap_insert.unpack_from(rec.main_data, 0)
        if restored is not None and (blk.relNumber, blk.blkno) in restored:
            tup = self._tuple(blk, offnum, rec.lsn)
            if tup is None:
                self._problem(rec, cat, blk, offnum, "the full-page image has no tuple at the inserted offset")
                return
        else:
            data = blk.data
            if len(data) < SizeOfHeapHeader:
                self._problem(rec, cat, blk, offnum, "the record carries no tuple")
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
                    self._problem(rec, cat, blk, offnum, "the full-page image has no tuple at an inserted offset")
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
        layout = self._layouts[cat]
        if restored is not None and (blk.relNumber, blk.blkno) in restored:
            newtup = self._tuple(blk, new_off, rec.lsn)
            if newtup is None:
                self._problem(rec, cat, blk, new_off, "the full-page image has no tuple at the new offset",
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
                self._problem(rec, cat, oldblk, old_off,
                              "the new row is stored as a difference to the old one, which is unknown: "
                              + self._why_missing(oldblk, old_off, rec.lsn))
            else:
                if prefixlen:
                    old_hoff = oldtup[22]
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
            self._event(rec, cat, oldrow, True)
        if newrow is not None:
            self._event(rec, cat, newrow, False)

    def _redo_delete(self, rec, blk, cat: int) -> None:
        xmax, offnum, infobits, _flags = xl_heap_delete.unpack_from(rec.main_data, 0)
        tup = self._tuple(blk, offnum, rec.lsn)
        if tup is None:
            self._problem(rec, cat, blk, offnum, "a row was deleted, but which one is unknown: "
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
            t_hoff = oldtup[22]
            newtup = oldtup[:t_hoff] + bytes(blk.data)
            self.pages[key].tuples[offnum] = newtup
        if oldtup is None or newtup is None:
            return
        layout = self._layouts[cat]
        oldrow, newrow = layout.decode(oldtup), layout.decode(newtup)
        if oldrow == newrow:
            return
        # A changed column we read (13-16 set pg_index flags in place): the version changes for everyone
        # who sees it — its inserting transaction if that is still open, else everybody from now on.
        writer = _u32.unpack_from(oldtup, 0)[0]  # t_xmin: WAL-built tuples carry their record's xid
        top = self.top_of.get(writer, writer) if writer else None
        ev = _Event(rec.lsn, writer or 0, cat, _key(cat, newrow), False, newrow)
        if top is not None and top in self.txns:
            self.txns[top].append(ev)
            self._views.clear()
        else:
            self._commit_events(rec.lsn, [ev])

    def _add(self, rec, cat: int, blk, offnum: int, tup, deleted: bool) -> None:
        self._event(rec, cat, self._layouts[cat].decode(tup), deleted)

    def _event(self, rec, cat: int, row: dict, deleted: bool) -> None:
        xid = rec.xl_xid
        if not xid:
            return
        if deleted and cat in (NamespaceRelationId, RelationRelationId, TypeRelationId):
            self._learn_schema(cat, row)
        ev = _Event(rec.lsn, xid, cat, _key(cat, row), deleted, row)
        top = self.top_of.get(xid, xid)
        txn = self.txns.get(top)
        if txn is None:
            txn = self.txns[top] = _TxnEvents(top)
        txn.append(ev)
        if cat == RelationRelationId and not deleted and row["relnamespace"] == PG_CATALOG_NAMESPACE:
            self._rewrite_heap(xid, row)

    def _rewrite_heap(self, xid: int, row: dict) -> None:
        """make_new_heap's transient heap "pg_temp_<OID>" of a catalog being rewritten (VACUUM FULL,
        CLUSTER): its pages, written as full-page images before the swap makes them the catalog's, are
        kept as that catalog's from now on, and dropped if the transaction aborts."""
        name = row["relname"]
        if not (name.startswith("pg_temp_") and name[8:].isdigit()):
            return
        cat = int(name[8:])
        if cat not in self._layouts or (row["reltablespace"] or self.dbspc) != self.dbspc:
            return
        # A mapped catalog's transient heap is mapped too (relfilenode 0 in pg_class); its storage is
        # named by its OID (heap.c heap_create_with_catalog: "The OID will be the relfilenode as well")
        node = row["relfilenode"] or row["oid"]
        if node not in self._nodes:
            self._nodes[node] = cat
            self._rewrites.setdefault(xid, set()).add(node)

    def _learn_schema(self, cat: int, row: dict) -> None:
        """The first old version of a snapshot object's row the range shows is the snapshot's: it
        tells the OIDs of the schemas the snapshot names (it records no schema OIDs)."""
        oid = row["oid"]
        if cat == NamespaceRelationId:
            self._nsp_base.setdefault(oid, row["nspname"])
            return
        if cat == RelationRelationId:
            obj, nsp, name = self.base.relation(oid), row["relnamespace"], row["relname"]
        else:
            obj, nsp, name = self.base.type(oid), row["typnamespace"], row["typname"]
        if obj is None or (cat, oid) in self._first_versions:
            return
        self._first_versions.add((cat, oid))
        if nsp not in self._nsp_base and (obj.relname if cat == RelationRelationId else obj.typname) == name:
            self._nsp_base[nsp] = obj.nspname

    def _problem(self, rec, cat: int, blk, offnum: int, reason: str, row: dict | None = None) -> None:
        name = TRACKED_CATALOGS.get(cat)
        p = CatalogProblem(rec.lsn, rec.xl_xid, f"pg_catalog.{name}" if name else str(cat), blk.spcOid, blk.dbOid,
                           blk.relNumber, blk.blkno, offnum, reason, self._row_name(cat, row) if row else "")
        self.problems.append(p)
        self._pending_problems.setdefault(rec.xl_xid, []).append(p)

    def _relation_name(self, oid: int) -> str:
        rel = self.view(self.position + 1).relation(oid)
        return f"OID {oid}" if rel is None else f"{rel.nspname}.{rel.relname} (OID {oid})"

    def _row_name(self, cat: int, row: dict) -> str:
        """Which object a decoded catalog row is about, for a report."""
        if cat == RelationRelationId:
            nsp = self.view(self.position + 1).namespace_name(row["relnamespace"])
            return f"relation {nsp + '.' if nsp else ''}{row['relname']} (OID {row['oid']})"
        if cat == AttributeRelationId:
            return f"column {row['attnum']} ({row['attname']}) of relation {self._relation_name(row['attrelid'])}"
        if cat == TypeRelationId:
            return f"type {row['typname']} (OID {row['oid']})"
        if cat == NamespaceRelationId:
            return f"schema {row['nspname']} (OID {row['oid']})"
        if cat == EnumRelationId:
            return f"enum label {row['enumlabel']!r} (OID {row['oid']}) of type OID {row['enumtypid']}"
        if cat == IndexRelationId:
            return f"index OID {row['indexrelid']} of relation {self._relation_name(row['indrelid'])}"
        if cat == RangeRelationId:
            return f"range type OID {row['rngtypid']}"
        if cat == ProcedureRelationId:
            return f"function {row['proname']} (OID {row['oid']})"
        return str(_key(cat, row))

    def _concerned(self, events) -> str:
        """The relations, types and functions a transaction's catalog events are about (for a report)."""
        rels, others = [], []
        for ev in events:
            row = ev.row
            if ev.cat == RelationRelationId:
                oid = row["oid"]
            elif ev.cat == AttributeRelationId:
                oid = row["attrelid"]
            elif ev.cat == IndexRelationId:
                oid = row["indrelid"]
            else:
                text = self._row_name(ev.cat, row)
                if text not in others:
                    others.append(text)
                continue
            if oid not in rels:
                rels.append(oid)
        names = [f"relation {self._relation_name(oid)}" for oid in rels] + others
        if len(names) > 6:
            names = names[:6] + [f"{len(names) - 6} more"]
        return ", ".join(names)

    # transactions -------------------------------------------------------------------------------

    def _xact(self, rec, _restored) -> None:
        info = rec.xl_info & XLOG_XACT_OPMASK
        if info != XLOG_XACT_ASSIGNMENT and not self.txns and not self._pending_problems and not self._writes \
                and not self._rewrites:
            return
        from .rmgr import xact as rm_xact

        if info == XLOG_XACT_ASSIGNMENT:
            xtop, nsubxacts = rm_xact.xl_xact_assignment.unpack_from(rec.main_data, 0)
            for sub in struct.unpack_from(f"<{nsubxacts}I", rec.main_data, 8):
                self.top_of[sub] = xtop
            return
        if info in (XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED):
            parsed = rm_xact.parse_commit_or_abort(rec.xl_info, rec.main_data, self.major, True)
            self._commit(parsed.twophase_xid or rec.xl_xid, parsed.subxacts, rec.lsn)
        elif info in (XLOG_XACT_ABORT, XLOG_XACT_ABORT_PREPARED):
            parsed = rm_xact.parse_commit_or_abort(rec.xl_info, rec.main_data, self.major, False)
            self._abort(parsed.twophase_xid or rec.xl_xid, parsed.subxacts)
        elif info == XLOG_XACT_PREPARE:
            parsed, _ = rm_xact.parse_prepare(rec.main_data, self.major)
            for sub in parsed.subxacts:
                self._adopt(parsed.twophase_xid, sub)

    def _adopt(self, top: int, sub: int) -> None:
        """``sub`` is a subtransaction of ``top``: events filed under it alone join top's."""
        self.top_of[sub] = top
        stray = self.txns.pop(sub, None)
        if stray is not None:
            mine = self.txns.get(top)
            events = sorted((mine.events if mine else []) + stray.events, key=lambda e: e.lsn)
            self.txns[top] = _TxnEvents(top, events)
            self._views.clear()

    def _commit(self, top: int, subxacts, lsn: int) -> None:
        self._replaying.clear()  # the previous commit's replay is over
        for sub in subxacts:
            self._adopt(top, sub)
        xids = {top, *subxacts}
        txn = self.txns.pop(top, None)
        if txn is not None:
            if not txn.xids <= xids:  # subtransactions that ended without a record of their own
                txn = _TxnEvents(top, [e for e in txn.events if e.xid in xids])
            if txn.events:
                events = self._committable(txn.events)
                if events:
                    self._commit_events(lsn, events)
                self._replaying[top] = txn
        self._end_writes(xids, True)
        problems = []
        for x in xids:
            problems += self._pending_problems.pop(x, ())
        if problems:
            context = self._concerned(txn.events) if txn is not None else ""
            problems_before = problems
            problems = [p._replace(context=context) if context else p for p in problems]
            with_context = {id(old): p for old, p in zip(problems_before, problems)}
            self.problems = [with_context.get(id(p), p) for p in self.problems]
            if self.warn is not None:
                for p in sorted(problems, key=lambda p: p.lsn):
                    self.warn(f"catalog change not decoded: {p.describe()}; changes after it may be decoded with "
                              "outdated definitions")
        for x in subxacts:
            self.top_of.pop(x, None)

    def _end_writes(self, xids, committed: bool) -> None:
        """A (sub)transaction's tuples when it ends: those it deleted are gone if it committed; those it
        inserted are gone, and those it deleted live again, if it aborted.  (A rewrite's new heap
        becomes the catalog's storage, or is dropped.)"""
        for x in xids:
            nodes = self._rewrites.pop(x, None)
            if nodes and not committed:
                for node in nodes:
                    self._nodes.pop(node, None)
                for key in [k for k in self.pages if k[0] in nodes]:
                    del self.pages[key]
            writes = self._writes.pop(x, None)
            if not writes:
                continue
            for node, blkno, offnum, inserted in writes:
                page = self.pages.get((node, blkno))
                tup = page.tuples.get(offnum) if page is not None else None
                if tup is None:
                    continue
                if inserted:
                    if not committed and _u32.unpack_from(tup, 0)[0] == x:
                        del page.tuples[offnum]
                elif _u32.unpack_from(tup, 4)[0] == x:
                    if committed:
                        del page.tuples[offnum]
                    else:
                        page.tuples[offnum] = _without_xmax(tup)

    def _committable(self, events: list) -> list:
        """The events worth keeping: not those of temporary relations and their row types (never
        decoded, and created and dropped by the thousand), nor deletions of rows never known."""
        temp = self._temp_oids
        for ev in events:
            if ev.cat == RelationRelationId and ev.row["relpersistence"] == "t":
                temp.add(ev.key)
                if ev.row["reltype"]:
                    temp.add(ev.row["reltype"])
        if temp:
            for ev in events:  # array types of temporary row types
                if ev.cat == TypeRelationId and ev.row["typelem"] in temp and ev.row["typlen"] == -1:
                    temp.add(ev.key)
        out = []
        known = self.committed.rows
        base = self.base
        batch = set()  # (cat, key) written by this transaction's kept events
        for ev in events:
            cat = ev.cat
            ck = (cat, ev.key)
            if cat == RelationRelationId:
                if ev.key in temp:
                    continue
                unknown = base.relation(ev.key) is None
            elif cat == AttributeRelationId:
                if ev.key[0] in temp:
                    continue
                unknown = base.relation(ev.key[0]) is None
            elif cat == TypeRelationId:
                if ev.key in temp:
                    continue
                unknown = base.type(ev.key) is None
            else:
                if cat == IndexRelationId and ev.row["indrelid"] in temp:
                    continue
                unknown = False
            if ev.deleted and unknown and ck not in known and ck not in batch:
                continue
            batch.add(ck)
            out.append(ev)
        return out

    def _commit_events(self, lsn: int, events) -> None:
        epoch = len(self.commit_lsns)
        self.commit_lsns.append(lsn)
        add = self.committed.add
        for ev in events:
            add(epoch, ev)

    def _abort(self, xid: int, subxacts) -> None:
        xids = {xid, *subxacts}
        for x in xids:
            self._pending_problems.pop(x, None)
            self.txns.pop(x, None)  # a top-level transaction's events, or a subtransaction's filed alone
        top = self.top_of.get(xid)
        if top is not None and top in self.txns:
            txn = self.txns[top]
            if txn.xids & xids:
                self.txns[top] = _TxnEvents(top, [e for e in txn.events if e.xid not in xids])
                self._views.clear()
        self._end_writes(xids, False)
        for x in xids:
            self.top_of.pop(x, None)

    def _standby(self, rec, _restored) -> None:
        if rec.xl_info & 0xF0 != XLOG_RUNNING_XACTS:
            return
        from .rmgr.standby import xl_running_xacts
        from .snapbuild import xid_precedes

        _x, _s, _o, next_xid, oldest, _l = xl_running_xacts.unpack_from(rec.main_data, 0)
        if not self._first_xid:
            self._first_xid = next_xid  # from here on every transaction's catalog rows are events
        for top in [t for t in self.txns if xid_precedes(t, oldest)]:
            del self.txns[top]  # ended without a commit or abort record: crashed
        for x in [x for x in self._pending_problems if xid_precedes(x, oldest)]:
            del self._pending_problems[x]
        crashed = {x for x in (*self._writes, *self._rewrites) if xid_precedes(x, oldest)}
        if crashed:
            self._end_writes(crashed, False)

    def _relmap(self, rec, _restored) -> None:
        """XLOG_RELMAP_UPDATE of this database: mapped catalogs got new relfilenodes (VACUUM FULL)."""
        dbid, _tsid, nbytes = xl_relmap_update.unpack_from(rec.main_data, 0)
        if dbid != self.db or nbytes < _relmap_header.size:
            return
        data = rec.main_data[xl_relmap_update.size:xl_relmap_update.size + nbytes]
        magic, n = _relmap_header.unpack_from(data, 0)
        if magic != RELMAPPER_FILEMAGIC or n < 0 or 8 + 8 * n > len(data):
            return
        events = []
        for i in range(n):
            oid, filenode = struct.unpack_from("<II", data, 8 + 8 * i)
            if self._mapped_filenode_now(oid) != filenode:
                events.append(_Event(rec.lsn, rec.xl_xid, _RELMAP, oid, False, {"filenode": filenode}))
                if oid in self._layouts:
                    self._nodes[filenode] = oid
        if events:
            self._commit_events(rec.lsn, events)

    def _mapped_filenode_now(self, oid: int) -> int:
        v = self.committed.get(_RELMAP, oid, len(self.commit_lsns))
        if v is not ABSENT:
            return v[1]["filenode"]
        rel = self.base.relation(oid)
        return rel.relfilenode if rel is not None else 0

    # -- lookups ---------------------------------------------------------------------------------

    def _own(self, xid: int):
        txn = self._replaying.get(xid)
        if txn is None:
            txn = self.txns.get(xid)
        return txn

    def view(self, lsn: int, xid: int = 0):
        """The catalog as transaction ``xid`` (top-level) sees it at ``lsn``: the base ``Catalog``
        itself while nothing changed, else a ``HistoricCatalog``."""
        epoch = bisect_left(self.commit_lsns, lsn) if self.commit_lsns else 0
        txn = self._own(xid) if xid and (self.txns or self._replaying) else None
        count = bisect_left(txn.lsns, lsn) if txn is not None else 0
        if not epoch and not count:
            return self.base
        key = (epoch, txn if count else None, count)
        v = self._views.get(key)
        if v is None:
            if len(self._views) > 256:
                self._views.clear()
            v = self._views[key] = HistoricCatalog(self, epoch, txn if count else None, count, lsn)
        return v

    def materialize(self) -> Catalog | None:
        """The catalog as of ``position`` (what every transaction committed by then made of it) as a
        ``Catalog`` with ``lsn`` = ``position``, in the snapshot format: relations, types, schemas,
        and the catalog pages as far as this history knows them.  A ``CatalogHistory`` started from
        it and fed the records that follow gives the views this one gives from here on.  None while
        ``has_uncommitted_changes``: a transaction's catalog changes would be neither in it nor gone.
        The snapshot's pages are left out while ``position`` is before the snapshot's LSN (they
        describe the catalog later than that)."""
        if self.has_uncommitted_changes:
            return None
        base = self.base
        view = self.view(self.position)
        if view is base:
            relations, types = dict(base.relations), dict(base.types)
            names = {oid: self.base_namespace_name(oid) for oid in
                     {*base.namespaces, *self._nsp_base, *self._nsp_guess}}
        else:
            rel_oids = set(base.relations) | {k for (cat, k) in self.committed.rows if cat == RelationRelationId}
            relations = {oid: r for oid in rel_oids if (r := view.relation(oid)) is not None}
            type_oids = set(base.types) | {k for (cat, k) in self.committed.rows if cat == TypeRelationId}
            types = {oid: t for oid in type_oids if (t := view.type(oid)) is not None}
            nsp_oids = {*base.namespaces, *self._nsp_base, *self._nsp_guess,
                        *(k for (cat, k) in self.committed.rows if cat == NamespaceRelationId)}
            names = {oid: view.namespace_name(oid) for oid in nsp_oids}
        return Catalog(
            server_version=base.server_version, server_version_num=base.server_version_num, major=base.major,
            lsn=self.position, database=base.database, database_oid=base.database_oid,
            database_tablespace=base.database_tablespace, settings=dict(base.settings), relations=relations,
            types=types, namespaces={oid: name for oid, name in names.items() if name is not None},
            catalog_pages=self._materialize_pages(view), catalog_pages_note=base.catalog_pages_note)

    def _materialize_pages(self, view) -> dict:
        """The tracked catalogs' pages as known at ``position``: the shadow pages, and the snapshot's
        blocks no record needed yet (passed on as they are)."""
        out = {}
        for cat in self._layouts:
            rel = view.relation(cat)
            if rel is None:
                continue
            node = rel.relfilenode
            seeds = self._seeds.get(node) if self.position >= self._seed_lsn else None
            blocks: dict = {}
            partial = set()
            if seeds is not None:
                for blkno, block in seeds.blocks.items():
                    if (node, blkno) not in self._seeded and (node, blkno) not in self.pages:
                        blocks[blkno] = block
                        if blkno in seeds.partial:
                            partial.add(blkno)
            for (n, blkno) in [k for k in self.pages if k[0] == node]:
                page = self._page(n, blkno, self.position)  # the snapshot's tuples merged, as the next record would
                blocks[blkno] = sorted(page.tuples.items())
                if page.source is _WAL:
                    partial.add(blkno)
            if blocks:
                out[cat] = CatalogPages(cat, node, "history", blocks, partial)
        return out

    def relation_by_filenode(self, spc: int, relfilenode: int, lsn: int, xid: int = 0):
        return self.view(lsn, xid).relation_by_filenode(spc, relfilenode)

    def relation(self, oid: int, lsn: int, xid: int = 0):
        return self.view(lsn, xid).relation(oid)

    def explain_unmapped(self, spc: int, relfilenode: int, lsn: int, xid: int = 0) -> str:
        """Why no relation is stored in (spc, relfilenode) at ``lsn`` for ``xid``: for a report."""
        if not self._layouts:
            return (f"no relation of the catalog snapshot (taken at {format_lsn(self.base.lsn)}) is stored "
                    f"there, and {self.inactive_reason}")
        txn = self._own(xid)
        xids = txn.xids | {xid} if txn is not None else {xid}
        relevant = [p for p in self.problems if p.lsn < lsn and (p.xid in xids or p.xid not in self.txns)]
        if relevant:
            n = len(relevant)
            return (f"{n} catalog change{'s' if n > 1 else ''} before it could not be decoded"
                    + (", the last: " if n > 1 else ": ") + relevant[-1].describe())
        return (f"neither the catalog snapshot (taken at {format_lsn(self.base.lsn)}) nor the catalog changes "
                "decoded since the start of the WAL read store a relation there (was it created between the "
                "snapshot and the start of the WAL read?)")

    # fallbacks from the pages: what the base snapshot does not say ---------------------------------

    def _page_rows(self, cat: int):
        """Rows of ``cat`` on the pages seen that were there before the range and are not deleted by then."""
        layout = self._layouts.get(cat)
        if layout is None:
            return
        nodes = {n for n, c in self._nodes.items() if c == cat}
        first = self._first_xid
        for (node, blkno), page in self.pages.items():
            if node not in nodes:
                continue
            for offnum, tup in page.tuples.items():
                xmin, xmax = struct.unpack_from("<II", tup, 0)
                if first and xmin >= first:
                    continue  # written in the range: its events say whether it counts
                infomask = _u16.unpack_from(tup, 20)[0]
                if infomask & HEAP_XMIN_INVALID and not infomask & HEAP_XMIN_COMMITTED:  # (both: frozen)
                    continue
                if xmax and not infomask & (HEAP_XMAX_INVALID | HEAP_XMAX_LOCK_ONLY):
                    if not (first and xmax >= first):  # deleted before the range
                        continue
                try:
                    yield layout.decode(tup)
                except WALError:
                    continue

    def known_namespace_name(self, nspoid: int) -> str | None:
        """The name schema ``nspoid`` had before the range, if a row of it (or the snapshot) says."""
        known = getattr(self.base, "namespaces", None)
        if isinstance(known, dict) and nspoid in known:
            return known[nspoid]
        return self._nsp_base.get(nspoid) or _FIXED_NAMESPACES.get(nspoid)

    def base_namespace_name(self, nspoid: int) -> str | None:
        """The name of schema ``nspoid`` as the range found it (before any rename in it).

        The snapshot names schemas but (format version 1) not their OIDs; pg_catalog and pg_toast
        are pinned; others are learnt from pg_namespace rows the WAL shows, or from rows of
        pg_class and pg_type on pages seen whose objects the snapshot names.  A schema never
        seen is taken to be where an unqualified CREATE puts objects: the first schema of
        search_path (``public`` for OID 2200), with a warning."""
        name = self._nsp_base.get(nspoid)
        if name is not None:
            return name
        known = getattr(self.base, "namespaces", None)  # a snapshot that records schema OIDs
        if isinstance(known, dict) and nspoid in known:
            return known[nspoid]
        if nspoid in (PG_CATALOG_NAMESPACE, PG_TOAST_NAMESPACE):
            return _FIXED_NAMESPACES[nspoid]
        if self._nsp_harvested != len(self.pages):  # pages seen since the last look
            self._nsp_harvested = len(self.pages)
            for row in self._page_rows(NamespaceRelationId):
                self._nsp_base.setdefault(row["oid"], row["nspname"])
            for row in self._page_rows(RelationRelationId):
                rel = self.base.relation(row["oid"])
                if rel is not None:
                    self._nsp_base.setdefault(row["relnamespace"], rel.nspname)
            for row in self._page_rows(TypeRelationId):
                typ = self.base.type(row["oid"])
                if typ is not None:
                    self._nsp_base.setdefault(row["typnamespace"], typ.nspname)
            name = self._nsp_base.get(nspoid)
            if name is not None:
                return name
        name = self._nsp_guess.get(nspoid)
        if name is None:
            taken = set(self._nsp_base.values()) | set(self._nsp_guess.values())
            if nspoid == PG_PUBLIC_NAMESPACE and "public" not in taken:
                name = "public"
            else:
                for cand in _search_path(self.base.settings.get("search_path", "")):
                    if cand not in ("$user", "pg_catalog", "pg_temp") and cand not in taken:
                        name = cand
                        break
            if name is None:
                return None
            self._nsp_guess[nspoid] = name
            if nspoid != PG_PUBLIC_NAMESPACE and self.warn is not None:
                self.warn(f"schema OID {nspoid} is not in the catalog snapshot and its name is not in the WAL "
                          f"read: taken to be {name!r}, the first schema of search_path")
        return name

    def base_type_names(self) -> dict:
        """(schema, name) -> OIDs of the base snapshot's types."""
        if self._base_type_names is None:
            names: dict = {}
            for t in self.base.types.values():
                names.setdefault((t.nspname, t.typname), []).append(t.oid)
            self._base_type_names = names
        return self._base_type_names

    def base_type_oids(self, nspname: str, typname: str) -> list:
        return self.base_type_names().get((nspname, typname), [])

    def base_indexes(self, relid: int) -> dict:
        return {row["indexrelid"]: row for row in self._page_rows(IndexRelationId) if row["indrelid"] == relid}


# -- the catalog at one point ---------------------------------------------------------------------

def _search_path(text: str) -> list[str]:
    """search_path's schema names as the server reads them ("$user" kept as is; none when unparsable)."""
    return split_identifier_string(text) or []

class HistoricCatalog:
    """The catalog of one epoch of the history, as one transaction sees it at one point: the same
    interface as ``catalog.Catalog`` (``relation``, ``relation_by_filenode``, ``type``, ``types``,
    ``relations``), built lazily from the base snapshot and the rows decoded from the WAL."""

    def __init__(self, history: CatalogHistory, epoch: int, txn: _TxnEvents | None, count: int, lsn: int):
        base = history.base
        self.history = history
        self.base = base
        self.server_version = base.server_version
        self.server_version_num = base.server_version_num
        self.major = base.major
        self.lsn = lsn
        self.database = base.database
        self.database_oid = base.database_oid
        self.database_tablespace = base.database_tablespace
        self.settings = base.settings
        self._epoch = epoch
        self._txn = txn
        self._count = count
        self._rels: dict = {}
        self._by_node: dict = {}
        self._types: dict = {}
        self._formats: dict = {}
        self._nsp: dict = {}
        self._any_type_change: bool | None = None
        self._renamed: dict | None = None
        self._types_all: dict | None = None
        self._relations_all: dict | None = None
        self._ctx = None

    def __repr__(self) -> str:
        return f"<HistoricCatalog epoch {self._epoch}, {self._count} own changes, at {format_lsn(self.lsn)}>"

    # rows -----------------------------------------------------------------------------------------

    def _get(self, cat: int, key):
        if self._count:
            v = self._txn.layer.get(cat, key, self._count)
            if v is not ABSENT:
                return v
        return self.history.committed.get(cat, key, self._epoch)

    def _linked_any(self, name: str, value) -> bool:
        if self.history.committed.linked(name, value, self._epoch, 1):
            return True
        return bool(self._count and self._txn.layer.linked(name, value, self._count, 1))

    def _linked(self, name: str, value) -> set:
        keys = set(self.history.committed.linked(name, value, self._epoch))
        if self._count:
            keys.update(self._txn.layer.linked(name, value, self._count))
        return keys

    def output_context(self):
        if self._ctx is None:
            from .types import OutputContext

            self._ctx = OutputContext(self, self.settings)
        return self._ctx

    # namespaces -------------------------------------------------------------------------------------

    def namespace_name(self, nspoid: int) -> str | None:
        name = self._nsp.get(nspoid, ABSENT)
        if name is ABSENT:
            v = self._get(NamespaceRelationId, nspoid)
            if v is ABSENT:
                name = self.history.base_namespace_name(nspoid)
            else:
                name = None if v[0] else v[1]["nspname"]
            self._nsp[nspoid] = name
        return name

    def _renamed_namespaces(self) -> dict:
        """Base-snapshot schema name -> its name here, for schemas renamed (or dropped: None)."""
        if self._renamed is None:
            self._renamed = {}
            for _cat, oid in self._linked("nsp", 0):
                old = self.history.known_namespace_name(oid)  # None: created in the range
                if old is None:
                    continue
                now = self.namespace_name(oid)
                if now != old:
                    self._renamed[old] = now
        return self._renamed

    # types ------------------------------------------------------------------------------------------

    def _types_changed(self) -> bool:
        """Did any pg_type row change by this point?"""
        if self._any_type_change is None:
            self._any_type_change = bool(self._linked_any("types", 0))
        return self._any_type_change

    def type(self, oid: int) -> TypeInfo | None:
        t = self._types.get(oid, ABSENT)
        if t is ABSENT:
            t = self._types[oid] = self._make_type(oid)
        return t

    def _make_type(self, oid: int) -> TypeInfo | None:
        base_t = self.base.type(oid)
        v = self._get(TypeRelationId, oid)
        if v is ABSENT:
            if base_t is None:
                return None
            t = base_t
            changes = {}
            labels = self._enum_labels(oid, base_t.enum_labels)
            if labels is not None:
                changes["enum_labels"] = labels
            renamed = self._renamed_namespaces()
            if base_t.nspname in renamed and renamed[base_t.nspname] is not None:
                changes["nspname"] = renamed[base_t.nspname]
            sub = self._range_subtype(oid)
            if sub is not None and sub != base_t.rngsubtype:
                changes["rngsubtype"] = sub
            if changes:
                t = replace(base_t, **changes)
            if self._format_affected(oid, base_t, 0):
                self._types[oid] = t
                t = replace(t, format_type=self._format(t, None))
            return t
        if v[0]:
            return None
        row = v[1]
        typoutput = _OUTPUT_FUNCTIONS.get(row["typoutput"]) or self._proc_name(row["typoutput"])
        if typoutput is None:
            if base_t is not None:
                typoutput = base_t.typoutput
            elif row["typtype"] == "d" and row["typbasetype"]:
                bt = self.type(row["typbasetype"])
                typoutput = bt.typoutput if bt is not None else ""
            else:
                typoutput = ""
        labels = self._enum_labels(oid, base_t.enum_labels if base_t is not None else {})
        sub = self._range_subtype(oid)
        t = TypeInfo(
            oid=oid, typname=row["typname"], nspname=self.namespace_name(row["typnamespace"]) or "",
            typlen=row["typlen"], typbyval=row["typbyval"], typalign=row["typalign"],
            typstorage=row["typstorage"], typtype=row["typtype"], typcategory=row["typcategory"],
            typdelim=row["typdelim"], typelem=row["typelem"], typarray=row["typarray"],
            typbasetype=row["typbasetype"], typtypmod=row["typtypmod"], typrelid=row["typrelid"],
            typoutput=typoutput, format_type="",
            rngsubtype=sub if sub is not None else (base_t.rngsubtype if base_t is not None else 0),
            enum_labels=labels if labels is not None else (dict(base_t.enum_labels) if base_t is not None else {}))
        self._types[oid] = t  # provisional, for format_type's look at element types
        return replace(t, format_type=self._format(t, row.get("typsubscript")))

    def _proc_name(self, procoid: int) -> str | None:
        """A function created in the range, as catalog_dsn names output functions (regproc text:
        bare in pg_catalog, else schema-qualified)."""
        v = self._get(ProcedureRelationId, procoid)
        if v is ABSENT or v[0]:
            return None
        nsp = self.namespace_name(v[1]["pronamespace"])
        if nsp == "pg_catalog":
            return v[1]["proname"]
        return quote_identifier(nsp or "???", self.major) + "." + quote_identifier(v[1]["proname"], self.major)

    def _enum_labels(self, typoid: int, base_labels: dict) -> dict | None:
        keys = self._linked("enum", typoid)
        if not keys:
            return None
        labels = dict(base_labels)
        added = []
        for _cat, label_oid in keys:
            v = self._get(EnumRelationId, label_oid)
            if v is ABSENT:
                continue
            deleted, row = v
            if deleted or row["enumtypid"] != typoid:
                labels.pop(label_oid, None)
            else:
                labels.pop(label_oid, None)
                added.append((row["enumsortorder"], label_oid, row["enumlabel"]))
        for _order, label_oid, label in sorted(added):
            labels[label_oid] = label
        return labels

    def _range_subtype(self, oid: int) -> int | None:
        v = self._get(RangeRelationId, oid)
        if v is not ABSENT:
            return None if v[0] else v[1]["rngsubtype"]
        for _cat, rngtypid in self._linked("multirange", oid):
            v = self._get(RangeRelationId, rngtypid)
            if v is not ABSENT and not v[0] and v[1].get("rngmultitypid") == oid:
                return v[1]["rngsubtype"]
        return None

    def _format_affected(self, oid: int, base_t: TypeInfo, depth: int) -> bool:
        """Could format_type(oid) differ from the base snapshot's text here?  (Its row changed, its
        schema was renamed, a type of its name appeared (visibility), or its element type's did.)"""
        if not self._types_changed() and not self._renamed_namespaces():
            return False
        if self._get(TypeRelationId, oid) is not ABSENT:
            return True
        if base_t.nspname in self._renamed_namespaces():
            return True
        if base_t.nspname != "pg_catalog" and self._linked_any("typname", base_t.typname):
            return True
        if base_t.typelem and depth < 2:
            elem = self.base.type(base_t.typelem)
            if elem is not None and self._format_affected(base_t.typelem, elem, depth + 1):
                return True
        return False

    def _type_named(self, nspname: str, typname: str) -> bool:
        """Is there a type ``nspname.typname`` here?  (namespace.c TypenameGetTypid's question.)"""
        for _cat, oid in self._linked("typname", typname):
            v = self._get(TypeRelationId, oid)
            if v is not ABSENT and not v[0] and v[1]["typname"] == typname \
                    and self.namespace_name(v[1]["typnamespace"]) == nspname:
                return True
        renamed = self._renamed_namespaces()
        olds = [nspname] + [old for old, new in renamed.items() if new == nspname]
        for old in olds:
            if old in renamed and renamed[old] != nspname:
                continue  # that schema has another name here
            for oid in self.history.base_type_oids(old, typname):
                v = self._get(TypeRelationId, oid)
                if v is ABSENT:
                    return True
                if not v[0] and v[1]["typname"] == typname and \
                        self.namespace_name(v[1]["typnamespace"]) == nspname:
                    return True
        return False

    def _format(self, t: TypeInfo, typsubscript) -> str:
        """format_type(oid, NULL) (format_type.c format_type_extended with typemod -1)."""
        is_array = False
        if t.typelem and t.typstorage != "p":
            if self.major < 14:
                is_array = True  # 13: any element type and non-plain storage
            elif typsubscript is not None:
                is_array = typsubscript == F_ARRAY_SUBSCRIPT_HANDLER  # IsTrueArrayType
            else:  # a snapshot type, whose typsubscript the snapshot does not record
                is_array = t.typoutput == "array_out" and t.typtype == "b"
        if is_array:
            elem = self.type(t.typelem)
            if elem is None:
                return "???[]"
            return self.format_type(t.typelem) + "[]"
        special = _FORMAT_TYPE_SPECIAL.get(t.oid)
        if special is not None:
            return special
        if t.oid == JSONOID and self.major >= 17:
            return "json"
        name = quote_identifier(t.typname, self.major)
        if not self._type_is_visible(t):
            name = quote_identifier(t.nspname or "???", self.major) + "." + name
        return name

    def _type_is_visible(self, t: TypeInfo) -> bool:
        """namespace.c TypeIsVisible over the snapshot's search_path ("$user" is not resolved)."""
        if t.nspname == "pg_catalog":
            return True
        path = [p for p in _search_path(self.settings.get("search_path", "")) if p != "$user"]
        if "pg_catalog" not in path:
            path.insert(0, "pg_catalog")
        if t.nspname not in path:
            return False
        for nsp in path:
            if nsp == t.nspname:
                return True
            if self._type_named(nsp, t.typname):
                return False
        return False

    def format_type(self, oid: int) -> str:
        text = self._formats.get(oid)
        if text is None:
            t = self.type(oid)
            text = self._formats[oid] = "???" if t is None else t.format_type
        return text

    @property
    def types(self) -> dict:
        """Every type of this point by OID (built on first use)."""
        if self._types_all is None:
            merged = dict(self.base.types)
            changed = {k for _c, k in self._linked("types", 0)} | set(self._types)
            for _cat, label_oid in self._linked("enumtypes", 0):
                v = self._get(EnumRelationId, label_oid)
                if v is not ABSENT:
                    changed.add(v[1]["enumtypid"])
            for oid in changed:
                t = self.type(oid)
                if t is None:
                    merged.pop(oid, None)
                else:
                    merged[oid] = t
            self._types_all = merged
        return self._types_all

    # relations --------------------------------------------------------------------------------------

    def relation(self, oid: int) -> Relation | None:
        rel = self._rels.get(oid, ABSENT)
        if rel is ABSENT:
            rel = self._rels[oid] = self._make_relation(oid)
        return rel

    def relation_by_filenode(self, spc: int, relfilenode: int) -> Relation | None:
        key = (spc, relfilenode)
        rel = self._by_node.get(key, ABSENT)
        if rel is ABSENT:
            rel = None
            candidates = {oid for _c, oid in self._linked("filenode", relfilenode)}
            b = self.base.relation_by_filenode(spc, relfilenode)
            if b is not None:
                candidates.add(b.oid)
            for oid in sorted(candidates):
                r = self.relation(oid)
                if r is not None and r.relfilenode == relfilenode and \
                        (r.reltablespace or self.database_tablespace) == spc:
                    rel = r
                    break
            self._by_node[key] = rel
        return rel

    @property
    def relations(self) -> dict:
        if self._relations_all is None:
            merged = dict(self.base.relations)
            keys = {k for (cat, k), _ in self.history.committed.rows.items() if cat == RelationRelationId}
            if self._count:
                keys |= {k for (cat, k), _ in self._txn.layer.rows.items() if cat == RelationRelationId}
            for oid in keys:
                r = self.relation(oid)
                if r is None:
                    merged.pop(oid, None)
                else:
                    merged[oid] = r
            self._relations_all = merged
        return self._relations_all

    def _make_relation(self, oid: int) -> Relation | None:
        base = self.base.relation(oid)
        v = self._get(RelationRelationId, oid)
        if v is ABSENT:
            return None if base is None else self._patch(base)
        if v[0]:
            return None
        row = v[1]
        relfilenode = row["relfilenode"]
        if not relfilenode and row["relkind"] in _RELKINDS_WITH_STORAGE:
            relfilenode = self._mapped_filenode(oid, base)
        relreplident = row["relreplident"]
        return Relation(
            oid=oid, relname=row["relname"], nspname=self.namespace_name(row["relnamespace"]) or "",
            relkind=row["relkind"], relpersistence=row["relpersistence"], relfilenode=relfilenode,
            reltablespace=row["reltablespace"], relreplident=relreplident, reltoastrelid=row["reltoastrelid"],
            relrewrite=row["relrewrite"] or 0, replica_identity_key=self._identity_key(oid, relreplident, base),
            relispartition=bool(row["relispartition"]), attributes=self._attributes(oid, base))

    def _mapped_filenode(self, oid: int, base: Relation | None) -> int:
        v = self._get(_RELMAP, oid)
        if v is not ABSENT:
            return v[1]["filenode"]
        return base.relfilenode if base is not None else 0

    def _patch(self, base: Relation) -> Relation:
        """A base-snapshot relation whose pg_class row the range did not change: its columns, key,
        schema name or mapped relfilenode may still have."""
        changes = {}
        attrs = self._attributes(base.oid, base)
        if attrs is not base.attributes:
            changes["attributes"] = attrs
        renamed = self._renamed_namespaces()
        if base.nspname in renamed and renamed[base.nspname] is not None:
            changes["nspname"] = renamed[base.nspname]
        key = self._identity_key(base.oid, base.relreplident, base)
        if key != base.replica_identity_key:
            changes["replica_identity_key"] = key
        if base.relkind in _RELKINDS_WITH_STORAGE:
            node = self._mapped_filenode(base.oid, base)
            if node != base.relfilenode:
                changes["relfilenode"] = node
        return replace(base, **changes) if changes else base

    def _attributes(self, oid: int, base: Relation | None) -> tuple:
        keys = self._linked("attrs", oid)
        if base is not None and not keys:
            return self._retype(base.attributes)
        atts = {a.attnum: a for a in self._retype(base.attributes)} if base is not None else {}
        for _cat, key in keys:
            v = self._get(AttributeRelationId, key)
            if v is ABSENT:
                continue
            deleted, row = v
            attnum = row["attnum"]
            if attnum <= 0:
                continue
            if deleted:
                atts.pop(attnum, None)
            else:
                atts[attnum] = self._attribute(row)
        return tuple(atts[n] for n in sorted(atts))

    def _retype(self, attrs: tuple) -> tuple:
        """Base columns whose type's format_type text changed here (renamed types or schemas)."""
        if not self._types_changed() and not self._renamed_namespaces():
            return attrs
        out = None
        for i, a in enumerate(attrs):
            if a.attisdropped:
                continue
            text = self.format_type(a.atttypid)
            if text != a.type_name:
                if out is None:
                    out = list(attrs)
                out[i] = replace(a, type_name=text)
        return attrs if out is None else tuple(out)

    def _attribute(self, row: dict) -> Attribute:
        dropped = bool(row["attisdropped"])
        missing = None
        if row["atthasmissing"] and not dropped:
            try:
                missing = self._missing_text(row)
            except CorruptRecordError as e:
                if self.history.warn is None:
                    raise
                self.history.warn(f"{e.reason}: rows written before the column was added show it as NULL")
        return Attribute(
            attnum=row["attnum"], attname=row["attname"], atttypid=row["atttypid"], atttypmod=row["atttypmod"],
            attlen=row["attlen"], attbyval=bool(row["attbyval"]), attalign=row["attalign"],
            attstorage=row["attstorage"], attisdropped=dropped, attnotnull=bool(row["attnotnull"]),
            atthasmissing=bool(row["atthasmissing"]), attmissingval=missing,
            attgenerated=row.get("attgenerated") or "",
            type_name="" if dropped else self.format_type(row["atttypid"]))

    def _missing_text(self, row: dict) -> str | None:
        """The output text of the one element of pg_attribute.attmissingval (an anyarray)."""
        raw = row.get("attmissingval")
        if raw is None or isinstance(raw, ToastPointer):
            return None
        from .types import TypeOutputError
        from .types.arrays import deconstruct

        ctx = self.output_context()
        try:
            elemtype, _dims, _lb, items = deconstruct(raw, ctx)
            if len(items) != 1 or items[0] is None:
                return None
            return ctx.output(elemtype, items[0])
        except (WALError, TypeOutputError, struct.error, ValueError) as e:
            raise CorruptRecordError(f"attmissingval of column {row['attname']} of relation {row['attrelid']}: "
                                     f"{getattr(e, 'reason', e)}") from None

    def _identity_key(self, oid: int, relreplident: str, base: Relation | None) -> tuple:
        """catalog_dsn's rule (relcache.c RelationGetIndexList): the key columns of the lowest-OID live,
        valid, unique, immediate, non-partial primary key (DEFAULT) or indisreplident index (INDEX)."""
        if relreplident == "d":
            flag = "indisprimary"
        elif relreplident == "i":
            flag = "indisreplident"
        else:
            return ()
        keys = self._linked("index", oid)
        if not keys and base is not None and base.relreplident == relreplident:
            return base.replica_identity_key
        rows = {}
        touched_old = []
        for _cat, indexrelid in keys:
            v = self._get(IndexRelationId, indexrelid)
            if v is ABSENT:
                continue
            if v[0] or v[1]["indrelid"] != oid:
                touched_old.append(v[1])
            else:
                rows[indexrelid] = v[1]

        def qualifies(r: dict) -> bool:
            return bool(r["indislive"] and r["indisvalid"] and r["indisunique"] and r["indimmediate"]
                        and r["indpred"] is None and r[flag])

        def key_of(r: dict) -> tuple:
            return tuple(r["indkey"][:r["indnkeyatts"]])

        found = sorted(i for i, r in rows.items() if qualifies(r))
        if found:
            return key_of(rows[found[0]])
        if base is not None and base.relreplident == relreplident and base.replica_identity_key:
            stale = any(key_of(r) == base.replica_identity_key for r in touched_old + list(rows.values()))
            if not stale:
                return base.replica_identity_key
        if base is not None:  # the snapshot's other indexes, as far as pages seen show them
            touched = set(rows) | {r["indexrelid"] for r in touched_old}
            seen = self.history.base_indexes(oid)
            for indexrelid in sorted(seen):
                if indexrelid not in touched and qualifies(seen[indexrelid]):
                    return key_of(seen[indexrelid])
        return ()
