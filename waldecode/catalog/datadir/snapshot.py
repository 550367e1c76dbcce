"""A catalog snapshot built from a data directory's files (``waldecode catalog --datadir``).

Owns assembling, from one database's catalog rows as the files hold them at the last
checkpoint (``catalogs``, ``heapscan``, ``clog``), the same ``Catalog`` that ``catalog.dsn``
builds from a live server: relations with their columns and replica identity key, types with
their output function, ``format_type`` text, range subtypes and enum labels, schemas, the
settings (``settings``), and the tracked catalogs' pages.  The server's derived facts come
from ``catalog.relcache``.  README.md says what such a snapshot means and where it must differ
from a live server's.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from typing import Callable

from ...pg.bufpage import page_get_lsn
from ...pg.encoding import encoding_name
from ...pg.lsn import format_lsn
from ...types import OutputContext, TypeOutputError
from .. import relcache
from ..model import Attribute, Catalog, CatalogError, CatalogPages, Relation, TypeInfo, publication_object
from ..pg_catalog import (
    TRACKED_CATALOGS,
    EnumRelationId,
    IndexRelationId,
    NamespaceRelationId,
    InheritsRelationId,
    PublicationNamespaceRelationId,
    PublicationRelationId,
    PublicationRelRelationId,
    publication_columns,
    ProcedureRelationId,
    RangeRelationId,
    RELKIND_VIEW,
    RELKINDS_WITH_STORAGE,
    RelationRelationId,
    TypeRelationId,
)
from .catalogs import CatalogTable, DataDir, read_pg_authid, read_pg_database, read_pg_replication_origin, unique_rows
from .control import DB_SHUTDOWNED, DB_SHUTDOWNED_IN_RECOVERY, WAL_LEVEL_NAMES, state_name
from .files import data_files
from .relmap import RELMAPPER_FILENAME, read_relmap_file
from .settings import read_pg_db_role_setting, read_settings

#: pg_class relkinds in the snapshot, as catalog.dsn takes them; views only when a column needs their row type
_RELKINDS = frozenset("rtmpfSc")

_PG_CLASS_COLUMNS = ("oid", "relname", "relnamespace", "relkind", "relpersistence", "relfilenode", "reltablespace",
                     "relreplident", "reltoastrelid", "relrewrite", "relispartition", "relisshared")
_PG_TYPE_COLUMNS = ("oid", "typname", "typnamespace", "typlen", "typbyval", "typalign", "typstorage", "typtype",
                    "typcategory", "typdelim", "typelem", "typarray", "typbasetype", "typtypmod", "typrelid",
                    "typoutput")
_PG_INDEX_COLUMNS = ("indexrelid", "indrelid", "indnkeyatts", "indisunique", "indisprimary", "indimmediate",
                     "indisvalid", "indislive", "indisreplident", "indkey", "indpred")


class DatadirWarning(UserWarning):
    """Something about the data directory the user should know; the snapshot is still taken."""


def _default_warn(message: str) -> None:
    warnings.warn(message, DatadirWarning, stacklevel=3)


def snapshot_from_datadir(pgdata, database: str | None = None, *, role: str | None = None,
                          warn: Callable[[str], None] | None = None) -> Catalog:
    """Build the catalog snapshot of ``database`` from the data directory ``pgdata``: a path, or a
    ``files.DataFiles`` (a backup: ``catalog.backups``), which the caller closes.

    ``database`` defaults to the only database that is neither a template nor ``postgres``.
    ``role`` names the session user: it resolves ``"$user"`` in search_path and adds that
    role's ``ALTER ROLE … SET`` settings (default: neither).  ``warn`` receives one-line
    warnings (a running server, an unclean state, a base backup, a missing postgresql.conf);
    by default they are issued as ``DatadirWarning``.  Raises ``CatalogError`` naming the
    file at fault.
    """
    files = data_files(pgdata)
    warn = warn or _default_warn
    dd = DataDir(files, warn)
    _check_state(dd)
    major = dd.major

    datoid, datname, dattablespace, encoding, datcollate, datctype = read_pg_database(dd, database)
    server_encoding = encoding_name(encoding)
    dd.encoding = server_encoding
    db = _Database(dd, datoid, datname, dattablespace)

    role_oid = read_pg_authid(dd, db.atts, role) if role is not None else None
    settings = read_settings(files, read_pg_db_role_setting(dd, db.atts, datoid, role_oid), warn)
    settings["wal_level"] = WAL_LEVEL_NAMES.get(dd.control.wal_level, str(dd.control.wal_level))
    settings["server_encoding"] = server_encoding
    settings["lc_collate"], settings["lc_ctype"] = datcollate, datctype  # what catalog.dsn records

    namespaces = dict(dd.rows(db.unmapped("pg_namespace", NamespaceRelationId), ("oid", "nspname")))
    type_rows = db.read_pg_type()
    fmt = FormatType(type_rows, namespaces, settings["search_path"], major,
                     relcache.quote_all_identifiers(settings), role)
    types = db.type_infos(type_rows, namespaces, fmt)
    relations = db.relations(namespaces, fmt, types)

    pubs = db.read_publications()
    origins = read_pg_replication_origin(dd, db.atts)

    def make(rels: dict) -> Catalog:
        return Catalog(publications=pubs[0], publication_rels=pubs[1], publication_namespaces=pubs[2],
                       inherits=pubs[3], replication_origins=origins,
                       server_version=str(major), server_version_num=major * 10000, major=major,
                       lsn=dd.control.checkPoint, database=datname, database_oid=datoid,
                       database_tablespace=dattablespace, settings=settings, relations=rels, types=types,
                       namespaces=dict(namespaces), system_identifier=dd.control.system_identifier)

    if db.missing:
        relations = _with_missing_values(make(relations), db.missing, db.atts.table.path)
    catalog = make(relations)
    catalog.catalog_pages, catalog.catalog_pages_note = db.catalog_pages(dd.control.checkPoint)
    return catalog


class FormatType:
    """format_type(oid, NULL) over a data directory's pg_type rows (``relcache.format_type``), with
    TypeIsVisible over the search path the settings give (``"$user"`` as ``user``)."""

    def __init__(self, types: dict[int, dict], namespaces: dict[int, str], search_path: str, major: int,
                 quote_all: bool = False, user: str | None = None):
        self.types = types
        self.namespaces = namespaces
        self.major = major
        self.quote_all = quote_all
        self.path = relcache.search_path_schemas(search_path, user)
        self.type_names = {(t["typname"], namespaces.get(t["typnamespace"])) for t in types.values()}

    def row(self, oid: int) -> relcache.TypeRow | None:
        t = self.types.get(oid)
        if t is None:
            return None
        return relcache.TypeRow(oid, t["typname"], self.namespaces.get(t["typnamespace"]), t["typelem"],
                                t["typstorage"], relcache.is_true_array(self.major, t["typelem"], t.get("typsubscript")))

    def is_visible(self, t: relcache.TypeRow) -> bool:
        return relcache.type_is_visible(t.nspname, t.typname, self.path,
                                        lambda nsp, name: (name, nsp) in self.type_names)

    def __call__(self, oid: int) -> str:
        return relcache.format_type(oid, self.row, self.is_visible, self.major, self.quote_all)


class _Database:
    """The catalogs of one database: its mapper file, pg_attribute and pg_class, then the rest."""

    def __init__(self, dd: DataDir, datoid: int, datname: str, dattablespace: int):
        self.dd = dd
        self.datoid = datoid
        self.dattablespace = dattablespace
        self.dir = dd.database_path(datoid, dattablespace)
        if not dd.files.isdir(self.dir):
            raise CatalogError(f"{self.dir}: directory of database {datname!r} (OID {datoid}) is missing")
        self.local_map = read_relmap_file(os.path.join(self.dir, RELMAPPER_FILENAME), dd.major, dd.files)
        self.atts = dd.attribute_cache.get(self.dir) or dd.read_pg_attribute(self.dir, self.local_map)
        self.pg_class = self.mapped("pg_class", RelationRelationId)
        self.classes = unique_rows(dd.rows(self.pg_class, _PG_CLASS_COLUMNS), self.pg_class)
        self.missing: list[tuple[int, int, object]] = []  # (relid, attnum, attmissingval array payload)

    def mapped(self, name: str, oid: int) -> CatalogTable:
        """A catalog whose relfilenode is in the database's pg_filenode.map."""
        if oid not in self.local_map:
            raise CatalogError(f"{self.dir}/{RELMAPPER_FILENAME} has no entry for {name} (OID {oid})")
        return CatalogTable(name, oid, self.atts.layout(oid, name), os.path.join(self.dir, str(self.local_map[oid])))

    def unmapped(self, name: str, oid: int) -> CatalogTable:
        """A catalog whose relfilenode is in its pg_class row (pg_namespace, pg_index, pg_enum …)."""
        row = self.classes.get(oid)
        if row is None or not row[5]:
            raise CatalogError(f"{self.pg_class.path}: no pg_class row with a relfilenode for {name} (OID {oid})")
        spc = row[6] or self.dattablespace
        return CatalogTable(name, oid, self.atts.layout(oid, name),
                            os.path.join(self.dd.database_path(self.datoid, spc), str(row[5])))

    def catalog_pages(self, checkpoint: int) -> tuple[dict[int, CatalogPages], str]:
        """The visible tuples of every tracked catalog by block (``Catalog.catalog_pages``), and a note
        on the pages left out.

        A page whose pd_lsn lies after the checkpoint the snapshot stands for (written after it,
        before a crash or while a base backup was copied) is left out: it may already hold
        changes of WAL records the decoder will read, which could not be redone on it.
        """
        out = {}
        notes = []
        for oid, name in TRACKED_CATALOGS.items():
            if oid == PublicationNamespaceRelationId and self.dd.major < 15:
                continue
            table = self.mapped(name, oid) if oid in self.local_map else self.unmapped(name, oid)
            scan = self.dd.scan(table.path)
            blocks = {}
            later = 0
            for path, blkno, page in scan.pages():
                if page_get_lsn(page) > checkpoint:
                    later += 1
                    continue
                blocks[blkno] = [(t.offnum, page[t.lp_off:t.lp_off + t.lp_len])
                                 for t in scan.visible(page, path, blkno)]
            out[oid] = CatalogPages(oid, int(os.path.basename(table.path)), "datadir", blocks)
            if later:
                notes.append(f"{later} pages of {name} in {table.path} were written after the checkpoint at "
                             f"{format_lsn(checkpoint)} and are left out")
        return out, "; ".join(notes)

    def read_publications(self) -> tuple:
        """(publications, publication_rels, publication_namespaces, inherits) as ``Catalog`` holds them."""
        out = []
        for cat, name in ((PublicationRelationId, "pg_publication"), (PublicationRelRelationId, "pg_publication_rel"),
                          (PublicationNamespaceRelationId, "pg_publication_namespace")):
            objs = {}
            if cat != PublicationNamespaceRelationId or self.dd.major >= 15:
                cols = publication_columns(cat, self.dd.major)
                for r in self.dd.rows(self.unmapped(name, cat), cols):
                    obj = publication_object(cat, dict(zip(cols, r)))
                    objs[obj.oid] = obj
            out.append(objs)
        inherits: dict = {}
        rows = self.dd.rows(self.unmapped("pg_inherits", InheritsRelationId), ("inhrelid", "inhparent", "inhseqno"))
        for rel, parent, _seq in sorted(rows, key=lambda r: (r[0], r[2])):
            inherits[rel] = inherits.get(rel, ()) + (parent,)
        out.append(inherits)
        return tuple(out)

    def read_pg_type(self) -> dict[int, dict]:
        """pg_type rows by OID, as dicts of the columns TypeInfo and format_type need."""
        cols = _PG_TYPE_COLUMNS + (("typsubscript",) if self.dd.major >= 14 else ())
        table = self.mapped("pg_type", TypeRelationId)
        return {oid: dict(zip(cols, r)) for oid, r in unique_rows(self.dd.rows(table, cols), table).items()}

    def read_pg_range(self) -> dict[int, int]:
        """{range type OID: rngsubtype}, and (14+) {multirange type OID: its range's rngsubtype}."""
        multirange = self.dd.major >= 14
        cols = ("rngtypid", "rngsubtype") + (("rngmultitypid",) if multirange else ())
        subtypes: dict[int, int] = {}
        for r in self.dd.rows(self.unmapped("pg_range", RangeRelationId), cols):
            subtypes.setdefault(r[0], r[1])
            if multirange and r[2]:
                subtypes.setdefault(r[2], r[1])
        return subtypes

    def read_pg_enum(self) -> dict[int, dict[int, str]]:
        """{enum type OID: {label OID: label}} in enumsortorder."""
        labels: dict[int, list] = {}
        for oid, typid, order, label in self.dd.rows(self.unmapped("pg_enum", EnumRelationId),
                                                     ("oid", "enumtypid", "enumsortorder", "enumlabel")):
            labels.setdefault(typid, []).append((order, oid, label))
        return {typid: {o: lbl for _order, o, lbl in sorted(items)} for typid, items in labels.items()}

    def read_pg_proc(self) -> dict[int, tuple[str, int]]:
        """{function OID: (proname, pronamespace)}."""
        table = self.mapped("pg_proc", ProcedureRelationId)
        return {oid: (name, nsp) for oid, name, nsp in self.dd.rows(table, ("oid", "proname", "pronamespace"))}

    def read_pg_index(self) -> dict[int, list[dict]]:
        """pg_index rows by indrelid, with what the replica identity rule looks at."""
        indexes: dict[int, list] = {}
        for r in self.dd.rows(self.unmapped("pg_index", IndexRelationId), _PG_INDEX_COLUMNS):
            indexes.setdefault(r[1], []).append(dict(zip(_PG_INDEX_COLUMNS, r)))
        return indexes

    def type_infos(self, type_rows: dict, namespaces: dict, fmt: FormatType) -> dict[int, TypeInfo]:
        """Every pg_type row as a TypeInfo (catalog.dsn's _Q_TYPES and _Q_ENUMS)."""
        procs = self.read_pg_proc()
        subtypes = self.read_pg_range()
        labels = self.read_pg_enum()
        types = {}
        for oid, t in type_rows.items():
            proc = procs.get(t["typoutput"])
            typoutput = "" if proc is None else \
                relcache.regproc_name(proc[0], namespaces.get(proc[1]), fmt.major, fmt.quote_all)
            types[oid] = TypeInfo(
                oid=oid, typname=t["typname"], nspname=namespaces.get(t["typnamespace"], ""), typlen=t["typlen"],
                typbyval=t["typbyval"], typalign=t["typalign"], typstorage=t["typstorage"], typtype=t["typtype"],
                typcategory=t["typcategory"], typdelim=t["typdelim"], typelem=t["typelem"], typarray=t["typarray"],
                typbasetype=t["typbasetype"], typtypmod=t["typtypmod"], typrelid=t["typrelid"],
                typoutput=typoutput, format_type=fmt(oid), rngsubtype=subtypes.get(oid, 0),
                enum_labels=labels.get(oid, {}))
        return types

    def relations(self, namespaces: dict, fmt: FormatType, types: dict) -> dict[int, Relation]:
        """pg_class rows of the snapshot's relkinds, with their columns and replica identity key,
        plus the views whose row type a column needs (catalog.dsn's _Q_RELATIONS, _Q_ATTRIBUTES)."""
        indexes = self.read_pg_index()
        relations: dict[int, Relation] = {}
        views: dict[int, Relation] = {}
        for oid, row in self.classes.items():
            (_, relname, relnamespace, relkind, relpersistence, relfilenode, reltablespace, relreplident,
             reltoastrelid, relrewrite, relispartition, relisshared) = row
            if relkind not in _RELKINDS and relkind != RELKIND_VIEW:
                continue
            if not relfilenode and relkind in RELKINDS_WITH_STORAGE:  # pg_relation_filenode(): the mapper
                relfilenode = (self.dd.shared_map if relisshared else self.local_map).get(oid, 0)
            rel = Relation(
                oid=oid, relname=relname, nspname=namespaces.get(relnamespace, ""), relkind=relkind,
                relpersistence=relpersistence, relfilenode=relfilenode, reltablespace=reltablespace,
                relreplident=relreplident, reltoastrelid=reltoastrelid, relrewrite=relrewrite,
                replica_identity_key=relcache.replica_identity_key(relreplident, indexes.get(oid, ())),
                relispartition=relispartition, attributes=self.attributes(oid, fmt),
                primary_key=relcache.replica_identity_key("d", indexes.get(oid, ())))
            (views if relkind == RELKIND_VIEW else relations)[oid] = rel
        for oid in relcache.views_needed(relations, views, types):
            relations[oid] = views[oid]
        return relations

    def attributes(self, relid: int, fmt: FormatType) -> tuple[Attribute, ...]:
        """The user columns of a relation, dropped ones included; missing values noted for later."""
        out = []
        for att, tup in self.atts.columns(relid):
            if not att.attisdropped:
                att = replace(att, type_name=fmt(att.atttypid))
                if att.atthasmissing:
                    self.missing.append((relid, att.attnum, self.atts.missing_value_raw(tup)))
            out.append(att)
        out.sort(key=lambda a: a.attnum)
        return tuple(out)


def _check_state(dd: DataDir) -> None:
    """Warnings, not errors: a running server (postmaster.pid), an unclean or backup state."""
    pid_file = os.path.join(dd.pgdata, "postmaster.pid")
    if dd.files.exists(pid_file):
        dd.warn(f"{pid_file} exists: a server may be running on this data directory (or it crashed); "
                "files being written can be inconsistent; the snapshot holds what they hold now")
    ctl = dd.control
    where = f"{dd.pgdata}/global/pg_control"
    if dd.files.exists(os.path.join(dd.pgdata, "backup_label")):
        dd.warn(f"{dd.pgdata} is a base backup (backup_label): catalog files are as copied, consistent only "
                f"up to the last checkpoint {format_lsn(ctl.checkPoint)} plus whatever was copied later")
    elif ctl.state not in (DB_SHUTDOWNED, DB_SHUTDOWNED_IN_RECOVERY):
        dd.warn(f"{where}: cluster state is {state_name(ctl.state)!r}, not shut down cleanly: the snapshot is the "
                f"catalog files as of the last checkpoint ({format_lsn(ctl.checkPoint)}, redo "
                f"{format_lsn(ctl.checkPointCopy.redo)}); later catalog changes may sit only in WAL")


def _with_missing_values(catalog: Catalog, missing: list, where: str) -> dict:
    """The relations with ``attmissingval`` filled in: the output text of the one element of the
    anyarray, printed with the snapshot's settings (and its types, for enums and records)."""
    ctx = None
    texts: dict[int, dict[int, str | None]] = {}
    for relid, attnum, raw in missing:
        if raw is None:
            continue  # atthasmissing without a value: nothing to add (catalog.dsn reads NULL too)
        try:
            if ctx is None:
                try:
                    ctx = OutputContext(catalog, catalog.settings)
                except TypeOutputError as e:
                    raise CatalogError(str(e)) from None
            texts.setdefault(relid, {})[attnum] = relcache.missing_value_text(raw, ctx)
        except CatalogError as e:
            raise CatalogError(f"{where}: attmissingval of column {attnum} of relation {relid}: {e}") from None
    relations = dict(catalog.relations)
    for relid, by_attnum in texts.items():
        rel = relations.get(relid)
        if rel is None:
            continue
        attrs = tuple(a if a.attnum not in by_attnum else replace(a, attmissingval=by_attnum[a.attnum])
                      for a in rel.attributes)
        relations[relid] = replace(rel, attributes=attrs)
    return relations
