"""Reads WAL segments into decoded records, in LSN order.

Owns the walk over segments: where to start (a given LSN, which need not be a
record start, or the first record of the first segment), crossing from one
segment into the next, an end LSN with pg_waldump's meaning (records that end
past it are not returned), and the report of why reading stopped.  Pages and
records are framed by the active implementation (``waldecode._impl``); files
come from a ``walfile.SegmentSet``.  Hands ``DecodedRecord``s to the resource
managers and the decoder.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import _impl
from ..errors import MissingSegmentError, WALError, format_lsn
from ..pg.lsn import parse_lsn  # re-exported
from .segments import SegmentSet, discover
from .xlogpage import FrameState, ReadStop, SizeOfXLogLongPHD, SizeOfXLogShortPHD
from .xlogrecord import DecodedRecord


class XLogReader:
    """Iterate the records of a WAL range.

    ``XLogReader(paths, start_lsn=None, end_lsn=None)``; after iteration
    ``stop`` says where and why reading ended (a ``ReadStop``), and ``major``
    the PostgreSQL major version that wrote the WAL.  Errors in the input that
    make reading impossible (missing segments, foreign files) raise ``WALError``
    subclasses; damaged or ended WAL stops reading with a ``ReadStop``, as
    PostgreSQL's own reader does.  A segment missing inside the range is refused before
    anything is read, unless ``read_to_gap``: then the records before it are returned and
    the ``MissingSegmentError`` comes where reading needs the segment, as pg_waldump
    prints up to a gap and stops there with an error (``inspect``).
    """

    def __init__(self, paths=None, start_lsn: int | None = None, end_lsn: int | None = None,
                 timeline: int | None = None, verify_crc: bool = True, segments: SegmentSet | None = None,
                 read_to_gap: bool = False):
        self.segments = segments if segments is not None else discover(paths, timeline)
        self.start_lsn = start_lsn
        self.end_lsn = end_lsn
        self.verify_crc = verify_crc
        self.stop: ReadStop | None = None
        self.first_lsn: int | None = None  # LSN of the first record returned
        self.last_end_lsn: int | None = None  # EndRecPtr of the last record returned
        self.read_from: int = 0  # records before it are skipped (set when reading starts)
        self.read_to_gap = read_to_gap

    @property
    def major(self) -> int:
        return self.segments.major

    @property
    def seg_size(self) -> int:
        return self.segments.seg_size

    def __iter__(self) -> Iterator[DecodedRecord]:
        decode = _impl.decode_record
        frame = _impl.frame_segment
        major = self.segments.major
        seg_size = self.segments.seg_size
        verify = self.verify_crc
        for seg_lsn, buf, path, st in self.segments_to_read():
            records, stop = frame(buf, seg_lsn, st, verify, path)
            for lsn, raw_end, rec in records:
                if lsn < self.read_from:
                    continue
                end = _end_lsn(rec, lsn, raw_end, seg_size)
                r = decode_in(decode, rec, lsn, end, major, path)
                if self.first_lsn is None:
                    self.first_lsn = lsn
                self.last_end_lsn = end
                yield r
            if stop is not None:
                self.stop = stop
                return

    def frames(self) -> Iterator[tuple]:
        """The records segment by segment, framed but not decoded: ``(path, records, start)`` with
        records ``(lsn, raw_end, bytes)`` (``frame_segment``'s), of which those before ``start``
        are to be skipped (the logical decoding loop takes them so).  ``first_lsn`` and
        ``last_end_lsn`` follow each segment once its records were taken; ``stop`` is set at the end."""
        frame = _impl.frame_segment
        seg_size = self.segments.seg_size
        verify = self.verify_crc
        # the framed records are copies: each segment is mapped, not read into a new bytes object
        for seg_lsn, buf, path, st in self.segments_to_read(mapped=True):
            records, stop = frame(buf, seg_lsn, st, verify, path)
            start = self.read_from
            if records and records[-1][0] >= start:
                if self.first_lsn is None:
                    self.first_lsn = next(lsn for lsn, _e, _r in records if lsn >= start)
                yield path, records, start
                lsn, raw_end, rec = records[-1]
                self.last_end_lsn = _end_lsn(rec, lsn, raw_end, seg_size)
            if stop is not None:
                self.stop = stop
                return

    def segments_to_read(self, mapped: bool = False) -> Iterator[tuple[int, bytes, object, FrameState]]:
        """The segments of the range, in order, as ``(seg_lsn, buffer, path, frame_state)``.

        The caller frames each one from ``frame_state`` and skips the records before
        ``read_from`` (set before the first segment); when framing stops it sets ``stop``
        itself and leaves.  When the range or the input is used up, ``stop`` is set here.
        The native ``inspect`` (``waldecode._waldump``) walks the same segments, ``mapped``
        (``SegmentSet.load``).
        """
        segs = self.segments
        seg_size = segs.seg_size
        start = self.start_lsn
        if start is None:
            start = segs.first_segno * seg_size
        first_segno = start // seg_size
        if first_segno not in segs.files:
            raise MissingSegmentError(
                f"the start LSN {format_lsn(start)} lies in segment {segs.name(first_segno)}, which is not "
                f"among the input ({segs.name(segs.first_segno)} to {segs.name(segs.last_segno)})", lsn=start)
        if self.end_lsn is not None and self.end_lsn <= start:
            raise WALError(f"the end LSN {format_lsn(self.end_lsn)} is not after the start LSN {format_lsn(start)}")
        last_segno = segs.last_segno
        if self.end_lsn is not None:
            last_segno = min(last_segno, (self.end_lsn - 1) // seg_size)
        if self.read_to_gap:
            # the segments up to the first missing one are read; the gap is met where the reader needs it
            gap = next((n for n in range(first_segno, last_segno + 1) if n not in segs.files), None)
            range_end, last_segno = last_segno, last_segno if gap is None else gap - 1
        else:
            gap = None
            segs.check_contiguous(first_segno, last_segno)
        # an object store fetches the segments of the range ahead of the reader (local files: nothing)
        segs.prefetch(first_segno, last_segno)
        self.read_from = start
        # XLogFindNextRecord: begin at the page holding ``start`` and skip records before it
        page_start = start - start % segs.page_size
        st = FrameState(segs.page_size, seg_size, segs.magic, segs.sysid, page_start, 0, self.end_lsn or 0)
        segno = first_segno
        while True:
            if self.end_lsn is not None and segno * seg_size >= self.end_lsn:
                self.stop = ReadStop(segno * seg_size, "limit", "end of requested range")
                return
            if segno == gap:
                segs.check_contiguous(first_segno, range_end)  # raises MissingSegmentError naming it
            if segno > segs.last_segno:
                self.stop = self._ran_out(st, segno)
                return
            buf, path = segs.load(segno, mapped)
            yield segno * seg_size, buf, path, st
            segno += 1

    def _ran_out(self, st: FrameState, segno: int) -> ReadStop:
        lsn = segno * self.seg_size
        if st.partial is not None:
            return ReadStop(st.partial_lsn, "end",
                            f"record at {format_lsn(st.partial_lsn)} continues into segment "
                            f"{self.segments.name(segno)}, which is not among the input")
        return ReadStop(lsn, "end", f"end of the input after segment {self.segments.name(segno - 1)}")


def read_segment(segments: SegmentSet, segno: int, verify_crc: bool = True,
                 next_head: bytes | None = None, rmid: int | None = None) -> tuple[list[DecodedRecord], ReadStop | None]:
    """The records that start in one segment, read on their own (a task of its own for Spark).

    The segment is framed from its first record start, skipping the tail of a record
    begun in the previous segment.  A record that crosses into the next segment is
    completed from ``next_head`` (the next segment's bytes, or only its first pages);
    when it is not given, the next segment is loaded from ``segments`` if present.
    The first record's prev-link can only be checked to point backwards.  With ``rmid``, only
    the records of that resource manager are decoded and returned (all are framed and checked).
    """
    seg_size = segments.seg_size
    major = segments.major
    st = FrameState(segments.page_size, seg_size, segments.magic, segments.sysid, segno * seg_size)
    buf, path = segments.load(segno)
    raw, stop = _impl.frame_segment(buf, segno * seg_size, st, verify_crc, path)
    if stop is None and st.partial is not None:
        if next_head is None and segno + 1 in segments.files:
            next_head, next_path = segments.load(segno + 1)
        else:
            next_path = segments.name(segno + 1)
        if next_head is None:
            stop = ReadStop(st.partial_lsn, "end", f"record at {format_lsn(st.partial_lsn)} continues into "
                            f"segment {segments.name(segno + 1)}, which is not among the input")
        else:
            st.stop_after_partial = True
            more, stop = _impl.frame_segment(next_head, (segno + 1) * seg_size, st, verify_crc, next_path)
            raw.extend(more)
    records = [_impl.decode_record(rec, lsn, _end_lsn(rec, lsn, raw_end, seg_size), major)
               for lsn, raw_end, rec in raw if rmid is None or rec[17] == rmid]  # XLogRecord.xl_rmid
    return records, stop


def decode_in(decode, rec: bytes, lsn: int, end: int, major: int, path) -> DecodedRecord:
    """``decode(rec, lsn, end, major)``, its error naming the segment file ``path``."""
    try:
        return decode(rec, lsn, end, major)
    except WALError as e:
        if e.path is None:
            named = type(e)(e.reason, path=path)
            named.lsn = e.lsn
            raise named from None
        raise


def _end_lsn(rec: bytes, lsn: int, raw_end: int, seg_size: int) -> int:
    """PostgreSQL's EndRecPtr: the aligned end, or the segment end after XLOG_SWITCH."""
    end = raw_end + 7 & ~7
    if rec[17] == 0 and rec[16] & 0xF0 == 0x40:
        # xlogreader.c: NextRecPtr is rounded up to the next segment boundary
        return (end + seg_size - 1) // seg_size * seg_size
    return end


def read_records(paths, start_lsn=None, end_lsn=None, **kw) -> Iterator[DecodedRecord]:
    return iter(XLogReader(paths, start_lsn, end_lsn, **kw))


__all__ = ["XLogReader", "read_records", "parse_lsn", "ReadStop", "SizeOfXLogLongPHD", "SizeOfXLogShortPHD"]
