"""Compressed WAL files: which compressor wrote a file, told from its first bytes, and its bytes back.

Backup tools store segments compressed whole, each its own way: pgBackRest ``.gz``, ``.lz4``, ``.zst``
(``.bz2`` in older releases) after the segment name and its SHA-1; barman gzip or bzip2 under the bare
segment name, no extension; WAL-G ``.lz4``, ``.lzma``, ``.br``, ``.zst``; anyone ``.xz``.  The content
says which: every format but brotli opens with a magic number, and an uncompressed WAL segment opens
with its page magic (``0xD1xx`` in PostgreSQL 13 to 18), which none of them shares.  A file's
extension is only a hint, needed for brotli alone.

Hands ``segments`` the bytes of a file as PostgreSQL wrote them, never more than a segment's size
(a damaged or hostile file cannot make us allocate more).
"""

from __future__ import annotations

import bz2
import lzma
import zlib

from ..errors import SegmentFileError
from .xlogpage import MAJOR_BY_XLOG_PAGE_MAGIC

# Each format's magic number (RFC 1952 gzip; bzip2's "BZh" and block size; the LZ4 frame format;
# RFC 8878 zstd; the .xz container).  lzma-alone (.lzma, LZMA_Alone) has no magic: its first byte
# packs the lc/lp/pb properties, 0x5D for every encoder's defaults (WAL-G's included).
GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC = b"\xfd7zXZ\x00"
LZMA_ALONE_DEFAULT_PROPS = 0x5D

# File name extensions as the tools write them, by the compression they hint at
EXTENSIONS = {"gz": "gzip", "bz2": "bzip2", "lz4": "lz4", "zst": "zstd", "zstd": "zstd", "xz": "xz",
              "lzma": "lzma", "br": "brotli"}


def is_wal_page(head: bytes) -> bool:
    """The first bytes of an uncompressed WAL segment: a page magic we read (little-endian uint16)."""
    return len(head) >= 2 and (head[0] | head[1] << 8) in MAJOR_BY_XLOG_PAGE_MAGIC


def detect(head: bytes, hint: str | None = None) -> str | None:
    """The compression of a file from its first bytes (at least 6), or None for a plain file.
    ``hint`` (an ``EXTENSIONS`` value) decides only what content cannot: brotli."""
    if is_wal_page(head) or not any(head[:6]):
        return None  # a WAL page, or a zero-filled (never written) segment
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZIP2_MAGIC) and head[3:4].isdigit():
        return "bzip2"
    if head.startswith(LZ4_FRAME_MAGIC):
        return "lz4"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if hint == "lzma" or head[0] == LZMA_ALONE_DEFAULT_PROPS:
        return "lzma"
    if hint == "brotli":
        return "brotli"
    return None


def decompress(data, path, limit: int, hint: str | None = None) -> bytes:
    """``data`` as written before compression (itself when it is plain); at most ``limit`` bytes, more
    is an error naming ``path``."""
    kind = detect(bytes(data[:16]), hint)
    if kind is None:
        return data
    try:
        out = _DECOMPRESSORS[kind](data, limit + 1)
    except SegmentFileError:
        raise
    except Exception as e:  # each library raises its own error classes
        raise SegmentFileError(f"could not decompress the file ({kind}): {e}", path=str(path)) from None
    if len(out) > limit:
        raise SegmentFileError(f"the file decompresses ({kind}) to more than {limit} bytes: it is damaged or not a WAL "
                               "segment",
                               path=str(path))
    return out


def _gzip(data, cap: int) -> bytes:
    # Members one after another, as gzip(1) and zlib allow; 16 + MAX_WBITS: the gzip header and trailer
    out = []
    total = 0
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        chunk = d.decompress(rest, cap - total)
        if d.unconsumed_tail:  # over the cap
            return b"".join(out) + chunk + b"\0"
        if not d.eof:
            raise ValueError("compressed data ends before the end of the gzip stream (truncated file)")
        out.append(chunk)
        total += len(chunk)
        rest = d.unused_data
        if rest and not rest.startswith(GZIP_MAGIC):
            raise ValueError("trailing garbage after the gzip stream")
    return b"".join(out)


def _stream(decompressor, data, cap: int, what: str) -> bytes:
    out = decompressor.decompress(bytes(data), cap)
    if not decompressor.eof and len(out) < cap:
        raise ValueError(f"compressed data ends before the end of the {what} stream (truncated file)")
    return out


def _bzip2(data, cap: int) -> bytes:
    return _stream(bz2.BZ2Decompressor(), data, cap, "bzip2")


def _xz(data, cap: int) -> bytes:
    return _stream(lzma.LZMADecompressor(lzma.FORMAT_XZ), data, cap, "xz")


def _lzma_alone(data, cap: int) -> bytes:
    return _stream(lzma.LZMADecompressor(lzma.FORMAT_ALONE), data, cap, "lzma")


def _lz4(data, cap: int) -> bytes:
    import lz4.frame  # lazy: 1 ms of inspect's start-up; only .lz4 segments need it

    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(bytes(data), max_length=cap)
    if not d.eof and len(out) < cap:
        raise ValueError("compressed data ends before the end of the lz4 frame (truncated file)")
    return out


def _zstd(data, cap: int) -> bytes:
    import zstandard  # lazy: 2 ms of inspect's start-up; only .zst segments need it

    with zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True) as r:
        out = r.read(cap)
    if len(out) < cap:
        # stream_reader stops quietly at a cut frame: a whole decompression says whether it was one
        zstandard.ZstdDecompressor().decompressobj().decompress(bytes(data))
        if zstandard.frame_content_size(bytes(data[:18])) not in (-1, len(out)):
            raise ValueError("compressed data ends before the end of the zstd frame (truncated file)")
    return out


def _brotli(data, cap: int) -> bytes:
    try:
        import brotli  # lazy: only .br segments need it, and an install may lack it (said below)
    except ImportError:
        raise SegmentFileError("the file is brotli-compressed (.br, as WAL-G writes it): install the brotli "
                               "package (pip install brotli) to read it") from None
    d = brotli.Decompressor()
    out = d.process(bytes(data))
    if not d.is_finished():
        raise ValueError("compressed data ends before the end of the brotli stream (truncated file)")
    return out[:cap]


_DECOMPRESSORS = {"gzip": _gzip, "bzip2": _bzip2, "lz4": _lz4, "zstd": _zstd, "xz": _xz, "lzma": _lzma_alone,
                  "brotli": _brotli}
