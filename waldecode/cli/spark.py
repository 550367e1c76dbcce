"""``waldecode spark decode``: ``decode``'s options and output, run on Spark.

Owns the command line of the Spark path and the Spark session it runs in: the master
(``local[N]``, ``spark://HOST:PORT``, ``yarn``, ``k8s://…``), ``--conf`` settings, the Python
the executors run (this one, unless ``--conf spark.pyspark.python=…`` says otherwise) and
the implementation they must load (``WALDECODE_IMPL``: the driver's, so that executors
without the Cython extension fail loudly instead of running pure Python).  Messages and
exit statuses are ``decode``'s (``cli.report.report_decode_result``); a failure of Spark itself is
one line too, without a Java stack trace.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import sys
import zlib

from .. import _impl, argtypes
from . import options as opt
from .decode import _settle_gc, fit_catalog, parquet_conflicts, reading_from, require_pgoutput_options, time_bounds
from .options import plugin_options
from .report import _say, report_decode_result, warning_printer
from ..spark import classdata
from ..spark.context import PendingContext, active_session, spark_error
from ..errors import Error, SparkJobError, UsageError
from ..logical.request import DecodeRequest
from ..output import plugin_class
from ..wal.segments import discover
from ..wal.storage import has_store

#: below this much WAL one process beats Spark's fixed costs, whatever the cluster (docs/spark-decode.md)
SMALL_INPUT = 128 << 20
#: below this, decode beat local[2] on 2 cores (``_note_size``)
LOCAL_BREAK_EVEN = 3 << 30


def add_arguments(sub) -> None:
    sp = sub.add_parser("spark", help="run waldecode on Spark",
                        description="Fan decoding out over WAL segments with Apache Spark (pip install "
                                    "'waldecode[spark]').")
    spsub = sp.add_subparsers(dest="spark_command", required=True)
    dec = spsub.add_parser("decode", help="decode on Spark: the same output as 'waldecode decode'",
                           description="Decode WAL on Spark into exactly what 'waldecode decode' prints.")
    opt.add_decode_options(dec, catalog_required=True)
    dec.add_argument("--master", default="local[*]",
                     help="Spark master: local[N], spark://HOST:PORT, yarn, k8s://... (default local[*])")
    dec.add_argument("--conf", dest="confs", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark setting (repeatable)")
    out = dec.add_mutually_exclusive_group()
    opt.add_output(out)
    out.add_argument("--parquet", metavar="DIR", help="write the decoded changes as Parquet, partitioned by table")
    dec.add_argument("--segments-per-task", type=argtypes.positive_int, metavar="N",
                     help="segments per phase-1 task (default: 2-4 tasks per core, at least 64 MB each)")
    dec.add_argument("--ranges", type=argtypes.positive_int, metavar="N",
                     help="output ranges decoded in parallel (default: spark.sql.shuffle.partitions when set, "
                          "else four per core)")
    dec.add_argument("--parts-dir", metavar="DIR",
                     help="where executors write the ordered part files (must be visible to them and to this "
                          "process; default: the output's directory, else the temporary directory)")
    dec.add_argument("--timings", metavar="FILE",
                     help="write the run's wall seconds per phase as JSON (context start, phase 1, catalog pass, "
                          "the driver's catalog history, the ranges, the driver's appends; 'waldecode bench "
                          "--spark' reads them)")
    opt.add_quiet(dec, help="no notes on stderr")
    dec.set_defaults(func=cmd_spark_decode)
    prep = spsub.add_parser("prepare", help="write the class-data archive that starts Spark's JVM faster",
                            description="Write a class-data archive of Spark's classes for this Java and this "
                                        "pyspark (in ~/.cache/waldecode): contexts with a local master map it, "
                                        "which starts them about a second sooner. Run it again after upgrading "
                                        "either; a stale archive is not used.")
    prep.add_argument("-q", "--quiet", action="store_true", help="no note on stderr")
    prep.set_defaults(func=cmd_spark_prepare)


def _confs(items) -> dict:
    return opt.key_values(items, "--conf", "KEY=VALUE")


def _take_back(out) -> None:
    """After an error: nothing partial left in FILE (standard output cannot be taken back)."""
    if getattr(out, "path", None) is not None:
        out.rewind()
    else:
        out.close(create=False)


class _LazyBinaryOutput:
    """FILE created at the first byte (or at the end): an input error before any output leaves none.

    Both FILE and standard output take the range path's output as the ranges end, and can be taken back
    when a later range hands the run to the event path (``rewind``), which writes the whole output again:
    FILE is removed; standard output cannot unwrite, so the event path's first bytes, as many as went out,
    are checked against them (a CRC-32 of each) and not written again."""

    def __init__(self, path: str | None):
        self.path = path
        self.f = None if path else sys.stdout.buffer
        self.sent = 0  # bytes written to standard output, and their CRC-32
        self.sent_crc = 0
        self.skip = 0  # after a rewind: bytes of the new output that went out already, and their CRC-32 so far
        self.skip_crc = 0
        self.skipped_crc = 0

    def write(self, data: bytes) -> int:
        if self.f is None:
            self.f = open(self.path, "wb")
        if self.path is not None:
            return self.f.write(data)
        n = len(data)
        if self.skip:
            head = data[:self.skip]
            self.skip_crc = zlib.crc32(head, self.skip_crc)
            self.skip -= len(head)
            data = data[len(head):]
            if not self.skip and self.skip_crc != self.skipped_crc:
                raise SparkJobError("the event path's output differs from what the range path had already written "
                                    "to standard output (use --output FILE, which can be taken back)")
        if data:
            self.sent_crc = zlib.crc32(data, self.sent_crc)
            self.sent += len(data)
            self.f.write(data)
        return n

    @property
    def can_rewind(self) -> bool:
        return True

    def rewind(self) -> None:
        """Back to nothing written (the range path handing a run it began to write to the event path, which
        writes it all): FILE removed, or standard output's bytes so far to be met again, not written again."""
        if self.path is None:
            self.skip, self.skip_crc, self.skipped_crc = self.sent, 0, self.sent_crc
            self.sent = self.sent_crc = 0
            return
        if self.f is not None:
            self.f.close()
            self.f = None
            os.unlink(self.path)

    def append_file(self, path: str) -> None:
        """The bytes of the file at ``path``, copied by the kernel into FILE (a range's part file: hundreds of
        MB); to standard output through ``write``."""
        if self.path is None:
            with open(path, "rb") as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    self.write(block)
            return
        if self.f is None:
            self.f = open(self.path, "wb")
        self.f.flush()
        with open(path, "rb") as src:
            size = os.fstat(src.fileno()).st_size
            offset = 0
            while offset < size:
                try:
                    sent = os.sendfile(self.f.fileno(), src.fileno(), offset, size - offset)
                except OSError as e:
                    if offset or e.errno not in (errno.EINVAL, errno.ENOSYS):
                        raise
                    shutil.copyfileobj(src, self.f, 1 << 20)  # an output sendfile cannot write to
                    return
                if sent == 0:
                    raise OSError(f"sendfile wrote nothing at {offset} of {path}")
                offset += sent

    def close(self, create: bool = True) -> None:
        if self.path is None:
            self.f.flush()
        elif self.f is not None or create:
            (self.f or open(self.path, "wb")).close()


class _NoTextOutput:
    """Where the text goes when Parquet files are the output: nowhere (the Parquet plugin prints none)."""

    def write(self, data: bytes) -> int:
        raise SparkJobError(f"the Parquet output printed {len(data)} bytes of text")

    def close(self, create: bool = True) -> None:
        pass


def _check_impl(seen: set, quiet: bool) -> None:
    """The executors must have run the driver's implementation (--py-files loses Cython: docs/spark-decode.md)."""
    if seen and seen != {_impl.IMPL}:
        raise SparkJobError(f"the executors ran the {', '.join(sorted(seen))} implementation, this process the "
                            f"{_impl.IMPL} one: install waldecode (with its Cython extension) on every node")
    if seen and not quiet:
        print(f"waldecode: note: the executors ran the {_impl.IMPL} implementation", file=sys.stderr)


def cmd_spark_prepare(args) -> int:
    classdata.prepare(quiet=args.quiet)
    return 0


def cmd_spark_decode(args) -> int:
    # --help builds this module's arguments too:
    # lazy: the decoder and the Spark path (catalog.choose, spark.job, executors: 70 ms), this command only
    from ..catalog.choose import check_snapshot, open_catalog_source
    from ..logical.startpoint import reading_start
    from ..spark.executors import SparkExecutor
    from ..spark.hadoopfs import discover_hadoop, is_uri
    from ..spark.job import decode_spark

    def fit(segments):
        """The catalog for the start (a directory's choice said on stderr), checked against the WAL before
        any output, and the start and end LSNs (times resolved)."""
        source = open_catalog_source(args.catalog, segments, getattr(args, "stanza", None),
                                     argtypes.input_options(args))
        start_lsn, end_lsn = args.start_lsn, args.end_lsn
        if args.start_time is not None or args.end_time is not None:
            start_lsn, end_lsn = time_bounds(args, segments, source.time_zone)
        start_plan = reading_start(segments, start_lsn, args.restart_lsn)
        catalog = source.for_start(reading_from(start_plan, segments), say=_say)
        catalog = fit_catalog(catalog, segments, args.settings, catalog.source or args.catalog)
        check_snapshot(catalog, segments, start_plan[1], start_lsn,
                       say=lambda line: print(f"waldecode: {line}", file=sys.stderr))
        return catalog, start_lsn, end_lsn

    if args.restart_lsn is not None and args.start_lsn is None and args.start_time is None:
        raise UsageError("--restart-lsn goes with --start-lsn (the slot's confirmed_flush_lsn)")
    # URIs of a store waldecode reads itself (s3://) are read as local files are; others through Hadoop
    hadoop = any(is_uri(p) and not has_store(p) for p in args.paths)
    if hadoop and args.parquet:
        raise UsageError("--parquet goes with WAL in a local directory (the dataset is written to a directory "
                         "the driver and the executors share): give the WAL as a local directory")
    options = plugin_options(args.options)
    require_pgoutput_options(args.format, options)
    segments = catalog = None
    start_lsn, end_lsn = args.start_lsn, args.end_lsn
    if not hadoop:
        segments = discover(args.paths, args.timeline, argtypes.input_options(args))
        catalog, start_lsn, end_lsn = fit(segments)  # before the Parquet directory is made
        _note_size(segments, args.quiet, args.master)
    plugin = plugin_class(args.format)
    make_plugin = plugin
    if args.parquet:
        from ..output.parquet import ParquetOutput, prepare_directory  # lazy: 50 ms, only --parquet

        parquet_conflicts(args)
        prepare_directory(args.parquet)
        # every range's task writes its own files into the one dataset (a directory the executors share)
        make_plugin = functools.partial(ParquetOutput, directory=os.path.abspath(args.parquet))
    ranges = args.ranges
    if not plugin.ranges_apart and plugin.in_one_range and not args.parquet:
        # its output depends on everything written before (pgoutput: a relation's schema goes out once
        # until the catalog changes): one output range, decoded in order
        if ranges not in (None, 1):
            raise UsageError(f"--format {args.format} decodes as one output range (--ranges 1): what it writes "
                             "depends on what it wrote before")
        ranges = 1
    warn = warning_printer(args)
    confs = _confs(args.confs)
    # the range path needs the context only; the event path and Hadoop inputs make a session on it
    active = active_session()
    # the context starts in a thread while phase 1 reads on the driver (SparkExecutor.spans)
    spark = active if active is not None else PendingContext(args.master, confs)
    own_session = active is None
    out = _LazyBinaryOutput(args.output) if not args.parquet else _NoTextOutput()
    parts_dir = args.parts_dir or (os.path.dirname(os.path.abspath(args.output)) if args.output else None)
    try:
        if hadoop:
            # Listing and the driver's reads go through Spark's Hadoop file systems (hdfs://, s3a://, file://)
            segments = discover_hadoop(spark.get() if own_session else spark, args.paths, args.timeline,
                                       argtypes.input_options(args))
            catalog, start_lsn, end_lsn = fit(segments)
            _note_size(segments, args.quiet, args.master)
        executor = SparkExecutor(spark, ranges)
        _settle_gc()  # the driver's pass makes a long-lived plan of millions of small objects
        try:
            request = DecodeRequest(options, start_lsn, args.restart_lsn, end_lsn, args.timeline,
                                    args.two_phase, args.include_uncommitted)
            result = decode_spark(executor, segments, catalog, make_plugin, out, request,
                                  segments_per_run=args.segments_per_task, parts_dir=parts_dir, on_warning=warn)
        except Error:
            _take_back(out)
            raise
        except Exception as e:
            _take_back(out)
            err = spark_error(e)
            if err is None:
                raise
            raise err from None
        out.close()
        if args.timings:
            # a context already running (an in-process caller's) took no time to start here
            started = {"context": (spark.context_seconds or 0.0) if own_session else 0.0,
                       "warm_up": (spark.warm_seconds or 0.0) if own_session else 0.0}
            _write_timings(args.timings, {**started, **executor.timings}, executor, segments)
        if args.parquet:
            from ..output.parquet import unify_dataset  # lazy: only --parquet

            unify_dataset(args.parquet)  # as decode does: one schema per table
        if executor.fallback is not None and not args.quiet:
            # the range path decodes each range as a slot restarted there; this WAL needs the driver's pass
            print(f"waldecode: note: decoded by the event path (the driver plans every transaction): "
                  f"{executor.fallback}", file=sys.stderr)
        _check_impl(executor.impl_seen, args.quiet)
    finally:
        if own_session:
            spark.stop()
    return report_decode_result(result, segments, start_lsn, quiet=args.quiet, report=args.report)


def _write_timings(path: str, phases: dict, executor, segments) -> None:
    """``--timings FILE``: the phases' wall seconds, the path taken, the cores and the bytes of WAL read."""
    import json  # lazy: 2 ms, only --timings (spark prepare and this group's --help do not load it)

    doc = {"phases": {k: round(v, 3) for k, v in phases.items()}, "method": executor.method,
           "cores": executor.slots, "ranges": getattr(executor, "ranges", 1),
           "wal_bytes": (segments.last_segno - segments.first_segno + 1) * segments.seg_size,
           # the context's start and warm-up ran while phase 1 read these runs on the driver, with this CPU
           "overlapped": ["context", "warm_up"], "phase1_driver_runs": getattr(executor, "driver_runs", 0),
           "phase1_driver_cpu": round(getattr(executor, "driver_cpu", 0.0), 3),
           "phase2_driver_ranges": getattr(executor, "driver_ranges", 0),
           "range_tasks": executor.timings.range_tasks}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def _note_size(segments, quiet: bool, master: str) -> None:
    if quiet:
        return
    size = len(segments.files) * segments.seg_size
    if size < SMALL_INPUT:
        print(f"waldecode: note: {size >> 20} MB of WAL: below about {SMALL_INPUT >> 20} MB a single process "
              "('waldecode decode') is faster than Spark", file=sys.stderr)
    elif master.startswith("local") and size < LOCAL_BREAK_EVEN:
        # Measured (pgbench WAL, 2 cores, the range path, the class-data archive prepared, the driver
        # reading phase 1 and decoding ranges while the context starts, benchmarks/README.md, 2026-11-28):
        # 2.0 GiB decode 7.5 s, local[2] 8.4 s; 3.9 GiB decode 14.4 s, local[2] 13.5 s: even between 2 and
        # 4 GiB (it was 5-8 GiB with a context started before phase 1 and a catalog pass of its own).
        # Spark's fixed costs (JVM, context, the workers' start) are what one process does not pay
        print(f"waldecode: note: {size >> 30} GiB of WAL: on one machine a single process ('waldecode decode') "
              f"is faster than Spark below about {LOCAL_BREAK_EVEN >> 30} GiB", file=sys.stderr)
