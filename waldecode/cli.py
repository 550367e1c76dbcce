"""Command line: ``inspect`` (pg_waldump's output), ``decode`` (logical decoding), ``catalog``.

Errors are one line on stderr and a non-zero exit; ``--traceback`` shows the
Python traceback instead, for debugging.  LSNs are written ``X/X`` as PostgreSQL
writes them.
"""

from __future__ import annotations

import argparse
import sys

from . import progress
from .catalog import CatalogError
from .errors import WALError, format_lsn
from .output import OutputPluginError
from .reorderbuffer import SpillError
from .types import TypeOutputError
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
    ins.add_argument("-z", "--stats", nargs="?", const="record", choices=("record", "rmgr"),
                     help="print pg_waldump's statistics instead of records: per record type (the default, "
                          "as pg_waldump --stats=record) or per resource manager (--stats=rmgr)")
    ins.add_argument("-b", "--bkp-details", action="store_true", help="print details of the block references")
    ins.add_argument("-r", "--rmgr", action="append", help="only records of this resource manager (repeatable)")
    ins.add_argument("-x", "--xid", type=int, help="only records of this transaction id")
    ins.add_argument("-n", "--limit", type=int, help="print at most this many records")
    ins.add_argument("-t", "--timeline", type=int, help="read this timeline when the input holds several")
    ins.add_argument("--no-crc-check", dest="verify_crc", action="store_false",
                     help="do not verify record CRCs (for looking at damaged WAL)")
    ins.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    ins.set_defaults(func=cmd_inspect)

    dec = sub.add_parser("decode", help="decode WAL into row changes, as a logical slot would",
                         description="Decode WAL offline into the text an output plugin prints (test_decoding).")
    dec.add_argument("paths", nargs="+", metavar="PATH", help="WAL segment files or directories")
    dec.add_argument("--catalog", required=True, metavar="FILE",
                     help="catalog snapshot written by 'waldecode catalog' (relations, types, settings)")
    dec.add_argument("--format", default="test_decoding", choices=("test_decoding",), help="output plugin")
    dec.add_argument("-o", "--option", dest="options", action="append", default=[], metavar="NAME[=VALUE]",
                     help="output plugin option, as pg_recvlogical -o passes it (repeatable)")
    dec.add_argument("-s", "--start-lsn", type=_lsn_arg,
                     help="decode what a logical slot created at this LSN would decode")
    dec.add_argument("-e", "--end-lsn", type=_lsn_arg, help="stop before the first record that ends after this LSN")
    dec.add_argument("--two-phase", action="store_true",
                     help="decode prepared transactions at PREPARE, as a slot created with two_phase")
    dec.add_argument("--spill-dir", help="directory for .spill files (default: a temporary directory)")
    dec.add_argument("--spill-threshold", type=_positive_int, default=4096, metavar="N",
                     help="spill a transaction to disk past this many changes in memory (default 4096)")
    dec.add_argument("--memory-budget", type=_positive_int, default=64 * 1024 * 1024, metavar="BYTES",
                     help="spill the largest transaction when all buffered changes exceed this (default 64 MiB)")
    dec.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                     help="override a setting output depends on (TimeZone, DateStyle, IntervalStyle, "
                          "extra_float_digits, bytea_output, lc_monetary)")
    dec.add_argument("--include-uncommitted", action="store_true",
                     help="after the committed ones, print the changes of transactions still open at the end "
                          "of the WAL read, each ended by an 'UNCOMMITTED <xid>' line")
    dec.add_argument("--output", metavar="FILE", help="write to this file instead of standard output")
    dec.add_argument("-t", "--timeline", type=int, help="read this timeline when the input holds several")
    dec.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    dec.set_defaults(func=cmd_decode)

    cat = sub.add_parser("catalog", help="write a catalog snapshot for decode",
                         description="Write the catalog snapshot 'waldecode decode' needs, from a live server "
                                     "(--dsn) or from a stopped cluster's data directory or a base backup "
                                     "(--datadir).")
    src = cat.add_mutually_exclusive_group(required=True)
    src.add_argument("--dsn", help="libpq connection string of the database to decode")
    src.add_argument("--datadir", metavar="PGDATA", help="data directory of a stopped cluster, or a base backup")
    cat.add_argument("--database", help="with --datadir: the database to decode (default: the only user database)")
    cat.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the JSON snapshot")
    cat.set_defaults(func=cmd_catalog)

    from .bench import add_arguments as add_bench_arguments

    ben = sub.add_parser("bench", help="time waldecode against pg_waldump and PostgreSQL's own decoding",
                         description="Build workloads on throw-away PostgreSQL 15 clusters and time, on the same "
                                     "WAL, pg_waldump, the server's decoding and waldecode; check the outputs match.")
    add_bench_arguments(ben)
    ben.set_defaults(func=cmd_bench)
    return p


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {v}")
    return v


def _plugin_options(items) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        out[name] = value if sep else None
    return out


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
    records = progress.track(reader, quiet=args.quiet, streams_stdout=stats is None)
    for rec in records:
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
    records.close()
    if stats is not None:
        out.write(stats.format())
    out.flush()
    if args.limit is not None and shown >= args.limit:
        return EXIT_OK
    return _report_stop(reader)


def cmd_decode(args) -> int:
    from .catalog import Catalog
    from .decode import LogicalDecoder
    from .output.test_decoding import TestDecoding

    catalog = Catalog.load(args.catalog)
    for item in args.settings:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--set expects NAME=VALUE, not {item!r}")
        catalog.settings[name] = value
    reader = XLogReader(args.paths, args.start_lsn, args.end_lsn, timeline=args.timeline)
    if reader.major != catalog.major:
        raise UsageError(f"the WAL was written by PostgreSQL {reader.major} but the catalog snapshot "
                         f"{args.catalog} is from PostgreSQL {catalog.major}")
    out = open(args.output, "wb") if args.output else sys.stdout.buffer

    def write(line: str) -> None:
        out.write(line.encode("utf-8", "surrogateescape"))
        out.write(b"\n")

    records = progress.track(reader, quiet=args.quiet, streams_stdout=not args.output, unit="changes")
    plugin = TestDecoding(catalog, records.counting(write), _plugin_options(args.options))
    decoder = LogicalDecoder(catalog, plugin, two_phase=args.two_phase, spill_dir=args.spill_dir,
                             spill_threshold=args.spill_threshold, memory_budget=args.memory_budget,
                             segment_size=reader.seg_size, include_rewrites=plugin.include_rewrites,
                             on_warning=lambda m: print(f"waldecode: warning: {m}", file=sys.stderr))
    try:
        for rec in records:
            decoder.process(rec)
    finally:
        records.close()  # the progress line goes before anything else is printed
        open_txns = decoder.finish(args.include_uncommitted)
        out.flush()
        if args.output:
            out.close()
    for t in open_txns:
        print(f"waldecode: transaction {t.xid} is still open at the end of the WAL read "
              f"(first LSN {format_lsn(t.first_lsn)}, {t.nchanges} changes"
              + (f", prepared as {t.gid!r}" if t.prepared else "") + ")", file=sys.stderr)
    status = _report_stop(reader)
    if decoder.warnings:
        # The output is complete but for what the warnings name: never let that pass as success
        print(f"waldecode: error: {len(decoder.warnings)} warning(s) above: the output lacks what they name",
              file=sys.stderr)
        return EXIT_CORRUPT
    return status


def cmd_catalog(args) -> int:
    if args.datadir:
        from .catalog_datadir import main_catalog_datadir

        return main_catalog_datadir(args.datadir, args.database, args.output)
    if args.database:
        raise UsageError("--database goes with --datadir; with --dsn, name the database in the DSN")
    from .catalog_dsn import main_catalog

    return main_catalog(args.dsn, args.output)


def cmd_bench(args) -> int:
    from .bench import main_bench

    return main_bench(args)


class UsageError(Exception):
    """Arguments that do not fit together."""


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
    except (TypeOutputError, SpillError) as e:
        if args.traceback:
            raise
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_CORRUPT
    except (UsageError, CatalogError, OutputPluginError) as e:
        if args.traceback:
            raise
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
