"""One table as PostgreSQL's point-in-time recovery to a target would show it (issue 23).

Owns where replay stops (xlogrecovery.c ``recoveryStopsBefore`` / ``recoveryStopsAfter`` for
``recovery_target_lsn``, ``_time``, ``_xid`` and ``recovery_target_inclusive``), the checks recovery
makes around it (the backup's consistency point, the end of the WAL), which relation files hold the
table at the target (the catalog history, from the backup's catalog), and the rows visible there
(``HeapTupleSatisfiesMVCC`` with a snapshot taken after promotion, TOAST from the redone TOAST
relation).  Hands rows (a list of ``(Attribute, text | None)`` per row) to ``cli.table``, which
prints them.

Two passes from the backup label's START WAL LOCATION: the first reads the WAL, finds the stop point
and, with the catalog history, transaction status (``clog.CommitLog``) and multixact members
(``multixact.MultiXacts``) as of it, and the table's relation file nodes at the target, and keeps
in a temporary file the records that may change the table's pages (``_RedoSpool``); the second
copies only those relations' files from the backup into a page store and replays the kept records
up to the stop point (it reads the WAL again only for a table the backup knew by another name).  A
segment missing after the stop point is no concern (recovery never asks for it); one before it is a
``MissingSegmentError`` naming it.
"""

from __future__ import annotations

import pickle
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property

from ..catalog.datadir.clog import tuple_is_visible
from ..catalog.datadir.files import data_files
from ..catalog.datadir.heapscan import heap_page_items
from ..catalog.model import Attribute
from ..catalog.pg_catalog import (RELKIND_FOREIGN_TABLE, RELKIND_MATVIEW, RELKIND_PARTITIONED_TABLE,
                                  RELKIND_RELATION)
from ..errors import CatalogError, CorruptRecordError, TargetBeforeBackupError, UsageError, WALError, format_lsn
from ..heap.heaptuple import HEAP_MOVED, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID, deform_tuple
from ..heap.varlena import ToastPointer, decompress_toast_value
from ..pg.lsn import parse_lsn
from ..pg.transam import xid_precedes
from ..rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_SMGR_ID, RM_XACT_ID, RM_XLOG_ID
from ..rmgr import xact as rm_xact
from ..rmgr.smgr import XLOG_SMGR_CREATE, xl_smgr_create
from ..types import OutputContext
from ..wal.segments import discover
from ..wal.storage import DEFAULT_OPTIONS, InputOptions
from ..wal.xlogreader import XLogReader
from ..wal.xlogrecord import XLR_INFO_MASK
from ..xact import xact_event
from .backup_label import backup_end_lsn, read_backup_label, redo_checkpoint
from .clog import CommitLog, XidStatus
from .md import load_base_backup
from .multixact import MultiXacts
from .pagestore import PageStore
from .xlogrecovery import MAIN_FORKNUM, HeapRedo

__all__ = ["RecoveryTarget", "TableAsOf", "parse_target", "table_as_of", "table_from_repository"]

# src/include/datatype/timestamp.h: POSTGRES_EPOCH_JDATE, TimestampTz counts microseconds from 2000-01-01
POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)

# xlogrecovery.c recoveryStopsBefore / recoveryStopsAfter consider these transaction ends
_ENDS = (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED, rm_xact.XLOG_XACT_ABORT,
         rm_xact.XLOG_XACT_ABORT_PREPARED)

# src/backend/catalog/toasting.c create_toast_table: chunk_id oid, chunk_seq int4, chunk_data bytea
TOAST_ATTRIBUTES = (
    Attribute(1, "chunk_id", 26, -1, 4, True, "i", "p", False),
    Attribute(2, "chunk_seq", 23, -1, 4, True, "i", "p", False),
    Attribute(3, "chunk_data", 17, -1, -1, False, "i", "p", False),
)

#: what ``--table`` may name: a table, a materialized view, a partitioned table (its partitions' rows)
_TABLE_KINDS = (RELKIND_RELATION, RELKIND_MATVIEW, RELKIND_PARTITIONED_TABLE)

_LSN_RE = re.compile(r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")


@dataclass(frozen=True)
class RecoveryTarget:
    """``recovery_target_<kind>`` and ``recovery_target_inclusive``; ``value`` is an LSN (int), an xid
    (int) or a TimestampTz (microseconds since 2000-01-01 UTC)."""

    kind: str  # lsn | time | xid
    value: int
    inclusive: bool
    text: str  # as the user wrote it, for messages

    def __str__(self) -> str:
        return f"{self.kind} {self.text} (inclusive {'on' if self.inclusive else 'off'})"

    @property
    def time(self) -> datetime:
        """A time target's value as an aware datetime (UTC)."""
        return POSTGRES_EPOCH + timedelta(microseconds=self.value)


def parse_target(text: str, inclusive: bool, time_zone: str = "UTC") -> RecoveryTarget:
    """``--at``: an LSN (``X/X``), an xid (digits) or a time (ISO 8601; without an offset, in
    ``time_zone``, as the server reads recovery_target_time in its TimeZone)."""
    text = text.strip()
    if _LSN_RE.match(text):
        return RecoveryTarget("lsn", parse_lsn(text), inclusive, text)
    if text.isdigit():
        xid = int(text)
        if xid > 0xFFFFFFFF:
            raise UsageError(f"--at {text}: an xid is at most {0xFFFFFFFF}")
        return RecoveryTarget("xid", xid, inclusive, text)
    try:
        # PostgreSQL prints offsets as +HH; fromisoformat takes +HH:MM
        dt = datetime.fromisoformat(re.sub(r"([+-]\d\d)$", r"\1:00", text))
    except ValueError:
        raise UsageError(f"--at {text!r} is neither an LSN (X/X), an xid nor a time (YYYY-MM-DD HH:MM:SS[.ffffff]"
                         f"[+HH[:MM]])") from None
    if dt.tzinfo is None:
        from zoneinfo import ZoneInfo  # lazy: only a time target without an offset

        try:
            dt = dt.replace(tzinfo=ZoneInfo(time_zone))
        except (KeyError, ValueError) as e:
            raise UsageError(f"--at {text!r} has no offset and the cluster's TimeZone {time_zone!r} is not known "
                             f"here ({e}): give the offset") from None
    return RecoveryTarget("time", (dt - POSTGRES_EPOCH) // timedelta(microseconds=1), inclusive, text)


def _xact_end(rec, major: int):
    """(xid, xact_time) of a commit or abort record (the prepared xid for *_PREPARED), else None."""
    if rec.xl_rmid != RM_XACT_ID or rec.xl_info & rm_xact.XLOG_XACT_OPMASK not in _ENDS:
        return None
    ev = xact_event(rec, major)
    return ev.xid, ev.parsed.xact_time


def stops_before(target: RecoveryTarget, rec, end) -> bool:
    """xlogrecovery.c recoveryStopsBefore: stop without applying ``rec`` (``end`` is ``_xact_end``)."""
    if target.kind == "lsn":
        return not target.inclusive and rec.lsn >= target.value
    if end is None:
        return False
    xid, xtime = end
    if target.kind == "xid":
        return not target.inclusive and xid == target.value
    # many transactions may share a commit time: inclusive stops after the last of them
    return xtime > target.value if target.inclusive else xtime >= target.value


def stops_after(target: RecoveryTarget, rec, end) -> bool:
    """xlogrecovery.c recoveryStopsAfter: stop once ``rec`` is applied."""
    if target.kind == "lsn":
        return target.inclusive and rec.lsn >= target.value
    return target.kind == "xid" and target.inclusive and end is not None and end[0] == target.value


class _StatusAtTarget:
    """What ``tuple_is_visible`` asks, answered as of the stop point: the commit log (nothing in
    progress there commits: a snapshot after promotion) and multixacts' updaters."""

    def __init__(self, clog: CommitLog, multis: MultiXacts):
        self.clog, self.multis = clog, multis

    def did_commit(self, xid: int) -> bool:
        return self.clog.did_commit(xid)

    def multixact_update_xid(self, multi: int) -> int:
        return self.multis.update_xid(multi)


@dataclass
class TableAsOf:
    relation: object  # catalog.model.Relation at the target
    catalog: object  # the catalog in force at the stop (types, settings for the output functions)
    columns: list  # the Attributes printed (not dropped), attnum order
    values: list  # one list per visible tuple: per column None (NULL), bytes or a MissingValue, de-TOASTed
    # (empty when ``table_as_of`` handed each row to ``on_row`` instead)
    stop_lsn: int  # every record before it was applied
    stopped: str  # what stopped replay, as the server's "recovery stopping" line says it
    consistent_lsn: int
    backup: object = None  # catalog.backups.Backup: the repository's backup read (None: a plain base backup)

    @cached_property
    def output(self):
        """``(typeoid, value) -> text``: the output functions in a session with the settings of the catalog
        at the stop, one context for every value (``types.output_text`` looks its context up by the
        settings at each call, which costs more than most output functions)."""
        return OutputContext(self.catalog).output

    def texts(self, row: list) -> list:
        """A row's columns as the server's output functions print them (None: NULL)."""
        output = self.output
        return [None if v is None else output(a.atttypid, v) for a, v in zip(self.columns, row)]


def table_as_of(backup, paths, schema: str, name: str, at: str | RecoveryTarget, inclusive: bool = True,
                database: str | None = None, timeline: int | None = None, work_dir=None, warn=None, on_row=None,
                options: InputOptions = DEFAULT_OPTIONS) -> TableAsOf:
    """The rows of ``schema.name`` as recovery of ``backup`` (a path or ``DataFiles``) with the WAL of
    ``paths`` (any input ``decode`` takes, reached as ``options`` say) to the target ``at`` (a
    ``RecoveryTarget``, or its text for ``parse_target``: a time without an offset is in the backup's
    TimeZone setting) shows them; errors name what is missing, ``TargetBeforeBackupError`` a target
    this backup cannot reach.  ``on_row(result, values)``, when given, takes each row as it is read
    (the result's ``values`` stay empty: rows are not held)."""
    from ..catalog.datadir import read_pg_control, snapshot_from_datadir  # lazy: the catalog readers, only this command
    from ..catalog.history import CatalogHistory  # lazy: as above

    files = data_files(backup)
    label = read_backup_label(files)
    catalog = snapshot_from_datadir(files, database, warn=warn or (lambda _m: None))
    major = catalog.major
    target = at if isinstance(at, RecoveryTarget) else parse_target(at, inclusive,
                                                                     catalog.settings.get("TimeZone") or "UTC")
    segments = discover(paths, timeline, options)  # once: every pass reads the same files
    checkpoint = redo_checkpoint(label, XLogReader(segments=segments, start_lsn=label.start_lsn, read_to_gap=True))
    clog = CommitLog(files, checkpoint, major)
    if target.kind == "xid" and xid_precedes(target.value, clog.next_xid) \
            and clog.status(target.value) in (XidStatus.COMMITTED, XidStatus.ABORTED):
        # the backup's pg_xact (copied before the backup ended) already holds its end: recovery from this
        # backup stops before its consistency point, or never meets the end record (it is before the redo point)
        raise TargetBeforeBackupError(f"transaction {target.value} ended before the backup {files.root} was "
                                      f"consistent (its pg_xact holds the end; START WAL LOCATION "
                                      f"{format_lsn(label.start_lsn)}): a backup taken before it is needed")
    multis = MultiXacts(files, checkpoint)
    history = CatalogHistory(catalog, major)

    # -- pass 1: where replay stops, and what is committed there -----------------------------------
    # (and the records of the table's relations, kept for pass 2: the WAL is read once; an anonymous
    # temporary file, gone with its last reference whatever happens)
    spool = _RedoSpool(work_dir, catalog, schema, name)
    consistent = None
    stop = stopped = None
    reader = XLogReader(segments=segments, start_lsn=label.start_lsn, read_to_gap=True)
    for rec in reader:
        end = _xact_end(rec, major)
        if stops_before(target, rec, end):
            stop, stopped = rec.lsn, f"before {_what(rec, end)}"
            break
        history.process(rec)
        clog.redo(rec)
        multis.redo(rec)
        spool.offer(rec)
        if consistent is None and backup_end_lsn(label, rec) is not None:
            consistent = rec.end_lsn
        if stops_after(target, rec, end):
            stop, stopped = rec.end_lsn, f"after {_what(rec, end)}"
            break
    if stop is None:
        why = f" ({reader.stop.reason})" if reader.stop is not None else ""
        last = reader.last_end_lsn or label.start_lsn
        raise WALError(f"recovery ended before the target {target} was reached: the WAL given ends at "
                       f"{format_lsn(last)}{why}; the segments up to the target are needed")
    if consistent is None:
        raise TargetBeforeBackupError(f"requested recovery stop point {format_lsn(stop)} is before the consistent "
                                      f"recovery point of the backup {files.root} (its XLOG_BACKUP_END record, after "
                                      f"START WAL LOCATION {format_lsn(label.start_lsn)}): a target after the "
                                      f"backup's end is needed")

    view = history.view(stop)
    # ``relations`` finds the OID; ``relation`` gives it with the attributes changed since the backup
    oid = next((r.oid for r in view.relations.values()
                if r.nspname == schema and r.relname == name and r.relkind in _TABLE_KINDS), None)
    rel = view.relation(oid) if oid is not None else None
    if rel is None:
        raise CatalogError(f"no table {schema}.{name} in database {catalog.database} at {format_lsn(stop)} "
                           f"(recovery stopping {stopped})")
    columns = [a for a in rel.attributes if not a.attisdropped]
    # A partitioned table's rows are its leaf partitions' (SELECT * FROM it), each in its own files
    leaves = _leaf_partitions(view, rel, stop) if rel.relkind == RELKIND_PARTITIONED_TABLE else [rel]
    scans = [_Scan(leaf, *_locators(view, catalog, leaf, stop), _column_map(columns, leaf))
             for leaf in leaves]
    wanted = {s.heap for s in scans} | {s.toast for s in scans if s.toast}
    # the backup's file of a locator another relation held then is not this one's: that relation was dropped
    # (xact_redo_commit's DropRelationFiles) and its file number given again (smgr_redo's XLOG_SMGR_CREATE)
    from_backup = _own_backup_files(catalog, scans)

    # -- pass 2: the relations' pages, replayed to the stop point ---------------------------------
    with spool, tempfile.TemporaryDirectory(prefix="waldecode-table-", dir=work_dir) as tmp:
        with PageStore(tmp) as store:
            load_base_backup(store, files, major, wanted=from_backup.__contains__)
            # xlog.h XLogHintBitIsNeeded: data checksums (18's initdb default) or wal_log_hints WAL-log hint
            # bits, and then XLOG_HEAP2_VISIBLE redo moves the heap page's LSN
            control = read_pg_control(files, major)
            engine = HeapRedo(store, major, wanted=wanted.__contains__,
                              hint_bits_logged=bool(control.data_checksum_version or control.wal_log_hints))
            # the records pass 1 kept; the WAL again when the table is a relation the backup knew by another
            # name (up to the stop: a stop at a segment's end, after an XLOG_SWITCH, needs nothing of the next)
            records = spool.records() if spool.covers(wanted) else \
                XLogReader(segments=segments, start_lsn=label.start_lsn, end_lsn=stop, read_to_gap=True)
            for rec in records:
                if rec.lsn >= stop:
                    break
                engine.redo(rec)
            status = _StatusAtTarget(clog, multis)
            result = TableAsOf(rel, view, columns, [], stop, stopped, consistent)
            add = result.values.append if on_row is None else (lambda row: on_row(result, row))
            for scan in scans:
                what = f"{scan.relation.nspname}.{scan.relation.relname}"
                chunks = None
                for _blkno, _offnum, values in _visible_tuples(store, scan.heap, status, scan.relation.attributes,
                                                               what):
                    out = []
                    for i in scan.positions:
                        v = values[i] if i < len(values) else None
                        if isinstance(v, ToastPointer):
                            if chunks is None:
                                chunks = _toast_chunks(store, scan.toast, clog, f"TOAST table of {what}")
                            v = _detoast(v, chunks)
                        out.append(v)
                    add(out)
    return result


def table_from_repository(path, paths, schema: str, name: str, at: str, inclusive: bool = True,
                          stanza: str | None = None, label: str | None = None,
                          options: InputOptions = DEFAULT_OPTIONS, **kw) -> TableAsOf:
    """``table_as_of`` from a backup of a pgBackRest repository (root, stanza or set) or a barman server
    or backup directory at ``path``, chosen as an operator restoring to the target would choose it: the
    one labelled ``label``, else the latest whose consistency point is at or before the target (its
    stop LSN for an LSN target, its stop time for a time target: ``catalog.backups.fitting_backups``,
    the rule ``catalog --backup --before`` follows, with ``Backup.stopped_by``: a whole-second stop time
    counts as the end of its second; any backup for an xid target).  A backup that turns out not to
    reach the target (``TargetBeforeBackupError``: recovery would stop before its XLOG_BACKUP_END, an
    xid target's transaction ended before it) gives way to the one before it.  The WAL is ``paths``,
    or, when none is given, the archive the tool keeps beside the backup (``Backup.archive``).  A time
    without an offset is in the TimeZone of the newest backup's configuration files, which recovery
    reads it in.  The result's ``backup`` is the backup read."""
    from ..catalog.backups import backup_candidates, earliest, fitting_backups  # lazy: only with a repository
    from ..catalog.datadir.settings import read_settings  # lazy: as above

    what, backups, _latest_first = backup_candidates(path, stanza, label, options=options)
    try:
        zone = read_settings(backups[-1].source).get("TimeZone") or "UTC"
        target = parse_target(at, inclusive, zone)
        if target.kind == "lsn":
            fits = fitting_backups(backups, before_lsn=target.value)
        elif target.kind == "time":
            # surely: a backup consistent only after the target misses the commits later than the target
            # made before its redo point, and nothing in its WAL would show it (pgBackRest keeps whole seconds)
            fits = fitting_backups(backups, before_time=target.time, surely=True)
        else:
            fits = backups[::-1]
        why = "every backup's stop LSN or time is after the target"
        for backup in fits:
            try:
                result = table_as_of(backup.source, paths or [backup.archive], schema, name, target,
                                     options=options, **kw)
            except TargetBeforeBackupError as e:
                why = e.reason
                backup.close()
                continue
            result.backup = backup
            return result
        raise TargetBeforeBackupError(f"{what}: no backup{' ' + label if label else ''} is consistent before the "
                                      f"target {target} ({earliest(backups)}): {why}")
    finally:
        for b in backups:
            b.close()


class _RedoSpool:
    """The records pass 2 replays, kept in a temporary file as pass 1 reads them, so that the WAL is
    read once: heap, heap2 and XLOG records (full-page images) with a block of a relation file of the
    table's database that the backup's catalog does not give to another relation (the table's own
    and its TOAST table's at the backup, and any file created after it, as a rewrite or a TRUNCATE
    gives the table), and every storage record.  ``covers(wanted)``: whether the table's relation
    files at the stop are among them; not when the table there is a relation the backup knew by
    another name (``ALTER TABLE ... RENAME``): then pass 2 reads the WAL again."""

    def __init__(self, work_dir, catalog, schema: str, name: str):
        rels = catalog.relations
        named = [r for r in rels.values() if r.nspname == schema and r.relname == name]
        mine = {_locator(catalog, r) for r in named} | {_locator(catalog, rels[r.reltoastrelid]) for r in named
                                                         if r.reltoastrelid in rels}
        self.others = set(_file_owners(catalog)) - mine
        self.db = catalog.database_oid
        self.count = 0
        self.file = tempfile.TemporaryFile(prefix="waldecode-table-redo-", dir=work_dir)

    def offer(self, rec) -> None:
        rmid = rec.xl_rmid
        if rmid == RM_SMGR_ID:
            if rec.xl_info & ~XLR_INFO_MASK == XLOG_SMGR_CREATE:
                # storage.c RelationCreateStorage: a file number a dropped relation freed, taken again
                self.others.discard(tuple(xl_smgr_create.unpack_from(rec.main_data)[:3]))
        elif rmid not in (RM_HEAP_ID, RM_HEAP2_ID, RM_XLOG_ID) or not any(
                b.dbOid == self.db and (b.spcOid, b.dbOid, b.relNumber) not in self.others for b in rec.blocks):
            return
        # one pickle per record, each with its own memo: a pickler or unpickler kept across records would
        # hold every record in its memo
        pickle.dump(rec, self.file, protocol=pickle.HIGHEST_PROTOCOL)
        self.count += 1

    def covers(self, wanted: set) -> bool:
        return not wanted & self.others

    def records(self):
        self.file.seek(0)
        for _ in range(self.count):
            yield pickle.load(self.file)

    def __enter__(self) -> "_RedoSpool":
        return self

    def __exit__(self, *exc) -> None:
        self.file.close()


@dataclass
class _Scan:
    """One relation whose tuples are rows of the table asked for: the table itself, or one of its leaf
    partitions; ``positions``: for each printed column of the table, the index of its value in the
    relation's tuples."""

    relation: object
    heap: tuple
    toast: tuple | None
    positions: list


def _locator(catalog, rel) -> tuple:
    """The relation file locator (tablespace, database, relfilenode) of ``rel``, a relation of ``catalog``'s
    database (reltablespace 0: the database's default tablespace)."""
    return (rel.reltablespace or catalog.database_tablespace, catalog.database_oid, rel.relfilenode)


def _file_owners(catalog) -> dict:
    """locator -> OID of the relation that has the file, for every relation of ``catalog`` with storage of
    its own (a mapped catalog's relfilenode is 0 in pg_class)."""
    return {_locator(catalog, r): r.oid for r in catalog.relations.values() if r.relfilenode}


def _locators(view, catalog, rel, stop: int) -> tuple:
    """(heap, TOAST or None) relation file locators of ``rel`` at the stop point."""
    toast = None
    if rel.reltoastrelid:
        t = view.relation(rel.reltoastrelid)
        if t is None:
            raise CatalogError(f"the TOAST table {rel.reltoastrelid} of {rel.nspname}.{rel.relname} is not in the "
                               f"catalog at {format_lsn(stop)}")
        toast = _locator(catalog, t)
    return _locator(catalog, rel), toast


def _own_backup_files(backup_catalog, scans) -> set:
    """The locators of ``scans`` whose file in the backup is the relation's own: those the backup's
    catalog gives to the same relation (by OID) or to none; not one it gives to another relation, whose
    file number the table's relation took after that one was dropped."""
    owner = _file_owners(backup_catalog)
    own = set()
    for s in scans:
        toast_oid = s.relation.reltoastrelid
        for locator, oid in ((s.heap, s.relation.oid), (s.toast, toast_oid)):
            if locator is not None and owner.get(locator, oid) == oid:
                own.add(locator)
    return own


def _leaf_partitions(view, parent, stop: int) -> list:
    """The partitions of ``parent`` that hold rows (pg_inherits at the stop point, followed down through
    sub-partitioned ones), in OID order; a foreign table among them is refused: its rows are elsewhere."""
    children: dict = {}
    for child, parents in view.inherits.items():
        for p in parents:
            children.setdefault(p, []).append(child)
    leaves, todo = [], [parent.oid]
    while todo:
        for child in sorted(children.get(todo.pop(0), ())):
            rel = view.relation(child)
            if rel is None:
                raise CatalogError(f"partition {child} of {parent.nspname}.{parent.relname} is not in the catalog "
                                   f"at {format_lsn(stop)}")
            if rel.relkind == RELKIND_PARTITIONED_TABLE:
                todo.append(child)
            elif rel.relkind == RELKIND_FOREIGN_TABLE:
                raise CatalogError(f"partition {rel.nspname}.{rel.relname} of {parent.nspname}.{parent.relname} is a "
                                   "foreign table: its rows are not in this cluster's WAL")
            else:
                leaves.append(rel)
    return sorted(leaves, key=lambda r: r.oid)


def _column_map(columns: list, rel) -> list:
    """For each of ``columns`` (the table's, not dropped), the index of its value in ``rel``'s tuples:
    a partition's columns are the parent's by name, in an order of their own (tupconvert.c
    convert_tuples_by_name_attrmap)."""
    index = {a.attname: i for i, a in enumerate(rel.attributes) if not a.attisdropped}
    try:
        return [index[a.attname] for a in columns]
    except KeyError as e:
        raise CatalogError(f"partition {rel.nspname}.{rel.relname} has no column {e.args[0]} of its parent") from None


def _what(rec, end) -> str:
    if end is None:
        return f"the record at {format_lsn(rec.lsn)}"
    return f"the end of transaction {end[0]} at {format_lsn(rec.lsn)}"


def _visible_tuples(store, locator, status, attributes, what: str):
    """(blkno, offnum, values) of the tuples of relation ``locator`` visible at the target, in physical
    order: every LP_NORMAL item on its own (HOT chains are not followed: each visible version is a row)."""
    if locator is None:
        return
    for blkno in sorted(store.blocks(locator, MAIN_FORKNUM)):
        page = bytes(store.read(locator, MAIN_FORKNUM, blkno))
        for offnum, lp_off, lp_len, xmin, xmax, infomask2, infomask, t_hoff in heap_page_items(page, what, blkno):
            if infomask & HEAP_MOVED and not infomask & HEAP_XMIN_COMMITTED:
                # heapam_visibility.c checks xvac for tuples moved by a pre-9.0 VACUUM FULL: not done here
                raise CatalogError(f"{what}: block {blkno}: tuple {offnum} was moved by a pre-9.0 VACUUM FULL "
                                   f"(HEAP_MOVED), whose visibility is not followed")
            if not tuple_is_visible(xmin, xmax, infomask, status):
                continue
            yield blkno, offnum, deform_tuple(page, infomask2, infomask, t_hoff, attributes,
                                              start=lp_off + 23, end=lp_off + lp_len)


def _toast_chunks(store, locator, clog: CommitLog, what: str) -> dict:
    """chunk_id -> {chunk_seq: data} of the TOAST relation's chunks a detoasting reader sees:
    heapam_visibility.c HeapTupleSatisfiesToast takes every tuple whose inserter did not abort."""
    out: dict = {}
    if locator is None:
        return out
    for blkno in sorted(store.blocks(locator, MAIN_FORKNUM)):
        page = bytes(store.read(locator, MAIN_FORKNUM, blkno))
        for offnum, lp_off, lp_len, xmin, _xmax, infomask2, infomask, t_hoff in heap_page_items(page, what, blkno):
            if not infomask & HEAP_XMIN_COMMITTED:
                if infomask & HEAP_XMIN_INVALID or clog.status(xmin) == XidStatus.ABORTED:
                    continue
            values = deform_tuple(page, infomask2, infomask, t_hoff, TOAST_ATTRIBUTES, start=lp_off + 23,
                                  end=lp_off + lp_len)
            if any(v is None for v in values):
                raise CorruptRecordError(f"{what}: block {blkno}: chunk {offnum} has a NULL column")
            chunk_id = int.from_bytes(values[0], "little")
            seq = int.from_bytes(values[1], "little", signed=True)
            out.setdefault(chunk_id, {})[seq] = bytes(values[2])
    return out


def _detoast(pointer: ToastPointer, chunks: dict) -> bytes:
    """detoast.c toast_fetch_datum: the chunks 0..n-1 of the value, concatenated, then decompressed."""
    parts = chunks.get(pointer.va_valueid)
    what = f"TOAST value {pointer.va_valueid} of TOAST relation {pointer.va_toastrelid}"
    if not parts:
        raise CorruptRecordError(f"missing chunk number 0 for {what}")
    for seq in range(len(parts)):
        if seq not in parts:
            raise CorruptRecordError(f"missing chunk number {seq} for {what}")
    return decompress_toast_value(b"".join(parts[s] for s in range(len(parts))), pointer)
