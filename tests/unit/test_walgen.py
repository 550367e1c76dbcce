"""The test WAL writer (tests/walgen.py) against the real thing: PostgreSQL 15's pg_waldump.

Each stream is written with walgen and read back by ``pg_waldump -b``: it must
print every record, with the LSN, xl_prev, lengths, xid and block references
(relation, fork, block, image hole and compression) that walgen says it wrote,
and stop at the end of what was written.  pg_waldump decodes every record
(DecodeXLogRecord), so a wrong fragment header, length, CRC, page header or
contrecord field would show up as an error here.  Skipped without pg_waldump.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest

import walgen
from walgen import (
    MB,
    RM_HEAP_ID,
    RM_STANDBY_ID,
    RM_XACT_ID,
    RM_XLOG_ID,
    XLOG_FPI,
    XLOG_SWITCH,
    Block,
    Image,
    Record,
    WALWriter,
    format_lsn,
    noop,
)

PG_WALDUMP = Path("/usr/lib/postgresql/15/bin/pg_waldump")
needs_waldump = pytest.mark.skipif(not PG_WALDUMP.exists(), reason=f"{PG_WALDUMP} not installed")

RMGR_NAMES = {0: "XLOG", 1: "Transaction", 8: "Standby", 9: "Heap2", 10: "Heap"}
FORKS = ("main", "fsm", "vm", "init")

_LINE = re.compile(r"^rmgr: (?P<rmgr>\S+)\s+len \(rec/tot\):\s+(?P<rec>\d+)/\s*(?P<tot>\d+), tx:\s+(?P<xid>\d+), "
                   r"lsn: (?P<lsn>[0-9A-F]+/[0-9A-F]+), prev (?P<prev>[0-9A-F]+/[0-9A-F]+), desc: ")
_BLKREF = re.compile(r"^\tblkref #(?P<id>\d+): rel (?P<spc>\d+)/(?P<db>\d+)/(?P<rel>\d+) fork (?P<fork>\w+) "
                     r"blk (?P<blk>\d+)(?P<fpw> \(FPW(?P<verif> for WAL verification)?\); hole: offset: "
                     r"(?P<hoff>\d+), length: (?P<hlen>\d+)(, compression saved: \d+, method: (?P<method>\w+))?)?$")


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def run_waldump(directory, start: int, tli: int = 1):
    """pg_waldump -b: a list of (fields, blkrefs) per record, and stderr."""
    proc = subprocess.run([str(PG_WALDUMP), "-b", "-t", str(tli), "-p", str(directory), "-s", format_lsn(start)],
                          capture_output=True, text=True, timeout=120)
    out = []
    for line in proc.stdout.splitlines():
        if line.startswith("first record is after"):
            continue
        m = _LINE.match(line)
        if m:
            out.append((m, []))
            continue
        b = _BLKREF.match(line)
        assert b, f"unparsable pg_waldump line {line!r}"
        out[-1][1].append(b)
    return out, proc.stderr


def expected_blkrefs(rec: Record):
    out = []
    for b in sorted(rec.blocks, key=lambda b: b.id):
        img = b.image
        out.append((b.id, b.rel, FORKS[b.fork], b.blkno,
                    None if img is None else (img.apply, img.hole_offset, img.hole_length, img.compression)))
    return out


def check_against_waldump(w: WALWriter, directory, start: int | None = None):
    """pg_waldump prints exactly the records walgen wrote from ``start`` on, and nothing more."""
    start = w.written[0].lsn if start is None else start
    got, stderr = run_waldump(directory, start, w.tli)
    written = [r for r in w.written if r.lsn >= start]
    assert len(got) == len(written), f"pg_waldump read {len(got)} of {len(written)} records; stderr: {stderr}"
    for wr, (m, blks) in zip(written, got):
        rec = wr.record
        fpi = sum(len(b.image.data) for b in rec.blocks if b.image is not None)
        assert (_lsn(m["lsn"]), _lsn(m["prev"]), int(m["tot"]), int(m["rec"]), int(m["xid"]), m["rmgr"]) == \
            (wr.lsn, wr.prev, wr.tot_len, wr.tot_len - fpi, rec.xid, RMGR_NAMES[rec.rmid]), format_lsn(wr.lsn)
        seen = [(int(b["id"]), (int(b["spc"]), int(b["db"]), int(b["rel"])), b["fork"], int(b["blk"]),
                 None if not b["fpw"] else (not b["verif"], int(b["hoff"]), int(b["hlen"]), b["method"]))
                for b in blks]
        assert seen == expected_blkrefs(rec), format_lsn(wr.lsn)
    # It stops where the written WAL ends: the next record position holds zeros
    last = w.written[-1]
    assert "invalid record length" in stderr or "invalid magic number 0000" in stderr \
        or "could not find file" in stderr, stderr
    assert format_lsn(last.lsn) in stderr, stderr
    return got


def _random_noops(rnd: random.Random, n: int):
    sizes = [24, 27, 32, 281, 285, 288, 8192 - 24, 8192 - 40, 8192, 3 * 8192 + 100]
    for _ in range(n):
        if rnd.random() < 0.4:
            size = rnd.choice(sizes)
        else:
            size = rnd.choice([rnd.randint(27, 281), rnd.randint(285, 40000)])
        yield noop(size, fill=rnd.randrange(256))


@needs_waldump
@pytest.mark.parametrize("seg_size", [1 * MB, 2 * MB, 16 * MB])
def test_noop_stream(tmp_path, seg_size):
    """XLOG NOOPs of every size, from the first record of a segment, across pages and segments."""
    rnd = random.Random(seg_size)
    # Start late in the segment so that the records cross into the next ones
    w = WALWriter(major=15, seg_size=seg_size, start_lsn=5 * seg_size - 150_000)
    w.extend(_random_noops(rnd, 60))
    # Headers split after 8 and 16 bytes, and a record ending exactly at a page end
    for k in (8, 16):
        page_end = w.insert_lsn - w.insert_lsn % 8192 + 8192
        w.fill_to(page_end - k)
        wr = w.append(noop(100))
        assert wr.lsn % 8192 == 8192 - k
    page_end = w.insert_lsn - w.insert_lsn % 8192 + 8192
    w.fill_to(page_end - 1000)
    assert w.append(noop(1000)).raw_end == page_end
    w.extend(_random_noops(rnd, 20))
    w.write(tmp_path)
    assert w.last_segno > w.segno_of(w.start_lsn)
    check_against_waldump(w, tmp_path, start=w.written[0].lsn)
    # pg_waldump -s in the middle of a record finds the next one (XLogFindNextRecord)
    mid = w.records[10]
    got, _ = run_waldump(tmp_path, mid.lsn + 8)
    assert _lsn(got[0][0]["lsn"]) == w.records[11].lsn


@needs_waldump
def test_records_with_block_references(tmp_path):
    """Heap-, standby-, xact- and FPI-like records: block headers, SAME_REL, images, origin, toplevel xid."""
    rnd = random.Random(7)
    page = bytes(rnd.randrange(256) for _ in range(512)) * 8 + bytes(4096)
    rel_a, rel_b = (1663, 16384, 16385), (1664, 0, 1262)
    w = WALWriter(major=15, seg_size=MB, start_lsn=MB + 1_000_000)
    records = [
        # heap INSERT: xl_heap_insert {offnum, flags} and the tuple as block 0 data
        Record(RM_HEAP_ID, 0x00, xid=740, main_data=b"\x01\x00\x00", blocks=(Block(0, rel_a, 0, data=b"t" * 60),)),
        # two blocks of one relation (the second has SAME_REL), one of another, a vm fork
        Record(RM_HEAP_ID, 0x20, xid=741, main_data=bytes(14),
               blocks=(Block(0, rel_a, 5, data=b"new"), Block(1, rel_a, 3, data=b"old"),
                       Block(2, rel_b, 9, fork=2, will_init=True))),
        # full-page images: plain, with a hole, compressed each way, one only for WAL verification
        Record(RM_XLOG_ID, XLOG_FPI, blocks=(
            Block(0, rel_a, 1, image=Image.from_page(page)),
            Block(1, rel_a, 2, image=Image.from_page(page, 2048, 4096)),
            Block(2, rel_a, 3, image=Image.from_page(page, 2048, 4096, "pglz")),
            Block(3, rel_a, 4, image=Image.from_page(page, 0, 0, "lz4")),
            Block(4, rel_b, 5, image=Image.from_page(page, 100, 3000, "zstd")),
            Block(7, rel_b, 6, fork=1, image=Image.from_page(page, apply=False)))),
        # an image and block data together (REGBUF_KEEP_DATA), with origin and toplevel xid
        Record(RM_HEAP_ID, 0x00, xid=742, main_data=b"\x02\x00\x00", origin=3, toplevel_xid=700,
               blocks=(Block(0, rel_a, 7, data=b"x" * 200, image=Image.from_page(page, 512, 1024, "lz4")),)),
        # standby RUNNING_XACTS: xcnt 0, subxcnt 0, overflow false, next, oldest, latest completed
        Record(RM_STANDBY_ID, 0x10, main_data=bytes(12) + (745).to_bytes(4, "little") * 3),
        # xact ASSIGNMENT-sized main data, long main data (> 3 pages) on a NOOP
        Record(RM_XLOG_ID, 0x20, main_data=bytes(rnd.randrange(256) for _ in range(30000))),
        Record(RM_XLOG_ID, XLOG_SWITCH),
        Record(RM_XLOG_ID, 0x20, main_data=b"after the switch"),
        # 33 blocks, ids 0..32: the most a record can have
        Record(RM_HEAP_ID, 0x00, xid=743, main_data=b"\x03\x00\x00",
               blocks=tuple(Block(i, rel_a if i % 3 else rel_b, i, data=bytes([i]) * (i + 1)) for i in range(33))),
    ]
    w.extend(records)
    w.write(tmp_path)
    switch = w.records[6]
    assert switch.end % MB == 0 and w.records[7].lsn == switch.end + 40
    check_against_waldump(w, tmp_path, start=w.records[0].lsn)


@needs_waldump
def test_across_a_log_id_and_another_timeline(tmp_path):
    """From the last segment of log 0 into the first of log 1 (file ...00000001 00000000), timeline 3."""
    seg = 16 * MB
    w = WALWriter(major=15, seg_size=seg, tli=3, sysid=123456789, start_lsn=0x100000000 - 40_000)
    rnd = random.Random(3)
    w.extend(_random_noops(rnd, 10))
    w.write(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[0] == "0000000300000000000000FF" and "000000030000000100000000" in names
    assert w.written[-1].lsn > 0x100000000
    check_against_waldump(w, tmp_path, start=w.records[0].lsn)


@needs_waldump
@pytest.mark.parametrize("seed", range(4))
def test_random_streams(tmp_path, seed):
    """Random mixes of the above on 1 MB segments."""
    rnd = random.Random(100 + seed)
    rels = [(1663, 5, 16384 + i) for i in range(3)]
    w = WALWriter(major=15, seg_size=MB, start_lsn=MB * 7 + rnd.randrange(MB) // 8 * 8)
    for _ in range(120):
        blocks = []
        for bid in sorted(rnd.sample(range(33), rnd.choice([0, 0, 1, 2, 4]))):
            img = None
            if rnd.random() < 0.2:
                hole = rnd.choice([0, rnd.randrange(1, 8000)])
                off = rnd.randrange(1, 8192 - hole) if hole else 0
                pg = bytes(rnd.randrange(4) for _ in range(8192))
                img = Image.from_page(pg, off, hole, rnd.choice([None, "pglz", "lz4", "zstd"]), rnd.random() < 0.8)
            blocks.append(Block(bid, rnd.choice(rels), rnd.randrange(2**32), fork=rnd.randrange(4),
                                data=bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 50, 3000]))),
                                image=img, will_init=rnd.random() < 0.1))
        main = bytes(rnd.randrange(256) for _ in range(rnd.choice([0, 1, 255, 256, rnd.randrange(40000)])))
        rmid = RM_XLOG_ID if blocks == [] and rnd.random() < 0.5 else RM_HEAP_ID
        if rmid == RM_HEAP_ID:
            main = b"\x01\x00\x00" + main  # heap_desc reads xl_heap_insert
        w.append(Record(rmid, 0x20 if rmid == RM_XLOG_ID else 0x00, xid=rnd.randrange(2**32), blocks=tuple(blocks),
                        main_data=main, origin=rnd.choice([None, rnd.randrange(1, 65536)]),
                        toplevel_xid=rnd.choice([None, rnd.randrange(2**32)])))
    w.write(tmp_path)
    check_against_waldump(w, tmp_path, start=w.written[0].lsn)


@pytest.mark.parametrize("major", sorted(walgen.XLOG_PAGE_MAGIC))
def test_image_flags_by_version(major):
    img = Image.from_page(bytes(8192), 100, 200, "pglz")
    if major < 15:
        assert img.info(major) == 0x01 | 0x02 | 0x04  # HAS_HOLE | IS_COMPRESSED | APPLY
        with pytest.raises(ValueError, match="only with pglz"):
            Image.from_page(bytes(8192), 0, 0, "lz4").info(major)
    else:
        assert img.info(major) == 0x01 | 0x04 | 0x02  # HAS_HOLE | COMPRESS_PGLZ | APPLY
        assert Image.from_page(bytes(8192), 0, 0, "zstd", apply=False).info(major) == 0x10


def test_pglz_compress_roundtrip():
    from waldecode.pg.pglz import pglz_decompress

    rnd = random.Random(1)
    for data in (b"", b"a", b"abcabcabcabc" * 100, bytes(8192), bytes(rnd.randrange(3) for _ in range(5000)),
                 rnd.randbytes(3000)):
        assert pglz_decompress(walgen.pglz_compress(data), len(data)) == data


def test_noop_lengths():
    for n in (24, 27, 100, 281, 285, 10000):
        assert len(walgen.assemble(noop(n), 0, 15)) == n
    for n in (25, 26, 282, 284):
        with pytest.raises(ValueError):
            noop(n)


def test_toplevel_xid_not_in_13():
    with pytest.raises(ValueError, match="13"):
        walgen.assemble(Record(RM_XACT_ID, 0, toplevel_xid=5), 0, 13)


def test_fill_to_places_the_next_record():
    w = WALWriter(major=16, seg_size=MB, start_lsn=MB + 3 * 8192 + 16)
    assert w.start_lsn in (MB + 3 * 8192 + 24, MB + 3 * 8192 + 32)  # 8 bytes after a header cannot be filled
    assert w.append(noop(30)).lsn == w.start_lsn
    w2 = WALWriter(major=16, seg_size=MB, start_lsn=MB + 5 * 8192, fill=False)
    assert w2.n_filler == 0 and w2.append(noop(30)).lsn == MB + 5 * 8192 + 24


@needs_waldump
@pytest.mark.parametrize("before_end", [8, 16, 24])
def test_switch_at_the_end_of_a_segment(tmp_path, before_end):
    """An XLOG_SWITCH that starts 8 or 16 bytes before a segment ends continues into the next
    segment, and consumes that one (ReserveXLogSwitch): the next record is a segment further."""
    seg = MB
    w = WALWriter(major=15, seg_size=seg, start_lsn=2 * seg - before_end)
    sw = w.append(Record(RM_XLOG_ID, XLOG_SWITCH))
    after = w.append(noop(100))
    assert sw.lsn == 2 * seg - before_end
    assert sw.end == (3 * seg if before_end < 24 else 2 * seg)
    assert after.lsn == sw.end + 40
    w.write(tmp_path)
    check_against_waldump(w, tmp_path, start=w.written[-3].lsn)
