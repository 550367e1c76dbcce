"""The timelines of an archive: history files, switch points, segments and where each timeline's WAL ends.

Owns what a DBA needs to see of an archive after a failover before decoding it: each timeline's
history file (timeline.c readTimeLineHistory, parsed by ``wal.segments``), the switch points
where a child timeline forked from its parent, the segments present per timeline (full or
``.partial``, with the gaps), and the end of each timeline's valid WAL (the end of the last
record its newest segment holds).  A parent timeline whose WAL goes on past a switch point holds
what the old primary wrote after the fork: ``start_warnings`` says so when a decoding start lies
past that point, since reading the archive otherwise follows one timeline and is silent about the
other.  Takes paths (``wal.segments.scan``); hands ``Timeline`` rows to the CLI's ``timelines``
command and to ``diverge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..pg.lsn import format_lsn
from ..wal.segments import Scan, SegmentSet, scan, segment_name
from ..wal.storage import DEFAULT_OPTIONS, InputOptions
from ..wal.xlogreader import read_segment


@dataclass
class Fork:
    """Timeline ``child`` began at ``switch_lsn`` of timeline ``parent`` (a line of ``child``'s history file)."""

    parent: int
    child: int
    switch_lsn: int
    source: str = ""  # where the fork is known from, when not the input's history file


@dataclass
class Timeline:
    tli: int
    segments: list  # wal.segments.SegmentFile, by segment number
    history: tuple = ()  # ((parent, switch LSN), ...) of this timeline's history file, oldest first
    history_file: bool = False  # whether TTTTTTTT.history was among the input
    forks: list = field(default_factory=list)  # Fork: children that forked from this timeline
    end_lsn: int | None = None  # the end of the last valid record of this timeline's newest segment
    end_reason: str = ""  # why reading stopped there
    end_segment: str = ""  # the file that record is in

    @property
    def begins_at(self) -> int | None:
        """The switch point where this timeline began (None for a timeline without history)."""
        return self.history[-1][1] if self.history else None

    @property
    def parent(self) -> int | None:
        return self.history[-1][0] if self.history else None

    def past_switch(self, fork: Fork) -> bool:
        """Does this timeline hold WAL beyond ``fork``'s switch point (written after the fork)?"""
        return self.end_lsn is not None and self.end_lsn > fork.switch_lsn


def segment_runs(segments: list, seg_size: int) -> list[tuple]:
    """Consecutive segment numbers as (first name, last name, count, [partial names])."""
    runs: list[list] = []
    for f in segments:
        if runs and f.segno == runs[-1][1].segno + 1:
            runs[-1][1] = f
            runs[-1][2].append(f)
        else:
            runs.append([f, f, [f]])
    return [(segment_name(a.tli, a.segno, seg_size), segment_name(b.tli, b.segno, seg_size), len(fs),
             [f.path.name for f in fs if f.partial]) for a, b, fs in runs]


def _one_timeline_set(found: Scan, tli: int) -> SegmentSet:
    ident = found.ident
    return SegmentSet(seg_size=ident.xlp_seg_size, page_size=ident.xlp_xlog_blcksz, magic=ident.xlp_magic,
                      sysid=ident.xlp_sysid, files=dict(found.by_tli[tli]), tli=tli, identified_by=str(found.first),
                      store=found.store)


def wal_end(found: Scan, tli: int, verify_crc: bool = True) -> tuple[int | None, str, str]:
    """(end LSN, why reading stopped, file) of timeline ``tli``'s own segments: the end of the last
    record of the newest segment holding one.  Newer files holding no record (preallocated, or
    recycled ones whose pages carry older addresses) are passed over, as the server's end of WAL is."""
    segset = _one_timeline_set(found, tli)
    for segno in sorted(segset.files, reverse=True):
        records, stop = read_segment(segset, segno, verify_crc)
        if records:
            last = records[-1]
            reason = stop.reason if stop is not None else "end of the input"
            return last.end_lsn, reason, str(segset.files[segno].path)
    return None, "no record in any segment", ""


def timelines(paths, found: Scan | None = None, verify_crc: bool = True) -> list[Timeline]:
    """Every timeline among ``paths``, oldest first, with its forks and the end of its WAL."""
    found = found if found is not None else scan(paths)
    tlis = sorted(set(found.by_tli) | set(found.histories))
    out = {t: Timeline(t, sorted(found.by_tli.get(t, {}).values(), key=lambda f: f.segno),
                       found.histories.get(t, ()), t in found.histories) for t in tlis}
    for t, history in found.histories.items():
        if not history:
            continue
        # A history file lists every ancestor's switch point; the last line is this timeline's own fork
        for i, (parent, switch) in enumerate(history):
            child = history[i + 1][0] if i + 1 < len(history) else t
            if parent in out and not any(f.child == child for f in out[parent].forks):
                out[parent].forks.append(Fork(parent, child, switch))
            elif parent not in out:
                out[parent] = Timeline(parent, [], history[:i], False, [Fork(parent, child, switch)])
    for tl in out.values():
        tl.forks.sort(key=lambda f: f.switch_lsn)
        if tl.segments:
            tl.end_lsn, tl.end_reason, tl.end_segment = wal_end(found, tl.tli, verify_crc)
    return [out[t] for t in sorted(out)]


def decode_start_warnings(paths, segments: SegmentSet, start_lsn: int | None,
                          inputs: InputOptions = DEFAULT_OPTIONS) -> list[str]:
    """``decode --start-lsn`` in an input holding several timelines: what the start misses or means."""
    if start_lsn is None or len(segments.timelines) < 2:
        return []
    return start_warnings(timelines(paths, scan(paths, inputs)), start_lsn, segments.tli)


def start_warnings(tls: list[Timeline], start_lsn: int, reading_tli: int) -> list[str]:
    """Why a decoding start on timeline ``reading_tli`` at ``start_lsn`` may not show what the DBA expects:
    it lies past a switch point, and the timeline that forked there (or its parent) holds other WAL."""
    by_tli = {tl.tli: tl for tl in tls}
    reading = by_tli.get(reading_tli)
    ancestors = {p for p, _lsn in reading.history} if reading is not None else set()
    out = []
    for tl in tls:
        for fork in tl.forks:
            if start_lsn < fork.switch_lsn:
                continue
            where = (f"the start LSN {format_lsn(start_lsn)} lies past the switch point "
                     f"{format_lsn(fork.switch_lsn)} where timeline {fork.child} forked from timeline {fork.parent}")
            if tl.tli == reading_tli:
                out.append(f"{where}: what this run prints from timeline {fork.parent} after "
                           f"{format_lsn(fork.switch_lsn)} never reached timeline {fork.child} "
                           "('waldecode diverge' lists it with what to do about it)")
            elif tl.tli in ancestors and tl.past_switch(fork):
                out.append(f"{where}: this run reads timeline {reading_tli}; timeline {fork.parent}'s WAL from "
                           f"{format_lsn(fork.switch_lsn)} to {format_lsn(tl.end_lsn)} (written by the old primary "
                           f"after the fork, never received by timeline {fork.child}) is not read: see "
                           f"'waldecode diverge', or --timeline {fork.parent}")
    return out


def format_timelines(tls: list[Timeline], seg_size: int, start_lsn: int | None = None) -> str:
    """The ``timelines`` command's report."""
    lines = []
    for tl in tls:
        head = f"timeline {tl.tli}"
        if tl.parent is not None:
            head += f": forked from timeline {tl.parent} at {format_lsn(tl.begins_at)}"
        elif tl.tli == 1:
            head += ": the cluster's first timeline"
        lines.append(head)
        if tl.history:
            src = f"{tl.tli:08X}.history" + ("" if tl.history_file else " (not among the input; known from a child's)")
            lines.append(f"  history {src}: " + ", ".join(f"timeline {p} until {format_lsn(lsn)}"
                                                           for p, lsn in tl.history))
        elif tl.tli != 1:
            lines.append(f"  history: no {tl.tli:08X}.history among the input")
        if not tl.segments:
            lines.append("  segments: none among the input")
        for first, last, count, partial in segment_runs(tl.segments, seg_size):
            text = f"  segments {first}" + (f" to {last}" if count > 1 else "") + f" ({count})"
            if partial:
                text += ", partial: " + ", ".join(partial)
            lines.append(text)
        if tl.end_lsn is not None:
            lines.append(f"  WAL ends at {format_lsn(tl.end_lsn)} in {tl.end_segment}: {tl.end_reason}")
        for fork in tl.forks:
            text = f"  switch point {format_lsn(fork.switch_lsn)}: timeline {fork.child} forked here"
            if tl.past_switch(fork):
                text += (f"; this timeline goes on to {format_lsn(tl.end_lsn)}: WAL written after the fork, "
                         f"never on timeline {fork.child} ('waldecode diverge' lists what it committed)")
            lines.append(text)
    if start_lsn is not None and tls:
        # What a decode started there sees by default: the newest timeline, along its history
        newest = max(tl.tli for tl in tls if tl.segments) if any(tl.segments for tl in tls) else tls[-1].tli
        for w in start_warnings(tls, start_lsn, newest):
            lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"
