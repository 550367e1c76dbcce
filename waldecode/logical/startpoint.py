"""Where decoding must begin reading for a slot whose confirmed position is a given LSN.

Owns what a logical slot's ``restart_lsn`` gives the server: a slot confirmed up to
``L`` prints every transaction that commits at or after ``L``, whole, so reading must
begin early enough that the snapshot builder (``snapbuild``) is consistent by ``L``:
every transaction running then has been seen from its first record.  The server keeps
that place for its slot; offline it is found by looking back from ``L`` through the
given segments, one segment at a time (each framed on its own, as ``read_segment``
frames it), for the latest XLOG_RUNNING_XACTS record from which the builder's own
transitions (SnapBuildFindSnapshot) reach CONSISTENT at or before ``L``.  Only
running-xacts records decide those transitions, so the search reads nothing else.

When the input does not reach back far enough, the plan says so (``reaches``), names
the segment that is needed, and the earliest position this input can serve; the
decoder then reads from the earliest candidate and reports every commit at or after
``L`` that it could not decode.  Takes a ``walfile.SegmentSet``; hands a ``StartPlan``
to ``session.decode_wal``.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import MissingSegmentError, format_lsn
from ..rmgr import RM_STANDBY_ID
from ..rmgr import standby as rm_standby
from .snapbuild import SNAPBUILD_CONSISTENT, SnapBuilder
from ..wal.segments import SegmentSet
from ..wal.xlogreader import read_segment


class RunningXacts(NamedTuple):
    """An XLOG_RUNNING_XACTS record: what SnapBuildFindSnapshot reads from it."""

    lsn: int
    end_lsn: int
    nextXid: int
    oldestRunningXid: int


class StartPlan(NamedTuple):
    """Where to read from for a slot confirmed up to ``confirmed_lsn``.

    ``read_from`` is the first LSN to read (a record start, or None for the input's
    first record); ``consistent_lsn`` the running-xacts record at which the builder
    becomes consistent reading from there (None when it never does in what was
    scanned); ``reaches`` is True when that is at or before ``confirmed_lsn``, so every
    transaction committing from there on decodes whole.  ``assume_consistent`` is set
    when the caller gave the slot's restart LSN: the server restores a consistent
    snapshot there, and so does the decoder.  ``needed_segment`` names the segment
    before the input when looking back ran out of input; ``earliest_lsn`` is the
    earliest confirmed position this input can serve (None when none).
    """

    confirmed_lsn: int
    read_from: int | None
    consistent_lsn: int | None
    reaches: bool
    assume_consistent: bool = False
    needed_segment: str | None = None
    earliest_lsn: int | None = None
    scanned_segments: int = 0


def running_xacts_of(records) -> list[RunningXacts]:
    out = []
    for rec in records:
        if rec.xl_rmid == RM_STANDBY_ID and rec.xl_info & 0xF0 == rm_standby.XLOG_RUNNING_XACTS:
            _xcnt, _subxcnt, _overflow, nextXid, oldestRunningXid, _latest = \
                rm_standby.xl_running_xacts.unpack_from(rec.main_data, 0)
            out.append(RunningXacts(rec.lsn, rec.end_lsn, nextXid, oldestRunningXid))
    return out


def consistent_point(running: list[RunningXacts], first: int) -> RunningXacts | None:
    """The running-xacts record at which a builder started at ``running[first]`` becomes consistent."""
    sb = SnapBuilder()
    for r in running[first:]:
        sb.process_running_xacts(r.lsn, r.end_lsn, r.nextXid, r.oldestRunningXid)
        if sb.state == SNAPBUILD_CONSISTENT:
            return r
    return None


def check_start_in_input(segments: SegmentSet, lsn: int, what: str = "start LSN") -> None:
    segno = lsn // segments.seg_size
    if segno not in segments.files:
        raise MissingSegmentError(
            f"the {what} {format_lsn(lsn)} lies in segment {segments.name(segno)}, which is not among the "
            f"input ({segments.name(segments.first_segno)} to {segments.name(segments.last_segno)})", lsn=lsn)


def plan_start(segments: SegmentSet, confirmed_lsn: int, restart_lsn: int | None = None,
               verify_crc: bool = True) -> StartPlan:
    """The reading start for a slot confirmed up to ``confirmed_lsn`` (and, if known, its restart LSN).

    With the restart LSN only that must be in the input: the confirmed position may lie at its
    end (a slot that has read all there was, waiting for the next segment).
    """
    if restart_lsn is None:
        check_start_in_input(segments, confirmed_lsn)
    else:
        if restart_lsn > confirmed_lsn:
            raise MissingSegmentError(f"the restart LSN {format_lsn(restart_lsn)} lies after the confirmed "
                                      f"position {format_lsn(confirmed_lsn)}: a slot's restart_lsn never does",
                                      lsn=restart_lsn)
        check_start_in_input(segments, restart_lsn, "restart LSN")
        return StartPlan(confirmed_lsn, restart_lsn, restart_lsn, True, assume_consistent=True)
    seg_size = segments.seg_size
    segno = confirmed_lsn // seg_size
    running: list[RunningXacts] = []  # in LSN order, all at or before confirmed_lsn
    later: list[RunningXacts] = []  # those after it in its own segment
    scanned = 0
    while True:
        records, _stop = read_segment(segments, segno, verify_crc, rmid=RM_STANDBY_ID)
        scanned += 1
        found = running_xacts_of(records)
        if scanned == 1:
            later = [r for r in found if r.lsn > confirmed_lsn]
            found = [r for r in found if r.lsn <= confirmed_lsn]
        running[:0] = found
        # The latest candidate in this segment from which the builder is consistent by confirmed_lsn
        for i in range(len(found) - 1, -1, -1):
            c = consistent_point(running, i)
            if c is not None and c.lsn <= confirmed_lsn:
                return StartPlan(confirmed_lsn, running[i].lsn, c.lsn, True, scanned_segments=scanned)
        if segno - 1 not in segments.files:
            break
        segno -= 1
    # The input does not reach back far enough: the builder can start no earlier than the input's
    # first running-xacts record.  Say which segment is missing and what this input can serve.
    needed = segments.name(segno - 1) if segno > 0 else None
    c = _first_consistent(segments, confirmed_lsn // seg_size, running + later, verify_crc)
    return StartPlan(confirmed_lsn, running[0].lsn if running else (later[0].lsn if later else None),
                     c.lsn if c else None, False, needed_segment=needed,
                     earliest_lsn=c.end_lsn if c else None, scanned_segments=scanned)


def _first_consistent(segments: SegmentSet, segno: int, seen: list[RunningXacts],
                      verify_crc: bool) -> RunningXacts | None:
    """The input's first consistent point, reading forward past ``segno`` as far as needed."""
    seen = list(seen)
    while True:
        c = consistent_point(seen, 0) if seen else None
        if c is not None or segno + 1 not in segments.files:
            return c
        segno += 1
        records, stop = read_segment(segments, segno, verify_crc, rmid=RM_STANDBY_ID)
        seen.extend(running_xacts_of(records))
        if stop is not None and stop.kind != "end":
            c = consistent_point(seen, 0) if seen else None
            return c


def reading_start(segments: SegmentSet, start_lsn: int | None, restart_lsn: int | None,
                  verify_crc: bool = True) -> tuple[StartPlan | None, int | None]:
    """(plan, LSN to read from) for a start given as a slot's confirmed position and/or restart LSN.

    With ``start_lsn`` reading never begins after it: commits between it and a later first
    running-xacts record must be read, to be reported.  With only ``restart_lsn``, reading begins
    there as for a slot created there.  Neither: (None, None), the input's first record.
    """
    if start_lsn is not None:
        plan = plan_start(segments, start_lsn, restart_lsn, verify_crc)
        return plan, start_lsn if plan.read_from is None else min(plan.read_from, start_lsn)
    if restart_lsn is not None:
        check_start_in_input(segments, restart_lsn, "restart LSN")
        return None, restart_lsn
    return None, None
