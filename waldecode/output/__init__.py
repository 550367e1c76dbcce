"""Output plugins: turn committed transactions into text (test_decoding first).

The contract every plugin follows is ``output.base.OutputPlugin`` (PostgreSQL's
OutputPluginCallbacks); a plugin receives transactions, relations and decoded tuples
from ``waldecode.logical.apply``, never WAL.  A tuple is a list of column values in attnum
order: None (NULL), ``UNCHANGED_TOAST``, a missing-value marker from
``waldecode.heap.heaptuple``, or the datum's bytes.  Each plugin quotes values its own way.
"""

from ..errors import OutputPluginError

# A TOASTed value the change did not carry (test_decoding prints unchanged-toast-datum)
UNCHANGED_TOAST = type("UnchangedToast", (), {"__repr__": lambda self: "UNCHANGED_TOAST"})()

__all__ = ["UNCHANGED_TOAST", "OutputPluginError"]
