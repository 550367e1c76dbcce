"""``waldecode inspect``: WAL records as pg_waldump prints them, or its --stats table."""

from __future__ import annotations

import argparse
import sys

from .. import argtypes, progress
from ..errors import format_lsn
from ..wal.segments import discover
from ..wal.xlogreader import XLogReader
from . import options as opt
from .report import EXIT_CORRUPT, EXIT_OK, _print_notes, _report_stop


def add_parser(sub) -> None:
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
    opt.add_timeline(ins)
    ins.add_argument("--no-crc-check", dest="verify_crc", action="store_false",
                     help="do not verify record CRCs (for looking at damaged WAL)")
    opt.add_quiet(ins)
    argtypes.add_input_options(ins)
    ins.set_defaults(func=cmd_inspect)


def cmd_inspect(args) -> int:
    from .. import rmgr, waldump  # lazy: 12 ms (the rmgr descriptions) that the other commands never need

    start_lsn, end_lsn = args.start_lsn, args.end_lsn
    segments = discover(args.paths, args.timeline, argtypes.input_options(args))
    if args.start_time is not None or args.end_time is not None:
        # lazy: datetime and logical.targets (10 ms), only for --start-time/--end-time
        from datetime import timezone

        from ..logical.targets import resolve_times

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
