"""``waldecode decode``: WAL decoded into what an output plugin prints, as a logical slot would; and what
the other decoding commands take from it (the catalog fitted to the WAL, times turned into LSNs)."""

from __future__ import annotations

import gc
import os
import shutil
import sys

from .. import argtypes, progress
from ..errors import UsageError, format_lsn
from ..logical.request import DecodeRequest, split_options
from ..output import plugin_class
from ..pg.settings import DEFAULT_MEMORY_BUDGET, DEFAULT_SPILL_THRESHOLD
from ..wal.segments import discover
from . import options as opt
from .options import plugin_options, settings_overrides
from .report import _print_notes, _say, report_decode_result, report_problems, warning_printer


def add_parser(sub) -> None:
    dec = sub.add_parser("decode", help="decode WAL into row changes, as a logical slot would",
                         description="Decode WAL offline into the text an output plugin prints (test_decoding).")
    opt.add_decode_options(dec, catalog_also="; not needed when --slot resumes",
                           format_help="output plugin (sql: statements that redo the transactions, see --undo)")
    dec.add_argument("--undo", action="store_true",
                     help="with --format sql: the inverse statements, newest first, where the WAL holds the "
                          "old values (REPLICA IDENTITY FULL); what cannot be undone is listed")
    dec.add_argument("--parquet", metavar="DIR",
                     help="write the changes as Parquet files in DIR (new or empty), partitioned by table, "
                          "instead of text (docs/jsonl-parquet.md)")
    opt.add_spill_dir(dec)
    dec.add_argument("--spill-threshold", type=argtypes.positive_int, default=DEFAULT_SPILL_THRESHOLD, metavar="N",
                     help="spill a transaction to disk past this many changes in memory (default 4096)")
    dec.add_argument("--memory-budget", type=argtypes.positive_int, default=DEFAULT_MEMORY_BUDGET, metavar="BYTES",
                     help="spill the largest transaction when all buffered changes exceed this (default 64 MiB)")
    opt.add_output(dec)
    dec.add_argument("--slot", metavar="FILE",
                     help="an offline replication slot: created when absent, else decoding resumes where it "
                          "stopped and --output is continued (needs --output)")
    dec.add_argument("--slot-interval", type=float, default=5.0, metavar="SECONDS",
                     help="with --slot: update the slot file at most this often (default 5 s; always at the end)")
    dec.add_argument("--backup", metavar="DIR",
                     help="a base backup (with its backup_label) whose pages wal_level=replica WAL is replayed "
                          "onto: reading begins at its start, no checkpoint after it is needed, and pages "
                          "changed with full_page_writes off are known (docs/replica.md)")
    opt.add_quiet(dec)
    dec.set_defaults(func=cmd_decode)


def fit_catalog(catalog, segments, settings: list, source):
    """The snapshot with ``--set NAME=VALUE``'s overrides (a new view of it: the snapshot is left as it
    was), refused when it is of another major version than the WAL."""
    from ..logical.session import version_mismatch  # lazy: the decoder, 0.2 s not loaded for --help or inspect

    catalog = catalog.with_settings(settings_overrides(settings))
    mismatch = version_mismatch(segments, catalog, source)
    if mismatch:
        raise UsageError(mismatch)
    return catalog


def require_pgoutput_options(fmt: str, options: dict, major: int | None = None) -> None:
    """``--format pgoutput`` without what a subscriber sends: name the -o options needed (the server,
    which takes a missing proto_version for 0, would answer "client sent proto_version=0")."""
    if fmt != "pgoutput":
        return
    missing = [f"-o {name}" for name in ("proto_version", "publication_names") if name not in options]
    if missing:
        from ..output.pgoutput import max_proto_version  # lazy: only --format pgoutput, not inspect

        proto = max_proto_version(major) if major is not None else 1
        raise UsageError(f"--format pgoutput needs {' and '.join(missing)}, the options a subscriber sends: e.g. "
                         f"-o proto_version={proto} -o publication_names=PUB[,PUB...]")


def cmd_decode(args) -> int:
    # lazy: the decoder and the catalog choice, 0.2 s that --help, inspect and catalog never need
    from ..catalog.choose import check_snapshot, open_catalog_source
    from ..logical.session import decode_wal, replica_reading
    from ..logical.startpoint import reading_start

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
    # below wal_level=logical, reading begins at a checkpoint's redo point (docs/replica.md)
    start_plan = reading_start(segments, start_lsn, restart_lsn)
    if args.backup:
        if args.slot:
            raise UsageError("--backup does not go with --slot (a slot's restart point is a checkpoint's redo point)")
        from ..catalog.datadir.files import data_files  # lazy: only with a base backup
        from ..logical.session import backup_reading
        from ..redo.backup_label import read_backup_label

        backup = data_files(args.backup)
        start_plan, replica_start = backup_reading(segments, start_plan, start_lsn, end_lsn, read_backup_label(backup),
                                                   backup.root)
    else:
        backup = None
        start_plan, replica_start = replica_reading(segments, start_plan, start_lsn, end_lsn)
    if slot_state is None:
        catalog = source.for_start(reading_from(start_plan, segments), say=_say)
    catalog = fit_catalog(catalog, segments, args.settings, catalog.source or args.catalog)
    # Usage errors before the WAL is read for the check below: options the plugin refuses, a --parquet
    # directory that is not empty (one that does not exist is made later, so that a refusal leaves none)
    from ..output.base import CatalogView  # lazy: as the decoder above

    if args.parquet:
        from ..output.parquet import ParquetOutput, prepare_directory  # lazy: only --parquet

        if os.path.exists(args.parquet):
            prepare_directory(args.parquet)
        probe = ParquetOutput(directory=args.parquet)
    else:
        probe = plugin_class(args.format)(lambda line: None)
    probe.startup(split_options(options)[0], CatalogView(catalog))  # waldecode's own -o checked here too
    # Before the slot file and the output exist: a snapshot of another cluster, or of later than the start
    check_snapshot(catalog, segments, start_plan[1], start_lsn, say=_say)
    from ..forensics.timelines import decode_start_warnings  # lazy: 3 ms that inspect does not need

    for w in decode_start_warnings(args.paths, segments, start_lsn, argtypes.input_options(args)):
        print(f"waldecode: warning: {w}", file=sys.stderr)
    keeper = None
    spill_dir = args.spill_dir
    if args.slot:
        from ..logical.slot import SlotKeeper, SlotState  # lazy: only --slot

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
        from ..output.parquet import ParquetOutput, prepare_directory  # lazy: only --parquet

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

    request = DecodeRequest(options, start_lsn, restart_lsn, end_lsn, args.timeline,
                            slot_state.two_phase if slot_state else args.two_phase, args.include_uncommitted,
                            spill_dir, args.spill_threshold, args.memory_budget)
    warn = warning_printer(args)
    try:
        result = decode_wal(segments, catalog, plugin, request, on_warning=warn, observer=keeper, track=track,
                            start_plan=start_plan, replica_start=replica_start, backup=backup)
    except BaseException:
        # An input error leaves no partial output behind: a slot's output is cut back to what the slot
        # file confirms (as the next run would), a new file is removed
        out.discard(None if keeper is None else keeper.confirmed_output())
        raise
    out.close()
    if args.parquet:
        from ..output.parquet import unify_dataset  # lazy: only --parquet

        unify_dataset(args.parquet)  # one schema per table, whatever DDL the range holds
    status = report_decode_result(result, segments, start_lsn, quiet=args.quiet, report=args.report)
    return max(status, report_problems(list(getattr(plugin, "problems", ())), args.undo))


def time_bounds(args, segments, snapshot_zone) -> tuple:
    """(start LSN, end LSN) of ``--start-time``/``--end-time`` (``decode``, ``spark decode``), or of the LSN
    options; a time without an offset is read in the snapshot's TimeZone (``--set TimeZone=`` overrides it).
    ``snapshot_zone``: that TimeZone, or a function giving it (asked only when a time has no offset: a backup
    repository refuses, its snapshot is chosen by the start); times with offsets are shown in UTC then."""
    from ..logical.targets import needs_zone, resolve_times, zone_named  # lazy: 10 ms, not for inspect

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


def parquet_conflicts(args) -> None:
    """``--parquet DIR`` is the output (decode and spark decode): no text output goes with it."""
    if args.output or getattr(args, "slot", None) or args.format != "test_decoding":
        raise UsageError("--parquet DIR is the output: it does not go with --output, --slot or --format")


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
        from ..output.base import OutputWriter  # lazy: with the catalog and types, 80 ms inspect does not need

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
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _open_slot(args, segments, options: dict):
    """The slot file's state when it exists (checked against this input and run), else None."""
    from ..logical.slot import SlotState  # lazy: only --slot

    if not args.output:
        raise UsageError("--slot needs --output FILE: the slot records how much of it is confirmed")
    if not os.path.exists(args.slot):
        return None
    state = SlotState.load(args.slot)
    state.check_matches(args.slot, segments.sysid, segments.tli, args.format, options,
                        state.two_phase if not args.two_phase else True)
    return state
