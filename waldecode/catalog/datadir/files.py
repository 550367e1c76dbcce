"""Where a data directory's files come from: a plain directory, a pgBackRest backup set, a barman backup.

Owns the small interface every data-directory reader goes through (``DataFiles``: ``exists``,
``isdir``, ``listdir``, ``size``, ``read``, ``open``, ``describe``) and its implementations:

* ``PlainDirectory``: a stopped cluster's directory or a plain base backup, through the OS;
* ``PgBackRestSet``: one backup set inside a pgBackRest repository, from its ``backup.manifest``:
  each file stored as ``pg_data/<path>`` compressed as the set says (``.gz``, ``.lz4``, ``.zst``,
  ``.bz2``) or inside a bundle (``bundle/<id>`` at an offset, repo-bundle=y), in this set or, for
  differential and incremental sets, in the earlier set its ``reference`` names; files of size 0
  may not be stored at all.  Every file read is checked against the manifest's size and SHA-1.  The
  repository is local or in object storage: the set reads through a ``wal.storage.Store``, each file
  as a stream of ranged reads (``Store.open``), never whole in memory;
* ``TarFiles``: a tar archive as ``pg_basebackup -Ft`` writes it (barman's ``backup_method =
  postgres``), compressed ones (gzip, lz4, zstd) decompressed once into an anonymous temporary file
  and members read by offset, never the whole backup in memory;
* ``StoreDirectory``: a directory in an object store (a barman backup uploaded to S3);
* ``Mounted``: one source with others mounted under it (a barman backup's tablespaces, kept beside
  the data directory, under ``pg_tblspc/<oid>``).

Paths are given relative to the source's root, or as ``path(rel)`` names them (the root joined
with ``rel``), which is how every message names a file: a plain directory's paths are the OS's,
untouched; a backup's are its data directory inside the backup.  A file that is not there raises
``FileNotFoundError``, as ``open`` does; damaged stored bytes raise ``CatalogError`` naming the file
as stored.  Hands the readers (``control``, ``relmap``, ``clog``, ``heapscan``, ``catalogs``,
``settings``, ``snapshot``) the bytes of each file as PostgreSQL wrote it.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import hashlib
import io
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
from typing import BinaryIO, Iterator

from ...wal.archive import parse_pgbackrest_info
from ...wal.storage import LOCAL as LOCAL_STORE
from ...wal.storage import Store
from ..model import CatalogError

#: bytes copied or decompressed at a time
_CHUNK = 1 << 20


class DataFiles:
    """A data directory's files, wherever they are kept.  Subclasses implement the ``_`` methods on
    normalised relative paths ("" is the root); the public methods take either form of a path."""

    root: str = ""

    def describe(self) -> str:
        """What this source is, for messages."""
        return self.root

    def path(self, rel: str = "") -> str:
        """How messages name ``rel``: the root joined with it."""
        return posixpath.join(self.root, rel) if rel else self.root

    def rel(self, path) -> str | None:
        """``path`` relative to the root, normalised; None when it lies outside the source."""
        path = os.fspath(path)
        root = self.root.rstrip("/")
        if path == self.root or path == root:
            return ""
        if root and path.startswith(root + "/"):
            path = path[len(root) + 1:]
        elif os.path.isabs(path):
            return None
        path = posixpath.normpath(path)
        if path == ".":
            return ""
        if path == ".." or path.startswith("../"):
            return None
        return path

    def _missing(self, path) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))

    # the interface
    def exists(self, path) -> bool:
        rel = self.rel(path)
        return rel is not None and (self._isdir(rel) or self._isfile(rel))

    def isdir(self, path) -> bool:
        rel = self.rel(path)
        return rel is not None and self._isdir(rel)

    def listdir(self, path) -> list[str]:
        rel = self.rel(path)
        if rel is None or not self._isdir(rel):
            raise self._missing(path)
        return self._listdir(rel)

    def size(self, path) -> int:
        rel = self.rel(path)
        if rel is None or not self._isfile(rel):
            raise self._missing(path)
        return self._size(rel)

    def open(self, path) -> BinaryIO:
        """A binary stream of the file's bytes (a context manager); ``read(n)`` returns ``n`` bytes
        until the end."""
        rel = self.rel(path)
        if rel is None or not self._isfile(rel):
            raise self._missing(path)
        return self._open(rel)

    def read(self, path, size: int = -1) -> bytes:
        """The file's bytes (its first ``size`` when given)."""
        with self.open(path) as f:
            return f.read(size)

    def close(self) -> None:
        """Release what the source holds (temporary files)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # implemented by each source
    def _isfile(self, rel: str) -> bool:
        raise NotImplementedError

    def _isdir(self, rel: str) -> bool:
        raise NotImplementedError

    def _listdir(self, rel: str) -> list[str]:
        raise NotImplementedError

    def _size(self, rel: str) -> int:
        raise NotImplementedError

    def _open(self, rel: str) -> BinaryIO:
        raise NotImplementedError


class PlainDirectory(DataFiles):
    """A directory on disk, through the OS.  A path already joined to the root, or outside it (a
    configuration file in /etc named by an include), is used as given, so messages and behaviour are
    the OS's own."""

    def __init__(self, root) -> None:
        self.root = os.fspath(root)

    def _os(self, path) -> str:
        path = os.fspath(path)
        root = self.root.rstrip("/")
        if os.path.isabs(path) or path == self.root or (root and (path == root or path.startswith(root + "/"))):
            return path
        return os.path.join(self.root, path) if path else self.root

    def exists(self, path) -> bool:
        return os.path.exists(self._os(path))

    def isdir(self, path) -> bool:
        return os.path.isdir(self._os(path))

    def listdir(self, path) -> list[str]:
        return os.listdir(self._os(path))

    def size(self, path) -> int:
        return os.path.getsize(self._os(path))

    def open(self, path) -> BinaryIO:
        return open(self._os(path), "rb")

    # on relative paths, as a mounted source is called
    def _isfile(self, rel: str) -> bool:
        return os.path.isfile(self._os(rel))

    def _isdir(self, rel: str) -> bool:
        return self.isdir(rel)

    def _listdir(self, rel: str) -> list[str]:
        return self.listdir(rel)

    def _size(self, rel: str) -> int:
        return self.size(rel)

    def _open(self, rel: str) -> BinaryIO:
        return self.open(rel)


#: the file system itself, for readers given a bare path
LOCAL = PlainDirectory("")


class StoreDirectory(DataFiles):
    """A directory in an object store (a barman backup's ``data/`` uploaded to S3), through its
    ``wal.storage.Store``; files are streamed by ranged reads."""

    def __init__(self, root: str, store: Store) -> None:
        self.root = root.rstrip("/")
        self.store = store

    def describe(self) -> str:
        return f"directory {self.root}"

    def _loc(self, rel: str) -> str:
        return self.store.join(self.root, rel) if rel else self.root

    def _isfile(self, rel: str) -> bool:
        return self.store.kind(self._loc(rel)) == "file"

    def _isdir(self, rel: str) -> bool:
        return self.store.kind(self._loc(rel)) == "dir"

    def _listdir(self, rel: str) -> list[str]:
        return self.store.listdir(self._loc(rel))

    def _size(self, rel: str) -> int:
        with self.store.open(self._loc(rel)) as f:
            return f.seek(0, io.SEEK_END)

    def _open(self, rel: str) -> BinaryIO:
        return self.store.open(self._loc(rel))


def data_files(pgdata) -> DataFiles:
    """A ``DataFiles`` as it is, a path as a ``PlainDirectory``."""
    return pgdata if isinstance(pgdata, DataFiles) else PlainDirectory(pgdata)


# -- compressed streams -----------------------------------------------------------------------------

def _decompressing(raw: BinaryIO, kind: str) -> BinaryIO:
    """A stream of ``raw`` decompressed (``kind``: none, gz, bz2, lz4, zst as pgBackRest names them)."""
    if kind in ("none", ""):
        return raw
    if kind == "gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bz2":
        return bz2.BZ2File(raw, "rb")
    if kind == "lz4":
        import lz4.frame  # lazy: only .lz4 backup files need it

        return lz4.frame.LZ4FrameFile(raw, "rb")
    if kind == "zst":
        import zstandard  # lazy: 2 ms, only .zst backup files need it

        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    raise CatalogError(f"unknown compression {kind!r}")


class _Slice(io.RawIOBase):
    """``length`` bytes of a file from ``offset`` (a file inside a pgBackRest bundle, a tar member)."""

    def __init__(self, f: BinaryIO, offset: int, length: int, owned: bool = True):
        self._f = f
        self._pos = offset
        self._left = length
        self._owned = owned

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self._left)
        if n <= 0:
            return 0
        self._f.seek(self._pos)
        data = self._f.read(n)
        b[:len(data)] = data
        self._pos += len(data)
        self._left -= len(data)
        return len(data)

    def close(self) -> None:
        if self._owned and not self.closed:
            self._f.close()
        super().close()


class _CheckedFile(io.RawIOBase):
    """A stored file's bytes decompressed, checked at its end against the size and SHA-1 the manifest
    records; damage is a ``CatalogError`` naming the stored file."""

    def __init__(self, raw: BinaryIO, kind: str, size: int, sha1: str | None, where: str):
        self._raw = raw
        self._stream = _decompressing(raw, kind)
        self._kind = kind
        self._size = size
        self._sha1 = hashlib.sha1() if sha1 else None
        self._expected_sha1 = sha1
        self._where = where
        self._done = 0
        self._eof = False

    def readable(self) -> bool:
        return True

    def _fail(self, what: str):
        raise CatalogError(f"{self._where}: {what}")

    def readinto(self, b) -> int:
        if self._eof:
            return 0
        want = min(len(b), self._size - self._done + 1)  # one more byte shows a file longer than recorded
        try:
            data = self._stream.read(want)
        except CatalogError:
            raise
        except Exception as e:  # each decompressor raises its own error classes (and EOFError when cut)
            kind = {"gz": "gzip", "bz2": "bzip2", "zst": "zstd"}.get(self._kind, self._kind)
            self._fail(f"cannot decompress the stored file ({kind}): {e or type(e).__name__}")
        if self._done + len(data) > self._size:
            self._fail(f"the stored file holds more than the {self._size} bytes the manifest records: damaged")
        if not data:
            self._eof = True
            if self._done != self._size:
                self._fail(f"the stored file holds {self._done} bytes, the manifest records {self._size}: "
                           "damaged or cut short")
            if self._sha1 is not None and self._sha1.hexdigest() != self._expected_sha1:
                self._fail(f"SHA-1 {self._sha1.hexdigest()} of the file's bytes is not the manifest's "
                           f"{self._expected_sha1}: damaged")
            return 0
        if self._sha1 is not None:
            self._sha1.update(data)
        self._done += len(data)
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()  # a decompressor given a file object leaves it open
            self._raw.close()
        super().close()


def _exact_reader(raw: io.RawIOBase) -> BinaryIO:
    """A buffered reader whose ``read(n)`` returns ``n`` bytes until the end (what page reads expect)."""
    return io.BufferedReader(raw, buffer_size=_CHUNK)


# -- pgBackRest -------------------------------------------------------------------------------------

def _open_text(store: Store, path: str) -> io.TextIOWrapper:
    """A text file of ``store`` (pgBackRest's and barman's info files), read as ``open(path)`` reads it."""
    return io.TextIOWrapper(store.open(path), encoding="utf-8", errors="surrogateescape")


def read_pgbackrest_ini(path: str, text: str | None = None, store: Store = LOCAL_STORE) -> dict[str, dict]:
    """pgBackRest's info and manifest files (``wal.archive.parse_pgbackrest_info``), read from ``path``
    (in ``store``) unless ``text`` is given; errors name the file."""
    if text is None:
        try:
            with _open_text(store, path) as f:
                text = f.read()
        except FileNotFoundError:
            raise CatalogError(f"{path} is missing") from None
        except OSError as e:
            raise CatalogError(f"cannot read {path}: {e.strerror}") from None
    try:
        return parse_pgbackrest_info(text)
    except ValueError as e:
        raise CatalogError(f"{path}: {e}") from None


#: [backup:option] option-compress-type -> the extension stored files carry (common/compress/helper.c)
PGBACKREST_EXTENSIONS = {"none": "", "gz": ".gz", "bz2": ".bz2", "lz4": ".lz4", "zst": ".zst"}

# info/manifest.h: the targets a set's file names begin with: the data directory's files, and each
# tablespace's (pg_tblspc/<oid>/…, the same relative path as in the data directory, stored beside pg_data/)
MANIFEST_TARGET_PGDATA = "pg_data"
MANIFEST_TARGET_PGTBLSPC = "pg_tblspc"


def pgbackrest_compress_type(manifest: dict[str, dict], path: str) -> str:
    """A set's compression: ``option-compress-type`` (2.27+), else ``option-compress`` (gz or none)."""
    option = manifest.get("backup:option", {})
    kind = option.get("option-compress-type")
    if kind is None:
        kind = "gz" if option.get("option-compress") else "none"
    if kind not in PGBACKREST_EXTENSIONS:
        raise CatalogError(f"{path}: compression {kind!r} is not one waldecode reads "
                           f"({', '.join(PGBACKREST_EXTENSIONS)})")
    return kind


class PgBackRestSet(DataFiles):
    """One pgBackRest backup set (``<repo>/backup/<stanza>/<label>``) read through its manifest, from
    ``store`` (the local file system, or an object store: ``s3://bucket/<repo>/backup/...``)."""

    def __init__(self, set_dir, manifest: dict[str, dict] | None = None, store: Store = LOCAL_STORE):
        self.store = store
        self.set_dir = os.fspath(set_dir).rstrip("/")
        self.stanza_dir = store.parent(self.set_dir)
        self.label = store.name(self.set_dir)
        self.manifest_path = store.join(self.set_dir, "backup.manifest")
        if store.kind(self.manifest_path) is None and store.kind(self.manifest_path + ".copy") is not None:
            self.manifest_path += ".copy"  # pgBackRest writes both, and reads the copy when the main one is gone
        self.manifest = manifest if manifest is not None else read_pgbackrest_ini(self.manifest_path, store=store)
        if self.manifest.get("cipher"):
            raise CatalogError(f"{self.manifest_path}: the set is encrypted (repo1-cipher-type): not supported")
        self.root = store.join(self.set_dir, MANIFEST_TARGET_PGDATA)
        self._compress = {self.label: pgbackrest_compress_type(self.manifest, self.manifest_path)}
        self.files: dict[str, dict] = {}  # relative path in the data directory -> manifest entry
        self.names: dict[str, str] = {}  # relative path -> the manifest's name (where it is stored)
        self.dirs: dict[str, set[str]] = {"": set()}
        for name, entry in self.manifest.get("target:file", {}).items():
            rel = self._rel_of(name)
            if rel is not None:
                self.files[rel] = entry
                self.names[rel] = name
                self._add_parents(rel)
        for section in ("target:path", "target:link"):  # a link: pg_tblspc/<oid>, a directory in the set
            for name in self.manifest.get(section, {}):
                rel = self._rel_of(name)
                if rel:
                    self._add_parents(rel + "/.")
                    self.dirs.setdefault(rel, set())

    @staticmethod
    def _rel_of(name: str) -> str | None:
        """A manifest name's path in the data directory (None for another target)."""
        if name == MANIFEST_TARGET_PGDATA:
            return ""
        if name.startswith(MANIFEST_TARGET_PGDATA + "/"):
            return name[len(MANIFEST_TARGET_PGDATA) + 1:]
        if name.startswith(MANIFEST_TARGET_PGTBLSPC + "/"):
            return name
        return None

    def _add_parents(self, rel: str) -> None:
        parent, _, name = rel.rpartition("/")
        while True:
            children = self.dirs.setdefault(parent, set())
            if name != ".":
                children.add(name)
            if not parent:
                return
            parent, _, name = parent.rpartition("/")

    def describe(self) -> str:
        return f"pgBackRest backup set {self.set_dir}"

    def _isfile(self, rel: str) -> bool:
        return rel in self.files

    def _isdir(self, rel: str) -> bool:
        return rel in self.dirs

    def _listdir(self, rel: str) -> list[str]:
        return sorted(self.dirs[rel])

    def _size(self, rel: str) -> int:
        return int(self.files[rel].get("size", 0))

    def _compress_type(self, label: str) -> str:
        """The compression of set ``label`` (a referenced set may have been written with another)."""
        kind = self._compress.get(label)
        if kind is None:
            path = self.store.join(self.stanza_dir, label, "backup.manifest")
            if self.store.kind(path) is None:
                raise CatalogError(f"{path} is missing: {self.label} refers to backup set {label} for some of its "
                                   "files (expired or deleted?)")
            # only [backup:option] is needed: read up to the file list
            head = []
            with _open_text(self.store, path) as f:
                for line in f:
                    if line.startswith("[target:"):
                        break
                    head.append(line)
            kind = self._compress[label] = pgbackrest_compress_type(read_pgbackrest_ini(path, "".join(head)), path)
        return kind

    def stored_path(self, rel: str) -> str:
        """Where the bytes of ``rel`` are kept (a bundle, or ``pg_data/<rel><ext>``, ``pg_tblspc/<oid>/…<ext>`` of
        the set holding them)."""
        entry = self.files[rel]
        label = entry.get("reference", self.label)
        if "bni" in entry:
            return self.store.join(self.stanza_dir, label, "bundle", str(entry["bni"]))
        ext = PGBACKREST_EXTENSIONS[self._compress_type(label)]
        return self.store.join(self.stanza_dir, label, self.names[rel] + ext)

    def _open(self, rel: str) -> BinaryIO:
        entry = self.files[rel]
        size = int(entry.get("size", 0))
        if size == 0:
            return io.BytesIO(b"")  # recorded; stored (as an empty stream) or not, depending on the release
        if "bims" in entry:  # 2.46+: a block map of changed blocks, not the file's bytes
            raise CatalogError(f"{self.manifest_path}: {rel} is stored as a block-incremental map (repo-block=y): "
                               "not supported")
        label = entry.get("reference", self.label)
        kind = self._compress_type(label)
        stored = self.stored_path(rel)
        where = stored if "bni" not in entry else f"{stored} (offset {entry.get('bno', 0)}, {rel})"
        try:
            if "bni" in entry:
                # the manifest leaves out what equals its default: bno 0, repo-size = size
                raw: BinaryIO = self.store.open(stored, int(entry.get("bno", 0)), int(entry.get("repo-size", size)))
            else:
                raw = self.store.open(stored)
        except FileNotFoundError:
            raise CatalogError(f"{stored} is missing: the manifest {self.manifest_path} lists {rel} "
                               f"({size} bytes) there") from None
        except OSError as e:
            raise CatalogError(f"cannot read {stored}: {e.strerror}") from None
        return _exact_reader(_CheckedFile(raw, kind, size, entry.get("checksum"), where))


# -- tar archives (pg_basebackup -Ft, barman's backup_method = postgres) --------------------------

#: compression of a tar by its name's ending, as barman and pg_basebackup name them
TAR_ENDINGS = {".tar": "none", ".tar.gz": "gz", ".tgz": "gz", ".tar.lz4": "lz4", ".tar.zst": "zst",
               ".tar.bz2": "bz2"}


def tar_compression(path: str) -> str | None:
    """The compression of a tar file by its name, None when it is not one."""
    for ending, kind in TAR_ENDINGS.items():
        if path.endswith(ending):
            return kind
    return None


class TarFiles(DataFiles):
    """The members of one tar archive: indexed by one pass over the headers (the data is skipped),
    read by offset.  A compressed archive is first decompressed, once and on first use, into an
    anonymous temporary file (in ``TMPDIR``: as large as the archive uncompressed)."""

    def __init__(self, tar_path, root: str | None = None, store: Store = LOCAL_STORE):
        self.store = store
        self.tar_path = os.fspath(tar_path)
        self.root = root if root is not None else self.tar_path
        self.kind = tar_compression(self.tar_path) or "none"
        self._file: BinaryIO | None = None
        self._members: dict[str, tuple[int, int]] | None = None
        self._dirs: dict[str, set[str]] = {}

    def describe(self) -> str:
        return f"tar archive {self.tar_path}"

    def _index(self) -> dict[str, tuple[int, int]]:
        if self._members is not None:
            return self._members
        try:
            f: BinaryIO = self.store.open(self.tar_path)
        except FileNotFoundError:
            raise CatalogError(f"{self.tar_path} is missing") from None
        except OSError as e:
            raise CatalogError(f"cannot read {self.tar_path}: {e.strerror}") from None
        if self.kind != "none":
            tmp = tempfile.TemporaryFile(prefix="waldecode-tar-")
            try:
                with f, _decompressing(f, self.kind) as stream:
                    shutil.copyfileobj(stream, tmp, _CHUNK)
            except CatalogError:
                tmp.close()
                raise
            except Exception as e:
                tmp.close()
                raise CatalogError(f"{self.tar_path}: cannot decompress the archive ({self.kind}): "
                                   f"{e or type(e).__name__}") from None
            f = tmp
        members: dict[str, tuple[int, int]] = {}
        dirs: dict[str, set[str]] = {"": set()}
        try:
            f.seek(0)
            with tarfile.open(fileobj=f, mode="r:") as tar:
                for m in tar:
                    name = posixpath.normpath(m.name.lstrip("/"))
                    if name in (".", "") or name.startswith("../"):
                        continue
                    if m.isdir() or m.issym():  # a symlink is pg_tblspc/<oid>: a directory elsewhere
                        dirs.setdefault(name, set())
                    elif m.isreg():
                        members[name] = (m.offset_data, m.size)
                    else:
                        continue
                    parent, _, base = name.rpartition("/")
                    while True:
                        dirs.setdefault(parent, set()).add(base)
                        if not parent:
                            break
                        parent, _, base = parent.rpartition("/")
        except tarfile.TarError as e:
            f.close()
            raise CatalogError(f"{self.tar_path}: not a readable tar archive: {e}") from None
        self._file, self._members, self._dirs = f, members, dirs
        return members

    def _isfile(self, rel: str) -> bool:
        return rel in self._index()

    def _isdir(self, rel: str) -> bool:
        self._index()
        return rel in self._dirs

    def _listdir(self, rel: str) -> list[str]:
        self._index()
        return sorted(self._dirs[rel])

    def _size(self, rel: str) -> int:
        return self._index()[rel][1]

    def _open(self, rel: str) -> BinaryIO:
        offset, size = self._index()[rel]
        return _exact_reader(_Slice(self._file, offset, size, owned=False))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._members = None


class Mounted(DataFiles):
    """``base`` with other sources mounted at some of its directories (``{rel dir: source}``): a
    barman backup's tablespaces under ``pg_tblspc/<oid>``."""

    def __init__(self, base: DataFiles, mounts: dict[str, DataFiles]):
        self.base = base
        self.root = base.root
        self.mounts = mounts

    def describe(self) -> str:
        return self.base.describe()

    def _route(self, rel: str) -> tuple[DataFiles, str]:
        for point, source in self.mounts.items():
            if rel == point:
                return source, ""
            if rel.startswith(point + "/"):
                return source, rel[len(point) + 1:]
        return self.base, rel

    def _isfile(self, rel: str) -> bool:
        source, sub = self._route(rel)
        return source._isfile(sub)

    def _isdir(self, rel: str) -> bool:
        source, sub = self._route(rel)
        return source._isdir(sub)

    def _listdir(self, rel: str) -> list[str]:
        source, sub = self._route(rel)
        names = set(source._listdir(sub))
        names |= {p.rpartition("/")[2] for p in self.mounts if p.rpartition("/")[0] == rel}
        return sorted(names)

    def _size(self, rel: str) -> int:
        source, sub = self._route(rel)
        return source._size(sub)

    def _open(self, rel: str) -> BinaryIO:
        source, sub = self._route(rel)
        return source._open(sub)

    def close(self) -> None:
        self.base.close()
        for source in self.mounts.values():
            source.close()


# -- barman ------------------------------------------------------------------------------------------

def barman_backup_files(backup_dir, tablespace_oids: Iterator[int] = (), store: Store = LOCAL_STORE) -> DataFiles:
    """The data directory of a barman backup (``<server>/base/<backup_id>``), in any of the forms barman
    keeps: ``data/`` a plain directory (rsync, or ``backup_method = postgres`` uncompressed) with each
    tablespace in ``<backup_id>/<oid>/``; ``data/base.tar[.gz|.lz4|.zst]`` (``backup_compression``) with
    each tablespace in ``data/<oid>.tar…``; or ``data.tar[.gz]`` with ``<oid>.tar[.gz]`` beside it.
    Tablespaces are mounted at ``pg_tblspc/<oid>``.  A backup in an object store (``store``: a barman
    directory uploaded to S3) is read the same way, its files streamed by ranged reads."""
    backup_dir = os.fspath(backup_dir).rstrip("/")
    if store is not LOCAL_STORE:
        return _stored_barman_files(backup_dir, store)
    data = os.path.join(backup_dir, "data")
    for holder, stem in ((data, "base"), (backup_dir, "data")):
        tars = _tars(holder)
        if stem in tars:
            mounts = {f"pg_tblspc/{oid}": TarFiles(path, root=posixpath.join(tars[stem], "pg_tblspc", oid))
                      for oid, path in tars.items() if oid.isdigit()}
            main = TarFiles(tars[stem])
            return Mounted(main, mounts) if mounts else main
    if os.path.isdir(data):
        oids = {str(o) for o in tablespace_oids}
        try:
            oids |= {e for e in os.listdir(backup_dir) if e.isdigit() and os.path.isdir(os.path.join(backup_dir, e))}
        except OSError as e:
            raise CatalogError(f"cannot list {backup_dir}: {e.strerror}") from None
        mounts = {f"pg_tblspc/{oid}": PlainDirectory(os.path.join(backup_dir, oid)) for oid in sorted(oids)
                  if os.path.isdir(os.path.join(backup_dir, oid))}
        plain = PlainDirectory(data)
        return Mounted(plain, mounts) if mounts else plain
    raise CatalogError(f"{backup_dir}: no data directory in this barman backup (neither data/, data/base.tar… "
                       "nor data.tar…)")


def _tars(directory: str) -> dict[str, str]:
    """{stem: path} of the tar archives in ``directory``."""
    out = {}
    try:
        entries = os.listdir(directory)
    except OSError:
        return out
    for e in entries:
        for ending in TAR_ENDINGS:
            if e.endswith(ending) and stat.S_ISREG(os.stat(os.path.join(directory, e)).st_mode):
                out.setdefault(e[:-len(ending)], os.path.join(directory, e))
    return out


def _stored_barman_files(backup_dir: str, store: Store) -> DataFiles:
    """``barman_backup_files`` of a backup in an object store: the same forms, through ``store``."""
    data = store.join(backup_dir, "data")
    for holder, stem in ((data, "base"), (backup_dir, "data")):
        tars = {}
        if store.kind(holder) == "dir":
            for e in store.listdir(holder):
                ending = next((end for end in TAR_ENDINGS if e.endswith(end)), None)
                if ending and store.kind(store.join(holder, e)) == "file":
                    tars.setdefault(e[:-len(ending)], store.join(holder, e))
        if stem in tars:
            mounts = {f"pg_tblspc/{oid}": TarFiles(path, root=posixpath.join(tars[stem], "pg_tblspc", oid),
                                                   store=store)
                      for oid, path in tars.items() if oid.isdigit()}
            main = TarFiles(tars[stem], store=store)
            return Mounted(main, mounts) if mounts else main
    if store.kind(data) == "dir":
        mounts = {f"pg_tblspc/{e}": StoreDirectory(store.join(backup_dir, e), store)
                  for e in store.listdir(backup_dir) if e.isdigit() and store.kind(store.join(backup_dir, e)) == "dir"}
        plain = StoreDirectory(data, store)
        return Mounted(plain, mounts) if mounts else plain
    raise CatalogError(f"{backup_dir}: no data directory in this barman backup (neither data/, data/base.tar… "
                       "nor data.tar…)")
