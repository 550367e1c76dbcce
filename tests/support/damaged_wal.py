"""WAL damaged as archives get damaged, for the tests of what decoding does with it."""

from __future__ import annotations

import shutil

from waldecode.spark import tasks
from waldecode.wal.segments import discover

#: offsetof(XLogRecord, xl_crc) (access/xlogrecord.h)
XL_CRC_OFFSET = 20


def with_bad_crc(wal, tmp_path, start_lsn: int, end_lsn: int):
    """A copy of ``wal`` (under ``tmp_path``) with a wrong CRC in the last record between ``start_lsn`` and
    ``end_lsn`` whose header lies within one page, and that record's LSN.  Phase 1 of Spark's range path and
    its catalog pass, which frame without checking CRCs, pass it; decoding stops there (an invalid record
    ends the WAL, as in PostgreSQL)."""
    bad = tmp_path / "wal"
    shutil.copytree(wal, bad)
    segments = discover([bad], None)
    first, last = start_lsn // segments.seg_size, (end_lsn - 1) // segments.seg_size
    records = [t for path, raw in tasks.frame_run(segments, first, last, None, None, verify_crc=False)
               if path not in ("stop", "error") for t in raw]
    lsn = [t[0] for t in records if start_lsn <= t[0] < end_lsn and t[0] % segments.page_size < 8000][-1]
    seg = bad / segments.name(lsn // segments.seg_size)
    data = bytearray(seg.read_bytes())
    data[lsn % segments.seg_size + XL_CRC_OFFSET] ^= 0xFF
    seg.write_bytes(bytes(data))
    return bad, lsn
