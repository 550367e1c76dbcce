"""Generic WAL resource manager (RM_GENERIC_ID 20): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/genericdesc.c (13-18): the desc walks the
main data as (offset, length, bytes) page-region deltas.  Hands text to
``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/backend/access/transam/generic_xlog.c: delta fragments {OffsetNumber offset; OffsetNumber length; data}
fragment = struct.Struct("<HH")


def identify(info: int, major: int) -> str | None:
    return "Generic"


def desc(record, major: int) -> str:
    data = record.main_data
    ptr = 0
    end = len(data)
    out = []
    while ptr < end:
        offset, length = fragment.unpack_from(data, ptr)
        ptr += 4 + length
        if ptr < end:
            out.append("offset %u, length %u; " % (offset, length))
        else:
            out.append("offset %u, length %u" % (offset, length))
    return "".join(out)
