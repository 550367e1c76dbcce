"""Parquet (``decode --parquet DIR``, ``spark decode --parquet DIR``): ``output.rows``' rows as Parquet files.

Owns the Arrow form of the rows and the files they are written to (pyarrow).  ``DIR`` holds two
datasets::

    DIR/changes/schema=S/table=T/part-<uuid>.parquet   a table's INSERT/UPDATE/DELETE/TRUNCATE rows
    DIR/transactions/part-<uuid>.parquet               BEGIN, COMMIT, PREPARE, COMMIT/ROLLBACK
                                                        PREPARED, UNCOMMITTED, TRUNCATE, MESSAGE rows

``changes`` is Hive-partitioned by schema and table (names %-escaped as Hive and Spark escape
them): ``pyarrow.dataset.dataset(DIR/changes, partitioning="hive")`` or Spark's
``read.parquet`` restore ``schema`` and ``table`` as columns.  A table's file holds
``LEADING_FIELDS`` (LSNs as int64, commit_time as timestamp[us, UTC]) and ``new`` and ``old``, a
struct with one field per column (attnum order, dropped columns left out; ``old`` as the
replica identity reports it, NULL without an old tuple), typed where a lossless Arrow type
exists (``arrow_column``) and as the server's output text otherwise; ``new_text``/``old_text``
map a column to its text where its value has no typed form (numeric NaN, ±infinity, a
timestamp beyond Arrow's range, a column added with a default whose stored value is text);
``unchanged_toast`` lists the columns of ``new`` whose TOASTed value the change did not carry
(``old_unchanged_toast`` those of ``old``: old tuples are not de-TOASTed, as test_decoding says).
A file's metadata carries ``waldecode.schema_version`` and each column's PostgreSQL type.
DDL that changes a table's columns starts a new file of that table; when the run ends,
``unify_dataset`` rewrites the files of such a table to one schema (the union of its versions,
retyped columns at a type holding both exactly) and writes ``changes/_common_metadata``, the union
of all tables': pyarrow, Spark and DuckDB then read a table, or the whole dataset, at once.

Streaming: each file gets a row group every ``row_group_rows`` rows (or 32 MiB of values),
whatever the transactions, and the largest buffers are written out early when all files' together
pass 256 MiB: memory stays bounded however large a transaction is and however many tables it touches.
"""

from __future__ import annotations

import json
import os
import struct
import uuid
from decimal import Decimal
from urllib.parse import quote

from ..catalog import Relation
from ..pg.pg_type import (BOOLOID, BYTEAOID, DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID,
                          NUMERICOID, TIMESTAMPOID, TIMESTAMPTZOID, UUIDOID)
from ..errors import OutputPluginError, UsageError
from ..heap.heaptuple import MissingValue
from ..heap.varlena import VARHDRSZ
from ..types.datetime import DATEVAL_NOBEGIN, DATEVAL_NOEND, DT_NOBEGIN, DT_NOEND, POSTGRES_EPOCH_JDATE, \
    UNIX_EPOCH_JDATE, USECS_PER_DAY
from ..types.numeric import numeric_text
from .base import CatalogView, Transaction
from .rows import LEADING_FIELDS, SCHEMA_VERSION, TRUNCATE, RowPlugin, is_unchanged_toast, old_columns

# PostgreSQL's epoch (2000-01-01) in days and microseconds since the Unix epoch
_EPOCH_DAYS = POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE
_EPOCH_USECS = _EPOCH_DAYS * USECS_PER_DAY
_INT64_MAX = (1 << 63) - 1
# decimal256's precision (Arrow)
_MAX_DECIMAL_PRECISION = 76

_i16 = struct.Struct("<h")
_i32 = struct.Struct("<i")
_i64 = struct.Struct("<q")
_f32 = struct.Struct("<f")
_f64 = struct.Struct("<d")

# A value with no lossless typed form: the row keeps its text in new_text/old_text
_TEXT = object()

ROW_GROUP_ROWS = 65536
ROW_GROUP_BYTES = 32 << 20
# All files' buffered rows together: past this, the largest buffer is written out (many tables at once)
BUFFERED_BYTES = 256 << 20


def _pa():
    try:  # lazy: pyarrow costs 0.1 s and is the optional [parquet] extra; only --parquet needs it
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UsageError("Parquet output needs pyarrow: pip install 'waldecode[parquet]'") from None
    return pyarrow


def numeric_typmod(typmod: int) -> tuple[int, int] | None:
    """src/backend/utils/adt/numeric.c NUMERIC_TYPMOD_PRECISION / NUMERIC_TYPMOD_SCALE: (precision,
    scale) of numeric(p,s), None for an unconstrained numeric (typmod -1; the typmod counts VARHDRSZ)."""
    if typmod < VARHDRSZ:
        return None
    t = typmod - VARHDRSZ
    return (t >> 16) & 0xFFFF, ((t & 0x7FF) ^ 1024) - 1024


# -- typed values: datum bytes (or a MissingValue's text) -> the Arrow value, or _TEXT ----------------

def _fixed(st: struct.Struct, from_text=None):
    size = st.size

    def convert(v):
        if v.__class__ is MissingValue:
            return from_text(v.text) if from_text is not None else _TEXT
        if len(v) != size:
            return _TEXT  # not what the type stores: its output function says what is wrong
        return st.unpack(v)[0]
    return convert


def _bool(v):
    if v.__class__ is MissingValue:
        return v.text == "t"
    return v[0] != 0 if len(v) == 1 else _TEXT


def _date(v):
    if v.__class__ is MissingValue or len(v) != 4:
        return _TEXT
    days = _i32.unpack(v)[0]
    if days == DATEVAL_NOBEGIN or days == DATEVAL_NOEND:
        return _TEXT
    return days + _EPOCH_DAYS


def _timestamp(v):
    if v.__class__ is MissingValue or len(v) != 8:
        return _TEXT
    ts = _i64.unpack(v)[0]
    if ts == DT_NOBEGIN or ts == DT_NOEND or ts + _EPOCH_USECS > _INT64_MAX:
        return _TEXT
    return ts + _EPOCH_USECS


def _bytea(v):
    return _TEXT if v.__class__ is MissingValue else bytes(v)


def _uuid(v):
    if v.__class__ is MissingValue:
        return uuid.UUID(v.text).bytes
    return bytes(v) if len(v) == 16 else _TEXT


def _numeric(precision: int, scale: int):
    def convert(v):
        text = v.text if v.__class__ is MissingValue else numeric_text(v)
        if text in ("NaN", "Infinity", "-Infinity"):
            return _TEXT
        d = Decimal(text)
        sign, digits, exponent = d.as_tuple()
        if exponent != -scale or len(digits) > precision:
            return _TEXT
        return d
    return convert


def arrow_column(catalog: CatalogView, att):
    """(Arrow type, converter) of a column: the lossless typed form of its type (a domain's base
    type's), or None for the server's output text."""
    pa = _pa()
    typeoid = att.atttypid
    typ = catalog.type(typeoid)
    for _ in range(32):  # domains over domains
        if typ is None or typ.typtype != "d":
            break
        typeoid = typ.typbasetype
        typ = catalog.type(typeoid)
    if typeoid == INT2OID:
        return pa.int16(), _fixed(_i16, int)
    if typeoid == INT4OID:
        return pa.int32(), _fixed(_i32, int)
    if typeoid == INT8OID:
        return pa.int64(), _fixed(_i64, int)
    if typeoid == FLOAT4OID:
        return pa.float32(), _fixed(_f32)
    if typeoid == FLOAT8OID:
        return pa.float64(), _fixed(_f64)
    if typeoid == BOOLOID:
        return pa.bool_(), _bool
    if typeoid == DATEOID:
        return pa.date32(), _date
    if typeoid == TIMESTAMPOID:
        return pa.timestamp("us"), _timestamp
    if typeoid == TIMESTAMPTZOID:
        return pa.timestamp("us", tz="UTC"), _timestamp
    if typeoid == UUIDOID:
        return pa.uuid(), _uuid
    if typeoid == BYTEAOID:
        return pa.binary(), _bytea
    if typeoid == NUMERICOID and att.atttypid == NUMERICOID:  # a domain's typmod is not the column's
        ps = numeric_typmod(att.atttypmod)
        if ps is not None and 0 <= ps[1] <= ps[0] <= _MAX_DECIMAL_PRECISION:
            p, s = ps
            return (pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)), _numeric(p, s)
    return None


def _leading_arrow_fields(pa, names):
    types = {"long": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC"), "string": pa.string()}
    return [pa.field(name, types[typ]) for name, typ in LEADING_FIELDS if name in names]


_CHANGE_LEADING = ("commit_lsn", "lsn", "xid", "commit_time", "op")


class _Columns:
    """A relation's columns as one catalog view describes them: the Arrow struct of ``new``/``old`` and
    how each value gets there."""

    def __init__(self, catalog: CatalogView, rel: Relation, value_text):
        pa = _pa()
        self.index = []  # attribute indexes of the reported columns
        self.names = []
        self.convert = []  # value -> typed value or _TEXT; None: the output text
        self.typeoids = []
        fields = []
        described = []
        for i, att in enumerate(rel.attributes):
            if att.attisdropped:
                continue
            typed = arrow_column(catalog, att)
            self.index.append(i)
            self.names.append(att.attname)
            self.typeoids.append(att.atttypid)
            self.convert.append(typed[1] if typed is not None else None)
            fields.append(pa.field(att.attname, typed[0] if typed is not None else pa.string()))
            described.append({"name": att.attname, "type": att.type_name})
        self.output = value_text  # (typeoid, value) -> the output text
        self.struct = pa.struct(fields) if fields else None
        self.signature = (rel.oid, rel.nspname, rel.relname, tuple((f.name, str(f.type)) for f in fields),
                          tuple(d["type"] for d in described))
        self.described = described

    def values(self, values: list, which, toast: list | None):
        """(typed values per column, {name: text} of untyped ones or None, approximate size)."""
        out = [None] * len(self.index)
        texts = None
        size = 0
        for k, i in enumerate(self.index):
            if which is not None and i not in which:
                continue
            v = values[i]
            if v is None:
                continue
            if is_unchanged_toast(v):
                if toast is not None:
                    toast.append(self.names[k])
                continue
            conv = self.convert[k]
            typed = _TEXT if conv is None else conv(v)
            if typed is _TEXT:
                text = self.output(self.typeoids[k], v)
                if conv is None:
                    out[k] = text
                else:
                    if texts is None:
                        texts = {}
                    texts[self.names[k]] = text
                size += len(text)
            else:
                out[k] = typed
                size += 8 if v.__class__ is MissingValue else len(v)
        return out, texts, size


class _FileWriter:
    """One Parquet file, written a row group at a time: rows are buffered as Python tuples and written
    once ``row_group_rows`` of them (or ``ROW_GROUP_BYTES``) are buffered, and at ``close``."""

    def __init__(self, path: str, schema, row_group_rows: int):
        self.path = path
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.rows: list = []
        self.size = 0
        self.writer = None
        self.row_groups = 0  # written so far

    def add(self, row: tuple, size: int) -> None:
        self.rows.append(row)
        self.size += size + 64
        if len(self.rows) >= self.row_group_rows or self.size >= ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        pa = _pa()
        columns = list(zip(*self.rows))
        arrays = [_array(pa, f.type, col) for f, col in zip(self.schema, columns)]
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if self.writer is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.writer = pa.parquet.ParquetWriter(self.path, self.schema)
        self.writer.write_table(table, row_group_size=len(self.rows))
        self.row_groups += 1
        self.rows = []
        self.size = 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _array(pa, typ, values):
    """An Arrow array of ``typ`` from Python values (structs: a per-row list of field values or None)."""
    if pa.types.is_struct(typ):
        mask = pa.array([v is None for v in values], pa.bool_())
        children = [_array(pa, typ.field(j).type, [None if v is None else v[j] for v in values])
                    for j in range(typ.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(typ), mask=mask)
    if pa.types.is_map(typ):
        return pa.array([None if v is None else list(v.items()) for v in values], typ)
    return pa.array(values, typ)


class ParquetOutput(RowPlugin):
    """The plugin: writes ``directory`` as the module docstring says.  ``write`` is accepted (and
    unused) so that Spark can make it as it makes line-writing plugins: ``make_plugin(write)``."""

    def __init__(self, write=None, *, directory: str, row_group_rows: int = ROW_GROUP_ROWS):
        self.directory = directory
        self.row_group_rows = row_group_rows
        # per relation OID: (attributes, catalog view, _Columns)
        self._columns: dict[int, tuple] = {}
        self._tables: dict[int, tuple] = {}  # relation OID -> (signature, _FileWriter)
        self._events: _FileWriter | None = None
        self._buffered = 0  # bytes added since the last check of all buffers

    def startup(self, options: dict, catalog: CatalogView):
        _pa()  # fail before decoding when pyarrow is missing
        return super().startup(options, catalog)

    def shutdown(self) -> None:
        for _sig, w in self._tables.values():
            w.close()
        self._tables.clear()
        if self._events is not None:
            self._events.close()
            self._events = None

    def _part(self, *dirs: str) -> str:
        return os.path.join(self.directory, *dirs, f"part-{uuid.uuid4().hex}.parquet")

    # -- schemas -----------------------------------------------------------------------------------

    def _metadata(self, **extra) -> dict:
        return {b"waldecode.schema_version": str(SCHEMA_VERSION).encode(),
                **{f"waldecode.{k}".encode(): json.dumps(v).encode() for k, v in extra.items()}}

    def _table_writer(self, catalog: CatalogView, rel: Relation) -> tuple:
        hit = self._columns.get(rel.oid)
        if hit is None or hit[0] is not rel.attributes or hit[1] is not catalog or hit[3] != rel.relname \
                or hit[4] != rel.nspname:
            cols = _Columns(catalog, rel, self.value_text(catalog))
            self._columns[rel.oid] = hit = (rel.attributes, catalog, cols, rel.relname, rel.nspname)
        cols = hit[2]
        current = self._tables.get(rel.oid)
        if current is not None and current[0] == cols.signature:
            return cols, current[1]
        if current is not None:
            current[1].close()  # the table's columns changed (DDL): a new file
        pa = _pa()
        fields = _leading_arrow_fields(pa, _CHANGE_LEADING)
        if cols.struct is not None:  # Parquet has no empty struct: a table without columns has no new/old
            fields += [pa.field("new", cols.struct), pa.field("old", cols.struct)]
        text_map = pa.map_(pa.string(), pa.string())
        fields += [pa.field("new_text", text_map), pa.field("old_text", text_map),
                   pa.field("unchanged_toast", pa.list_(pa.string())),
                   pa.field("old_unchanged_toast", pa.list_(pa.string()))]
        schema = pa.schema(fields, metadata=self._metadata(relation={"schema": rel.nspname, "table": rel.relname,
                                                                     "oid": rel.oid},
                                                           columns=cols.described))
        path = self._part("changes", "schema=" + _escape(rel.nspname), "table=" + _escape(rel.relname))
        writer = _FileWriter(path, schema, self.row_group_rows)
        self._tables[rel.oid] = (cols.signature, writer)
        return cols, writer

    def _event_writer(self) -> _FileWriter:
        if self._events is None:
            pa = _pa()
            fields = _leading_arrow_fields(pa, _CHANGE_LEADING) + [
                pa.field("gid", pa.string()),
                pa.field("relations", pa.list_(pa.struct([pa.field("schema", pa.string()),
                                                          pa.field("table", pa.string())]))),
                pa.field("restart_seqs", pa.bool_()), pa.field("cascade", pa.bool_()),
                pa.field("transactional", pa.bool_()), pa.field("prefix", pa.string()),
                pa.field("content", pa.binary())]
            self._events = _FileWriter(self._part("transactions"), pa.schema(fields, metadata=self._metadata()),
                                       self.row_group_rows)
        return self._events

    # -- rows --------------------------------------------------------------------------------------

    @staticmethod
    def _lead(row: dict) -> tuple:
        t = row["commit_time"]
        return (row["commit_lsn"], row["lsn"], row["xid"], None if t is None else t + _EPOCH_USECS, row["op"])

    def event(self, row: dict) -> None:
        rels = row.get("relations")
        self._event_writer().add(
            self._lead(row) + (row.get("gid"), None if rels is None else [{"schema": s, "table": t} for s, t in rels],
                               row.get("restart_seqs"), row.get("cascade"), row.get("transactional"),
                               row.get("prefix"), row.get("content")),
            len(row.get("content") or b""))

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        super().truncate(txn, lsn, catalog, relations, restart_seqs, cascade)
        lead = self._lead(self.head(txn, lsn, TRUNCATE))
        for rel in relations:
            cols, writer = self._table_writer(catalog, rel)
            writer.add(lead + ((None, None) if cols.struct is not None else ()) + (None, None, None, None), 0)

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        self.changes_written += 1
        cols, writer = self._table_writer(catalog, relation)
        toast: list = []
        old_toast: list = []
        size = 0
        new_vals = new_text = old_vals = old_text = None
        if new is not None:
            new_vals, new_text, n = cols.values(new, None, toast)
            size += n
        if old is not None:
            old_vals, old_text, n = cols.values(old, set(old_columns(relation, old)), old_toast)
            size += n
        row = self._lead(self.head(txn, lsn, action))
        if cols.struct is not None:
            row += (new_vals, old_vals)
        writer.add(row + (new_text, old_text, toast or None, old_toast or None), size)
        self._buffered += size + 64
        if self._buffered >= BUFFERED_BYTES >> 3:
            self._bound_buffers()

    def _bound_buffers(self) -> None:
        """Keep every file's buffered rows together under BUFFERED_BYTES: write out the largest buffers."""
        self._buffered = 0
        writers = [w for _s, w in self._tables.values()] + ([self._events] if self._events is not None else [])
        total = sum(w.size for w in writers)
        for w in sorted(writers, key=lambda w: w.size, reverse=True):
            if total < BUFFERED_BYTES:
                break
            total -= w.size
            w.flush()


def _escape(name: str) -> str:
    """A partition value as a path segment (%-escaped, as Hive and Spark escape them; pyarrow's
    hive partitioning decodes it)."""
    return quote(name, safe="")


def prepare_directory(path: str) -> None:
    """``--parquet DIR`` must be new or empty: two runs' files would mix in one dataset."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UsageError(f"--parquet {path}: not a directory")
        if os.listdir(path):
            raise UsageError(f"--parquet {path}: the directory is not empty (the dataset is written fresh)")
    else:
        try:
            os.makedirs(path)
        except OSError as e:
            raise OutputPluginError(f"cannot create --parquet directory {path}: {e.strerror}") from None


# -- one schema per table: what every reader reads whole ----------------------------------------------

#: DIR/changes/_common_metadata: the union of every table's schema (and the partition columns)
COMMON_METADATA = "_common_metadata"
# decimal digits an integer type needs (int16, int32, int64) when an integer column becomes numeric
_INT_DIGITS = {16: 5, 32: 10, 64: 19}


def wider_type(pa, a, b):
    """The Arrow type that holds every value of ``a`` and of ``b`` exactly (``unify_dataset``): the
    larger integer, float64, a decimal with the larger integer part and the larger scale, else
    string (the values' text)."""
    if a == b:
        return a
    ints = pa.types.is_signed_integer
    if ints(a) and ints(b):
        return a if a.bit_width >= b.bit_width else b
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return pa.float64()
    decimal = pa.types.is_decimal
    if (decimal(a) or ints(a)) and (decimal(b) or ints(b)):
        ps = [(t.precision, t.scale) if decimal(t) else (_INT_DIGITS[t.bit_width], 0) for t in (a, b)]
        scale = max(s for _p, s in ps)
        precision = max(p - s for p, s in ps) + scale
        if precision <= 38:
            return pa.decimal128(precision, scale)
        if precision <= _MAX_DECIMAL_PRECISION:
            return pa.decimal256(precision, scale)
    return pa.string()


def _cast(pa, arr, typ):
    """``arr`` as ``typ`` (a ``wider_type`` of its type): exact widening, or the values' text."""
    if arr.type == typ:
        return arr
    if pa.types.is_struct(typ):
        children = [_cast(pa, arr.field(f.name), f.type) if arr.type.get_field_index(f.name) >= 0
                    else pa.nulls(len(arr), f.type) for f in typ]
        return pa.StructArray.from_arrays(children, fields=list(typ), mask=arr.is_null())
    if pa.types.is_string(typ) and pa.types.is_boolean(arr.type):
        # boolout's text (src/backend/utils/adt/bool.c), as integers and numerics keep theirs
        import pyarrow.compute as pc  # lazy: 50 ms more, only for a column that was boolean and is text

        return pc.if_else(arr, "t", "f")
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return arr.cast(typ)


def _unified_schema(pa, schemas: list):
    """One schema for files written by ``ParquetOutput``: the fields of the first, ``new`` and ``old``
    the union of every file's columns (in order of first appearance) at their ``wider_type``."""
    first = schemas[0]
    fields = {f.name: f for f in first}
    columns: dict = {}
    for s in schemas:
        for name in ("new", "old"):
            if s.get_field_index(name) >= 0:
                for f in s.field(name).type:
                    columns[f.name] = f.type if f.name not in columns else wider_type(pa, columns[f.name], f.type)
    out = []
    for name in list(fields) + [n for s in schemas for n in s.names if n not in fields]:
        if any(f.name == name for f in out):
            continue
        if name in ("new", "old"):
            out.append(pa.field(name, pa.struct([pa.field(n, t) for n, t in columns.items()])))
        else:
            out.append(next(s.field(name) for s in schemas if s.get_field_index(name) >= 0))
    # struct fields before the text maps, as ParquetOutput writes them (a table without columns first)
    order = {n: i for i, n in enumerate(("commit_lsn", "lsn", "xid", "commit_time", "op", "new", "old"))}
    out.sort(key=lambda f: order.get(f.name, len(order)))
    return pa.schema(out)


def _first_lsn(pq, path: str) -> int:
    """Where a file's rows start (its ``lsn`` column's lowest value in the first row group)."""
    meta = pq.ParquetFile(path).metadata
    if meta.num_row_groups == 0:
        return 0
    rg = meta.row_group(0)
    for i in range(rg.num_columns):
        col = rg.column(i)
        if col.path_in_schema == "lsn" and col.statistics is not None and col.statistics.has_min_max:
            return col.statistics.min
    return 0


def _rewrite(pa, pq, path: str, schema) -> None:
    """``path`` again with ``schema`` (its own metadata kept), a row group at a time, replaced whole."""
    src = pq.ParquetFile(path)
    own = src.schema_arrow.metadata
    target = schema.with_metadata(own) if own else schema
    tmp = path + ".unify"
    with pq.ParquetWriter(tmp, target) as w:
        for i in range(src.metadata.num_row_groups):
            t = src.read_row_group(i)
            arrays = []
            for f in target:
                if t.schema.get_field_index(f.name) >= 0:
                    arrays.append(_cast(pa, t.column(f.name).combine_chunks(), f.type))
                else:
                    arrays.append(pa.nulls(t.num_rows, f.type))
            w.write_table(pa.Table.from_arrays(arrays, schema=target), row_group_size=max(t.num_rows, 1))
    os.replace(tmp, path)


def unify_dataset(directory: str) -> None:
    """After ``decode --parquet`` or ``spark decode --parquet`` has written ``directory``: the files of
    each table (``changes/schema=S/table=T``) rewritten to one schema where DDL in the range gave
    them different ones (columns added, dropped, renamed or retyped: ``_unified_schema``), and
    ``changes/_common_metadata`` written with the union of all tables' schemas.  Files of one schema
    are not touched."""
    pa = _pa()
    pq = pa.parquet
    changes = os.path.join(directory, "changes")
    if not os.path.isdir(changes):
        return
    tables = []
    for root, dirs, files in os.walk(changes):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        parts = sorted(os.path.join(root, f) for f in files if f.endswith(".parquet") and not f.startswith(("_", ".")))
        if parts:
            parts.sort(key=lambda p: _first_lsn(pq, p))
            schemas = [pq.read_schema(p) for p in parts]
            plain = [s.remove_metadata() for s in schemas]
            unified = _unified_schema(pa, plain)
            for p, s in zip(parts, plain):
                if not s.equals(unified):
                    _rewrite(pa, pq, p, unified)
            tables.append(unified)
    if not tables:
        return
    common = _unified_schema(pa, tables)
    common = common.append(pa.field("schema", pa.string())).append(pa.field("table", pa.string()))
    pq.write_metadata(common.with_metadata({b"waldecode.schema_version": str(SCHEMA_VERSION).encode()}),
                      os.path.join(changes, COMMON_METADATA))
