"""Command line: ``inspect`` (pg_waldump's output), ``decode`` (logical decoding), ``catalog``.

Errors are one line on stderr and a non-zero exit; ``--traceback`` shows the
Python traceback instead, for debugging.  LSNs are written ``X/X`` as PostgreSQL
writes them.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from . import argtypes, progress
from .errors import CatalogError, Error, OutputPluginError, UsageError, format_lsn
from .output import PLUGINS, plugin_class
from .wal.xlogreader import XLogReader, parse_lsn

EXIT_OK = 0
EXIT_CORRUPT = 1  # bad input, or what it holds cannot be decoded
EXIT_USAGE = 2  # arguments, catalog snapshot or plugin options that do not fit

_USAGE_ERRORS = (UsageError, CatalogError, OutputPluginError)

def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="waldecode", description="Decode PostgreSQL WAL offline.")
    p.add_argument("--traceback", action="store_true", help="show the Python traceback on errors")
    p.add_argument("--version", action=_VersionAction, help="print the version, the PostgreSQL versions whose WAL "
                                                           "it reads and the implementation of the hot path")
    sub = p.add_subparsers(dest="command", required=True)

    ins = sub.add_parser("inspect", help="print WAL records as pg_waldump does",
                         description="Print one line per WAL record in pg_waldump's format, or its --stats table.")
    ins.add_argument("paths", nargs="+", metavar="PATH",
                     help="WAL segment files or directories (pg_wal, an archive); .partial, .gz, .lz4, .zst accepted")
    start = ins.add_mutually_exclusive_group()
    start.add_argument("-s", "--start-lsn", type=argtypes.lsn, help="start at the first record at or after this LSN")
    start.add_argument("--start-time", metavar="TIME",
                       help="start at the first commit record whose time is at or after TIME (ISO 8601 or "
                            "PostgreSQL's timestamptz text; UTC without an offset)")
    end = ins.add_mutually_exclusive_group()
    end.add_argument("-e", "--end-lsn", type=argtypes.lsn, help="stop before the first record that ends after this LSN")
    end.add_argument("--end-time", metavar="TIME",
                     help="stop before the first commit or abort record whose time is after TIME, as "
                          "recovery_target_time does (UTC without an offset)")
    # pg_waldump's -z/--stats[=record]: the value only in the "=" form, so "--stats FILE" takes no value
    ins.add_argument("-z", "--stats", action="store_const", const="record",
                     help="print pg_waldump's statistics instead of records: per record type (the default, "
                          "as pg_waldump --stats=record) or per resource manager (--stats=rmgr)")
    ins.add_argument("--stats=", dest="stats_kind", choices=("record", "rmgr"), help=argparse.SUPPRESS)
    ins.add_argument("-b", "--bkp-details", action="store_true", help="print details of the block references")
    ins.add_argument("-r", "--rmgr", action="append", help="only records of this resource manager (repeatable)")
    ins.add_argument("-x", "--xid", type=int, help="only records of this transaction id")
    ins.add_argument("-n", "--limit", type=int, help="print at most this many records")
    ins.add_argument("-t", "--timeline", type=int, help="read this timeline when the input holds several")
    ins.add_argument("--no-crc-check", dest="verify_crc", action="store_false",
                     help="do not verify record CRCs (for looking at damaged WAL)")
    ins.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    argtypes.add_input_options(ins)
    ins.set_defaults(func=cmd_inspect)

    dec = sub.add_parser("decode", help="decode WAL into row changes, as a logical slot would",
                         description="Decode WAL offline into the text an output plugin prints (test_decoding).")
    dec.add_argument("paths", nargs="+", metavar="PATH", help="WAL segment files or directories")
    dec.add_argument("--catalog", metavar="FILE|DIR",
                     help="catalog snapshot written by 'waldecode catalog' (relations, types, settings), or a "
                          "directory of them, or a pgBackRest repository or barman server (its backups): the "
                          "latest taken at or before the reading start is used; not needed when --slot resumes")
    dec.add_argument("--format", default="test_decoding", choices=tuple(PLUGINS),
                     help="output plugin (sql: statements that redo the transactions, see --undo)")
    dec.add_argument("--undo", action="store_true",
                     help="with --format sql: the inverse statements, newest first, where the WAL holds the "
                          "old values (REPLICA IDENTITY FULL); what cannot be undone is listed")
    dec.add_argument("-o", "--option", dest="options", action="append", default=[], metavar="NAME[=VALUE]",
                     help="output plugin option, as pg_recvlogical -o passes it (repeatable)")
    dec.add_argument("--parquet", metavar="DIR",
                     help="write the changes as Parquet files in DIR (new or empty), partitioned by table, "
                          "instead of text (docs/jsonl-parquet.md)")
    start = dec.add_mutually_exclusive_group()
    start.add_argument("-s", "--start-lsn", type=argtypes.lsn,
                       help="decode what a logical slot confirmed up to this LSN (its confirmed_flush_lsn, "
                            "pg_recvlogical --startpos) decodes: every transaction committing at or after it, "
                            "whole, reading back through the input as far as needed; default: what a slot "
                            "created at the input's first record decodes")
    start.add_argument("--start-time", metavar="TIME",
                       help="as --start-lsn at the first commit whose time is at or after TIME (ISO 8601 or "
                            "PostgreSQL's timestamptz text; without an offset in the snapshot's TimeZone)")
    dec.add_argument("--restart-lsn", type=argtypes.lsn,
                     help="with --start-lsn: the slot's restart_lsn; reading begins there, consistent from "
                          "there on as the server's slot is")
    end = dec.add_mutually_exclusive_group()
    end.add_argument("-e", "--end-lsn", type=argtypes.lsn, help="stop before the first record that ends after this LSN")
    end.add_argument("--end-time", metavar="TIME",
                     help="every transaction committing at or before TIME: stop before the first commit or abort "
                          "whose time is after it, as recovery_target_time does")
    dec.add_argument("--two-phase", action="store_true",
                     help="decode prepared transactions at PREPARE, as a slot created with two_phase")
    dec.add_argument("--spill-dir", help="directory for .spill files (default: a temporary directory)")
    dec.add_argument("--spill-threshold", type=argtypes.positive_int, default=4096, metavar="N",
                     help="spill a transaction to disk past this many changes in memory (default 4096)")
    dec.add_argument("--memory-budget", type=argtypes.positive_int, default=64 * 1024 * 1024, metavar="BYTES",
                     help="spill the largest transaction when all buffered changes exceed this (default 64 MiB)")
    dec.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                     help="override a setting output depends on (TimeZone, DateStyle, IntervalStyle, "
                          "extra_float_digits, bytea_output, lc_monetary)")
    dec.add_argument("--include-uncommitted", action="store_true",
                     help="after the committed ones, print the changes of transactions still open at the end "
                          "of the WAL read, each ended by an 'UNCOMMITTED <xid>' line")
    dec.add_argument("--output", metavar="FILE", help="write to this file instead of standard output")
    dec.add_argument("--slot", metavar="FILE",
                     help="an offline replication slot: created when absent, else decoding resumes where it "
                          "stopped and --output is continued (needs --output)")
    dec.add_argument("--slot-interval", type=float, default=5.0, metavar="SECONDS",
                     help="with --slot: update the slot file at most this often (default 5 s; always at the end)")
    dec.add_argument("-t", "--timeline", type=int, help="read this timeline when the input holds several")
    dec.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    add_diagnostics_options(dec)
    argtypes.add_input_options(dec)
    dec.set_defaults(func=cmd_decode)

    cat = sub.add_parser("catalog", help="write a catalog snapshot for decode",
                         description="Write the catalog snapshot 'waldecode decode' needs, from a live server "
                                     "(--dsn), from a stopped cluster's data directory or a base backup "
                                     "(--datadir), or from a backup a pgBackRest repository or barman keeps "
                                     "(--backup).")
    src = cat.add_mutually_exclusive_group(required=True)
    src.add_argument("--dsn", help="libpq connection string of the database to decode")
    src.add_argument("--datadir", metavar="PGDATA", help="data directory of a stopped cluster, or a base backup "
                                                          "(a barman backup directory too, tar archives included)")
    src.add_argument("--backup", metavar="PATH",
                     help="a pgBackRest repository (its root, backup/<stanza>, or one set) or a barman server or "
                          "backup directory: the catalog is read from one backup's files (default: the latest)")

    def before_arg(text: str):
        from .catalog.backups import before_arg

        return before_arg(text)

    cat.add_argument("--backup-set", metavar="LABEL", help="with --backup: the backup to read, by its label")
    cat.add_argument("--before", metavar="LSN|TIME", type=before_arg,
                     help="with --backup: the latest backup whose stop LSN (its consistency point) is at or before "
                          "LSN, or that stopped at or before TIME (ISO 8601; UTC unless it gives an offset)")
    cat.add_argument("--database", help="with --datadir or --backup: the database to decode (default: the only "
                                        "user database)")
    cat.add_argument("--pages", choices=("auto", "get_raw_page", "pg_read_binary_file", "none"),
                     help="with --dsn: how the catalogs' pages are read (default auto: pageinspect's get_raw_page "
                          "if installed and permitted, else the relation files after a CHECKPOINT); none: a snapshot "
                          "without them (no CHECKPOINT)")
    cat.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the JSON snapshot")
    # --stanza, and how to reach a repository in object storage (--backup s3://bucket/repo)
    argtypes.add_input_options(cat)
    cat.set_defaults(func=cmd_catalog)

    for group in _command_groups(command):
        group(sub)
    return p


def version_text() -> str:
    """``waldecode --version``: the installed package's version, the majors of
    ``MAJOR_BY_XLOG_PAGE_MAGIC`` (the WAL page formats recognised) and the active implementation."""
    from importlib.metadata import PackageNotFoundError, version

    from . import _impl
    from .wal.xlogpage import XLOG_PAGE_MAGIC_BY_MAJOR

    try:
        v = version("waldecode")
    except PackageNotFoundError:  # run from a checkout that is not installed
        v = "(not installed)"
    majors = sorted(XLOG_PAGE_MAGIC_BY_MAJOR)
    return (f"waldecode {v} (reads WAL of PostgreSQL {majors[0]} to {majors[-1]}; hot path: {_impl.IMPL}, "
            f"available: {', '.join(_impl.available())})")


class _VersionAction(argparse.Action):
    """``--version``: computed when asked, so that every other start skips the package metadata."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def _bench_command(sub) -> None:
    from .bench import add_arguments as add_bench_arguments

    ben = sub.add_parser("bench", help="time waldecode against pg_waldump and PostgreSQL's own decoding",
                         description="Build workloads on throw-away PostgreSQL 15 clusters and time, on the same "
                                     "WAL, pg_waldump, the server's decoding and waldecode; check the outputs match.")
    add_bench_arguments(ben)
    ben.set_defaults(func=cmd_bench)


def _spark_commands(sub) -> None:
    from .spark.cli import add_arguments

    add_arguments(sub)


def _pgoutput_dump_command(sub) -> None:
    from .output.pgoutput_dump import add_arguments

    add_arguments(sub)


def _forensics_commands(sub) -> None:
    from .forensics.cli import add_apply_arguments, add_arguments

    add_arguments(sub)
    add_apply_arguments(sub)


# The commands whose arguments live in modules of their own, which import what they need (bench,
# Spark, psycopg...): only the group of the command given is imported, so that "inspect" or
# "decode" does not pay for the others' imports at every start.
_COMMAND_GROUPS = {
    "bench": _bench_command,
    "spark": _spark_commands,
    "pgoutput-dump": _pgoutput_dump_command,
    "timelines": _forensics_commands,
    "diverge": _forensics_commands,
    "apply": _forensics_commands,
}
_OWN_COMMANDS = ("inspect", "decode", "catalog")


def _command_groups(command: str | None) -> list:
    """The argument builders to run for ``command``: all of them unless it is known (for --help,
    and for argparse's list of choices on a misspelt command)."""
    if command in _OWN_COMMANDS:
        return []
    if command in _COMMAND_GROUPS:
        return [_COMMAND_GROUPS[command]]
    return list(dict.fromkeys(_COMMAND_GROUPS.values()))


def _command_of(argv: list) -> str | None:
    """The command named in ``argv``: the first argument that is not an option (the top level
    has only flags that take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def fit_catalog(catalog, segments, settings: list, source) -> None:
    """Apply ``--set NAME=VALUE`` overrides to the snapshot, and refuse one of another major version."""
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set expects NAME=VALUE, not {item!r}")
        catalog.settings[name] = value
    from .logical.session import version_mismatch  # the decoder's modules: not loaded for --help or inspect

    mismatch = version_mismatch(segments, catalog, source)
    if mismatch:
        raise UsageError(mismatch)


def require_pgoutput_options(fmt: str, options: dict, major: int | None = None) -> None:
    """``--format pgoutput`` without what a subscriber sends: name the -o options needed (the server,
    which takes a missing proto_version for 0, would answer "client sent proto_version=0")."""
    if fmt != "pgoutput":
        return
    missing = [f"-o {name}" for name in ("proto_version", "publication_names") if name not in options]
    if missing:
        from .output.pgoutput import max_proto_version

        proto = max_proto_version(major) if major is not None else 1
        raise UsageError(f"--format pgoutput needs {' and '.join(missing)}, the options a subscriber sends: e.g. "
                         f"-o proto_version={proto} -o publication_names=PUB[,PUB...]")


def plugin_options(items) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        out[name] = value if sep else None
    return out


def _report_stop(reader: XLogReader, prog: str = "waldecode", quiet: bool = False) -> int:
    """Say why reading stopped; non-zero when WAL was damaged rather than ended."""
    return _report_stop_of(reader.stop, reader.end_lsn, prog, quiet)


def _report_stop_of(stop, end_lsn: int | None, prog: str = "waldecode", quiet: bool = False) -> int:
    """The status of a stop, said on stderr: an error line (1), or the normal end of WAL (0), a line
    ``quiet`` leaves out."""
    if stop is None or stop.kind == "limit":
        return EXIT_OK
    where = f" in {stop.path}" if stop.path else ""
    if end_lsn is not None and stop.lsn < end_lsn:
        print(f"{prog}: error: WAL ended at {format_lsn(stop.lsn)}{where} before the requested end "
              f"{format_lsn(end_lsn)}: {stop.reason}", file=sys.stderr)
        return EXIT_CORRUPT
    if stop.kind == "invalid":
        print(f"{prog}: error: invalid WAL record at {format_lsn(stop.lsn)}{where}: {stop.reason}; "
              "reading stopped there", file=sys.stderr)
        return EXIT_CORRUPT
    if not quiet:
        print(f"{prog}: end of WAL at {format_lsn(stop.lsn)}{where}: {stop.reason}", file=sys.stderr)
    return EXIT_OK


def cmd_inspect(args) -> int:
    from . import rmgr, waldump

    from .wal.segments import discover

    start_lsn, end_lsn = args.start_lsn, args.end_lsn
    segments = discover(args.paths, args.timeline, argtypes.input_options(args))
    if args.start_time is not None or args.end_time is not None:
        from datetime import timezone

        from .logical.targets import resolve_times

        bounds = resolve_times(segments, args.start_time, args.end_time, timezone.utc, start_lsn=start_lsn,
                               verify_crc=args.verify_crc, what="inspect")
        _print_notes(bounds.notes)
        start_lsn = bounds.start_lsn
        end_lsn = bounds.end_lsn if args.end_time is not None else end_lsn
    # as pg_waldump: the records up to a missing segment are printed, then the error
    reader = XLogReader(args.paths, start_lsn, end_lsn, timeline=args.timeline,
                        verify_crc=args.verify_crc, segments=segments, read_to_gap=True)
    wanted_rmgrs = None
    if args.rmgr:
        wanted_rmgrs = {rmgr.rmid_by_name(name) for name in args.rmgr}
    tracker = progress.track(reader, quiet=args.quiet, streams_stdout=not args.stats)
    out = sys.stdout.buffer
    try:
        shown = waldump.inspect(reader, out.write, stats=args.stats, bkp_details=args.bkp_details,
                                rmids=wanted_rmgrs, xid=args.xid, limit=args.limit, tracker=tracker)
    finally:
        out.flush()
    if args.limit is not None and shown >= args.limit:
        return EXIT_OK
    if waldump.read_failed(reader.stop):
        # pg_waldump exits 1 where a page lies past the end of a file cut short ("could not read from
        # file"); decode takes it as the end of WAL (a segment still being copied, a slot run resumes)
        stop = reader.stop
        print(f"waldecode: error: WAL file {stop.path} is cut short: reading stopped at {format_lsn(stop.lsn)}: "
              f"{stop.reason}", file=sys.stderr)
        return EXIT_CORRUPT
    return _report_stop(reader, quiet=args.quiet)


def cmd_decode(args) -> int:
    from .catalog.choose import check_snapshot, open_catalog_source
    from .logical.session import decode_wal
    from .logical.startpoint import reading_start
    from .wal.segments import discover

    if args.restart_lsn is not None and args.start_lsn is None and args.start_time is None:
        raise UsageError("--restart-lsn goes with --start-lsn (the slot's confirmed_flush_lsn)")
    if args.parquet:
        parquet_conflicts(args)
    segments = discover(args.paths, args.timeline, argtypes.input_options(args))
    options = plugin_options(args.options)
    require_pgoutput_options(args.format, options, segments.major)
    if args.undo:
        if args.format != "sql":
            raise UsageError("--undo goes with --format sql")
        options["undo"] = None
    slot_state = None
    if args.slot:
        slot_state = _open_slot(args, segments, options)
    source = None
    if slot_state is None:
        if not args.catalog:
            raise UsageError("--catalog FILE is needed (a snapshot written by 'waldecode catalog')")
        source = open_catalog_source(args.catalog, segments, getattr(args, "stanza", None),
                                     argtypes.input_options(args))
    start_lsn, end_lsn = args.start_lsn, args.end_lsn
    if args.start_time is not None or args.end_time is not None:
        start_lsn, end_lsn = time_bounds(args, segments, source.time_zone if source else
                                         slot_state.catalog.settings.get("TimeZone", "UTC"))
    if slot_state is not None:
        catalog = slot_state.catalog
        # As a server slot: an earlier start position is ignored, a later one is taken
        start_lsn = max(slot_state.confirmed_lsn, start_lsn or 0)
        restart_lsn = slot_state.restart_lsn
    else:
        restart_lsn = args.restart_lsn
    start_plan = reading_start(segments, start_lsn, restart_lsn)
    if slot_state is None:
        catalog = source.for_start(reading_from(start_plan, segments), say=_say)
    fit_catalog(catalog, segments, args.settings, catalog.source or args.catalog)
    # Usage errors before the WAL is read for the check below: options the plugin refuses, a --parquet
    # directory that is not empty (one that does not exist is made later, so that a refusal leaves none)
    from .output.base import CatalogView

    if args.parquet:
        from .output.parquet import ParquetOutput, prepare_directory

        if os.path.exists(args.parquet):
            prepare_directory(args.parquet)
        probe = ParquetOutput(directory=args.parquet)
    else:
        probe = plugin_class(args.format)(lambda line: None)
    probe.startup(dict(options), CatalogView(catalog))
    # Before the slot file and the output exist: a snapshot of another cluster, or of later than the start
    check_snapshot(catalog, segments, start_plan[1], start_lsn, say=_say)
    from .forensics.cli import decode_start_warnings

    for w in decode_start_warnings(args.paths, segments, start_lsn, argtypes.input_options(args)):
        print(f"waldecode: warning: {w}", file=sys.stderr)
    keeper = None
    spill_dir = args.spill_dir
    if args.slot:
        from .logical.slot import SlotKeeper, SlotState

        if args.include_uncommitted:
            raise UsageError("--include-uncommitted does not go with --slot: a slot prints committed "
                             "transactions only")
        new = slot_state is None
        if new:
            slot_state = SlotState(segments.sysid, segments.tli, segments.major, args.format, options,
                                   args.two_phase, 0, start_lsn or 0, 0, catalog)
        out = _LazyOutput(args.output, keep_bytes=None if new else slot_state.output_bytes)
        keeper = SlotKeeper(args.slot, slot_state, out, interval=args.slot_interval, new=new)
        if not new and not args.quiet:
            _say(f"slot {args.slot} resumed at {format_lsn(slot_state.confirmed_lsn)} (confirmed), restart "
                 f"{format_lsn(slot_state.restart_lsn)}, output continued after {slot_state.output_bytes} bytes")
        if spill_dir is None:
            # A fixed place, emptied at every start: a killed run's spill files do not pile up
            spill_dir = _fresh_dir(args.slot + ".spill")
    else:
        out = _LazyOutput(args.output)
    if args.parquet:
        from .output.parquet import ParquetOutput, prepare_directory

        prepare_directory(args.parquet)
        plugin = ParquetOutput(directory=args.parquet)
    else:
        plugin = plugin_class(args.format)(output=out.writer)
    _settle_gc()

    def track(reader):
        # The progress line (on a terminal) counts the changes written
        tracker = progress.track(reader, quiet=args.quiet, streams_stdout=not (args.output or args.parquet),
                                 unit="changes")
        tracker.count_changes(lambda: plugin.changes_written)
        return tracker

    warn = warning_printer(args)
    try:
        result = decode_wal(segments, catalog, plugin, plugin_options=options, start_lsn=start_lsn,
                            restart_lsn=restart_lsn,
                            end_lsn=end_lsn, two_phase=slot_state.two_phase if slot_state else args.two_phase,
                            spill_dir=spill_dir, spill_threshold=args.spill_threshold,
                            memory_budget=args.memory_budget, include_uncommitted=args.include_uncommitted,
                            on_warning=warn, observer=keeper, track=track, start_plan=start_plan)
    except BaseException:
        # An input error leaves no partial output behind: a slot's output is cut back to what the slot
        # file confirms (as the next run would), a new file is removed
        out.discard(None if keeper is None else keeper.confirmed_output())
        raise
    out.close()
    if args.parquet:
        from .output.parquet import unify_dataset

        unify_dataset(args.parquet)  # one schema per table, whatever DDL the range holds
    status = report_decode_result(result, segments, start_lsn, quiet=args.quiet, report=args.report)
    return max(status, report_problems(list(getattr(plugin, "problems", ())), args.undo))


def report_problems(problems: list, undo: bool) -> int:
    """``--format sql`` (decode, diverge): what could not be redone or undone (each a comment at its
    place in the output) makes the output incomplete: each listed, then one error line, status 1."""
    if not problems:
        return EXIT_OK
    for problem in problems:
        print(f"waldecode: {problem}", file=sys.stderr)
    print(f"waldecode: error: {len(problems)} change(s) listed above could not be {'undone' if undo else 'redone'}: "
          "the output leaves them out (a comment stands at each one's place)", file=sys.stderr)
    return EXIT_CORRUPT


def time_bounds(args, segments, snapshot_zone) -> tuple:
    """(start LSN, end LSN) of ``--start-time``/``--end-time`` (``decode``, ``spark decode``), or of the LSN
    options; a time without an offset is read in the snapshot's TimeZone (``--set TimeZone=`` overrides it).
    ``snapshot_zone``: that TimeZone, or a function giving it (asked only when a time has no offset: a backup
    repository refuses, its snapshot is chosen by the start); times with offsets are shown in UTC then."""
    from .logical.targets import needs_zone, resolve_times, zone_named

    name = None
    for item in args.settings:
        key, sep, value = item.partition("=")
        if sep and key == "TimeZone":
            name = value
    if name is None:
        if not callable(snapshot_zone):
            name = snapshot_zone
        elif any(needs_zone(t) for t in (args.start_time, args.end_time) if t is not None):
            name = snapshot_zone()
        else:
            name = "UTC"
    zone = zone_named(name, "the snapshot's TimeZone")
    bounds = resolve_times(segments, args.start_time, args.end_time, zone, start_lsn=args.start_lsn)
    _print_notes(bounds.notes)
    return bounds.start_lsn, bounds.end_lsn if args.end_time is not None else args.end_lsn


def reading_from(start_plan: tuple, segments) -> int:
    """Where reading begins, for choosing the snapshot: ``reading_start``'s, or the input's first segment."""
    return start_plan[1] if start_plan[1] is not None else segments.first_segno * segments.seg_size


def _say(line: str) -> None:
    print(f"waldecode: {line}", file=sys.stderr)


def _print_notes(notes) -> None:
    for note in notes:
        print(f"waldecode: note: {note}", file=sys.stderr)


def parquet_conflicts(args) -> None:
    """``--parquet DIR`` is the output (decode and spark decode): no text output goes with it."""
    if args.output or getattr(args, "slot", None) or args.format != "test_decoding":
        raise UsageError("--parquet DIR is the output: it does not go with --output, --slot or --format")


def add_diagnostics_options(parser) -> None:
    """``-v`` and ``--report``: how much of the warnings and notes a decoding run prints or writes."""
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every warning and note as it happens (default: the first of each cause, "
                             "then one summary line per cause)")
    parser.add_argument("--report", metavar="FILE",
                        help="write every warning and note as JSON (cause, count, whether the output lacks "
                             "something, examples with LSN, transaction, relation)")


def warning_printer(args):
    """``on_warning`` for a decoding run: the first occurrence of each cause (every one with ``-v``),
    as ``warning:`` when the output lacks what it names, else ``note:`` (left out under ``-q``)."""
    from .logical.diagnostics import Diagnostic

    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    seen = set()

    def warn(message) -> None:
        d = Diagnostic.of(message)
        if not verbose and d.cause in seen:
            return
        seen.add(d.cause)
        if d.lacks:
            print(f"waldecode: warning: {d}", file=sys.stderr)
        elif not quiet:
            print(f"waldecode: note: {d}", file=sys.stderr)

    return warn


def report_diagnostics(result, quiet: bool = False, report: str | None = None, complete: bool = True) -> bool:
    """The summary of a decoding run's warnings and notes on stderr, the one line that says what to do
    first, then one line per cause (capped); ``report``: all of them as JSON.  True when the output
    lacks something because of them (exit status 1).  ``complete``: nothing else is missing from the output."""
    from .logical.diagnostics import Diagnostics

    decoder = result.decoder
    diags = decoder.diagnostics if decoder is not None else None
    if diags is None or diags.total != len(result.warnings):
        # warnings that came back from elsewhere too (Spark's tasks): the changes were decoded out of
        # the decoder's sight, so no note could be checked against them: each counts as a failure
        diags = Diagnostics()
        for w in result.warnings:
            d = diags.add(w)[0]
            if not d.lacks:
                diags.escalate(d, "not checked against the changes decoded (Spark's tasks decoded them)")
    if report:
        try:
            with open(report, "w", encoding="utf-8") as f:
                f.write(diags.to_json())
        except OSError as e:
            raise UsageError(f"cannot write the report {report}: {e.strerror}") from None
    if not diags.total:
        return False
    lacking = diags.lacking
    more = "; -v prints every occurrence" + ("" if report else ", --report FILE writes them all as JSON")
    if lacking:
        count = sum(c.count for c in lacking)
        unmapped = [c for c in lacking if c.key.startswith(("could not map filenumber", "could not open relation"))]
        advice = ("decode with a catalog snapshot that knows these relations: one taken at or before the reading "
                  "start and after they were created or rewritten ('waldecode catalog --datadir' of a base backup "
                  "taken then, or --catalog DIR holding several)" if unmapped else
                  "the causes below name what could not be decoded")
        print(f"waldecode: error: the output lacks what {count} warning(s) of {len(lacking)} cause(s) name: "
              f"{advice}{more}", file=sys.stderr)
    elif not quiet:
        count = sum(c.count for c in diags.notes)
        print(f"waldecode: note: {count} note(s) of {len(diags.notes)} cause(s); no change decoded after them "
              f"depends on them" + (": the output is complete" if complete else "") + more, file=sys.stderr)
    if lacking or not quiet:
        for line in diags.summary():
            print(f"waldecode:   {line}", file=sys.stderr)
    return bool(lacking)


def report_decode_result(result, segments, start_lsn, quiet: bool = False, report: str | None = None) -> int:
    """Say on stderr what a decoding run left out or could not do (``decode`` and ``spark decode``);
    the exit status.  ``quiet`` leaves out the line of a normal end of WAL and the notes; ``report``:
    write the warnings and notes there as JSON (``report_diagnostics``)."""
    from .logical.session import missing_start_message

    if result.consistent_lsn is None:
        # Without a consistent point nothing was decoded: say what became of each transaction seen
        open_xids = {t.xid for t in result.open_transactions}
        for nd in result.ended_early:
            if nd not in result.not_decoded and nd.xid not in open_xids:
                print(f"waldecode: {nd.describe()}", file=sys.stderr)
    for t in result.open_transactions:
        print(f"waldecode: transaction {t.xid} is still open at the end of the WAL read "
              f"(first LSN {format_lsn(t.first_lsn)}, {t.nchanges} changes"
              + (f", prepared as {t.gid!r}" if t.prepared else "") + ")", file=sys.stderr)
    status = _report_stop_of(result.stop, result.end_lsn, quiet=quiet)
    if result.not_decoded:
        for nd in result.not_decoded[:_MAX_LISTED]:
            print(f"waldecode: error: {nd.describe()}", file=sys.stderr)
        if len(result.not_decoded) > _MAX_LISTED:
            print(f"waldecode: error: ... and {len(result.not_decoded) - _MAX_LISTED} more", file=sys.stderr)
        why = (missing_start_message(result.plan, segments.name(segments.first_segno))
               if result.plan is not None and not result.plan.reaches else "")
        print(f"waldecode: error: {len(result.not_decoded)} transaction(s) committed at or after "
              f"{format_lsn(start_lsn)} are missing from the output" + (f": {why}" if why else ""),
              file=sys.stderr)
        report_diagnostics(result, quiet, report, complete=False)
        return EXIT_CORRUPT
    if report_diagnostics(result, quiet, report):
        # The output is complete but for what the warnings name: never let that pass as success
        return EXIT_CORRUPT
    return status


_MAX_LISTED = 50


def _settle_gc() -> None:
    """Before the record loop: what is loaded by now (the catalog and its history, modules) is
    left out of garbage collection, and collections come less often.  Decoding makes millions
    of short-lived tuples (records, changes) and hardly any cycles; with the defaults the
    collector took about a tenth of a decode's CPU time."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


class _LazyOutput:
    """The output file, created at the first block of lines (or at the end), so that an input error comes alone.

    ``keep_bytes``: continue an existing file after its first ``keep_bytes`` bytes (what a slot
    confirmed), cutting off whatever a killed run wrote past them.
    """

    def __init__(self, path: str | None, keep_bytes: int | None = None):
        self.path = path
        self.keep_bytes = keep_bytes
        from .output.base import OutputWriter

        # the plugin writes here; blocks of lines reach the file
        self.writer = OutputWriter(self._write_block)
        self.f = None if path else sys.stdout.buffer
        if path and keep_bytes is not None:
            try:
                self.f = open(path, "r+b")
            except FileNotFoundError:
                raise UsageError(f"the slot confirmed {keep_bytes} bytes of {path}, which does not exist: "
                                 "restore it, or start over with a new slot file") from None
            size = os.fstat(self.f.fileno()).st_size
            if size < keep_bytes:
                raise UsageError(f"the slot confirmed {keep_bytes} bytes of {path}, but it holds only {size}: "
                                 "it is not the output this slot wrote")
            self.f.truncate(keep_bytes)
            self.f.seek(keep_bytes)

    def _open(self):
        if self.f is None:
            self.f = open(self.path, "wb")
        return self.f

    def _write_block(self, data: bytes) -> None:
        (self.f or self._open()).write(data)

    def flush_and_sync(self) -> int:
        """Make everything written durable; the number of bytes the file holds."""
        self.writer.flush()
        f = self.f or self._open()
        f.flush()
        os.fsync(f.fileno())
        return f.tell()

    def close(self, create: bool = True) -> None:
        self.writer.flush()
        if self.path is None:
            self.f.flush()
        elif self.f is not None or create:
            (self.f or self._open()).close()

    def discard(self, keep_bytes: int | None = None) -> None:
        """After an error: the file cut back to its first ``keep_bytes`` bytes, or removed when None
        (standard output cannot be taken back)."""
        if self.path is None:
            self.close()
        elif keep_bytes is not None:
            f = self.f or open(self.path, "r+b")
            f.truncate(keep_bytes)
            f.close()
        elif self.f is not None:
            self.f.close()
            os.unlink(self.path)


def _fresh_dir(path: str) -> str:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _open_slot(args, segments, options: dict):
    """The slot file's state when it exists (checked against this input and run), else None."""
    from .logical.slot import SlotState

    if not args.output:
        raise UsageError("--slot needs --output FILE: the slot records how much of it is confirmed")
    if not os.path.exists(args.slot):
        return None
    state = SlotState.load(args.slot)
    state.check_matches(args.slot, segments.sysid, segments.tli, args.format, options,
                        state.two_phase if not args.two_phase else True)
    return state


def cmd_catalog(args) -> int:
    """Take a snapshot from a live server, a data directory or a backup and write its JSON.  A snapshot
    that cannot be taken is one error line (exit 1); warnings (a server may be running on the data
    directory, it was not shut down cleanly, wal_level is not logical, catalog pages are missing) are
    one line each, and the snapshot is still written."""
    prog = "waldecode"

    def warn(message: str) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    if not args.backup and (args.stanza or args.backup_set or args.before):
        raise UsageError("--stanza, --backup-set and --before go with --backup")
    try:
        backup = None
        if args.backup:
            from .catalog.backups import find_backup

            before_lsn, before_time = args.before or (None, None)
            backup = find_backup(args.backup, args.stanza, args.backup_set, before_lsn, before_time,
                                 argtypes.input_options(args))
        elif args.datadir:
            from .catalog.backups import datadir_backup

            backup = datadir_backup(args.datadir)
        if backup is not None:
            if args.pages:
                raise UsageError("--pages goes with --dsn; from a backup the pages are read from its files")
            from .catalog.datadir import snapshot_from_datadir

            print(f"{prog}: catalog from {backup.describe()}", file=sys.stderr)
            try:
                catalog = snapshot_from_datadir(backup.source, args.database, warn=warn)
            finally:
                backup.close()
            where = f"the last start of the cluster in {backup.tool} backup {backup.label}"
        elif args.datadir:
            if args.pages:
                raise UsageError("--pages goes with --dsn; with --datadir the pages are read from the files")
            from .catalog.datadir import snapshot_from_datadir

            catalog = snapshot_from_datadir(args.datadir, args.database, warn=warn)
            where = f"the last start of {args.datadir}"
        else:
            if args.database:
                raise UsageError("--database goes with --datadir; with --dsn, name the database in the DSN")
            from .catalog.dsn import redact_dsn, snapshot_from_dsn

            catalog = snapshot_from_dsn(args.dsn, args.pages or "auto")
            where = redact_dsn(args.dsn)
    except CatalogError as e:
        if args.traceback:
            raise
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    text = catalog.to_json()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"{prog}: error: cannot write catalog snapshot {args.output}: {e.strerror}", file=sys.stderr)
            return 1
    if args.output != "-":
        print(f"{prog}: {catalog_summary(catalog, args.output)}", file=sys.stderr)
    if catalog.catalog_pages_note:
        warn(catalog.catalog_pages_note)
    wal_level = catalog.settings.get("wal_level")
    if wal_level != "logical":
        warn(f"wal_level is {wal_level!r} on {where}, not 'logical': its WAL does not carry what logical decoding "
             "needs")
    return 0


def catalog_summary(catalog, path: str) -> str:
    """``catalog``'s one line on what it wrote: the file, the database, the cluster, the version, the LSN."""
    cluster = f" of cluster {catalog.system_identifier}" if catalog.system_identifier is not None else ""
    return (f"wrote {path}: database {catalog.database}{cluster}, PostgreSQL {catalog.major}, "
            f"taken at {format_lsn(catalog.lsn)}")


def cmd_bench(args) -> int:
    from .bench import main_bench

    return main_bench(args)


def parse_args(argv: list) -> argparse.Namespace:
    """The command line as ``main`` reads it (argparse exits with status 2 on a usage error); the
    documents' examples are checked through it (tests/differential/test_docs_commands.py)."""
    parser = _build_parser(_command_of(argv))
    # "--stats=rmgr" goes to the hidden "--stats=" option ("--stats= rmgr" to argparse)
    argv = [x for a in argv for x in (("--stats=", a[8:]) if a.startswith("--stats=") else (a,))]
    args = parser.parse_args(argv)
    if getattr(args, "stats_kind", None):
        args.stats = args.stats_kind
    return args


def main(argv=None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except Error as e:
        if args.traceback:
            raise
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, _USAGE_ERRORS) else EXIT_CORRUPT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
