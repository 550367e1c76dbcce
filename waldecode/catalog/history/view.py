"""The catalog at one point of the timeline, as one transaction sees it: ``HistoricCatalog``.

Owns assembling, lazily and cached per view, the ``Relation`` and ``TypeInfo`` objects of the
base snapshot patched with the rows the timeline holds at that point (the committed epoch and
the transaction's own events before the LSN), in the shapes ``catalog.dsn`` gives them: the
server's derived facts (format_type, replica identity key, attmissingval text, output function
names) through ``catalog.relcache``, TOAST relations, mapped catalogs.  The same interface as
``Catalog``; hands relations and types to the decoder and the type output.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import CorruptRecordError
from ...pg.lsn import format_lsn
from ...types import OutputContext
from .. import relcache
from ..model import Attribute, CatalogError, Relation, TypeInfo, publication_object
from ..pg_catalog import (
    RELKINDS_WITH_STORAGE,
    AttributeRelationId,
    EnumRelationId,
    IndexRelationId,
    InheritsRelationId,
    NamespaceRelationId,
    PublicationNamespaceRelationId,
    PublicationRelationId,
    PublicationRelRelationId,
    ProcedureRelationId,
    RangeRelationId,
    RelationRelationId,
    TypeRelationId,
)
from .layers import ABSENT, RELMAP, TxnEvents

# src/include/catalog/pg_proc.dat: output functions of the types CREATE TYPE / CREATE TABLE make
_OUTPUT_FUNCTIONS = {751: "array_out", 2291: "record_out", 3507: "enum_out", 3835: "range_out",
                     4232: "multirange_out"}


class HistoricCatalog:
    """The catalog of one epoch of the timeline, as one transaction sees it at one point: the same
    interface as ``catalog.Catalog`` (``relation``, ``relation_by_filenode``, ``type``, ``types``,
    ``relations``), built lazily from the base snapshot and the rows decoded from the WAL."""

    def __init__(self, timeline, epoch: int, txn: TxnEvents | None, count: int, lsn: int):
        base = timeline.base
        self.timeline = timeline
        self.facts = timeline.facts
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
        self._path: list | None = None
        self._pubs: dict = {}
        self._quote_all = relcache.quote_all_identifiers(base.settings)

    def __repr__(self) -> str:
        return f"<HistoricCatalog epoch {self._epoch}, {self._count} own changes, at {format_lsn(self.lsn)}>"

    # rows -----------------------------------------------------------------------------------------

    def _get(self, cat: int, key):
        if self._count:
            v = self._txn.layer.get(cat, key, self._count)
            if v is not ABSENT:
                return v
        return self.timeline.committed.get(cat, key, self._epoch)

    def _linked_any(self, name: str, value) -> bool:
        if self.timeline.committed.linked(name, value, self._epoch, 1):
            return True
        return bool(self._count and self._txn.layer.linked(name, value, self._count, 1))

    def _linked(self, name: str, value) -> set:
        keys = set(self.timeline.committed.linked(name, value, self._epoch))
        if self._count:
            keys.update(self._txn.layer.linked(name, value, self._count))
        return keys

    def output_context(self):
        if self._ctx is None:
            self._ctx = OutputContext(self, self.settings)
        return self._ctx

    # namespaces -------------------------------------------------------------------------------------

    def namespace_name(self, nspoid: int) -> str | None:
        name = self._nsp.get(nspoid, ABSENT)
        if name is ABSENT:
            v = self._get(NamespaceRelationId, nspoid)
            if v is ABSENT:
                name = self.facts.namespace_name(nspoid)
            else:
                name = None if v[0] else v[1]["nspname"]
            self._nsp[nspoid] = name
        return name

    @property
    def position(self) -> tuple:
        """(catalog-changing commits, the transaction's own catalog changes) this view stands after."""
        return (self._epoch, self._count)

    def _renamed_namespaces(self) -> dict:
        """Base-snapshot schema name -> its name here, for schemas renamed (or dropped: None)."""
        if self._renamed is None:
            self._renamed = {}
            for _cat, oid in self._linked("nsp", 0):
                old = self.facts.known_namespace_name(oid)  # None: created in the range
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
        """A function created in the range, as catalog.dsn names output functions (regproc text:
        bare in pg_catalog, else schema-qualified)."""
        v = self._get(ProcedureRelationId, procoid)
        if v is ABSENT or v[0]:
            return None
        return relcache.regproc_name(v[1]["proname"], self.namespace_name(v[1]["pronamespace"]), self.major,
                                     self._quote_all)

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
        if relcache.can_be_hidden(base_t.nspname, self._search_path()) and self._linked_any("typname", base_t.typname):
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
            for oid in self.facts.type_oids(old, typname):
                v = self._get(TypeRelationId, oid)
                if v is ABSENT:
                    return True
                if not v[0] and v[1]["typname"] == typname and \
                        self.namespace_name(v[1]["typnamespace"]) == nspname:
                    return True
        return False

    def _search_path(self) -> list[str]:
        if self._path is None:
            self._path = relcache.search_path_schemas(self.settings.get("search_path", ""))
        return self._path

    def _format(self, t: TypeInfo, typsubscript) -> str:
        """format_type(oid, NULL) of ``t`` here (``relcache.format_type``); a snapshot type records no
        typsubscript (None)."""
        def row_of(oid: int):
            typ = t if oid == t.oid else self.type(oid)
            if typ is None:
                return None
            return relcache.TypeRow(typ.oid, typ.typname, typ.nspname, typ.typelem, typ.typstorage,
                                    relcache.is_true_array(self.major, typ.typelem,
                                                           typsubscript if typ is t else None,
                                                           typ.typoutput, typ.typtype))

        return relcache.format_type(t.oid, row_of, self._type_is_visible, self.major, self._quote_all,
                                    element_text=self.format_type)

    def _type_is_visible(self, t: relcache.TypeRow) -> bool:
        """namespace.c TypeIsVisible over the snapshot's search_path ("$user" is not resolved)."""
        return relcache.type_is_visible(t.nspname, t.typname, self._search_path(), self._type_named)

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
            changed = {k for _c, k in self._linked("types", 0)} | set(self._types)
            for _cat, label_oid in self._linked("enumtypes", 0):
                v = self._get(EnumRelationId, label_oid)
                if v is not ABSENT:
                    changed.add(v[1]["enumtypid"])
            self._types_all = _merged(self.base.types, changed, self.type)
        return self._types_all

    # publications (pgoutput) ------------------------------------------------------------------------

    def _publication_rows(self, cat: int, attr: str) -> dict:
        """The base snapshot's rows of a publication catalog (``attr``), with the ones the range changed."""
        out = self._pubs.get(cat)
        if out is None:
            base = getattr(self.base, attr)
            out = dict(base) if base is not None else {}
            for _cat, key in self._linked("pubs", cat):
                v = self._get(cat, key)
                if v is ABSENT:
                    continue
                if v[0]:
                    out.pop(key, None)
                else:
                    out[key] = publication_object(cat, v[1])
            self._pubs[cat] = out
        return out

    @property
    def publications(self) -> dict | None:
        if self.base.publications is None:
            return None  # a snapshot that predates them: pgoutput refuses it
        return self._publication_rows(PublicationRelationId, "publications")

    @property
    def publication_rels(self) -> dict:
        return self._publication_rows(PublicationRelRelationId, "publication_rels")

    @property
    def publication_namespaces(self) -> dict:
        return self._publication_rows(PublicationNamespaceRelationId, "publication_namespaces")

    @property
    def inherits(self) -> dict:
        """pg_inherits: inhrelid -> parents in inhseqno order."""
        out = self._pubs.get(InheritsRelationId)
        if out is None:
            out = dict(self.base.inherits)
            keys = self._linked("pubs", InheritsRelationId)
            if keys:
                rows = {(rel, i + 1): parent for rel, parents in out.items() for i, parent in enumerate(parents)}
                for _cat, key in keys:
                    v = self._get(InheritsRelationId, key)
                    if v is ABSENT:
                        continue
                    if v[0]:
                        rows.pop(key, None)
                    else:
                        rows[key] = v[1]["inhparent"]
                out = {}
                for (rel, _seq), parent in sorted(rows.items()):
                    out[rel] = out.get(rel, ()) + (parent,)
            self._pubs[InheritsRelationId] = out
        return out

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
            keys = {k for (cat, k), _ in self.timeline.committed.rows.items() if cat == RelationRelationId}
            if self._count:
                keys |= {k for (cat, k), _ in self._txn.layer.rows.items() if cat == RelationRelationId}
            self._relations_all = _merged(self.base.relations, keys, self.relation)
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
        if not relfilenode and row["relkind"] in RELKINDS_WITH_STORAGE:
            relfilenode = self._mapped_filenode(oid, base)
        relreplident = row["relreplident"]
        return Relation(
            oid=oid, relname=row["relname"], nspname=self.namespace_name(row["relnamespace"]) or "",
            relkind=row["relkind"], relpersistence=row["relpersistence"], relfilenode=relfilenode,
            reltablespace=row["reltablespace"], relreplident=relreplident, reltoastrelid=row["reltoastrelid"],
            relrewrite=row["relrewrite"] or 0, replica_identity_key=self._identity_key(oid, relreplident, base),
            relispartition=bool(row["relispartition"]), attributes=self._attributes(oid, base),
            primary_key=self._index_key(oid, "d", base, base.primary_key if base is not None else None))

    def _mapped_filenode(self, oid: int, base: Relation | None) -> int:
        v = self._get(RELMAP, oid)
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
        pk = self._index_key(base.oid, "d", base, base.primary_key)
        if pk != base.primary_key:
            changes["primary_key"] = pk
        if base.relkind in RELKINDS_WITH_STORAGE:
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
                if self.timeline.warn is None:
                    raise
                self.timeline.warn(f"{e.reason}: rows written before the column was added show it as NULL")
        return Attribute(
            attnum=row["attnum"], attname=row["attname"], atttypid=row["atttypid"], atttypmod=row["atttypmod"],
            attlen=row["attlen"], attbyval=bool(row["attbyval"]), attalign=row["attalign"],
            attstorage=row["attstorage"], attisdropped=dropped, attnotnull=bool(row["attnotnull"]),
            atthasmissing=bool(row["atthasmissing"]), attmissingval=missing,
            attgenerated=row.get("attgenerated") or "", attidentity=row.get("attidentity") or "",
            type_name="" if dropped else self.format_type(row["atttypid"]),
            # the default's text is pg_attrdef's, which the history does not follow: a row the range
            # wrote (ALTER COLUMN SET DEFAULT rewrites it) leaves it unknown
            atthasdef=bool(row.get("atthasdef")))

    def _missing_text(self, row: dict) -> str | None:
        """The output text of the one element of pg_attribute.attmissingval (``relcache.missing_value_text``)."""
        try:
            return relcache.missing_value_text(row.get("attmissingval"), self.output_context())
        except CatalogError as e:
            raise CorruptRecordError(f"attmissingval of column {row['attname']} of relation {row['attrelid']}: "
                                     f"{e}") from None

    def _identity_key(self, oid: int, relreplident: str, base: Relation | None) -> tuple:
        """The replica identity key here (``_index_key``)."""
        same = base is not None and base.relreplident == relreplident
        return self._index_key(oid, relreplident, base, base.replica_identity_key if same else None)

    def _index_key(self, oid: int, relreplident: str, base: Relation | None, base_key: tuple | None) -> tuple:
        """``relcache.replica_identity_key`` over the pg_index rows of ``oid`` here (``relreplident`` "d":
        the primary key): those the range changed, else the snapshot's key ``base_key`` (None: it does not
        apply) while nothing says it went stale, else the snapshot's other indexes as far as the pages
        seen show them."""
        flag = relcache.identity_index_flag(relreplident)
        if flag is None:
            return ()
        keys = self._linked("index", oid)
        if not keys and base is not None and base_key is not None:
            return base_key
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
        key = relcache.replica_identity_key(relreplident, rows.values())
        if key:
            return key
        if base is not None and base_key:
            stale = any(relcache.index_key(r) == base_key for r in touched_old + list(rows.values()))
            if not stale:
                return base_key
        if base is not None:  # the snapshot's other indexes, as far as pages seen show them
            touched = set(rows) | {r["indexrelid"] for r in touched_old}
            return relcache.replica_identity_key(
                relreplident, [r for i, r in self.facts.indexes(oid).items() if i not in touched])
        return ()


def _merged(base: dict, changed, get) -> dict:
    """``base`` (OID -> object) with the objects of the ``changed`` OIDs as ``get`` gives them (None: gone)."""
    merged = dict(base)
    for oid in changed:
        obj = get(oid)
        if obj is None:
            merged.pop(oid, None)
        else:
            merged[oid] = obj
    return merged
