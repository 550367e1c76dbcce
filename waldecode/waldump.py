"""pg_waldump's text: one line per record, and the ``--stats`` tables.

Owns the output of src/bin/pg_waldump/pg_waldump.c (``XLogDumpDisplayRecord``,
``XLogDumpStatsRow``, ``XLogDumpDisplayStats``), the block-reference summary of
``XLogRecGetBlockRefInfo`` (src/backend/access/rmgrdesc/xlogdesc.c, 15+; 13/14
print the same text from pg_waldump.c itself) and the length split of
``XLogRecGetLen`` (src/backend/access/transam/xlogstats.c).  Takes
``DecodedRecord``s and the server's major version; hands strings to the CLI
(``waldecode inspect``) and to tests that diff against pg_waldump.  ``inspect``
runs a whole ``waldecode inspect``: this module's loop over the reader's records
is the reference; under the Cython implementation ``waldecode._waldump`` does
the same in one native loop over the segment bytes, byte for byte.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from . import _impl, rmgr
from .pg.lsn import format_lsn, parse_lsn
from .rmgr.rmgrdesc_utils import fork_name
from .wal.xlogrecord import (BKPIMAGE_COMPRESS_LZ4, BKPIMAGE_COMPRESS_PGLZ, BKPIMAGE_COMPRESS_ZSTD,
                         BKPIMAGE_IS_COMPRESSED_V13, BLCKSZ)

XLR_INFO_MASK = 0x0F
MAIN_FORKNUM = 0
MAX_XLINFO_TYPES = 16


def record_lengths(record) -> tuple[int, int]:
    """XLogRecGetLen: (rec_len, fpi_len); fpi_len sums ``bimg_len`` of every block image."""
    fpi_len = sum(b.bimg_len for b in record.blocks if b.has_image)
    return record.xl_tot_len - fpi_len, fpi_len


def _image_apply(block, major: int) -> bool:
    """XLogRecBlockImageApply: BKPIMAGE_APPLY is 0x02 in 15+, 0x04 in 13/14."""
    return bool(block.bimg_info & (0x02 if major >= 15 else 0x04))


def _image_compressed(block, major: int) -> bool:
    if major >= 15:
        return bool(block.bimg_info & (BKPIMAGE_COMPRESS_PGLZ | BKPIMAGE_COMPRESS_LZ4 | BKPIMAGE_COMPRESS_ZSTD))
    return bool(block.bimg_info & BKPIMAGE_IS_COMPRESSED_V13)


def block_ref_info(record, major: int, detailed: bool = False) -> str:
    """XLogRecGetBlockRefInfo(record, pretty=true, detailed_format, ...) without its final
    newline: ``, blkref #N: rel S/D/R [fork F ]blk B[ FPW]`` per block, or with
    ``detailed`` one ``\\n\\tblkref ...`` line per block (``--bkp-details``)."""
    out = []
    for b in record.blocks:
        if detailed:
            out.append("\n\tblkref #%d: rel %u/%u/%u fork %s blk %u" % (
                b.block_id, b.spcOid, b.dbOid, b.relNumber, fork_name(b.forknum), b.blkno))
            if b.has_image:
                verify = "" if _image_apply(b, major) else " for WAL verification"
                if _image_compressed(b, major):
                    saved = BLCKSZ - b.hole_length - b.bimg_len
                    if major >= 15:
                        if b.bimg_info & BKPIMAGE_COMPRESS_PGLZ:
                            method = "pglz"
                        elif b.bimg_info & BKPIMAGE_COMPRESS_LZ4:
                            method = "lz4"
                        elif b.bimg_info & BKPIMAGE_COMPRESS_ZSTD:
                            method = "zstd"
                        else:
                            method = "unknown"
                        out.append(" (FPW%s); hole: offset: %u, length: %u, compression saved: %u, method: %s"
                                   % (verify, b.hole_offset, b.hole_length, saved, method))
                    else:
                        out.append(" (FPW%s); hole: offset: %u, length: %u, compression saved: %u"
                                   % (verify, b.hole_offset, b.hole_length, saved))
                else:
                    out.append(" (FPW%s); hole: offset: %u, length: %u" % (verify, b.hole_offset, b.hole_length))
        else:
            if b.forknum != MAIN_FORKNUM:
                out.append(", blkref #%d: rel %u/%u/%u fork %s blk %u" % (
                    b.block_id, b.spcOid, b.dbOid, b.relNumber, fork_name(b.forknum), b.blkno))
            else:
                out.append(", blkref #%d: rel %u/%u/%u blk %u" % (
                    b.block_id, b.spcOid, b.dbOid, b.relNumber, b.blkno))
            if b.has_image:
                out.append(" FPW" if _image_apply(b, major) else " FPW for WAL verification")
    return "".join(out)


# (major, rmid, info) -> (padded resource manager name, "desc: TYPE "): a few dozen kinds per WAL
_HEAD_PARTS: dict = {}


def _head_parts(major: int, rmid: int, info: int) -> tuple[str, str]:
    parts = _HEAD_PARTS.get((major, rmid, info))
    if parts is None:
        ident = rmgr.identify(rmid, info, major)
        kind = "desc: UNKNOWN (%x) " % (info & ~XLR_INFO_MASK & 0xFF) if ident is None else "desc: %s " % ident
        parts = _HEAD_PARTS[(major, rmid, info)] = ("%-11s" % rmgr.rmgr_name(rmid, major), kind)
    return parts


def _record_head(record, major: int) -> str:
    rec_len, _fpi_len = record_lengths(record)
    name, kind = _head_parts(major, record.xl_rmid, record.xl_info)
    return ("rmgr: %s len (rec/tot): %6u/%6u, tx: %10u, lsn: %X/%08X, prev %X/%08X, " % (
        name, rec_len, record.xl_tot_len, record.xl_xid, record.lsn >> 32, record.lsn & 0xFFFFFFFF,
        record.xl_prev >> 32, record.xl_prev & 0xFFFFFFFF)) + kind + rmgr.desc(record, major)


def format_record(record, major: int) -> str:
    """The line XLogDumpDisplayRecord prints for ``record`` (no trailing newline)."""
    return _record_head(record, major) + block_ref_info(record, major, detailed=False)


def format_record_bkp_details(record, major: int) -> str:
    """What XLogDumpDisplayRecord prints with ``--bkp-details`` (several lines, no final newline)."""
    return _record_head(record, major) + block_ref_info(record, major, detailed=True)


class _Counts:
    __slots__ = ("count", "rec_len", "fpi_len")

    def __init__(self):
        self.count = 0
        self.rec_len = 0
        self.fpi_len = 0


class WaldumpStats:
    """XLogStats / XLogRecStoreStats and XLogDumpDisplayStats.

    ``add`` every record pg_waldump would have shown, then ``format`` for the
    ``--stats=record`` table (``per_record=False`` gives plain ``--stats``, i.e.
    ``--stats=rmgr``).
    """

    def __init__(self, major: int, per_record: bool = True):
        self.major = major
        self.per_record = per_record
        self.count = 0
        self.startptr: int | None = None  # first record's LSN
        self.endptr: int | None = None  # EndRecPtr of the last record
        self.rmgr_stats: dict[int, _Counts] = {}
        self.record_stats: dict[tuple[int, int], _Counts] = {}

    def add(self, record) -> None:
        if self.startptr is None:
            self.startptr = record.lsn
        self.endptr = record.end_lsn
        self.count += 1
        rmid = record.xl_rmid
        rec_len, fpi_len = record_lengths(record)
        c = self.rmgr_stats.setdefault(rmid, _Counts())
        c.count += 1
        c.rec_len += rec_len
        c.fpi_len += fpi_len
        recid = (record.xl_info >> 4) & 0x0F
        # XACT records use the first of the four bits as a flag (14+ filter it out)
        if rmid == rmgr.RM_XACT_ID and self.major >= 14:
            recid &= 0x07
        c = self.record_stats.setdefault((rmid, recid), _Counts())
        c.count += 1
        c.rec_len += rec_len
        c.fpi_len += fpi_len

    @staticmethod
    def _row(name: str, n: int, total_count: int, rec_len: int, total_rec_len: int, fpi_len: int,
             total_fpi_len: int, tot_len: int, total_len: int) -> str:
        """XLogDumpStatsRow."""
        n_pct = 100 * n / total_count if total_count else 0.0
        rec_len_pct = 100 * rec_len / total_rec_len if total_rec_len else 0.0
        fpi_len_pct = 100 * fpi_len / total_fpi_len if total_fpi_len else 0.0
        tot_len_pct = 100 * tot_len / total_len if total_len else 0.0
        return "%-27s %20u (%6.02f) %20u (%6.02f) %20u (%6.02f) %20u (%6.02f)" % (
            name, n, n_pct, rec_len, rec_len_pct, fpi_len, fpi_len_pct, tot_len, tot_len_pct)

    def _rmids(self) -> list[int]:
        major = self.major
        if major >= 15:
            return [ri for ri in range(rmgr.RM_MAX_ID + 1) if rmgr.rmgr_id_is_valid(ri, major)]
        return list(range(rmgr.RM_MAX_BUILTIN_ID + 1))

    def format(self, per_record: bool | None = None) -> str:
        """The text XLogDumpDisplayStats prints, final newline included ("" if no
        record was counted, as 15+ prints nothing then)."""
        if per_record is None:
            per_record = self.per_record
        major = self.major
        if self.endptr is None and major >= 15:
            return ""
        empty = _Counts()
        total_count = total_rec_len = total_fpi_len = 0
        for ri in self._rmids():
            c = self.rmgr_stats.get(ri, empty)
            total_count += c.count
            total_rec_len += c.rec_len
            total_fpi_len += c.fpi_len
        total_len = total_rec_len + total_fpi_len

        lines = []
        if major >= 15:
            lines.append("WAL statistics between %s and %s:" % (format_lsn(self.startptr or 0),
                                                                format_lsn(self.endptr or 0)))
        lines.append("%-27s %20s %8s %20s %8s %20s %8s %20s %8s" % (
            "Type", "N", "(%)", "Record size", "(%)", "FPI size", "(%)", "Combined size", "(%)"))
        lines.append("%-27s %20s %8s %20s %8s %20s %8s %20s %8s" % (
            "----", "-", "---", "-----------", "---", "--------", "---", "-------------", "---"))
        for ri in self._rmids():
            desc = rmgr.get_rmgr_desc(ri, major)
            if not per_record:
                c = self.rmgr_stats.get(ri, empty)
                if rmgr.rmgr_id_is_custom(ri, major) and c.count == 0:
                    continue
                lines.append(self._row(desc.rm_name, c.count, total_count, c.rec_len, total_rec_len,
                                       c.fpi_len, total_fpi_len, c.rec_len + c.fpi_len, total_len))
                continue
            for rj in range(MAX_XLINFO_TYPES):
                c = self.record_stats.get((ri, rj))
                if c is None or c.count == 0:
                    continue
                ident = desc.identify(rj << 4, major)
                if ident is None:
                    ident = "UNKNOWN (%x)" % (rj << 4)
                lines.append(self._row("%s/%s" % (desc.rm_name, ident), c.count, total_count, c.rec_len,
                                       total_rec_len, c.fpi_len, total_fpi_len, c.rec_len + c.fpi_len, total_len))
        lines.append("%-27s %20s %8s %20s %8s %20s %8s %20s" % (
            "", "--------", "", "--------", "", "--------", "", "--------"))
        rec_len_pct = 100 * total_rec_len / total_len if total_len else 0.0
        fpi_len_pct = 100 * total_fpi_len / total_len if total_len else 0.0
        lines.append("%-27s %20u %-9s%20u %-9s%20u %-9s%20u %-6s" % (
            "Total", self.count, "", total_rec_len, "[%.02f%%]" % rec_len_pct, total_fpi_len,
            "[%.02f%%]" % fpi_len_pct, total_len, "[100%]"))
        return "\n".join(lines) + "\n"


BLOCK_SIZE = 1 << 20  # output is written in blocks of this size (or more: whole lines)

# The reason framing gives (wal/_pyframe.py, native/_native.pyx) when the next page lies past the end
# of a file shorter than a segment
_CUT_SHORT = "end of available data: file holds "


def read_failed(stop) -> bool:
    """Whether reading stopped where pg_waldump's read of a page fails: a page past the end of a file
    cut short.  pg_waldump exits 1 there ("could not read from file"), without its --stats table."""
    return stop is not None and stop.kind == "end" and _CUT_SHORT in stop.reason


def inspect(reader, write, *, stats: str | None = None, bkp_details: bool = False, rmids=None,
            xid: int | None = None, limit: int | None = None, tracker=None, impl: str | None = None) -> int:
    """What ``waldecode inspect`` prints for ``reader``'s range, handed to ``write`` in blocks:
    pg_waldump's lines, or with ``stats`` ("record" or "rmgr") its --stats table.  A block is a
    bytes-like object valid only during the call (as a file's ``write`` takes it).

    ``rmids``, ``xid`` and ``limit`` are pg_waldump's --rmgr, --xid and --limit; ``tracker`` a
    ``progress.Tracker`` of ``reader``.  ``impl`` forces "python" (this module's loop, the
    reference) or "cython" (``waldecode._waldump``); by default the active implementation's.
    Returns the number of records shown.  Whatever was printed before an error is written.
    """
    native = None
    if impl is None:
        native = _impl.waldump()
    elif impl == "cython":
        from . import _waldump as native  # type: ignore[attr-defined]  # lazy: forced; may not be built
    elif impl != "python":
        raise ValueError(f"unknown implementation {impl!r}")
    table = WaldumpStats(reader.major, per_record=stats == "record") if stats else None
    if native is not None:
        mode = native.MODE_STATS if stats else (native.MODE_TEXT_DETAILED if bkp_details else native.MODE_TEXT)
        dump = native.Dump(reader.major, mode, verify_crc=reader.verify_crc, rmids=rmids, xid=xid, limit=limit,
                           write=write, block_size=BLOCK_SIZE, tracker=tracker)
        if tracker is not None:
            tracker.begin()
        try:
            dump.run(reader)
        finally:
            if tracker is not None:
                tracker.close()
        if table is not None and not read_failed(reader.stop):
            write(dump.fill_stats(table).format().encode())
        return dump.shown
    return _inspect_records(reader, write, table, bkp_details, rmids, xid, limit, tracker)


def _inspect_records(reader, write, table, bkp_details: bool, rmids, xid, limit, tracker) -> int:
    """The reference loop of ``inspect``: one DecodedRecord at a time."""
    major = reader.major
    fmt = format_record_bkp_details if bkp_details else format_record
    pending: list[bytes] = []
    size = 0
    shown = 0
    records = tracker if tracker is not None else reader
    try:
        for rec in records:
            if rmids is not None and rec.xl_rmid not in rmids:
                continue
            if xid is not None and rec.xl_xid != xid:
                continue
            if table is not None:
                table.add(rec)
            else:
                line = (fmt(rec, major) + "\n").encode("utf-8", "surrogateescape")
                pending.append(line)
                size += len(line)
                if size >= BLOCK_SIZE:
                    write(b"".join(pending))
                    pending.clear()
                    size = 0
            shown += 1
            if limit is not None and shown >= limit:
                break
    finally:
        if tracker is not None:
            tracker.close()
        if pending:
            write(b"".join(pending))
    if table is not None and not read_failed(reader.stop):
        write(table.format().encode())
    return shown


class WaldumpLine(NamedTuple):
    """The header fields of one pg_waldump record line."""

    lsn: int
    prev: int
    rmgr: str
    xid: int
    rec_len: int
    tot_len: int
    desc: str  # everything after "desc: "


WALDUMP_LINE_RE = re.compile(
    r"^rmgr: (?P<rmgr>\S+)\s+len \(rec/tot\):\s+(?P<rec>\d+)/\s*(?P<tot>\d+), tx:\s+(?P<xid>\d+), "
    r"lsn: (?P<lsn>[0-9A-F]+/[0-9A-F]+), prev (?P<prev>[0-9A-F]+/[0-9A-F]+), desc: (?P<desc>.*)$")


def parse_waldump_line(line: str) -> WaldumpLine | None:
    """Split a pg_waldump record line into its fields (None for other lines)."""
    m = WALDUMP_LINE_RE.match(line.rstrip("\n"))
    if m is None:
        return None
    return WaldumpLine(parse_lsn(m["lsn"]), parse_lsn(m["prev"]), m["rmgr"], int(m["xid"]), int(m["rec"]),
                       int(m["tot"]), m["desc"])
