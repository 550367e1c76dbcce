"""Transaction status as a stopped cluster's files hold it: ``pg_xact/`` and ``pg_multixact/``.

Owns src/backend/access/transam/clog.c's and multixact.c's SLRU layouts (TransactionIdGetStatus,
MultiXactIdGetUpdateXid) and heapam_visibility.c's question reduced to a snapshot taken after
every transaction in the files ended (``tuple_is_visible``).  Transactions still "in progress"
(a crash) count as not committed, as after recovery.  Hands visibility to ``heapscan``.
"""

from __future__ import annotations

import os
import struct

from ...heap.heaptuple import (  # src/include/access/htup_details.h: t_infomask bits
    HEAP_LOCK_MASK,
    HEAP_XMAX_COMMITTED,
    HEAP_XMAX_EXCL_LOCK,
    HEAP_XMAX_INVALID,
    HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY,
    HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID,
)
from ...pg.transam import (
    BootstrapTransactionId,
    FirstNormalTransactionId,
    FrozenTransactionId,
    InvalidTransactionId,
    multixact_precedes,
    xid_precedes,
)
from ..model import CatalogError
from .control import BLCKSZ
from .files import data_files

# src/include/access/clog.h, src/backend/access/transam/clog.c
TRANSACTION_STATUS_IN_PROGRESS = 0x00
TRANSACTION_STATUS_COMMITTED = 0x01
TRANSACTION_STATUS_ABORTED = 0x02
TRANSACTION_STATUS_SUB_COMMITTED = 0x03
CLOG_BITS_PER_XACT = 2
CLOG_XACTS_PER_BYTE = 4
CLOG_XACTS_PER_PAGE = BLCKSZ * CLOG_XACTS_PER_BYTE
# src/include/access/slru.h
SLRU_PAGES_PER_SEGMENT = 32

# src/backend/access/transam/multixact.c (MultiXactOffset is 32 bits in 13-18)
MULTIXACT_OFFSETS_PER_PAGE = BLCKSZ // 4
MULTIXACT_FLAGBYTES_PER_GROUP = 4
MULTIXACT_MEMBERS_PER_MEMBERGROUP = MULTIXACT_FLAGBYTES_PER_GROUP
MULTIXACT_MEMBERGROUP_SIZE = 4 * MULTIXACT_MEMBERS_PER_MEMBERGROUP + MULTIXACT_FLAGBYTES_PER_GROUP
MULTIXACT_MEMBERGROUPS_PER_PAGE = BLCKSZ // MULTIXACT_MEMBERGROUP_SIZE
MULTIXACT_MEMBERS_PER_PAGE = MULTIXACT_MEMBERGROUPS_PER_PAGE * MULTIXACT_MEMBERS_PER_MEMBERGROUP
FirstMultiXactId = 1
# src/include/access/multixact.h: MultiXactStatus; above ForUpdate the member updated the tuple
MultiXactStatusForUpdate = 0x03


class TransactionStatus:
    """Commit status of transaction IDs from ``pg_xact/`` (clog.c) and update xids of multixacts
    from ``pg_multixact/`` (multixact.c), as the files hold them.

    ``clog_lookups`` counts xids whose status had to be read from pg_xact (the tuple had no hint bit).
    """

    def __init__(self, pgdata, control):
        self.files = data_files(pgdata)  # a path or a DataFiles
        self.pgdata = self.files.root
        self.control = control
        self._segments: dict[tuple[str, int], bytes | None] = {}
        self.clog_lookups = 0
        self.multixact_lookups = 0

    def _segment(self, subdir: str, segno: int) -> tuple[str, bytes | None]:
        path = os.path.join(self.pgdata, subdir, f"{segno:04X}")
        key = (subdir, segno)
        if key not in self._segments:
            try:
                self._segments[key] = self.files.read(path)
            except FileNotFoundError:
                self._segments[key] = None
            except OSError as e:
                raise CatalogError(f"cannot read {path}: {e.strerror}") from None
        return path, self._segments[key]

    def xid_status(self, xid: int) -> int:
        """TransactionIdGetStatus: TRANSACTION_STATUS_* of ``xid`` in pg_xact (2 bits per xid).

        An xid whose CLOG page never reached the disk (at or after the checkpoint's nextXid)
        reads as in progress; a missing page for an older xid is an error naming the file.
        """
        self.clog_lookups += 1
        pageno = xid // CLOG_XACTS_PER_PAGE
        segno = pageno // SLRU_PAGES_PER_SEGMENT
        byte = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + (xid % CLOG_XACTS_PER_PAGE) // CLOG_XACTS_PER_BYTE
        path, data = self._segment("pg_xact", segno)
        if data is None or byte >= len(data):
            if self._after_checkpoint(xid):
                return TRANSACTION_STATUS_IN_PROGRESS
            what = "is missing" if data is None else f"has {len(data)} bytes, too few"
            raise CatalogError(f"{path} {what}: cannot read the status of transaction {xid}")
        return (data[byte] >> ((xid % CLOG_XACTS_PER_BYTE) * CLOG_BITS_PER_XACT)) & 0x03

    def did_commit(self, xid: int) -> bool:
        """TransactionIdDidCommit as of the files: in-progress and sub-committed count as not committed."""
        if xid == BootstrapTransactionId or xid == FrozenTransactionId:
            return True
        if xid < FirstNormalTransactionId:
            return False
        return self.xid_status(xid) == TRANSACTION_STATUS_COMMITTED

    def _after_checkpoint(self, xid: int) -> bool:
        next_xid = self.control.checkPointCopy.nextXid & 0xFFFFFFFF
        return not xid_precedes(xid, next_xid)

    def multixact_update_xid(self, multi: int) -> int:
        """MultiXactIdGetUpdateXid: the member that updated or deleted the tuple, or InvalidTransactionId.

        pg_multixact/offsets: one 32-bit MultiXactOffset per multixact; the members from that
        offset to the next multixact's (or the checkpoint's nextMultiOffset) are in
        pg_multixact/members, in groups of 4 flag bytes and 4 xids.  A multixact created after
        the checkpoint whose pages never reached the disk (a crash) counts as having no updater.
        """
        self.multixact_lookups += 1
        cp = self.control.checkPointCopy
        before_checkpoint = multixact_precedes(multi, cp.nextMulti)
        nxt = multi + 1 if multi < 0xFFFFFFFF else FirstMultiXactId
        start = self._multixact_offset(multi)
        end = cp.nextMultiOffset if nxt == cp.nextMulti else self._multixact_offset(nxt)
        if not start or not end:  # missing, or 0: not (yet) written
            if not before_checkpoint:
                return InvalidTransactionId
            raise CatalogError(f"{self.pgdata}/pg_multixact/offsets: the member offsets of multixact {multi} "
                               f"are missing (offsets {start}, {end})")
        count = (end - start) & 0xFFFFFFFF
        if count > 0x10000:
            raise CatalogError(f"{self.pgdata}/pg_multixact/offsets: impossible member range {start}..{end} "
                               f"for multixact {multi}")
        for i in range(count):
            offset = (start + i) & 0xFFFFFFFF
            if offset == 0:  # offset 0 is never used (wraparound skips it)
                continue
            path, member = self._multixact_member(offset)
            if member is None:
                if not before_checkpoint:
                    return InvalidTransactionId
                raise CatalogError(f"{path}: members of multixact {multi} are missing")
            status, xid = member
            if status > MultiXactStatusForUpdate:
                return xid
        return InvalidTransactionId

    def _multixact_member(self, offset: int) -> tuple[str, tuple[int, int] | None]:
        """(the pg_multixact/members file, (status flag byte, xid)) of the member at ``offset``: members
        are stored in groups of 4 flag bytes and 4 xids (multixact.c); None when its page is not in the
        files."""
        pageno = offset // MULTIXACT_MEMBERS_PER_PAGE
        group = (offset // MULTIXACT_MEMBERS_PER_MEMBERGROUP) % MULTIXACT_MEMBERGROUPS_PER_PAGE
        in_group = offset % MULTIXACT_MEMBERS_PER_MEMBERGROUP
        pos = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + group * MULTIXACT_MEMBERGROUP_SIZE
        path, data = self._segment(os.path.join("pg_multixact", "members"), pageno // SLRU_PAGES_PER_SEGMENT)
        if data is None or pos + MULTIXACT_MEMBERGROUP_SIZE > len(data):
            return path, None
        return path, (data[pos + in_group],
                      struct.unpack_from("<I", data, pos + MULTIXACT_FLAGBYTES_PER_GROUP + 4 * in_group)[0])

    def _multixact_offset(self, multi: int) -> int | None:
        """pg_multixact/offsets entry of ``multi``; None when its page is not in the files."""
        pageno = multi // MULTIXACT_OFFSETS_PER_PAGE
        pos = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + (multi % MULTIXACT_OFFSETS_PER_PAGE) * 4
        _path, data = self._segment(os.path.join("pg_multixact", "offsets"), pageno // SLRU_PAGES_PER_SEGMENT)
        if data is None or pos + 4 > len(data):
            return None
        return struct.unpack_from("<I", data, pos)[0]


def tuple_is_visible(t_xmin: int, t_xmax: int, t_infomask: int, xact: TransactionStatus) -> bool:
    """Is a heap tuple visible to a snapshot taken after every transaction in the files ended?

    heapam_visibility.c HeapTupleSatisfiesMVCC reduced to that snapshot: xmin committed
    (hint bit HEAP_XMIN_COMMITTED, frozen, or CLOG) and xmax invalid, a locker only, or
    not committed; for a multixact xmax, its updating member decides.  Transactions still
    "in progress" in the files (a crash) are taken as not committed.
    """
    if not t_infomask & HEAP_XMIN_COMMITTED:  # HEAP_XMIN_FROZEN includes HEAP_XMIN_COMMITTED
        if t_infomask & HEAP_XMIN_INVALID:
            return False
        if not xact.did_commit(t_xmin):
            return False
    if t_infomask & HEAP_XMAX_INVALID:
        return True
    # HEAP_XMAX_IS_LOCKED_ONLY (covers HEAP_LOCKED_UPGRADED, which has HEAP_XMAX_LOCK_ONLY)
    if t_infomask & HEAP_XMAX_LOCK_ONLY or \
            (t_infomask & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK)) == HEAP_XMAX_EXCL_LOCK:
        return True
    if t_infomask & HEAP_XMAX_IS_MULTI:
        updater = xact.multixact_update_xid(t_xmax)
        return updater == InvalidTransactionId or not xact.did_commit(updater)
    if t_infomask & HEAP_XMAX_COMMITTED:
        return False
    if t_xmax == InvalidTransactionId:
        return True
    return not xact.did_commit(t_xmax)
