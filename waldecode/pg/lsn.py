"""LSN text as PostgreSQL writes and reads it (``%X/%X``, src/include/access/xlogdefs.h
LSN_FORMAT_ARGS; utils/adt/pg_lsn.c pg_lsn_in): the one copy for every stage.

``errors``, ``xlogreader`` and ``waldump`` re-export these names.
"""

from __future__ import annotations


def format_lsn(lsn: int) -> str:
    """``X/X``: the two 32-bit halves in upper-case hexadecimal, without padding."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """'X/X' as PostgreSQL prints an LSN (surrounding white space allowed); ``ValueError`` otherwise."""
    try:
        hi, lo = text.strip().split("/")
        hi_v, lo_v = int(hi, 16), int(lo, 16)
    except ValueError:
        raise ValueError(f"invalid LSN {text!r}: expected X/X in hexadecimal, as 0/16B3748") from None
    if hi_v > 0xFFFFFFFF or lo_v > 0xFFFFFFFF or hi_v < 0 or lo_v < 0:
        raise ValueError(f"invalid LSN {text!r}: each half must fit in 32 bits")
    return hi_v << 32 | lo_v
