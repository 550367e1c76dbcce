"""WAL segment files: names, discovery, and loading their bytes.

Owns src/include/access/xlog_internal.h's file naming (``XLogFileName``,
``XLogFromFileName``), the identity of a cluster's segments (their first page header), the
choice of one file per segment and of one timeline, and loading a segment's bytes: decompressed
(``compression``), checked against the SHA-1 pgBackRest names it by.  The files themselves are
found by ``archive`` (the backup tools' layouts) in a ``storage.Store``.  Hands the reader a
``SegmentSet``: the segment size, and one file per (timeline, segment number).
The reader never opens files itself; it asks ``SegmentSet.load``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import MissingSegmentError, SegmentFileError, format_lsn
from .archive import SEGMENT_FILE_RE, Archive, find
from .compression import EXTENSIONS, decompress, detect
from .storage import DEFAULT_OPTIONS, LOCAL, InputOptions, LocalStore, Store
from .xlogpage import MAJOR_BY_XLOG_PAGE_MAGIC, SizeOfXLogLongPHD, XLP_LONG_HEADER, parse_long_header

# XLogFileName's 24 hex digits (a partial segment's name adds ".partial"); archive.SEGMENT_FILE_RE
# is the file names tools give them
SEGMENT_NAME_RE = re.compile(r"^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})(\.partial)?$")

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
    """XLogFromFileName: (timeline, segment number) of a segment file name (as any tool names it)."""
    m = SEGMENT_FILE_RE.match(name)
    if not m:
        raise SegmentFileError(f"not a WAL segment file name: {name!r}", path=name)
    digits = m.group("seg")
    tli, log, seg = int(digits[:8], 16), int(digits[8:16], 16), int(digits[16:], 16)
    per = segments_per_xlogid(seg_size)
    if seg >= per:
        raise SegmentFileError(f"segment number {seg:08X} in the name {name} is impossible for "
                               f"{seg_size}-byte segments", path=name)
    return tli, log * per + seg


def read_segment_file(path, max_size: int = WalSegMaxSize) -> bytes:
    """A local segment file's bytes, decompressed."""
    path = str(path)
    return decompress(LOCAL.read(path), path, max_size, hint_of(path))


def hint_of(name) -> str | None:
    """The compression a file name's extension hints at (compression.EXTENSIONS), or None."""
    base, _, ext = str(name).rpartition(".")
    return EXTENSIONS.get(ext) if base else None


@dataclass
class SegmentFile:
    path: object  # archive.ArchiveFile (str() is its location), or a Hadoop path
    tli: int
    segno: int
    partial: bool
    compressed: bool  # the name hints at a compressor (the content decides)
    sha1: str | None = None  # pgBackRest: the SHA-1 the segment's bytes must have
    hint: str | None = None  # the compression the name hints at (compression.EXTENSIONS values)


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
    store: Store = LOCAL  # where the files are (storage.Store)

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
        return self.store.map(str(f.path))

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
        ahead = getattr(self, "_ahead", None)
        data = ahead.take(segno) if ahead is not None else None
        if data is None:
            data = self.map_file(f) if mapped and not f.compressed else None
            if data is not None and detect(bytes(data[:16]), f.hint) is not None:
                data = None  # compressed after all, whatever the name says
            if data is None:
                data = self._fetch(f)
            elif f.sha1 is not None:
                check_sha1(data, f)
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
        location = str(f.path)
        return decompress(self.store.read(location), location, self.seg_size, f.hint)

    def _fetch(self, f: SegmentFile) -> bytes:
        """A file's segment bytes, read, decompressed and checked (the work ``prefetch`` does ahead)."""
        data = self.read_file(f)
        if f.sha1 is not None:
            check_sha1(data, f)
        return data

    def prefetch(self, first: int, last: int) -> None:
        """Segments ``first`` to ``last`` will be loaded in order: an object store fetches them ahead,
        and a thread reads, decompresses and checks the next ones while the reader works on this one
        (zlib, bz2, lzma, lz4, zstd, brotli and SHA-1 let other threads run), unless they are plain local
        files, which are mapped."""
        wanted = [n for n in range(first, last + 1) if n in self.files]
        self.store.prefetch([str(self.files[n].path) for n in wanted])
        old = getattr(self, "_ahead", None)
        if old is not None:
            old.close()
        busy = [n for n in wanted if self._busy(self.files[n])]
        self._ahead = _Ahead(self, busy) if len(busy) > 1 else None

    def _busy(self, f: SegmentFile) -> bool:
        """Whether loading the file is more than mapping it: compressed (its name or its first bytes
        say so), named by its SHA-1, or not local."""
        if f.compressed or f.sha1 is not None or not isinstance(self.store, LocalStore):
            return True
        try:
            return detect(self.store.read(str(f.path), 16), f.hint) is not None
        except SegmentFileError:
            return False  # loading it will say what is wrong

    def __getstate__(self):
        # A set travels to Spark tasks: the thread working ahead stays behind
        state = dict(self.__dict__)
        state.pop("_ahead", None)
        return state

    def check_contiguous(self, first: int, last: int) -> None:
        for segno in range(first, last + 1):
            if segno not in self.files:
                raise MissingSegmentError(
                    f"missing WAL segment {self.name(segno)} (LSN {format_lsn(segno * self.seg_size)}) "
                    f"between {self.name(first)} and {self.name(last)}", lsn=segno * self.seg_size)


class _Ahead:
    """Segments loaded ahead of the reader, in the order it will ask for them, by one thread: at most
    ``AHEAD_BYTES`` of them at a time.  An error is raised when its segment is taken, where loading it
    would have raised it."""

    AHEAD_BYTES = 64 * 1024 * 1024

    def __init__(self, segments: SegmentSet, order: list[int]):
        # lazy: concurrent.futures costs 6 ms of start-up; only reading ahead needs it
        from concurrent.futures import ThreadPoolExecutor

        self.segments = segments
        self.order = list(order)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="waldecode-ahead")
        self.pending: dict = {}
        self.window = max(1, self.AHEAD_BYTES // segments.seg_size)
        self._fill()

    def _fill(self) -> None:
        while self.order and len(self.pending) < self.window:
            segno = self.order.pop(0)
            self.pending[segno] = self.pool.submit(self.segments._fetch, self.segments.files[segno])

    def take(self, segno: int):
        """The segment's bytes when they were loaded ahead, else None (the caller loads it)."""
        fut = self.pending.pop(segno, None)
        if fut is None:
            return None
        try:
            return fut.result()
        finally:
            self._fill()

    def close(self) -> None:
        self.order.clear()
        for fut in self.pending.values():
            fut.cancel()
        self.pending.clear()
        self.pool.shutdown(wait=False)


def check_sha1(data, f: SegmentFile) -> None:
    """pgBackRest names each archived segment by its bytes' SHA-1: a file whose bytes differ is damaged."""
    got = hashlib.sha1(data).hexdigest()
    if got != f.sha1:
        raise SegmentFileError(f"the segment's SHA-1 is {got}, not {f.sha1} as the pgBackRest file name says: "
                               "the file is damaged or not the segment it is named", path=str(f.path))


def _identity_reader(store: Store):
    """``read_identity`` for files of ``store``: only the first page is read of a plain file."""
    def read_identity(f):
        location = str(f.path) if isinstance(f, SegmentFile) else str(f)
        head = store.read(location, XLOG_BLCKSZ)
        if detect(head[:16], getattr(f, "hint", None)) is not None:
            # compressed: the first page needs the whole file (16 MB read at most once per start)
            head = decompress(store.read(location), location, WalSegMaxSize, getattr(f, "hint", None))
        return identity_of(head, location)
    return read_identity


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

    first: object  # the segment file (archive.ArchiveFile) whose first page header gave the identity
    ident: object  # that XLogLongPageHeaderData
    by_tli: dict  # timeline -> {segno: SegmentFile} (the best file of each segment)
    histories: dict  # timeline -> ((parent timeline, switch LSN), ...), from TTTTTTTT.history files
    store: Store = LOCAL  # where the files are

    @property
    def seg_size(self) -> int:
        return self.ident.xlp_seg_size


def scan(paths, options: InputOptions = DEFAULT_OPTIONS, store: Store | None = None) -> Scan:
    """Find the segments and history files among ``paths`` (directories of any layout ``archive``
    knows, files, URLs), every timeline's."""
    return _scan_archive(find(paths, options, store))


def _scan_archive(found: Archive) -> Scan:
    histories_ = {tli: parse_history(text, location) for tli, (location, text) in found.histories.items()}
    sc = scan_candidates(found.files, histories_, found.where, _identity_reader(found.store))._replace(
        store=found.store)
    if found.expect_sysid is not None:
        _check_pgbackrest_identity(sc, found)
    return sc


def _check_pgbackrest_identity(sc: Scan, found: Archive) -> None:
    """The segments of a pgBackRest archive are of the cluster archive.info names for their db id."""
    major = MAJOR_BY_XLOG_PAGE_MAGIC[sc.ident.xlp_magic]
    if sc.ident.xlp_sysid != found.expect_sysid:
        raise SegmentFileError(f"the segment belongs to the cluster with system identifier {sc.ident.xlp_sysid}, "
                               f"but {found.expect_source} gives {found.expect_sysid} for this archive",
                               path=str(sc.first))
    if str(major) != found.expect_version.split(".")[0] and found.expect_version != str(major):
        raise SegmentFileError(f"the segment was written by PostgreSQL {major}, but {found.expect_source} gives "
                               f"version {found.expect_version} for this archive", path=str(sc.first))


def scan_candidates(cands: list, histories_: dict, where: str, read_identity) -> Scan:
    """The ``Scan`` of candidate files (``archive.ArchiveFile``: ``.name`` the segment name, ``.partial``,
    ``.compressed``, ``.sha1``, ``.hint``), given the timeline histories found next to them;
    ``read_identity(file)`` is ``identity_of`` the file's first page."""
    if not cands:
        raise SegmentFileError(f"no WAL segment files found in {where}")
    ident = None
    for c in cands:
        ident = read_identity(c)
        if ident is not None:
            first = c
            break
    if ident is None:
        raise SegmentFileError(f"every segment file in {where} is zero-filled: there is no WAL to read")
    seg_size = ident.xlp_seg_size
    by_tli: dict[int, dict[int, SegmentFile]] = {}
    for c in cands:
        tli, segno = parse_segment_name(c.name, seg_size)
        f = SegmentFile(c, tli, segno, c.partial, c.compressed, c.sha1, c.hint)
        slot = by_tli.setdefault(tli, {})
        old = slot.get(segno)
        # A complete segment beats a .partial one; plain beats compressed (same content, cheaper)
        if old is None or (old.partial, old.compressed) > (f.partial, f.compressed):
            slot[segno] = f
    return Scan(first, ident, by_tli, histories_)


def discover(paths, timeline: int | None = None, options: InputOptions = DEFAULT_OPTIONS,
             store: Store | None = None) -> SegmentSet:
    """Find the segments among ``paths`` (directories of any layout ``archive`` knows, files, URLs;
    in ``store``, by default the one their scheme names) and check they belong together."""
    return timeline_set(_scan_archive(find(paths, options, store)), timeline)


def segment_set(cands: list, histories_: dict, timeline: int | None, where: str, read_identity) -> SegmentSet:
    """The ``SegmentSet`` of one timeline (the newest by default) among candidate files, as
    ``scan_candidates`` finds them, following that timeline's history."""
    return timeline_set(scan_candidates(cands, histories_, where, read_identity), timeline)


def timeline_set(sc: Scan, timeline: int | None) -> SegmentSet:
    """The ``SegmentSet`` of one timeline of a ``Scan`` (the newest by default), following its history."""
    first, ident, by_tli, histories_, store = sc
    where = Store.parent(str(first))
    seg_size = ident.xlp_seg_size
    tlis = tuple(sorted(by_tli))
    if timeline is None:
        timeline = tlis[-1]
        if len(tlis) > 1 and timeline not in histories_:
            raise SegmentFileError(
                "segments of several timelines (" + ", ".join(str(t) for t in tlis) + ") given and no history "
                f"file {timeline:08X}.history to join them: choose one with --timeline", path=where,
                what="directory")
    if timeline not in by_tli:
        raise SegmentFileError(f"no segment of timeline {timeline} among the input", path=where, what="directory")
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
                      identified_by=str(first), store=store)


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
