"""Helpers shared by the resource-manager descriptions (pg_waldump's text).

Owns what several ``*desc.c`` files use in common: PostgreSQL's
``src/backend/access/rmgrdesc/rmgrdesc_utils.c`` (``array_desc`` and its element
printers, 16+), the frontend ``timestamptz_to_str`` of
``src/bin/pg_waldump/compat.c``, ``relpathperm`` (``src/common/relpath.c``) and
the ``LSN_FORMAT_ARGS`` way of writing an LSN.  Hands strings to the rmgr modules.
"""

from __future__ import annotations

import struct
import time

from ..pg.relpath import fork_name, relation_path
from ..pg.relpath import tablespace_version_directory as _version_directory

# src/include/catalog/catversion.h: CATALOG_VERSION_NO of each release branch
# (read from 13.1, 14.13, 15.15, 16.2, 17.4 and 18.3 trees); it names the
# per-version tablespace subdirectory TABLESPACE_VERSION_DIRECTORY.
CATALOG_VERSION_NO = {
    13: 202007201,
    14: 202107181,
    15: 202209061,
    16: 202307071,
    17: 202406281,
    18: 202506291,
}

# src/include/datatype/timestamp.h
USECS_PER_SEC = 1000000
POSTGRES_EPOCH_UNIX_SECONDS = 946684800  # (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY

# src/include/storage/itemptr.h: ItemPointerData {BlockIdData ip_blkid {bi_hi, bi_lo}; ip_posid}
ItemPointerData = struct.Struct("<HHH")
# src/include/storage/block.h: BlockIdData
BlockIdData = struct.Struct("<HH")
# src/include/common/relpath.h (16+) RelFileLocator / storage/relfilenode.h (13-15) RelFileNode
RelFileLocator = struct.Struct("<III")  # spcOid, dbOid, relNumber
uint16 = struct.Struct("<H")
uint32 = struct.Struct("<I")
int32 = struct.Struct("<i")
int64 = struct.Struct("<q")
uint64 = struct.Struct("<Q")


def lsn_format(lsn: int) -> str:
    """``%X/%X`` of ``LSN_FORMAT_ARGS(lsn)``."""
    return "%X/%X" % (lsn >> 32, lsn & 0xFFFFFFFF)


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """C ``%`` (sign of the dividend)."""
    return a - b * c_div(a, b)


def timestamptz_to_str(dt: int) -> str:
    """src/bin/pg_waldump/compat.c: timestamptz_to_str (frontend version).

    Uses ``localtime`` and ``%Z`` exactly as the C code does, so the result depends
    on the ``TZ`` environment of this process the same way pg_waldump's does.
    """
    result = c_div(dt, USECS_PER_SEC) + POSTGRES_EPOCH_UNIX_SECONDS
    ltime = time.localtime(result)
    ts = time.strftime("%Y-%m-%d %H:%M:%S", ltime)
    zone = time.strftime("%Z", ltime)
    return "%s.%06d %s" % (ts, c_mod(dt, USECS_PER_SEC), zone)


def relpathperm(spc: int, db: int, rel: int, forknum: int, major: int) -> str:
    """src/common/relpath.c: GetRelationPath with InvalidBackendId, with the release's catalog version."""
    return relation_path(spc, db, rel, forknum, _version_directory(major, CATALOG_VERSION_NO[major]))


def item_pointer(data: bytes, offset: int) -> tuple[int, int]:
    """(ItemPointerGetBlockNumber, ItemPointerGetOffsetNumber) of an ItemPointerData."""
    bi_hi, bi_lo, posid = ItemPointerData.unpack_from(data, offset)
    return (bi_hi << 16) | bi_lo, posid


def block_id_number(data: bytes, offset: int) -> int:
    """BlockIdGetBlockNumber."""
    bi_hi, bi_lo = BlockIdData.unpack_from(data, offset)
    return (bi_hi << 16) | bi_lo


def array_desc(elems) -> str:
    """rmgrdesc_utils.c: array_desc, given the already formatted elements."""
    if not elems:
        return " []"
    return " [" + ", ".join(elems) + "]"


def offset_elems(data: bytes, offset: int, count: int) -> list[str]:
    """offset_elem_desc over ``count`` OffsetNumbers at ``offset``."""
    return ["%u" % v for v in struct.unpack_from("<%dH" % count, data, offset)] if count else []


def redirect_elems(data: bytes, offset: int, count: int) -> list[str]:
    """redirect_elem_desc over ``count`` OffsetNumber pairs at ``offset``."""
    vals = struct.unpack_from("<%dH" % (2 * count), data, offset) if count else ()
    return ["%u->%u" % (vals[2 * i], vals[2 * i + 1]) for i in range(count)]


def oid_elems(data: bytes, offset: int, count: int) -> list[str]:
    """oid_elem_desc over ``count`` Oids at ``offset``."""
    return ["%u" % v for v in struct.unpack_from("<%dI" % count, data, offset)] if count else []


def flag_list(prefix: str, names) -> str:
    """The ``"key: [A, B]"`` pattern of heapdesc.c 16+ (items joined by ", ")."""
    return prefix + "[" + ", ".join(names) + "]"


def c_string(data: bytes, offset: int = 0, limit: int | None = None) -> str:
    """A NUL-terminated C string starting at ``offset`` (what ``%s`` prints)."""
    end = data.find(b"\0", offset)
    if end < 0:
        end = len(data)
    if limit is not None:
        end = min(end, offset + limit)
    return data[offset:end].decode("utf-8", "surrogateescape")


def block_data(record, block_id: int) -> bytes | None:
    """XLogRecGetBlockData: the block's data, or None if it has none (XLogRecHasBlockData)."""
    for b in record.blocks:
        if b.block_id == block_id:
            return b.data if b.data else None
    return None


def block_image_apply(block, major: int) -> bool:
    """XLogRecBlockImageApply: BKPIMAGE_APPLY is 0x02 in 15+, 0x04 in 13/14."""
    return bool(block.bimg_info & (0x02 if major >= 15 else 0x04))
