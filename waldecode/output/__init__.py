"""Output plugins: turn committed transactions into text (test_decoding first).

A plugin receives transactions, relations (``catalog.Relation``) and decoded
tuples from ``waldecode.replay``; it never sees WAL.  A tuple is a list of column
values in attnum order: None (NULL), ``UNCHANGED_TOAST``, a missing-value marker
from ``waldecode.heaptuple``, or the datum's bytes.
"""

from ..errors import OutputPluginError

# A TOASTed value the change did not carry (test_decoding prints unchanged-toast-datum)
UNCHANGED_TOAST = type("UnchangedToast", (), {"__repr__": lambda self: "UNCHANGED_TOAST"})()

__all__ = ["UNCHANGED_TOAST", "OutputPluginError"]
