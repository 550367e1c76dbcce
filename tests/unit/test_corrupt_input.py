"""Damaged and unusual input: what the reader returns, where it stops, and what it says.

For both implementations, on WAL written by tests/walgen.py and on copies of the
real segments under fixtures/pg15-off/*/wal/: truncated files, flipped bits,
wrong page magic, foreign files named like segments, zeroed tails, recycled
segments, missing segments, .partial and compressed segments, corrupt
compressed files.  Every case checks the records returned before the damage,
the kind of stop (or the exception class), and that the message names the file
and the LSN as PostgreSQL writes it (X/X).  A few cases also go through
``waldecode inspect`` to check the exit status and the one-line error.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import walgen
from walgen import MB, Block, Record, WALWriter, format_lsn, noop
from waldecode.errors import CorruptRecordError, MissingSegmentError, SegmentFileError, WALError
from waldecode.wal.xlogreader import XLogReader

PAGE = 8192
REPO = Path(__file__).resolve().parents[2]
REAL_WAL_DIRS = sorted(p for p in (REPO / "fixtures" / "pg15-off").glob("*/wal") if any(p.iterdir()))[:3]


def read(paths, **kw):
    reader = XLogReader(paths if isinstance(paths, list) else [paths], **kw)
    recs = list(reader)
    return recs, reader.stop, reader


def lsns(recs):
    return [r.lsn for r in recs]


def patch(path: Path, offset: int, data: bytes) -> None:
    buf = bytearray(path.read_bytes())
    buf[offset:offset + len(data)] = data
    path.write_bytes(bytes(buf))


def flip(path: Path, offset: int, bit: int = 0) -> None:
    buf = bytearray(path.read_bytes())
    buf[offset] ^= 1 << bit
    path.write_bytes(bytes(buf))


def page_of(lsn: int) -> int:
    return lsn - lsn % PAGE


def one_segment(directory: Path, major: int = 15) -> WALWriter:
    """One 1 MB segment: small records, a record ending exactly at a page end, one over three pages."""
    w = WALWriter(major=major, seg_size=MB, start_lsn=MB)
    w.extend([noop(100), noop(3000)])
    w.fill_to(MB + 3 * PAGE - 104)
    w.append(noop(104))  # ends exactly at the end of page 2
    w.extend([noop(200), noop(500)])  # on page 3
    w.append(Record(walgen.RM_HEAP_ID, 0x00, xid=900, main_data=b"\x01\x00\x00" + bytes(30000),
                    blocks=(Block(0, data=b"tuple" * 10),)))  # pages 3 to 7
    w.extend([noop(300), noop(40)])
    w.write(directory)
    return w


def three_segments(directory: Path, major: int = 15) -> WALWriter:
    """Records from late in segment 1 through segment 3, some crossing segment boundaries."""
    w = WALWriter(major=major, seg_size=MB, start_lsn=2 * MB - 3 * PAGE)
    rnd = random.Random(5)
    while w.insert_lsn < 3 * MB + 5 * PAGE:
        w.append(noop(rnd.choice([100, 2000, 30000, 70000])))
    w.write(directory)
    assert w.first_segno == 1 and w.last_segno == 3
    return w


# --------------------------------------------------------------------------------------------
# Truncated files


def test_truncated_in_the_middle_of_a_page(impl, tmp_path):
    """Cut 3000 bytes into page 3: the records before that page are returned, reading ends cleanly."""
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    ends_at_page = [x for x in w.written if x.raw_end == MB + 3 * PAGE][0]
    cut = 3 * PAGE + 3000
    path.write_bytes(path.read_bytes()[:cut])
    recs, stop, reader = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= ends_at_page.raw_end]
    assert stop.kind == "end"
    assert stop.lsn == reader.last_end_lsn == ends_at_page.end == MB + 3 * PAGE
    assert f"file holds {cut} of {MB} bytes" in stop.reason
    assert stop.path == str(path)


def test_truncated_in_the_middle_of_a_record(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    big = max(w.written, key=lambda x: x.tot_len)
    cut = page_of(big.lsn) - MB + 2 * PAGE + 1000  # inside the big record's third page
    path.write_bytes(path.read_bytes()[:cut])
    recs, stop, reader = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.lsn < big.lsn]
    assert stop.kind == "end"
    assert f"file holds {cut} of {MB} bytes" in stop.reason and stop.path == str(path)
    # the WAL ends where the incomplete record starts, as for every other incomplete record
    assert stop.lsn == reader.last_end_lsn == big.lsn
    assert f"record at {format_lsn(big.lsn)} is incomplete" in stop.reason


def test_truncated_last_segment_of_several(impl, tmp_path):
    w = three_segments(tmp_path)
    last = w.path_of(tmp_path, 3 * MB)
    cut = 2 * PAGE + 100
    last.write_bytes(last.read_bytes()[:cut])
    recs, stop, reader = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= 3 * MB + 2 * PAGE]
    assert stop.kind == "end" and stop.path == str(last)
    assert f"file holds {cut} of {MB} bytes" in stop.reason


# --------------------------------------------------------------------------------------------
# Flipped bits


def test_flipped_bit_in_record_data(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    victim = w.written[4]
    flip(path, walgen.record_bytes_at(w, victim, victim.tot_len - 1) - MB, 3)
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written[:4]]
    assert stop.kind == "invalid" and stop.lsn == victim.lsn and stop.path == str(path)
    assert stop.reason == f"incorrect resource manager data checksum in record at {format_lsn(victim.lsn)}"


def test_flipped_bit_in_the_continuation_of_a_record(impl, tmp_path):
    """The bit is on another page (and, for the second case, another segment) than the record start."""
    w = three_segments(tmp_path)
    crossing = [x for x in w.written if x.lsn // MB == 1 and x.raw_end > 2 * MB][0]
    at = walgen.record_bytes_at(w, crossing, crossing.tot_len - 10)
    assert at // MB == 2
    flip(w.path_of(tmp_path, at), at % MB)
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.lsn < crossing.lsn]
    assert stop.kind == "invalid" and stop.lsn == crossing.lsn
    assert stop.reason == f"incorrect resource manager data checksum in record at {format_lsn(crossing.lsn)}"
    assert Path(stop.path).name in (w.segment_name(1), w.segment_name(2))


@pytest.mark.parametrize("field, offset, bit, message", [
    ("xl_prev", 8, 4, "record with incorrect prev-link {prev} at {lsn}"),
    ("xl_rmid", 17, 6, "invalid resource manager ID 64 at {lsn}"),
    ("xl_crc", 20, 0, "incorrect resource manager data checksum in record at {lsn}"),
])
def test_flipped_bit_in_a_record_header(impl, tmp_path, field, offset, bit, message):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    victim = w.written[3]
    flip(path, victim.lsn - MB + offset, bit)
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written[:3]]
    assert stop.kind == "invalid" and stop.lsn == victim.lsn and stop.path == str(path)
    assert stop.reason == message.format(lsn=format_lsn(victim.lsn), prev=format_lsn(victim.prev ^ (1 << bit)))


def test_crc_not_checked_when_asked(impl, tmp_path):
    w = one_segment(tmp_path)
    victim = w.written[4]
    at = walgen.record_bytes_at(w, victim, victim.tot_len - 1)
    flip(w.path_of(tmp_path, at), at - MB)
    recs, stop, _ = read(tmp_path, verify_crc=False)
    assert lsns(recs) == [x.lsn for x in w.written] and stop.kind == "end"
    assert recs[4].main_data[-1] == victim.record.main_data[-1] ^ 1


# --------------------------------------------------------------------------------------------
# Wrong magic, foreign files


@pytest.mark.parametrize("magic, text", [(0xD10D, "D10D"), (0xD113, "D113"), (0x4142, "4142")])
def test_page_of_another_version(impl, tmp_path, magic, text):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    patch(path, 5 * PAGE, magic.to_bytes(2, "little"))
    recs, stop, _ = read(tmp_path)
    # The big record runs from page 3 into page 5: it and everything after it is lost
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= MB + 5 * PAGE]
    assert stop.kind == "invalid" and stop.lsn == MB + 5 * PAGE and stop.path == str(path)
    assert stop.reason == f"invalid magic number {text} in log segment, offset {5 * PAGE}"


def test_garbage_page(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    patch(path, 3 * PAGE, random.Random(1).randbytes(PAGE))
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= MB + 3 * PAGE]
    assert stop.kind == "invalid" and stop.lsn == MB + 3 * PAGE and stop.path == str(path)
    assert stop.reason.startswith("invalid magic number ") and f"offset {3 * PAGE}" in stop.reason


def test_segment_of_another_version_in_the_middle(impl, tmp_path):
    w = three_segments(tmp_path)
    other = WALWriter(major=14, seg_size=MB, start_lsn=2 * MB, sysid=w.sysid)
    other.extend([noop(100)] * 5)
    other.write(tmp_path)  # replaces segment 2
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= 2 * MB]
    assert stop.kind == "invalid" and stop.lsn == 2 * MB
    assert stop.path == str(tmp_path / w.segment_name(2))
    assert stop.reason == "invalid magic number D10D in log segment, offset 0"


def test_segment_of_another_cluster_in_the_middle(impl, tmp_path):
    w = three_segments(tmp_path)
    other = WALWriter(major=15, seg_size=MB, start_lsn=2 * MB, sysid=w.sysid + 1)
    other.extend([noop(100)] * 5)
    other.write(tmp_path)
    recs, stop, _ = read(tmp_path)
    assert stop.kind == "invalid" and stop.lsn == 2 * MB and stop.path == str(tmp_path / w.segment_name(2))
    assert stop.reason == ("WAL file is from different database system: WAL file database system identifier is "
                           f"{w.sysid + 1}, expected {w.sysid}")


@pytest.mark.parametrize("content, message", [
    (random.Random(2).randbytes(MB), "invalid magic number"),
    (b"# not WAL\n" * 2000, "invalid magic number 2023: not a WAL segment of PostgreSQL 13 to 18"),
    (b"hello\n", "file is too short for a WAL segment (6 bytes)"),
])
def test_foreign_file_named_like_a_segment(impl, tmp_path, content, message):
    path = tmp_path / "000000010000000000000007"
    path.write_bytes(content)
    with pytest.raises(SegmentFileError) as e:
        read(tmp_path)
    assert message in str(e.value) and str(path) in str(e.value) and e.value.path == str(path)


def test_foreign_file_among_real_segments(impl, tmp_path):
    """Random bytes where segment 2 should be: an invalid stop (or an error) naming that file."""
    w = three_segments(tmp_path)
    path = tmp_path / w.segment_name(2)
    path.write_bytes(random.Random(3).randbytes(MB))
    try:
        recs, stop, _ = read(tmp_path)
    except SegmentFileError as e:
        assert str(path) in str(e)
    else:
        assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= 2 * MB]
        assert stop.kind == "invalid" and stop.path == str(path) and stop.lsn == 2 * MB
        assert stop.reason.startswith("invalid magic number")


def test_short_text_file_among_real_segments(impl, tmp_path):
    w = three_segments(tmp_path)
    path = tmp_path / w.segment_name(2)
    path.write_bytes(b"hello\n")
    try:
        recs, stop, _ = read(tmp_path)
    except SegmentFileError as e:
        assert str(path) in str(e)
    else:
        assert stop.kind == "invalid" and stop.path == str(path)


@pytest.mark.parametrize("blcksz", [0, 4096, 8192 + (16 << 16)])
def test_bad_page_size_in_the_first_segment(impl, tmp_path, blcksz):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    patch(path, 36, blcksz.to_bytes(4, "little"))
    try:
        recs, stop, _ = read(tmp_path)
    except WALError as e:
        assert isinstance(e, SegmentFileError) and str(path) in str(e), e
    else:
        assert stop.kind == "invalid" and stop.path == str(path) and recs == []


# --------------------------------------------------------------------------------------------
# Normal ends: zeros, recycled segments


def test_zeroed_tail(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    victim = w.written[4]
    data = path.read_bytes()
    path.write_bytes(data[:victim.lsn - MB] + bytes(MB - (victim.lsn - MB)))
    recs, stop, reader = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written[:4]]
    assert stop.kind == "end" and stop.lsn == victim.lsn and stop.path == str(path)
    assert reader.last_end_lsn == w.written[3].end
    assert stop.reason == f"invalid record length at {format_lsn(victim.lsn)}: expected at least 24, got 0"


def test_zeroed_tail_inside_a_record(impl, tmp_path):
    """Zeros from the middle of a multi-page record on: the record is incomplete, WAL ends at its start."""
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    big = max(w.written, key=lambda x: x.tot_len)
    zero_from = page_of(big.lsn) - MB + 2 * PAGE
    data = path.read_bytes()
    path.write_bytes(data[:zero_from] + bytes(MB - zero_from))
    recs, stop, reader = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.lsn < big.lsn]
    assert stop.kind == "end" and stop.lsn == big.lsn == reader.last_end_lsn and stop.path == str(path)
    assert stop.reason.startswith(f"record at {format_lsn(big.lsn)} is incomplete: ")
    assert f"offset {zero_from}" in stop.reason


def _old_wal(w: WALWriter, segno: int) -> bytes:
    """What segment file ``segno`` held in an earlier life: WAL of segment ``segno - 4``."""
    old = WALWriter(major=w.major, seg_size=w.seg_size, sysid=w.sysid, start_lsn=(segno - 4) * w.seg_size)
    while old.insert_lsn < (segno - 3) * w.seg_size - 3 * PAGE:
        old.append(noop(20000))
    return old.segment_bytes(segno - 4)


def test_recycled_next_segment(impl, tmp_path):
    """After XLOG_SWITCH the next segment file is a recycled one: its pages carry old addresses."""
    w = WALWriter(major=15, seg_size=MB, start_lsn=5 * MB)
    w.extend([noop(300), noop(20000), Record(walgen.RM_XLOG_ID, walgen.XLOG_SWITCH)])
    w.write(tmp_path)
    nxt = tmp_path / w.segment_name(6)
    nxt.write_bytes(_old_wal(w, 6))
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written]
    assert stop.kind == "end" and stop.lsn == 6 * MB and stop.path == str(nxt)
    assert stop.reason == "unexpected pageaddr 0/200000 in log segment, offset 0"


def test_recycled_segment_tail(impl, tmp_path):
    """The current segment is a recycled file: past the last page written, its old pages remain."""
    w = WALWriter(major=15, seg_size=MB, start_lsn=5 * MB)
    w.extend([noop(300), noop(20000)])
    w.fill_to(page_of(w.insert_lsn) + PAGE - 200)
    w.append(noop(200))  # the last record ends exactly at a page end
    end = w.written[-1].end
    assert end % PAGE == 0
    path = w.path_of(tmp_path, 5 * MB)
    old = _old_wal(w, 5)
    path.write_bytes(w.segment_bytes(5)[:end - 5 * MB] + old[end - 5 * MB:])
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written]
    assert stop.kind == "end" and stop.lsn == end and stop.path == str(path)
    assert stop.reason == f"unexpected pageaddr {format_lsn(end - 4 * MB)} in log segment, offset {end - 5 * MB}"


def test_recycled_page_inside_a_record(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    big = max(w.written, key=lambda x: x.tot_len)
    page = page_of(big.lsn) + 2 * PAGE
    patch(path, page - MB + 8, (page - MB).to_bytes(8, "little"))  # xlp_pageaddr of an older life
    recs, stop, _ = read(tmp_path)
    assert lsns(recs) == [x.lsn for x in w.written if x.lsn < big.lsn]
    assert stop.kind == "end" and stop.lsn == big.lsn and stop.path == str(path)
    assert stop.reason == (f"record at {format_lsn(big.lsn)} is incomplete: unexpected pageaddr "
                           f"{format_lsn(page - MB)} in log segment, offset {page - MB}")


# --------------------------------------------------------------------------------------------
# Missing, partial and compressed segments


def test_missing_middle_segment(impl, tmp_path):
    w = three_segments(tmp_path)
    (tmp_path / w.segment_name(2)).unlink()
    with pytest.raises(MissingSegmentError) as e:
        read(tmp_path)
    msg = str(e.value)
    assert "missing WAL segment 000000010000000000000002 (LSN 0/200000)" in msg
    assert "000000010000000000000001" in msg and "000000010000000000000003" in msg
    assert e.value.lsn == 2 * MB
    # Ranges that do not need it read fine
    recs, stop, _ = read(tmp_path, end_lsn=2 * MB)
    assert lsns(recs) == [x.lsn for x in w.written if x.raw_end <= 2 * MB] and stop.kind == "limit"
    recs, stop, _ = read(tmp_path, start_lsn=3 * MB)
    assert lsns(recs) == [x.lsn for x in w.written if x.lsn >= 3 * MB] and stop.kind == "end"


def test_start_lsn_in_a_missing_segment(impl, tmp_path):
    w = three_segments(tmp_path)
    with pytest.raises(MissingSegmentError) as e:
        read(tmp_path, start_lsn=9 * MB + 100)
    assert "0/900064" in str(e.value) and w.segment_name(9) in str(e.value)


def test_partial_last_segment(impl, tmp_path):
    w = three_segments(tmp_path / "plain")
    shutil.copytree(tmp_path / "plain", tmp_path / "partial")
    last = tmp_path / "partial" / w.segment_name(3)
    last.rename(last.with_name(last.name + ".partial"))
    recs, stop, _ = read(tmp_path / "plain")
    recs2, stop2, _ = read(tmp_path / "partial")
    assert recs2 == recs and stop2._replace(path=None) == stop._replace(path=None)
    assert stop2.path == str(last) + ".partial"
    # A complete copy next to the .partial one wins
    shutil.copy(tmp_path / "plain" / w.segment_name(3), tmp_path / "partial")
    patch(Path(str(last) + ".partial"), 3 * PAGE, bytes(PAGE))
    recs3, stop3, _ = read(tmp_path / "partial")
    assert recs3 == recs and stop3 == stop._replace(path=str(last))


def _compress(path: Path, suffix: str) -> Path:
    data = path.read_bytes()
    if suffix == ".gz":
        out = gzip.compress(data)
    elif suffix == ".zst":
        import zstandard

        out = zstandard.ZstdCompressor().compress(data)
    else:
        import lz4.frame

        out = lz4.frame.compress(data)
    target = path.with_name(path.name + suffix)
    target.write_bytes(out)
    path.unlink()
    return target


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".lz4"])
def test_compressed_segments_read_as_plain_ones(impl, tmp_path, suffix):
    w = three_segments(tmp_path / "plain")
    shutil.copytree(tmp_path / "plain", tmp_path / "z")
    for p in sorted((tmp_path / "z").iterdir()):
        if p.name != w.segment_name(2) or suffix != ".gz":  # one plain segment among compressed ones
            _compress(p, suffix)
    recs, stop, _ = read(tmp_path / "plain")
    recs2, stop2, _ = read(tmp_path / "z")
    assert recs2 == recs and stop2._replace(path=None) == stop._replace(path=None)
    assert stop2.path.endswith(suffix)


@pytest.mark.parametrize("suffix, message", [
    (".gz", "could not decompress the file (gzip)"),
    (".zst", "could not decompress the file (zstd)"),
    (".lz4", "could not decompress the file (lz4)"),
])
@pytest.mark.parametrize("which", [1, 2])
def test_corrupt_compressed_segment(impl, tmp_path, suffix, message, which):
    w = three_segments(tmp_path)
    target = _compress(tmp_path / w.segment_name(which), suffix)
    data = target.read_bytes()
    target.write_bytes(data[:len(data) // 2])
    with pytest.raises(SegmentFileError) as e:
        read(tmp_path)
    assert message in str(e.value) and str(target) in str(e.value) and e.value.path == str(target)


# --------------------------------------------------------------------------------------------
# A record that passes its CRC but cannot be decoded


def test_undecodable_record_names_its_file(impl, tmp_path):
    w = one_segment(tmp_path)
    bad = w.append(Record(walgen.RM_HEAP_ID, 0x00, body=bytes([40, 0x20, 4, 0]) + bytes(20)))  # block id 40
    w.append(noop(100))
    w.write(tmp_path)
    path = w.path_of(tmp_path, bad.lsn)
    try:
        recs, stop, _ = read(tmp_path)
    except CorruptRecordError as e:
        assert f"invalid block_id 40 at {format_lsn(bad.lsn)}" in str(e)
        assert str(path) in str(e)
    else:
        assert stop.kind == "invalid" and stop.lsn == bad.lsn and stop.path == str(path)


def test_undecodable_record_stops_with_its_lsn(impl, tmp_path):
    w = one_segment(tmp_path)
    bad = w.append(Record(walgen.RM_HEAP_ID, 0x00, body=bytes([3, 0x20, 0, 0]) + bytes(20)))  # HAS_DATA, length 0
    w.append(noop(100))
    w.write(tmp_path)
    got = []
    with pytest.raises(CorruptRecordError) as e:
        for r in XLogReader([tmp_path]):
            got.append(r.lsn)
    assert got == [x.lsn for x in w.written[:-2]]
    assert str(e.value).startswith(f"BKPBLOCK_HAS_DATA set, but no data included at {format_lsn(bad.lsn)}")
    assert e.value.lsn == bad.lsn


# --------------------------------------------------------------------------------------------
# Real segments (fixtures/pg15-off/*/wal), copied and damaged


@pytest.fixture(params=REAL_WAL_DIRS, ids=lambda p: p.parent.name)
def real_wal(request, tmp_path):
    """A plain copy of a fixture's segments (stored .gz or plain), and what the reader makes of it."""
    dst = tmp_path / "wal"
    dst.mkdir()
    for src in request.param.iterdir():
        if src.suffix == ".gz":
            (dst / src.stem).write_bytes(gzip.decompress(src.read_bytes()))
        else:
            shutil.copy(src, dst)
    recs, stop, _ = read(dst)
    assert len(recs) > 20, f"{src}: only {len(recs)} records"
    return dst, recs, stop


def _file_of(directory: Path, lsn: int) -> tuple[Path, int]:
    seg_size = MB  # fixtures are made with 1 MB segments
    name = walgen.segment_file_name(1, lsn // seg_size, seg_size)
    return directory / name, lsn % seg_size


def test_real_wal_compressed(impl, real_wal, tmp_path):
    d, recs, stop = real_wal
    for p in sorted(d.iterdir()):
        _compress(p, ".gz")
    recs2, stop2, _ = read(d)
    assert recs2 == recs and stop2._replace(path=None) == stop._replace(path=None)


def test_real_wal_flipped_bit(impl, real_wal):
    d, recs, _stop = real_wal
    victim = [r for r in recs[len(recs) // 2:] if r.lsn % PAGE + r.xl_tot_len <= PAGE and r.xl_tot_len > 24][0]
    path, off = _file_of(d, victim.lsn)
    flip(path, off + victim.xl_tot_len - 1, 5)
    recs2, stop2, _ = read(d)
    assert recs2 == [r for r in recs if r.lsn < victim.lsn]
    assert stop2.kind == "invalid" and stop2.lsn == victim.lsn and stop2.path == str(path)
    assert stop2.reason == f"incorrect resource manager data checksum in record at {format_lsn(victim.lsn)}"


def test_real_wal_truncated(impl, real_wal):
    d, recs, _stop = real_wal
    victim = recs[len(recs) // 2]
    path, off = _file_of(d, victim.lsn)
    cut = off - off % PAGE + 1234
    path.write_bytes(path.read_bytes()[:cut])
    for later in sorted(d.iterdir()):
        if later.name > path.name:
            later.unlink()
    recs2, stop2, _ = read(d)
    page_lsn = victim.lsn - victim.lsn % PAGE
    assert recs2 == [r for r in recs if r.end_lsn <= page_lsn]
    assert stop2.kind == "end" and stop2.path == str(path)
    assert f"file holds {cut} of {MB} bytes" in stop2.reason


def test_real_wal_zeroed_tail(impl, real_wal):
    d, recs, _stop = real_wal
    victim = recs[2 * len(recs) // 3]
    path, off = _file_of(d, victim.lsn)
    data = path.read_bytes()
    path.write_bytes(data[:off] + bytes(len(data) - off))
    recs2, stop2, _ = read(d)
    assert recs2 == [r for r in recs if r.lsn < victim.lsn]
    assert stop2.kind == "end" and stop2.lsn == victim.lsn and stop2.path == str(path)
    assert stop2.reason == f"invalid record length at {format_lsn(victim.lsn)}: expected at least 24, got 0"


# --------------------------------------------------------------------------------------------
# The command line on damaged input


def _waldump_importable() -> bool:
    try:
        import waldecode.waldump  # noqa: F401
    except Exception:
        return False
    return True


needs_cli = pytest.mark.skipif(not _waldump_importable(), reason="waldecode.waldump is not importable yet")


def run_inspect(impl: str, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, WALDECODE_IMPL=impl)
    return subprocess.run([sys.executable, "-m", "waldecode.cli", "inspect", *map(str, args)], capture_output=True,
                          text=True, timeout=60, env=env, cwd=REPO)


def _one_line_error(proc) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@needs_cli
def test_cli_checksum_error(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    victim = w.written[4]
    flip(path, walgen.record_bytes_at(w, victim, victim.tot_len - 1) - MB)
    proc = run_inspect(impl, tmp_path)
    assert proc.returncode == 1
    line = _one_line_error(proc)
    assert line.startswith("waldecode: error: ")
    assert str(path) in line and format_lsn(victim.lsn) in line and "checksum" in line
    assert len(proc.stdout.splitlines()) == 4  # the records before it were printed


@needs_cli
def test_cli_missing_segment(impl, tmp_path):
    w = three_segments(tmp_path)
    (tmp_path / w.segment_name(2)).unlink()
    proc = run_inspect(impl, tmp_path)
    assert proc.returncode == 1
    line = _one_line_error(proc)
    assert line.startswith("waldecode: error: ") and w.segment_name(2) in line and "0/200000" in line


@needs_cli
def test_cli_corrupt_gzip(impl, tmp_path):
    w = three_segments(tmp_path)
    target = _compress(tmp_path / w.segment_name(2), ".gz")
    target.write_bytes(target.read_bytes()[:1000])
    proc = run_inspect(impl, tmp_path)
    assert proc.returncode == 1
    line = _one_line_error(proc)
    assert line.startswith("waldecode: error: ") and str(target) in line and "could not decompress" in line


@needs_cli
def test_cli_zeroed_tail_is_a_normal_end(impl, tmp_path):
    w = one_segment(tmp_path)
    path = w.path_of(tmp_path, MB)
    victim = w.written[4]
    data = path.read_bytes()
    path.write_bytes(data[:victim.lsn - MB] + bytes(MB - (victim.lsn - MB)))
    proc = run_inspect(impl, tmp_path)
    assert proc.returncode == 0
    line = _one_line_error(proc)
    assert line.startswith("waldecode: end of WAL at ") and format_lsn(victim.lsn) in line and str(path) in line
    assert len(proc.stdout.splitlines()) == 4


def test_cli_segment_of_another_version_than_the_catalog(tmp_path):
    """WAL of PostgreSQL 14 (page magic D10D) decoded with a PostgreSQL 15 snapshot: the error names the
    versions and the segment file the WAL's version was read from."""
    w = one_segment(tmp_path / "wal", major=14)
    catalog = REPO / "fixtures" / "pg15-off" / "small_dml" / "snapshot.json.gz"
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog),
                           str(tmp_path / "wal")], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2
    assert _one_line_error(proc) == (
        f"waldecode: error: the WAL was written by PostgreSQL 14 (page magic D10D of WAL segment "
        f"{w.path_of(tmp_path / 'wal', MB)}) but the catalog snapshot {catalog} is from PostgreSQL 15")
