"""Multixact members at a recovery target: a base backup's ``pg_multixact`` and the records up to it.

Owns multixact.c's two SLRUs as GetMultiXactIdMembers reads them (``offsets``: one 32-bit
MultiXactOffset per multixact, its members running to the next multixact's offset, or to the
checkpoint's nextMultiOffset for the newest; ``members``: groups of 4 flag bytes, one MultiXactStatus
per member, then 4 xids, offset 0 never used) and multixact_redo's XLOG_MULTIXACT_CREATE_ID
(multixact.h xl_multixact_create: mid, moff, nmembers, then nmembers {xid, status}), whose members a
redo of the heap needs for the multixacts created after the backup's redo point.  The layout
constants and the SLRU segment reader are the data-directory reader's
(``catalog.datadir.clog``).  Hands ``members(multi)`` and ``update_xid(multi)``
(MultiXactIdGetUpdateXid) to the visibility of redone tuples.

Which source answers, for the backup's redo checkpoint (``backup_label``): a CREATE_ID record read;
else, for a multixact older than the checkpoint's nextMulti, the backup's files (the checkpoint
flushed them, CheckPointMultiXact); a newer one whose record was not read does not exist yet at the
target, and one older than the oldest kept (the checkpoint's oldestMulti, XLOG_MULTIXACT_TRUNCATE_ID)
no longer exists: both are errors, as GetMultiXactIdMembers raises them ("has not been created yet",
"does no longer exist").
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ..catalog.datadir.clog import TransactionStatus
from ..errors import CatalogError, CorruptRecordError, format_lsn
from ..pg.transam import InvalidTransactionId, multixact_precedes
from ..rmgr import RM_MULTIXACT_ID
from ..rmgr.multixact import (
    XLOG_MULTIXACT_CREATE_ID,
    XLOG_MULTIXACT_TRUNCATE_ID,
    MultiXactMember,
    MultiXactStatusForUpdate,
    MultiXactStatusUpdate,
    xl_multixact_create,
    xl_multixact_truncate,
)
from .backup_label import RedoCheckpoint
from .clog import files_control

__all__ = ["Member", "MultiXacts", "is_update", "MULTIXACT_STATUS_NAMES"]

# src/include/access/multixact.h: FirstMultiXactId, MaxMultiXactId
FirstMultiXactId = 1
MaxMultiXactId = 0xFFFFFFFF

#: MultiXactStatus as pg_get_multixact_members() names it (multixact.c mxstatus_to_string)
MULTIXACT_STATUS_NAMES = {0: "keysh", 1: "sh", 2: "fornokeyupd", 3: "forupd", 4: "nokeyupd", 5: "upd"}


class Member(NamedTuple):
    """multixact.h MultiXactMember."""

    xid: int
    status: int  # MultiXactStatus


def is_update(status: int) -> bool:
    """multixact.h ISUPDATE_from_mxstatus: the member updated or deleted the tuple, not just locked it."""
    return status > MultiXactStatusForUpdate


class MultiXacts:
    """The multixacts of a base backup redone up to the records given to ``redo``.

    ``MultiXacts(backup, checkpoint)``: ``backup`` a path or a ``DataFiles``, ``checkpoint`` its redo
    checkpoint (``backup_label.redo_checkpoint``).  Feed every record from the redo point to the
    target, in LSN order, to ``redo``; ask ``members`` or ``update_xid`` at any point between.
    """

    def __init__(self, backup, checkpoint: RedoCheckpoint):
        self.checkpoint = checkpoint
        self.files = TransactionStatus(backup, files_control(checkpoint))  # its SLRU segment reader
        self.created: dict[int, tuple[Member, ...]] = {}  # CREATE_ID records read
        self.next_multi = checkpoint.next_multi  # the files know the multixacts before it
        self.oldest_multi = checkpoint.oldest_multi
        self.newest_read = None  # the newest multixact of the records read

    def redo(self, rec) -> None:
        """Take one record: CREATE_ID's members, TRUNCATE_ID's oldest multixact; the page-zeroing
        records change nothing the answers depend on."""
        if rec.xl_rmid != RM_MULTIXACT_ID:
            return
        info = rec.xl_info & 0xF0
        data = rec.main_data
        if info == XLOG_MULTIXACT_CREATE_ID:
            if len(data) < xl_multixact_create.size:
                raise CorruptRecordError(f"CREATE_ID record of {len(data)} bytes, fewer than "
                                         f"{xl_multixact_create.size}", lsn=rec.lsn)
            mid, _moff, nmembers = xl_multixact_create.unpack_from(data)
            need = xl_multixact_create.size + nmembers * MultiXactMember.size
            if nmembers < 1 or len(data) < need:
                raise CorruptRecordError(f"CREATE_ID record of multixact {mid}: {nmembers} members in "
                                         f"{len(data)} bytes", lsn=rec.lsn)
            self.created[mid] = tuple(
                Member(*MultiXactMember.unpack_from(data, xl_multixact_create.size + i * MultiXactMember.size))
                for i in range(nmembers))
            if self.newest_read is None or multixact_precedes(self.newest_read, mid):
                self.newest_read = mid
        elif info == XLOG_MULTIXACT_TRUNCATE_ID:
            if len(data) < xl_multixact_truncate.size:
                raise CorruptRecordError(f"TRUNCATE_ID record of {len(data)} bytes, fewer than "
                                         f"{xl_multixact_truncate.size}", lsn=rec.lsn)
            # xl_multixact_truncate.endTruncOff: the oldest multixact kept
            end_trunc_off = xl_multixact_truncate.unpack_from(data)[2]
            if multixact_precedes(self.oldest_multi, end_trunc_off):
                self.oldest_multi = end_trunc_off

    def members(self, multi: int) -> list[Member]:
        """GetMultiXactIdMembers: the members of ``multi`` in the order they were recorded."""
        created = self.created.get(multi)
        if created is not None:
            return list(created)
        if multi < FirstMultiXactId:
            raise CatalogError(f"invalid MultiXactId {multi}")
        if multixact_precedes(multi, self.oldest_multi):
            raise CatalogError(f"MultiXactId {multi} does no longer exist -- apparent wraparound "
                               f"(the oldest kept is {self.oldest_multi})")
        if not multixact_precedes(multi, self.next_multi):
            raise CatalogError(f"MultiXactId {multi} has not been created yet -- apparent wraparound "
                               f"(no CREATE_ID record of it was read; the backup's files end before "
                               f"{self.next_multi})")
        return self._from_files(multi)

    def update_xid(self, multi: int) -> int:
        """MultiXactIdGetUpdateXid: the member that updated or deleted the tuple, or InvalidTransactionId."""
        for m in self.members(multi):
            if is_update(m.status):
                return m.xid
        return InvalidTransactionId

    def _from_files(self, multi: int) -> list[Member]:
        offsets_dir = os.path.join(self.files.pgdata, "pg_multixact", "offsets")
        nxt = multi + 1 if multi < MaxMultiXactId else FirstMultiXactId
        start = self.files._multixact_offset(multi)
        end = self.checkpoint.next_multi_offset if nxt == self.next_multi else self.files._multixact_offset(nxt)
        if not start or not end:  # the page is missing, or the entry was never written (0)
            raise CatalogError(f"{offsets_dir}: the member offsets of multixact {multi} are missing "
                               f"(offsets {start}, {end}); the checkpoint at {format_lsn(self.checkpoint.lsn)} knows "
                               f"multixacts before {self.next_multi}")
        count = (end - start) & 0xFFFFFFFF
        # every member of a multixact before nextMulti lies before nextMultiOffset
        if count == 0 or count > (self.checkpoint.next_multi_offset - start) & 0xFFFFFFFF:
            raise CatalogError(f"{offsets_dir}: impossible member range {start}..{end} for multixact {multi}")
        out = []
        for i in range(count):
            offset = (start + i) & 0xFFFFFFFF
            path, member = self.files._multixact_member(offset)
            if member is None:
                raise CatalogError(f"{path}: member {offset} of multixact {multi} is missing")
            status, xid = member
            if xid == InvalidTransactionId:
                if offset == 0:  # slot zero is never used: the offsets wrapped around past it
                    continue
                raise CatalogError(f"{path}: member {offset} of multixact {multi} has no xid")
            if status > MultiXactStatusUpdate:  # MXACT_MEMBER_BITS_PER_XACT: one flag byte per member
                raise CatalogError(f"{path}: member {offset} of multixact {multi} has status {status}, "
                                   f"not a MultiXactStatus")
            out.append(Member(xid, status))
        return out
