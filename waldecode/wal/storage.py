"""Where archived WAL lives: the local file system, or an object store behind a URL.

Owns the few operations finding and reading archives need, behind one small interface, ``Store``:
what a location is (a directory, a file, nothing), every file under a directory with its size, a
file's bytes (or its first bytes, or a stream reading a range of them), and a hint of the order
files will be read in, so that a remote store can fetch ahead.  ``archive`` recognises the backup
tools' layouts through it, ``segments`` reads segments through it, and the catalog's backup readers
(``catalog.backups``, ``catalog.datadir.files``) read backup sets through it; none opens a file or
a connection itself.
``store_for(location, options)`` picks the store of a path or URL.

Locations are strings: a local path, or a URL (``s3://bucket/key``) whose store knows its scheme.
"""

from __future__ import annotations

import importlib
import io
import os
import re
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import SegmentFileError, UsageError

URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class InputOptions:
    """What a command line says about its WAL input beyond the paths (every command that reads WAL)."""

    stanza: str | None = None  # pgBackRest: the stanza of a repository holding several
    endpoint_url: str | None = None  # object stores: an S3-compatible endpoint (else AWS_ENDPOINT_URL)
    verify_tls: bool = True  # object stores: check the endpoint's certificate
    prefetch: int = 8  # object stores: segments fetched ahead, concurrently


DEFAULT_OPTIONS = InputOptions()


class Store:
    """The interface: a file system of locations (strings).  Directories may be implicit (object stores)."""

    scheme = ""

    def kind(self, location: str) -> str | None:
        """"dir", "file", or None when nothing is there."""
        raise NotImplementedError

    def walk(self, location: str) -> list[tuple[str, int]]:
        """Every file under a directory, recursively: (location, size), sorted by location."""
        raise NotImplementedError

    def listdir(self, location: str) -> list[str]:
        """The names directly under a directory (files and directories), sorted."""
        raise NotImplementedError

    def read(self, location: str, limit: int | None = None) -> bytes:
        """A file's bytes, or its first ``limit`` bytes."""
        raise NotImplementedError

    def map(self, location: str):
        """The file mapped read-only into memory, or None when this store cannot (then it is read)."""
        return None

    def open(self, location: str, offset: int = 0, length: int | None = None) -> BinaryIO:
        """A seekable binary stream of the file's bytes from ``offset`` (``length`` of them, else to the
        end), read in ranges as it is read: a file of any size, never whole in memory (a backup's files).
        ``FileNotFoundError`` when there is no such file; other failures as ``read`` reports them."""
        raise NotImplementedError

    def prefetch(self, locations: list[str]) -> None:
        """These files will be read next, in this order (a remote store fetches them ahead)."""

    def join(self, location: str, *names: str) -> str:
        return "/".join([location.rstrip("/"), *names])

    @staticmethod
    def name(location: str) -> str:
        return location.rstrip("/").rsplit("/", 1)[-1]

    @staticmethod
    def parent(location: str) -> str:
        head = location.rstrip("/").rsplit("/", 1)[0]
        return head or "/"

    def relative(self, location: str, root: str) -> str:
        """``location``'s path below the directory ``root``."""
        return location[len(root.rstrip("/")) + 1:]

    def describe(self, location: str) -> str:
        """What a location is, for messages: "directory X", "file X"."""
        kind = self.kind(location)
        return f"{'directory' if kind == 'dir' else 'file'} {location}"

    def __getstate__(self):
        # Stores travel to Spark tasks: connections and caches stay behind
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class LocalStore(Store):
    """The local file system; files are mapped rather than copied where they can be."""

    def kind(self, location: str) -> str | None:
        if os.path.isdir(location):
            return "dir"
        if os.path.exists(location):
            return "file"
        return None

    def walk(self, location: str) -> list[tuple[str, int]]:
        out = []
        # followlinks: a repository or pg_wal is often a symbolic link to another volume
        for root, dirs, files in os.walk(location, followlinks=True, onerror=_walk_error):
            dirs.sort()
            for name in files:
                path = os.path.join(root, name)
                try:
                    out.append((path, os.stat(path).st_size))
                except OSError:
                    continue  # a dangling link, a file removed while listing
        out.sort()
        return out

    def listdir(self, location: str) -> list[str]:
        try:
            return sorted(os.listdir(location))
        except OSError as e:
            raise SegmentFileError(f"could not list directory: {e.strerror}", path=location, what="directory") from None

    def read(self, location: str, limit: int | None = None) -> bytes:
        try:
            with open(location, "rb") as f:
                return f.read(-1 if limit is None else limit)
        except IsADirectoryError:
            raise SegmentFileError("is a directory, not a file", path=location, what="directory") from None
        except OSError as e:
            raise SegmentFileError(f"could not read file: {e.strerror}", path=location, what="file") from None

    def map(self, location: str):
        import mmap  # lazy: only mapped reads need it; kept off the start-up of every command

        try:
            with open(location, "rb") as f:
                return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                                 prot=mmap.PROT_READ)
        except (OSError, ValueError):  # an empty file, a file system without mmap: read it instead
            return None

    def open(self, location: str, offset: int = 0, length: int | None = None) -> BinaryIO:
        # the OS's own errors (OSError), as the readers of data directories have always reported them
        f = open(location, "rb")
        if offset == 0 and length is None:
            return f
        return io.BufferedReader(Window(f, offset, length if length is not None else os.fstat(f.fileno()).st_size
                                        - offset), buffer_size=1 << 20)

    def join(self, location: str, *names: str) -> str:
        return os.path.join(location, *names)

    @staticmethod
    def name(location: str) -> str:
        return os.path.basename(location.rstrip(os.sep)) or location

    @staticmethod
    def parent(location: str) -> str:
        return os.path.dirname(location.rstrip(os.sep)) or "."

    def relative(self, location: str, root: str) -> str:
        return os.path.relpath(location, root)


class RangeReader(io.RawIOBase):
    """``length`` bytes from ``offset`` of something read by position, as a file of their own (positions
    0..length); ``_read_at(offset, n)`` reads."""

    def __init__(self, offset: int, length: int):
        self._offset = offset
        self.length = max(0, length)
        self._pos = 0

    def _read_at(self, offset: int, n: int) -> bytes:
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.length}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, b) -> int:
        n = min(len(b), self.length - self._pos)
        if n <= 0:
            return 0
        data = self._read_at(self._offset + self._pos, n)
        b[:len(data)] = data
        self._pos += len(data)
        return len(data)


class Window(RangeReader):
    """``length`` bytes of a seekable file from ``offset``, as a file of their own."""

    def __init__(self, f: BinaryIO, offset: int, length: int):
        super().__init__(offset, length)
        self._f = f

    def _read_at(self, offset: int, n: int) -> bytes:
        self._f.seek(offset)
        return self._f.read(n)

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def _walk_error(e: OSError) -> None:
    raise SegmentFileError(f"could not list directory: {e.strerror}", path=e.filename, what="directory")


LOCAL = LocalStore()

# Object stores by URL scheme: module and class, imported only when such a URL is given
_STORES = {"s3": ("waldecode.wal.objectstore", "S3Store")}


def store_for(location: str, options: InputOptions = DEFAULT_OPTIONS) -> Store:
    """The store that holds ``location`` (a local path, ``file://`` URL, or an object store's URL)."""
    m = URL_RE.match(str(location))
    if m is None or m.group(1).lower() == "file":
        return LOCAL
    scheme = m.group(1).lower()
    if scheme not in _STORES:
        raise UsageError(f"{location}: waldecode reads local paths and " +
                         ", ".join(f"{s}://" for s in _STORES) + f" URLs, not {scheme}:// "
                         "(spark decode reads Hadoop's file systems: hdfs://, s3a://, ...)")

    module, cls = _STORES[scheme]
    return getattr(importlib.import_module(module), cls)(options)


def has_store(location: str) -> bool:
    """Whether ``location`` is a local path or an object store's URL that waldecode reads itself
    (spark decode reads other URLs, ``file://`` included, through Hadoop's file systems)."""
    m = URL_RE.match(str(location))
    return m is None or m.group(1).lower() in _STORES


def local_path(location: str) -> str:
    """A ``file://`` URL as the path it names; anything else as it is."""
    s = str(location)
    return s[7:] if s.startswith("file://") else s
