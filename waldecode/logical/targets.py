"""Recovery targets: commit times turned into the LSNs decoding starts and stops at.

Owns what ``--start-time`` and ``--end-time`` mean, as PostgreSQL's ``recovery_target_time``
reads commit timestamps (src/backend/access/transam/xlogrecovery.c recoveryStopsBefore,
with recovery_target_inclusive on): only COMMIT, COMMIT PREPARED, ABORT and ABORT PREPARED
records carry the time compared (their ``xact_time``), in WAL order, whatever order the times
are in.  So

* ``--end-time T`` ends before the first commit or abort record whose time is after ``T``:
  every transaction committing before it is included (``end_lsn`` = that record's LSN);
* ``--start-time T`` is a slot confirmed up to the first commit record whose time is at or
  after ``T``: that commit and every later one is printed (``start_lsn`` = its LSN, which
  decoding takes as "commits at or after").

Also owns the fast scan both need, and the catalog check (``catalog.choose``) too: the
transaction-end records of a stretch of WAL, framed in the header-only mode
(``FrameState.firsts``: only RM_XACT records are kept whole, the others' xids noted from
their headers), each read only as far as its time and flags.  Times are PostgreSQL's
``TimestampTz``, microseconds since 2000-01-01 00:00 UTC; text is read as ISO 8601 or as
PostgreSQL prints a timestamptz, without an offset in the zone given (the snapshot's
TimeZone).  Hands LSNs to the CLI and ``XactEnd`` records to ``catalog.choose``.
"""

from __future__ import annotations

import struct
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from .. import _impl
from ..errors import DecodeError, UsageError, format_lsn
from ..rmgr import RM_XACT_ID
from ..rmgr.xact import (
    XACT_XINFO_HAS_SUBXACTS,
    XACT_XINFO_HAS_TWOPHASE,
    XLOG_XACT_ABORT,
    XLOG_XACT_ABORT_PREPARED,
    XLOG_XACT_COMMIT,
    XLOG_XACT_COMMIT_PREPARED,
    XLOG_XACT_HAS_INFO,
    XLOG_XACT_OPMASK,
    parse_commit_or_abort,
)
from ..wal.xlogreader import XLogReader
from ..wal.xlogrecord import XLR_BLOCK_ID_DATA_SHORT

# src/include/datatype/timestamp.h: POSTGRES_EPOCH_JDATE, as a datetime
POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_COMMITS = frozenset((XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED))
_ENDS = frozenset((XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_ABORT, XLOG_XACT_ABORT_PREPARED))
#: xinfo flags whose parts only the whole parse reads (subtransactions, the prepared xid)
_PARSED = XACT_XINFO_HAS_SUBXACTS | XACT_XINFO_HAS_TWOPHASE
_i64 = struct.Struct("<q").unpack_from
#: xl_info -> 1 for the transaction-end operations
_IS_END = bytes(1 if i & XLOG_XACT_OPMASK in _ENDS else 0 for i in range(256))
#: after the XLogRecord header: block id, short main-data length, xact_time, xinfo
_COMMON = struct.Struct("<BBqI").unpack_from
_u32 = struct.Struct("<I").unpack_from


class XactEnd(NamedTuple):
    """A COMMIT, COMMIT PREPARED, ABORT or ABORT PREPARED record, read as far as the scans need."""

    lsn: int
    op: int  # xl_info & XLOG_XACT_OPMASK
    xid: int  # the transaction it ends (the prepared one's for COMMIT/ABORT PREPARED)
    time: int  # xact_time: TimestampTz
    xinfo: int  # xl_xact_xinfo (0 without XLOG_XACT_HAS_INFO)
    subxacts: tuple  # its subtransactions

    @property
    def is_commit(self) -> bool:
        return self.op in _COMMITS

    def describe(self, zone) -> str:
        what = "commit" if self.is_commit else "abort"
        return (f"{what} of transaction {self.xid} at {format_lsn(self.lsn)} ({format_timestamp(self.time, zone)})")


def _xact_end(rec: bytes, lsn: int, raw_end: int, major: int) -> XactEnd:
    """The XactEnd of a transaction-end record (``rec`` whole) the common-commit fast path in
    ``XactScan`` does not read: the record decoder and xact.c's ParseCommitRecord/ParseAbortRecord,
    as decoding reads it (an origin, a long main data, subtransactions, a prepared xid)."""
    r = _impl.decode_record(rec, lsn, raw_end, major)
    op = r.xl_info & XLOG_XACT_OPMASK
    parsed = parse_commit_or_abort(r.xl_info, r.main_data, major, op in _COMMITS)
    xid = parsed.twophase_xid if parsed.xinfo & XACT_XINFO_HAS_TWOPHASE else r.xl_xid
    return XactEnd(lsn, op, xid, parsed.xact_time, parsed.xinfo, parsed.subxacts)


class XactScan:
    """The transaction-end records (``XactEnd``) from ``start`` (a record start or any LSN; None: the
    input's first record) up to ``end`` (exclusive; None: the end of the input), in WAL order.

    ``firsts``: a dict that gets, as ``FrameState.firsts`` does, each xid with the LSN of its first
    record other than a transaction record (its owner may remove the xids that ended); without it
    the xids are not kept.  After iteration ``stop`` says why reading ended (a ``ReadStop``).
    """

    def __init__(self, segments, start: int | None = None, end: int | None = None, *, verify_crc: bool = True,
                 firsts: dict | None = None):
        self.segments = segments
        self.reader = XLogReader(segments=segments, start_lsn=start, end_lsn=end, verify_crc=verify_crc)
        self.firsts = firsts
        self.stop = None

    def __iter__(self):
        frame = _impl.frame_segment
        major = self.segments.major
        is_end = _IS_END
        keep = self.firsts is not None
        firsts = self.firsts if keep else {}
        reader = self.reader
        verify = reader.verify_crc
        for seg_lsn, buf, path, st in reader.segments_to_read(mapped=True):
            if not keep:
                firsts.clear()  # only the records matter here: the xids must not pile up
            st.firsts = firsts
            records, stop = frame(buf, seg_lsn, st, verify, path)
            start = reader.read_from
            for lsn, raw_end, rec in records:
                info = rec[16]
                if not is_end[info] or rec[17] != RM_XACT_ID or lsn < start:
                    continue
                if len(rec) >= 38:
                    # the common commit: the short main-data header, then xact_time and xinfo (then dbinfo)
                    block_id, length, xact_time, xinfo = _COMMON(rec, 24)
                    if block_id == XLR_BLOCK_ID_DATA_SHORT and length >= 12:
                        if not info & XLOG_XACT_HAS_INFO:
                            xinfo = 0
                        if not xinfo & _PARSED:
                            yield XactEnd(lsn, info & XLOG_XACT_OPMASK, _u32(rec, 4)[0], xact_time, xinfo, ())
                            continue
                yield _xact_end(rec, lsn, raw_end, major)
            if stop is not None:
                reader.stop = stop
                break
        self.stop = reader.stop


# -- times ---------------------------------------------------------------------------------------


def zone_named(name: str, what: str):
    """The tzinfo of a zone name as PostgreSQL's TimeZone setting holds it (IANA names, UTC/GMT)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if name.upper() in ("UTC", "GMT", "Z", "ZULU", "UCT"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"{what} {name!r} is not a time zone this system knows: give the time with an offset "
                         "(as 2026-11-24 14:03:00+01)") from None


def parse_timestamp(text: str, zone, option: str = "the time") -> int:
    """``text`` as a TimestampTz: ISO 8601 or PostgreSQL's timestamptz output (``2026-11-24 14:03:00+01``,
    ``2026-11-24T13:03Z``, ``2026-11-24 14:03``, a trailing zone name as ``2026-11-24 14:03 Europe/Berlin``);
    without an offset or zone name, in ``zone``."""
    s = text.strip()
    dt = _fromisoformat(s)
    if dt is None and " " in s:
        head, _sep, name = s.rpartition(" ")
        dt = _fromisoformat(head.strip())
        if dt is not None:
            if dt.tzinfo is not None:
                dt = None
            else:
                dt = dt.replace(tzinfo=zone_named(name, f"the time zone of {option}"))
    if dt is None:
        raise UsageError(f"{option} {text!r} is not a timestamp: give it as PostgreSQL prints one, "
                         "e.g. '2026-11-24 14:03:00+01' or '2026-11-24 14:03' (in the snapshot's TimeZone)")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone)
    return (dt - POSTGRES_EPOCH) // timedelta(microseconds=1)


def needs_zone(text: str) -> bool:
    """Does the time ``text`` leave its time zone to the snapshot's (no offset, no zone name)?  A text that is
    no timestamp does not: ``parse_timestamp`` says what is wrong with it."""
    s = text.strip()
    dt = _fromisoformat(s)
    if dt is not None:
        return dt.tzinfo is None
    return False


def _fromisoformat(s: str) -> datetime | None:
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return None


def format_timestamp(ts: int, zone) -> str:
    """A TimestampTz as PostgreSQL prints a timestamptz (ISO DateStyle) in ``zone``: ``2026-11-24
    14:03:00.123456+01``."""
    dt = (POSTGRES_EPOCH + timedelta(microseconds=ts)).astimezone(zone)
    text = dt.strftime("%Y-%m-%d %H:%M:%S")
    if dt.microsecond:
        text += f".{dt.microsecond:06d}".rstrip("0")
    off = dt.utcoffset() or timedelta(0)
    sign = "-" if off < timedelta(0) else "+"
    secs = abs(int(off.total_seconds()))
    text += f"{sign}{secs // 3600:02d}"
    if secs % 3600:
        text += f":{secs % 3600 // 60:02d}"
        if secs % 60:
            text += f":{secs % 60:02d}"
    return text


# -- the targets ---------------------------------------------------------------------------------


class TimeTargetError(DecodeError):
    """A start or end time that the WAL given does not hold (exit 1: the input does not serve it)."""


class Bounds(NamedTuple):
    """What times became: ``start_lsn``/``end_lsn`` (None: not given, or the end of the WAL), and the
    notes to print (one line each)."""

    start_lsn: int | None
    end_lsn: int | None
    notes: tuple = ()


def resolve_times(segments, start_time: str | None, end_time: str | None, zone, *, start_lsn: int | None = None,
                  verify_crc: bool = True, what: str = "decode") -> Bounds:
    """``--start-time`` and ``--end-time`` as LSNs, over ``segments``.  A start time before the WAL's
    first commit, or after its last, and an end time before its first commit, are errors naming the
    WAL's first or last commit (the input cannot serve them); an end time after the last commit
    reads to the end, with a note saying the WAL ends before it (as recovery reads all there is)."""
    notes = []
    first_seen = None
    if start_time is not None and end_time is not None:
        a, b = parse_timestamp(start_time, zone, "--start-time"), parse_timestamp(end_time, zone, "--end-time")
        if b < a:
            raise UsageError(f"--end-time {format_timestamp(b, zone)} is before --start-time "
                             f"{format_timestamp(a, zone)}")
    if start_time is not None:
        target = parse_timestamp(start_time, zone, "--start-time")
        scan = XactScan(segments, None, None, verify_crc=verify_crc)
        found = None
        last = None
        for x in scan:
            if not x.is_commit:
                continue
            if first_seen is None:
                first_seen = x
            if x.time >= target:
                found = x
                break
            last = x
        shown = format_timestamp(target, zone)
        if found is None:
            if last is None:
                raise TimeTargetError(f"--start-time {shown}: the WAL holds no commit ({_read_to(scan, segments)})")
            raise TimeTargetError(f"--start-time {shown} is after the last commit in the WAL, the "
                                  f"{last.describe(zone)} ({_read_to(scan, segments)}): nothing to {what}")
        if found is first_seen:
            raise TimeTargetError(
                f"--start-time {shown} is at or before the first commit in the WAL, the {found.describe(zone)}: "
                f"commits between {shown} and the input's first segment {segments.name(segments.first_segno)} "
                "cannot be seen; add the segments before it, or give a later --start-time")
        start_lsn = found.lsn
    if end_time is None:
        return Bounds(start_lsn, None, tuple(notes))
    target = parse_timestamp(end_time, zone, "--end-time")
    shown = format_timestamp(target, zone)
    scan = XactScan(segments, start_lsn, None, verify_crc=verify_crc)
    seen = None
    for x in scan:
        if x.time > target:
            if seen is None:
                after = "at the start" if start_lsn is not None else "in the WAL"
                raise TimeTargetError(f"--end-time {shown} is before the first commit or abort {after}, "
                                      f"the {x.describe(zone)}: nothing to {what}")
            return Bounds(start_lsn, x.lsn, tuple(notes))
        seen = x
    tail = f" (the last: the {seen.describe(zone)})" if seen is not None else ""
    notes.append(f"the WAL ends before --end-time {shown}: no commit or abort after it{tail}; "
                 f"reading to its end ({_read_to(scan, segments)})")
    return Bounds(start_lsn, None, tuple(notes))


def _read_to(scan: XactScan, segments) -> str:
    stop = scan.stop
    if stop is None:
        return f"read to {segments.name(segments.last_segno)}"
    where = f" in {stop.path}" if getattr(stop, "path", None) else ""
    return f"read to {format_lsn(stop.lsn)}{where}"
