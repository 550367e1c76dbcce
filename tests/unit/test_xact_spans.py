"""Parity of the native phase 1 of Spark's range path (``_logical.xact_spans``) with its reference
(``spark.ranges.xact_spans``).

Both run over the same framed records and must fill the same ``firsts`` and ``ended`` and return
the same two-phase flag: over every fixture's WAL, one segment at a time as ``ranges.run_spans``
frames it (``tasks.frame_run``); and over records hypothesis writes (``walgen.assemble``) — COMMIT
and ABORT records with or without xinfo, dbinfo, subtransactions, relation locators, invalidations,
dropped stats, a two-phase part, an origin (xinfo's and the record's origin block), main data cut
short anywhere, among other records and two-phase ones — where the two give the same result or
raise the same error type.  ``_logical.XactEnds``, which keeps ``ended`` and gives ``RunSpans``'
sorted columns and open xids, agrees with ``ranges.XactEnds`` on ends hypothesis draws.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixture_data import all_fixtures
from walgen import Block, Record, assemble
from waldecode import _impl
from waldecode.rmgr import RM_HEAP_ID, RM_STANDBY_ID, RM_XACT_ID
from waldecode.rmgr.xact import (
    XACT_XINFO_HAS_AE_LOCKS,
    XACT_XINFO_HAS_DBINFO,
    XACT_XINFO_HAS_DROPPED_STATS,
    XACT_XINFO_HAS_GID,
    XACT_XINFO_HAS_INVALS,
    XACT_XINFO_HAS_ORIGIN,
    XACT_XINFO_HAS_RELFILELOCATORS,
    XACT_XINFO_HAS_SUBXACTS,
    XACT_XINFO_HAS_TWOPHASE,
    XLOG_XACT_ABORT,
    XLOG_XACT_ABORT_PREPARED,
    XLOG_XACT_ASSIGNMENT,
    XLOG_XACT_COMMIT,
    XLOG_XACT_COMMIT_PREPARED,
    XLOG_XACT_HAS_INFO,
    XLOG_XACT_PREPARE,
)
from waldecode.spark import ranges, tasks
from waldecode.wal.segments import discover

logical_native = pytest.importorskip("waldecode._logical") if "cython" in _impl.available() else None
native = pytest.mark.skipif(logical_native is None or not hasattr(logical_native, "xact_spans"),
                            reason="the Cython implementation is not built")


def spans_of(fn, framed, major: int):
    """(firsts, ended's columns, returned or the error's type) of ``fn`` over ``framed``."""
    firsts: dict = {}
    ended = (ranges.XactEnds if fn is ranges.xact_spans else logical_native.XactEnds)()
    try:
        out = fn(framed, major, firsts, ended, ranges.xact_end)
    except Exception as e:  # the error type is what both must agree on
        out = type(e)
    return firsts, ended.columns(), out


def assert_same(framed, major: int) -> tuple:
    want = spans_of(ranges.xact_spans, framed, major)
    assert spans_of(logical_native.xact_spans, framed, major) == want
    return want


# -- every fixture's WAL ----------------------------------------------------------------------------

FIXTURES = all_fixtures()


@native
@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_native_spans_equal_the_reference_over_the_fixtures(fx):
    segments = discover([fx.wal_dir], None)
    seen_ended = 0
    for segno in range(segments.first_segno, segments.last_segno + 1):
        for path, raw in tasks.frame_run(segments, segno, segno, None, None):
            if path in ("stop", "error"):
                break
            if raw:
                firsts, ended, out = assert_same(raw, segments.major)
                assert out in (True, False)  # not an error
                seen_ended += len(ended)
    assert seen_ended  # every fixture commits something: the test reads commit records


# -- synthetic commit and abort records -------------------------------------------------------------

MAJORS = [14, 15, 16]


def xact_main(info: int, has_info: bool, xinfo: int, major: int, xid: int, subs, nsubs: int, nlocators: int,
              ninvals: int, xact_time: int = 0) -> bytes:
    """The main data of a COMMIT or ABORT record, in the order ParseCommitRecord reads it."""
    main = struct.pack("<q", xact_time)
    if has_info:
        main += struct.pack("<I", xinfo)
    if xinfo & XACT_XINFO_HAS_DBINFO:
        main += struct.pack("<II", 5, 1663)
    if xinfo & XACT_XINFO_HAS_SUBXACTS:
        main += struct.pack("<i", nsubs) + struct.pack(f"<{len(subs)}I", *subs)
    if xinfo & XACT_XINFO_HAS_RELFILELOCATORS:
        main += struct.pack("<i", nlocators) + struct.pack("<III", 1663, 5, 16384) * nlocators
    if major >= 15 and xinfo & XACT_XINFO_HAS_DROPPED_STATS:
        main += struct.pack("<i", 0)
    if info == XLOG_XACT_COMMIT and xinfo & XACT_XINFO_HAS_INVALS:
        main += struct.pack("<i", ninvals) + bytes(16 * ninvals)
    if xinfo & XACT_XINFO_HAS_TWOPHASE:
        main += struct.pack("<I", xid)
        if xinfo & XACT_XINFO_HAS_GID:
            main += b"gid\0"
    if xinfo & XACT_XINFO_HAS_ORIGIN:
        main += struct.pack("<Qq", 0x1234, 0)
    return main


@st.composite
def xact_record(draw, major: int, xid: int):
    """A COMMIT or ABORT record as XactLogCommitRecord / XactLogAbortRecord lay it out, its main data
    perhaps cut short (or with bytes after it)."""
    info = draw(st.sampled_from([XLOG_XACT_COMMIT, XLOG_XACT_ABORT]))
    has_info = draw(st.booleans())
    flags = [XACT_XINFO_HAS_DBINFO, XACT_XINFO_HAS_SUBXACTS, XACT_XINFO_HAS_ORIGIN, XACT_XINFO_HAS_AE_LOCKS,
             XACT_XINFO_HAS_RELFILELOCATORS, XACT_XINFO_HAS_INVALS, XACT_XINFO_HAS_DROPPED_STATS,
             XACT_XINFO_HAS_TWOPHASE, XACT_XINFO_HAS_GID, 1 << 29, 1 << 12]
    xinfo = 0
    if has_info:
        for f, weight in zip(flags, [6, 5, 3, 2, 2, 3, 2, 1, 1, 1, 1]):
            if draw(st.integers(0, 9)) < weight:
                xinfo |= f
    subs = draw(st.lists(st.integers(1, 0xFFFFFFFF), max_size=6))
    nsubs = draw(st.sampled_from([len(subs)] * 6 + [-1, len(subs) + 3]))
    nlocators, ninvals = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    main = xact_main(info, has_info, xinfo, major, xid, subs, nsubs, nlocators, ninvals,
                     draw(st.integers(-(1 << 40), 1 << 40)))
    cut = draw(st.sampled_from(["whole"] * 3 + ["short", "tail", "tail", "long"]))
    if cut == "short":
        main = main[:draw(st.integers(0, len(main) - 1))]
    elif cut == "tail":  # in the last parts, where a wrong length check would show
        main = main[:-draw(st.integers(1, min(len(main), 20)))]
    elif cut == "long":
        main += b"\x07" * draw(st.integers(1, 9))
    origin = draw(st.sampled_from([None, None, 3]))
    return Record(RM_XACT_ID, info | (XLOG_XACT_HAS_INFO if has_info else 0), xid, main_data=main, origin=origin)


@st.composite
def streams(draw):
    major = draw(st.sampled_from(MAJORS))
    framed = []
    lsn = 0x1000028
    for _ in range(draw(st.integers(1, 12))):
        xid = draw(st.sampled_from([0, 700, 701, 702, 703, 704]))
        kind = draw(st.sampled_from(["xact"] * 4 + ["heap", "standby", "two_phase", "assignment"]))
        if kind == "xact":
            rec = draw(xact_record(major, xid))
        elif kind == "heap":
            rec = Record(RM_HEAP_ID, 0, xid, (Block(0, data=b"row"),), struct.pack("<HB", 1, 0))
        elif kind == "standby":
            rec = Record(RM_STANDBY_ID, 0x10, 0, main_data=bytes(24))
        elif kind == "assignment":
            rec = Record(RM_XACT_ID, XLOG_XACT_ASSIGNMENT, xid, main_data=struct.pack("<Ii", xid, 0))
        else:
            op = draw(st.sampled_from([XLOG_XACT_PREPARE, XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_ABORT_PREPARED]))
            rec = Record(RM_XACT_ID, op, xid, main_data=bytes(16))
        raw = assemble(rec, 0, major)
        framed.append((lsn, lsn + len(raw), raw))
        lsn += (len(raw) + 7) & ~7
    return major, framed


@native
@settings(max_examples=400, deadline=None)
@given(streams())
def test_native_spans_equal_the_reference_over_synthetic_records(stream):
    major, framed = stream
    assert_same(framed, major)


@native
def test_the_native_spans_read_the_subtransactions_of_commits_and_aborts():
    """The cases the property test must cover, pinned: subtransactions listed, ended with their top."""
    major = 15
    commit = struct.pack("<qI", 0, XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_SUBXACTS) + struct.pack("<II", 5, 1663) \
        + struct.pack("<i3I", 3, 801, 802, 803)
    abort = struct.pack("<qI", 0, XACT_XINFO_HAS_SUBXACTS) + struct.pack("<i2I", 2, 901, 902)
    recs = [Record(RM_HEAP_ID, 0, 800, (Block(0, data=b"row"),), struct.pack("<HB", 1, 0)),
            Record(RM_XACT_ID, XLOG_XACT_COMMIT | XLOG_XACT_HAS_INFO, 800, main_data=commit),
            Record(RM_XACT_ID, XLOG_XACT_ABORT | XLOG_XACT_HAS_INFO, 900, main_data=abort)]
    framed = []
    lsn = 0x1000028
    for rec in recs:
        raw = assemble(rec, 0, major)
        framed.append((lsn, lsn + len(raw), raw))
        lsn += (len(raw) + 7) & ~7
    firsts, ended, out = assert_same(framed, major)
    assert out is False and firsts == {800: framed[0][0]}
    c, a = (framed[1][0], 1), (framed[2][0], 0)
    xids, lsns, commits = ended
    assert list(zip(xids, zip(lsns, commits))) == [(800, c), (801, c), (802, c), (803, c), (900, a), (901, a), (902, a)]


PARTS = [XACT_XINFO_HAS_DBINFO, XACT_XINFO_HAS_SUBXACTS, XACT_XINFO_HAS_RELFILELOCATORS, XACT_XINFO_HAS_INVALS,
         XACT_XINFO_HAS_DROPPED_STATS, XACT_XINFO_HAS_TWOPHASE, XACT_XINFO_HAS_ORIGIN]


@native
@pytest.mark.parametrize("major", [14, 15])
@pytest.mark.parametrize("info", [XLOG_XACT_COMMIT, XLOG_XACT_ABORT])
def test_native_spans_equal_the_reference_with_main_data_cut_anywhere(info, major):
    """Every combination of the parts xinfo announces, the main data cut at every length: where a part
    the native path steps over or leaves to the reference is cut, the two still agree."""
    for mask in range(1 << len(PARTS)):
        xinfo = 0
        for i, f in enumerate(PARTS):
            if mask >> i & 1:
                xinfo |= f
        main = xact_main(info, True, xinfo, major, 700, [701, 702], 2, 1, 1)
        for n in range(len(main) + 1):
            raw = assemble(Record(RM_XACT_ID, info | XLOG_XACT_HAS_INFO, 700, main_data=main[:n]), 0, major)
            assert_same([(0x1000028, 0x1000028 + len(raw), raw)], major)


# -- the ended xids as columns ----------------------------------------------------------------------


@native
@settings(max_examples=300, deadline=None)
@given(ends=st.lists(st.tuples(st.integers(1, 2**32 - 1) | st.integers(1, 40), st.integers(0, 2**64 - 1),
                               st.sampled_from([0, 1])), max_size=300),
       firsts=st.dictionaries(st.integers(1, 2**32 - 1) | st.integers(1, 40), st.integers(0, 2**64 - 1),
                              max_size=100))
def test_native_xact_ends_equal_the_reference(ends, firsts):
    """RunSpans' columns (sorted by xid: plan_ranges bisects them, an xid ended again keeping its last
    end) and the open xids come out alike from both; reading them twice changes nothing."""
    got, want = logical_native.XactEnds(), ranges.XactEnds()
    for xid, lsn, commit in ends:
        got.add(xid, lsn, commit)
        want.add(xid, lsn, commit)
    assert got.columns() == want.columns()
    assert list(got.columns()[0]) == sorted({xid for xid, _, _ in ends})
    assert list(got.open_of(firsts).items()) == list(want.open_of(firsts).items())
    assert len(got) == len(want)
    if ends:  # more after a read: sorted again
        got.add(*ends[0])
        want.add(*ends[0])
        assert got.columns() == want.columns()
