"""Replay of a committed transaction into an output plugin (ReorderBufferProcessTXN).

Owns what happens between the reorder buffer and the output plugin: each change's
relfilenode is mapped to a relation of the catalog as of the change (the catalog
history's view at its LSN for its transaction, or the static snapshot without one)
and filtered as PostgreSQL filters it (catalogs, non-permanent relations, sequences,
rewrite heaps); a relation that cannot be resolved is reported through ``warn`` and
its change skipped, the rest of the transaction still decoded;
inserts into TOAST relations are collected as chunks and substituted into the next
row of their table; speculative inserts wait for their confirmation; tuples are
split into column values; invalidation changes go to the plugin's ``invalidate`` at
their place.  Calls the plugin as ``output.base.OutputPlugin`` says,
handing it relations, value lists and the ``CatalogView`` in force for each change,
never WAL.
"""

from __future__ import annotations

import struct
from bisect import bisect_left

from .. import _impl
from ..heap import heaptuple
from ..heap import varlena
from ..catalog import (
    RELKIND_FOREIGN_TABLE,
    RELKIND_SEQUENCE,
    RELPERSISTENCE_PERMANENT,
    REPLICA_IDENTITY_DEFAULT,
    REPLICA_IDENTITY_FULL,
    REPLICA_IDENTITY_INDEX,
    REPLICA_IDENTITY_NOTHING,
    Catalog,
    Relation,
)
from ..errors import DecodeError, WALError, format_lsn
from ..output import UNCHANGED_TOAST
from ..output.base import DELETE, INSERT, UPDATE, CatalogView, OutputPlugin, Transaction
from .diagnostics import Diagnostic
from .reorderbuffer import (
    REORDER_BUFFER_CHANGE_DELETE,
    REORDER_BUFFER_CHANGE_INSERT,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_CONFIRM,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT,
    REORDER_BUFFER_CHANGE_INVALIDATION,
    REORDER_BUFFER_CHANGE_MESSAGE,
    REORDER_BUFFER_CHANGE_TRUNCATE,
    REORDER_BUFFER_CHANGE_UPDATE,
    Change,
)
from ..rmgr.heap import (  # heapam_xlog.h, declared once in the rmgr module
    XLH_TRUNCATE_CASCADE,
    XLH_TRUNCATE_RESTART_SEQS,
    SizeOfHeapHeader,
    SizeOfHeapTruncate,
    xl_heap_header,
    xl_heap_truncate,
)
from ..rmgr.logicalmsg import parse_message

# What becomes of a relation's changes (Replayer._relation_fate)
_ROW = "row"  # printed
_TOAST = "toast"  # chunks of TOAST values, substituted into the next row
_SKIP = "skip"  # not logically logged, a rewrite heap not asked for, or a sequence

#: ``Replayer.row_target``'s answer for a file no relation of the catalog in force is stored in
UNMAPPED = "unmapped"

# ALTER TABLE ... REPLICA IDENTITY's words for pg_class.relreplident
_REPLICA_IDENTITY_NAMES = {REPLICA_IDENTITY_DEFAULT: "DEFAULT", REPLICA_IDENTITY_FULL: "FULL",
                           REPLICA_IDENTITY_INDEX: "USING INDEX", REPLICA_IDENTITY_NOTHING: "NOTHING"}

_ACTION_NAMES = {REORDER_BUFFER_CHANGE_INSERT: INSERT, REORDER_BUFFER_CHANGE_UPDATE: UPDATE,
                 REORDER_BUFFER_CHANGE_DELETE: DELETE}


def relation_is_logically_logged(rel: Relation) -> bool:
    """RelationIsLogicallyLogged (utils/rel.h), with wal_level=logical given."""
    return (rel.relpersistence == RELPERSISTENCE_PERMANENT and rel.relkind != RELKIND_FOREIGN_TABLE
            and not rel.is_catalog)


def _row_error(rel: Relation, e: WALError, lsn: int) -> DecodeError:
    return DecodeError(f"cannot decode a row of {rel.nspname}.{rel.relname} (relation {rel.oid}): {e.reason}",
                       lsn=lsn)


class ToastChunks:
    """ReorderBufferToastEnt: the chunks of one TOAST value, in chunk_seq order."""

    __slots__ = ("chunks", "last_seq", "size")

    def __init__(self):
        self.chunks: list[bytes] = []
        self.last_seq = -1
        self.size = 0


class ToastLookup:
    """The ``toast`` callback of ``change_tuples``: what ``_toast_replace`` substitutes for an
    external pointer of a new tuple (the value whose chunks the transaction wrote, else None).
    ``failure`` is the error of the last value that could not be rebuilt: it reaches the caller
    as it is, not as a row the deformer refused."""

    __slots__ = ("toast_hash", "failure")

    def __init__(self, toast_hash: dict):
        self.toast_hash = toast_hash
        self.failure: WALError | None = None

    def __call__(self, pointer: varlena.ToastPointer):
        ent = self.toast_hash.get(pointer.va_valueid)
        if ent is None:
            return None
        try:
            return varlena.decompress_toast_value(b"".join(ent.chunks), pointer)
        except WALError as e:
            self.failure = e
            raise


class ReplayState:
    """What replaying one transaction carries from change to change: the TOAST chunks collected
    (and the ``change_tuples`` lookup over them), a speculative insertion awaiting confirmation."""

    __slots__ = ("toast_hash", "toast", "specinsert")

    def __init__(self, toast: ToastLookup | None):
        self.toast = toast
        self.toast_hash: dict[int, ToastChunks] = toast.toast_hash if toast is not None else {}
        self.specinsert: Change | None = None


class Replayer:
    def __init__(self, catalog: Catalog, plugin: OutputPlugin, snapshot: CatalogView,
                 include_rewrites: bool = False, history=None, warn=None, wal_tuples: bool = False,
                 whole_old_rows: bool = False):
        """``snapshot`` is the plugin's view of ``catalog``, the one its ``startup`` was given;
        ``wal_tuples``: the plugin takes row changes as WAL tuples (``change_tuples``); ``whole_old_rows``:
        ``-o old-rows=full`` on logical-level WAL, whose records carry the whole old row only for a table
        with REPLICA IDENTITY FULL (ExtractReplicaIdentity in heapam.c): an UPDATE or DELETE of another
        table is refused rather than printed with a partial row or none."""
        self.catalog = catalog
        self.snapshot = snapshot
        self.plugin = plugin
        self.include_rewrites = include_rewrites
        self.wal_tuples = wal_tuples
        self.whole_old_rows = whole_old_rows
        self.history = history if history is not None and history.active else None
        self.warn = warn
        self._shown = catalog  # the catalog of the last change, and the plugin's view of it
        self._shown_view = snapshot
        self._static = True  # one catalog, _shown, serves every change of this transaction
        self._fates: dict = {}  # (spcOid, relNumber) -> (relation, fate) under _fates_catalog
        self._fates_catalog = None
        # (spcOid, relNumber) -> row_target's answer under _shown; _logical's commit path reads it too
        # (the same dict for the replayer's life: emptied, never replaced, when _shown changes)
        self.row_targets: dict = {}
        # Notes (diagnostics.Diagnostic) that fail the run once a row change they may concern is decoded
        # after them: by relation OID, and those concerning any relation; set by watch()
        self._watched: dict[int, list] = {}
        self._watch_any: list = []
        self._escalate = None

    def _catalog_at(self, xid: int, lsn: int) -> tuple:
        """The catalog as transaction ``xid`` saw it at ``lsn``, and the plugin's view of it: a new
        view only when the catalog changed, so that plugins can cache per view."""
        if self._static:
            return self._shown, self._shown_view
        self._show(self.history.view(lsn, xid))
        return self._shown, self._shown_view

    def _show(self, catalog) -> None:
        """Make ``catalog`` the one in force, with its view (the snapshot's own for the snapshot)."""
        if catalog is not self._shown:
            self._shown = catalog
            self._shown_view = (self.snapshot if catalog is self.catalog
                                else CatalogView(catalog, catalog.output_context))
            self.row_targets.clear()

    def _skip(self, what: str, why: str, lsn: int, cause: str | None = None, xid: int | None = None,
              relation: str | None = None) -> None:
        """A change whose relation is unknown: skipped with a warning (an error without ``warn``)."""
        if self.warn is None:
            raise DecodeError(f"{what}: {why}", lsn=lsn)
        self.warn(Diagnostic.make(f"{what} at {format_lsn(lsn)}: {why}; change skipped", cause, lsn=lsn, xid=xid,
                                  relation=relation))

    def tuple_values(self, rel: Relation, tup: bytes, lsn: int) -> list:
        t_infomask2, t_infomask, t_hoff = xl_heap_header.unpack_from(tup, 0)
        try:
            return heaptuple.deform_tuple(memoryview(tup)[SizeOfHeapHeader:], t_infomask2, t_infomask, t_hoff,
                                          rel.attributes)
        except WALError as e:
            raise _row_error(rel, e, lsn) from None

    def _append_chunk(self, toast_hash: dict, toast_rel: Relation, change: Change) -> None:
        """ReorderBufferToastAppendChunk."""
        vals = self.tuple_values(toast_rel, change.newtuple, change.lsn)
        chunk_id = struct.unpack("<I", vals[0])[0]
        chunk_seq = struct.unpack("<i", vals[1])[0]
        ent = toast_hash.get(chunk_id)
        if ent is None:
            ent = toast_hash[chunk_id] = ToastChunks()
            if chunk_seq != 0:
                raise DecodeError(f"got sequence entry {chunk_seq} for toast chunk {chunk_id} instead of seq 0",
                                  lsn=change.lsn)
        elif chunk_seq != ent.last_seq + 1:
            raise DecodeError(f"got sequence entry {chunk_seq} for toast chunk {chunk_id} instead of seq "
                              f"{ent.last_seq + 1}", lsn=change.lsn)
        data = vals[2]
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError(f"unexpected type of toast chunk {chunk_id}", lsn=change.lsn)
        ent.chunks.append(bytes(data))
        ent.last_seq = chunk_seq
        ent.size += len(data)

    def _toast_replace(self, rel: Relation, values: list, toast_hash: dict, lsn: int) -> list:
        """ReorderBufferToastReplace: external pointers whose chunks this transaction wrote become values."""
        out = list(values)
        for i, v in enumerate(values):
            if isinstance(v, varlena.ToastPointer):
                att = rel.attributes[i]
                if att.attisdropped:
                    continue
                ent = toast_hash.get(v.va_valueid) if toast_hash else None
                if ent is None:
                    out[i] = UNCHANGED_TOAST
                else:
                    out[i] = varlena.decompress_toast_value(b"".join(ent.chunks), v)
        return out

    def whole_catalog(self, xid: int, first_lsn: int, last_lsn: int) -> bool:
        """Does one catalog serve every change of top-level transaction ``xid``, whose changes lie
        between ``first_lsn`` and ``last_lsn`` (0: up to the last record read)?  Then it is made the
        one in force (``_shown``): the row targets of ``row_target`` are its.

        It does when the transaction changed no catalog row itself and no catalog change committed
        while it ran: the catalog history's view at each of its changes (``CatalogTimeline.view``:
        the epoch of the commits before the change, and the transaction's own catalog rows) is then
        one and the same, the epoch ``first_lsn`` is in — as a transaction's snapshot in PostgreSQL
        changes only when a catalog-changing transaction commits while it runs
        (SnapBuildDistributeNewCatalogSnapshot) or it changes the catalog itself.  Never while a note is
        watched: its row changes must pass ``_check_watch``."""
        if self._escalate is not None:
            return False
        if self.history is None:
            return True
        if self.catalog_bounds(xid, first_lsn, last_lsn):
            return False
        self._show(self.history.timeline.view(first_lsn))
        return True

    def catalog_bounds(self, xid: int, first_lsn: int, last_lsn: int) -> list[int]:
        """Where the catalog in force for top-level transaction ``xid`` may change between ``first_lsn`` and
        ``last_lsn`` (0: up to the last record read): the LSNs of the catalog-changing commits and of its
        own catalog rows there, ascending.  A change at ``lsn`` sees the catalog those before ``lsn`` made
        (``CatalogTimeline.view``), so the catalog is one between two bounds; ``follow`` makes it the one
        in force."""
        timeline = self.history.timeline
        commits = timeline.commit_lsns
        bounds = commits[bisect_left(commits, first_lsn):bisect_left(commits, last_lsn) if last_lsn else len(commits)]
        own = timeline.txns.get(xid)
        if own is not None:
            bounds = sorted({*bounds, *own.lsns})
        return bounds

    def follow(self, xid: int, lsn: int) -> None:
        """Make the catalog transaction ``xid`` sees at ``lsn`` the one in force (``row_target``'s):
        for ``_logical.replay`` at a change past one of ``catalog_bounds``."""
        self._show(self.history.view(lsn, xid))

    @property
    def shown(self):
        """The catalog in force: the last change's, or the one ``whole_catalog`` or ``follow`` made so."""
        return self._shown

    def watching(self) -> bool:
        """Is a note watched (``watch``)?  Then every row change goes through ``apply_change``."""
        return self._escalate is not None

    def watch(self, note, escalate) -> None:
        """Call ``escalate(note, why)`` when a row change of a relation ``note.concerns`` (any relation
        when None) is decoded at an LSN after ``note.lsn``: the note then means the output may be wrong."""
        if note.concerns is None:
            self._watch_any.append(note)
        else:
            for oid in note.concerns:
                self._watched.setdefault(oid, []).append(note)
        self._escalate = escalate

    def _check_watch(self, rel: Relation, lsn: int) -> None:
        hits = [n for n in self._watch_any + self._watched.get(rel.oid, []) if n.lsn is None or lsn > n.lsn]
        for n in hits:
            self._escalate(n, f"a change of {rel.nspname}.{rel.relname} was decoded after it at {format_lsn(lsn)}, "
                              "maybe with an outdated definition")
            if n in self._watch_any:
                self._watch_any.remove(n)
            for notes in self._watched.values():
                if n in notes:
                    notes.remove(n)
        if hits and not self._watch_any and not any(self._watched.values()):
            self._escalate = None

    def replay(self, txn: Transaction, changes, end, prepare: bool = False, first_lsn: int | None = None) -> None:
        """Run one transaction's changes through the plugin: ``begin`` (``begin_prepare`` for one
        decoded at PREPARE), its changes, then ``end()``, the callback that ends it.  ``first_lsn``:
        the first LSN of any of its subtransactions' records when earlier than ``txn.first_lsn``.

        ``changes`` yields ``Change`` tuples, or (``ReorderBuffer.iter_changes`` under Cython)
        ``ChangeBuffer``s holding runs of them: those go through ``waldecode._logical.replay``,
        which writes the row changes of a plugin with a ``row_writer`` in C and hands every
        other change to ``apply_change``, the rules' one copy."""
        plugin = self.plugin
        first_lsn = min(txn.first_lsn, first_lsn or txn.first_lsn)
        self._static = self.whole_catalog(txn.xid, first_lsn, txn.final_lsn)
        state = ReplayState(ToastLookup({}) if self.wal_tuples else None)
        if prepare:
            plugin.begin_prepare(txn)
        else:
            plugin.begin(txn)
        logical = _impl.logical()
        if logical is not None:
            # row changes appended natively unless a note is watched (apply_change checks each then); where the
            # catalog is not one for all, with the bounds at which the replay asks for the next (follow)
            bounds = None if self._static or self.history is None else self.catalog_bounds(txn.xid, first_lsn,
                                                                                             txn.final_lsn)
            logical.replay(self, txn, state, changes, self.wal_tuples and self._escalate is None, bounds)
        else:
            apply = self.apply_change
            for change in changes:
                apply(txn, change, state)
        end()

    def apply_change(self, txn: Transaction, change: Change, state: "ReplayState") -> None:
        """One change of a transaction being replayed (ReorderBufferProcessTXN's switch)."""
        action = change.action
        if action == REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT:
            # Held back until its confirmation; a still pending one failed
            state.specinsert = change
            return
        if action == REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT:
            if state.specinsert is not None:
                state.toast_hash.clear()
                state.specinsert = None
            return
        if action == REORDER_BUFFER_CHANGE_INTERNAL_SPEC_CONFIRM:
            if state.specinsert is None:
                raise DecodeError("invalid ordering of speculative insertion changes", lsn=change.lsn)
            change = state.specinsert._replace(action=REORDER_BUFFER_CHANGE_INSERT)
            action = REORDER_BUFFER_CHANGE_INSERT
        if action in _ACTION_NAMES:
            self._apply_tuple_change(txn, change, state.toast_hash, state.toast)
            state.specinsert = None
        elif action == REORDER_BUFFER_CHANGE_TRUNCATE:
            self._apply_truncate(txn, change)
        elif action == REORDER_BUFFER_CHANGE_MESSAGE:
            transactional, prefix, content = parse_message(change.extra)
            self.plugin.message(txn, change.lsn, transactional, prefix, content)
        elif action == REORDER_BUFFER_CHANGE_INVALIDATION:
            # executed locally (ReorderBufferExecuteInvalidations): the plugin's caches hear them
            self.plugin.invalidate(change.extra)

    def row_target(self, spc: int, relnumber: int):
        """For ``_logical.replay``, while one catalog serves every change: what becomes of a row
        change stored in (spc, relnumber) — False: nothing (a relation not decoded), a tuple
        ``(RelDesc, buffer, head, block size)`` from the plugin's ``row_writer``: the line is
        appended natively, ``UNMAPPED``: no relation is stored there (a change without tuples is
        passed over, another goes to ``apply_change``, which warns), None: ``apply_change`` decides
        (TOAST chunks, a plugin without a row writer).  Kept in ``row_targets`` while the catalog in
        force stays."""
        key = (spc, relnumber)
        hit = self.row_targets.get(key, self)
        if hit is not self:
            return hit
        target = UNMAPPED
        fate = self._relation_fate(self._shown, spc, relnumber)
        if fate is not None:
            target = None
            rel, what = fate
            if what is _SKIP:
                target = False
            elif what is _ROW:
                row_writer = getattr(self.plugin, "row_writer", None)
                target = row_writer(self._shown_view, rel) if row_writer is not None else None
        self.row_targets[key] = target
        return target

    def row_error(self, spc: int, relnumber: int, e: WALError, lsn: int) -> DecodeError:
        """The error ``apply_change`` raises for a row change of (spc, relnumber) at ``lsn`` whose tuple
        the plugin's row writer refused with ``e``, while one catalog serves every change: for
        ``_logical``'s commit path, which replays without a ``Transaction`` to call it with."""
        rel, _fate = self._relation_fate(self._shown, spc, relnumber)
        return _row_error(rel, e, lsn)

    def _relation_fate(self, catalog, spc: int, relnumber: int) -> tuple | None:
        """(relation stored in (spc, relnumber), what becomes of its changes: _ROW, _TOAST or
        _SKIP), kept while the catalog stays the same object; None when no relation is stored there."""
        if catalog is not self._fates_catalog:
            self._fates = {}
            self._fates_catalog = catalog
        key = (spc, relnumber)
        hit = self._fates.get(key)
        if hit is None:
            rel = catalog.relation_by_filenode(spc, relnumber)
            if rel is None:
                return None
            if (not relation_is_logically_logged(rel) or (rel.relrewrite and not self.include_rewrites)
                    or rel.relkind == RELKIND_SEQUENCE):
                fate = _SKIP
            elif rel.is_toast:
                fate = _TOAST
            else:
                fate = _ROW
            hit = self._fates[key] = (rel, fate)
        return hit

    def _apply_tuple_change(self, txn: Transaction, change: Change, toast_hash: dict, toast: ToastLookup | None) -> None:
        xid = txn.xid
        catalog, view = self._catalog_at(xid, change.lsn)
        hit = self._relation_fate(catalog, change.spcOid, change.relNumber)
        if hit is None:
            if change.newtuple is None and change.oldtuple is None:
                return
            where = f"{change.spcOid}/{catalog.database_oid}/{change.relNumber}"
            if self.history is not None:
                why = self.history.explain_unmapped(change.spcOid, change.relNumber, change.lsn, xid)
            else:
                why = f"not in the catalog snapshot taken at {format_lsn(catalog.lsn)}"
            self._skip(f"could not map filenumber {where} to a relation for the "
                       f"{_ACTION_NAMES.get(change.action, 'change')} of transaction {xid}", why, change.lsn,
                       cause=f"could not map filenumber {where} to a relation: changes skipped", xid=xid,
                       relation=f"file {where}")
            return
        rel, fate = hit
        if self._escalate is not None and fate is _ROW:
            self._check_watch(rel, change.lsn)
        if fate is _SKIP:
            return
        if fate is _TOAST:
            if change.action == REORDER_BUFFER_CHANGE_INSERT and change.newtuple is not None:
                self._append_chunk(toast_hash, rel, change)
            return
        if self.whole_old_rows and change.action != REORDER_BUFFER_CHANGE_INSERT \
                and rel.relreplident != REPLICA_IDENTITY_FULL:
            raise DecodeError(f"-o old-rows=full: the {_ACTION_NAMES[change.action]} of {rel.nspname}.{rel.relname} "
                              f"in transaction {xid} has no whole old row in the WAL: at wal_level logical a record "
                              "carries it only for a table with REPLICA IDENTITY FULL, and this one has REPLICA "
                              f"IDENTITY {_REPLICA_IDENTITY_NAMES.get(rel.relreplident, rel.relreplident)} (WAL "
                              "written at wal_level replica is decoded with whole old rows from its pages)",
                              lsn=change.lsn)
        if toast is not None:
            try:
                self.plugin.change_tuples(txn, change.lsn, view, rel, _ACTION_NAMES[change.action], change.newtuple,
                                          change.oldtuple, toast)
            except WALError as e:
                if e is toast.failure:
                    raise
                # a tuple the deformer refused (the plugin raises the reference's error for it)
                raise _row_error(rel, e, change.lsn) from None
            if change.clear_toast_afterwards:
                toast_hash.clear()
            return
        newvals = oldvals = None
        if change.newtuple is not None:
            newvals = self.tuple_values(rel, change.newtuple, change.lsn)
            newvals = self._toast_replace(rel, newvals, toast_hash, change.lsn)
        if change.oldtuple is not None:
            oldvals = self.tuple_values(rel, change.oldtuple, change.lsn)
        self.plugin.change(txn, change.lsn, view, rel, _ACTION_NAMES[change.action], newvals, oldvals)
        if change.clear_toast_afterwards:
            toast_hash.clear()

    def _apply_truncate(self, txn: Transaction, change: Change) -> None:
        xid = txn.xid
        _db, nrelids, flags = xl_heap_truncate.unpack_from(change.extra, 0)
        relids = struct.unpack_from(f"<{nrelids}I", change.extra, SizeOfHeapTruncate)
        catalog, view = self._catalog_at(xid, change.lsn)
        rels = []
        for relid in relids:
            rel = catalog.relation(relid)
            if rel is None:
                why = (f"not in the catalog snapshot taken at {format_lsn(self.catalog.lsn)}"
                       + (" nor among the relations the catalog changes decoded since created"
                          if self.history is not None else ""))
                self._skip(f"could not open relation with OID {relid} for the TRUNCATE of transaction {xid}",
                           why, change.lsn, cause=f"could not open relation with OID {relid}: TRUNCATE skipped",
                           xid=xid, relation=f"OID {relid}")
                continue
            if relation_is_logically_logged(rel):
                rels.append(rel)
        if rels:
            self.plugin.truncate(txn, change.lsn, view, rels, bool(flags & XLH_TRUNCATE_RESTART_SEQS),
                                 bool(flags & XLH_TRUNCATE_CASCADE))
