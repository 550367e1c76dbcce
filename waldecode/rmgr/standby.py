"""Standby resource manager (RM_STANDBY_ID 8): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/standbydesc.c for 13-18 (layouts from
src/include/storage/standbydefs.h and src/include/storage/sinval.h), including
``standby_desc_invalidations``, which the xact and (18) heap descs share.
Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/storage/standbydefs.h
XLOG_STANDBY_LOCK = 0x00
XLOG_RUNNING_XACTS = 0x10
XLOG_INVALIDATIONS = 0x20

# xl_standby_locks {int nlocks; xl_standby_lock locks[] {xid, dbOid, relOid}}
int32 = struct.Struct("<i")
xl_standby_lock = struct.Struct("<III")
# xl_running_xacts {xcnt, subxcnt, subxid_overflow, nextXid, oldestRunningXid,
#                   latestCompletedXid, xids[]}
xl_running_xacts = struct.Struct("<iiB3xIII")
# xl_invalidations {dbId, tsId, relcacheInitFileInval, nmsgs, msgs[] @16}
xl_invalidations = struct.Struct("<IIB3xi")

# src/include/storage/sinval.h: SharedInvalidationMessage ids and layouts (16 bytes)
SHAREDINVALCATALOG_ID = -1
SHAREDINVALRELCACHE_ID = -2
SHAREDINVALSMGR_ID = -3
SHAREDINVALRELMAP_ID = -4
SHAREDINVALSNAPSHOT_ID = -5
SHAREDINVALRELSYNC_ID = -6  # 18+
SizeOfSharedInvalidationMessage = 16
# {int8 id; ...; Oid dbId @4; Oid catId / relId / relid / hashValue @8}
SharedInvalidationMessage = struct.Struct("<b3xII4x")

_NAMES = {XLOG_STANDBY_LOCK: "LOCK", XLOG_RUNNING_XACTS: "RUNNING_XACTS",
          XLOG_INVALIDATIONS: "INVALIDATIONS"}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def standby_desc_invalidations(msgs: bytes, dbId: int, tsId: int, relcacheInitFileInval: bool,
                               major: int) -> str:
    """standby_desc_invalidations: ``msgs`` holds nmsgs * 16 bytes of messages."""
    nmsgs = len(msgs) // SizeOfSharedInvalidationMessage
    if nmsgs <= 0:
        return ""
    out = []
    if relcacheInitFileInval:
        out.append("; relcache init file inval dbid %u tsid %u" % (dbId, tsId))
    out.append("; inval msgs:")
    for i in range(nmsgs):
        msg_id, msg_db, msg_obj = SharedInvalidationMessage.unpack_from(msgs, i * SizeOfSharedInvalidationMessage)
        if msg_id >= 0:
            out.append(" catcache %d" % msg_id)
        elif msg_id == SHAREDINVALCATALOG_ID:
            out.append(" catalog %u" % msg_obj)
        elif msg_id == SHAREDINVALRELCACHE_ID:
            out.append(" relcache %u" % msg_obj)
        elif msg_id == SHAREDINVALSMGR_ID:
            out.append(" smgr")
        elif msg_id == SHAREDINVALRELMAP_ID:
            out.append(" relmap db %u" % msg_db)
        elif msg_id == SHAREDINVALSNAPSHOT_ID:
            out.append(" snapshot %u" % msg_obj)
        elif msg_id == SHAREDINVALRELSYNC_ID and major >= 18:
            out.append(" relsync %u" % msg_obj)
        else:
            out.append(" unrecognized id %d" % msg_id)
    return "".join(out)


def standby_desc_running_xacts(data: bytes, major: int) -> str:
    xcnt, subxcnt, subxid_overflow, nextXid, oldestRunningXid, latestCompletedXid = \
        xl_running_xacts.unpack_from(data)
    out = ["nextXid %u latestCompletedXid %u oldestRunningXid %u"
           % (nextXid, latestCompletedXid, oldestRunningXid)]
    xids = struct.unpack_from("<%dI" % (max(xcnt, 0) + max(subxcnt, 0)), data, xl_running_xacts.size)
    if xcnt > 0:
        out.append("; %d xacts:" % xcnt)
        out.extend(" %u" % x for x in xids[:xcnt])
    if major >= 16:
        if subxid_overflow:
            out.append("; subxid overflowed")
        if subxcnt > 0:
            out.append("; %d subxacts:" % subxcnt)
            out.extend(" %u" % x for x in xids[max(xcnt, 0):])
    elif subxid_overflow:
        out.append("; subxid ovf")
    return "".join(out)


def desc(record, major: int) -> str:
    data = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_STANDBY_LOCK:
        nlocks = int32.unpack_from(data)[0]
        return "".join("xid %u db %u rel %u " % xl_standby_lock.unpack_from(data, 4 + 12 * i)
                       for i in range(nlocks))
    if info == XLOG_RUNNING_XACTS:
        return standby_desc_running_xacts(data, major)
    if info == XLOG_INVALIDATIONS:
        dbId, tsId, relcache_init, nmsgs = xl_invalidations.unpack_from(data)
        return standby_desc_invalidations(data[16:16 + SizeOfSharedInvalidationMessage * max(nmsgs, 0)],
                                          dbId, tsId, bool(relcache_init), major)
    return ""
