"""The ``pgwal`` DataFrame source: one row per decoded output line, with the change's values.

Owns ``spark.read.format("pgwal").option("catalog", FILE).option("startLsn", "X/X").load(PATH)``
(a PySpark Python Data Source; registered automatically through the top-level module
``pyspark_waldecode`` when waldecode is installed, or by ``waldecode.spark.register(spark)``;
its columns in docs/spark.md).  Filters on ``commit_lsn`` prune what is read where Spark pushes
filters to Python sources (``spark.sql.python.filterPushdown.enabled``), and are only applied
by Spark otherwise.
Planning runs phase 1 for the driver and the driver's sequential pass (``plan``) in the
planning process, with the same task functions as ``spark decode``; each partition is one
range of output order and decodes its transactions with ``Replayer`` and a test_decoding
plugin that also reports each change's fields.  The ``line`` column is exactly what
``decode`` prints for that row.

Rows in output order are ``orderBy("position", "seq")``: ``position`` is the place of the
transaction (or of a call outside one: a non-transactional message, COMMIT PREPARED) in
the output, ``seq`` the line within it.

Options: ``catalog`` (required), ``startLsn``, ``restartLsn``, ``endLsn``, ``timeline``,
``twoPhase``, ``includeUncommitted``, ``ranges`` (partitions), ``segmentsPerPartition``,
test_decoding's options by their names (``include-xids`` …), ``set.<setting>``.

Limits of this first version: the planning pass reads the WAL in one process, and a
partition sorts its changes in memory (``spark decode`` does both on the executors).
"""

from __future__ import annotations

import base64
import os
import re
import sys

from ..errors import Error
from ..output.rows import leading_fields_ddl
from ..output.test_decoding import TestDecoding

# The fields of output.rows (what decode --parquet and --format jsonl write) lead, after the output order
SCHEMA = ("position long, seq long, " + leading_fields_ddl() + ", "
          "relid long, new array<struct<name: string, type: string, value: string>>, "
          "old array<struct<name: string, type: string, value: string>>, message_prefix string, "
          "message_content binary, transactional boolean, line binary")

_TD_OPTIONS = TestDecoding.BOOL_OPTIONS

# PostgreSQL's epoch (2000-01-01) in Unix microseconds
_PG_EPOCH_US = 946684800 * 1_000_000


class RowPlugin(TestDecoding):
    """test_decoding, whose every output line is handed over with the fields of the call that printed
    it: ``write((line, fields))``."""

    def __init__(self, write):
        self._out = write
        self._fields: dict = {}
        super().__init__(self._emit)

    def startup(self, options, catalog):
        import dataclasses

        opts = super().startup(options, catalog)
        # Each change's column values are wanted, not only its line: the Python path (change())
        self._typeout_module = None
        return dataclasses.replace(opts, receive_wal_tuples=False)

    def _emit(self, line: str) -> None:
        self._out((line, self._fields))

    def _set(self, txn, lsn, op, **kw):
        self._fields = {"commit_lsn": txn.final_lsn if txn is not None else None, "lsn": lsn,
                        "xid": txn.xid if txn is not None else None,
                        "commit_time": txn.xact_time if txn is not None and txn.xact_time else None,
                        "op": op, **kw}

    def begin(self, txn):
        self._set(txn, txn.first_lsn, "BEGIN")
        super().begin(txn)

    def begin_prepare(self, txn):
        self._set(txn, txn.first_lsn, "BEGIN")
        super().begin_prepare(txn)

    def commit(self, txn, commit_lsn):
        self._set(txn, commit_lsn, "COMMIT")
        super().commit(txn, commit_lsn)

    def prepare(self, txn, prepare_lsn):
        self._set(txn, prepare_lsn, "PREPARE")
        super().prepare(txn, prepare_lsn)

    def commit_prepared(self, txn, commit_lsn):
        self._set(txn, commit_lsn, "COMMIT PREPARED")
        super().commit_prepared(txn, commit_lsn)

    def rollback_prepared(self, txn, prepare_end_lsn, prepare_time):
        self._set(txn, txn.final_lsn, "ROLLBACK PREPARED")
        super().rollback_prepared(txn, prepare_end_lsn, prepare_time)

    def uncommitted(self, txn):
        self._set(txn, 0, "UNCOMMITTED")
        super().uncommitted(txn)

    def _values(self, catalog, rel, values):
        if values is None:
            return None
        from ..output import UNCHANGED_TOAST

        ctx = catalog.output_context()
        out = []
        for att, v in zip(rel.attributes, values):
            if att.attisdropped:
                continue
            text = None if v is None else ("unchanged-toast-datum" if v is UNCHANGED_TOAST
                                           else ctx.output(att.atttypid, v))
            out.append({"name": att.attname, "type": att.type_name, "value": text})
        return out

    def change(self, txn, lsn, catalog, relation, action, new, old):
        # The BEGIN that skip-empty-xacts prints late is its own row
        if self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, lsn, action, schema=relation.nspname, table=relation.relname, relid=relation.oid,
                  new=self._values(catalog, relation, new), old=self._values(catalog, relation, old))
        super().change(txn, lsn, catalog, relation, action, new, old)

    def truncate(self, txn, lsn, catalog, relations, restart_seqs, cascade):
        if self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, lsn, "TRUNCATE", schema=", ".join(r.nspname for r in relations),
                  table=", ".join(r.relname for r in relations))
        super().truncate(txn, lsn, catalog, relations, restart_seqs, cascade)

    def message(self, txn, message_lsn, transactional, prefix, content):
        if transactional and self.major >= 17 and self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, message_lsn, "MESSAGE", message_prefix=prefix, message_content=bytes(content),
                  transactional=bool(transactional))
        super().message(txn, message_lsn, transactional, prefix, content)


class RowSink:
    """A range's rows, in output order (``decode_rows``' writer)."""

    def __init__(self):
        self.rows: list = []
        self.lines = 0
        self.event = 0  # set by decode_rows: the output position of the event being decoded
        self._seq = (None, 0)

    def write(self, item) -> None:
        line, fields = item
        row = dict(fields)
        event, seq = self._seq
        seq = seq + 1 if event == self.event else 0
        self._seq = (self.event, seq)
        row["position"] = self.event
        row["seq"] = seq
        row["line"] = line.encode("utf-8", "surrogateescape")
        self.rows.append(row)
        self.lines += 1

    def close(self) -> None:
        pass


def _row_tuple(r: dict):
    import datetime

    ts = r.get("commit_time")
    when = (datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=ts)
            if ts else None)
    return (r["position"], r["seq"], r.get("commit_lsn"), r.get("lsn"), r.get("xid"), when, r.get("op"), r.get("schema"),
            r.get("table"), r.get("relid"), r.get("new"), r.get("old"), r.get("message_prefix"),
            r.get("message_content"), r.get("transactional"), r["line"])


def _bool(value, default=False) -> bool:
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "on", "yes")


def commit_lsn_bounds(filters) -> tuple:
    """(lowest, highest) commit LSN that ``filters`` (ANDed Spark filters) let through; None: unbounded."""
    from pyspark.sql.datasource import (EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan,
                                        LessThanOrEqual)

    lo = hi = None
    for f in filters:
        if getattr(f, "attribute", None) != ("commit_lsn",):
            continue
        if isinstance(f, In):
            values = [v for v in f.value if isinstance(v, int)]
            if not values:
                continue
            flo, fhi = min(values), max(values)
        elif not isinstance(getattr(f, "value", None), int):
            continue
        elif isinstance(f, EqualTo):
            flo = fhi = f.value
        elif isinstance(f, GreaterThan):
            flo, fhi = f.value + 1, None
        elif isinstance(f, GreaterThanOrEqual):
            flo, fhi = f.value, None
        elif isinstance(f, LessThan):
            flo, fhi = None, f.value - 1
        elif isinstance(f, LessThanOrEqual):
            flo, fhi = None, f.value
        else:
            continue
        if flo is not None:
            lo = flo if lo is None else max(lo, flo)
        if fhi is not None:
            hi = fhi if hi is None else min(hi, fhi)
    return lo, hi


def _event_commit_lsn(ev):
    """The commit_lsn column of every row an event of the plan makes (RowPlugin._set)."""
    txn = ev[1] if ev[0] == "replay" else (ev[2][0] if ev[2] else None)
    return getattr(txn, "final_lsn", None)


def plan_partitions(options: dict, bounds: tuple = (None, None)) -> list:
    """Planning (in the planner process): phase 1 for the driver and the driver's pass; one packed
    partition per output range.  ``bounds``: the commit LSNs filters let through (``commit_lsn_bounds``).

    Pruning by them is sound because decoding is causal: a transaction's rows depend only on the
    WAL up to its commit record, so segments after the highest commit LSN are not read (unless
    ``includeUncommitted``: what is still open depends on where reading stops), and the events
    outside the bounds are not decoded; Spark still applies the filters to what is left."""
    from ..catalog import Catalog
    from ..errors import UsageError
    from ..wal.xlogreader import parse_lsn
    from . import plan as _plan
    from . import tasks
    from .job import LocalExecutor, _segments_per_run, plan_scan
    from ..output.base import CatalogView
    from ..logical.startpoint import reading_start
    from ..wal.segments import discover

    opts = {k.lower(): v for k, v in options.items()}
    if "catalog" not in opts:
        raise UsageError('the pgwal source needs .option("catalog", FILE): a snapshot written by "waldecode catalog"')
    catalog = Catalog.load(opts["catalog"])
    for k, v in opts.items():
        if k.startswith("set."):
            catalog.settings[options_key(options, k)[4:]] = v
    paths = [p for p in opts.get("paths", opts.get("path", "")).split(",") if p]
    from .hadoopfs import is_uri

    foreign = [p for p in paths if is_uri(p) and not p.startswith("file://")]
    if foreign:
        raise UsageError(f"the pgwal source reads local paths and file:// URIs (it plans outside the JVM), "
                         f"not {foreign[0]}: use 'waldecode spark decode' for Hadoop file systems")
    segments = discover([p[7:] if p.startswith("file://") else p for p in paths],
                        int(opts["timeline"]) if opts.get("timeline") else None)
    plugin_options = {name: opts[name] for name in _TD_OPTIONS if name in opts}
    start_lsn = parse_lsn(opts["startlsn"]) if opts.get("startlsn") else None
    restart_lsn = parse_lsn(opts["restartlsn"]) if opts.get("restartlsn") else None
    end_lsn = parse_lsn(opts["endlsn"]) if opts.get("endlsn") else None
    probe = RowPlugin(lambda item: None)
    probe.startup(dict(plugin_options), CatalogView(catalog))
    filtered = frozenset(o for o in range(1 << 16) if probe.filter_by_origin(o))
    start_plan, read_from = reading_start(segments, start_lsn, restart_lsn)
    seg_size = segments.seg_size
    first = (read_from if read_from is not None else segments.first_segno * seg_size) // seg_size
    last = segments.last_segno if end_lsn is None else min(segments.last_segno, (end_lsn - 1) // seg_size)
    nranges = int(opts.get("ranges", 4))
    per_run = _segments_per_run(segments, first, last, nranges, int(opts["segmentsperpartition"])
                                if opts.get("segmentsperpartition") else None)
    lo, hi = bounds
    include_uncommitted = _bool(opts.get("includeuncommitted"))
    last_segno = hi // seg_size if hi is not None and not include_uncommitted else None
    try:
        scan = plan_scan(segments, read_from, end_lsn, per_run, catalog.database_oid, filtered, last_segno)
    except Error as e:
        # The reader refuses the range before its first record: the decoder still finishes (and warns)
        scan, refused = None, e
    executor = LocalExecutor(keep_blobs=False)
    nodes = _plan.tracked_relfilenodes(catalog)
    while True:
        items = executor.control(scan, nodes) if scan is not None else iter([(0, ("error", refused))])
        p = _plan.run_driver_pass(items, catalog, RowPlugin(lambda item: None),
                                  plugin_options=plugin_options, start_plan=start_plan, read_from=read_from,
                                  start_lsn=start_lsn, end_lsn=end_lsn, two_phase=_bool(opts.get("twophase")),
                                  include_uncommitted=include_uncommitted, segments=segments,
                                  nranges=nranges, nodes=nodes)
        if p.nodes <= nodes:
            break
        nodes = nodes | p.nodes
    if p.error is not None:
        raise surfaced(p.error, p.result.warnings)
    ctx = tasks.Phase2(catalog, RowPlugin, plugin_options, p.timeline, p.cutoff)
    shared = tasks.pack((scan, ctx))
    parts = []
    keep = [lo is None and hi is None or _within(_event_commit_lsn(ev), lo, hi) for ev in p.events]
    for rng in range(p.nranges):
        members = {x: m for x, m in p.members.items() if m[2] == rng and keep[m[0]]}
        orders = [o for o in range(len(p.events)) if p.range_of[o] == rng and keep[o]]
        if not orders:
            continue
        parts.append(tasks.pack((rng, members, list(tasks.event_chunks(p.events, p.range_of, orders)))))
    return [shared, parts]


def _within(lsn, lo, hi) -> bool:
    return lsn is not None and (lo is None or lsn >= lo) and (hi is None or lsn <= hi)


def options_key(options: dict, lower: str) -> str:
    """The option's name as given (settings names are case-sensitive)."""
    for k in options:
        if k.lower() == lower:
            return k
    return lower


def read_partition(shared: bytes, part: bytes):
    """The rows of one output range (in the executor)."""
    from . import tasks
    from .job import phase2_rows, scan_blobs

    scan, ctx = tasks.unpack(shared)
    rng, members, chunks = tasks.unpack(part)
    rows = phase2_rows(scan_blobs(scan, members), members, ctx.cutoff, chunks)
    sink = RowSink()
    summary = tasks.decode_rows(iter(rows), ctx, lambda _rng: sink)
    info = summary.get(rng)
    if info is not None and info["error"] is not None:
        raise info["error"]
    for r in sink.rows:
        yield _row_tuple(r)


try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # waldecode without its spark extra: the module still imports
    DataSource = DataSourceReader = InputPartition = object


def rebuild(kind: str, state: dict):
    """A reader or partition from its pickled state (``_Pickled``)."""
    cls = {"reader": PgWalReader, "filtering": PgWalFilteringReader, "partition": PgWalPartition}[kind]
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _rebuilder():
    """``pyspark_waldecode.rebuild`` when that module is installed (it keeps a worker's working
    directory from shadowing the installed package: see its docstring), else ``rebuild``."""
    try:
        import pyspark_waldecode
    except ImportError:
        return rebuild
    return pyspark_waldecode.rebuild


class _Pickled:
    """Pickled by kind and state, rebuilt through ``_rebuilder()``: a worker unpickling it imports
    the top-level ``pyspark_waldecode`` before anything of waldecode."""

    _kind = ""

    def __reduce__(self):
        return _rebuilder(), (self._kind, dict(self.__dict__))


class PgWalPartition(_Pickled, InputPartition):
    """One output range: the plan shared by all partitions, and this range's part of it."""

    _kind = "partition"

    def __init__(self, shared: bytes, part: bytes):
        self.shared = shared
        self.part = part


class PgWalReader(_Pickled, DataSourceReader):
    """The reader Spark plans with when filters are not pushed to Python data sources."""

    _kind = "reader"

    def __init__(self, options):
        self.options = options
        self.bounds = (None, None)

    def partitions(self):
        try:
            shared, parts = plan_partitions(dict(self.options), self.bounds)
        except SurfacedError:
            raise
        except Error as e:
            raise surfaced(e) from None
        return [PgWalPartition(shared, part) for part in parts] or [PgWalPartition(shared, b"")]

    def read(self, partition):
        if not partition.part:
            return iter(())
        return _surfacing(read_partition(partition.shared, partition.part))


class PgWalFilteringReader(PgWalReader):
    """The reader Spark hands filters to (``spark.sql.python.filterPushdown.enabled=true``).  Spark
    refuses a reader that defines ``pushFilters`` when that setting is off, so that it never ignores
    one silently; ``PgWalDataSource.reader`` gives the plain one to the worker that plans without them."""

    _kind = "filtering"

    def pushFilters(self, filters):
        """Filters on commit_lsn narrow what is read (``plan_partitions``); Spark applies every filter
        still (they are all returned), so pruning never has to be exact, only sound."""
        filters = list(filters)
        self.bounds = commit_lsn_bounds(filters)
        return filters


# pyspark/sql/worker/plan_data_source_read.py: the worker that plans a read when Spark does not push
# filters (with spark.sql.python.filterPushdown.enabled it refuses a reader defining pushFilters, so
# that none is ignored silently); with the setting on, data_source_pushdown_filters.py plans instead
_PLANNING_WORKER = "plan_data_source_read"


def _planning_without_pushdown() -> bool:
    """Whether ``reader()`` is called by the worker that plans reads without pushing filters: that
    one gets the reader without ``pushFilters``; every other caller (the pushdown worker, a direct
    call) the reader that prunes by them."""
    frame = sys._getframe(1)
    while frame is not None:
        spec = frame.f_globals.get("__spec__")
        names = (frame.f_globals.get("__name__") or "", getattr(spec, "name", "") or "",
                 os.path.basename(frame.f_code.co_filename))
        if any(n.rsplit(".", 1)[-1].removesuffix(".py") == _PLANNING_WORKER for n in names):
            return True
        frame = frame.f_back
    return False


# A waldecode error raised in a Python worker reaches the driver as the text of a Spark exception:
# carried in it whole, so that ``spark decode --parquet`` prints decode's line and exits with its status
_SURFACED = re.compile(r"waldecode-error:([A-Za-z0-9+/=]+):end")


class SurfacedError(Error):
    """A waldecode error on its way from a Python worker to the driver, inside Spark's exception text."""


def surfaced(e: Error, warnings=()) -> SurfacedError:
    """``e`` and the warnings decode would have printed before it, as an exception Spark passes on."""
    from . import tasks

    blob = base64.b64encode(tasks.pack((e, list(warnings)))).decode("ascii")
    return SurfacedError(f"{e} (waldecode-error:{blob}:end)")


def _surfacing(rows):
    try:
        yield from rows
    except SurfacedError:
        raise
    except Error as e:
        raise surfaced(e) from None


def error_in(exc: BaseException) -> tuple:
    """(the waldecode error a Spark exception carries (``surfaced``), its warnings); (None, [])."""
    from . import tasks

    m = _SURFACED.search(str(exc))
    return tasks.unpack(base64.b64decode(m.group(1))) if m else (None, [])


class PgWalDataSource(DataSource):
    """``format("pgwal")``: decoded changes of PostgreSQL WAL (see ``waldecode.spark.datasource``)."""

    @classmethod
    def name(cls):
        return "pgwal"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return (PgWalReader if _planning_without_pushdown() else PgWalFilteringReader)(self.options)
