"""Output plugins: turn committed transactions into text (test_decoding first).

The contract every plugin follows is ``output.base.OutputPlugin`` (PostgreSQL's
OutputPluginCallbacks); a plugin receives transactions, relations and decoded tuples
from ``waldecode.logical.replay``, never WAL.  A tuple is a list of column values in attnum
order: None (NULL), ``UNCHANGED_TOAST``, a missing-value marker from
``waldecode.heap.heaptuple``, or the datum's bytes.  Each plugin quotes values its own way.
"""

import importlib

from ..errors import OutputPluginError

# A TOASTed value the change did not carry (test_decoding prints unchanged-toast-datum)
UNCHANGED_TOAST = type("UnchangedToast", (), {"__repr__": lambda self: "UNCHANGED_TOAST"})()

# --format NAME -> (module, class): the plugins ``decode`` and ``spark decode`` offer; each class
# takes ``output=`` an ``base.OutputWriter`` (or ``write=`` a line callback)
PLUGINS = {
    "test_decoding": ("waldecode.output.test_decoding", "TestDecoding"),
    "sql": ("waldecode.output.sql", "SqlOutput"),
    "pgoutput": ("waldecode.output.pgoutput", "PgOutput"),
    "wal2json": ("waldecode.output.wal2json", "Wal2Json"),
    "jsonl": ("waldecode.output.jsonl", "JsonLines"),
}


def plugin_class(name: str):
    """The output plugin class of ``--format name``."""
    try:
        module, cls = PLUGINS[name]
    except KeyError:
        raise OutputPluginError(f"unknown output plugin {name!r} (known: {', '.join(PLUGINS)})") from None
    return getattr(importlib.import_module(module), cls)


__all__ = ["UNCHANGED_TOAST", "OutputPluginError", "PLUGINS", "plugin_class"]
