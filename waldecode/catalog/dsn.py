"""A catalog snapshot from a live server (``waldecode catalog --dsn``).

Owns reading, over psycopg 3 and in one REPEATABLE READ READ ONLY transaction, everything
``Catalog`` models: the WAL position it is valid at, the server version, the database, the
settings output depends on, every relation whose changes can appear in WAL or whose row type
output may need (with its columns), all of ``pg_type``, and the tracked catalogs' pages.  The
server states the derived facts itself (``format_type``, the replica identity index,
``attmissingval`` text: the rules ``catalog.relcache`` states for the other readers).  Hands
a ``Catalog`` to the caller.
"""

from __future__ import annotations

import re
import struct
from dataclasses import replace
from typing import Any

from ..errors import WALError
from ..pg.lsn import parse_lsn
from ..wal.xlogrecord import BLCKSZ
from .datadir.heapscan import heap_page_tuples
from .model import (DEFAULT_SETTINGS, SETTING_NAMES, Attribute, Catalog, CatalogError, CatalogPages, Publication,
                    PublicationNamespace, PublicationRel, Relation, TypeInfo)
from .pg_catalog import DECODED_COLUMNS, TRACKED_CATALOGS, CatalogLayout
from .relcache import views_needed

__all__ = ["snapshot_from_dsn", "snapshot_from_connection", "redact_dsn",
           "parse_single_element_array", "MIN_SERVER_VERSION_NUM"]

#: Oldest server this module reads (catalog columns differ before).
MIN_SERVER_VERSION_NUM = 130000

#: Settings applied to the snapshot session (``set_config(..., is_local)``) before any
#: output text (``format_type``, ``attmissingval``) is produced, and recorded.
_SESSION_SETTINGS = SETTING_NAMES + ("quote_all_identifiers",)
#: Settings only recorded (they cannot be changed in a session).
_RECORDED_SETTINGS = ("wal_level", "server_encoding")

#: pg_class relkinds in the snapshot (src/include/catalog/pg_class.h); views are
#: fetched too but kept only if a column's type needs their row type.
_RELKINDS = ("r", "t", "m", "p", "f", "S", "c")
_RELKIND_VIEW = "v"

_DEFAULT_CONNECT_TIMEOUT = 30


# -- SQL ----------------------------------------------------------------------------------------

# What is read where (PostgreSQL 13 – 18; the catalog columns used exist in all
# of them except ``pg_range.rngmultitypid``, 14+):
#
# * relations: ``pg_class`` with relkind r, t, m, p, f, S, c — catalogs and
#   TOAST tables included, since decoding must recognise (and skip) them — plus
#   views whose row type some column uses (directly or through arrays, domains,
#   ranges or composites).  ``relfilenode`` is ``pg_class.relfilenode`` as the
#   snapshot sees it, and ``pg_relation_filenode()`` only where that is 0
#   (mapped catalogs, resolved through the relation mapper); 0 for relkinds
#   without storage.
# * ``replica_identity_key``: key columns (``indkey[:indnkeyatts]``) of the
#   index ``RelationGetIndexList`` (``utils/cache/relcache.c``) would pick:
#   valid, unique, immediate, non-partial, and primary (REPLICA IDENTITY
#   DEFAULT) or ``indisreplident`` (USING INDEX); empty for FULL and NOTHING,
#   and when no such index exists (e.g. a DEFERRABLE primary key).
# * columns: ``pg_attribute`` with attnum > 0, dropped ones included (their
#   ``type_name`` is "").  ``type_name`` is ``format_type(atttypid, NULL)``,
#   the same ``format_type_extended`` call as test_decoding's
#   ``format_type_be``; ``attmissingval`` is the output text of the single
#   element of the ``anyarray`` in ``pg_attribute.attmissingval``.  ``attdefault``
#   is ``pg_get_expr(adbin, adrelid)`` of its ``pg_attrdef`` row under the session's
#   search_path and under an empty one (a replication connection's).
# * ``primary_key``: the key columns of the primary key index by the same rule.
# * types: all of ``pg_type``; ``typoutput`` is the output function's name,
#   bare for functions in ``pg_catalog`` (``int4out``, ``array_out``…) and
#   schema-qualified (``quote_ident``) otherwise, independent of search_path;
#   ``rngsubtype`` from ``pg_range`` for ranges and, for multiranges (14+), the
#   subtype of their range.
#
# * catalog pages (``Catalog.catalog_pages``): the heap pages of the catalogs the
#   catalog history tracks, read with pageinspect's ``get_raw_page`` when that
#   extension is installed and may be used (through shared buffers: current),
#   else with ``pg_read_binary_file`` of the relation files after a ``CHECKPOINT``
#   (which writes the buffers out; needs superuser or the pg_checkpoint role).  Of
#   each page only the tuples at the ctids of rows the snapshot sees are kept, and
#   a page is kept only if each of those tuples decodes to the row SQL returns for
#   that ctid (``xmin`` and the columns the history reads): a file page older than
#   the buffers, or one changed between the rows' scan and the page's read, is left
#   out.  Without either function (not permitted) the snapshot has no pages and
#   says why in ``catalog_pages_note``; the history then works as without them.
#
# The snapshot LSN is ``pg_current_wal_lsn()`` (``pg_last_wal_replay_lsn()`` on
# a standby), read in the transaction's first statement, i.e. just after the
# transaction snapshot is taken.  Functions that go through the system caches
# (``format_type``, output functions, ``pg_relation_filenode``) see the latest
# catalog rather than the transaction snapshot, so DDL running concurrently can
# make those few values newer than the rows they sit in.

_Q_START = """
SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text
            ELSE pg_current_wal_lsn()::text END,
       pg_is_in_recovery(),
       current_setting('server_version'), current_setting('server_version_num')::int,
       d.datname::text, d.oid::int8, d.dattablespace::int8,
       -- the cluster's identity, checked against the WAL's; pg_control_system() may be revoked
       CASE WHEN has_function_privilege('pg_control_system()', 'EXECUTE')
            THEN (SELECT system_identifier::text FROM pg_control_system()) END
FROM pg_database d WHERE d.datname = current_database()
"""

# reset_val: the value a session of this role on this database starts with; applied
# locally so format_type and output functions below see it.
_Q_SETTINGS = """
SELECT name, reset_val, set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY(%s)
"""
_Q_RECORDED = "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)"

_Q_RELATIONS = """
SELECT c.oid::int8, c.relname::text, n.nspname::text, c.relkind::text, c.relpersistence::text,
       COALESCE(NULLIF(c.relfilenode, 0), pg_relation_filenode(c.oid), 0)::int8,
       c.reltablespace::int8, c.relreplident::text, c.reltoastrelid::int8, c.relrewrite::int8,
       c.relispartition, c.reltype::int8, k.indkey::text, k.indnkeyatts, pk.indkey::text, pk.indnkeyatts
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
-- the replica identity key: relcache.replica_identity_key, the same rule
LEFT JOIN LATERAL (
    SELECT i.indkey, i.indnkeyatts FROM pg_index i
    WHERE i.indrelid = c.oid AND i.indislive AND i.indisvalid AND i.indisunique AND i.indimmediate
      AND i.indpred IS NULL
      AND CASE c.relreplident WHEN 'd' THEN i.indisprimary WHEN 'i' THEN i.indisreplident
          ELSE false END
    ORDER BY i.indexrelid LIMIT 1
) k ON true
-- the primary key (rd_pkindex): the same rule with indisprimary
LEFT JOIN LATERAL (
    SELECT i.indkey, i.indnkeyatts FROM pg_index i
    WHERE i.indrelid = c.oid AND i.indislive AND i.indisvalid AND i.indisunique AND i.indimmediate
      AND i.indpred IS NULL AND i.indisprimary
    ORDER BY i.indexrelid LIMIT 1
) pk ON true
WHERE c.relkind = ANY(%s::"char"[])
"""

_Q_ATTRIBUTES = """
SELECT a.attrelid::int8, a.attnum, a.attname::text, a.atttypid::int8, a.atttypmod, a.attlen,
       a.attbyval, a.attalign::text, a.attstorage::text, a.attisdropped, a.attnotnull,
       a.atthasmissing,
       -- attmissingval's element as text (relcache.missing_value_text): parse_single_element_array below
       CASE WHEN a.atthasmissing AND NOT a.attisdropped THEN a.attmissingval::text END,
       a.attgenerated::text, a.attidentity::text,
       CASE WHEN a.attisdropped THEN '' ELSE format_type(a.atttypid, NULL) END,
       a.atthasdef
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relkind = ANY(%s::"char"[]) AND a.attnum > 0
ORDER BY a.attrelid, a.attnum
"""

# Column defaults as wal2json prints them (pg_get_expr), under the session's search_path; read
# again under an empty one, the search_path of replication connections (pg_recvlogical)
_Q_DEFAULTS = """
SELECT d.adrelid::int8, d.adnum, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attrdef d
JOIN pg_class c ON c.oid = d.adrelid
WHERE c.relkind = ANY(%s::"char"[])
"""
_Q_SEARCH_PATH = "SELECT current_setting('search_path'), set_config('search_path', %s, true)"

_Q_TYPES = """
SELECT t.oid::int8, t.typname::text, n.nspname::text, t.typlen, t.typbyval, t.typalign::text,
       t.typstorage::text, t.typtype::text, t.typcategory::text, t.typdelim::text,
       t.typelem::int8, t.typarray::int8, t.typbasetype::int8, t.typtypmod, t.typrelid::int8,
       -- relcache.regproc_name and relcache.format_type state these two for the other readers
       CASE WHEN pn.nspname = 'pg_catalog' THEN p.proname::text
            ELSE quote_ident(pn.nspname) || '.' || quote_ident(p.proname) END,
       format_type(t.oid, NULL),
       COALESCE(r.rngsubtype, {multirange_subtype}, 0)::int8
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace
LEFT JOIN pg_proc p ON p.oid = t.typoutput
LEFT JOIN pg_namespace pn ON pn.oid = p.pronamespace
LEFT JOIN pg_range r ON r.rngtypid = t.oid
{multirange_join}
"""
# pg_range.rngmultitypid: 14+
_MULTIRANGE_JOIN = "LEFT JOIN pg_range mr ON mr.rngmultitypid = t.oid"
_MULTIRANGE_SUBTYPE = "mr.rngsubtype"

_Q_ENUMS = "SELECT enumtypid::int8, oid::int8, enumlabel::text FROM pg_enum ORDER BY enumtypid, enumsortorder"


# Publications (pgoutput): pg_publication, pg_publication_rel (prqual, prattrs: 15+),
# pg_publication_namespace (15+), pg_publication.pubgencols (18+), and pg_inherits (partition ancestors)
_Q_PUBLICATIONS = """
SELECT oid::int8, pubname::text, puballtables, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot,
       {pubgencols} FROM pg_publication
"""
_Q_PUBLICATION_RELS = """
SELECT oid::int8, prpubid::int8, prrelid::int8, {prqual}, {prattrs} FROM pg_publication_rel
"""
_Q_PUBLICATION_NAMESPACES = "SELECT oid::int8, pnpubid::int8, pnnspid::int8 FROM pg_publication_namespace"
_Q_INHERITS = "SELECT inhrelid::int8, inhparent::int8 FROM pg_inherits ORDER BY inhrelid, inhseqno"


def _publications(cur, version_num: int) -> tuple:
    """(publications, publication_rels, publication_namespaces, inherits) as ``Catalog`` holds them."""
    cur.execute(_Q_PUBLICATIONS.format(pubgencols="pubgencols::text" if version_num >= 180000 else "''"))
    pubs = {r[0]: Publication(*r) for r in cur.fetchall()}
    v15 = version_num >= 150000
    cur.execute(_Q_PUBLICATION_RELS.format(prqual="prqual::text" if v15 else "NULL::text",
                                           prattrs="prattrs::int2[]" if v15 else "NULL::int2[]"))
    rels = {oid: PublicationRel(oid, pubid, relid, qual, None if attrs is None else tuple(attrs))
            for oid, pubid, relid, qual, attrs in cur.fetchall()}
    nsps = {}
    if v15:
        cur.execute(_Q_PUBLICATION_NAMESPACES)
        nsps = {r[0]: PublicationNamespace(*r) for r in cur.fetchall()}
    cur.execute(_Q_INHERITS)
    inherits: dict = {}
    for rel, parent in cur.fetchall():
        inherits[rel] = inherits.get(rel, ()) + (parent,)
    return pubs, rels, nsps, inherits


# -- public API ---------------------------------------------------------------------------------

def snapshot_from_dsn(dsn: str, pages: str = "auto") -> Catalog:
    """Connect to ``dsn`` (a libpq connection string or URI) and take a catalog snapshot.

    Settings are recorded as ``pg_settings.reset_val``: what a new session of the
    connecting role on this database starts with (server configuration,
    ``ALTER DATABASE/ROLE … SET``, and whatever the client sends at connection
    start: the DSN's ``options``, ``PGOPTIONS``, ``PGTZ``, ``PGDATESTYLE``).  Connect
    as the decoding session (``pg_recvlogical``, a subscriber) would, so the
    snapshot's ``search_path`` qualifies type names as that session does.

    ``pages``: how the catalogs' pages are read, see ``snapshot_from_connection``.
    Raises ``CatalogError`` with a one-line message naming the DSN without its
    password when the server cannot be reached or the queries fail.
    """
    try:  # lazy: psycopg costs 0.24 s of start-up, only a connection to a server needs it
        import psycopg
    except ImportError:
        raise CatalogError("taking a catalog snapshot from a server needs psycopg 3 "
                           "(pip install 'psycopg[binary]')") from None

    safe = redact_dsn(dsn)
    kwargs: dict[str, Any] = {"autocommit": True}
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as e:
        raise CatalogError(f"invalid connection string {safe}: {_one_line(e)}") from None
    if "connect_timeout" not in params:
        kwargs["connect_timeout"] = _DEFAULT_CONNECT_TIMEOUT
    if "application_name" not in params:
        kwargs["application_name"] = "waldecode catalog"
    try:
        conn = psycopg.connect(dsn, **kwargs)
    except psycopg.Error as e:
        raise CatalogError(f"cannot connect to PostgreSQL at {safe}: {_one_line(e)}") from None
    try:
        return snapshot_from_connection(conn, pages=pages, _where=safe)
    finally:
        conn.close()


def snapshot_from_connection(conn, *, pages: str = "auto", _where: str | None = None) -> Catalog:
    """Take a catalog snapshot over an open psycopg 3 connection.

    The connection must not be inside a transaction; it is left as found (the
    snapshot transaction is rolled back, so its local ``set_config`` calls
    vanish).  Settings: see ``snapshot_from_dsn`` — ``pg_settings.reset_val``,
    so earlier ``SET`` commands on this connection do not count.  ``pages``: how
    the catalog pages are read: ``auto`` (get_raw_page if possible, else the
    files after a CHECKPOINT), ``get_raw_page``, ``pg_read_binary_file``, or
    ``none`` (a snapshot without them).
    """
    import psycopg  # lazy: 0.24 s of start-up, see snapshot_from_dsn
    from psycopg.pq import TransactionStatus

    where = _where or _conn_where(conn)
    if conn.info.transaction_status != TransactionStatus.IDLE:
        raise CatalogError(f"catalog snapshot from {where}: the connection is inside a transaction "
                           "(the snapshot needs its own REPEATABLE READ transaction)")
    was_autocommit = conn.autocommit
    conn.autocommit = True
    try:
        cur = conn.cursor()
        reader = _PageReader.choose(cur, pages)
        cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            return _read_snapshot(cur, where, reader)
        finally:
            if not conn.closed:
                conn.execute("ROLLBACK")
    except psycopg.Error as e:
        raise CatalogError(f"catalog snapshot from {where} failed: {_one_line(e)}") from None
    finally:
        if not conn.closed:
            conn.autocommit = was_autocommit


# -- the snapshot -------------------------------------------------------------------------------

def _read_snapshot(cur, where: str, pages: "_PageReader") -> Catalog:
    cur.execute(_Q_START)
    row = cur.fetchone()
    if row is None:  # current_database() not in pg_database: impossible outside a race with DROP
        raise CatalogError(f"catalog snapshot from {where}: current database not found in pg_database")
    lsn_text, in_recovery, server_version, version_num, datname, datoid, dattablespace, sysid = row
    if version_num < MIN_SERVER_VERSION_NUM:
        raise CatalogError(f"catalog snapshot from {where}: PostgreSQL {server_version} is not supported "
                           "(13 or later needed)")
    if lsn_text is None:
        raise CatalogError(f"catalog snapshot from {where}: standby has not replayed any WAL yet "
                           "(pg_last_wal_replay_lsn() is NULL)" if in_recovery else
                           f"catalog snapshot from {where}: no current WAL position")

    settings = dict(DEFAULT_SETTINGS)
    cur.execute(_Q_SETTINGS, (list(_SESSION_SETTINGS),))
    for name, value, _ in cur.fetchall():
        settings[name] = value
    cur.execute(_Q_RECORDED, (list(_RECORDED_SETTINGS),))
    for name, value in cur.fetchall():
        settings[name] = value
    # the database's default collation and ctype (pg_database: 16 has no lc_collate/lc_ctype settings):
    # what row filters ordering or case-mapping text need
    cur.execute("SELECT datcollate::text, datctype::text FROM pg_database WHERE datname = current_database()")
    settings["lc_collate"], settings["lc_ctype"] = cur.fetchone()

    relkinds = list(_RELKINDS) + [_RELKIND_VIEW]
    cur.execute(_Q_RELATIONS, (relkinds,))
    rel_rows = cur.fetchall()
    cur.execute(_Q_ATTRIBUTES, (relkinds,))
    attrs: dict[int, list[Attribute]] = {}
    for (relid, attnum, attname, atttypid, atttypmod, attlen, attbyval, attalign, attstorage,
         attisdropped, attnotnull, atthasmissing, missing_text, attgenerated, attidentity, type_name,
         atthasdef) in cur:
        attmissingval = None
        if missing_text is not None:
            try:
                attmissingval = parse_single_element_array(missing_text)
            except ValueError as e:
                raise CatalogError(f"catalog snapshot from {where}: attmissingval of column {attname!r} "
                                   f"of relation {relid}: {e}") from None
        attrs.setdefault(relid, []).append(Attribute(
            attnum=attnum, attname=attname, atttypid=atttypid, atttypmod=atttypmod, attlen=attlen,
            attbyval=attbyval, attalign=attalign, attstorage=attstorage, attisdropped=attisdropped,
            attnotnull=attnotnull, atthasmissing=atthasmissing, attmissingval=attmissingval,
            attgenerated=attgenerated or "", type_name=type_name or "", attidentity=attidentity or "",
            atthasdef=atthasdef))
    defaults = _read_defaults(cur, relkinds)
    if defaults:
        attrs = {relid: [replace(a, attdefault=defaults[(relid, a.attnum)]) if (relid, a.attnum) in defaults else a
                         for a in atts] for relid, atts in attrs.items()}

    multirange = version_num >= 140000
    cur.execute(_Q_TYPES.format(multirange_join=_MULTIRANGE_JOIN if multirange else "",
                                multirange_subtype=_MULTIRANGE_SUBTYPE if multirange else "NULL"))
    types: dict[int, TypeInfo] = {}
    type_rows = cur.fetchall()
    cur.execute(_Q_ENUMS)
    labels: dict[int, dict[int, str]] = {}
    for typid, label_oid, label in cur:
        labels.setdefault(typid, {})[label_oid] = label
    for (oid, typname, nspname, typlen, typbyval, typalign, typstorage, typtype, typcategory, typdelim,
         typelem, typarray, typbasetype, typtypmod, typrelid, typoutput, format_type, rngsubtype) in type_rows:
        types[oid] = TypeInfo(
            oid=oid, typname=typname, nspname=nspname, typlen=typlen, typbyval=typbyval,
            typalign=typalign, typstorage=typstorage, typtype=typtype, typcategory=typcategory,
            typdelim=typdelim, typelem=typelem, typarray=typarray, typbasetype=typbasetype,
            typtypmod=typtypmod, typrelid=typrelid, typoutput=typoutput or "",
            format_type=format_type, rngsubtype=rngsubtype, enum_labels=labels.get(oid, {}))

    relations: dict[int, Relation] = {}
    views: dict[int, Relation] = {}
    for (oid, relname, nspname, relkind, relpersistence, relfilenode, reltablespace, relreplident,
         reltoastrelid, relrewrite, relispartition, _reltype, indkey, indnkeyatts, pkkey, pknkeyatts) in rel_rows:
        key: tuple = ()
        if indkey is not None:
            key = tuple(int(x) for x in indkey.split()[:indnkeyatts])
        pk: tuple = ()
        if pkkey is not None:
            pk = tuple(int(x) for x in pkkey.split()[:pknkeyatts])
        rel = Relation(
            oid=oid, relname=relname, nspname=nspname, relkind=relkind, relpersistence=relpersistence,
            relfilenode=relfilenode, reltablespace=reltablespace, relreplident=relreplident,
            reltoastrelid=reltoastrelid, relrewrite=relrewrite, replica_identity_key=key,
            relispartition=relispartition, attributes=tuple(attrs.get(oid, ())), primary_key=pk)
        (views if relkind == _RELKIND_VIEW else relations)[oid] = rel
    for oid in views_needed(relations, views, types):
        relations[oid] = views[oid]

    cur.execute("SELECT oid::int8, nspname::text FROM pg_namespace")
    namespaces = dict(cur.fetchall())
    pubs, pubrels, pubnsps, inherits = _publications(cur, version_num)
    cur.execute("SELECT roident::int8, roname FROM pg_replication_origin")
    origins = dict(cur.fetchall())
    catalog_pages, note = pages.read(cur, relations, settings.get("server_encoding"))
    return Catalog(publications=pubs, publication_rels=pubrels, publication_namespaces=pubnsps, inherits=inherits,
                   replication_origins=origins,
                   server_version=server_version, server_version_num=version_num,
                   major=version_num // 10000, lsn=parse_lsn(lsn_text), database=datname,
                   database_oid=datoid, database_tablespace=dattablespace, settings=settings,
                   relations=relations, types=types, namespaces=namespaces, catalog_pages=catalog_pages,
                   catalog_pages_note=note, system_identifier=int(sysid) if sysid is not None else None)


def _read_defaults(cur, relkinds) -> dict:
    """(relid, attnum) -> ((search_path, pg_get_expr text), ...): each default printed under the session's
    search_path and under an empty one, then the session's restored."""
    out: dict = {}
    cur.execute(_Q_SEARCH_PATH, ("",))
    session_path = cur.fetchone()[0]
    paths = [""] if session_path == "" else ["", session_path]
    for path in paths:
        cur.execute(_Q_SEARCH_PATH, (path,))
        cur.execute(_Q_DEFAULTS, (relkinds,))
        for relid, adnum, text in cur.fetchall():
            if text is not None:
                out.setdefault((relid, adnum), []).append((path, text))
    cur.execute(_Q_SEARCH_PATH, (session_path,))
    return {k: tuple(v) for k, v in out.items()}


# -- catalog pages ------------------------------------------------------------------------------

#: a catalog larger than this (in pages, 128 MB) is left out of the snapshot's pages: it would make
#: the snapshot file too large to be worth it (the history then needs full-page images for it)
MAX_CATALOG_PAGES = 16384
#: pages read per query (8 MB)
_PAGES_PER_READ = 1024

_Q_PAGEINSPECT = """
SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pageinspect'
"""


def _row_expr(name: str, typid: int) -> str:
    """A catalog column as SQL giving what ``CatalogLayout.decode`` makes of its bytes (or for types
    it keeps as bytes: whether it is NULL); type OIDs as in ``pg_catalog.value_converter``."""
    col = f'"{name}"'
    if typid in (26, 24):  # oid, regproc
        return f"{col}::oid::int8"
    if typid == 28:  # xid
        return f"{col}::text::int8"
    if typid in (23, 21, 16, 25):  # int4, int2, bool, text
        return col
    if typid in (18, 19):  # "char", name
        return f"{col}::text"
    if typid == 700:  # float4: its bytes, as text output may round
        return f"float4send({col})"
    if typid == 22:  # int2vector
        return f"{col}::int2[]"
    return f"({col} IS NULL)"


class _PageReader:
    """How a live server's catalog pages are read: pageinspect's get_raw_page, the relation files
    through pg_read_binary_file, or not at all (with the reason)."""

    def __init__(self, method: str | None, schema: str = "", note: str = ""):
        self.method = method
        self.schema = schema
        self.note = note

    @classmethod
    def choose(cls, cur, wanted: str = "auto") -> "_PageReader":
        """Find out, before the snapshot transaction, which way is permitted (and CHECKPOINT for files)."""
        import psycopg  # lazy: 0.24 s of start-up, see snapshot_from_dsn

        if wanted == "none":
            return cls(None, note="the snapshot was taken without catalog pages (asked for)")
        errors = []
        if wanted in ("auto", "get_raw_page"):
            cur.execute(_Q_PAGEINSPECT)
            row = cur.fetchone()
            if row is None:
                errors.append("the pageinspect extension is not installed in this database")
            else:
                schema = '"' + row[0].replace('"', '""') + '"'
                try:
                    cur.execute(f"SELECT length({schema}.get_raw_page('pg_catalog.pg_class', 0))")
                    return cls("get_raw_page", schema)
                except psycopg.Error as e:
                    errors.append(f"get_raw_page: {_one_line(e)}")
        if wanted in ("auto", "pg_read_binary_file"):
            try:
                cur.execute("SELECT length(pg_read_binary_file(pg_relation_filepath('pg_catalog.pg_class'), 0, 1))")
            except psycopg.Error as e:
                errors.append(f"pg_read_binary_file: {_one_line(e)}")
            else:
                try:
                    # The files hold what the last checkpoint wrote out: write the buffers now
                    cur.execute("CHECKPOINT")
                    return cls("pg_read_binary_file")
                except psycopg.Error as e:
                    return cls("pg_read_binary_file", note=(
                        f"no CHECKPOINT before reading the catalogs' files ({_one_line(e)}): pages changed "
                        "since the last checkpoint are older in the files than in the server's buffers, and "
                        "are left out"))
        return cls(None, note="the catalogs' pages could not be read (" + "; ".join(errors) + "): a catalog row "
                   "changed in the decoded range before a full-page image of its page may be reported as not "
                   "decoded (take the snapshot as a superuser, or as a role that may run pg_read_binary_file and "
                   "CHECKPOINT)")

    def read(self, cur, relations: dict, encoding: str | None) -> tuple[dict, str]:
        """The tracked catalogs' pages (``Catalog.catalog_pages``) and a note on what is missing."""
        if self.method is None:
            return {}, self.note
        out = {}
        notes = [self.note] if self.note else []
        for oid, name in TRACKED_CATALOGS.items():
            rel = relations.get(oid)
            if rel is None or not rel.relfilenode or not rel.attributes:
                continue
            cur.execute("SELECT pg_relation_size(%s::oid)::int8, pg_relation_filepath(%s::oid)", (oid, oid))
            size, path = cur.fetchone()
            nblocks = size // BLCKSZ
            if nblocks > MAX_CATALOG_PAGES:
                notes.append(f"{name} has {nblocks} pages, more than the {MAX_CATALOG_PAGES} a snapshot carries")
                continue
            layout = CatalogLayout(rel, DECODED_COLUMNS[oid], encoding)
            visible = self._rows(cur, name, layout, rel)
            blocks = {}
            left_out = 0
            for blkno, page in self._pages(cur, name, path, nblocks):
                kept = _check_page(page, blkno, visible.get(blkno, {}), layout, f"pg_catalog.{name}")
                if kept is None:
                    left_out += 1
                else:
                    blocks[blkno] = kept
            if left_out:
                notes.append(f"{left_out} of the {nblocks} pages of {name} disagree with its rows and are left out")
            out[oid] = CatalogPages(oid, rel.relfilenode, self.method, blocks)
        return out, "; ".join(notes)

    @staticmethod
    def _rows(cur, name: str, layout, rel: Relation) -> dict:
        """{block: {offnum: (xmin, values)}} of the rows the snapshot sees, the values in
        ``layout.cols`` order, as the history decodes them."""
        types = {a.attname: a.atttypid for a in rel.attributes}
        exprs = ", ".join(_row_expr(c, types[c]) for c, _i, _conv in layout.cols)
        cur.execute(f"SELECT ctid::text, xmin::text::int8, {exprs} FROM pg_catalog.{name}")
        out: dict = {}
        for ctid, xmin, *values in cur:
            blkno, offnum = (int(x) for x in ctid.strip("()").split(","))
            out.setdefault(blkno, {})[offnum] = (xmin, values)
        return out

    def _pages(self, cur, name: str, path: str, nblocks: int):
        """(block number, page) of the relation's first ``nblocks`` blocks."""
        if self.method == "get_raw_page":
            for start in range(0, nblocks, _PAGES_PER_READ):
                last = min(nblocks, start + _PAGES_PER_READ) - 1
                cur.execute(f"SELECT b, {self.schema}.get_raw_page('pg_catalog.{name}', b) "
                            "FROM generate_series(%s::int, %s::int) b", (start, last))
                for blkno, page in cur.fetchall():
                    yield blkno, bytes(page)
            return
        cur.execute("SELECT setting::int8 FROM pg_settings WHERE name = 'segment_size'")  # RELSEG_SIZE, in blocks
        relseg = cur.fetchone()[0]
        for start in range(0, nblocks, _PAGES_PER_READ):
            count = min(nblocks - start, _PAGES_PER_READ, relseg - start % relseg)
            segment = path if start < relseg else f"{path}.{start // relseg}"
            cur.execute("SELECT pg_read_binary_file(%s, %s, %s)",
                        (segment, start % relseg * BLCKSZ, count * BLCKSZ))
            data = bytes(cur.fetchone()[0])
            for off in range(0, len(data) - BLCKSZ + 1, BLCKSZ):  # (shorter: truncated since its size was read)
                yield start + off // BLCKSZ, data[off:off + BLCKSZ]


def _check_page(page: bytes, blkno: int, visible: dict, layout: CatalogLayout, what: str) -> list | None:
    """The tuples of a page at the ctids of the rows the snapshot sees, if each decodes to its row."""
    try:
        tuples = heap_page_tuples(page, what, blkno)
    except CatalogError:
        return None
    kept = []
    for offnum, (xmin, values) in visible.items():
        tup = tuples.get(offnum)
        if tup is None or struct.unpack_from("<I", tup, 0)[0] != xmin:
            return None
        try:
            decoded = layout.decode(tup)
        except WALError:
            return None
        for (col, _i, _conv), want in zip(layout.cols, values):
            got = decoded[col]
            if isinstance(want, bool) and not isinstance(got, bool):
                got = got is None  # a column compared by whether it is NULL
            elif isinstance(want, (bytes, memoryview)):  # float4send: network byte order
                want = struct.unpack(">f", bytes(want))[0]
            if got != want:
                return None
        kept.append((offnum, tup))
    return kept


# -- helpers ------------------------------------------------------------------------------------

def parse_single_element_array(text: str) -> str | None:
    """The element of a one-element array literal as ``array_out`` writes it; None for NULL.

    ``{42}`` → ``42``; ``{"a \\"b\\", c"}`` → ``a "b", c``; ``{NULL}`` → None;
    ``{"NULL"}`` → ``NULL``; ``{(1,1),(0,0)}`` (box: delimiter ``;``) → ``(1,1),(0,0)``.
    An unquoted element is everything between the braces (array_out quotes an
    element containing the type's delimiter, so no splitting is needed).
    """
    s = text.strip()
    if s.startswith("["):  # dimension decoration "[lb:ub]={...}"
        eq = s.find("=")
        if eq < 0:
            raise ValueError(f"malformed array literal {text!r}")
        s = s[eq + 1:].strip()
    if len(s) < 2 or s[0] != "{" or s[-1] != "}":
        raise ValueError(f"malformed array literal {text!r}")
    body = s[1:-1]
    if body.startswith('"'):
        out = []
        i = 1
        n = len(body)
        while i < n:
            ch = body[i]
            if ch == "\\":
                if i + 1 >= n:
                    raise ValueError(f"malformed array literal {text!r}: trailing backslash")
                out.append(body[i + 1])
                i += 2
            elif ch == '"':
                if body[i + 1:].strip():
                    raise ValueError(f"array literal {text!r} has more than one element")
                return "".join(out)
            else:
                out.append(ch)
                i += 1
        raise ValueError(f"malformed array literal {text!r}: unterminated quoted element")
    body = body.strip()
    if not body:
        raise ValueError(f"array literal {text!r} has no element")
    if body.upper() == "NULL":
        return None
    # array_out never writes backslashes unquoted, but array_in would accept them.
    return re.sub(r"\\(.)", r"\1", body)


def redact_dsn(dsn: str) -> str:
    """``dsn`` for messages: its parameters without the password (host, port, user, dbname first)."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo  # lazy: psycopg, 0.24 s of start-up

        params = conninfo_to_dict(dsn)
    except Exception:
        params = None
    if params is not None:
        params.pop("password", None)
        first = [k for k in ("host", "hostaddr", "port", "user", "dbname") if k in params]
        ordered = {k: params[k] for k in first + sorted(k for k in params if k not in first)}
        return make_conninfo("", **ordered) or "(default connection parameters)"
    # Unparseable: mask what looks like a password.
    s = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", dsn)
    s = re.sub(r"(://[^/:@\s]*:)[^@/\s]*@", r"\1***@", s)
    s = re.sub(r"([?&]password=)[^&\s]*", r"\1***", s)
    return repr(s)


def _conn_where(conn) -> str:
    try:
        params = conn.info.get_parameters()
        return " ".join(f"{k}={params[k]}" for k in ("host", "port", "user", "dbname") if params.get(k))
    except Exception:
        return "the connection"


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return "; ".join(lines) if lines else type(e).__name__
