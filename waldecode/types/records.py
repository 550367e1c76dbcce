"""record_out (rowtypes.c): a composite datum as ``(v1,v2,...)``.

The datum is a heap tuple in datum form whose header names its own type
(datum_typeid); its columns are those of that type's ``typrelid`` relation,
dropped ones included (walked over, not printed).  NULL prints nothing; a value
is double-quoted when empty or containing ``"`` ``\\`` ``(`` ``)`` ``,`` or
white space, with ``"`` and ``\\`` doubled inside.
"""

from __future__ import annotations

from ..heap.heaptuple import datum_type_oid, deform_datum_tuple
from ..heap.varlena import ToastPointer
from ..errors import TypeOutputError, UnsupportedTypeError

_SPECIAL = frozenset('"\\(),') | frozenset(" \t\n\r\v\f")


def record_text(value, typ, ctx) -> str:
    typeoid = datum_type_oid(value)
    rtyp = ctx.catalog.type(typeoid) or typ
    relation = ctx.catalog.relation(rtyp.typrelid) if rtyp.typrelid else None
    if relation is None:
        raise UnsupportedTypeError(typeoid, rtyp.typname if rtyp.oid == typeoid else None,
                                   "record_out (the composite type's attributes are not in the catalog)")
    attrs = relation.attributes
    values = deform_datum_tuple(value, attrs)
    parts = []
    out = ctx.output
    for att, v in zip(attrs, values):
        if att.attisdropped:
            continue
        if v is None:
            parts.append("")
            continue
        if isinstance(v, ToastPointer):
            raise TypeOutputError(f"attribute {att.attname} of composite type {rtyp.typname} is a TOAST pointer")
        s = out(att.atttypid, v)
        if not s or not _SPECIAL.isdisjoint(s):
            s = '"' + s.replace('"', '""').replace("\\", "\\\\") + '"'
        parts.append(s)
    return "(" + ",".join(parts) + ")"


def record_out(value, typ, ctx) -> str:
    return record_text(value, typ, ctx)


OUTPUT_FUNCTIONS = {"record_out": record_out}
