"""Transactions as the WAL tells them: the one transaction tracker of the decoding stages.

Owns the bookkeeping of decode.c and reorderbuffer.c that holds no changes: which top-level
transaction each subtransaction belongs to (XLR_BLOCK_ID_TOPLEVEL_XID, XLOG_XACT_ASSIGNMENT,
and the top_xid of XLOG_HEAP2_NEW_CID), the ends xact records tell (commit, abort, prepare,
with their subtransactions: ``xact_event``), and which transactions still open at an
XLOG_RUNNING_XACTS precede its oldest running xid and so crashed.  The decoder feeds it every
record once; it hands each assignment and end to its listeners (the reorder buffer, the catalog
history) as it reads it, so that they never learn any of it on their own.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .pg.transam import xid_precedes
from .rmgr import RM_HEAP2_ID, RM_STANDBY_ID, RM_XACT_ID
from .rmgr import xact as rm_xact
from .rmgr.heap import XLOG_HEAP2_NEW_CID, XLOG_HEAP_OPMASK
from .rmgr.standby import XLOG_RUNNING_XACTS, xl_running_xacts

_u32 = struct.Struct("<I")


class XactEvent(NamedTuple):
    """What an xact record says about a transaction's end (decode.c xact_decode, per record)."""

    info: int  # XLOG_XACT_COMMIT, _ABORT, _PREPARE, _COMMIT_PREPARED, _ABORT_PREPARED
    xid: int  # the top-level transaction (the prepared one for the *_PREPARED records)
    lsn: int
    end_lsn: int
    subxacts: tuple
    dbId: int
    gid: str
    parsed: object  # rmgr.xact.ParsedXact


def xact_event(rec, major: int) -> XactEvent | None:
    """The end of a transaction that a record tells (None for other records, assignments, invalidations)."""
    if rec.xl_rmid != RM_XACT_ID:
        return None
    info = rec.xl_info & rm_xact.XLOG_XACT_OPMASK
    if info in (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED, rm_xact.XLOG_XACT_ABORT,
                rm_xact.XLOG_XACT_ABORT_PREPARED):
        is_commit = info in (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED)
        parsed = rm_xact.parse_commit_or_abort(rec.xl_info, rec.main_data, major, is_commit)
    elif info == rm_xact.XLOG_XACT_PREPARE:
        parsed, _initfileinval = rm_xact.parse_prepare(rec.main_data, major)
    else:
        return None
    return XactEvent(info, parsed.twophase_xid or rec.xl_xid, rec.lsn, rec.end_lsn, tuple(parsed.subxacts),
                     parsed.dbId, parsed.twophase_gid or "", parsed)


class RunningXacts(NamedTuple):
    """An XLOG_RUNNING_XACTS record, and the transactions it shows to have crashed: open ones (as far as
    the records read tell) older than its oldest running xid, which ended without a commit or abort."""

    lsn: int
    end_lsn: int
    next_xid: int
    oldest_running_xid: int
    crashed: frozenset


_COMMITS = (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED)
_ABORTS = (rm_xact.XLOG_XACT_ABORT, rm_xact.XLOG_XACT_ABORT_PREPARED)


class TransactionListener:
    """What a listener of the tracker is told; each method does nothing unless overridden.

    Each is called while the tracker still knows the transaction (``top_of``); the tracker
    forgets what ended afterwards."""

    def subxact_assigned(self, top: int, sub: int, lsn: int) -> None:
        """``sub`` was announced as a subtransaction of ``top`` by the record at ``lsn``
        (XLR_BLOCK_ID_TOPLEVEL_XID or XLOG_XACT_ASSIGNMENT: ReorderBufferAssignChild's callers)."""

    def txn_committed(self, ev: XactEvent) -> None:
        """COMMIT or COMMIT PREPARED."""

    def txn_aborted(self, ev: XactEvent) -> None:
        """ABORT (of a transaction or a subtransaction) or ROLLBACK PREPARED."""

    def txn_prepared(self, ev: XactEvent) -> None:
        """PREPARE TRANSACTION: the transaction stays open until COMMIT/ROLLBACK PREPARED."""

    def running_xacts(self, ev: RunningXacts) -> None:
        """An XLOG_RUNNING_XACTS record, with the transactions it shows to have crashed."""


class TransactionTracker:
    """The transactions of the records read: subtransactions' top-level transactions, the ones still
    open, and their ends, told to ``TransactionListener``s as the records are taken."""

    def __init__(self, major: int):
        self.major = major
        self.top_of: dict[int, int] = {}  # subtransaction -> top-level transaction, while open
        self.open: set[int] = set()  # (sub)transactions seen and not ended
        self.listeners: list[TransactionListener] = []
        self._last = (None, None)  # the last xact record taken and its event (``event_of``)

    def subscribe(self, listener: TransactionListener) -> None:
        self.listeners.append(listener)

    def event_of(self, rec) -> XactEvent | None:
        """``xact_event(rec)``, read once: the decoder asks of the record the tracker has just taken."""
        last_rec, ev = self._last
        return ev if rec is last_rec else xact_event(rec, self.major)

    def top(self, xid: int) -> int:
        """The top-level transaction of ``xid`` (itself when it is one, or when that is not known)."""
        return self.top_of.get(xid, xid)

    def saw(self, xid: int) -> None:
        """A record of ``xid`` was read (for a reader that does not hand over every record whole)."""
        if xid:
            self.open.add(xid)

    def assign(self, top: int, sub: int, lsn: int | None = None) -> None:
        """``sub`` is a subtransaction of ``top``.  With the ``lsn`` of the record that announced it,
        the listeners are told (ReorderBufferAssignChild); without, only the tracker learns it:
        XLOG_HEAP2_NEW_CID's top_xid and a commit's subxacts are no announcement in decode.c."""
        if sub and top and sub != top:
            self.top_of[sub] = top
            self.open.add(top)
            self.open.add(sub)
            if lsn is not None:
                for listener in self.listeners:
                    listener.subxact_assigned(top, sub, lsn)

    def process(self, rec) -> XactEvent | RunningXacts | None:
        """Take one record; the transaction end or running-xacts record it is, if so."""
        xid = rec.xl_xid
        if xid:
            self.open.add(xid)
        if rec.toplevel_xid:
            self.assign(rec.toplevel_xid, xid, rec.lsn)
        rmid = rec.xl_rmid
        if rmid == RM_XACT_ID:
            return self._xact(rec)
        if rmid == RM_HEAP2_ID:
            if rec.xl_info & XLOG_HEAP_OPMASK == XLOG_HEAP2_NEW_CID:
                self.assign(_u32.unpack_from(rec.main_data, 0)[0], xid)  # xl_heap_new_cid.top_xid
        elif rmid == RM_STANDBY_ID and rec.xl_info & 0xF0 == XLOG_RUNNING_XACTS:
            return self._running(rec)
        return None

    def _xact(self, rec) -> XactEvent | None:
        info = rec.xl_info & rm_xact.XLOG_XACT_OPMASK
        if info == rm_xact.XLOG_XACT_ASSIGNMENT:
            # 13 learns subtransactions from here; 14+ from XLR_BLOCK_ID_TOPLEVEL_XID as well
            xtop, nsubxacts = rm_xact.xl_xact_assignment.unpack_from(rec.main_data, 0)
            for sub in struct.unpack_from(f"<{nsubxacts}I", rec.main_data, rm_xact.xl_xact_assignment.size):
                self.assign(xtop, sub, rec.lsn)
            return None
        ev = xact_event(rec, self.major)
        self._last = (rec, ev)
        if ev is None:
            return None
        if ev.info in _COMMITS:
            for sub in ev.subxacts:
                self.assign(ev.xid, sub)
            for listener in self.listeners:
                listener.txn_committed(ev)
            self._forget(ev.xid, ev.subxacts)
        elif ev.info in _ABORTS:
            for listener in self.listeners:
                listener.txn_aborted(ev)
            self._forget(ev.xid, ev.subxacts)
        else:  # XLOG_XACT_PREPARE: still open until COMMIT / ROLLBACK PREPARED
            for sub in ev.subxacts:
                self.assign(ev.xid, sub)
            for listener in self.listeners:
                listener.txn_prepared(ev)
        return ev

    def _forget(self, xid: int, subxacts) -> None:
        for x in (xid, *subxacts):
            self.open.discard(x)
            self.top_of.pop(x, None)

    def _running(self, rec) -> RunningXacts:
        _xcnt, _subxcnt, _overflow, next_xid, oldest, _latest = xl_running_xacts.unpack_from(rec.main_data, 0)
        crashed = frozenset(x for x in self.open if xid_precedes(x, oldest))
        ev = RunningXacts(rec.lsn, rec.end_lsn, next_xid, oldest, crashed)
        for listener in self.listeners:
            listener.running_xacts(ev)
        for x in crashed:
            self.open.discard(x)
            self.top_of.pop(x, None)
        return ev
