"""Sequence resource manager (RM_SEQ_ID 15): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/seqdesc.c (13-18), layout from
src/include/commands/sequence.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

from .rmgrdesc_utils import RelFileLocator

# src/include/commands/sequence.h
XLOG_SEQ_LOG = 0x00

# xl_seq_rec {RelFileNode node (RelFileLocator locator in 16+)}, then the sequence tuple
xl_seq_rec = RelFileLocator


def identify(info: int, major: int) -> str | None:
    return "LOG" if info & 0xF0 == XLOG_SEQ_LOG else None


def desc(record, major: int) -> str:
    if record.xl_info & 0xF0 == XLOG_SEQ_LOG:
        return "rel %u/%u/%u" % xl_seq_rec.unpack_from(record.main_data)
    return ""
