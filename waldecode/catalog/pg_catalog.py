"""PostgreSQL's system catalogs as waldecode reads them: OIDs, tracked columns, one row decoder.

Owns the constants of src/include/catalog/*.h the catalog readers share, which catalogs (and
which of their columns) the catalog history follows through the WAL and a snapshot carries
the pages of, and ``CatalogLayout``: one catalog's columns read out of an on-page heap tuple,
each value converted by its type OID in the database's encoding.  The one decoder of catalog
rows for the data-directory reader, the WAL history and the live server's page check; hands
rows on as dicts or tuples of Python values.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.heaptuple import HEAP_NATTS_MASK, SizeofHeapTupleHeader, deform_tuple
from ..heap.varlena import ToastPointer
from ..pg.encoding import python_codec
from ..pg.pg_type import (BOOLOID, BYTEAOID, CHAROID, FLOAT4OID, INT2OID, INT2VECTOROID,  # noqa: F401 (the
                          INT4OID, NAMEOID, OIDOID, OIDVECTOROID, REGPROCOID, TEXTARRAYOID,  # types of the
                          TEXTOID, XIDOID)  # catalog columns read here)
from ..types.arrays import deconstruct

# src/include/catalog/pg_*.h: the catalogs' own OIDs (identical 13-18)
TypeRelationId = 1247
AttributeRelationId = 1249
ProcedureRelationId = 1255
RelationRelationId = 1259
AuthIdRelationId = 1260
DatabaseRelationId = 1262
ReplicationOriginRelationId = 6000  # shared
IndexRelationId = 2610
NamespaceRelationId = 2615
DbRoleSettingRelationId = 2964
EnumRelationId = 3501
RangeRelationId = 3541
InheritsRelationId = 2611
PublicationRelationId = 6104
PublicationRelRelationId = 6106
PublicationNamespaceRelationId = 6237  # 15+

#: the catalogs the catalog history follows through the WAL, and whose pages a snapshot carries
TRACKED_CATALOGS = {
    RelationRelationId: "pg_class", AttributeRelationId: "pg_attribute", TypeRelationId: "pg_type",
    NamespaceRelationId: "pg_namespace", EnumRelationId: "pg_enum", IndexRelationId: "pg_index",
    RangeRelationId: "pg_range", ProcedureRelationId: "pg_proc", InheritsRelationId: "pg_inherits",
    PublicationRelationId: "pg_publication", PublicationRelRelationId: "pg_publication_rel",
    PublicationNamespaceRelationId: "pg_publication_namespace",
}
#: the catalogs pgoutput decides by (publications, and pg_inherits for partitions' ancestors)
PUBLICATION_CATALOGS = frozenset((InheritsRelationId, PublicationRelationId, PublicationRelRelationId,
                                  PublicationNamespaceRelationId))
#: tracked catalogs without which the history still works (pg_proc: output functions of new base types;
#: the publication catalogs: only pgoutput needs them, and pg_publication_namespace is 15+)
OPTIONAL_CATALOGS = frozenset((ProcedureRelationId,)) | PUBLICATION_CATALOGS

#: the columns the history reads of each tracked catalog (a column a major version lacks is skipped:
#: typsubscript and rngmultitypid are 14+)
DECODED_COLUMNS = {
    RelationRelationId: ("oid", "relname", "relnamespace", "reltype", "relfilenode", "reltablespace",
                         "reltoastrelid", "relpersistence", "relkind", "relreplident", "relispartition",
                         "relrewrite"),
    AttributeRelationId: ("attrelid", "attname", "atttypid", "attlen", "attnum", "atttypmod", "attbyval",
                          "attalign", "attstorage", "attnotnull", "atthasdef", "atthasmissing", "attidentity",
                          "attgenerated", "attisdropped", "attmissingval"),
    TypeRelationId: ("oid", "typname", "typnamespace", "typlen", "typbyval", "typtype", "typcategory",
                     "typdelim", "typrelid", "typsubscript", "typelem", "typarray", "typoutput", "typalign",
                     "typstorage", "typbasetype", "typtypmod"),
    NamespaceRelationId: ("oid", "nspname"),
    EnumRelationId: ("oid", "enumtypid", "enumsortorder", "enumlabel"),
    IndexRelationId: ("indexrelid", "indrelid", "indnkeyatts", "indisunique", "indisprimary", "indimmediate",
                      "indisvalid", "indislive", "indisreplident", "indkey", "indpred"),
    RangeRelationId: ("rngtypid", "rngsubtype", "rngmultitypid"),
    ProcedureRelationId: ("oid", "proname", "pronamespace"),
    InheritsRelationId: ("inhrelid", "inhparent", "inhseqno"),
    PublicationRelationId: ("oid", "pubname", "puballtables", "pubinsert", "pubupdate", "pubdelete", "pubtruncate",
                            "pubviaroot", "pubgencols"),
    PublicationRelRelationId: ("oid", "prpubid", "prrelid", "prqual", "prattrs"),
    PublicationNamespaceRelationId: ("oid", "pnpubid", "pnnspid"),
}

# src/include/access/transam.h: FirstNormalObjectId; catalogs are below FirstUnpinnedObjectId (15+)
# / FirstBootstrapObjectId (13, 14), both 12000 (IsCatalogRelationOid)
FirstCatalogUserObjectId = 12000

# src/include/catalog/pg_class.h: relkind, relpersistence, relreplident
RELKIND_RELATION = "r"
RELKIND_INDEX = "i"
RELKIND_SEQUENCE = "S"
RELKIND_TOASTVALUE = "t"
RELKIND_VIEW = "v"
RELKIND_MATVIEW = "m"
RELKIND_COMPOSITE_TYPE = "c"
RELKIND_FOREIGN_TABLE = "f"
RELKIND_PARTITIONED_TABLE = "p"
#: RELKIND_HAS_STORAGE: only these have a relfilenode (or a mapped one)
RELKINDS_WITH_STORAGE = frozenset("rtmSi")
RELPERSISTENCE_PERMANENT = "p"
RELPERSISTENCE_TEMP = "t"
REPLICA_IDENTITY_DEFAULT = "d"
REPLICA_IDENTITY_NOTHING = "n"
REPLICA_IDENTITY_FULL = "f"
REPLICA_IDENTITY_INDEX = "i"

# src/include/catalog/pg_namespace.dat
PG_CATALOG_NAMESPACE = 11
PG_TOAST_NAMESPACE = 99
PG_PUBLIC_NAMESPACE = 2200
FIXED_NAMESPACES = {PG_CATALOG_NAMESPACE: "pg_catalog", PG_TOAST_NAMESPACE: "pg_toast"}


_u32 = struct.Struct("<I")
_i32 = struct.Struct("<i")
_i16 = struct.Struct("<h")
_f32 = struct.Struct("<f")


class _Shape:
    """What array parsing needs of an element type (pg_type typname, typlen, typalign, typbyval)."""

    __slots__ = ("typname", "typlen", "typalign", "typbyval")

    def __init__(self, typname: str, typlen: int, typalign: str, typbyval: bool):
        self.typname, self.typlen, self.typalign, self.typbyval = typname, typlen, typalign, typbyval


class _ElementTypes:
    """The ``ctx.type(oid)`` that ``types.arrays.deconstruct`` asks about the elements of the
    catalog arrays read here (int2vector, oidvector, text[])."""

    SHAPES = {INT2OID: _Shape("int2", 2, "s", True), INT4OID: _Shape("int4", 4, "i", True),
              OIDOID: _Shape("oid", 4, "i", True), TEXTOID: _Shape("text", -1, "i", False)}

    def type(self, oid: int) -> _Shape:
        shape = self.SHAPES.get(oid)
        if shape is None:
            raise CorruptRecordError(f"a catalog array has element type {oid}, not int2, int4, oid or text")
        return shape


_ELEMENTS = _ElementTypes()


def value_converter(typid: int, codec: str = "utf-8"):
    """The function from a deformed catalog column of type ``typid`` (bytes as stored, a varlena
    payload, None for NULL) to its Python value: integers, booleans, "char" and names and text
    as ``str`` (undecodable bytes kept with surrogateescape), int2vector, oidvector and text[]
    as lists.  Other types stay bytes (anyarray, pg_node_tree: payload, or a ``ToastPointer``)."""
    if typid in (OIDOID, REGPROCOID, XIDOID):
        return lambda v: None if v is None else _u32.unpack(v)[0]
    if typid == INT4OID:
        return lambda v: None if v is None else _i32.unpack(v)[0]
    if typid == INT2OID:
        return lambda v: None if v is None else _i16.unpack(v)[0]
    if typid == BOOLOID:
        return lambda v: None if v is None else v != b"\x00"
    if typid == CHAROID:
        return lambda v: None if v is None else ("" if v == b"\x00" else bytes(v).decode("latin-1"))
    if typid == NAMEOID:
        return lambda v: None if v is None else bytes(v).split(b"\x00", 1)[0].decode(codec, "surrogateescape")
    if typid == FLOAT4OID:
        return lambda v: None if v is None else _f32.unpack(v)[0]
    if typid == TEXTOID:
        return lambda v: v if v is None or v.__class__ is ToastPointer else bytes(v).decode(codec, "surrogateescape")
    if typid in (INT2VECTOROID, OIDVECTOROID, TEXTARRAYOID):
        if typid == TEXTARRAYOID:
            def text_array(v):
                if v is None or v.__class__ is ToastPointer:
                    return v
                return [None if e is None else e.decode(codec, "surrogateescape") for e in deconstruct(v, _ELEMENTS)[3]]
            return text_array
        fmt = _i16 if typid == INT2VECTOROID else _u32

        def vector(v):
            if v is None or v.__class__ is ToastPointer:
                return v
            return [fmt.unpack(e)[0] for e in deconstruct(v, _ELEMENTS)[3]]
        return vector
    return lambda v: v


class CatalogLayout:
    """One catalog's columns (``rel.attributes``: its pg_attribute rows in attnum order) and how to
    read the ``columns`` named.  A column the catalog lacks is skipped (a major version without it),
    or with ``required`` a ``KeyError`` naming it."""

    def __init__(self, rel, columns: tuple, encoding: str | None, required: bool = False):
        self.name = rel.relname
        atts = rel.attributes
        index = {a.attname: i for i, a in enumerate(atts)}
        codec = python_codec(encoding)
        self.cols = []
        for name in columns:
            i = index.get(name)
            if i is None:
                if required:
                    raise KeyError(name)
                continue
            self.cols.append((name, i, value_converter(atts[i].atttypid, codec)))
        width = max(i for _n, i, _c in self.cols) + 1
        self.attrs = atts[:width]

    def deform(self, buf, infomask2: int, infomask: int, t_hoff: int, start: int = 0, end: int | None = None) -> list:
        """The raw values of the columns up to the last one read, of the tuple whose header starts at
        ``buf[start]`` (and that ends at ``end``)."""
        natts = min(infomask2 & HEAP_NATTS_MASK, len(self.attrs))
        return deform_tuple(buf, (infomask2 & ~HEAP_NATTS_MASK) | natts, infomask, t_hoff, self.attrs,
                            start=start + SizeofHeapTupleHeader, end=end)

    def decode(self, tup) -> dict:
        """The columns of a whole on-page heap tuple (23-byte header included), by name."""
        infomask2, infomask = struct.unpack_from("<HH", tup, 18)
        values = self.deform(tup, infomask2, infomask, tup[22])
        return {name: conv(values[i]) for name, i, conv in self.cols}

    def row(self, values: list) -> tuple:
        """The columns read, in ``columns`` order, from what ``deform`` returned."""
        return tuple(conv(values[i]) for _name, i, conv in self.cols)


#: the columns of the publication catalogs a major version has (prqual, prattrs and
#: pg_publication_namespace: 15+; pubgencols: 18+)
def publication_columns(cat: int, major: int) -> tuple:
    cols = DECODED_COLUMNS[cat]
    if major < 18:
        cols = tuple(c for c in cols if c != "pubgencols")
    if major < 15:
        cols = tuple(c for c in cols if c not in ("prqual", "prattrs"))
    return cols
