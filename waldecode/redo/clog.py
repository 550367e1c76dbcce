"""Transaction status at a recovery target: a base backup's ``pg_xact`` and the xact records up to it.

Owns what clog.c's redo does to the commit log between a backup's redo point and a target:
xact.c xact_redo_commit / xact_redo_abort set a transaction and its subtransactions (the record's
subxacts) committed or aborted (TransactionIdCommitTree, TransactionIdAbortTree; COMMIT PREPARED
and ROLLBACK PREPARED alike, for the prepared xid), and CLOG_TRUNCATE moves the oldest xid whose
status is kept.  The files are read by the data-directory reader's one copy of clog.c's layout
(``catalog.datadir.clog.TransactionStatus``: 2 bits per xid, 32 pages of 8 KB per segment file
named in hex).  Hands ``status(xid)`` and ``did_commit(xid)`` to the visibility of redone tuples.

Which source answers, for the checkpoint the backup's redo starts from (``backup_label``):

* an end record read (a commit or abort at or before the target): that end;
* an xid at or after the checkpoint's nextXid and no end read: in progress (it was assigned after
  the redo point, so its end, if any before the target, is among the records read);
* an xid older than the checkpoint's oldestXid (older than any unfrozen xid of any table, its
  pg_xact page possibly truncated, vac_truncate_clog): committed, as the frozen tuples that alone can
  still carry it are (heapam_visibility.c reads HEAP_XMIN_FROZEN before any clog lookup);
* any other xid: the backup's ``pg_xact``.  The checkpoint flushed every page holding an end before
  its redo point (CheckPointCLOG; a commit delays the checkpoint until its clog bits are set,
  DELAY_CHKPT_START in RecordTransactionCommit).

A sub-committed xid (TransactionIdSetTreeStatus's transient state for subtransactions on another
clog page than their parent's) is not committed (transam.c TransactionIdDidCommit, whose
pg_subtrans lookup finds nothing after a restart); the commit record, once read, makes it
committed.  Permanent xids as transam.c TransactionLogFetch: bootstrap and frozen committed,
invalid aborted.
"""

from __future__ import annotations

import enum
import struct
from types import SimpleNamespace

from ..catalog.datadir.clog import (
    TRANSACTION_STATUS_ABORTED,
    TRANSACTION_STATUS_COMMITTED,
    TRANSACTION_STATUS_IN_PROGRESS,
    TRANSACTION_STATUS_SUB_COMMITTED,
    TransactionStatus,
)
from ..errors import CorruptRecordError
from ..pg.transam import BootstrapTransactionId, FirstNormalTransactionId, FrozenTransactionId, xid_precedes
from ..rmgr import RM_CLOG_ID, RM_XACT_ID
from ..rmgr import xact as rm_xact
from ..rmgr.clog import CLOG_TRUNCATE, xl_clog_truncate, xl_clog_truncate_17
from ..xact import xact_event
from .backup_label import RedoCheckpoint

__all__ = ["CommitLog", "XidStatus", "files_control"]


class XidStatus(enum.IntEnum):
    """src/include/access/clog.h: XidStatus, the 2 bits pg_xact keeps per xid."""

    IN_PROGRESS = TRANSACTION_STATUS_IN_PROGRESS
    COMMITTED = TRANSACTION_STATUS_COMMITTED
    ABORTED = TRANSACTION_STATUS_ABORTED
    SUB_COMMITTED = TRANSACTION_STATUS_SUB_COMMITTED


_COMMITS = (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED)
_ABORTS = (rm_xact.XLOG_XACT_ABORT, rm_xact.XLOG_XACT_ABORT_PREPARED)


def files_control(checkpoint: RedoCheckpoint) -> SimpleNamespace:
    """The part of a control file the data-directory readers of pg_xact and pg_multixact look at
    (``checkPointCopy``), filled from the backup's redo checkpoint rather than its pg_control, which
    the backup copied last and may be a later checkpoint's."""
    return SimpleNamespace(checkPointCopy=SimpleNamespace(
        nextXid=checkpoint.next_xid, nextMulti=checkpoint.next_multi,
        nextMultiOffset=checkpoint.next_multi_offset, oldestXid=checkpoint.oldest_xid,
        oldestMulti=checkpoint.oldest_multi))


class CommitLog:
    """The commit log of a base backup redone up to the records given to ``redo``.

    ``CommitLog(backup, checkpoint, major)``: ``backup`` is the backup's directory (a path or a
    ``catalog.datadir.files.DataFiles``), ``checkpoint`` its redo checkpoint
    (``backup_label.redo_checkpoint``).  Feed every record from the checkpoint's redo point to the
    target, in LSN order, to ``redo``; ask ``status`` or ``did_commit`` at any point between.
    """

    def __init__(self, backup, checkpoint: RedoCheckpoint, major: int):
        self.major = major
        self.checkpoint = checkpoint
        self.files = TransactionStatus(backup, files_control(checkpoint))
        self.ended: dict[int, XidStatus] = {}  # the ends read in the WAL
        self.next_xid = checkpoint.next_xid32
        self.oldest_xid = checkpoint.oldest_xid

    def redo(self, rec) -> None:
        """Take one record: the xact records' ends, CLOG_TRUNCATE's oldest xid; others are no concern here."""
        if rec.xl_rmid == RM_XACT_ID:
            info = rec.xl_info & rm_xact.XLOG_XACT_OPMASK
            if info not in _COMMITS and info not in _ABORTS:
                return  # PREPARE leaves it in progress; ASSIGNMENT and INVALIDATIONS touch no status
            try:
                ev = xact_event(rec, self.major)
            except (IndexError, ValueError, struct.error) as e:  # lengths the record does not hold
                raise CorruptRecordError(f"transaction end record does not parse: {e}", lsn=rec.lsn) from None
            status = XidStatus.COMMITTED if info in _COMMITS else XidStatus.ABORTED
            for xid in (ev.xid, *ev.subxacts):
                if xid:
                    self.ended[xid] = status
        elif rec.xl_rmid == RM_CLOG_ID and rec.xl_info & 0xF0 == CLOG_TRUNCATE:
            layout = xl_clog_truncate_17 if self.major >= 17 else xl_clog_truncate
            if len(rec.main_data) < layout.size:
                raise CorruptRecordError(f"CLOG_TRUNCATE record of {len(rec.main_data)} bytes, fewer than "
                                         f"{layout.size}", lsn=rec.lsn)
            oldest = layout.unpack_from(rec.main_data)[1]
            if xid_precedes(self.oldest_xid, oldest):
                self.oldest_xid = oldest

    def status(self, xid: int) -> XidStatus:
        """The status of ``xid`` as of the records taken (see the module's docstring for which source)."""
        if xid < FirstNormalTransactionId:
            # transam.c TransactionLogFetch: no clog lookup for the permanent xids
            if xid in (BootstrapTransactionId, FrozenTransactionId):
                return XidStatus.COMMITTED
            return XidStatus.ABORTED
        ended = self.ended.get(xid)
        if ended is not None:
            return ended
        if not xid_precedes(xid, self.next_xid):
            return XidStatus.IN_PROGRESS
        if xid_precedes(xid, self.oldest_xid):
            return XidStatus.COMMITTED
        return XidStatus(self.files.xid_status(xid))

    def did_commit(self, xid: int) -> bool:
        """TransactionIdDidCommit at the target: committed, not sub-committed, in progress or aborted."""
        return self.status(xid) == XidStatus.COMMITTED
