"""Type output: the text PostgreSQL's output functions print for a stored datum.

Owns turning one column value from ``heaptuple`` (bytes as stored, a varlena
payload, or a ``MissingValue``) into exactly the string the type's output
function (``pg_type.typoutput``) prints in a session with the given settings
(TimeZone, DateStyle, IntervalStyle, extra_float_digits, bytea_output,
lc_monetary).  Hands text to the output plugins, which quote it as they print
it (test_decoding's print_literal lives in ``output.test_decoding``).

Dispatch is by output function name, as the server's fmgr does: domains carry
their base type's output function, containers (``array_out``, ``record_out``,
``range_out``, ``multirange_out``) call back into ``OutputContext.output`` for
their elements.  One module per family, named after what it prints:
``numeric`` (integers, numeric), ``float``, ``datetime``, ``network``,
``misc`` (bool, "char", name, text family, bytea, uuid, oid family, money,
pg_lsn, bit strings, json, xml, tid), ``jsonb``, ``arrays``, ``records``,
``ranges`` (and multiranges), ``enums``, ``geometric``, ``textsearch`` (tsvector),
``hstore`` (contrib).
"""

from __future__ import annotations

import importlib

from ..pg.settings import DEFAULT_SETTINGS
from ..errors import TypeOutputError, UnsupportedSettingError, UnsupportedTypeError
from ..heap.heaptuple import MissingValue
from ..heap.varlena import ToastPointer
from . import datetime as _dt
from . import misc as _misc


# output function name -> fn(value, typ, ctx) -> str; filled from the family modules below
OUTPUT_FUNCTIONS: dict = {}


class OutputContext:
    """A catalog plus parsed session settings: what output functions read.

    Build one per (catalog, settings) and reuse it; ``output_text`` keeps a
    small cache of them.
    """

    def __init__(self, catalog, settings: dict | None = None):
        self.catalog = catalog
        self.major = getattr(catalog, "major", 15) or 15
        merged = dict(DEFAULT_SETTINGS)
        if settings is None:
            settings = getattr(catalog, "settings", None) or {}
        merged.update({k: v for k, v in settings.items() if v is not None})
        self.settings = merged
        try:
            self.extra_float_digits = int(str(merged["extra_float_digits"]).strip())
        except ValueError:
            raise UnsupportedSettingError(
                f"extra_float_digits = {merged['extra_float_digits']!r} is not an integer") from None
        self.extra_float_digits = max(-15, min(3, self.extra_float_digits))
        bo = str(merged["bytea_output"]).strip().lower()
        if bo not in ("hex", "escape"):
            raise UnsupportedSettingError(f"bytea_output = {merged['bytea_output']!r} is not hex or escape")
        self.bytea_hex = bo == "hex"
        self.datestyle, self.dateorder = _dt.parse_datestyle(merged["DateStyle"])
        self.intervalstyle = _dt.parse_intervalstyle(merged["IntervalStyle"])
        self.timezone_name = str(merged["TimeZone"])
        self._timezone = None
        self.monetary = _misc.monetary_conventions(str(merged["lc_monetary"]))
        self._funcs: dict = {}

    @property
    def timezone(self):
        if self._timezone is None:
            self._timezone = _dt.load_timezone(self.timezone_name)
        return self._timezone

    def type(self, typeoid: int):
        typ = self.catalog.type(typeoid)
        if typ is None:
            raise UnsupportedTypeError(typeoid, None)
        return typ

    def function(self, typeoid: int) -> tuple:
        """(output function, TypeInfo) of type ``typeoid``; the function is called as fn(value, typ, ctx)."""
        entry = self._funcs.get(typeoid)
        if entry is None:
            typ = self.type(typeoid)
            fn = OUTPUT_FUNCTIONS.get(typ.typoutput) or OUTPUT_FUNCTIONS.get(_bare_name(typ.typoutput))
            if fn is None:
                raise UnsupportedTypeError(typeoid, typ.typname, typ.typoutput)
            entry = self._funcs[typeoid] = (fn, typ)
        return entry

    def output(self, typeoid: int, value) -> str:
        """The output function of type ``typeoid`` applied to ``value``."""
        if value.__class__ is MissingValue:
            return value.text
        entry = self._funcs.get(typeoid) or self.function(typeoid)
        if value.__class__ is ToastPointer:
            raise TypeOutputError(f"value of type {entry[1].typname} is still a TOAST pointer "
                                  f"(value {value.va_valueid} of TOAST relation {value.va_toastrelid}): "
                                  f"resolve it before output")
        if value is None:
            raise TypeOutputError(f"NULL has no output text (type {entry[1].typname})")
        return entry[0](value, entry[1], self)


def _bare_name(regproc: str) -> str:
    """'public.hstore_out' or '"s".f' (regproc text, qualified when not visible) -> the function name."""
    name = regproc.rsplit(".", 1)[-1] if "." in regproc else regproc
    return name.strip('"')


_contexts: dict = {}


def output_text(typeoid: int, value, catalog, settings: dict | None = None) -> str:
    """Exactly what the output function of ``typeoid`` prints for ``value`` in a
    session with ``settings`` (default: the catalog's, then PostgreSQL's defaults).

    ``value`` is what ``heaptuple`` returns for a non-NULL column: ``bytes``
    (fixed-length as stored, or a varlena payload) or a ``MissingValue``.
    """
    if settings is None:
        settings = getattr(catalog, "settings", None) or {}
    key = (id(catalog), tuple(sorted((k, str(v)) for k, v in settings.items())))
    hit = _contexts.get(key)
    if hit is None or hit[0] is not catalog:
        if len(_contexts) > 64:
            _contexts.clear()
        hit = _contexts[key] = (catalog, OutputContext(catalog, settings))
    return hit[1].output(typeoid, value)


def _register():
    for name in ("numeric", "float", "datetime", "network", "misc", "jsonb", "arrays", "records", "ranges",
                 "enums", "geometric", "textsearch", "hstore"):
        OUTPUT_FUNCTIONS.update(importlib.import_module(f"{__name__}.{name}").OUTPUT_FUNCTIONS)


_register()

__all__ = ["OutputContext", "output_text", "TypeOutputError", "UnsupportedTypeError", "UnsupportedSettingError",
           "OUTPUT_FUNCTIONS"]
