"""Catalog snapshot: what decoding needs to know about relations and types.

Owns the data model of the versioned JSON snapshot (``waldecode catalog -o``):
relations by OID and by (tablespace, relfilenode), their columns, and the types
output needs (enum labels, composite attributes, array elements, domain bases,
range subtypes), plus the server settings output functions depend on.  Built by
``catalog_dsn`` from a live server; handed to the decoder and the type output.

JSON layout (``format`` = "waldecode-catalog", ``version`` = 1): top-level keys
``server_version``, ``server_version_num``, ``major``, ``lsn`` ("X/X", taken at),
``database``, ``database_oid``, ``database_tablespace``, ``namespaces`` (schema OIDs and names,
for DDL inside the decoded range), ``settings`` (TimeZone,
DateStyle, IntervalStyle, extra_float_digits, bytea_output, lc_monetary,
search_path), ``relations`` (list of Relation dicts, each with ``attributes``),
``types`` (list of TypeInfo dicts), mirroring the dataclasses below field for
field; field names are PostgreSQL's column names.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from .errors import CatalogError

FORMAT_NAME = "waldecode-catalog"
FORMAT_VERSION = 1

# src/include/catalog/pg_class.h: relkind, relpersistence, relreplident
RELKIND_RELATION = "r"
RELKIND_TOASTVALUE = "t"
RELKIND_SEQUENCE = "S"
RELKIND_MATVIEW = "m"
RELKIND_COMPOSITE_TYPE = "c"
RELKIND_FOREIGN_TABLE = "f"
RELKIND_PARTITIONED_TABLE = "p"
RELPERSISTENCE_PERMANENT = "p"
REPLICA_IDENTITY_DEFAULT = "d"
REPLICA_IDENTITY_NOTHING = "n"
REPLICA_IDENTITY_FULL = "f"
REPLICA_IDENTITY_INDEX = "i"

# src/include/access/transam.h: FirstNormalObjectId; catalogs are below FirstUnpinnedObjectId (15+)
# / FirstBootstrapObjectId (13, 14), both 12000 (IsCatalogRelationOid)
FirstCatalogUserObjectId = 12000

SETTING_NAMES = ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output",
                 "lc_monetary", "search_path")
DEFAULT_SETTINGS = {"TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
                    "extra_float_digits": "1", "bytea_output": "hex", "lc_monetary": "C",
                    "search_path": '"$user", public'}


@dataclass(frozen=True)
class Attribute:
    """pg_attribute row of a user column (attnum > 0), dropped ones included."""

    attnum: int
    attname: str
    atttypid: int  # 0 for dropped columns
    atttypmod: int
    attlen: int
    attbyval: bool
    attalign: str  # 'c' 's' 'i' 'd'
    attstorage: str
    attisdropped: bool
    attnotnull: bool = False
    atthasmissing: bool = False
    attmissingval: str | None = None  # output text of the missing value (element of pg_attribute.attmissingval)
    attgenerated: str = ""
    type_name: str = ""  # format_type(atttypid, NULL), as test_decoding prints it


@dataclass(frozen=True)
class Relation:
    oid: int
    relname: str
    nspname: str
    relkind: str
    relpersistence: str
    relfilenode: int  # pg_relation_filenode(): mapped catalogs resolved
    reltablespace: int  # 0 = the database's default tablespace
    relreplident: str
    reltoastrelid: int = 0
    relrewrite: int = 0
    replica_identity_key: tuple = ()  # attnums of the identity index (DEFAULT: primary key; INDEX: that index)
    relispartition: bool = False
    attributes: tuple = ()  # tuple[Attribute, ...] in attnum order

    @property
    def is_catalog(self) -> bool:
        return self.oid < FirstCatalogUserObjectId

    @property
    def is_toast(self) -> bool:
        return self.relkind == RELKIND_TOASTVALUE or self.nspname == "pg_toast"


@dataclass(frozen=True)
class TypeInfo:
    """pg_type row and what output needs about it."""

    oid: int
    typname: str
    nspname: str
    typlen: int
    typbyval: bool
    typalign: str
    typstorage: str
    typtype: str  # b base, c composite, d domain, e enum, p pseudo, r range, m multirange
    typcategory: str
    typdelim: str
    typelem: int
    typarray: int
    typbasetype: int
    typtypmod: int
    typrelid: int
    typoutput: str  # output function name (regproc), e.g. 'int4out', 'array_out', 'enum_out'
    format_type: str  # format_type(oid, NULL)
    rngsubtype: int = 0
    enum_labels: dict = field(default_factory=dict)  # enum label OID -> label


@dataclass
class Catalog:
    server_version: str
    server_version_num: int
    major: int
    lsn: int
    database: str
    database_oid: int
    database_tablespace: int
    settings: dict
    relations: dict  # oid -> Relation
    types: dict  # oid -> TypeInfo
    namespaces: dict = field(default_factory=dict)  # pg_namespace oid -> nspname (empty in older snapshots)
    _by_filenode: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._by_filenode = {}
        for rel in self.relations.values():
            if rel.relfilenode:
                spc = rel.reltablespace or self.database_tablespace
                self._by_filenode[(spc, rel.relfilenode)] = rel

    def relation_by_filenode(self, spc: int, relfilenode: int) -> Relation | None:
        """RelidByRelfilenumber: the relation stored in (tablespace, relfilenode)."""
        return self._by_filenode.get((spc, relfilenode))

    def relation(self, oid: int) -> Relation | None:
        return self.relations.get(oid)

    def type(self, oid: int) -> TypeInfo | None:
        return self.types.get(oid)

    # -- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> str:
        from .errors import format_lsn

        doc = {
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "server_version": self.server_version, "server_version_num": self.server_version_num,
            "major": self.major, "lsn": format_lsn(self.lsn), "database": self.database,
            "database_oid": self.database_oid, "database_tablespace": self.database_tablespace,
            "settings": dict(self.settings),
            "relations": [_rel_to_dict(r) for r in sorted(self.relations.values(), key=lambda r: r.oid)],
            "types": [_type_to_dict(t) for t in sorted(self.types.values(), key=lambda t: t.oid)],
            "namespaces": [{"oid": oid, "nspname": name} for oid, name in sorted(self.namespaces.items())],
        }
        return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "catalog") -> Catalog:
        from .xlogreader import parse_lsn

        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise CatalogError(f"{source}: not a JSON document: {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise CatalogError(f"{source}: not a waldecode catalog snapshot (no \"format\": \"{FORMAT_NAME}\")")
        if doc.get("version") != FORMAT_VERSION:
            raise CatalogError(f"{source}: catalog snapshot version {doc.get('version')!r} is not supported "
                               f"(this waldecode reads version {FORMAT_VERSION})")
        try:
            relations = {}
            for r in doc["relations"]:
                rel = _rel_from_dict(r)
                relations[rel.oid] = rel
            types = {}
            for t in doc["types"]:
                typ = _type_from_dict(t)
                types[typ.oid] = typ
            settings = dict(DEFAULT_SETTINGS)
            settings.update(doc.get("settings", {}))
            return cls(server_version=doc["server_version"], server_version_num=int(doc["server_version_num"]),
                       major=int(doc["major"]), lsn=parse_lsn(doc["lsn"]), database=doc["database"],
                       database_oid=int(doc["database_oid"]), database_tablespace=int(doc["database_tablespace"]),
                       settings=settings, relations=relations, types=types,
                       namespaces={int(n["oid"]): n["nspname"] for n in doc.get("namespaces", ())})
        except (KeyError, TypeError, ValueError) as e:
            raise CatalogError(f"{source}: malformed catalog snapshot: {type(e).__name__}: {e}") from None

    @classmethod
    def load(cls, path) -> Catalog:
        try:
            if str(path).endswith(".gz"):
                import gzip

                with gzip.open(path, "rt", encoding="utf-8") as f:
                    text = f.read()
            else:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, EOFError) as e:
            raise CatalogError(f"cannot read catalog snapshot {path}: {getattr(e, 'strerror', None) or e}") from None
        return cls.from_json(text, str(path))


def write_snapshot_file(catalog: Catalog, output_path: str | None, prog: str, where: str) -> int:
    """Write a snapshot's JSON to ``output_path`` (None or ``-``: stdout) for ``waldecode catalog``.

    Returns the exit code; a WAL level below logical at ``where`` is warned about, not refused.
    """
    import sys

    text = catalog.to_json()
    if output_path is None or output_path == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(output_path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"{prog}: error: cannot write catalog snapshot {output_path}: {e.strerror}", file=sys.stderr)
            return 1
    wal_level = catalog.settings.get("wal_level")
    if wal_level != "logical":
        print(f"{prog}: warning: wal_level is {wal_level!r} on {where}, not 'logical': "
              "its WAL does not carry what logical decoding needs", file=sys.stderr)
    return 0


def _rel_to_dict(r: Relation) -> dict:
    d = asdict(r)
    d["replica_identity_key"] = list(r.replica_identity_key)
    d["attributes"] = [asdict(a) for a in r.attributes]
    return d


def _rel_from_dict(d: dict) -> Relation:
    names = {f.name for f in fields(Relation)}
    kw = {k: v for k, v in d.items() if k in names}
    kw["replica_identity_key"] = tuple(d.get("replica_identity_key", ()))
    anames = {f.name for f in fields(Attribute)}
    kw["attributes"] = tuple(Attribute(**{k: v for k, v in a.items() if k in anames}) for a in d["attributes"])
    return Relation(**kw)


def _type_to_dict(t: TypeInfo) -> dict:
    d = asdict(t)
    d["enum_labels"] = {str(k): v for k, v in t.enum_labels.items()}
    return d


def _type_from_dict(d: dict) -> TypeInfo:
    names = {f.name for f in fields(TypeInfo)}
    kw = {k: v for k, v in d.items() if k in names}
    kw["enum_labels"] = {int(k): v for k, v in d.get("enum_labels", {}).items()}
    return TypeInfo(**kw)
