"""Catalog tables read from a stopped cluster's files: where they are, their layouts, their rows.

Owns one data directory's paths (relpath.c), its control file, shared relation map and
transaction status, and reading a catalog's visible rows: pg_attribute bootstrapped from its
fixed part as each major version declares it (``PG_ATTRIBUTE_FIXED``), every other catalog's
layout then taken from pg_attribute's own rows, values decoded by ``pg_catalog.CatalogLayout``
and, when stored out of line, fetched from the catalog's TOAST table.  Also pg_database and
pg_authid (the shared catalogs).  Hands rows to ``snapshot`` and ``settings``.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

from ...errors import CorruptRecordError, DecompressionError
from ...pg.quote import NAMEDATALEN
from ...heap.varlena import ToastPointer, decompress_toast_value
from ..model import Attribute, CatalogError
from ..pg_catalog import (
    BOOLOID,
    BYTEAOID,
    CHAROID,
    INT2OID,
    INT4OID,
    NAMEOID,
    OIDOID,
    AttributeRelationId,
    AuthIdRelationId,
    ReplicationOriginRelationId,
    CatalogLayout,
    DatabaseRelationId,
)
from ...pg.relpath import database_path, tablespace_version_directory
from .clog import TransactionStatus
from .control import read_pg_control, read_pg_version
from .files import DataFiles, data_files
from .heapscan import HeapScan, HeapTuple
from .relmap import RELMAPPER_FILENAME, read_relmap_file

# src/include/catalog/pg_database.dat
Template1DbOid = 1
# src/include/catalog/pg_database.h: datconnlimit of a database a DROP left half done (15.4+, 16+)
DATCONNLIMIT_INVALID_DB = -2

# src/include/catalog/pg_type.dat: (OID, typlen, typalign, typbyval) of pg_attribute's fixed column types
_FIXED_TYPES = {"oid": (OIDOID, 4, "i", True), "name": (NAMEOID, NAMEDATALEN, "c", False),
                "int4": (INT4OID, 4, "i", True), "int2": (INT2OID, 2, "s", True),
                "bool": (BOOLOID, 1, "c", True), "char": (CHAROID, 1, "c", True)}

# src/include/catalog/pg_attribute.h @ REL_13 … REL_18: FormData_pg_attribute up to attcollation, the
# fixed-length part every row has (17+ moved attstattarget behind it, 18 dropped attcacheoff).
_ATT_13 = ("attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
           "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attstorage char, attalign char, "
           "attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, "
           "attisdropped bool, attislocal bool, attinhcount int4, attcollation oid")
_ATT_14 = ("attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
           "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, "
           "attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, "
           "attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid")
_ATT_16 = ("attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, attcacheoff int4, "
           "atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, "
           "attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, "
           "attisdropped bool, attislocal bool, attinhcount int2, attstattarget int2, attcollation oid")
_ATT_17 = _ATT_16.replace(" attstattarget int2,", "")
_ATT_18 = _ATT_17.replace(" attcacheoff int4,", "")
PG_ATTRIBUTE_FIXED = {13: _ATT_13, 14: _ATT_14, 15: _ATT_14, 16: _ATT_16, 17: _ATT_17, 18: _ATT_18}

# TOAST tables (toasting.c create_toast_table): chunk_id oid, chunk_seq int4, chunk_data bytea
_TOAST_LAYOUT = (
    Attribute(attnum=1, attname="chunk_id", atttypid=OIDOID, atttypmod=-1, attlen=4, attbyval=True,
              attalign="i", attstorage="p", attisdropped=False),
    Attribute(attnum=2, attname="chunk_seq", atttypid=INT4OID, atttypmod=-1, attlen=4, attbyval=True,
              attalign="i", attstorage="p", attisdropped=False),
    Attribute(attnum=3, attname="chunk_data", atttypid=BYTEAOID, atttypmod=-1, attlen=-1, attbyval=False,
              attalign="i", attstorage="p", attisdropped=False),
)


def _layout_from_spec(spec: str) -> tuple[Attribute, ...]:
    out = []
    for attnum, item in enumerate(spec.split(","), 1):
        name, typ = item.split()
        typid, typlen, typalign, typbyval = _FIXED_TYPES[typ]
        out.append(Attribute(attnum=attnum, attname=name, atttypid=typid, atttypmod=-1, attlen=typlen,
                             attbyval=typbyval, attalign=typalign, attstorage="p", attisdropped=False))
    return tuple(out)


class CatalogTable:
    """One catalog's layout (its pg_attribute rows) and where its heap is."""

    def __init__(self, relname: str, oid: int, attributes: tuple[Attribute, ...], path: str):
        self.relname = relname
        self.oid = oid
        self.attributes = attributes
        self.path = path


class DataDir:
    """Paths, pg_control, mapper files and catalog scans of one data directory (a path or a
    ``DataFiles``: every file is read through ``files``; ``pgdata`` is its root, as messages name it)."""

    def __init__(self, pgdata: str | DataFiles, warn: Callable[[str], None]):
        self.files = files = data_files(pgdata)
        self.pgdata = pgdata = files.root
        self.warn = warn
        self.major = read_pg_version(files)
        self.control = read_pg_control(files, self.major)
        self.xact = TransactionStatus(files, self.control)
        #: the server encoding names and text are decoded with (the chosen database's, once known)
        self.encoding = "UTF8"
        self.shared_map = read_relmap_file(os.path.join(pgdata, "global", RELMAPPER_FILENAME), self.major, files)
        self._att_fixed = _layout_from_spec(PG_ATTRIBUTE_FIXED[self.major])
        self.attribute_cache: dict[str, AttributeRows] = {}  # database directory -> its pg_attribute

    # paths (src/common/relpath.c GetRelationPath / GetDatabasePath)
    def database_path(self, dboid: int, spcoid: int) -> str:
        version_directory = tablespace_version_directory(self.major, self.control.catalog_version_no)
        return os.path.join(self.pgdata, database_path(spcoid, dboid, version_directory))

    def scan(self, path: str) -> HeapScan:
        return HeapScan(path, self.xact, self.control.relseg_size, self.files)

    def layout(self, table: CatalogTable, columns: tuple[str, ...]) -> CatalogLayout:
        try:
            return CatalogLayout(table, columns, self.encoding, required=True)
        except KeyError as e:
            raise CatalogError(f"catalog {table.relname} in {table.path} has no column {e.args[0]} "
                               f"(unexpected PostgreSQL {self.major} layout)") from None

    def rows(self, table: CatalogTable, columns: tuple[str, ...]) -> Iterator[tuple]:
        """The visible rows of ``table`` as tuples of the named columns' values."""
        layout = self.layout(table, columns)
        for tup in self.scan(table.path):
            yield layout.row(self.deform(tup, layout, table))

    @staticmethod
    def deform(tup: HeapTuple, layout: CatalogLayout, table: CatalogTable) -> list:
        try:
            return layout.deform(tup.page, tup.t_infomask2, tup.t_infomask, tup.t_hoff, start=tup.lp_off,
                                 end=tup.lp_off + tup.lp_len)
        except (CorruptRecordError, DecompressionError) as e:
            raise CatalogError(f"{table.path}: block {tup.blkno}: tuple {tup.offnum} of {table.relname}: "
                               f"{getattr(e, 'reason', e)}") from None

    # pg_attribute: bootstrap from its known fixed part, then its own rows describe every catalog
    def read_pg_attribute(self, db_path: str, relmap: dict[int, int]) -> AttributeRows:
        if AttributeRelationId not in relmap:
            raise CatalogError(f"{db_path}/{RELMAPPER_FILENAME} has no entry for pg_attribute")
        path = os.path.join(db_path, str(relmap[AttributeRelationId]))
        table = CatalogTable("pg_attribute", AttributeRelationId, self._att_fixed, path)
        layout = self.layout(table, tuple(a.attname for a in self._att_fixed))
        attrelid = layout.cols[0][2]
        rows: dict[int, list] = {}
        for tup in self.scan(path):
            values = self.deform(tup, layout, table)
            rows.setdefault(attrelid(values[0]), []).append((values, tup))
        return AttributeRows(self, table, rows)


class AttributeRows:
    """pg_attribute's visible rows by attrelid, fixed part deformed; layouts of catalogs from them."""

    def __init__(self, datadir: DataDir, table: CatalogTable, rows: dict[int, list]):
        self.datadir = datadir
        self.table = table
        self.rows = rows
        fixed = table.attributes
        self._layouts: dict[str, CatalogLayout] = {}  # by encoding: names are decoded in the current one
        # pg_attribute's own full layout (variable-length columns included), checked against the fixed part
        full = self.layout(AttributeRelationId, "pg_attribute")
        for known, found in zip(fixed, full):
            if (known.attname, known.attlen, known.attalign) != (found.attname, found.attlen, found.attalign):
                raise CatalogError(f"{table.path}: pg_attribute column {found.attnum} is {found.attname} "
                                   f"(attlen {found.attlen}, attalign {found.attalign!r}), expected "
                                   f"{known.attname} (attlen {known.attlen}, attalign {known.attalign!r}) "
                                   f"for PostgreSQL {datadir.major}")
        self.full_table = CatalogTable("pg_attribute", AttributeRelationId, full, table.path)

    def _fixed(self) -> dict:
        encoding = self.datadir.encoding
        layout = self._layouts.get(encoding)
        if layout is None:
            layout = self._layouts[encoding] = self.datadir.layout(
                self.table, tuple(a.attname for a in self.table.attributes))
        return {name: (i, conv) for name, i, conv in layout.cols}

    def values(self, values: list, *names: str) -> tuple:
        """Columns ``names`` of a row of the fixed part, as Python values."""
        cols = self._fixed()
        return tuple(conv(values[i]) for i, conv in (cols[n] for n in names))

    def columns(self, relid: int) -> list[tuple[Attribute, HeapTuple]]:
        """The user columns (attnum > 0) of relation ``relid``, dropped ones included, in file order, each
        with its pg_attribute tuple (``attmissingval`` is not read: ``missing_value_raw``)."""
        out = []
        for values, tup in self.rows.get(relid, ()):
            (attnum, attname, atttypid, atttypmod, attlen, attbyval, attalign, attstorage, attisdropped,
             attnotnull, atthasmissing, attgenerated, attidentity, atthasdef) = self.values(
                values, "attnum", "attname", "atttypid", "atttypmod", "attlen", "attbyval", "attalign", "attstorage",
                "attisdropped", "attnotnull", "atthasmissing", "attgenerated", "attidentity", "atthasdef")
            if attnum > 0:
                out.append((Attribute(
                    attnum=attnum, attname=attname, atttypid=atttypid, atttypmod=atttypmod, attlen=attlen,
                    attbyval=attbyval, attalign=attalign, attstorage=attstorage, attisdropped=attisdropped,
                    attnotnull=attnotnull, atthasmissing=atthasmissing, attgenerated=attgenerated,
                    attidentity=attidentity, atthasdef=atthasdef), tup))
        return out

    def layout(self, relid: int, what: str) -> tuple[Attribute, ...]:
        """The user columns of relation ``relid`` in attnum order, as deforming needs them."""
        out = sorted((a for a, _tup in self.columns(relid)), key=lambda a: a.attnum)
        if not out:
            raise CatalogError(f"{self.table.path}: no pg_attribute rows for {what} (OID {relid})")
        if [a.attnum for a in out] != list(range(1, len(out) + 1)):
            raise CatalogError(f"{self.table.path}: pg_attribute rows of {what} (OID {relid}) have attnums "
                               f"{[a.attnum for a in out]}, not 1..{len(out)}")
        return tuple(out)

    def missing_value_raw(self, tup: HeapTuple):
        """attmissingval (anyarray payload bytes, or None) of one pg_attribute row: a full deform."""
        layout = self.datadir.layout(self.full_table, ("attmissingval",))
        return self.datadir.deform(tup, layout, self.full_table)[layout.cols[0][1]]


def shared_table(dd: DataDir, atts: AttributeRows, name: str, oid: int) -> CatalogTable:
    """A shared catalog (global/), its layout from ``atts``."""
    path = os.path.join(dd.pgdata, "global")
    if oid not in dd.shared_map:
        raise CatalogError(f"{path}/{RELMAPPER_FILENAME} has no entry for {name} (OID {oid})")
    return CatalogTable(name, oid, atts.layout(oid, name), os.path.join(path, str(dd.shared_map[oid])))


def unique_rows(rows: Iterator[tuple], table: CatalogTable) -> dict:
    """{first column (the OID): row}; two visible rows with one OID mean visibility went wrong."""
    out = {}
    for r in rows:
        if r[0] in out:
            raise CatalogError(f"{table.path}: two visible versions of the {table.relname} row with OID {r[0]}: "
                               "damaged hint bits, pg_xact or pg_multixact")
        out[r[0]] = r
    return out


def fetch_toast_value(dd: DataDir, pointer: ToastPointer, relmap: dict[int, int], directory: str) -> bytes:
    """detoast.c toast_fetch_datum for a catalog: the value's chunks from its (mapped) TOAST table."""
    if pointer.va_toastrelid not in relmap:
        raise CatalogError(f"{directory}/{RELMAPPER_FILENAME}: TOAST table {pointer.va_toastrelid} of a catalog "
                           "value is not mapped")
    table = CatalogTable(f"pg_toast_{pointer.va_toastrelid}", pointer.va_toastrelid, _TOAST_LAYOUT,
                         os.path.join(directory, str(relmap[pointer.va_toastrelid])))
    chunks = {}
    for chunk_id, seq, data in dd.rows(table, ("chunk_id", "chunk_seq", "chunk_data")):
        if chunk_id == pointer.va_valueid:
            chunks[seq] = data
    if sorted(chunks) != list(range(len(chunks))):
        raise CatalogError(f"{table.path}: TOAST value {pointer.va_valueid} has chunks {sorted(chunks)}")
    try:
        return decompress_toast_value(b"".join(chunks[i] for i in range(len(chunks))), pointer)
    except (CorruptRecordError, DecompressionError) as e:
        raise CatalogError(f"{table.path}: {getattr(e, 'reason', e)}") from None


# -- the shared catalogs ----------------------------------------------------------------------------

def bootstrap_database_dir(dd: DataDir) -> str:
    """A database directory whose pg_attribute describes the shared catalogs: template1's, else any."""
    base = os.path.join(dd.pgdata, "base")
    first = os.path.join(base, str(Template1DbOid))
    if dd.files.exists(os.path.join(first, RELMAPPER_FILENAME)):
        return first
    try:
        entries = sorted((int(e) for e in dd.files.listdir(base) if e.isdigit()))
    except OSError as e:
        raise CatalogError(f"cannot list {base}: {e.strerror}") from None
    for oid in entries:
        path = os.path.join(base, str(oid))
        if dd.files.exists(os.path.join(path, RELMAPPER_FILENAME)):
            return path
    raise CatalogError(f"{base}: no database directory with a {RELMAPPER_FILENAME}")


def read_pg_database(dd: DataDir, wanted: str | None) -> tuple[int, str, int, int, str, str]:
    """(oid, datname, dattablespace, encoding, datcollate, datctype) of the chosen database, from the
    shared pg_database.

    pg_database's layout comes from the pg_attribute of template1 (or of any database).
    """
    boot_dir = bootstrap_database_dir(dd)
    atts = dd.read_pg_attribute(boot_dir, read_relmap_file(os.path.join(boot_dir, RELMAPPER_FILENAME), dd.major,
                                                            dd.files))
    table = shared_table(dd, atts, "pg_database", DatabaseRelationId)
    rows = list(dd.rows(table, ("oid", "datname", "dattablespace", "encoding", "datistemplate", "datconnlimit",
                                "datcollate", "datctype")))
    dd.attribute_cache[boot_dir] = atts
    d = _choose_database(rows, wanted, dd.pgdata)
    return d[:4] + d[6:8]


def _choose_database(databases: list[tuple], wanted: str | None, pgdata: str) -> tuple:
    usable = [d for d in databases if d[5] != DATCONNLIMIT_INVALID_DB]
    if wanted is not None:
        for d in usable:
            if d[1] == wanted:
                return d
        raise CatalogError(f"{pgdata}: no database {wanted!r} (databases: "
                           f"{', '.join(sorted(d[1] for d in usable))})")
    candidates = [d for d in usable if not d[4] and d[1] != "postgres"]
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(sorted(d[1] for d in usable))
    if not candidates:
        raise CatalogError(f"{pgdata}: no database other than templates and postgres; name one with "
                           f"--database (databases: {names})")
    raise CatalogError(f"{pgdata}: {len(candidates)} user databases; name one with --database "
                       f"(databases: {names})")


def read_pg_authid(dd: DataDir, atts: AttributeRows, role: str) -> int:
    """The OID of role ``role`` (shared pg_authid)."""
    table = shared_table(dd, atts, "pg_authid", AuthIdRelationId)
    roles = {name: oid for oid, name in dd.rows(table, ("oid", "rolname"))}
    if role not in roles:
        raise CatalogError(f"role {role!r} does not exist in {table.path} (roles: {', '.join(sorted(roles))})")
    return roles[role]


def read_pg_replication_origin(dd: DataDir, atts: AttributeRows) -> dict[int, str]:
    """{roident: roname} of the shared pg_replication_origin."""
    table = shared_table(dd, atts, "pg_replication_origin", ReplicationOriginRelationId)
    return dict(dd.rows(table, ("roident", "roname")))
