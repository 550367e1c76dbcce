"""Backups as catalog sources: the backups a pgBackRest repository or a barman server keeps, and which one to read.

Owns recognising what a path is — a pgBackRest repository root (``backup/<stanza>/backup.info``),
a stanza's directory under ``backup/`` (or ``archive/<stanza>``, mapped to it), one backup set; a
barman server directory (``base/`` and ``wals/``), one barman backup — and listing its backups from
the tools' own records: pgBackRest's ``backup.info`` (``[backup:current]``, the system identifier
and version from ``[db:history]``) or a set's ``backup.manifest``, barman's ``base/<id>/backup.info``
(key=value: ``begin_xlog``, ``end_xlog``, ``begin_time``, ``end_time``, ``systemid``, ``version``).
Chooses one: by label, the latest whose consistency point (its stop LSN) is at or before an LSN
or a time, or the latest.  Hands the chosen ``Backup``'s ``source`` (a ``datadir.files.DataFiles``)
to ``datadir.snapshot_from_datadir``.
"""

from __future__ import annotations

import argparse
import io
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from ..argtypes import lsn
from ..errors import Error
from ..pg.lsn import format_lsn, parse_lsn
from ..wal.storage import DEFAULT_OPTIONS, LOCAL, InputOptions, Store, store_for
from .datadir.files import DataFiles, PgBackRestSet, barman_backup_files, read_pgbackrest_ini
from .model import CatalogError

#: barman backup statuses whose files are complete (infofile.py BackupInfo: DONE; WAITING_FOR_WALS has
#: every data file, only WAL to come)
BARMAN_USABLE_STATUSES = ("DONE", "WAITING_FOR_WALS")


@dataclass
class Backup:
    """One backup: what the tool records about it, and its files (``source``, opened on first use)."""

    tool: str  # "pgBackRest" or "barman"
    label: str
    type: str  # full, diff or incr
    start_lsn: int | None
    stop_lsn: int | None
    start_time: datetime | None
    stop_time: datetime | None
    sysid: int | None
    version: str  # the major version, as "15"
    path: str  # the set's or backup's directory
    group: str  # the stanza or barman server
    _source: DataFiles | None = field(default=None, repr=False, compare=False)
    tablespaces: tuple[int, ...] = ()
    store: Store = field(default=LOCAL, repr=False, compare=False)  # where ``path`` is: local, s3://...

    @property
    def source(self) -> DataFiles:
        """The backup's data directory as a ``DataFiles`` (close it, or the ``Backup``, when done)."""
        if self._source is None:
            if self.tool == "pgBackRest":
                self._source = PgBackRestSet(self.path, store=self.store)
            else:
                self._source = barman_backup_files(self.path, self.tablespaces, store=self.store)
        return self._source

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    @property
    def stopped_by(self) -> datetime | None:
        """A time the backup had surely stopped by: pgBackRest keeps its stop time in whole seconds,
        rounded down (``backup-timestamp-stop``), so the end of that second; barman's ``end_time`` as
        it is (microseconds, taken once the copy ended)."""
        if self.stop_time is None or self.tool != "pgBackRest":
            return self.stop_time
        return self.stop_time + timedelta(seconds=1)

    @property
    def archive(self) -> str:
        """Where the tool keeps the cluster's WAL beside this backup: pgBackRest's ``archive/<stanza>``
        (the repository holds ``archive/`` beside ``backup/<stanza>/<label>``), barman's server
        directory (``wals/`` beside ``base/<id>``), as ``wal.archive`` reads them."""
        s = self.store
        if self.tool == "pgBackRest":
            return s.join(s.parent(s.parent(s.parent(self.path.rstrip("/")))), "archive", self.group)
        return s.parent(s.parent(self.path.rstrip("/")))

    def describe(self) -> str:
        stop = format_lsn(self.stop_lsn) if self.stop_lsn is not None else "an unknown LSN"
        return f"{self.tool} backup {self.label} ({self.type}), stopped at {stop}"


def _utc(ts) -> datetime | None:
    return datetime.fromtimestamp(int(ts), tz=timezone.utc) if ts is not None else None


def _lsn(text, where: str) -> int | None:
    if text in (None, "", "None"):
        return None
    try:
        return parse_lsn(str(text))
    except ValueError as e:
        raise CatalogError(f"{where}: {e}") from None


# -- pgBackRest ---------------------------------------------------------------------------------------

def _isfile(store: Store, path: str) -> bool:
    return store.kind(path) == "file"


def _isdir(store: Store, path: str) -> bool:
    return store.kind(path) == "dir"


def _listdir(store: Store, path: str) -> list[str]:
    """The names in directory ``path``, sorted; a local directory's errors as the OS says them."""
    if store is not LOCAL:
        return store.listdir(path)
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        raise CatalogError(f"cannot list {path}: {e.strerror}") from None


def _is_pgbackrest_info(store: Store, path: str) -> bool:
    """A pgBackRest info file (INI sections), as opposed to barman's key=value ``backup.info``."""
    try:
        return store.read(path, 1) == b"["
    except (OSError, Error):
        return False


def _info_file(store: Store, stanza_dir: str) -> str | None:
    """``backup.info``, or the copy pgBackRest keeps beside it when the main one is missing."""
    for name in ("backup.info", "backup.info.copy"):
        path = store.join(stanza_dir, name)
        if _isfile(store, path):
            return path
    return None


def _pgbackrest_stanzas(store: Store, repo: str) -> list[str]:
    backup = store.join(repo, "backup")
    return [n for n in _listdir(store, backup) if _info_file(store, store.join(backup, n))]


def _pgbackrest_sets(store: Store, stanza_dir: str) -> list[Backup]:
    """The sets ``backup.info`` lists (as ``pgbackrest info`` does) whose directory is there."""
    info_path = _info_file(store, stanza_dir)
    if info_path is None:
        raise CatalogError(f"{stanza_dir}: no backup.info: not a pgBackRest stanza directory")
    info = read_pgbackrest_ini(info_path, store=store)
    if info.get("cipher"):
        raise CatalogError(f"{info_path}: the repository is encrypted (repo1-cipher-type): not supported")
    history = info.get("db:history", {})
    stanza = store.name(stanza_dir.rstrip("/"))
    out = []
    for label, b in info.get("backup:current", {}).items():
        set_dir = store.join(stanza_dir, label)
        if not (_isfile(store, store.join(set_dir, "backup.manifest"))
                or _isfile(store, store.join(set_dir, "backup.manifest.copy"))):
            continue
        db = history.get(str(b.get("db-id")), {})
        out.append(Backup("pgBackRest", label, b.get("backup-type", "?"),
                          _lsn(b.get("backup-lsn-start"), info_path), _lsn(b.get("backup-lsn-stop"), info_path),
                          _utc(b.get("backup-timestamp-start")), _utc(b.get("backup-timestamp-stop")),
                          db.get("db-system-id"), str(db.get("db-version", "?")), set_dir, stanza, store=store))
    return out


def _pgbackrest_set(store: Store, set_dir: str) -> Backup:
    """One set from its own manifest (``[backup]``, ``[backup:db]``)."""
    source = PgBackRestSet(set_dir, store=store)
    b = source.manifest.get("backup", {})
    db = source.manifest.get("backup:db", {})
    where = source.manifest_path
    backup = Backup("pgBackRest", b.get("backup-label", source.label), b.get("backup-type", "?"),
                    _lsn(b.get("backup-lsn-start"), where), _lsn(b.get("backup-lsn-stop"), where),
                    _utc(b.get("backup-timestamp-start")), _utc(b.get("backup-timestamp-stop")),
                    db.get("db-system-id"), str(db.get("db-version", "?")), source.set_dir,
                    store.name(source.stanza_dir), store=store)
    backup._source = source
    return backup


# -- barman --------------------------------------------------------------------------------------------

def read_barman_info(path: str, store: Store = LOCAL) -> dict[str, str]:
    """barman's ``backup.info`` (infofile.py FieldListFile): ``key=value`` lines, values as written."""
    try:
        with io.TextIOWrapper(store.open(path), encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise CatalogError(f"cannot read {path}: {e.strerror}") from None
    out = {}
    for line in lines:
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


def _barman_time(text: str | None, where: str) -> datetime | None:
    if text in (None, "", "None"):
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise CatalogError(f"{where}: time {text!r} is not ISO 8601") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _barman_tablespaces(text: str | None) -> tuple[int, ...]:
    """The OIDs in ``tablespaces=[Tablespace(name='t', oid=16385, location='/x'), ...]`` (or tuples)."""
    if not text or text == "None":
        return ()
    oids = re.findall(r"oid=(\d+)", text) or re.findall(r"\(\s*'[^']*'\s*,\s*(\d+)\s*,", text)
    return tuple(int(o) for o in oids)


def _barman_backup(backup_dir: str, explicit: bool = False, store: Store = LOCAL) -> Backup | None:
    """One barman backup from its ``backup.info``; None when its status makes it unusable (an error
    naming it when it was asked for by path)."""
    where = store.join(backup_dir, "backup.info")
    info = read_barman_info(where, store)
    status = info.get("status", "")
    label = info.get("backup_id") or store.name(backup_dir.rstrip("/"))
    if status not in BARMAN_USABLE_STATUSES:
        if explicit:
            raise CatalogError(f"{where}: barman backup {label} has status {status or 'unknown'}, not DONE")
        return None
    if info.get("parent_backup_id") not in (None, "", "None"):
        raise CatalogError(f"{where}: barman backup {label} is incremental (parent {info['parent_backup_id']}): "
                           "its files need pg_combinebackup first; not supported")
    version = info.get("version", "")
    major = str(int(version) // 10000) if version.isdigit() and int(version) >= 100000 else version or "?"
    sysid = info.get("systemid")
    return Backup("barman", label, "full", _lsn(info.get("begin_xlog"), where), _lsn(info.get("end_xlog"), where),
                  _barman_time(info.get("begin_time"), where), _barman_time(info.get("end_time"), where),
                  int(sysid) if sysid and sysid.isdigit() else None, major, backup_dir.rstrip("/"),
                  info.get("server_name") or store.name(store.parent(store.parent(backup_dir.rstrip("/")))),
                  tablespaces=_barman_tablespaces(info.get("tablespaces")), store=store)


def _barman_backups(store: Store, server_dir: str) -> list[Backup]:
    base = store.join(server_dir, "base")
    out = []
    for name in _listdir(store, base):
        if _isfile(store, store.join(base, name, "backup.info")):
            b = _barman_backup(store.join(base, name), store=store)
            if b is not None:
                out.append(b)
    return out


def is_barman_backup(path, store: Store = LOCAL) -> bool:
    """A barman backup directory (``<server>/base/<id>``: a key=value ``backup.info`` beside its data)."""
    path = os.fspath(path)
    info = store.join(path, "backup.info")
    return _isfile(store, info) and not _is_pgbackrest_info(store, info)


# -- what a path is, and its backups ----------------------------------------------------------------

def _locate(path: str, stanza: str | None, store: Store) -> tuple[str, list[Backup]]:
    """(what ``path`` is, for messages; its backups), ``path`` in ``store``."""
    p = path.rstrip("/") or "/"
    join, name, dirname = store.join, store.name, store.parent
    if not _isdir(store, p):
        raise CatalogError(f"{path}: no such directory (expected a pgBackRest repository or stanza, a barman "
                           "server or backup directory)")
    if _isfile(store, join(p, "backup.manifest")) or _isfile(store, join(p, "backup.manifest.copy")):
        b = _pgbackrest_set(store, p)
        return f"pgBackRest backup set {p}", [b]
    if is_barman_backup(p, store):
        return f"barman backup {p}", [_barman_backup(p, explicit=True, store=store)]
    info = _info_file(store, p)
    if info and _is_pgbackrest_info(store, info):
        _check_stanza(stanza, name(p), p)
        return f"pgBackRest stanza {name(p)} in {dirname(dirname(p))}", _pgbackrest_sets(store, p)
    parent = dirname(p)
    if name(parent) == "archive":  # archive/<stanza>: the stanza's backups beside it
        stanza_dir = join(dirname(parent), "backup", name(p))
        if _info_file(store, stanza_dir):
            _check_stanza(stanza, name(p), p)
            return (f"pgBackRest stanza {name(p)} in {dirname(parent)}",
                    _pgbackrest_sets(store, stanza_dir))
    if _isdir(store, join(p, "backup")):
        stanzas = _pgbackrest_stanzas(store, p)
        if not stanzas:
            raise CatalogError(f"{path}: a pgBackRest repository without stanzas (no backup/<stanza>/backup.info)")
        if stanza is None:
            if len(stanzas) > 1:
                raise CatalogError(f"{path}: the pgBackRest repository holds {len(stanzas)} stanzas "
                                   f"({', '.join(stanzas)}): name one with --stanza")
            stanza = stanzas[0]
        elif stanza not in stanzas:
            raise CatalogError(f"{path}: no stanza {stanza!r} in this pgBackRest repository "
                               f"(stanzas: {', '.join(stanzas)})")
        return f"pgBackRest stanza {stanza} in {p}", _pgbackrest_sets(store, join(p, "backup", stanza))
    if _isdir(store, join(p, "base")) and store.kind(join(p, "PG_VERSION")) is None:
        if stanza is not None and stanza != name(p):
            raise CatalogError(f"{path}: a barman server directory ({name(p)}): --stanza {stanza} "
                               "does not apply")
        return f"barman server {name(p)} in {parent}", _barman_backups(store, p)
    raise CatalogError(f"{path}: not a pgBackRest repository, stanza or backup set, nor a barman server or backup "
                       "directory")


def _check_stanza(wanted: str | None, found: str, path: str) -> None:
    if wanted is not None and wanted != found:
        raise CatalogError(f"{path}: this is pgBackRest stanza {found}, not {wanted}")


def _order(b: Backup) -> tuple:
    return (b.stop_time or datetime.min.replace(tzinfo=timezone.utc), b.stop_lsn or 0, b.label)


def list_backups(path, stanza: str | None = None, options: InputOptions = DEFAULT_OPTIONS) -> list[Backup]:
    """The backups at ``path`` (see the module docstring; a local path or an object store's URL, reached
    as ``options`` say), oldest first."""
    path = os.fspath(path)
    _what, backups = _locate(path, stanza, store_for(path, options))
    return sorted(backups, key=_order)


def backup_candidates(path, stanza: str | None = None, label: str | None = None, before_lsn: int | None = None,
                      before_time: datetime | None = None, options: InputOptions = DEFAULT_OPTIONS
                      ) -> tuple[str, list[Backup], list[Backup]]:
    """(what ``path`` is, for messages; its backups, or the one labelled ``label``, oldest first; those
    among them whose stop LSN, their consistency point, is at or before ``before_lsn`` and whose stop
    time is at or before ``before_time`` (aware, or UTC), the best first: the latest stop).  The last
    list is empty when none fits; ``CatalogError`` in one line when ``path`` holds no usable backup or
    none labelled ``label``.  ``path`` is a local path or an object store's URL, reached as ``options``
    say."""
    path = os.fspath(path)
    what, backups = _locate(path, stanza, store_for(path, options))
    backups.sort(key=_order)
    if not backups:
        raise CatalogError(f"{what}: no usable backup")
    if label is not None:
        chosen = [b for b in backups if b.label == label]
        if not chosen:
            raise CatalogError(f"{what}: no backup {label!r} (backups: {', '.join(b.label for b in backups)})")
        backups = chosen
    return what, backups, fitting_backups(backups, before_lsn, before_time)


def fitting_backups(backups: list[Backup], before_lsn: int | None = None, before_time: datetime | None = None,
                    surely: bool = False) -> list[Backup]:
    """Those of ``backups`` (oldest first) whose stop LSN, their consistency point, is at or before
    ``before_lsn`` and whose stop time (``surely``: ``Backup.stopped_by``, the end of a whole-second
    stop time) is at or before ``before_time`` (aware, or UTC), the best first: the latest stop."""
    if before_time is not None and before_time.tzinfo is None:
        before_time = before_time.replace(tzinfo=timezone.utc)
    fits = backups
    if before_lsn is not None:
        fits = sorted((b for b in fits if b.stop_lsn is not None and b.stop_lsn <= before_lsn),
                      key=lambda b: (b.stop_lsn, _order(b)))
    if before_time is not None:
        fits = [b for b in fits if b.stop_time is not None
                and (b.stopped_by if surely else b.stop_time) <= before_time]
    return fits[::-1]


def find_backup(path, stanza: str | None = None, label: str | None = None, before_lsn: int | None = None,
                before_time: datetime | None = None, options: InputOptions = DEFAULT_OPTIONS) -> Backup:
    """The backup to read at ``path`` (a local path or an object store's URL, reached as ``options``
    say): the one labelled ``label``, else the latest whose stop LSN (its consistency point) is at or
    before ``before_lsn`` and whose stop time is at or before ``before_time`` (aware, or UTC), else the
    latest.  ``CatalogError`` in one line otherwise."""
    what, backups, fits = backup_candidates(path, stanza, label, before_lsn, before_time, options)
    if not fits:
        before = format_lsn(before_lsn) if before_lsn is not None else None
        if before_time is not None:
            when = (before_time if before_time.tzinfo else before_time.replace(tzinfo=timezone.utc)).isoformat()
            before = when if before is None else f"{before} and {when}"
        raise CatalogError(f"{what}: no backup{' ' + label if label else ''} stopped at or before {before} "
                           f"({earliest(backups)})")
    return fits[0]


def earliest(backups: list[Backup]) -> str:
    """The earliest backup of ``backups`` and where it stopped, for the message of a point before them all."""
    b = min(backups, key=lambda b: (b.stop_lsn is None, b.stop_lsn or 0, _order(b)))
    lsn = format_lsn(b.stop_lsn) if b.stop_lsn is not None else "an unknown LSN"
    when = f" ({b.stop_time.isoformat()})" if b.stop_time is not None else ""
    return f"the earliest, {b.label}, stopped at {lsn}{when}"


def datadir_backup(path) -> Backup | None:
    """The barman backup ``catalog --datadir PATH`` names, when PATH is one (its directory, or the
    ``data/`` in it holding the tar archives); None for anything else, read as a data directory."""
    p = os.fspath(path).rstrip("/") or "/"
    if os.path.exists(os.path.join(p, "PG_VERSION")):
        return None
    if is_barman_backup(p):
        return _barman_backup(p, explicit=True)
    if os.path.basename(p) == "data" and is_barman_backup(os.path.dirname(p)):
        return _barman_backup(os.path.dirname(p), explicit=True)
    return None


def before_arg(text: str) -> tuple[int | None, datetime | None]:
    """``--before LSN|TIME`` (argparse ``type=``): (LSN, None) for ``X/X``, else (None, time) for an
    ISO 8601 time, UTC when it gives no offset."""
    if "/" in text:
        return lsn(text), None
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid LSN or time {text!r}: expected an LSN (0/16B3748) or an "
                                         "ISO 8601 time (2026-11-27T12:00:00, UTC unless an offset is given)") \
            from None
    return None, t if t.tzinfo else t.replace(tzinfo=timezone.utc)
