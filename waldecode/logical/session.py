"""One decoding run: segments in, an output plugin's calls out, and what happened.

Owns the wiring every caller needs — the CLI, the demo, the tests, and later Spark and
forensics: find the segments, plan where reading must begin for the requested start
(``startpoint``), read records (``xlogreader``), decode them (``decode.LogicalDecoder``)
and finish, collecting why reading stopped, the transactions left open, the commits
that could not be decoded and the warnings.  Printing and exit codes belong to the
CLI; this module only reports.  The segment size always comes from the WAL itself.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field

from ..catalog import Catalog
from ..catalog.choose import check_snapshot
from .decode import LogicalDecoder, NotDecoded
from ..errors import DecodeError, UsageError, WALError, format_lsn
from .replica import ReplicaRows, ReplicaStart, scan_start
from .reorderbuffer import OpenTransaction
from .request import DecodeRequest
from .snapbuild import SNAPBUILD_CONSISTENT
from .startpoint import StartPlan, reading_start
from ..wal.segments import SegmentSet, discover
from ..wal.xlogpage import ReadStop
from ..wal.xlogreader import XLogReader


class VersionMismatchError(WALError):
    """The catalog snapshot and the WAL come from different PostgreSQL major versions."""


def version_mismatch(segments, catalog: Catalog, source=None) -> str | None:
    """Why the catalog snapshot (from ``source``, when named) cannot decode the WAL of ``segments``: another
    PostgreSQL major version; None when it is the same (the library raises ``VersionMismatchError`` with it,
    the command line a usage error)."""
    if segments.major == catalog.major:
        return None
    named = f" {source}" if source else ""
    return (f"the WAL was written by {segments.describe_version()} but the catalog snapshot{named} is from "
            f"PostgreSQL {catalog.major}")


@dataclass
class DecodeResult:
    """What a run did besides calling the plugin."""

    plan: StartPlan | None
    read_from: int | None  # the LSN reading began at
    stop: ReadStop | None  # why reading ended
    end_lsn: int | None  # the end asked for
    open_transactions: list[OpenTransaction] = field(default_factory=list)
    not_decoded: list[NotDecoded] = field(default_factory=list)  # commits at/after the start, not decoded
    ended_early: list[NotDecoded] = field(default_factory=list)  # ended before the consistent point
    warnings: list[str] = field(default_factory=list)
    consistent_lsn: int | None = None
    last_end_lsn: int | None = None  # end of the last record read
    replica: ReplicaStart | None = None  # the WAL's wal_level as read before decoding, and a replica read's start
    decoder: LogicalDecoder | None = None  # for inspection (its catalog history, reorder buffer statistics)

    @property
    def complete(self) -> bool:
        """Everything asked for was decoded: no warning that the output lacks something (notes do not
        count: ``diagnostics``), no commit left out."""
        return not self.not_decoded and not any(getattr(w, "lacks", True) for w in self.warnings)


def decode_wal(source, catalog: Catalog, plugin, request: DecodeRequest | None = None, *, on_warning=None,
               observer=None, track=None, start_plan: tuple | None = None, catalog_history=True,
               redo_dir: str | None = None, replica_start: ReplicaStart | None = None, backup=None,
               **fields) -> DecodeResult:
    """Decode ``source`` (paths, or a ``walfile.SegmentSet``) through ``plugin`` as ``request`` (a
    ``request.DecodeRequest``) asks; its fields may be given as keywords instead, or on top of a request
    (they replace the request's): ``decode_wal(paths, catalog, plugin, start_lsn=lsn, two_phase=True)``.

    The request's ``start_lsn`` is a slot's confirmed position: every transaction committing at or after
    it is decoded whole, reading as far back as needed (``startpoint.plan_start``), or
    reported in ``not_decoded`` when the input does not reach back far enough.
    ``restart_lsn``, when the slot's is known, is where reading begins, consistent from
    there on as the server's restored snapshot is.  Without ``start_lsn`` decoding is what
    a slot created at ``restart_lsn`` (default: the input's first record) decodes.
    ``observer`` (e.g. ``slot.SlotKeeper``) is told ``begin(read_from, decoder)``, then
    ``after_record(rec, decoder)`` after each record, and ``finish(end, decoder)`` after
    the last one unless an error ended the run (under Cython ``after_record`` sees the records the
    Python decoder takes, and every 1024th of the others); an observer with a ``framed(records, start)``
    is given every segment's framed records ``(lsn, raw end, bytes)`` before they are decoded (those
    before ``start`` are not decoded), under both implementations.  ``track(reader)`` may wrap the reader
    (the progress line): the ``frames()`` of what it returns are read instead, and it is closed at
    the end.  ``start_plan``: ``startpoint.reading_start``'s (plan, read_from) for these starts, when the
    caller has it already.  ``catalog_history``: ``LogicalDecoder``'s.  Before anything is read, ``choose.check_snapshot`` refuses a snapshot of
    another cluster, or one taken after the reading start with catalog changes in between.

    WAL written at wal_level=replica (told by ``replica.scan_start`` from the records) is read from the redo
    point of the first checkpoint at or after the reading start (``replica_reading``; ``start_plan`` and
    ``replica_start`` are its answer when the caller has it already), its heap pages replayed into a page
    store under ``redo_dir`` (default: a temporary directory under ``spill_dir``, removed at the end), and its
    rows read from them (``replica.ReplicaRows``, docs/replica.md); the catalog followed by the catalog history
    as on logical-level WAL, with the rules of ``replica_ddl`` for what replica level does not log.
    ``backup`` (a base backup's path or ``DataFiles``, ``decode --backup``): below logical, its relation pages
    are loaded into the page store and reading begins at its START WAL LOCATION (``backup_reading``), so that
    a start needs no checkpoint after the backup and pages changed with full_page_writes off are known.
    """
    request = DecodeRequest.given(request, fields)
    start_lsn, restart_lsn, end_lsn = request.start_lsn, request.restart_lsn, request.end_lsn
    segments = source if isinstance(source, SegmentSet) else discover(source, request.timeline)
    mismatch = version_mismatch(segments, catalog)
    if mismatch:
        raise VersionMismatchError(mismatch)
    if start_plan is None:
        start_plan = reading_start(segments, start_lsn, restart_lsn)
    files = label = None
    if backup is not None:
        from ..catalog.datadir.files import data_files  # lazy: only with a base backup
        from ..redo.backup_label import read_backup_label
        files = data_files(backup)
        label = read_backup_label(files)
    if replica_start is None:
        start_plan, replica_start = (replica_reading(segments, start_plan, start_lsn, end_lsn) if label is None else
                                     backup_reading(segments, start_plan, start_lsn, end_lsn, label, files.root))
    plan, read_from = start_plan
    start = replica_start
    replica = store = None
    check_snapshot(catalog, segments, read_from, start_lsn)
    if request.toast_fill and not start.replica:
        raise UsageError(f"-o toast=fill reads unchanged TOAST values from the pages a wal_level=replica read "
                         f"replays, but this WAL was written at wal_level logical ({start.evidence} at "
                         f"{format_lsn(start.evidence_lsn)})")
    if start.replica:
        store = tempfile.TemporaryDirectory(prefix="waldecode-redo-", dir=redo_dir or request.spill_dir)
        replica = ReplicaRows(catalog, segments.major, store.name, start, old_rows_full=request.old_rows_full,
                              toast_fill=request.toast_fill)
        if files is not None:
            from ..redo.md import load_base_backup  # lazy: as above
            database = catalog.database_oid
            load_base_backup(replica.store, files, segments.major, wanted=lambda locator: locator[1] == database)
    reader = XLogReader(segments=segments, start_lsn=read_from, end_lsn=end_lsn)
    decoder = LogicalDecoder(catalog, plugin, two_phase=request.two_phase, spill_dir=request.spill_dir,
                             spill_threshold=request.spill_threshold, memory_budget=request.memory_budget,
                             segment_size=segments.seg_size, plugin_options=request.plugin_options,
                             start_decoding_at=start_lsn or 0,
                             assume_consistent=plan is not None and plan.assume_consistent,
                             on_warning=on_warning, catalog_history=catalog_history, replica=replica,
                             whole_old_rows=request.old_rows_full and replica is None)
    result = DecodeResult(plan, read_from, None, end_lsn, decoder=decoder, replica=start)
    records = reader if track is None else track(reader)
    ended = False  # reading came to its end (else an error is on its way: it alone is reported)
    try:
        after = framed_seen = None
        if observer is not None:
            observer.begin(read_from if read_from is not None else segments.first_segno * segments.seg_size, decoder)
            after_record = observer.after_record
            framed_seen = getattr(observer, "framed", None)

            def after(rec):
                after_record(rec, decoder)
        for path, framed, start in records.frames():
            if framed_seen is not None:
                framed_seen(framed, start)
            decoder.process_framed(path, framed, start, after)
        if observer is not None and not decoder.not_decoded:
            observer.finish(reader.last_end_lsn, decoder)
        ended = True
    finally:
        if records is not reader:
            records.close()  # the progress line goes before anything else is printed
        result.open_transactions = decoder.finish(request.include_uncommitted, hint=start_hint(plan, segments),
                                                  ended=ended)
        result.stop = reader.stop
        result.last_end_lsn = reader.last_end_lsn
        result.not_decoded = decoder.not_decoded
        result.ended_early = list(decoder.finished_early.values())
        result.warnings = decoder.warnings
        if decoder.snapbuild.state == SNAPBUILD_CONSISTENT:
            result.consistent_lsn = decoder.snapbuild.consistent_lsn
        if replica is not None:
            replica.close()
            store.cleanup()
    return result


def replica_reading(segments, start_plan: tuple, start_lsn: int | None, end_lsn: int | None
                    ) -> tuple[tuple, ReplicaStart]:
    """``reading_start``'s (plan, read_from) as the WAL's wal_level asks, and what ``replica.scan_start`` read:
    below logical, reading begins at the redo point of the first checkpoint at or after the planned start
    (the pages are known from there on), or when that is after ``start_lsn``, at the first checkpoint's of
    the input.  The catalog snapshot is chosen and checked for that start."""
    plan, read_from = start_plan
    start = scan_start(segments, read_from, end_lsn)
    if not start.replica:
        return start_plan, start
    if start_lsn is not None and read_from is not None and (start.redo_lsn is None or start.redo_lsn > start_lsn):
        start = scan_start(segments, None, end_lsn)
    if start.redo_lsn is None:
        raise DecodeError(f"the WAL was written with wal_level below logical ({start.evidence} at "
                          f"{format_lsn(start.evidence_lsn)}): decoding it needs the pages from a checkpoint's "
                          "redo point on, but the WAL read holds no checkpoint record after its start",
                          lsn=start.evidence_lsn)
    if start_lsn is not None and start.redo_lsn > start_lsn:
        raise DecodeError(f"the WAL was written with wal_level below logical ({start.evidence}): decoding from "
                          f"{format_lsn(start_lsn)} needs the pages from a checkpoint's redo point before it, but "
                          f"the first checkpoint read has its redo point at {format_lsn(start.redo_lsn)}",
                          lsn=start.redo_lsn)
    return (plan, start.redo_lsn), start


def backup_reading(segments, start_plan: tuple, start_lsn: int | None, end_lsn: int | None, label, where
                   ) -> tuple[tuple, ReplicaStart]:
    """``replica_reading`` with a base backup's pages (``label``: its ``BackupLabel``; ``where``: its path, for
    messages): below logical, reading begins at its START WAL LOCATION, the redo point of the checkpoint the
    backup began with, from where redo makes its pages consistent (each page's first change after it carries an
    image: do_pg_backup_start in xlog.c forces full-page writes until the backup ends), so that a start needs no
    checkpoint after the backup, and pages changed later with full_page_writes off are known.  A start before the backup
    began is an error: its pages are not those of then.  (A plan reading from before it for a later start is
    read from the backup's start instead, as ``replica_reading`` reads from a checkpoint's redo point: a
    transaction the snapshot builder then cannot see whole is reported, never decoded in part.)"""
    plan, read_from = start_plan
    start = scan_start(segments, label.start_lsn, end_lsn)
    if not start.replica:
        return start_plan, start  # logical-level WAL carries its rows: the pages are not needed
    if start.redo_lsn != label.start_lsn:
        raise DecodeError(f"the base backup {where} starts at {format_lsn(label.start_lsn)} (its backup_label's "
                          "START WAL LOCATION), but no checkpoint with that redo point follows it in the WAL read",
                          lsn=label.start_lsn)
    if start_lsn is not None and start_lsn < label.start_lsn:
        raise DecodeError(f"the WAL was written with wal_level below logical ({start.evidence}): decoding from "
                          f"{format_lsn(start_lsn)} needs the pages of then, but the base backup {where} began "
                          f"later ({format_lsn(label.start_lsn)}, its START WAL LOCATION): give an earlier backup",
                          lsn=start_lsn)
    return (plan, label.start_lsn), start


def start_hint(plan: StartPlan | None, segments: SegmentSet) -> str:
    """What to do when no consistent point was reached: a usable start when the input holds one."""
    if plan is None or plan.reaches:
        return "start earlier or read further"
    parts = []
    if plan.needed_segment:
        parts.append(f"add the segments before {segments.name(segments.first_segno)} "
                     f"(from {plan.needed_segment} back)")
    if plan.earliest_lsn is not None:
        parts.append(f"or start at {format_lsn(plan.earliest_lsn)} or later (--start-lsn), the earliest "
                     "position this input can serve")
    return "; ".join(parts) if parts else "start earlier or read further"


def missing_start_message(plan: StartPlan, segments_first: str) -> str:
    """Why the requested start cannot be served, naming what is needed."""
    text = (f"the input does not reach back far enough to decode from {format_lsn(plan.confirmed_lsn)}: "
            "transactions running there began before the earliest usable point of the input")
    if plan.needed_segment:
        text += f"; the segments before {segments_first} (from {plan.needed_segment} back) are needed"
    if plan.earliest_lsn is not None:
        text += f"; the earliest position this input can serve is {format_lsn(plan.earliest_lsn)}"
    return text
