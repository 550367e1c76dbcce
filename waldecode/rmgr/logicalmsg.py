"""Logical message resource manager (RM_LOGICALMSG_ID 21): the record layout and its parser,
and pg_waldump's identify and desc.

Layout from src/include/replication/message.h; ``parse_message`` hands (transactional,
prefix, content) to the decoder.  Port of src/backend/access/rmgrdesc/logicalmsgdesc.c
(13; 14-18 print the prefix and the payload in hex); hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import c_string

# src/include/replication/message.h
XLOG_LOGICAL_MESSAGE = 0x00

# xl_logical_message {Oid dbId; bool transactional; Size prefix_size; Size message_size; message[] @24}
xl_logical_message = struct.Struct("<IB3xQQ")
SizeOfLogicalMessage = 24


def parse_message(data: bytes) -> tuple[bool, str, bytes]:
    """xl_logical_message: (transactional, prefix, content)."""
    _db, transactional, prefix_size, message_size = xl_logical_message.unpack_from(data, 0)
    prefix_raw = data[SizeOfLogicalMessage:SizeOfLogicalMessage + prefix_size]
    prefix = prefix_raw.split(b"\0", 1)[0].decode("utf-8", errors="surrogateescape")
    start = SizeOfLogicalMessage + prefix_size
    return bool(transactional), prefix, bytes(data[start:start + message_size])


def identify(info: int, major: int) -> str | None:
    return "MESSAGE" if info & 0xF0 == XLOG_LOGICAL_MESSAGE else None


def desc(record, major: int) -> str:
    if record.xl_info & 0xF0 != XLOG_LOGICAL_MESSAGE:
        return ""
    rec = record.main_data
    _dbId, transactional, prefix_size, message_size = xl_logical_message.unpack_from(rec)
    if major <= 13:
        return "%s message size %u bytes" % ("transactional" if transactional else "nontransactional",
                                             message_size)
    prefix = c_string(rec, SizeOfLogicalMessage)
    start = SizeOfLogicalMessage + prefix_size
    payload = rec[start:start + message_size]
    return ("%s, prefix \"%s\"; payload (%u bytes): " % (
        "transactional" if transactional else "non-transactional", prefix, message_size)
        + " ".join("%02X" % b for b in payload))
