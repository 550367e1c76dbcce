"""Archives as backup tools keep them: which files under a path are WAL segments and timeline histories.

Owns the layouts DBAs' WAL is found in, and the file names each tool gives a segment:

* a ``pg_wal`` directory or a data directory holding one; any directory tree (searched recursively);
  explicit files (names that are not WAL are passed over, as a directory search passes them over);
* **pgBackRest** (src/command/archive/, src/info/infoArchive.c): a repository (``archive/`` and
  ``backup/``), ``archive/<stanza>`` with its ``archive.info``, ``<version>-<db id>/``, the 16-hex
  leaf directories, files ``<segment>[.partial]-<sha1>[.gz|.lz4|.zst|.bz2]`` whose SHA-1 is that of the
  segment's bytes (``segments`` checks it), and ``NNNNNNNN.history``.  ``archive.info`` says which
  system identifier and version each database id stands for: a stanza upgraded to a new cluster keeps
  the old ids' WAL beside the new, and only the current id's is read;
* **barman**: a server directory (``wals/`` beside ``base/``), ``wals/`` and its leaf directories,
  segments under their bare names whatever the compression; ``xlog.db`` (name, size, time,
  compression per line) gives compression hints where it exists;
* **WAL-G**: a prefix holding ``wal_005/``, and ``wal_005/`` itself (``<segment>.lz4|.lzma|.br|.zst``).

Compression is told from the content (``compression``); a name's extension is only a hint.  Hands
``segments`` an ``Archive``: the candidate files (``ArchiveFile``: where, the segment name, the SHA-1
to check, the compression hint) and the history files' text, through a ``storage.Store``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import SegmentFileError, UsageError
from .compression import EXTENSIONS, decompress
from .storage import DEFAULT_OPTIONS, InputOptions, LocalStore, Store, local_path, store_for

_EXT = "|".join(sorted(EXTENSIONS, key=len, reverse=True))
# A segment file as any tool names it: the 24 hex digits of XLogFileName, ".partial" (a segment the
# server was writing at a promotion), pgBackRest's "-<sha1>", a compressor's extension
SEGMENT_FILE_RE = re.compile(rf"^(?P<seg>[0-9A-F]{{24}})(?P<partial>\.partial)?(?:-(?P<sha1>[0-9a-f]{{40}}))?"
                             rf"(?:\.(?P<ext>{_EXT}))?$")
HISTORY_FILE_RE = re.compile(rf"^(?P<tli>[0-9A-F]{{8}})\.history(?:-(?P<sha1>[0-9a-f]{{40}}))?(?:\.(?P<ext>{_EXT}))?$")
# pgBackRest's database directories under archive/<stanza>: "<PostgreSQL version>-<db id>"
PGBACKREST_DB_DIR_RE = re.compile(r"^(\d+(?:\.\d+)?)-(\d+)$")

# barman's names of its compressors (xlog.db's fourth column), as the formats they write
_BARMAN_COMPRESSION = {"gzip": "gzip", "pigz": "gzip", "pygzip": "gzip", "bzip2": "bzip2", "pybzip2": "bzip2",
                       "lz4": "lz4", "zstd": "zstd", "xz": "xz"}


@dataclass(frozen=True)
class ArchiveFile:
    """One segment file found: where it is, and what its name says."""

    location: str
    name: str  # the segment's name: 24 hex digits, then ".partial" for a partial segment
    sha1: str | None = None  # pgBackRest: the SHA-1 of the segment's bytes, from the file name
    hint: str | None = None  # the compression the name (or the tool's records) says, see compression.EXTENSIONS
    size: int | None = None

    @property
    def partial(self) -> bool:
        return self.name.endswith(".partial")

    @property
    def compressed(self) -> bool:
        return self.hint is not None

    @property
    def parent(self) -> str:
        return Store.parent(self.location)

    def __str__(self) -> str:
        return self.location


@dataclass
class Archive:
    """What ``find`` found among some paths."""

    store: Store
    files: list = field(default_factory=list)  # ArchiveFile, in the order found
    histories: dict = field(default_factory=dict)  # timeline -> (location, text)
    where: str = ""  # the paths given, for messages
    # pgBackRest: the system identifier and major version archive.info gives for the db id read
    expect_sysid: int | None = None
    expect_version: str | None = None
    expect_source: str = ""
    layout: str = "files"  # what the paths were: "pgBackRest repository", "barman", ... (for messages)


def classify(name: str, hint_override: str | None = None):
    """("segment", ArchiveFile fields) or ("history", timeline) or (None, None) for a file name."""
    m = SEGMENT_FILE_RE.match(name)
    if m:
        hint = hint_override or (EXTENSIONS[m.group("ext")] if m.group("ext") else None)
        return "segment", (m.group("seg") + (m.group("partial") or ""), m.group("sha1"), hint)
    m = HISTORY_FILE_RE.match(name)
    if m:
        return "history", int(m.group("tli"), 16)
    return None, None


def find(paths, options: InputOptions = DEFAULT_OPTIONS, store: Store | None = None) -> Archive:
    """The segment and history files among ``paths``: directories of any layout above, files, URLs
    (in ``store``, by default the one their scheme names)."""
    paths = [str(p) for p in paths]
    if not paths:
        raise UsageError("no WAL input given")
    if store is None:
        stores = {type(store_for(p, options)) for p in paths}
        if len(stores) > 1:
            raise UsageError("WAL input from local paths and object stores at once: give one kind")
        store = store_for(paths[0], options)
    out = Archive(store, where=", ".join(paths))
    for p in paths:
        _find_one(store, local_path(p) if isinstance(store, LocalStore) else p, options, out)
    if not out.files:
        what = "; ".join(store.describe(p) for p in paths)
        raise SegmentFileError(f"no WAL segment files found in {what}")
    return out


def _find_one(store: Store, path: str, options: InputOptions, out: Archive) -> None:
    kind = store.kind(path)
    if kind is None:
        raise SegmentFileError(f"no such file or directory: {path}")
    if kind == "file":
        _add_file(store, path, None, None, out, explicit=True)
        return
    root, hints = _layout_root(store, path, options, out)
    for location, size in store.walk(root):
        _add_file(store, location, size, hints, out)


def _add_file(store: Store, location: str, size, hints, out: Archive, explicit: bool = False) -> None:
    name = store.name(location)
    what, info = classify(name, hints.get(name) if hints else None)
    if what == "segment":
        seg, sha1, hint = info
        out.files.append(ArchiveFile(location, seg, sha1, hint, size))
    elif what == "history":
        ext = HISTORY_FILE_RE.match(name).group("ext")
        text = decompress(store.read(location), location, 1 << 20, EXTENSIONS.get(ext or ""))
        out.histories[info] = (location, bytes(text).decode(errors="replace"))
    # anything else (.backup labels, archive.info, xlog.db, a tool's lock files) is passed over


def _layout_root(store: Store, path: str, options: InputOptions, out: Archive):
    """The directory under ``path`` to search, recognising the tools' layouts; and compression hints
    by file name (barman's xlog.db)."""
    def isdir(*names):
        return store.kind(store.join(path, *names)) == "dir"

    def isfile(*names):
        return store.kind(store.join(path, *names)) == "file"

    if isdir("pg_wal"):  # a data directory or base backup
        out.layout = "data directory"
        return store.join(path, "pg_wal"), None
    if isdir("archive") and (isdir("backup") or _stanzas(store, store.join(path, "archive"))):
        out.layout = "pgBackRest repository"
        stanza = _choose_stanza(store, path, options)
        return _pgbackrest_stanza(store, store.join(path, "archive", stanza), None, out), None
    if isfile("archive.info") or isfile("archive.info.copy"):
        out.layout = "pgBackRest stanza"
        return _pgbackrest_stanza(store, path, None, out), None
    m = PGBACKREST_DB_DIR_RE.match(store.name(path))
    parent = store.parent(path)
    if m and (store.kind(store.join(parent, "archive.info")) == "file"
              or store.kind(store.join(parent, "archive.info.copy")) == "file"):
        out.layout = "pgBackRest archive"
        return _pgbackrest_stanza(store, parent, int(m.group(2)), out), None
    if isdir("wal_005"):
        out.layout = "WAL-G"
        return store.join(path, "wal_005"), None
    if isdir("wals") and (isdir("base") or isfile("wals", "xlog.db")):
        out.layout = "barman"
        path = store.join(path, "wals")
    hints = _barman_hints(store, path)
    if hints is None and store.name(path) != "wals":
        # a leaf directory of barman's wals/: the list is one level up
        hints = _barman_hints(store, store.parent(path))
    return path, hints


def _stanzas(store: Store, archive_dir: str) -> list[str]:
    """The stanza names under a pgBackRest repository's archive/ (those with an archive.info)."""
    return sorted(name for name in store.listdir(archive_dir)
                  if any(store.kind(store.join(archive_dir, name, f)) == "file"
                         for f in ("archive.info", "archive.info.copy")))


def _choose_stanza(store: Store, repo: str, options: InputOptions) -> str:
    stanzas = _stanzas(store, store.join(repo, "archive"))
    if options.stanza is not None:
        if options.stanza not in stanzas:
            raise UsageError(f"pgBackRest repository {repo} has no stanza {options.stanza!r} "
                             f"(it has: {', '.join(stanzas) or 'none'})")
        return options.stanza
    if not stanzas:
        raise SegmentFileError(f"pgBackRest repository {repo} holds no stanza (no archive/<stanza>/archive.info)")
    if len(stanzas) > 1:
        raise UsageError(f"pgBackRest repository {repo} holds several stanzas ({', '.join(stanzas)}): "
                         "choose one with --stanza")
    return stanzas[0]


def _pgbackrest_stanza(store: Store, stanza_dir: str, db_id: int | None, out: Archive) -> str:
    """The ``<version>-<id>`` directory to read under a stanza: ``db_id``'s, else the current one's
    (archive.info [db] db-id); records what system identifier and version its segments must have."""
    info_path = store.join(stanza_dir, "archive.info")
    if store.kind(info_path) != "file":
        info_path = store.join(stanza_dir, "archive.info.copy")
    try:
        info = parse_pgbackrest_info(store.read(info_path).decode(errors="replace"))
    except ValueError as e:
        raise SegmentFileError(str(e), path=info_path, what="file") from None
    current = info.get("db", {})
    history = info.get("db:history", {})
    try:
        wanted = db_id if db_id is not None else int(current["db-id"])
        entry = history.get(str(wanted))
        if entry is None:
            raise KeyError(wanted)
        sysid, version = int(entry["db-id"]), str(entry["db-version"])
    except (KeyError, ValueError, TypeError):
        raise SegmentFileError(f"pgBackRest archive.info does not describe database id "
                               f"{db_id if db_id is not None else '(current)'}", path=info_path, what="file") from None
    out.expect_sysid, out.expect_version, out.expect_source = sysid, version, info_path
    return store.join(stanza_dir, f"{version}-{wanted}")


def parse_pgbackrest_info(text: str) -> dict[str, dict]:
    """pgBackRest's info and manifest files (archive.info, backup.info, backup.manifest; src/common/ini.c):
    ``[section]`` lines, then ``key=value`` lines whose values are JSON; a section may appear twice
    (``[backrest]``: the checksum last).  A line that is neither raises ValueError saying which."""
    import json  # lazy: 2 ms of every command's start-up; only pgBackRest's info files need it

    out: dict[str, dict] = {}
    section = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if line.startswith("[") and line.rstrip().endswith("]"):
            section = out.setdefault(line.strip()[1:-1], {})
            continue
        key, eq, value = line.partition("=")
        if section is None or not eq:
            raise ValueError(f"line {lineno} is not a pgBackRest info or manifest line: {line[:80]!r}")
        try:
            section[key] = json.loads(value)
        except ValueError:
            raise ValueError(f"line {lineno}: the value of {key} is not JSON: {value[:80]!r}") from None
    return out


def _barman_hints(store: Store, wals_dir: str) -> dict | None:
    """Compression by segment name from barman's ``xlog.db`` (tab-separated: name, size, time,
    compression), or None when there is none."""
    db = store.join(wals_dir, "xlog.db")
    if store.kind(db) != "file":
        return None
    hints = {}
    for line in store.read(db).decode(errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) >= 4 and fields[3] in _BARMAN_COMPRESSION:
            hints[fields[0]] = _BARMAN_COMPRESSION[fields[3]]
    return hints
