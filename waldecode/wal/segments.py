"""WAL segment files: names, discovery, and loading their bytes.

Owns src/include/access/xlog_internal.h's file naming (``XLogFileName``,
``XLogFromFileName``) and the ways segments reach us: a ``pg_wal`` directory, an
archive directory, a list of files, ``.partial`` segments, and archived segments
compressed whole (``.gz``, ``.lz4``, ``.zst``).  Hands the reader a
``SegmentSet``: the segment size, and one file per (timeline, segment number).
The reader never opens files itself; it asks ``SegmentSet.load``.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path

from ..errors import MissingSegmentError, SegmentFileError, format_lsn
from .xlogpage import MAJOR_BY_XLOG_PAGE_MAGIC, SizeOfXLogLongPHD, XLP_LONG_HEADER, parse_long_header

SEGMENT_NAME_RE = re.compile(r"^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})(\.partial)?(\.gz|\.lz4|\.zst)?$")
HISTORY_NAME_RE = re.compile(r"^([0-9A-F]{8})\.history$")

# src/include/access/xlog_internal.h: WalSegMinSize, WalSegMaxSize
WalSegMinSize = 1024 * 1024
WalSegMaxSize = 1024 * 1024 * 1024
# src/include/pg_config.h: the WAL page size of every standard build
XLOG_BLCKSZ = 8192


def segments_per_xlogid(seg_size: int) -> int:
    return 0x100000000 // seg_size


def segment_name(tli: int, segno: int, seg_size: int) -> str:
    """XLogFileName."""
    per = segments_per_xlogid(seg_size)
    return f"{tli:08X}{segno // per:08X}{segno % per:08X}"


def parse_segment_name(name: str, seg_size: int) -> tuple[int, int]:
    """XLogFromFileName: (timeline, segment number) of a segment file name."""
    m = SEGMENT_NAME_RE.match(name)
    if not m:
        raise SegmentFileError(f"not a WAL segment file name: {name!r}", path=name)
    tli, log, seg = int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)
    per = segments_per_xlogid(seg_size)
    if seg >= per:
        raise SegmentFileError(f"segment number {seg:08X} in the name {name} is impossible for "
                               f"{seg_size}-byte segments", path=name)
    return tli, log * per + seg


def _decompress(path: Path, data: bytes, limit: int) -> bytes:
    suffix = path.suffix
    try:
        if suffix == ".gz":
            return gzip.decompress(data)
        if suffix == ".zst":
            import zstandard

            return zstandard.ZstdDecompressor().decompress(data, max_output_size=limit)
        if suffix == ".lz4":
            import lz4.frame

            return lz4.frame.decompress(data)
    except Exception as e:  # each library raises its own error classes
        raise SegmentFileError(f"could not decompress {suffix} file: {e}", path=str(path)) from None
    return data


def _read(path: Path, size: int = -1) -> bytes:
    """The file's first ``size`` bytes (all of it by default)."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as e:
        raise SegmentFileError(f"could not read file: {e.strerror}", path=str(path)) from None


def read_segment_file(path: Path, max_size: int = WalSegMaxSize) -> bytes:
    return _decompress(path, _read(path), max_size)


def map_segment_file(path: Path):
    """The file mapped read-only (pages read ahead), or None when it is empty or cannot be mapped."""
    import mmap

    try:
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                             prot=mmap.PROT_READ)
    except (OSError, ValueError):  # an empty file, a file system without mmap: read it instead
        return None


@dataclass
class SegmentFile:
    path: Path
    tli: int
    segno: int
    partial: bool
    compressed: bool


@dataclass
class SegmentSet:
    """The segments given to one reader, all of one cluster and one segment size."""

    seg_size: int
    page_size: int
    magic: int
    sysid: int
    files: dict = field(default_factory=dict)  # segno -> SegmentFile, for the chosen timeline
    tli: int = 1
    timelines: tuple = ()
    # ((parent timeline, LSN where the next timeline forked off), ...) of ``tli``, oldest first
    history: tuple = ()
    identified_by: str = ""  # the segment file whose first page header gave magic, sysid and sizes

    @property
    def major(self) -> int:
        return MAJOR_BY_XLOG_PAGE_MAGIC[self.magic]

    def describe_version(self) -> str:
        """Which PostgreSQL wrote the WAL, and which file says so: for messages."""
        where = f" of WAL segment {self.identified_by}" if self.identified_by else ""
        return f"PostgreSQL {self.major} (page magic {self.magic:04X}{where})"

    @property
    def first_segno(self) -> int:
        return min(self.files)

    @property
    def last_segno(self) -> int:
        return max(self.files)

    def tli_for(self, segno: int) -> int:
        """The timeline a segment is read from: the one its last byte belongs to in the history
        (timeline.c tliOfPointInHistory), so the segment holding a switch point comes from the child."""
        last = (segno + 1) * self.seg_size - 1
        for parent, switch_lsn in self.history:
            if last < switch_lsn:
                return parent
        return self.tli

    def name(self, segno: int) -> str:
        return segment_name(self.tli_for(segno), segno, self.seg_size)

    def map_file(self, f):
        """The file's bytes mapped into memory, or None when it cannot be (then it is read)."""
        return map_segment_file(f.path)

    def load(self, segno: int, mapped: bool = False) -> tuple[bytes, str]:
        """The bytes of a segment and the path to name in messages.

        ``mapped``: an uncompressed file is mapped into memory (an ``mmap``, read-only) rather
        than copied into a new bytes object — no copy and no page faults on fresh memory, for a
        reader that only scans the bytes once (the native ``inspect``)."""
        f = self.files.get(segno)
        if f is None:
            raise MissingSegmentError(
                f"missing WAL segment {self.name(segno)} (LSN {format_lsn(segno * self.seg_size)}); "
                f"the input has {self.name(self.first_segno)} to {self.name(self.last_segno)}",
                lsn=segno * self.seg_size)
        data = self.map_file(f) if mapped and not f.compressed else None
        if data is None:
            data = self.read_file(f)
        if len(data) > self.seg_size:
            raise SegmentFileError(f"file has {len(data)} bytes, more than the segment size {self.seg_size}",
                                   path=str(f.path), lsn=segno * self.seg_size)
        if len(data) < self.seg_size and not f.partial and segno < self.last_segno:
            # Only the newest segment may end early (cut off, still being written)
            raise SegmentFileError(f"file holds {len(data)} of {self.seg_size} bytes, but later segments follow "
                                   f"it: it is truncated or not a WAL segment", path=str(f.path),
                                   lsn=segno * self.seg_size)
        return data, str(f.path)

    def read_file(self, f: SegmentFile) -> bytes:
        """A segment file's bytes, decompressed (the Spark path reads Hadoop file systems instead)."""
        return read_segment_file(f.path, self.seg_size)

    def check_contiguous(self, first: int, last: int) -> None:
        for segno in range(first, last + 1):
            if segno not in self.files:
                raise MissingSegmentError(
                    f"missing WAL segment {self.name(segno)} (LSN {format_lsn(segno * self.seg_size)}) "
                    f"between {self.name(first)} and {self.name(last)}", lsn=segno * self.seg_size)


def _candidates(paths) -> list[Path]:
    out = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            if (p / "pg_wal").is_dir():
                p = p / "pg_wal"
            out.extend(sorted(c for c in p.iterdir() if SEGMENT_NAME_RE.match(c.name) and c.is_file()))
        elif p.exists():
            if HISTORY_NAME_RE.match(p.name):
                continue
            if not SEGMENT_NAME_RE.match(p.name):
                raise SegmentFileError("file name is not a WAL segment name (24 hex digits, optionally "
                                       ".partial, .gz, .lz4 or .zst)", path=str(p))
            out.append(p)
        else:
            raise SegmentFileError("no such file or directory", path=str(p))
    return out


def _read_identity(path: Path):
    if path.suffix in (".gz", ".lz4", ".zst"):
        return identity_of(read_segment_file(path), path)
    # Only the first page's header is asked for: not the whole segment (16 MB read at every start)
    return identity_of(_read(path, XLOG_BLCKSZ), path)


def identity_of(data: bytes, path):
    """The long page header that identifies a segment file's cluster and sizes (None: zero-filled)."""
    hdr = parse_long_header(data)
    if hdr is None:
        raise SegmentFileError(f"file is too short for a WAL segment ({len(data)} bytes)", path=str(path))
    if hdr.xlp_magic not in MAJOR_BY_XLOG_PAGE_MAGIC:
        if not any(data[:SizeOfXLogLongPHD]):
            return None  # a zero-filled (pre-allocated, never written) segment
        raise SegmentFileError(
            f"invalid magic number {hdr.xlp_magic:04X}: not a WAL segment of PostgreSQL 13 to 18", path=str(path))
    if not hdr.xlp_info & XLP_LONG_HEADER:
        raise SegmentFileError("first page has no long header: not the start of a WAL segment", path=str(path))
    seg = hdr.xlp_seg_size
    if seg < WalSegMinSize or seg > WalSegMaxSize or seg & (seg - 1):
        raise SegmentFileError(f"invalid segment size {seg} in the page header", path=str(path))
    if hdr.xlp_xlog_blcksz != XLOG_BLCKSZ:
        raise SegmentFileError(f"incorrect XLOG_BLCKSZ {hdr.xlp_xlog_blcksz} in page header: waldecode reads "
                               f"PostgreSQL's standard {XLOG_BLCKSZ}-byte WAL pages", path=str(path))
    return hdr


class Scan(NamedTuple):
    """What the files among some paths are: every segment by timeline, and the history files."""

    first: Path  # the segment file whose first page header gave the identity
    ident: object  # that XLogLongPageHeaderData
    by_tli: dict  # timeline -> {segno: SegmentFile} (the best file of each segment)
    histories: dict  # timeline -> ((parent timeline, switch LSN), ...), from TTTTTTTT.history files

    @property
    def seg_size(self) -> int:
        return self.ident.xlp_seg_size


def scan(paths) -> Scan:
    """Find the segments and history files among ``paths`` (directories or files), every timeline's."""
    return scan_candidates(_candidates(paths), histories(paths), ", ".join(str(p) for p in paths), _read_identity)


def scan_candidates(cands: list, histories_: dict, where: str, read_identity) -> Scan:
    """The ``Scan`` of candidate files (paths with ``.name`` and ``.parent``), given the timeline
    histories found next to them; ``read_identity(path)`` is ``identity_of`` the file's first page."""
    if not cands:
        raise SegmentFileError("no WAL segment files found", path=where)
    ident = None
    for c in cands:
        ident = read_identity(c)
        if ident is not None:
            first = c
            break
    if ident is None:
        raise SegmentFileError("every segment file is zero-filled: there is no WAL to read", path=where)
    seg_size = ident.xlp_seg_size
    by_tli: dict[int, dict[int, SegmentFile]] = {}
    for c in cands:
        m = SEGMENT_NAME_RE.match(c.name)
        tli, segno = parse_segment_name(c.name, seg_size)
        f = SegmentFile(c, tli, segno, bool(m.group(4)), bool(m.group(5)))
        slot = by_tli.setdefault(tli, {})
        old = slot.get(segno)
        # A complete segment beats a .partial one; plain beats compressed (same content, cheaper)
        if old is None or (old.partial, old.compressed) > (f.partial, f.compressed):
            slot[segno] = f
    return Scan(first, ident, by_tli, histories_)


def discover(paths, timeline: int | None = None) -> SegmentSet:
    """Find the segments among ``paths`` (directories or files) and check they belong together."""
    return segment_set(_candidates(paths), histories(paths), timeline, ", ".join(str(p) for p in paths),
                       _read_identity)


def segment_set(cands: list, histories_: dict, timeline: int | None, where: str, read_identity) -> SegmentSet:
    """The ``SegmentSet`` of one timeline (the newest by default) among candidate files, as
    ``scan_candidates`` finds them, following that timeline's history."""
    first, ident, by_tli, histories_ = scan_candidates(cands, histories_, where, read_identity)
    seg_size = ident.xlp_seg_size
    tlis = tuple(sorted(by_tli))
    if timeline is None:
        timeline = tlis[-1]
        if len(tlis) > 1 and timeline not in histories_:
            raise SegmentFileError(
                "segments of several timelines (" + ", ".join(str(t) for t in tlis) + ") given and no history "
                f"file {timeline:08X}.history to join them: choose one with --timeline", path=str(first.parent))
    if timeline not in by_tli:
        raise SegmentFileError(f"no segment of timeline {timeline} among the input", path=str(first.parent))
    history = histories_.get(timeline, ())
    files = dict(by_tli[timeline])
    if history:
        # Follow the history: before each switch point, the parent timeline's segments
        probe = SegmentSet(seg_size, ident.xlp_xlog_blcksz, ident.xlp_magic, ident.xlp_sysid, tli=timeline,
                           history=history)
        files = {}
        for segno in sorted({n for per in by_tli.values() for n in per}):
            f = by_tli.get(probe.tli_for(segno), {}).get(segno)
            if f is not None:
                files[segno] = f
    return SegmentSet(seg_size=seg_size, page_size=ident.xlp_xlog_blcksz, magic=ident.xlp_magic,
                      sysid=ident.xlp_sysid, files=files, tli=timeline, timelines=tlis, history=history,
                      identified_by=str(first))


def parse_history(text: str, source: str) -> tuple:
    """timeline.c readTimeLineHistory: ``parentTLI<TAB>X/X<TAB>reason`` lines, # comments."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 2)
        try:
            tli = int(fields[0])
            hi, lo = fields[1].split("/")
            out.append((tli, int(hi, 16) << 32 | int(lo, 16)))
        except (ValueError, IndexError):
            raise SegmentFileError(f"syntax error in history file line {n}: {line!r}", path=source) from None
    return tuple(out)


def histories(paths) -> dict:
    """Timeline history files (TTTTTTTT.history) found in the given directories, by timeline."""
    out = {}
    for p in paths:
        p = Path(p)
        if p.is_dir():
            if (p / "pg_wal").is_dir():
                p = p / "pg_wal"
            for c in p.iterdir():
                m = HISTORY_NAME_RE.match(c.name)
                if m:
                    out[int(m.group(1), 16)] = parse_history(c.read_text(errors="replace"), str(c))
        elif HISTORY_NAME_RE.match(p.name):
            out[int(HISTORY_NAME_RE.match(p.name).group(1), 16)] = parse_history(p.read_text(errors="replace"),
                                                                                  str(p))
    return out


