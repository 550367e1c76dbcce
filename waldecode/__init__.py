"""waldecode: PostgreSQL logical decoding, offline, from WAL segment files.

The library's face (``docs/api.md``): ``decode_wal`` decodes segments as a ``DecodeRequest`` asks,
through an output plugin (``plugin_class(name)``, ``PLUGINS``) with a catalog snapshot (``Catalog.load``, or taken with
``snapshot_from_dsn`` / ``snapshot_from_datadir``); LSNs as text with ``parse_lsn`` / ``format_lsn``;
every error is an ``Error``.  The names are imported when first used, so that ``import waldecode``
(and the command line's start) stays light.
"""

import importlib

from .errors import Error

__version__ = "0.1.0"

#: name -> (module, attribute): what ``from waldecode import name`` gives
_EXPORTS = {
    "decode_wal": ("waldecode.logical.session", "decode_wal"),
    "DecodeResult": ("waldecode.logical.session", "DecodeResult"),
    "DecodeRequest": ("waldecode.logical.request", "DecodeRequest"),
    "Catalog": ("waldecode.catalog", "Catalog"),
    "snapshot_from_dsn": ("waldecode.catalog.dsn", "snapshot_from_dsn"),
    "snapshot_from_datadir": ("waldecode.catalog.datadir.snapshot", "snapshot_from_datadir"),
    "plugin_class": ("waldecode.output", "plugin_class"),
    "PLUGINS": ("waldecode.output", "PLUGINS"),
    "OutputPlugin": ("waldecode.output.base", "OutputPlugin"),
    "parse_lsn": ("waldecode.pg.lsn", "parse_lsn"),
    "format_lsn": ("waldecode.pg.lsn", "format_lsn"),
    "WALError": ("waldecode.errors", "WALError"),
    "DecodeError": ("waldecode.errors", "DecodeError"),
    "CatalogError": ("waldecode.errors", "CatalogError"),
}


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'waldecode' has no attribute {name!r}") from None

    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_EXPORTS])


__all__ = ["Error", "__version__", *_EXPORTS]
