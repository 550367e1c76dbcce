"""The transaction tracker (``xact``): subtransactions' top-level transactions, ends, crashes.

Records are built by hand with the layouts of xact.h, heapam_xlog.h and standbydefs.h:
assignments from XLR_BLOCK_ID_TOPLEVEL_XID, XLOG_XACT_ASSIGNMENT and XLOG_HEAP2_NEW_CID's top_xid;
a commit, abort or prepare told to the listeners while the tracker still knows the transaction,
then forgotten; at XLOG_RUNNING_XACTS the open transactions older than the oldest running xid
(modulo 2^32) are the crashed ones.
"""

from __future__ import annotations

import struct

from waldecode.xact import TransactionListener, TransactionTracker
from waldecode.rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_STANDBY_ID, RM_XACT_ID
from waldecode.rmgr import xact as rm_xact
from waldecode.rmgr.heap import XLOG_HEAP2_NEW_CID, XLOG_HEAP_INSERT
from waldecode.rmgr.standby import XLOG_RUNNING_XACTS, xl_running_xacts
from waldecode.wal.xlogrecord import DecodedRecord

_lsn = iter(range(0x1000000, 0x2000000, 0x40))


def record(rmid: int, info: int, xid: int, main: bytes = b"", toplevel: int = 0) -> DecodedRecord:
    lsn = next(_lsn)
    return DecodedRecord(lsn, lsn + 0x30, 0x30, xid, 0, info, rmid, 0, (), main, 0, toplevel)


def commit(xid: int, subxacts=(), abort: bool = False) -> DecodedRecord:
    # xl_xact_commit {xact_time}, xinfo, xl_xact_subxacts {nsubxacts, subxacts[]}
    main = struct.pack("<qI", 0, rm_xact.XACT_XINFO_HAS_SUBXACTS) + struct.pack(f"<i{len(subxacts)}I", len(subxacts),
                                                                               *subxacts)
    info = (rm_xact.XLOG_XACT_ABORT if abort else rm_xact.XLOG_XACT_COMMIT) | rm_xact.XLOG_XACT_HAS_INFO
    return record(RM_XACT_ID, info, xid, main)


def running(oldest: int, next_xid: int) -> DecodedRecord:
    return record(RM_STANDBY_ID, XLOG_RUNNING_XACTS, 0, xl_running_xacts.pack(0, 0, 0, next_xid, oldest, next_xid - 1))


class Listener(TransactionListener):
    def __init__(self, tracker: TransactionTracker):
        self.tracker = tracker
        self.seen: list = []
        self.assigned: list = []

    def subxact_assigned(self, top, sub, lsn):
        self.assigned.append((top, sub))

    def txn_committed(self, ev):
        self.seen.append(("commit", ev.xid, ev.subxacts, {s: self.tracker.top(s) for s in ev.subxacts}))

    def txn_aborted(self, ev):
        self.seen.append(("abort", ev.xid, ev.subxacts, self.tracker.top_of.get(ev.xid)))

    def txn_prepared(self, ev):
        self.seen.append(("prepare", ev.xid))

    def running_xacts(self, ev):
        self.seen.append(("running", ev.oldest_running_xid, ev.crashed))


def test_assignments_ends_and_crashes():
    t = TransactionTracker(15)
    seen = Listener(t)
    t.subscribe(seen)
    t.process(record(RM_HEAP_ID, XLOG_HEAP_INSERT, 100))
    t.process(record(RM_HEAP_ID, XLOG_HEAP_INSERT, 101, toplevel=100))  # XLR_BLOCK_ID_TOPLEVEL_XID
    t.process(record(RM_HEAP2_ID, XLOG_HEAP2_NEW_CID, 102, struct.pack("<I", 100) + bytes(20)))  # top_xid
    assignment = struct.pack("<Ii2I", 100, 2, 103, 104)  # xl_xact_assignment {xtop, nsubxacts, xsub[]}
    t.process(record(RM_XACT_ID, rm_xact.XLOG_XACT_ASSIGNMENT, 0, assignment))
    assert {x: t.top(x) for x in (100, 101, 102, 103, 104, 105)} == {100: 100, 101: 100, 102: 100, 103: 100,
                                                                        104: 100, 105: 105}
    # what decode.c hands ReorderBufferAssignChild: not NEW_CID's top_xid (ReorderBufferAddNewTupleCids
    # only), so a reorder buffer listening keeps 102 a transaction of its own until the commit says more
    assert seen.assigned == [(100, 101), (100, 103), (100, 104)]
    t.process(commit(104, abort=True))  # a subtransaction rolled back: told with its top-level transaction known
    assert seen.seen[-1] == ("abort", 104, (), 100) and t.top(104) == 104
    t.process(record(RM_HEAP_ID, XLOG_HEAP_INSERT, 200))
    t.process(record(RM_HEAP_ID, XLOG_HEAP_INSERT, 300))
    t.process(commit(100, (101, 102, 103, 105)))  # 105: a subtransaction known only from the commit
    assert seen.seen[-1] == ("commit", 100, (101, 102, 103, 105), {101: 100, 102: 100, 103: 100, 105: 100})
    assert t.top_of == {} and t.open == {200, 300}
    # 200 never ended: the running-xacts record whose oldest running xid is 250 says it crashed
    assert t.process(running(250, 400)).crashed == {200}
    assert seen.seen[-1] == ("running", 250, frozenset({200})) and t.open == {300}


def test_crashes_across_the_xid_wraparound():
    t = TransactionTracker(15)
    for xid in (0xFFFFFFF0, 5, 10):
        t.process(record(RM_HEAP_ID, XLOG_HEAP_INSERT, xid))
    # xid 5 follows 0xFFFFFFF0 after the wraparound: older than 10, newer than 0xFFFFFFF0
    assert t.process(running(10, 11)).crashed == {0xFFFFFFF0, 5}
    assert t.open == {10}
