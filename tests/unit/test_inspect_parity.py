"""``waldecode inspect`` under both implementations: the same bytes, the same stop, the same error.

``waldump.inspect`` runs either the pure-Python loop (the reference: ``XLogReader`` records
through ``waldump.format_record`` and ``WaldumpStats``) or the native one
(``waldecode._waldump``: framing, block headers, descriptions and --stats counters in C).
On WAL written by tests/walgen.py — records of the resource managers described natively
(heap, heap2, btree, xact, standby, XLOG FPIs) with structured and random main data of every
length, other records (described by the Python fallback), records across pages and segments,
versions 13 to 18 — and on randomly damaged copies, both must print the same bytes for the
text, ``--bkp-details``, ``--stats=record`` and ``--stats=rmgr``, with pg_waldump's filters,
and end the same way (the same ReadStop, or the same WALError with the text printed before it).
"""

from __future__ import annotations

import io
import random
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import walgen
from walgen import MB, Block, Image, Record, WALWriter
from waldecode import _impl, waldump
from waldecode.errors import WALError
from waldecode.wal.xlogreader import XLogReader

pytestmark = pytest.mark.skipif("cython" not in _impl.available(), reason="the Cython extension is not built")

PAGE = 8192
RELS = [(1663, 5, 16384), (1663, 5, 16385), (1664, 0, 1262), (1700, 16390, 24576)]
SETTINGS = dict(deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MODES = [dict(), dict(bkp_details=True), dict(stats="record"), dict(stats="rmgr")]

# The resource managers whose descriptions are written natively, and the others
NATIVE_RMIDS = [0, 1, 2, 8, 9, 10, 11]


def _bytes(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


@st.composite
def images(draw, major: int):
    kind = draw(st.sampled_from(["plain", "hole", "compressed", "compressed+hole"]))
    hole = off = 0
    if kind.endswith("hole"):
        hole = draw(st.integers(1, PAGE - 1))
        off = draw(st.integers(1, PAGE - hole))
    seed = draw(st.integers(0, 2**32 - 1))
    apply = draw(st.booleans())
    if kind.startswith("compressed"):
        method = draw(st.sampled_from(["pglz"] if major < 15 else ["pglz", "lz4", "zstd"]))
        return Image(_bytes(seed, draw(st.integers(1, PAGE - 1))), off, hole, method, apply)
    return Image(_bytes(seed, PAGE - hole), off, hole, None, apply)


@st.composite
def blocks(draw, major: int):
    out = []
    for bid in sorted(draw(st.sets(st.integers(0, 5) | st.integers(0, 32), max_size=3))):
        n = draw(st.sampled_from([0, 0, 2, 4, 9, 40, 300]))
        img = draw(images(major)) if draw(st.integers(0, 4)) == 0 else None
        out.append(Block(bid, draw(st.sampled_from(RELS)), draw(st.integers(0, 2**32 - 1)),
                         fork=draw(st.sampled_from([0, 0, 0, 1, 2, 3])), data=_bytes(bid * 131 + n, n), image=img,
                         will_init=draw(st.booleans())))
    return tuple(out)


@st.composite
def xact_main(draw):
    """xl_xact_commit / xl_xact_abort with the parts the native describer writes, and some it leaves."""
    ts = draw(st.integers(-2**40, 2**52) | st.sampled_from([0, -1, 2**63 - 1, -2**63]))
    xinfo = 0
    for bit in draw(st.lists(st.sampled_from([0x01, 0x02, 0x40, 1 << 29, 1 << 30, 1 << 31, 0x04, 0x08, 0x20]),
                             max_size=4)):
        xinfo |= bit
    out = struct.pack("<q", ts)
    if xinfo or draw(st.booleans()):
        out += struct.pack("<I", xinfo)
    if xinfo & 0x01:
        out += struct.pack("<II", 1663, draw(st.integers(0, 2**32 - 1)))
    if xinfo & 0x02:
        n = draw(st.integers(0, 5))
        out += struct.pack("<i", n) + b"".join(struct.pack("<I", draw(st.integers(0, 2**32 - 1))) for _ in range(n))
    if xinfo & 0x08:
        out += draw(inval_msgs())
    return out + _bytes(ts & 0xFFFF, draw(st.sampled_from([0, 0, 3, 40])))[:draw(st.integers(0, 40))], bool(
        xinfo or len(out) > 8)


@st.composite
def inval_msgs(draw):
    """int32 nmsgs, then SharedInvalidationMessages (sinval.h): every id, sometimes fewer than announced."""
    msgs = [struct.pack("<b3xII4x", draw(st.integers(-7, 3)), draw(st.integers(0, 2**32 - 1)),
                        draw(st.integers(0, 2**32 - 1))) for _ in range(draw(st.integers(0, 4)))]
    n = draw(st.sampled_from([len(msgs), len(msgs), len(msgs) + 1, -1]))
    return struct.pack("<i", n) + b"".join(msgs)


@st.composite
def running_xacts_main(draw):
    xcnt = draw(st.integers(-1, 4))
    subxcnt = draw(st.integers(-1, 4))
    xids = [draw(st.integers(0, 2**32 - 1)) for _ in range(max(xcnt, 0) + max(subxcnt, 0))]
    return struct.pack("<iiB3xIII", xcnt, subxcnt, draw(st.integers(0, 1)), *(draw(st.integers(0, 2**32 - 1))
                                                                              for _ in range(3))) + struct.pack(
        "<%dI" % len(xids), *xids)


@st.composite
def records(draw, major: int):
    rmid = draw(st.sampled_from(NATIVE_RMIDS) | st.integers(0, 21))
    info = draw(st.integers(0, 255))
    if rmid == 0 and info & 0xF0 == walgen.XLOG_SWITCH:
        info ^= 0x10
    main = _bytes(draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 48) | st.sampled_from([2, 3, 8, 14, 24, 34])))
    if rmid == 1 and draw(st.booleans()):
        main, has_info = draw(xact_main())
        info = draw(st.sampled_from([0x00, 0x20])) | (0x80 if has_info else 0)
    elif rmid == 8 and draw(st.booleans()):
        info, main = 0x10, draw(running_xacts_main())
    elif rmid == 8 and draw(st.booleans()):  # XLOG_INVALIDATIONS: dbId, tsId, relcacheInitFileInval, nmsgs
        info, main = 0x20, struct.pack("<IIB3x", 5, 1663, draw(st.integers(0, 1))) + draw(inval_msgs())
    elif rmid == 1 and draw(st.booleans()):  # XLOG_XACT_INVALIDATIONS (14+)
        info, main = 0x60, draw(inval_msgs())
    elif rmid == 2 and draw(st.booleans()):  # XLOG_SMGR_CREATE / TRUNCATE
        spc = draw(st.sampled_from([1663, 1664, 1700]))
        info = draw(st.sampled_from([0x10, 0x20]))
        main = (struct.pack("<IIIi", spc, 5, 16384, draw(st.integers(-1, 4))) if info == 0x10
                else struct.pack("<IIIIi", 12, spc, 5, 16384, 7))
    return Record(rmid, info, xid=draw(st.integers(0, 2**32 - 1) | st.sampled_from([0, 7])),
                  blocks=draw(st.just(()) | blocks(major)), main_data=main,
                  origin=draw(st.none() | st.integers(1, 65535)),
                  toplevel_xid=draw(st.none() | st.integers(1, 2**32 - 1)) if major >= 14 else None)


@st.composite
def streams(draw, max_records: int = 12):
    major = draw(st.integers(13, 18))
    offset = draw(st.integers(0, MB - 1) | st.integers(MB - 3 * PAGE, MB - 1)) & ~7
    w = WALWriter(major=major, seg_size=MB, start_lsn=MB + offset)
    for rec in draw(st.lists(records(major), min_size=1, max_size=max_records)):
        if draw(st.integers(0, 9)) == 0:  # now and then a record that crosses pages
            rec = Record(rec.rmid, rec.info, rec.xid, rec.blocks, rec.main_data + _bytes(1, 9000), rec.origin,
                         rec.toplevel_xid)
        w.append(rec)
    return w


def run(directory, impl: str, *, start=None, end=None, verify=True, **kw):
    """What ``inspect`` prints under ``impl``, and how it ended (stop, or the error)."""
    out = io.BytesIO()
    try:
        reader = XLogReader([directory], start, end, verify_crc=verify)
        shown = waldump.inspect(reader, out.write, impl=impl, **kw)
    except WALError as e:  # anything else is a bug and fails the test
        return out.getvalue(), (type(e).__name__, str(e), e.lsn, e.path)
    return out.getvalue(), (shown, reader.stop, reader.first_lsn, reader.last_end_lsn)


def assert_same(directory, **kw) -> None:
    for mode in MODES:
        py = run(directory, "python", **kw, **mode)
        cy = run(directory, "cython", **kw, **mode)
        assert cy[1] == py[1], f"{mode}: the implementations end differently"
        assert cy[0] == py[0], f"{mode}: the implementations print different bytes"


@settings(max_examples=150, **SETTINGS)
@given(w=streams(), filters=st.sampled_from([{}, {"rmids": {10}}, {"rmids": {1, 8, 9}}, {"xid": 7}, {"limit": 3},
                                             {"limit": 1, "rmids": {11}}]))
def test_inspect_same_bytes_both_implementations(w, filters):
    with tempfile.TemporaryDirectory() as d:
        w.write(d)
        assert_same(d, **filters)


@st.composite
def damaged(draw):
    w = draw(streams(max_records=6))
    lo = w.records[0].lsn - w.records[0].lsn % PAGE
    hi = w.written[-1].end + PAGE
    muts = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            r = draw(st.sampled_from(w.records))
            pos = walgen.record_bytes_at(w, r, draw(st.integers(0, min(r.tot_len, 60) - 1)))
        else:
            pos = draw(st.integers(lo, hi - 1))
        muts.append((pos, draw(st.integers(0, 255))))
    verify = draw(st.booleans())
    start = draw(st.none() | st.integers(w.records[0].lsn - PAGE, w.written[-1].end))
    end = draw(st.none() | st.integers(max(lo, start or 0) + 1, hi + PAGE))
    return w, muts, verify, start, end


@settings(max_examples=150, **SETTINGS)
@given(case=damaged())
def test_inspect_same_end_on_damaged_wal(case):
    w, muts, verify, start, end = case
    segs = {s: bytearray(w.segment_bytes(s)) for s in range(w.first_segno, w.last_segno + 1)}
    for pos, val in muts:
        seg = segs.get(pos // w.seg_size)
        if seg is not None:
            seg[pos % w.seg_size] = val
    if start is not None and start < w.first_segno * w.seg_size:
        start = None
    with tempfile.TemporaryDirectory() as d:
        for s, data in segs.items():
            (Path(d) / w.segment_name(s)).write_bytes(data)
        assert_same(d, start=start, end=end, verify=verify)


def test_truncated_record_prints_what_came_before(tmp_path):
    """A record cut by the end of the file: both print every record before it, then stop the same way."""
    w = WALWriter(major=15, seg_size=MB)
    for i in range(40):
        w.append(Record(10, 0x00, xid=100 + i, main_data=struct.pack("<HB", i + 1, 0x08),
                        blocks=(Block(0, RELS[0], i),)))
    w.append(Record(10, 0x00, xid=999, main_data=_bytes(3, 20000)))
    last = w.written[-1]
    w.write(tmp_path)
    path = w.path_of(tmp_path, last.lsn)
    path.write_bytes(path.read_bytes()[:w.file_offset(last.lsn) - w.file_offset(last.lsn) % PAGE + PAGE])
    text, end = run(tmp_path, "cython")
    assert end == run(tmp_path, "python")[1]
    assert text == run(tmp_path, "python")[0]
    assert text.count(b"\n") == 40 + w.n_filler and b"tx:        139," in text
    assert end[1].kind == "end" and "incomplete" in end[1].reason


def test_short_main_data_error_after_the_lines_before_it(tmp_path):
    """A Heap INSERT with one byte of main data: the native describer leaves it to the Python one, which
    raises CorruptRecordError naming the record; the lines before it are printed by both."""
    w = WALWriter(major=16, seg_size=MB)
    w.append(Record(10, 0x00, xid=5, main_data=struct.pack("<HB", 3, 0)))
    w.append(Record(10, 0x00, xid=6, main_data=b"\x01"))
    w.write(tmp_path)
    py = run(tmp_path, "python")
    cy = run(tmp_path, "cython")
    assert cy == py
    assert cy[1][0] == "CorruptRecordError" and "Heap/INSERT" in cy[1][1]
    assert cy[0].endswith(b"desc: INSERT off: 3, flags: 0x00\n")


def _common_records(major: int) -> list[Record]:
    """One of each record the native describer writes for ``major`` (layouts of heapam_xlog.h, nbtxlog.h,
    xact.h, standbydefs.h), with block references of every kind."""
    blk = (Block(0, RELS[0], 7),)
    two = (Block(0, RELS[0], 7, data=b"\x01\x00\x02\x00"), Block(1, RELS[0], 9, fork=1))
    fpi = (Block(0, RELS[1], 3, image=Image(_bytes(5, PAGE - 100), 40, 100)),)
    recs = [
        Record(10, 0x00, 700, blk, struct.pack("<HB", 5, 0x08)),  # INSERT
        Record(10, 0x80, 700, blk, struct.pack("<HB", 1, 0x00)),  # INSERT+INIT
        Record(10, 0x10, 701, blk, struct.pack("<IHBB", 701, 3, 0x03, 0x02)),  # DELETE
        Record(10, 0x20, 702, two, struct.pack("<IHBBIH", 702, 4, 0x10, 0x04, 0, 9)),  # UPDATE
        Record(10, 0x40, 703, blk, struct.pack("<IHBBIH", 703, 4, 0x00, 0x10, 0, 12)),  # HOT_UPDATE
        Record(10, 0x50, 704, blk, struct.pack("<H", 6)),  # HEAP_CONFIRM
        Record(10, 0x60, 705, blk, struct.pack("<IHBB", 705, 2, 0x0A, 0x01)),  # LOCK
        Record(9, 0x40, 0, two, struct.pack("<IB", 650, 0x03)),  # VISIBLE
        Record(9, 0x50, 706, blk, struct.pack("<BxH", 0x02, 3) + struct.pack("<3H", 1, 2, 3)),  # MULTI_INSERT
        Record(9, 0x70, 707, (), struct.pack("<IIII", 707, 0, 4294967295, 0) + struct.pack("<III", *RELS[0])
               + struct.pack("<HHH", 0, 7, 3)),  # NEW_CID
        Record(11, 0x00, 708, blk, struct.pack("<H", 17)),  # INSERT_LEAF
        Record(11, 0x30, 708, two, struct.pack("<IHHH", 0, 120, 40, 0)),  # SPLIT_L
        Record(11, 0x60, 0, blk, struct.pack("<H", 4)),  # DEDUP
        Record(11, 0xA0, 0, two, struct.pack("<II", 3, 1)),  # NEWROOT
        Record(1, 0x00, 709, (), struct.pack("<q", 817300000123456)),  # COMMIT
        Record(1, 0x80, 710, (), struct.pack("<qI", 817300000999999, 0x01 | 0x02 | 1 << 31)
               + struct.pack("<II", 1663, 5) + struct.pack("<iII", 2, 711, 712)),  # COMMIT, dbinfo, subxacts, sync
        Record(1, 0x20, 713, (), struct.pack("<q", 817300001000000)),  # ABORT
        Record(8, 0x10, 0, (), struct.pack("<iiB3xIII", 2, 1, 0, 720, 714, 713) + struct.pack("<3I", 714, 716, 715)),
        Record(8, 0x00, 0, (), struct.pack("<i", 1) + struct.pack("<III", 717, 5, 16400)),  # standby LOCK
        Record(1, 0x80, 718, (), struct.pack("<qI", 817300002000000, 0x01 | 0x08 | 1 << 30) + struct.pack("<II", 1663, 5)
               + struct.pack("<i", 2) + struct.pack("<b3xII4x", -2, 5, 16390) + struct.pack("<b3xII4x", 7, 5, 99)),
        Record(2, 0x10, 0, (), struct.pack("<IIIi", 1663, 5, 16400, 0)),  # Storage CREATE
        Record(2, 0x20, 0, (), struct.pack("<IIIIi", 3, 1664, 0, 1262, 7)),  # Storage TRUNCATE
        Record(8, 0x20, 0, (), struct.pack("<IIB3xi", 5, 1663, 1, 1) + struct.pack("<b3xII4x", -1, 5, 1259)),
        Record(0, 0xB0, 0, fpi),  # FPI
        Record(0, 0xA0, 0, fpi),  # FPI_FOR_HINT
    ]
    delvacuum = (Block(0, RELS[0], 7, data=struct.pack("<HHH2H", 2, 3, 2, 1, 2)),)  # deleted, updated, its ptids
    plan = struct.pack("<IHHBxH", 600, 0x0802, 0x0900, 0x01, 2)
    if major >= 16:
        recs.append(Record(11, 0xC0, 0, delvacuum, struct.pack("<HH", 1, 1)))  # VACUUM
        recs.append(Record(11, 0x70, 0, delvacuum, struct.pack("<IHHB", 640, 1, 1, 1)))  # DELETE
    else:
        recs.append(Record(11, 0x70, 0, blk, struct.pack("<IHH", 640, 1, 1)))  # DELETE
    if major == 16:
        recs.append(Record(9, 0x10, 0, (Block(0, RELS[0], 7, data=struct.pack("<2HH2H", 1, 2, 3, 4, 5)),),
                           struct.pack("<IHH", 690, 1, 1)))  # PRUNE: redirected, dead, unused
        recs.append(Record(9, 0x30, 0, (Block(0, RELS[0], 7, data=plan + struct.pack("<2H", 8, 9)),),
                           struct.pack("<IH", 601, 1)))  # FREEZE_PAGE
    if major >= 17:
        data = (struct.pack("<H2x", 1) + plan + struct.pack("<HHH", 1, 3, 4) + struct.pack("<HH", 1, 5)
                + struct.pack("<H2H", 2, 6, 7) + struct.pack("<2H", 8, 9))
        for info in (0x10, 0x20, 0x30):  # PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN, PRUNE_VACUUM_CLEANUP
            recs.append(Record(9, info, 0, (Block(0, RELS[0], 7, data=data),), struct.pack("<BBI", 1, 0xFA, 602)))
        recs.append(Record(9, 0x10, 0, blk, struct.pack("<BB", 1, 0x00)))
    if major >= 14:
        recs.append(Record(1, 0x60, 719, (), struct.pack("<i", 1) + struct.pack("<b3xII4x", -4, 5, 0)))  # INVALIDATION
    if major >= 18:
        recs.append(Record(10, 0x70, 720, blk, struct.pack("<H2xIIB3xi", 3, 5, 1663, 0, 1)
                           + struct.pack("<b3xII4x", -6, 5, 16384)))  # INPLACE with invalidations
    if major <= 15:
        recs.append(Record(9, 0x10, 0, blk, struct.pack("<IHH", 690, 1, 2)))  # PRUNE
        recs.append(Record(11, 0xC0, 0, blk, struct.pack("<HH", 2, 0)))  # VACUUM
    if major <= 16:
        recs.append(Record(9, 0x20, 0, (Block(0, RELS[0], 7, data=struct.pack("<2H", 4, 5)),),
                           struct.pack("<H", 2)))  # VACUUM
    return recs


@pytest.mark.parametrize("major", [14, 15, 16, 17, 18])
def test_common_records_are_described_natively(tmp_path, major, monkeypatch):
    """The records real workloads are made of never go through the Python describer, and print what it prints."""
    from waldecode import _waldump

    monkeypatch.setenv("TZ", "Europe/Berlin")
    import time
    time.tzset()
    try:
        w = WALWriter(major=major, seg_size=MB)
        w.extend(_common_records(major))
        w.write(tmp_path)
        out = io.BytesIO()
        reader = XLogReader([tmp_path])
        dump = _waldump.Dump(major, 1, write=out.write)
        dump.run(reader)
        assert dump.py_descs == w.n_filler  # the XLOG NOOPs before the first record
        assert out.getvalue() == run(tmp_path, "python")[0]
        assert b"desc: COMMIT 2025-" in out.getvalue() and b" CET; subxacts: 711 712; sync\n" in out.getvalue()
        assert_same(tmp_path)
    finally:
        monkeypatch.undo()
        time.tzset()
