"""Transaction resource manager (RM_XACT_ID 1): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/xactdesc.c (ParseCommitRecord,
ParseAbortRecord, ParsePrepareRecord, xact_desc, xact_identify) for 13-18, with
layouts from src/include/access/xact.h and src/include/access/twophase.h
(xl_xact_prepare).  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..pg.bufpage import MAXALIGN
from .rmgrdesc_utils import RelFileLocator, c_string, lsn_format, relpathperm, timestamptz_to_str
from .standby import standby_desc_invalidations

# src/include/access/xact.h
XLOG_XACT_COMMIT = 0x00
XLOG_XACT_PREPARE = 0x10
XLOG_XACT_ABORT = 0x20
XLOG_XACT_COMMIT_PREPARED = 0x30
XLOG_XACT_ABORT_PREPARED = 0x40
XLOG_XACT_ASSIGNMENT = 0x50
XLOG_XACT_INVALIDATIONS = 0x60  # 14+
XLOG_XACT_OPMASK = 0x70
XLOG_XACT_HAS_INFO = 0x80

XACT_XINFO_HAS_DBINFO = 1 << 0
XACT_XINFO_HAS_SUBXACTS = 1 << 1
XACT_XINFO_HAS_RELFILENODES = 1 << 2  # XACT_XINFO_HAS_RELFILELOCATORS in 16+
XACT_XINFO_HAS_RELFILELOCATORS = XACT_XINFO_HAS_RELFILENODES
XACT_XINFO_HAS_INVALS = 1 << 3
XACT_XINFO_HAS_TWOPHASE = 1 << 4
XACT_XINFO_HAS_ORIGIN = 1 << 5
XACT_XINFO_HAS_AE_LOCKS = 1 << 6
XACT_XINFO_HAS_GID = 1 << 7
XACT_XINFO_HAS_DROPPED_STATS = 1 << 8  # 15+

XACT_COMPLETION_APPLY_FEEDBACK = 1 << 29
XACT_COMPLETION_UPDATE_RELCACHE_FILE = 1 << 30
XACT_COMPLETION_FORCE_SYNC_COMMIT = 1 << 31

# src/include/access/xact.h: xl_xact_commit / xl_xact_abort {TimestampTz xact_time}
TimestampTz = struct.Struct("<q")
MinSizeOfXactCommit = 8  # and MinSizeOfXactAbort: the xact_time
SizeOfXactXinfo = 4  # xl_xact_xinfo {uint32 xinfo}
SizeOfXactDbinfo = 8  # sizeof(xl_xact_dbinfo)
MinSizeOfXactSubxacts = 4  # xl_xact_subxacts {int nsubxacts; TransactionId subxacts[]}
uint32 = struct.Struct("<I")
int32 = struct.Struct("<i")
# xl_xact_dbinfo {dbId, tsId}
xl_xact_dbinfo = struct.Struct("<II")
# xl_xact_origin {origin_lsn, origin_timestamp}
xl_xact_origin = struct.Struct("<Qq")
# xl_xact_stats_item: 15-17 {int kind; Oid dboid; Oid objoid}; 18 {kind, dboid, objid_lo, objid_hi}
xl_xact_stats_item_15 = struct.Struct("<iII")
xl_xact_stats_item_18 = struct.Struct("<iIII")
# xl_xact_assignment {xtop, nsubxacts, xsub[]}
xl_xact_assignment = struct.Struct("<Ii")
# src/include/access/xact.h: xl_xact_prepare (= twophase.c TwoPhaseFileHeader)
# 13/14: magic, total_len, xid, database, prepared_at, owner, nsubxacts, ncommitrels,
#        nabortrels, ninvalmsgs, initfileinval, gidlen, origin_lsn, origin_timestamp
xl_xact_prepare_13 = struct.Struct("<IIII q I iiii B x H Q q")
# 15+: adds ncommitstats, nabortstats after nabortrels
xl_xact_prepare_15 = struct.Struct("<IIII q I iiiiii B x H Q q")
SizeOfSharedInvalidationMessage = 16
SizeOfRelFileLocator = 12

_NAMES = {
    XLOG_XACT_COMMIT: "COMMIT",
    XLOG_XACT_PREPARE: "PREPARE",
    XLOG_XACT_ABORT: "ABORT",
    XLOG_XACT_COMMIT_PREPARED: "COMMIT_PREPARED",
    XLOG_XACT_ABORT_PREPARED: "ABORT_PREPARED",
    XLOG_XACT_ASSIGNMENT: "ASSIGNMENT",
}


def identify(info: int, major: int) -> str | None:
    op = info & XLOG_XACT_OPMASK
    if op == XLOG_XACT_INVALIDATIONS:
        return "INVALIDATION" if major >= 14 else None
    return _NAMES.get(op)


class ParsedXact(NamedTuple):
    """The parts of xl_xact_parsed_commit / _abort / _prepare that pg_waldump prints."""

    xinfo: int
    xact_time: int
    dbId: int
    tsId: int
    subxacts: tuple
    xlocators: tuple  # (spc, db, rel) triples
    abortlocators: tuple
    stats: tuple  # (kind, dboid, objid)
    abortstats: tuple
    msgs: bytes  # nmsgs * 16 bytes
    twophase_xid: int
    twophase_gid: str
    origin_lsn: int
    origin_timestamp: int


def _stats_item(major: int):
    return xl_xact_stats_item_18 if major >= 18 else xl_xact_stats_item_15


def _read_stats(data: bytes, pos: int, n: int, major: int) -> tuple[tuple, int]:
    item = _stats_item(major)
    out = []
    for _ in range(n):
        vals = item.unpack_from(data, pos)
        if major >= 18:
            kind, dboid, lo, hi = vals
            out.append((kind, dboid, (hi << 32) | lo))
        else:
            out.append(vals)
        pos += item.size
    return tuple(out), pos


def _read_locators(data: bytes, pos: int, n: int) -> tuple[tuple, int]:
    out = tuple(RelFileLocator.unpack_from(data, pos + 12 * i) for i in range(n))
    return out, pos + 12 * n


def parse_commit_or_abort(info: int, data: bytes, major: int, is_commit: bool) -> ParsedXact:
    """ParseCommitRecord / ParseAbortRecord: the abort record has no invalidations."""
    xact_time = TimestampTz.unpack_from(data, 0)[0]
    pos = MinSizeOfXactCommit  # = MinSizeOfXactAbort
    xinfo = 0
    if info & XLOG_XACT_HAS_INFO:
        xinfo = uint32.unpack_from(data, pos)[0]
        pos += SizeOfXactXinfo
    dbId = tsId = 0
    if xinfo & XACT_XINFO_HAS_DBINFO:
        dbId, tsId = xl_xact_dbinfo.unpack_from(data, pos)
        pos += SizeOfXactDbinfo
    subxacts: tuple = ()
    if xinfo & XACT_XINFO_HAS_SUBXACTS:
        n = int32.unpack_from(data, pos)[0]
        subxacts = struct.unpack_from("<%dI" % n, data, pos + MinSizeOfXactSubxacts)
        pos += MinSizeOfXactSubxacts + 4 * n
    xlocators: tuple = ()
    if xinfo & XACT_XINFO_HAS_RELFILELOCATORS:
        n = int32.unpack_from(data, pos)[0]
        xlocators, pos = _read_locators(data, pos + 4, n)
    stats: tuple = ()
    if major >= 15 and xinfo & XACT_XINFO_HAS_DROPPED_STATS:
        n = int32.unpack_from(data, pos)[0]
        stats, pos = _read_stats(data, pos + 4, n, major)
    msgs = b""
    if is_commit and xinfo & XACT_XINFO_HAS_INVALS:
        n = int32.unpack_from(data, pos)[0]
        msgs = data[pos + 4:pos + 4 + SizeOfSharedInvalidationMessage * n]
        pos += 4 + SizeOfSharedInvalidationMessage * n
    twophase_xid = 0
    gid = ""
    if xinfo & XACT_XINFO_HAS_TWOPHASE:
        twophase_xid = uint32.unpack_from(data, pos)[0]
        pos += 4
        if xinfo & XACT_XINFO_HAS_GID:
            raw_end = data.find(b"\0", pos)
            if raw_end < 0:
                raw_end = len(data)
            gid = c_string(data, pos)[:199]  # strlcpy into char[GIDSIZE = 200]
            pos = raw_end + 1
    origin_lsn = origin_timestamp = 0
    if xinfo & XACT_XINFO_HAS_ORIGIN:
        origin_lsn, origin_timestamp = xl_xact_origin.unpack_from(data, pos)
        pos += 16
    return ParsedXact(xinfo, xact_time, dbId, tsId, tuple(subxacts), xlocators, (), stats, (),
                      msgs, twophase_xid, gid, origin_lsn, origin_timestamp)


def parse_prepare(data: bytes, major: int) -> tuple[ParsedXact, bool]:
    """ParsePrepareRecord; also returns xlrec->initfileinval."""
    if major >= 15:
        (_magic, _total_len, xid, database, prepared_at, _owner, nsubxacts, ncommitrels, nabortrels,
         ncommitstats, nabortstats, ninvalmsgs, initfileinval, gidlen, origin_lsn,
         origin_timestamp) = xl_xact_prepare_15.unpack_from(data)
        pos = MAXALIGN(xl_xact_prepare_15.size)
    else:
        (_magic, _total_len, xid, database, prepared_at, _owner, nsubxacts, ncommitrels, nabortrels,
         ninvalmsgs, initfileinval, gidlen, origin_lsn,
         origin_timestamp) = xl_xact_prepare_13.unpack_from(data)
        ncommitstats = nabortstats = 0
        pos = MAXALIGN(xl_xact_prepare_13.size)
    gid = c_string(data, pos, gidlen)
    pos += MAXALIGN(gidlen)
    subxacts = struct.unpack_from("<%dI" % nsubxacts, data, pos) if nsubxacts > 0 else ()
    pos += MAXALIGN(4 * nsubxacts)
    xlocators, _ = _read_locators(data, pos, ncommitrels)
    pos += MAXALIGN(12 * ncommitrels)
    abortlocators, _ = _read_locators(data, pos, nabortrels)
    pos += MAXALIGN(12 * nabortrels)
    stats = abortstats = ()
    if major >= 15:
        stats, _ = _read_stats(data, pos, ncommitstats, major)
        pos += MAXALIGN(_stats_item(major).size * ncommitstats)
        abortstats, _ = _read_stats(data, pos, nabortstats, major)
        pos += MAXALIGN(_stats_item(major).size * nabortstats)
    msgs = data[pos:pos + SizeOfSharedInvalidationMessage * ninvalmsgs]
    parsed = ParsedXact(0, prepared_at, database, 0, tuple(subxacts), xlocators, abortlocators,
                        stats, abortstats, msgs, xid, gid, origin_lsn, origin_timestamp)
    return parsed, bool(initfileinval)


def xact_desc_relations(label: str, locators, major: int) -> str:
    if not locators:
        return ""
    return "; %s:" % label + "".join(" " + relpathperm(s, d, r, 0, major) for s, d, r in locators)


def xact_desc_subxacts(subxacts) -> str:
    if not subxacts:
        return ""
    return "; subxacts:" + "".join(" %u" % x for x in subxacts)


def xact_desc_stats(label: str, stats) -> str:
    if not stats:
        return ""
    return "; %sdropped stats:" % label + "".join(" %d/%u/%u" % s for s in stats)


def _origin_desc(origin_id: int, parsed: ParsedXact) -> str:
    return "; origin: node %u, lsn %s, at %s" % (origin_id, lsn_format(parsed.origin_lsn),
                                                  timestamptz_to_str(parsed.origin_timestamp))


def xact_desc_commit(info: int, data: bytes, origin_id: int, major: int) -> str:
    parsed = parse_commit_or_abort(info, data, major, True)
    out = []
    if parsed.twophase_xid != 0:
        out.append("%u: " % parsed.twophase_xid)
    out.append(timestamptz_to_str(parsed.xact_time))
    out.append(xact_desc_relations("rels", parsed.xlocators, major))
    out.append(xact_desc_subxacts(parsed.subxacts))
    if major >= 15:
        out.append(xact_desc_stats("", parsed.stats))
    out.append(standby_desc_invalidations(parsed.msgs, parsed.dbId, parsed.tsId,
                                          bool(parsed.xinfo & XACT_COMPLETION_UPDATE_RELCACHE_FILE),
                                          major))
    if major >= 15 and parsed.xinfo & XACT_COMPLETION_APPLY_FEEDBACK:
        out.append("; apply_feedback")
    if parsed.xinfo & XACT_COMPLETION_FORCE_SYNC_COMMIT:
        out.append("; sync")
    if parsed.xinfo & XACT_XINFO_HAS_ORIGIN:
        out.append(_origin_desc(origin_id, parsed))
    return "".join(out)


def xact_desc_abort(info: int, data: bytes, origin_id: int, major: int) -> str:
    parsed = parse_commit_or_abort(info, data, major, False)
    out = []
    if parsed.twophase_xid != 0:
        out.append("%u: " % parsed.twophase_xid)
    out.append(timestamptz_to_str(parsed.xact_time))
    out.append(xact_desc_relations("rels", parsed.xlocators, major))
    out.append(xact_desc_subxacts(parsed.subxacts))
    if major >= 15:
        if parsed.xinfo & XACT_XINFO_HAS_ORIGIN:
            out.append(_origin_desc(origin_id, parsed))
        out.append(xact_desc_stats("", parsed.stats))
    return "".join(out)


# ParsePrepareRecord fills nstats/nabortstats, so a PREPARE's dropped stats are
# printed, in 15.15, 16.14 (checked against its pg_waldump) and 18.3; the 16.2 and
# 17.4 trees lack those two assignments (a bug fixed in later minor releases), so
# early 16.x/17.x pg_waldump print no "commit/abort dropped stats" for PREPARE.
# We follow the fixed releases.


def xact_desc_prepare(data: bytes, origin_id: int, major: int) -> str:
    parsed, initfileinval = parse_prepare(data, major)
    out = ["gid %s: " % parsed.twophase_gid, timestamptz_to_str(parsed.xact_time)]
    out.append(xact_desc_relations("rels(commit)", parsed.xlocators, major))
    out.append(xact_desc_relations("rels(abort)", parsed.abortlocators, major))
    if major >= 15:
        out.append(xact_desc_stats("commit ", parsed.stats))
        out.append(xact_desc_stats("abort ", parsed.abortstats))
    out.append(xact_desc_subxacts(parsed.subxacts))
    out.append(standby_desc_invalidations(parsed.msgs, parsed.dbId, parsed.tsId, initfileinval, major))
    if major >= 15 and origin_id != 0:
        out.append(_origin_desc(origin_id, parsed))
    return "".join(out)


def desc(record, major: int) -> str:
    data = record.main_data
    info = record.xl_info & XLOG_XACT_OPMASK
    if info in (XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED):
        return xact_desc_commit(record.xl_info, data, record.origin, major)
    if info in (XLOG_XACT_ABORT, XLOG_XACT_ABORT_PREPARED):
        return xact_desc_abort(record.xl_info, data, record.origin, major)
    if info == XLOG_XACT_PREPARE:
        return xact_desc_prepare(data, record.origin, major)
    if info == XLOG_XACT_ASSIGNMENT:
        xtop, nsubxacts = xl_xact_assignment.unpack_from(data)
        xsub = struct.unpack_from("<%dI" % nsubxacts, data, 8) if nsubxacts > 0 else ()
        return "xtop %u: subxacts:" % xtop + "".join(" %u" % x for x in xsub)
    if info == XLOG_XACT_INVALIDATIONS and major >= 14:
        nmsgs = int32.unpack_from(data)[0]
        return standby_desc_invalidations(data[4:4 + SizeOfSharedInvalidationMessage * max(nmsgs, 0)],
                                          0, 0, False, major)
    return ""
