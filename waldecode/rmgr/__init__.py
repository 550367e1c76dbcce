"""Resource managers: the table of src/include/access/rmgrlist.h and pg_waldump's texts.

Owns the rmgr ids and names, and dispatches ``identify`` (the record-type name
pg_waldump prints after ``desc:``) and ``desc`` (its description of the record's
main data) to one module per resource manager, each a port of
src/backend/access/rmgrdesc/<name>desc.c for the server's major version.
Hands strings to ``waldecode.waldump``.  Custom resource managers (ids 128-255,
15+) are shown as pg_waldump shows them when their module is not loaded
(src/bin/pg_waldump/rmgrdesc.c: ``custom###``, ``rmid: N``).
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import NamedTuple

from ..errors import CorruptRecordError

from . import (brin, btree, clog, committs, dbase, generic, gin, gist, hash, heap, logicalmsg, multixact, relmap,
               replorigin, sequence, smgr, spgist, standby, tblspc, xact, xlog)

# src/include/access/rmgrlist.h (ids are positions in that list; identical 13-18)
RM_XLOG_ID = 0
RM_XACT_ID = 1
RM_SMGR_ID = 2
RM_CLOG_ID = 3
RM_DBASE_ID = 4
RM_TBLSPC_ID = 5
RM_MULTIXACT_ID = 6
RM_RELMAP_ID = 7
RM_STANDBY_ID = 8
RM_HEAP2_ID = 9
RM_HEAP_ID = 10
RM_BTREE_ID = 11
RM_HASH_ID = 12
RM_GIN_ID = 13
RM_GIST_ID = 14
RM_SEQ_ID = 15
RM_SPGIST_ID = 16
RM_BRIN_ID = 17
RM_COMMIT_TS_ID = 18
RM_REPLORIGIN_ID = 19
RM_GENERIC_ID = 20
RM_LOGICALMSG_ID = 21

# src/include/access/rmgr.h (15+)
RM_MAX_BUILTIN_ID = RM_LOGICALMSG_ID
RM_MIN_CUSTOM_ID = 128
RM_MAX_CUSTOM_ID = 255
RM_MAX_ID = 255
RM_EXPERIMENTAL_ID = 128


class RmgrDesc(NamedTuple):
    """One row of rmgrlist.h as pg_waldump's RmgrDescData sees it."""

    rm_id: int
    rm_name: str
    identify: object  # (info, major) -> str | None
    desc: object  # (record, major) -> str


def _row(rm_id: int, name: str, module: ModuleType, identify_name: str = "identify",
         desc_name: str = "desc") -> RmgrDesc:
    return RmgrDesc(rm_id, name, getattr(module, identify_name), getattr(module, desc_name))


# PG_RMGR(symname, name, redo, desc, identify, ...) rows, in id order
RmgrDescTable: tuple[RmgrDesc, ...] = (
    _row(RM_XLOG_ID, "XLOG", xlog),
    _row(RM_XACT_ID, "Transaction", xact),
    _row(RM_SMGR_ID, "Storage", smgr),
    _row(RM_CLOG_ID, "CLOG", clog),
    _row(RM_DBASE_ID, "Database", dbase),
    _row(RM_TBLSPC_ID, "Tablespace", tblspc),
    _row(RM_MULTIXACT_ID, "MultiXact", multixact),
    _row(RM_RELMAP_ID, "RelMap", relmap),
    _row(RM_STANDBY_ID, "Standby", standby),
    _row(RM_HEAP2_ID, "Heap2", heap, "heap2_identify", "heap2_desc"),
    _row(RM_HEAP_ID, "Heap", heap, "heap_identify", "heap_desc"),
    _row(RM_BTREE_ID, "Btree", btree),
    _row(RM_HASH_ID, "Hash", hash),
    _row(RM_GIN_ID, "Gin", gin),
    _row(RM_GIST_ID, "Gist", gist),
    _row(RM_SEQ_ID, "Sequence", sequence),
    _row(RM_SPGIST_ID, "SPGist", spgist),
    _row(RM_BRIN_ID, "BRIN", brin),
    _row(RM_COMMIT_TS_ID, "CommitTs", committs),
    _row(RM_REPLORIGIN_ID, "ReplicationOrigin", replorigin),
    _row(RM_GENERIC_ID, "Generic", generic),
    _row(RM_LOGICALMSG_ID, "LogicalMessage", logicalmsg),
)
assert all(row.rm_id == i for i, row in enumerate(RmgrDescTable))


def _default_identify(info: int, major: int) -> None:
    """rmgrdesc.c: default_identify (custom rmgrs: let the caller print UNKNOWN)."""
    return None


def _default_desc(record, major: int) -> str:
    """rmgrdesc.c: default_desc."""
    return "rmid: %d" % record.xl_rmid


def rmgr_id_is_builtin(rmid: int) -> bool:
    return 0 <= rmid <= RM_MAX_BUILTIN_ID


def rmgr_id_is_custom(rmid: int, major: int) -> bool:
    return major >= 15 and RM_MIN_CUSTOM_ID <= rmid <= RM_MAX_CUSTOM_ID


def rmgr_id_is_valid(rmid: int, major: int) -> bool:
    """RmgrIdIsValid (15+); 13/14 know only the built-in ids."""
    return rmgr_id_is_builtin(rmid) or rmgr_id_is_custom(rmid, major)


def get_rmgr_desc(rmid: int, major: int) -> RmgrDesc:
    """rmgrdesc.c: GetRmgrDesc.  Ids that are neither built-in nor custom (a reader
    would reject such records) get the custom treatment with their number."""
    if rmgr_id_is_builtin(rmid):
        return RmgrDescTable[rmid]
    return RmgrDesc(rmid, "custom%03d" % rmid, _default_identify, _default_desc)


def rmgr_name(rmid: int, major: int) -> str:
    return get_rmgr_desc(rmid, major).rm_name


def rmid_by_name(name: str) -> int:
    """The id of a resource manager given its pg_waldump name (case-insensitive, as
    ``pg_waldump --rmgr``), or ``custom###`` for a custom one; ValueError otherwise."""
    for row in RmgrDescTable:
        if row.rm_name.lower() == name.lower():
            return row.rm_id
    low = name.lower()
    if low.startswith("custom") and low[6:].isdigit():
        rmid = int(low[6:])
        if RM_MIN_CUSTOM_ID <= rmid <= RM_MAX_CUSTOM_ID:
            return rmid
    raise ValueError("resource manager \"%s\" does not exist" % name)


def identify(rmid: int, info: int, major: int) -> str | None:
    """``rm_identify(info)``: the record type's name, or None when pg_waldump prints UNKNOWN."""
    return get_rmgr_desc(rmid, major).identify(info & 0xFF, major)


def desc(record, major: int) -> str:
    """``rm_desc``: pg_waldump's description of the record (without block references).

    A record whose main data is too short for the layout its type announces raises
    ``CorruptRecordError`` naming the record (pg_waldump would read past the data)."""
    row = get_rmgr_desc(record.xl_rmid, major)
    try:
        return row.desc(record, major)
    except (struct.error, IndexError) as e:
        ident = row.identify(record.xl_info & 0xFF, major) or "UNKNOWN (%x)" % (record.xl_info & 0xF0)
        raise CorruptRecordError(
            f"cannot describe {row.rm_name}/{ident} record (main data {len(record.main_data)} bytes, "
            f"block data {[len(b.data) for b in record.blocks]}): {e}", lsn=record.lsn) from None
