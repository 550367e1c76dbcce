"""Exceptions shared by the pure-Python and Cython implementations.

Every message names what went wrong and where: the segment file, the LSN written
``X/X`` as PostgreSQL prints it, and where useful the offset in the file.
End of valid WAL is not an error: the reader reports it as a ``ReadStop``.
"""

from __future__ import annotations

from .pg.lsn import format_lsn  # noqa: F401  (re-exported: messages name LSNs as PostgreSQL writes them)


class WALError(Exception):
    """Base class: bad or unusable WAL input."""

    def __init__(self, message: str, path: str | None = None, lsn: int | None = None):
        self.path = path
        self.lsn = lsn
        where = []
        if path is not None:
            where.append(f"in WAL segment {path}")
        if lsn is not None:
            where.append(f"at LSN {format_lsn(lsn)}")
        super().__init__(message + (" " + ", ".join(where) if where else ""))
        self.reason = message


class InvalidPageError(WALError):
    """A page header fails its checks (magic, flags, pageaddr, timeline, sizes)."""


class CorruptRecordError(WALError):
    """A record's framing or contents are impossible (lengths, block ids, ...)."""


class CRCMismatchError(CorruptRecordError):
    """A record's CRC-32C does not match its contents."""


class MissingSegmentError(WALError):
    """A segment is missing in the middle of the requested range."""


class SegmentFileError(WALError):
    """A file cannot be read as a WAL segment (name, size, compression, foreign file)."""


class DecompressionError(CorruptRecordError):
    """A full-page image or compressed datum does not decompress to the size it claims."""
