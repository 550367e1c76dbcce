"""The exception tree, shared by every stage and by the pure-Python and Cython implementations.

``Error`` is the one root (``except waldecode.Error``).  Every message names what went
wrong and where: the segment file, the LSN written ``X/X`` as PostgreSQL prints it, and
where useful the offset in the file.  End of valid WAL is not an error: the reader
reports it, and damage it stops at, as a ``xlogpage.ReadStop``.  Printing these and
turning them into exit codes is the CLI's business.
"""

from __future__ import annotations

from .pg.lsn import format_lsn  # noqa: F401  (re-exported: messages name LSNs as PostgreSQL writes them)


class Error(Exception):
    """Base class of every error waldecode raises."""


class WALError(Error):
    """Bad or unusable WAL input; says in which segment file and at which LSN when known."""

    def __init__(self, message: str, path: str | None = None, lsn: int | None = None, what: str = "WAL segment"):
        self.path = path
        self.lsn = lsn
        where = []
        if path is not None:
            # what the path is: "WAL segment" for a segment file, "file" or "directory" for others
            where.append(f"in {what} {path}")
        if lsn is not None:
            where.append(f"at LSN {format_lsn(lsn)}")
        super().__init__(message + (" " + ", ".join(where) if where else ""))
        self.reason = message


class CorruptRecordError(WALError):
    """A record's framing or contents are impossible (lengths, block ids, ...)."""


class MissingSegmentError(WALError):
    """A segment is missing in the middle of the requested range."""


class SegmentFileError(WALError):
    """A file cannot be read as a WAL segment (name, size, compression, foreign file)."""


class DecompressionError(CorruptRecordError):
    """A full-page image or compressed datum does not decompress to the size it claims."""


class DecodeError(WALError):
    """The WAL cannot be decoded with this catalog (unknown relation, impossible TOAST sequence, ...)."""


class CatalogError(Error):
    """A catalog snapshot cannot be taken or read, or does not fit the WAL."""


class SpillError(Error):
    """A reorder-buffer spill file cannot be written or read back."""


class TypeOutputError(Error):
    """A value cannot be turned into its text form."""


class UnsupportedTypeError(TypeOutputError):
    """The type's output function is not implemented here (or the type is not in the catalog)."""

    def __init__(self, typeoid: int, typname: str | None, typoutput: str | None = None):
        self.typeoid = typeoid
        self.typname = typname
        self.typoutput = typoutput
        if typname is None:
            msg = f"type OID {typeoid} is not in the catalog snapshot"
        elif typoutput:
            msg = f"type {typname} (OID {typeoid}): output function {typoutput} is not supported"
        else:
            msg = f"type {typname} (OID {typeoid}) has no supported output function"
        super().__init__(msg)


class UnsupportedSettingError(TypeOutputError):
    """A setting value (e.g. an lc_monetary locale) that output cannot reproduce."""


class OutputPluginError(Error):
    """An output plugin refuses its options (an ERROR from the plugin's startup in the server)."""


class SparkJobError(Error):
    """Spark failed to run a job (not an error in the WAL): the cause's last line."""


class RangeRefusedError(Error):
    """A range of the ``pgwal`` source whose decoding shows it cannot give decode's rows
    (``spark.ranges.range_refusal``), or whose rows decode would not print (reading stops before it)."""


class UsageError(Error):
    """Arguments or inputs that do not fit together."""
