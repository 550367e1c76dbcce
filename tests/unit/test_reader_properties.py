"""Property tests of the reader on WAL written by tests/walgen.py, for both implementations.

* Round trip: random record streams (24 bytes to more than three pages, block
  references with data and images, origin, toplevel xid, XLOG_SWITCH, records and
  record headers split across pages and segments, 1/2/4 MB segments, versions
  13 to 18, any start position in the first segment, across a log id) read back
  unchanged, field by field, and the reader stops with kind "end" where the
  written WAL ends.
* Ranges: a start LSN anywhere gives exactly the records that start at or after
  it (pg_waldump's XLogFindNextRecord), an end LSN exactly those that end at or
  before it.
* Damage: on randomly mutated segments the pure-Python and Cython implementations
  return the same records and the same stop (or raise the same WALError), never
  another exception, never hang.
"""

from __future__ import annotations

import contextlib
import faulthandler
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import walgen
from walgen import MB, Block, Image, Record, WALWriter
from waldecode import _impl
from waldecode.errors import WALError
from waldecode.rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_RELMAP_ID, RM_STANDBY_ID
from waldecode.wal.segments import discover
from waldecode.wal.xlogreader import XLogReader, read_segment
from waldecode.wal.xlogrecord import BlockRef, DecodedRecord

PAGE = 8192
FUNCTION_FIXTURE = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
RELS = [(1663, 5, 16384), (1663, 5, 16385), (1664, 0, 1262)]


# --------------------------------------------------------------------------------------------
# Strategies


def _bytes(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


@st.composite
def images(draw, major: int):
    apply = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["plain", "hole", "compressed", "compressed+hole"]))
    hole = off = 0
    if kind.endswith("hole"):
        hole = draw(st.integers(1, PAGE - 1))
        off = draw(st.integers(1, PAGE - hole))
    if kind.startswith("compressed"):
        method = draw(st.sampled_from(["pglz"] if major < 15 else ["pglz", "lz4", "zstd"]))
        n = draw(st.integers(1, PAGE - 1))
        return Image(_bytes(seed, n), off, hole, method, apply)  # the reader does not decompress
    return Image(_bytes(seed, PAGE - hole), off, hole, None, apply)


@st.composite
def blocks(draw, major: int):
    ids = sorted(draw(st.sets(st.integers(0, 32), max_size=4)))
    out = []
    for bid in ids:
        n = draw(st.sampled_from([0, 0, 1, 17, 300, 3000]))
        img = draw(st.none() | images(major)) if draw(st.integers(0, 3)) == 0 else None
        out.append(Block(bid, draw(st.sampled_from(RELS)), draw(st.integers(0, 2**32 - 1)),
                         fork=draw(st.integers(0, 3)), data=_bytes(bid * 7919 + n, n), image=img,
                         will_init=draw(st.booleans())))
    return tuple(out)


@st.composite
def records(draw, major: int):
    if draw(st.integers(0, 15)) == 0:
        return Record(walgen.RM_XLOG_ID, walgen.XLOG_SWITCH)
    rmids = st.integers(0, 21)
    if major >= 15:
        rmids = rmids | st.integers(128, 255)
    rmid = draw(rmids)
    info = draw(st.integers(0, 255))
    if rmid == 0 and info & 0xF0 == walgen.XLOG_SWITCH:
        info ^= 0x10
    n = draw(st.sampled_from([0, 1, 255, 256]) | st.integers(0, 300) | st.integers(300, 9000)
             | st.integers(3 * PAGE, 3 * PAGE + 2000))
    return Record(rmid, info, xid=draw(st.integers(0, 2**32 - 1)),
                  blocks=draw(st.just(()) | blocks(major)), main_data=_bytes(n * 31 + rmid, n),
                  origin=draw(st.none() | st.integers(1, 65535)),
                  toplevel_xid=draw(st.none() | st.integers(1, 2**32 - 1)) if major >= 14 else None)


@st.composite
def streams(draw, max_records: int = 8, seg_sizes=(MB, 2 * MB, 4 * MB)):
    """A written WALWriter: first segment anywhere, first record anywhere in it, 1..max_records records."""
    major = draw(st.integers(13, 18))
    seg_size = draw(st.sampled_from(seg_sizes))
    per_log = 0x100000000 // seg_size
    segno = draw(st.sampled_from([1, 2, 37, per_log - 1, 5 * per_log + 3]))
    # Often near the segment's end, so that the records cross into the next segment
    offset = draw(st.integers(0, seg_size - 1) | st.integers(seg_size - 6 * PAGE, seg_size - 1)) & ~7
    w = WALWriter(major=major, seg_size=seg_size, start_lsn=segno * seg_size + offset,
                  tli=draw(st.sampled_from([1, 2, 0x1F])), sysid=draw(st.integers(1, 2**64 - 1)))
    for rec in draw(st.lists(records(major), min_size=1, max_size=max_records)):
        # Now and then move the record so that its header is split by a page or segment boundary
        split = draw(st.sampled_from([None] * 5 + [8, 16]))
        if split:
            pos = w.insert_lsn
            boundary = pos - pos % PAGE + PAGE
            seg_end = pos - pos % seg_size + seg_size
            if seg_end - pos < 4 * PAGE and draw(st.booleans()):
                boundary = seg_end
            if boundary - split >= pos:
                w.fill_to(boundary - split)
        w.append(rec)
    return w


# --------------------------------------------------------------------------------------------
# Helpers


def switch_across_segments(w: walgen.Written, seg_size: int) -> bool:
    return w.record.is_switch and w.lsn // seg_size != (w.raw_end - 1) // seg_size


def same_records(got: list, written: list, w: WALWriter) -> None:
    """``got`` are the ``written`` records, field by field."""
    assert [r.lsn for r in got] == [x.lsn for x in written]
    for r, x in zip(got, written):
        exp = expected_record(x, w.major)
        assert r == exp


def expected_record(w: walgen.Written, major: int) -> DecodedRecord:
    rec = w.record
    out = []
    for b, flags in zip(sorted(rec.blocks, key=lambda b: b.id), walgen.block_fork_flags(rec)):
        img = b.image
        if img is None:
            out.append(BlockRef(b.id, b.fork, flags & 0xF0, *b.rel, b.blkno, False, 0, 0, 0, 0, None, b.data))
        else:
            out.append(BlockRef(b.id, b.fork, flags & 0xF0, *b.rel, b.blkno, True, img.info(major), img.hole_offset,
                                img.hole_length, len(img.data), img.data, b.data))
    return DecodedRecord(w.lsn, w.end, w.tot_len, rec.xid, w.prev, rec.info, rec.rmid, w.crc, tuple(out),
                         rec.main_data, rec.origin or 0, rec.toplevel_xid or 0)


@contextlib.contextmanager
def no_hang(seconds: int = 60):
    """Turn a hang into a crash with a traceback (a C loop cannot be interrupted otherwise)."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def read(directory, **kw):
    """(records, stop) of a whole read."""
    reader = XLogReader([directory], **kw)
    with no_hang():
        recs = list(reader)
    return recs, reader.stop


def outcome(directory, name: str, **kw):
    """What implementation ``name`` makes of the input: records, then a stop or a WALError."""
    previous = _impl.IMPL
    _impl.use(name)
    recs = []
    try:
        reader = XLogReader([directory], **kw)
        with no_hang():
            for r in reader:
                recs.append(r)
        return recs, reader.stop
    except WALError as e:  # anything else is a bug and fails the test
        return recs, (type(e).__name__, str(e))
    finally:
        _impl.use(previous)


def page_written(w: WALWriter, lsn: int) -> bool:
    page = lsn - lsn % PAGE
    seg = w.segment_bytes(page // w.seg_size)
    return seg[page % w.seg_size:page % w.seg_size + 2] != b"\0\0"


SETTINGS = dict(deadline=None, suppress_health_check=FUNCTION_FIXTURE, print_blob=True)


# --------------------------------------------------------------------------------------------
# Round trip


@settings(max_examples=100, **SETTINGS)
@given(w=streams())
def test_round_trip(impl, w):
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        recs, stop = read(d)
        assert stop.kind == "end", stop
        same_records(recs, w.written, w)
        # It stops exactly where the written WAL ends, in the file that holds that position
        assert stop.lsn == w.written[-1].end, stop
        assert Path(stop.path).name == w.segment_name(stop.lsn // w.seg_size)
        # and reading from the first real record gives the same records from there on
        recs2, stop2 = read(d, start_lsn=w.start_lsn)
        assert recs2 == recs[w.n_filler:] and stop2 == stop


@settings(max_examples=100, **SETTINGS)
@given(w=streams(max_records=6), data=st.data())
def test_start_and_end_lsn(impl, w, data):
    first, last = w.written[0], w.written[-1]
    start = data.draw(st.none() | st.integers(first.lsn, last.end), label="start")
    lo = start if start is not None else first.lsn
    end = data.draw(st.none() | st.integers(lo + 1, max(lo, last.raw_end) + 1), label="end")
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        recs, stop = read(d, start_lsn=start, end_lsn=end)
    expected = list(w.written)
    if start is not None:
        # XLogFindNextRecord: read from the start of start's page, return what begins at or after start
        expected = [x for x in expected if x.lsn >= start] if page_written(w, start) else []
    if end is not None:
        expected = [x for x in expected if x.raw_end <= end]
    same_records(recs, expected, w)
    if start is not None and not page_written(w, start):
        assert stop.kind == "end", stop  # the page is zeros: nothing to find
    elif end is None:
        assert stop.kind == "end" and stop.lsn == last.end, stop
    elif end <= last.raw_end:
        assert stop.kind == "limit", stop  # a record is cut by the end: reading stops before zeros
    else:
        assert stop.kind in ("end", "limit"), stop  # the zeros right after the last record are at end


@settings(max_examples=40, **SETTINGS)
@given(w=streams())
def test_segments_read_on_their_own(impl, w):
    """read_segment on each segment in turn gives the records of one sequential read."""
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        segs = discover([d])
        with no_hang():
            pieces = [read_segment(segs, s)[0] for s in range(w.first_segno, w.last_segno + 1)]
        recs, _stop = read(d)
    assert [r for piece in pieces for r in piece] == recs


# --------------------------------------------------------------------------------------------
# Damage: both implementations agree


@st.composite
def damaged(draw):
    """A small stream and mutations aimed at its page headers, record headers and bodies."""
    w = draw(streams(max_records=5, seg_sizes=(MB,)))
    recs = w.written[max(0, w.n_filler - 1):]
    lo = recs[0].lsn - recs[0].lsn % PAGE
    hi = w.written[-1].end + PAGE
    pages = list(range(lo, hi, PAGE))
    muts = []
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["any", "page", "record", "record"]))
        if where == "page":
            p = draw(st.sampled_from(pages))
            pos = p + draw(st.integers(0, 39 if p % w.seg_size == 0 else 23))
        elif where == "record":
            r = draw(st.sampled_from(recs))
            pos = walgen.record_bytes_at(w, r, draw(st.integers(0, min(r.tot_len, 40) - 1)))
        else:
            pos = draw(st.integers(lo, hi - 1))
        how = draw(st.sampled_from(["bit", "byte", "u32"]))
        if how == "bit":
            muts.append((pos, "xor", 1 << draw(st.integers(0, 7))))
        elif how == "byte":
            muts.append((pos, "set", bytes([draw(st.integers(0, 255))])))
        else:
            v = draw(st.sampled_from([0, 1, 23, 24, 25, 8192, 0x3FFFFFFF, 0x40000000, 0xFFFFFFFF])
                     | st.integers(0, 2**32 - 1))
            muts.append((pos - pos % 4, "set", v.to_bytes(4, "little")))
    verify = draw(st.booleans())
    start = draw(st.none() | st.integers(recs[0].lsn - PAGE, w.written[-1].end))
    end = draw(st.none() | st.integers(max(lo, start or 0) + 1, hi + PAGE))
    return w, muts, verify, start, end


def write_damaged(w: WALWriter, muts: list, d) -> None:
    """``w``'s segments into ``d`` with the mutations applied."""
    segs = {s: bytearray(w.segment_bytes(s)) for s in range(w.first_segno, w.last_segno + 1)}
    for pos, how, val in muts:
        seg = segs.get(pos // w.seg_size)
        if seg is None:
            continue
        off = pos % w.seg_size
        if how == "xor":
            seg[off] ^= val
        else:
            seg[off:off + len(val)] = val
    for s, data in segs.items():
        (Path(d) / w.segment_name(s)).write_bytes(data)


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@settings(max_examples=400, **SETTINGS)
@given(case=damaged())
def test_implementations_agree_on_damaged_wal(case):
    w, muts, verify, start, end = case
    if start is not None and start < w.first_segno * w.seg_size:
        start = None
    with tempfile.TemporaryDirectory() as d:
        write_damaged(w, muts, d)
        py = outcome(d, "python", start_lsn=start, end_lsn=end, verify_crc=verify)
        cy = outcome(d, "cython", start_lsn=start, end_lsn=end, verify_crc=verify)
    assert py[1] == cy[1], "the implementations stop differently"
    assert py[0] == cy[0], "the implementations return different records"


# --------------------------------------------------------------------------------------------
# Header-only framing (FrameState.firsts, phase 1 of the Spark range path)


def framed(directory, name: str, firsts: dict | None, catalog: tuple | None = None, **kw):
    """(records, stop) of ``frame_segment`` by implementation ``name`` over a whole read, with
    ``FrameState.firsts`` set to ``firsts`` and ``FrameState.catalog`` to ``catalog``; a WALError as
    the stop."""
    previous = _impl.IMPL
    _impl.use(name)
    recs, stop = [], None
    try:
        reader = XLogReader([directory], **kw)
        with no_hang():
            for seg_lsn, buf, path, st in reader.segments_to_read():
                st.firsts = firsts
                st.catalog = catalog
                records, stop = _impl.frame_segment(buf, seg_lsn, st, reader.verify_crc, path)
                recs += records
                if stop is not None:
                    break
        stop = stop or reader.stop
    except WALError as e:
        stop = (type(e).__name__, str(e))
    finally:
        _impl.use(previous)
    return recs, stop


def header_only(records: list) -> tuple[list, dict]:
    """What header-only framing makes of fully framed ``records``: the RM_XACT ones, and each other
    xid's first record."""
    firsts: dict = {}
    for lsn, _end, rec in records:
        xid = int.from_bytes(rec[4:8], "little")
        if rec[17] != walgen.RM_XACT_ID and xid:
            firsts.setdefault(xid, lsn)
    return [r for r in records if r[2][17] == walgen.RM_XACT_ID], firsts


@settings(max_examples=150, **SETTINGS)
@given(w=streams(), data=st.data())
def test_header_only_framing_keeps_xact_records_and_first_xids(impl, w, data):
    """Framing in ``firsts`` mode returns exactly the RM_XACT records of a full framing and notes
    each other xid at its first record, and stops at the same place for the same reason."""
    start = data.draw(st.none() | st.just(w.start_lsn) | st.integers(w.written[0].lsn, w.written[-1].end),
                      label="start")
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        full, stop = framed(d, impl, None, start_lsn=start, verify_crc=False)
        firsts: dict = {}
        xact, stop2 = framed(d, impl, firsts, start_lsn=start, verify_crc=False)
    assert stop2 == stop
    assert (xact, firsts) == header_only(full)


@settings(max_examples=150, **SETTINGS)
@given(w=streams(), nodes=st.sets(st.sampled_from([rel for _spc, _db, rel in RELS])), data=st.data())
def test_catalog_framing_keeps_what_the_catalog_pass_takes(impl, w, nodes, data):
    """Framing in ``firsts`` mode with ``FrameState.catalog`` (phase 1 of the range path taking the
    catalog pass's records in the same read) returns, in order, every record a full framing returns
    that is RM_XACT's or that ``spark.ranges.catalog_records`` takes for those relfilenodes, and of the
    others only records the catalog may need (standby, relation map, heap, heap2, XLOG); what it reads
    up to the header only, with what it returns, gives each xid's first record; it stops alike."""
    from waldecode.spark import ranges
    from waldecode.wal._pyframe import bkpimage_compressed_mask

    start = data.draw(st.none() | st.just(w.start_lsn) | st.integers(w.written[0].lsn, w.written[-1].end),
                      label="start")
    nodes = frozenset(nodes)
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        full, stop = framed(d, impl, None, start_lsn=start, verify_crc=False)
        firsts: dict = {}
        kept, stop2 = framed(d, impl, firsts, (nodes, bkpimage_compressed_mask(w.major)), start_lsn=start,
                             verify_crc=False)
    assert stop2 == stop
    xact, want_firsts = header_only(full)
    taken: list = []
    for r in full:
        try:
            ranges.catalog_records([r], w.major, nodes, taken, True)
        except Exception:  # a record the decoder refuses: the catalog pass would meet it
            taken.append(r)
    assert kept == [r for r in full if r in set(kept)]
    assert set(xact) | set(taken) <= set(kept)
    others = {walgen.RM_XLOG_ID, walgen.RM_XACT_ID, RM_RELMAP_ID, RM_STANDBY_ID, RM_HEAP2_ID, RM_HEAP_ID}
    assert {r[2][17] for r in kept} <= others
    for lsn, _end, rec in kept:
        xid = int.from_bytes(rec[4:8], "little")
        if rec[17] != walgen.RM_XACT_ID and xid and (xid not in firsts or lsn < firsts[xid]):
            firsts[xid] = lsn
    assert firsts == want_firsts


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@settings(max_examples=300, **SETTINGS)
@given(case=damaged())
def test_header_only_framing_on_damaged_wal(case):
    """On damaged WAL both implementations frame alike in ``firsts`` mode, and without CRC checks
    (the mode reads no record body but an RM_XACT one) as a full framing does."""
    w, muts, verify, start, end = case
    if start is not None and start < w.first_segno * w.seg_size:
        start = None
    with tempfile.TemporaryDirectory() as d:
        write_damaged(w, muts, d)
        got = {}
        for name in ("python", "cython"):
            firsts: dict = {}
            xact, stop = framed(d, name, firsts, start_lsn=start, end_lsn=end, verify_crc=verify)
            got[name] = (xact, firsts, stop)
            firsts = {}
            # and with the catalog's records taken too (FrameState.catalog): the same on both sides
            kept, stop = framed(d, name, firsts, (frozenset({16384, 1262}), 0x1C), start_lsn=start, end_lsn=end,
                                verify_crc=verify)
            got[name + "+catalog"] = (kept, firsts, stop)
        full, full_stop = framed(d, "cython", None, start_lsn=start, end_lsn=end, verify_crc=False)
    assert got["python"] == got["cython"]
    assert got["python+catalog"] == got["cython+catalog"]
    if not verify:
        assert got["cython"] == (*header_only(full), full_stop)


# --------------------------------------------------------------------------------------------
# The framing state each call hands on (FrameState): the same under both implementations

_STATE = ("latest_tli", "next_lsn", "prev_lsn", "rand_access", "partial", "partial_lsn", "partial_total",
          "switch_seen", "partial_header_only")


def framing_states(directory, name: str, mode: str, **kw) -> list:
    """Per ``frame_segment`` call of implementation ``name`` over a whole read: (its records, its stop,
    the FrameState fields after it); ``mode``: "plain", "firsts" (with the dict after each call) or
    "catalog" (FrameState.catalog too); a WALError ends the list."""
    previous = _impl.IMPL
    _impl.use(name)
    calls = []
    try:
        reader = XLogReader([directory], **kw)
        firsts: dict | None = None if mode == "plain" else {}
        with no_hang():
            for seg_lsn, buf, path, st in reader.segments_to_read():
                st.firsts = firsts
                st.catalog = (frozenset({16384, 1262}), 0x1C) if mode == "catalog" else None
                records, stop = _impl.frame_segment(buf, seg_lsn, st, reader.verify_crc, path)
                state = {k: getattr(st, k) for k in _STATE}
                state["partial"] = None if st.partial is None else bytes(st.partial)
                calls.append((records, stop, state, dict(firsts) if firsts is not None else None))
                if stop is not None:
                    break
    except WALError as e:
        calls.append((type(e).__name__, str(e)))
    finally:
        _impl.use(previous)
    return calls


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@settings(max_examples=300, **SETTINGS)
@given(case=damaged(), mode=st.sampled_from(["plain", "firsts", "catalog"]))
def test_framing_state_the_same_on_damaged_wal(case, mode):
    """Both framers (native/wd_xlogframe.h under Cython) return the same records and stops and leave the same
    FrameState after every segment read through, in each of its modes: what the next segment, the reader and
    Spark's phase 1 read from it."""
    w, muts, verify, start, end = case
    if start is not None and start < w.first_segno * w.seg_size:
        start = None
    with tempfile.TemporaryDirectory() as d:
        write_damaged(w, muts, d)
        py = framing_states(d, "python", mode, start_lsn=start, end_lsn=end, verify_crc=verify)
        cy = framing_states(d, "cython", mode, start_lsn=start, end_lsn=end, verify_crc=verify)
    same_calls(py, cy)


def same_calls(py: list, cy: list) -> None:
    """``framing_states`` of both implementations equal, the first difference named."""
    for i, (p, c) in enumerate(zip(py, cy)):
        if len(p) == 4 and len(c) == 4:
            assert p[1] == c[1], f"call {i}: the implementations stop differently"
            assert p[0] == c[0], f"call {i}: the implementations return different records"
            if p[1] is None:
                # what the next segment starts from (after a stop the reader reads no further, and the
                # native framer hands the reference a later start than the reference's own)
                assert p[2] == c[2], f"call {i}: different FrameState"
            assert p[3] == c[3], f"call {i}: different firsts"
        else:
            assert p == c, f"call {i}"
    assert len(py) == len(cy)


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@settings(max_examples=100, **SETTINGS)
@given(w=streams(), mode=st.sampled_from(["plain", "firsts", "catalog"]), data=st.data())
def test_framing_state_the_same_across_segments(w, mode, data):
    """On whole WAL with records and headers split across pages and segments, read from anywhere: the
    same records and FrameState after each segment under both implementations."""
    start = data.draw(st.none() | st.integers(w.first_segno * w.seg_size, w.written[-1].end))
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        py = framing_states(d, "python", mode, start_lsn=start)
        cy = framing_states(d, "cython", mode, start_lsn=start)
    same_calls(py, cy)


# --------------------------------------------------------------------------------------------
# Reader bugs found by the properties above (now fixed), pinned as examples


def test_switch_record_across_segments_ends_a_segment_later(impl, tmp_path):
    """An XLOG_SWITCH starting 16 bytes before a segment's end continues into the next segment and
    consumes it: EndRecPtr is the start of the segment after that (pg_waldump reads the next record
    there, see test_walgen.py), and the reader does find the next record there."""
    w = WALWriter(major=15, seg_size=MB, start_lsn=2 * MB - 16)
    sw = w.append(Record(walgen.RM_XLOG_ID, walgen.XLOG_SWITCH))
    after = w.append(walgen.noop(100))
    w.write(tmp_path)
    recs, stop = read(tmp_path, start_lsn=w.start_lsn)
    assert [r.lsn for r in recs] == [sw.lsn, after.lsn] == [0x1FFFF0, 0x300028]
    assert stop.kind == "end"
    assert recs[0].end_lsn == sw.end == 0x300000


def test_timeline_rises_inside_a_segment(impl, request, tmp_path):
    """The first segment of a new timeline starts with pages of the old one (lower xlp_tli), as after
    a promotion: a normal end of WAL must stay a normal end."""
    w = WALWriter(major=16, seg_size=MB, start_lsn=MB, tli=1)
    w.append(walgen.noop(100))
    w.tli = 2  # pages from here on carry the new timeline
    w.extend([walgen.noop(9000), walgen.noop(100)])
    w.write(tmp_path)
    recs, stop = read(tmp_path)
    assert [r.lsn for r in recs] == [x.lsn for x in w.written]
    assert stop.kind == "end" and stop.lsn == w.written[-1].end, stop
    assert "invalid record length" in stop.reason


def test_huge_xlp_rem_len_on_the_start_page(impl, request, tmp_path):
    """Reading from a page whose contrecord tail claims 0xFFFFFFFF bytes: XLogFindNextRecord computes
    MAXALIGN(xlp_rem_len) in 64 bits, finds it longer than the page and goes on to the next page."""
    w = WALWriter(major=15, seg_size=MB, start_lsn=MB)
    w.extend([walgen.noop(100), walgen.noop(5 * PAGE), walgen.noop(300), walgen.noop(200)])
    w.write(tmp_path)
    big = w.written[1]
    page = big.lsn - big.lsn % PAGE + 2 * PAGE  # a page the big record continues onto, and past
    path = w.path_of(tmp_path, page)
    buf = bytearray(path.read_bytes())
    assert buf[page % MB + 2] & 1  # XLP_FIRST_IS_CONTRECORD
    buf[page % MB + 16:page % MB + 20] = (0xFFFFFFFF).to_bytes(4, "little")
    path.write_bytes(bytes(buf))
    recs, stop = read(tmp_path, start_lsn=page, verify_crc=False)
    assert [r.lsn for r in recs] == [x.lsn for x in w.written[2:]]
    assert stop.kind == "end" and stop.lsn == w.written[-1].end


# --------------------------------------------------------------------------------------------
# native/wd_xlogrecord.h, the one DecodeXLogRecord of the extensions, against the reference

# The reference's message of each WdDecodeError (waldecode/wal/_pyframe.py decode_record)
DECODE_ERROR_MESSAGES = {
    "WD_DECODE_INVALID_LENGTH": "record with invalid length at ",
    "WD_DECODE_INVALID_BLOCK_ID": "invalid block_id ",
    "WD_DECODE_OUT_OF_ORDER_BLOCK_ID": "out-of-order block_id ",
    "WD_DECODE_HAS_DATA_NO_DATA": "BKPBLOCK_HAS_DATA set, but no data included at ",
    "WD_DECODE_NO_HAS_DATA_BUT_DATA": "BKPBLOCK_HAS_DATA not set, but data length is ",
    "WD_DECODE_HOLE_INVALID": "BKPIMAGE_HAS_HOLE set, but hole offset ",
    "WD_DECODE_NO_HOLE_BUT_HOLE": "BKPIMAGE_HAS_HOLE not set, but hole offset ",
    "WD_DECODE_COMPRESSED_FULL_IMAGE": "BKPIMAGE_COMPRESSED set, but block image length ",
    "WD_DECODE_SAME_REL_NO_PREVIOUS": "BKPBLOCK_SAME_REL set but no previous rel at ",
}


@st.composite
def record_bytes(draw):
    """(major, bytes) of one record as walgen writes it, often damaged after its header: a field of
    its first block header changed, bytes changed among the block headers (where the checks are),
    cut or lengthened, xl_tot_len then
    mostly kept equal to the bytes' length, as framing hands them out."""
    major = draw(st.integers(13, 18))
    rec = bytearray(walgen.assemble(draw(records(major)), draw(st.integers(0, 2**64 - 1)), major))
    how = draw(st.sampled_from(["sound", "bytes", "bytes", "block", "block", "block", "block", "cut", "longer"]))
    if how == "block" and len(rec) > 24 and rec[24] <= 32:
        # one field of the first block's header, each check's own: its id, a fork_flags bit, its
        # data length, and, with an image, a bimg_info bit or the hole offset
        fields = [(24, 1), (25, 1), (26, 2)] + ([(30, 2), (32, 1)] if rec[25] & walgen.BKPBLOCK_HAS_IMAGE else [])
        pos, size = draw(st.sampled_from(fields))
        if pos == 25:
            rec[pos] ^= draw(st.sampled_from([walgen.BKPBLOCK_HAS_IMAGE, walgen.BKPBLOCK_HAS_DATA,
                                              walgen.BKPBLOCK_SAME_REL, 1 << draw(st.integers(0, 7))]))
        elif size == 1:
            rec[pos] ^= 1 << draw(st.integers(0, 7))
        else:
            rec[pos:pos + 2] = draw(st.sampled_from([0, 1, PAGE])).to_bytes(2, "little")
    elif how == "bytes" and len(rec) > 24:
        for _ in range(draw(st.integers(1, 4))):
            # the block headers are first after the record header, and short
            pos = draw(st.integers(24, min(len(rec) - 1, 24 + 120)))
            rec[pos] = draw(st.integers(0, 255)) if draw(st.booleans()) else rec[pos] ^ (1 << draw(st.integers(0, 7)))
    elif how == "cut" and len(rec) > 24:
        del rec[draw(st.integers(24, len(rec) - 1)):]
    elif how == "longer":
        rec += bytes(draw(st.integers(1, 8)))
    if draw(st.integers(0, 9)):
        rec[0:4] = len(rec).to_bytes(4, "little")
    return major, bytes(rec)


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@settings(max_examples=1500, **SETTINGS)
@given(case=record_bytes())
def test_one_decode_xlog_record_agrees_with_the_reference(case):
    """wd_DecodeXLogRecord (through _native.decoded_xlogrecord) fails the reference's check, with
    its message, or gives every field of the reference's DecodedRecord, and what the reference does
    not keep: has_data, apply_image (XLogRecBlockImageApply), the offsets, max_block_id."""
    import waldecode._native as native
    from waldecode.errors import CorruptRecordError
    from waldecode.rmgr.rmgrdesc_utils import block_image_apply
    from waldecode.wal import _pyframe

    major, rec = case
    err, got = native.decoded_xlogrecord(rec, major)
    event(err)
    if int.from_bytes(rec[:4], "little") != len(rec):
        # framing hands every decoder exactly xl_tot_len bytes; the C calls other bytes a record of an
        # invalid length (its callers then ask the reference, which reads xl_tot_len bytes)
        assert err == "WD_DECODE_INVALID_LENGTH"
        return
    try:
        ref = _pyframe.decode_record(rec, 0x1000028, 0x1000028 + len(rec), major)
    except CorruptRecordError as e:
        assert err != "WD_DECODE_OK" and got is None
        assert str(e).startswith(DECODE_ERROR_MESSAGES[err]), (err, str(e))
        with pytest.raises(CorruptRecordError) as native_error:
            native.decode_record(rec, 0x1000028, 0x1000028 + len(rec), major)
        assert str(native_error.value) == str(e)
        return
    assert err == "WD_DECODE_OK"
    assert native.decode_record(rec, ref.lsn, ref.end_lsn, major) == ref
    assert (got["xl_tot_len"], got["xl_xid"], got["xl_prev"], got["xl_info"], got["xl_rmid"], got["xl_crc"]) \
        == (ref.xl_tot_len, ref.xl_xid, ref.xl_prev, ref.xl_info, ref.xl_rmid, ref.xl_crc)
    assert (got["record_origin"], got["toplevel_xid"]) == (ref.origin, ref.toplevel_xid)
    assert rec[got["main_data"]:got["main_data"] + got["main_data_len"]] == ref.main_data
    assert got["main_data"] + got["main_data_len"] == len(rec)
    assert got["max_block_id"] == (ref.blocks[-1].block_id if ref.blocks else -1)
    assert len(got["blocks"]) == len(ref.blocks)
    for g, b in zip(got["blocks"], ref.blocks):
        assert (g["block_id"], g["forknum"], g["flags"] & 0xF0, g["flags"] & 0x0F) \
            == (b.block_id, b.forknum, b.flags, b.forknum)
        assert (g["rlocator"], g["blkno"]) == ((b.spcOid, b.dbOid, b.relNumber), b.blkno)
        assert (bool(g["has_image"]), g["bimg_info"], g["hole_offset"], g["hole_length"], g["bimg_len"]) \
            == (b.has_image, b.bimg_info, b.hole_offset, b.hole_length, b.bimg_len)
        if b.has_image:
            assert rec[g["bkp_image"]:g["bkp_image"] + g["bimg_len"]] == b.image
            assert bool(g["apply_image"]) == block_image_apply(b, major)
        else:
            assert g["bkp_image"] is None and not g["apply_image"]
        assert rec[g["data"]:g["data"] + g["data_len"]] == b.data
        assert bool(g["has_data"]) == (len(b.data) > 0)


def image_record(bimg_len: int, hole_offset: int, bimg_info: int) -> bytes:
    """A heap record of one block with an image of these XLogRecordBlockImageHeader fields, no
    XLogRecordBlockCompressHeader, its bytes zeros."""
    import struct

    body = struct.pack("<BBH", 0, walgen.BKPBLOCK_HAS_IMAGE, 0) \
        + struct.pack("<HHB", bimg_len, hole_offset, bimg_info) + struct.pack("<IIII", *RELS[0], 7) + bytes(bimg_len)
    return struct.pack("<IIQBBH", 24 + len(body), 5, 0, 0, RM_HEAP_ID, 0) + bytes(4) + body


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
def test_an_uncompressed_image_longer_than_a_page():
    """An image with a hole whose bimg_len passes BLCKSZ: DecodeXLogRecord takes it (its checks do not
    look at that), its hole length BLCKSZ - bimg_len below 0, as the reference has it."""
    import waldecode._native as native
    from waldecode.wal import _pyframe

    rec = image_record(PAGE + 8, 100, walgen.BKPIMAGE_HAS_HOLE | walgen.BKPIMAGE_APPLY)
    ref = _pyframe.decode_record(rec, 0x1000028, 0x1000028 + len(rec), 16)
    assert ref.blocks[0].hole_length == -8
    assert native.decode_record(rec, 0x1000028, 0x1000028 + len(rec), 16) == ref
    assert native.decoded_xlogrecord(rec, 16)[1]["blocks"][0]["hole_length"] == -8


@pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")
@pytest.mark.parametrize("major, bimg_info", [(16, walgen.BKPIMAGE_COMPRESS_LZ4),
                                              (13, walgen.BKPIMAGE_IS_COMPRESSED_V13)])
def test_a_compressed_image_of_a_whole_page(major, bimg_info):
    """The check damage rarely reaches: a compressed image of BLCKSZ bytes."""
    import waldecode._native as native
    from waldecode.errors import CorruptRecordError

    rec = image_record(PAGE, 0, bimg_info)
    assert native.decoded_xlogrecord(rec, major)[0] == "WD_DECODE_COMPRESSED_FULL_IMAGE"
    with pytest.raises(CorruptRecordError, match="^BKPIMAGE_COMPRESSED set, but block image length 8192 at 0/1000028$"):
        native.decode_record(rec, 0x1000028, 0x1000028 + len(rec), major)
