"""The catalog snapshot that belongs to a reading start, and the one rule that says whether it does.

Owns ``--catalog`` as the commands take it: a snapshot file, or a directory of them from
which the latest taken at or before the reading start is chosen (``CatalogSource``,
``catalog_for_start``), and ``check_snapshot``, run before anything is decoded:

* a snapshot whose system identifier (when recorded) is not the WAL's is of another cluster;
* a snapshot taken after the reading start is right for the WAL before it only when no
  transaction changed the catalog in between: decoding from the start would apply a catalog of
  later to the changes before.  The WAL from the start to the snapshot is scanned for the first
  commit that carries invalidation messages (XACT_XINFO_HAS_INVALS: what every catalog change
  leaves in its commit record, and ANALYZE too), and such a transaction counts when it wrote a
  row of a catalog decoding reads (``TRACKED_CATALOGS``), or when the WAL read cannot show all
  it wrote (it began before the first running-xacts record from the start on).  ANALYZE, which
  writes pg_statistic and overwrites pg_class's statistics in place, does not count.

Both are errors before any output (``SnapshotMismatchError``, exit status 1) naming the
snapshot, the WAL and the remedy.  A snapshot found valid for a start remembers it
(``Catalog.valid_from``), so that the ranges of ``spark decode`` (each a ``decode_wal`` of
its own) do not scan again.  Takes a ``SegmentSet`` and the reading start
(``logical.startpoint.reading_start``); hands a ``Catalog`` to ``logical.session.decode_wal``.
A backup repository (``catalog.backups``) is a source too, local or in object storage
(``s3://bucket/repo``): its backups are the candidates.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import timezone
from typing import NamedTuple

from .. import _impl
from ..errors import CatalogError, DecodeError, UsageError, format_lsn
from ..logical.startpoint import running_xacts_of
from ..pg.lsn import parse_lsn
from ..pg.transam import xid_precedes
from ..rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_RELMAP_ID, RM_STANDBY_ID
from ..rmgr.heap import (
    XLOG_HEAP2_MULTI_INSERT,
    XLOG_HEAP_DELETE,
    XLOG_HEAP_HOT_UPDATE,
    XLOG_HEAP_INSERT,
    XLOG_HEAP_OPMASK,
    XLOG_HEAP_UPDATE,
)
from ..rmgr.xact import XACT_XINFO_HAS_INVALS
from ..wal.storage import DEFAULT_OPTIONS, URL_RE, InputOptions
from ..wal.xlogpage import ReadStop
from ..wal.xlogreader import XLogReader, _end_lsn, read_segment
from .model import FORMAT_NAME, Catalog
from .pg_catalog import OPTIONAL_CATALOGS, TRACKED_CATALOGS

#: heap operations that write a catalog row (INPLACE overwrites statistics and flags decoding never
#: reads; LOCK, CONFIRM and TRUNCATE write none)
_ROW_WRITES = {RM_HEAP_ID: frozenset((XLOG_HEAP_INSERT, XLOG_HEAP_DELETE, XLOG_HEAP_UPDATE, XLOG_HEAP_HOT_UPDATE)),
               RM_HEAP2_ID: frozenset((XLOG_HEAP2_MULTI_INSERT,))}
_REMEDY = ("take a snapshot at or before the start: 'waldecode catalog --datadir' of a backup taken before it, or "
           "--catalog DIR holding one")


class SnapshotMismatchError(DecodeError):
    """The catalog snapshot does not belong to the WAL read: another cluster, or a catalog of later than
    the reading start with catalog changes in between."""


# -- the rule ------------------------------------------------------------------------------------


def check_snapshot(catalog: Catalog, segments, read_from: int | None, start_lsn: int | None = None,
                   say=None) -> None:
    """Raise ``SnapshotMismatchError`` unless ``catalog`` can decode ``segments`` read from ``read_from``
    (None: the input's first record; ``start_lsn``, the requested start, only names it in messages).
    ``say(line)`` hears a note when the WAL ends before the snapshot's LSN: the catalog did not change
    in the WAL read, what came after its end cannot be seen (a snapshot taken from the live server
    after the archive's last segment, the common case, is taken with that note)."""
    check_cluster(catalog, segments)
    source = _named(catalog)
    start = read_from if read_from is not None else segments.first_segno * segments.seg_size
    if not catalog.lsn or catalog.lsn <= start:
        return
    if catalog.valid_from is not None and catalog.valid_from <= start:
        return
    change = first_catalog_change(segments, catalog, read_from)
    if isinstance(change, ReadStop):
        stop = change
        where = f" in {stop.path}" if stop.path else ""
        if stop.kind == "end":
            if say is not None:
                say(f"note: {source} was taken at {format_lsn(catalog.lsn)}, after the end of the WAL read "
                    f"{format_lsn(stop.lsn)}: no transaction changed the catalog from the start "
                    f"{format_lsn(start)} to there; changes after it cannot be seen (were there any, "
                    f"{_REMEDY})")
            catalog.valid_from = start
            return
        raise SnapshotMismatchError(
            f"{source} was taken at {format_lsn(catalog.lsn)}, after the reading start {format_lsn(start)}, "
            f"but the WAL read stops at {format_lsn(stop.lsn)}{where} ({stop.reason}): whether the catalog "
            f"changed before {format_lsn(catalog.lsn)} cannot be seen; give the WAL up to it (the server's "
            f"pg_wal), or {_REMEDY}")
    if change is not None:
        zone = _zone_or_utc(catalog)
        asked = (f" (for the start {format_lsn(start_lsn)})"
                 if start_lsn is not None and start_lsn != start else "")
        raise SnapshotMismatchError(
            f"{source} was taken at {format_lsn(catalog.lsn)}, after the reading start {format_lsn(start)}{asked}, "
            f"and transaction {change.xid} changed the catalog in between (committed at {format_lsn(change.lsn)}, "
            f"{_format_time(change.time, zone)}): the changes before {format_lsn(catalog.lsn)} cannot be decoded "
            f"with it; {_REMEDY}")
    catalog.valid_from = start


def check_cluster(catalog: Catalog, segments) -> None:
    """Raise ``SnapshotMismatchError`` when the snapshot records a system identifier other than the WAL's."""
    if catalog.system_identifier is not None and catalog.system_identifier != segments.sysid:
        wal = f"the WAL ({segments.identified_by})" if segments.identified_by else "the WAL"
        raise SnapshotMismatchError(
            f"{_named(catalog)} is of the cluster with system identifier {catalog.system_identifier}, {wal} of "
            f"the cluster with system identifier {segments.sysid}: take the snapshot of the cluster that wrote "
            "the WAL")


def _named(catalog: Catalog) -> str:
    return f"the catalog snapshot {catalog.source}" if catalog.source else "the catalog snapshot"


def first_catalog_change(segments, catalog: Catalog, read_from: int | None):
    """The first transaction (a ``targets.XactEnd``) committed from ``read_from`` to the snapshot's LSN
    that changed the catalog; None when none did; the ``ReadStop`` where the WAL read ended before the
    snapshot's LSN (its end, or damage) when none did before it (what came after cannot be seen).
    Commits whose record ends after the snapshot's LSN are not in it (``pg_current_wal_lsn()`` was past
    every commit it sees)."""
    # lazy: logical.targets (10 ms) is needed only for a snapshot taken after the reading start
    from ..logical.targets import XactScan

    nodes = _tracked_nodes(catalog)
    firsts: dict = {}  # xid -> its first record read (other than a transaction record), while open
    running = _Running(segments, read_from)
    scan = XactScan(segments, read_from, catalog.lsn, firsts=firsts)
    for x in scan:
        if x.is_commit and x.xinfo & XACT_XINFO_HAS_INVALS:
            if not _leaves_catalog_alone(segments, catalog, x, firsts, nodes, running):
                return x
        firsts.pop(x.xid, None)
        for sub in x.subxacts:
            firsts.pop(sub, None)
    if scan.stop is not None and scan.stop.kind != "limit":
        return scan.stop
    return None


def _tracked_nodes(catalog: Catalog) -> frozenset | None:
    """The relfilenodes of the catalogs decoding reads, None when the snapshot lacks one it needs."""
    nodes = set()
    for oid in TRACKED_CATALOGS:
        rel = catalog.relation(oid)
        if rel is None or not rel.relfilenode:
            if oid in OPTIONAL_CATALOGS:
                continue
            return None
        nodes.add(rel.relfilenode)
    return frozenset(nodes)


class _Running:
    """The first XLOG_RUNNING_XACTS record from the reading start on (found when first asked): a
    transaction whose xid does not precede its nextXid got that xid after it was taken."""

    def __init__(self, segments, start: int | None):
        self.segments = segments
        self.start = start if start is not None else segments.first_segno * segments.seg_size
        self.record = None
        self.looked_to = None  # the LSN looked up to, exclusive

    def before(self, lsn: int):
        """The record, when it lies before ``lsn``."""
        seg_size = self.segments.seg_size
        if self.record is None:
            segno = (self.looked_to if self.looked_to is not None else self.start) // seg_size
            while self.record is None and segno * seg_size < lsn and segno in self.segments.files:
                records, _stop = read_segment(self.segments, segno, rmid=RM_STANDBY_ID)
                self.record = next((r for r in running_xacts_of(records) if r.lsn >= self.start), None)
                segno += 1
                self.looked_to = segno * seg_size
        return self.record if self.record is not None and self.record.lsn < lsn else None


def _leaves_catalog_alone(segments, catalog: Catalog, x, firsts: dict, nodes, running: _Running) -> bool:
    """Did the transaction committed by ``x`` (its commit carries invalidations) write no row of a catalog
    decoding reads?  Only when all it wrote lies in the WAL read; else it counts as a change."""
    if nodes is None:
        return False
    r = running.before(x.lsn)
    if r is None or xid_precedes(x.xid, r.nextXid):
        return False  # it may have begun before the reading start: what it wrote there is not seen
    xids = frozenset((x.xid, *x.subxacts))
    seen = [firsts[xid] for xid in xids if xid in firsts]
    if not seen:
        return True  # no record but the commit itself

    reader = XLogReader(segments=segments, start_lsn=min(seen), end_lsn=x.lsn)
    seg_size = segments.seg_size
    major = segments.major
    db = catalog.database_oid
    for path, records, start in reader.frames():
        for lsn, raw_end, rec in records:
            if lsn < start or int.from_bytes(rec[4:8], "little") not in xids:
                continue
            rmid = rec[17]
            if rmid == RM_RELMAP_ID:
                return False
            ops = _ROW_WRITES.get(rmid)
            if ops is None or rec[16] & XLOG_HEAP_OPMASK not in ops:
                continue
            d = _impl.decode_record(rec, lsn, _end_lsn(rec, lsn, raw_end, seg_size), major)
            if d.blocks and d.blocks[0].relNumber in nodes and d.blocks[0].dbOid == db:
                return False
    return True


def _zone_or_utc(catalog: Catalog):
    from ..logical.targets import zone_named  # lazy: an error message's time only, see first_catalog_change

    try:
        return zone_named(catalog.settings.get("TimeZone", "UTC"), "TimeZone")
    except UsageError:
        return timezone.utc


def _format_time(ts: int, zone) -> str:
    from ..logical.targets import format_timestamp  # lazy: an error message's time only, see first_catalog_change

    return format_timestamp(ts, zone)


# -- choosing ------------------------------------------------------------------------------------


class Candidate(NamedTuple):
    """A snapshot file of a ``--catalog DIR``, as far as choosing needs it."""

    path: str
    lsn: int
    system_identifier: int | None
    major: int
    time_zone: str


class CatalogSource:
    """What ``--catalog PATH`` names: a snapshot file (``catalog`` loaded), or a directory of snapshot
    files (``candidates``: those of the WAL's cluster and version), among which ``for_start`` chooses."""

    def __init__(self, path: str, catalog: Catalog | None = None, candidates: list | None = None):
        self.path = path
        self.catalog = catalog
        self.candidates = candidates or []

    def time_zone(self) -> str:
        """The TimeZone setting a time without an offset is read in: the snapshot's, or the one all the
        directory's snapshots share."""
        if self.catalog is not None:
            return self.catalog.settings.get("TimeZone", "UTC")
        zones = sorted({c.time_zone for c in self.candidates})
        if len(zones) > 1:
            raise UsageError(f"the catalog snapshots in {self.path} have different TimeZone settings "
                             f"({', '.join(zones)}): give the time with an offset (as 2026-11-24 14:03:00+01)")
        return zones[0]

    def for_start(self, start: int, say=None) -> Catalog:
        """The snapshot for reading from ``start``: the file, or the directory's latest at or before it (all
        later: the earliest, which ``check_snapshot`` then judges).  ``say(line)`` is told which."""
        if self.catalog is not None:
            return self.catalog
        before = [c for c in self.candidates if c.lsn <= start]
        if before:
            chosen = max(before, key=lambda c: (c.lsn, c.path))
            why = f"latest at or before the start {format_lsn(start)}"
        else:
            chosen = min(self.candidates, key=lambda c: (c.lsn, c.path))
            why = f"the earliest; every one is after the start {format_lsn(start)}"
        if say is not None:
            say(f"catalog snapshot {chosen.path} taken at {format_lsn(chosen.lsn)} ({why})")
        return Catalog.load(chosen.path)


def open_catalog_source(path, segments, stanza: str | None = None,
                        options: InputOptions = DEFAULT_OPTIONS) -> CatalogSource:
    """``--catalog PATH`` for the WAL of ``segments``: a snapshot file, a directory holding snapshot files
    (``*.json``, ``*.json.gz``; those of another cluster or major version are passed over), or a backup
    repository (``catalog.backups``: a pgBackRest repository or stanza, a barman server; ``stanza``
    where a repository holds several), whose backups are the candidates; in object storage
    (``s3://...``, reached as ``options`` say), a backup repository."""
    path = os.fspath(path)
    url = URL_RE.match(path)
    if url and url.group(1).lower() != "file":  # an object store: only backups are read from it
        from . import backups as _backups  # lazy: 50 ms (construct, crc32c), only backup repositories

        return BackupSource(path, _fitting(path, _backups.list_backups(path, stanza, options), segments))
    if not os.path.isdir(path):
        return CatalogSource(path, catalog=Catalog.load(path))
    names = sorted(n for n in os.listdir(path) if n.endswith((".json", ".json.gz")))
    found, other = [], []
    for name in names:
        c = _peek(os.path.join(path, name))
        if c is None:
            continue
        if (c.system_identifier is not None and c.system_identifier != segments.sysid) or c.major != segments.major:
            other.append(c)
            continue
        found.append(c)
    if found:
        return CatalogSource(path, candidates=found)
    if not other:  # no snapshot among its JSON files (a barman server directory holds identity.json)
        backups = _backups_in(path, segments, stanza)
        if backups is not None:
            return BackupSource(path, backups)
    if other:
        raise CatalogError(f"no catalog snapshot in {path} is of the WAL's cluster (system identifier "
                           f"{segments.sysid}, PostgreSQL {segments.major}): {len(other)} of another cluster "
                           "or version")
    raise CatalogError(f"no catalog snapshot (*.json, *.json.gz written by 'waldecode catalog') in {path}")


class BackupSource(CatalogSource):
    """A backup repository given to ``--catalog``: the snapshot is taken from the latest backup whose stop
    LSN (its consistency point) is at or before the reading start (all later: the earliest), read from
    the backup's files as ``catalog --backup`` reads them."""

    def __init__(self, path: str, backups: list):
        super().__init__(path)
        self.backups = backups

    def time_zone(self) -> str:
        raise UsageError(f"--catalog {self.path} is a backup repository: the TimeZone a time without an offset "
                         "is read in comes from a snapshot; give the time with an offset (as 2026-11-24 "
                         "14:03:00+01)")

    def for_start(self, start: int, say=None) -> Catalog:
        from .datadir import snapshot_from_datadir  # lazy: 50 ms, only a snapshot from a backup needs it

        before = [b for b in self.backups if b.stop_lsn <= start]
        if before:
            chosen = max(before, key=lambda b: b.stop_lsn)
            why = f"latest at or before the start {format_lsn(start)}"
        else:
            chosen = min(self.backups, key=lambda b: b.stop_lsn)
            why = f"the earliest; every one stopped after the start {format_lsn(start)}"
        if say is not None:
            say(f"catalog from {chosen.describe()} ({why})")
        try:
            catalog = snapshot_from_datadir(chosen.source, warn=lambda m: None)
        finally:
            chosen.close()
        catalog.source = f"of {chosen.describe()}"
        return catalog


def _backups_in(path: str, segments, stanza: str | None) -> list | None:
    """The backups of the WAL's cluster and version a backup repository at ``path`` keeps (None: not a
    repository ``catalog.backups`` knows, or that module is not there)."""
    try:  # lazy: 50 ms (construct, crc32c) that a --catalog FILE never needs
        from . import backups as _backups
    except ImportError:
        return None
    try:
        found = _backups.list_backups(path, stanza)
    except CatalogError:
        return None
    return _fitting(path, found, segments)


def _fitting(path: str, found: list, segments) -> list:
    """The backups of ``found`` that are of the WAL's cluster and version (none: an error)."""
    fits = [b for b in found if b.stop_lsn is not None and (b.sysid is None or b.sysid == segments.sysid)
            and str(b.version) == str(segments.major)]
    if not fits:
        raise CatalogError(f"no backup in {path} is of the WAL's cluster (system identifier {segments.sysid}, "
                           f"PostgreSQL {segments.major}): {len(found)} of another cluster or version, or unfinished")
    return fits


def _peek(path: str) -> Candidate | None:
    """A snapshot file's LSN, cluster, version and TimeZone; None for a file that is not a snapshot."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                doc = json.load(f)
        else:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
    except (OSError, EOFError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        return None
    try:
        sysid = doc.get("system_identifier")
        return Candidate(path, parse_lsn(doc["lsn"]), int(sysid) if sysid is not None else None, int(doc["major"]),
                         str((doc.get("settings") or {}).get("TimeZone", "UTC")))
    except (KeyError, TypeError, ValueError):
        return None


def catalog_for_start(path, segments, start: int, say=None, stanza: str | None = None) -> Catalog:
    """The snapshot ``--catalog PATH`` gives for reading ``segments`` from ``start`` (not yet checked:
    ``check_snapshot``)."""
    return open_catalog_source(path, segments, stanza).for_start(start, say)
