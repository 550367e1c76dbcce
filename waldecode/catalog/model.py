"""The catalog snapshot's data model and its JSON file (``waldecode catalog -o``).

Owns ``Catalog`` (relations by OID and by (tablespace, relfilenode), the types output needs,
the settings output depends on, schema names, and the tracked catalogs' pages) with its
``Relation``, ``Attribute``, ``TypeInfo`` and ``CatalogPages``, and the versioned JSON
format below.  Built by ``catalog.dsn`` (a live server), ``catalog.datadir`` (a data
directory) or ``CatalogHistory.materialize`` (a point of the WAL); handed to the decoder,
the catalog history and the type output.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from dataclasses import asdict, dataclass, field, fields, replace

from ..errors import CatalogError
from ..pg.lsn import format_lsn, parse_lsn
from ..pg.settings import DEFAULT_SETTINGS, SETTING_NAMES  # noqa: F401 (the catalog's names for them)
from ..heap.varlena import ToastPointer
from .pg_catalog import FirstCatalogUserObjectId, PublicationRelationId, PublicationRelRelationId, RELKIND_TOASTVALUE

# JSON layout (``format`` = "waldecode-catalog", ``version`` = 1): top-level keys
# ``server_version``, ``server_version_num``, ``major``, ``lsn`` ("X/X", taken at),
# ``database``, ``database_oid``, ``database_tablespace``, ``namespaces`` (schema OIDs and names,
# for DDL inside the decoded range), ``settings`` (TimeZone,
# DateStyle, IntervalStyle, extra_float_digits, bytea_output, lc_monetary,
# search_path), ``relations`` (list of Relation dicts, each with ``attributes``),
# ``types`` (list of TypeInfo dicts), mirroring the dataclasses below field for
# field; field names are PostgreSQL's column names.
#
# ``publications``, ``publication_rels``, ``publication_namespaces``, ``inherits`` (optional, still
# version 1: a snapshot without ``publications`` predates them and cannot serve pgoutput): the rows of
# pg_publication, pg_publication_rel (``prqual`` as its pg_node_tree text, ``prattrs`` a list of
# attnums or null), pg_publication_namespace and pg_inherits, column for column; and
# ``replication_origins`` (optional): the shared pg_replication_origin's rows, ``{"roident", "roname"}``
# (the names pgoutput's Origin message carries).
#
# ``system_identifier`` (optional, still version 1): the cluster's, as pg_control holds it (a decimal
# string: a uint64); a snapshot without it is not checked against the WAL's.
#
# ``catalog_pages`` (optional, still format version 1: older snapshots lack it and
# are read as before, older readers ignore it) holds what the catalog history
# (``catalog.history``) needs to redo catalog records on pages the WAL read shows no
# full-page image of.  For each catalog it tracks (pg_class, pg_attribute, pg_type,
# pg_namespace, pg_enum, pg_index, pg_range, pg_proc): ``{"oid", "relfilenode",
# "source", "blocks": [{"blkno", "items": [[offnum, length], ...], "data"}, ...]}``,
# per block of the relation's main fork the heap tuples at ``lsn`` by line pointer
# (ctid = (blkno, offnum); those the snapshot sees, and in a history's also dead
# versions a full-page image showed), each the whole on-page tuple exactly as stored
# (HeapTupleHeaderData, null bitmap, data), from which an update logged as a
# prefix/suffix difference is rebuilt and a deletion is known by its row.  ``data``
# is the block's tuples one after the other in ``items`` order, zlib-compressed, in
# base64 (about an eighth of their size).  A block listed is known as far as its
# live tuples go, a block not listed is unknown; ``"partial": true`` marks a block of
# which only the tuples some WAL wrote are known (a history's materialized state).
# ``source`` says where the tuples came from: ``get_raw_page`` or
# ``pg_read_binary_file`` (a live server), ``datadir``, ``history``
# (``CatalogHistory.materialize``).  ``catalog_pages_note`` (optional) says why pages
# are missing (not permitted to read them, pages left out).
FORMAT_NAME = "waldecode-catalog"
FORMAT_VERSION = 1



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
    attidentity: str = ""  # 'a' GENERATED ALWAYS AS IDENTITY, 'd' BY DEFAULT, '' not an identity column
    atthasdef: bool = False
    # The column default's text, pg_get_expr(adbin, adrelid), per search_path it was printed under (the
    # text qualifies what that path does not show): ((search_path, text), ...).  Empty when not known
    # (a snapshot without it, or a default set inside the decoded range: the WAL carries only adbin).
    attdefault: tuple = ()


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
    primary_key: tuple = ()  # attnums of the primary key (relcache.c rd_pkindex), whatever the identity

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


@dataclass(frozen=True)
class Publication:
    """pg_publication row (``pubgencols``: 18+, '' before)."""

    oid: int
    pubname: str
    puballtables: bool
    pubinsert: bool
    pubupdate: bool
    pubdelete: bool
    pubtruncate: bool
    pubviaroot: bool = False
    pubgencols: str = ""


@dataclass(frozen=True)
class PublicationRel:
    """pg_publication_rel row: ``prqual`` the row filter as its pg_node_tree text, ``prattrs`` the
    column list's attnums (None: no list); both 15+."""

    oid: int
    prpubid: int
    prrelid: int
    prqual: str | None = None
    prattrs: tuple | None = None


@dataclass(frozen=True)
class PublicationNamespace:
    """pg_publication_namespace row (15+: FOR TABLES IN SCHEMA)."""

    oid: int
    pnpubid: int
    pnnspid: int


#: what a row filter too long to be stored inline (TOASTed pg_node_tree) reads as: never "no filter"
TOASTED_ROW_FILTER = "(TOASTed row filter)"


def publication_object(cat: int, row: dict):
    """The object of a decoded pg_publication, pg_publication_rel or pg_publication_namespace
    row (a dict of ``pg_catalog.DECODED_COLUMNS``, as ``CatalogLayout.decode`` gives it)."""
    if cat == PublicationRelationId:
        return Publication(row["oid"], row["pubname"], bool(row["puballtables"]), bool(row["pubinsert"]),
                           bool(row["pubupdate"]), bool(row["pubdelete"]), bool(row["pubtruncate"]),
                           bool(row.get("pubviaroot")), row.get("pubgencols") or "")
    if cat == PublicationRelRelationId:
        qual = row.get("prqual")
        if qual is not None:
            qual = (TOASTED_ROW_FILTER if qual.__class__ is ToastPointer
                    else bytes(qual).decode("utf-8", "surrogateescape"))
        attrs = row.get("prattrs")
        return PublicationRel(row["oid"], row["prpubid"], row["prrelid"], qual,
                              None if attrs is None or attrs.__class__ is ToastPointer else tuple(attrs))
    return PublicationNamespace(row["oid"], row["pnpubid"], row["pnnspid"])


class CatalogPages:
    """One catalog's heap pages as a snapshot knew them (``catalog_pages`` in the JSON).

    ``blocks``: block number -> the block's tuples, ``[(offnum, tuple bytes), ...]``, or as the JSON
    packs them (``PackedBlock``: unpacked when a block is needed); ``partial``: the blocks of which
    only some tuples are known.
    """

    __slots__ = ("oid", "relfilenode", "source", "blocks", "partial")

    def __init__(self, oid: int, relfilenode: int, source: str, blocks: dict, partial=frozenset()):
        self.oid = oid
        self.relfilenode = relfilenode
        self.source = source
        self.blocks = blocks
        self.partial = frozenset(partial)

    def __repr__(self) -> str:
        n = sum(len(b.items if isinstance(b, PackedBlock) else b) for b in self.blocks.values())
        return (f"<CatalogPages of {self.oid} in {self.relfilenode} from {self.source}: {len(self.blocks)} blocks, "
                f"{n} tuples>")

    def __eq__(self, other) -> bool:
        if not isinstance(other, CatalogPages):
            return NotImplemented
        return ((self.oid, self.relfilenode, self.source, self.partial, self.blocks.keys())
                == (other.oid, other.relfilenode, other.source, other.partial, other.blocks.keys())
                and all(self.tuples(b) == other.tuples(b) for b in self.blocks))

    __hash__ = None

    def tuples(self, blkno: int) -> dict[int, bytes] | None:
        """The tuples of block ``blkno`` by offset number; None for a block not known.  Raises
        ``CatalogError`` when a packed block does not unpack."""
        block = self.blocks.get(blkno)
        if block is None:
            return None
        if isinstance(block, PackedBlock):
            return block.unpack(self.oid, blkno)
        return dict(block)

    def to_dict(self) -> dict:
        blocks = []
        for blkno in sorted(self.blocks):
            block = self.blocks[blkno]
            if not isinstance(block, PackedBlock):
                block = PackedBlock.pack(block)
            d = {"blkno": blkno}
            if blkno in self.partial:
                d["partial"] = True
            d["items"] = block.items
            d["data"] = block.data
            blocks.append(d)
        return {"oid": self.oid, "relfilenode": self.relfilenode, "source": self.source, "blocks": blocks}

    @classmethod
    def from_dict(cls, d: dict) -> CatalogPages:
        blocks = {}
        partial = set()
        for b in d["blocks"]:
            blkno = int(b["blkno"])
            blocks[blkno] = PackedBlock([[int(off), int(n)] for off, n in b["items"]], str(b["data"]))
            if b.get("partial"):
                partial.add(blkno)
        return cls(int(d["oid"]), int(d["relfilenode"]), str(d.get("source", "")), blocks, partial)


class PackedBlock:
    """A block's tuples as the JSON holds them: ``items`` ``[[offnum, length], ...]`` and ``data``,
    the tuples one after the other, zlib-compressed, in base64."""

    __slots__ = ("items", "data")

    def __init__(self, items: list, data: str):
        self.items = items
        self.data = data

    @classmethod
    def pack(cls, tuples) -> PackedBlock:
        tuples = sorted(tuples, key=lambda t: t[0])
        raw = b"".join(bytes(t) for _off, t in tuples)
        return cls([[off, len(t)] for off, t in tuples], base64.b64encode(zlib.compress(raw, 6)).decode("ascii"))

    def unpack(self, oid: int, blkno: int) -> dict[int, bytes]:
        try:
            raw = zlib.decompress(base64.b64decode(self.data, validate=True))
        except (ValueError, zlib.error) as e:
            raise CatalogError(f"catalog snapshot: block {blkno} of catalog {oid} does not unpack: {e}") from None
        out = {}
        pos = 0
        for off, n in self.items:
            out[off] = raw[pos:pos + n]
            pos += n
        if pos != len(raw):
            raise CatalogError(f"catalog snapshot: block {blkno} of catalog {oid} holds {len(raw)} bytes, its items "
                               f"say {pos}")
        return out


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
    catalog_pages: dict = field(default_factory=dict)  # catalog OID -> CatalogPages (empty in older snapshots)
    catalog_pages_note: str = ""  # why catalog pages are missing, if some are
    # pg_publication, pg_publication_rel, pg_publication_namespace rows by OID; None: a snapshot that
    # predates them (cannot serve pgoutput)
    publications: dict | None = None
    publication_rels: dict = field(default_factory=dict)
    publication_namespaces: dict = field(default_factory=dict)
    inherits: dict = field(default_factory=dict)  # pg_inherits: inhrelid -> parents in inhseqno order
    # pg_replication_origin (shared): roident -> roname; None: not recorded
    replication_origins: dict | None = None
    # pg_control's system_identifier of the cluster the snapshot is of; None: not recorded (older snapshots)
    system_identifier: int | None = None
    _by_filenode: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        # Not part of the snapshot (no field, not in the JSON): the file it was loaded from (for messages),
        # and the earliest reading start for which the WAL was found to hold no catalog change before
        # ``lsn`` (``catalog.choose.check_snapshot``)
        self.source: str = ""
        self.valid_from: int | None = None
        self._by_filenode = {}
        for rel in self.relations.values():
            if rel.relfilenode:
                spc = rel.reltablespace or self.database_tablespace
                self._by_filenode[(spc, rel.relfilenode)] = rel

    def with_settings(self, overrides: dict) -> Catalog:
        """This snapshot with some settings overridden (``--set``): a new view, the snapshot itself as it was."""
        if not overrides:
            return self
        view = replace(self, settings={**self.settings, **overrides})
        view.source, view.valid_from = self.source, self.valid_from
        return view

    def relation_by_filenode(self, spc: int, relfilenode: int) -> Relation | None:
        """RelidByRelfilenumber: the relation stored in (tablespace, relfilenode)."""
        return self._by_filenode.get((spc, relfilenode))

    def relation(self, oid: int) -> Relation | None:
        return self.relations.get(oid)

    def type(self, oid: int) -> TypeInfo | None:
        return self.types.get(oid)

    def namespace_name(self, nspoid: int) -> str | None:
        return self.namespaces.get(nspoid)

    #: (catalog-changing commits, own catalog changes) this catalog stands after: the snapshot, (0, 0)
    position = (0, 0)

    # -- JSON ---------------------------------------------------------------------------------

    def to_dict(self, pages: bool = True) -> dict:
        """The JSON document as a dict (``catalog_pages`` left out unless ``pages``)."""
        doc = {
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "server_version": self.server_version, "server_version_num": self.server_version_num,
            "major": self.major, "lsn": format_lsn(self.lsn),
            **({"system_identifier": str(self.system_identifier)} if self.system_identifier is not None else {}),
            "database": self.database,
            "database_oid": self.database_oid, "database_tablespace": self.database_tablespace,
            "settings": dict(self.settings),
            "relations": [_rel_to_dict(r) for r in sorted(self.relations.values(), key=lambda r: r.oid)],
            "types": [_type_to_dict(t) for t in sorted(self.types.values(), key=lambda t: t.oid)],
            "namespaces": [{"oid": oid, "nspname": name} for oid, name in sorted(self.namespaces.items())],
        }
        if self.publications is not None:
            doc["publications"] = [asdict(p) for _o, p in sorted(self.publications.items())]
            doc["publication_rels"] = [_pubrel_to_dict(p) for _o, p in sorted(self.publication_rels.items())]
            doc["publication_namespaces"] = [asdict(p) for _o, p in sorted(self.publication_namespaces.items())]
            doc["inherits"] = [{"inhrelid": rel, "inhparent": parent, "inhseqno": i + 1}
                               for rel, parents in sorted(self.inherits.items()) for i, parent in enumerate(parents)]
        if self.replication_origins is not None:
            doc["replication_origins"] = [{"roident": i, "roname": n} for i, n in sorted(self.replication_origins.items())]
        if self.catalog_pages_note:
            doc["catalog_pages_note"] = self.catalog_pages_note
        if pages and self.catalog_pages:
            doc["catalog_pages"] = [self.catalog_pages[oid].to_dict() for oid in sorted(self.catalog_pages)]
        return doc

    def to_json(self) -> str:
        doc = self.to_dict(pages=False)
        text = json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False)
        if self.catalog_pages:
            # one line per block: the pages are data, not something to read line by line
            parts = []
            for oid in sorted(self.catalog_pages):
                d = self.catalog_pages[oid].to_dict()
                blocks = ",\n   ".join(json.dumps(b, separators=(",", ":")) for b in d.pop("blocks"))
                parts.append(json.dumps(d)[:-1] + ', "blocks": [\n   ' + blocks + "]}")
            text = text[:-2] + ',\n "catalog_pages": [\n  ' + ",\n  ".join(parts) + "\n ]\n}"
        return text + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "catalog") -> Catalog:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise CatalogError(f"{source}: not a JSON document: {e}") from None
        return cls.from_dict(doc, source)

    @classmethod
    def from_dict(cls, doc, source: str = "catalog") -> Catalog:
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
            pubs = None
            if "publications" in doc:
                pubs = {int(p["oid"]): _from_fields(Publication, p) for p in doc["publications"]}
            inherits: dict = {}
            for i in sorted(doc.get("inherits", ()), key=lambda i: (int(i["inhrelid"]), int(i["inhseqno"]))):
                inherits.setdefault(int(i["inhrelid"]), ())
                inherits[int(i["inhrelid"])] += (int(i["inhparent"]),)
            return cls(server_version=doc["server_version"], server_version_num=int(doc["server_version_num"]),
                       major=int(doc["major"]), lsn=parse_lsn(doc["lsn"]), database=doc["database"],
                       database_oid=int(doc["database_oid"]), database_tablespace=int(doc["database_tablespace"]),
                       settings=settings, relations=relations, types=types,
                       namespaces={int(n["oid"]): n["nspname"] for n in doc.get("namespaces", ())},
                       catalog_pages={int(p["oid"]): CatalogPages.from_dict(p) for p in doc.get("catalog_pages", ())},
                       catalog_pages_note=str(doc.get("catalog_pages_note", "")),
                       publications=pubs,
                       publication_rels={int(p["oid"]): _pubrel_from_dict(p) for p in doc.get("publication_rels", ())},
                       publication_namespaces={int(p["oid"]): _from_fields(PublicationNamespace, p)
                                               for p in doc.get("publication_namespaces", ())},
                       inherits=inherits,
                       replication_origins=({int(o["roident"]): str(o["roname"]) for o in doc["replication_origins"]}
                                            if "replication_origins" in doc else None),
                       system_identifier=(int(doc["system_identifier"]) if doc.get("system_identifier") is not None
                                          else None))
        except (KeyError, TypeError, ValueError) as e:
            raise CatalogError(f"{source}: malformed catalog snapshot: {type(e).__name__}: {e}") from None

    @classmethod
    def load(cls, path) -> Catalog:
        try:
            if str(path).endswith(".gz"):
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    text = f.read()
            else:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, EOFError) as e:
            raise CatalogError(f"cannot read catalog snapshot {path}: {getattr(e, 'strerror', None) or e}") from None
        catalog = cls.from_json(text, str(path))
        catalog.source = str(path)
        return catalog




def _from_fields(cls, d: dict):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


def _pubrel_to_dict(p: PublicationRel) -> dict:
    d = asdict(p)
    d["prattrs"] = None if p.prattrs is None else list(p.prattrs)
    return d


def _pubrel_from_dict(d: dict) -> PublicationRel:
    p = _from_fields(PublicationRel, d)
    if p.prattrs is not None:
        p = PublicationRel(p.oid, p.prpubid, p.prrelid, p.prqual, tuple(int(a) for a in p.prattrs))
    return p


def _rel_to_dict(r: Relation) -> dict:
    d = asdict(r)
    d["replica_identity_key"] = list(r.replica_identity_key)
    d["attributes"] = [asdict(a) for a in r.attributes]
    return d


def _rel_from_dict(d: dict) -> Relation:
    names = {f.name for f in fields(Relation)}
    kw = {k: v for k, v in d.items() if k in names}
    kw["replica_identity_key"] = tuple(d.get("replica_identity_key", ()))
    kw["primary_key"] = tuple(d.get("primary_key", ()))
    anames = {f.name for f in fields(Attribute)}
    kw["attributes"] = tuple(Attribute(**_att_kw(a, anames)) for a in d["attributes"])
    return Relation(**kw)


def _att_kw(a: dict, names: set) -> dict:
    kw = {k: v for k, v in a.items() if k in names}
    if "attdefault" in kw:  # JSON lists back to the (search_path, text) pairs
        kw["attdefault"] = tuple((str(p), str(t)) for p, t in kw["attdefault"])
    return kw


def _type_to_dict(t: TypeInfo) -> dict:
    d = asdict(t)
    d["enum_labels"] = {str(k): v for k, v in t.enum_labels.items()}
    return d


def _type_from_dict(d: dict) -> TypeInfo:
    names = {f.name for f in fields(TypeInfo)}
    kw = {k: v for k, v in d.items() if k in names}
    kw["enum_labels"] = {int(k): v for k, v in d.get("enum_labels", {}).items()}
    return TypeInfo(**kw)
