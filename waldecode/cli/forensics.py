"""The forensic commands: ``waldecode timelines``, ``waldecode diverge`` and ``waldecode apply``.

Owns their arguments and printing; the work is ``timelines`` and ``diverge``'s.  ``diverge``
exits 0 when everything after the switch point was decoded, 1 when something could not be
(named on stderr and in the report) or, with ``--format sql``, when the script lists a change it
could not redo (as ``decode --format sql``), 2 for usage errors.
"""

from __future__ import annotations

import sys

from .. import argtypes
from ..errors import UsageError
from ..logical.request import DecodeRequest
from ..wal.segments import discover, scan
from . import options as opt
from .decode import fit_catalog
from .options import plugin_options
from .report import report_decode_result, report_problems, warning_printer

EXIT_OK = 0
EXIT_INCOMPLETE = 1


def add_arguments(sub) -> None:
    tl = sub.add_parser("timelines", help="the timelines in an archive: history files, switch points, segments",
                        description="List the timelines of the WAL among PATHs: history files and switch points, "
                                    "the segments (full or .partial) of each timeline, where each timeline's WAL "
                                    "ends, and which timeline holds WAL past a switch point (what an old primary "
                                    "wrote after a failover).")
    tl.add_argument("paths", nargs="+", metavar="PATH", help="WAL segment files, history files or directories")
    tl.add_argument("-s", "--start-lsn", type=argtypes.lsn,
                    help="warn when a decode started here would lie past a switch point")
    argtypes.add_input_options(tl)
    tl.set_defaults(func=cmd_timelines)

    dv = sub.add_parser("diverge", help="what the old primary committed after a failover, and what to do about it",
                        description="Decode the old timeline past the switch point (from the history file, or "
                                    "--switch-lsn), starting by itself at a consistent point before it, and list "
                                    "what the new timeline lacks: the transactions committed after the switch "
                                    "point, prepared transactions whose fate differs (with the statement to run), "
                                    "transactions open at the crash, the DDL; with --new or --dsn, the rows "
                                    "changed on both sides.")
    dv.add_argument("--old", nargs="+", required=True, metavar="PATH",
                    help="the old primary's WAL (its pg_wal, or the archive): segments or directories")
    dv.add_argument("--new", nargs="+", default=[], metavar="PATH",
                    help="the new timeline's WAL and history file (the new primary's pg_wal or the archive)")
    opt.add_catalog(dv, required=True, also=" (for diverge, one taken after any table rewrite before the reading "
                                            "start: the base backup the standby was made from, say)")
    dv.add_argument("--dsn", help="libpq connection string of the new primary (read-only queries): its prepared "
                                  "transactions, and the current rows, when --new is not given")
    dv.add_argument("--switch-lsn", type=argtypes.lsn, help="the switch point, when no history file is at hand")
    dv.add_argument("--old-timeline", type=int, help="the old timeline (default: the parent in the newest "
                                                     "history file)")
    dv.add_argument("--format", default="report", choices=("report", "json", "sql"),
                    help="report (text), json (versioned: see the README), or sql: the lost transactions as "
                         "statements for the new primary (guarded: a row changed on both sides draws a WARNING)")
    dv.add_argument("--changes", action="store_true",
                    help="print each transaction's changes as the output plugin prints them")
    opt.add_plugin(dv, "--plugin", help="output plugin the changes are printed with (as decode --format)")
    opt.add_plugin_options(dv)
    opt.add_settings(dv)
    opt.add_spill_dir(dv)
    opt.add_output(dv)
    argtypes.add_input_options(dv)
    dv.set_defaults(func=cmd_diverge)


def cmd_timelines(args) -> int:
    # lazy: --help builds this group's arguments too; the forensics libraries load for the command run
    from ..forensics.timelines import format_timelines, timelines

    found = scan(args.paths, argtypes.input_options(args))
    tls = timelines(args.paths, found)
    text = format_timelines(tls, found.seg_size, args.start_lsn)
    sys.stdout.write(text)
    return EXIT_OK


def cmd_diverge(args) -> int:
    # lazy: the decoder (0.2 s), for the command run only (see cmd_timelines)
    from ..catalog.choose import check_cluster, open_catalog_source
    from ..forensics.diverge import diverge
    from ..forensics.newprimary import NewPrimary
    from ..forensics.report import report, sql_problems, to_json, to_sql

    options = plugin_options(args.options)
    if args.format == "sql":
        # the lost transactions as the sql plugin writes them, guarded against rows changed on both sides
        if args.plugin not in ("test_decoding", "sql"):
            raise UsageError("diverge --format sql writes the sql plugin's statements: leave out --plugin")
        args.plugin, args.changes = "sql", True
        options.setdefault("conflict", "guard")
    if args.plugin == "sql" and "undo" in options:
        # its statements would undo on the new primary what it never had (the old timeline's lost work)
        raise UsageError("-o undo does not go with diverge: its SQL re-applies the lost transactions on the new "
                         "primary")
    # the WAL's version: from any one timeline's segments (the old one is chosen later, from the history)
    inputs = argtypes.input_options(args)
    old_segments = discover(args.old, args.old_timeline or max(scan(args.old, inputs).by_tli), inputs)
    source = open_catalog_source(args.catalog, old_segments, getattr(args, "stanza", None), inputs)

    def fit(catalog):
        catalog = fit_catalog(catalog, old_segments, args.settings, catalog.source or args.catalog)
        # another cluster's snapshot, before anything is read (one of later than the reading start is
        # refused by decode_wal before it decodes: catalog.choose.check_snapshot)
        check_cluster(catalog, old_segments)
        return catalog

    # a file is checked now; a directory's snapshot once diverge knows the reading start
    catalog = fit(source.catalog) if source.catalog is not None else source

    warn = warning_printer(args)  # the first warning of each cause as it happens; the report counts them
    newprimary = NewPrimary(args.dsn) if args.dsn else None
    try:
        d = diverge(args.old, catalog, new_paths=args.new, newprimary=newprimary, switch_lsn=args.switch_lsn,
                    old_timeline=args.old_timeline, plugin=args.plugin,
                    request=DecodeRequest(options, spill_dir=args.spill_dir),
                    with_changes=args.changes, warn=warn, inputs=inputs,
                    note=lambda m: print(f"waldecode: {m}", file=sys.stderr), fit=fit)
    finally:
        if newprimary is not None:
            newprimary.close()
    text = to_json(d) if args.format == "json" else to_sql(d) if args.format == "sql" else report(d)
    if args.output:
        with open(args.output, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    else:
        sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
    for e in d.errors:
        print(f"waldecode: error: {e}", file=sys.stderr)
    status = EXIT_OK if d.complete else EXIT_INCOMPLETE
    if args.format == "sql":
        # as decode --format sql: a change the script lists but could not redo means status 1
        status = max(status, report_problems(sql_problems(d), undo=False))
    return status


# -- the command ---------------------------------------------------------------------------------------


def add_apply_arguments(sub) -> None:
    ap = sub.add_parser("apply", help="apply decoded transactions to a live server, as a subscriber would",
                        description="Decode WAL and apply each committed transaction to TARGET in commit order, "
                                    "one target transaction each, with a logical-replication subscriber's rules; "
                                    "progress is kept in a replication origin on the target, so a rerun resumes "
                                    "after the last transaction applied.")
    opt.add_paths(ap)
    ap.add_argument("--dsn", required=True, help="libpq connection string of the target database (superuser: "
                                                 "replication origins)")
    ap.add_argument("--catalog", required=True, metavar="FILE", help="catalog snapshot of the source database")
    ap.add_argument("--origin", default="waldecode", help="replication origin on the target (default: waldecode)")
    opt.add_start(ap, restart=False, times=False)
    opt.add_end(ap, times=False)
    opt.add_timeline(ap, flags=("--timeline",))
    opt.add_settings(ap)
    ap.add_argument("--dry-run", action="store_true", help="print what would be applied; change nothing")
    argtypes.add_input_options(ap)
    ap.set_defaults(func=cmd_apply)


def cmd_apply(args) -> int:
    # lazy: the decoder and psycopg (0.5 s), for the command run only (see cmd_timelines)
    import psycopg

    from ..catalog import Catalog
    from ..logical.session import decode_wal
    from ..forensics.apply import ApplyError, ApplyOutput

    segments = discover(args.paths, args.timeline, argtypes.input_options(args))
    catalog = Catalog.load(args.catalog)
    catalog = fit_catalog(catalog, segments, args.settings, args.catalog)

    def log(message: str) -> None:
        print(f"waldecode: {message}", file=sys.stderr)

    try:
        conn = psycopg.connect(args.dsn, autocommit=False)
    except psycopg.Error as e:
        raise ApplyError(f"could not connect to the target: {str(e).strip()}") from None
    with conn:
        plugin = ApplyOutput(conn, args.origin, write=lambda line: print(line), dry_run=args.dry_run, log=log)
        result = decode_wal(segments, catalog, plugin,
                            DecodeRequest(start_lsn=args.start_lsn, end_lsn=args.end_lsn, timeline=args.timeline),
                            on_warning=lambda m: log(f"warning: {m}"))
    log(f"{plugin.applied} transaction(s) {'would be ' if args.dry_run else ''}applied, "
        f"{plugin.already_applied} applied before (origin {args.origin!r}), "
        f"{plugin.skipped_changes} change(s) skipped (row not on the target)")
    return report_decode_result(result, segments, args.start_lsn)
