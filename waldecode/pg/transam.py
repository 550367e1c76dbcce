"""Transaction and multixact IDs as src/backend/access/transam compares them.

32-bit IDs wrap around, so "older than" is a modulo-2^32 comparison (transam.c
TransactionIdPrecedes, multixact.c MultiXactIdPrecedes).  The one copy for the snapshot
builder, the reorder buffer, the transaction tracker and the data-directory reader.
"""

from __future__ import annotations

# src/include/access/transam.h
InvalidTransactionId = 0
BootstrapTransactionId = 1
FrozenTransactionId = 2
FirstNormalTransactionId = 3


def xid_precedes(a: int, b: int) -> bool:
    """TransactionIdPrecedes: is ``a`` older than ``b``?  Permanent IDs (0, 1, 2) compare as plain
    numbers (they precede every normal ID); two normal IDs modulo 2^32."""
    if a < FirstNormalTransactionId or b < FirstNormalTransactionId:
        return a < b
    return ((a - b) & 0xFFFFFFFF) >= 0x80000000


def multixact_precedes(a: int, b: int) -> bool:
    """MultiXactIdPrecedes: modulo 2^32 for every ID (multixact IDs have no permanent values)."""
    return ((a - b) & 0xFFFFFFFF) >= 0x80000000
