"""Command line: ``waldecode inspect`` (pg_waldump's output, offline and from archives).

Errors are one line on stderr and a non-zero exit; ``--traceback`` shows the
Python traceback instead, for debugging.  LSNs are written ``X/X`` as PostgreSQL
writes them.
"""

from __future__ import annotations

import argparse
import sys

from .errors import WALError, format_lsn
from .xlogreader import XLogReader, parse_lsn

EXIT_OK = 0
EXIT_CORRUPT = 1
EXIT_USAGE = 2


def _lsn_arg(text: str) -> int:
    try:
        return parse_lsn(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="waldecode", description="Decode PostgreSQL WAL offline.")
    p.add_argument("--traceback", action="store_true", help="show the Python traceback on errors")
    sub = p.add_subparsers(dest="command", required=True)

    ins = sub.add_parser("inspect", help="print WAL records as pg_waldump does",
                         description="Print one line per WAL record in pg_waldump's format, or its --stats table.")
    ins.add_argument("paths", nargs="+", metavar="PATH",
                     help="WAL segment files or directories (pg_wal, an archive); .partial, .gz, .lz4, .zst accepted")
    ins.add_argument("-s", "--start-lsn", type=_lsn_arg, help="start at the first record at or after this LSN")
    ins.add_argument("-e", "--end-lsn", type=_lsn_arg, help="stop before the first record that ends after this LSN")
    ins.add_argument("-z", "--stats", nargs="?", const="rmgr", choices=("rmgr", "record"),
                     help="print statistics instead of records (per resource manager, or per record type)")
    ins.add_argument("-b", "--bkp-details", action="store_true", help="print details of the block references")
    ins.add_argument("-r", "--rmgr", action="append", help="only records of this resource manager (repeatable)")
    ins.add_argument("-x", "--xid", type=int, help="only records of this transaction id")
    ins.add_argument("-n", "--limit", type=int, help="print at most this many records")
    ins.add_argument("-t", "--timeline", type=int, help="read this timeline when the input holds several")
    ins.add_argument("--no-crc-check", dest="verify_crc", action="store_false",
                     help="do not verify record CRCs (for looking at damaged WAL)")
    ins.set_defaults(func=cmd_inspect)
    return p


def _report_stop(reader: XLogReader, prog: str = "waldecode") -> int:
    """Say why reading stopped; non-zero when WAL was damaged rather than ended."""
    stop = reader.stop
    if stop is None or stop.kind == "limit":
        return EXIT_OK
    where = f" in {stop.path}" if stop.path else ""
    if reader.end_lsn is not None and stop.lsn < reader.end_lsn:
        print(f"{prog}: error: WAL ended at {format_lsn(stop.lsn)}{where} before the requested end "
              f"{format_lsn(reader.end_lsn)}: {stop.reason}", file=sys.stderr)
        return EXIT_CORRUPT
    if stop.kind == "invalid":
        print(f"{prog}: error: invalid WAL record at {format_lsn(stop.lsn)}{where}: {stop.reason}; "
              "reading stopped there", file=sys.stderr)
        return EXIT_CORRUPT
    print(f"{prog}: end of WAL at {format_lsn(stop.lsn)}{where}: {stop.reason}", file=sys.stderr)
    return EXIT_OK


def cmd_inspect(args) -> int:
    from . import rmgr, waldump

    reader = XLogReader(args.paths, args.start_lsn, args.end_lsn, timeline=args.timeline,
                        verify_crc=args.verify_crc)
    major = reader.major
    wanted_rmgrs = None
    if args.rmgr:
        wanted_rmgrs = {rmgr.rmid_by_name(name) for name in args.rmgr}
    out = sys.stdout
    stats = waldump.WaldumpStats(major, per_record=args.stats == "record") if args.stats else None
    fmt = waldump.format_record_bkp_details if args.bkp_details else waldump.format_record
    shown = 0
    for rec in reader:
        if wanted_rmgrs is not None and rec.xl_rmid not in wanted_rmgrs:
            continue
        if args.xid is not None and rec.xl_xid != args.xid:
            continue
        if stats is not None:
            stats.add(rec)
        else:
            out.write(fmt(rec, major))
            out.write("\n")
        shown += 1
        if args.limit is not None and shown >= args.limit:
            break
    if stats is not None:
        out.write(stats.format())
    out.flush()
    if args.limit is not None and shown >= args.limit:
        return EXIT_OK
    return _report_stop(reader)


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except WALError as e:
        if args.traceback:
            raise
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_CORRUPT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
