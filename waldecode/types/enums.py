"""enum_out (enum.c): an enum value is the OID of its pg_enum row; it prints
that row's ``enumlabel``.  Labels come from the catalog's ``TypeInfo.enum_labels``
of the enum type (for a domain over an enum, of its base type)."""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError, TypeOutputError

_u32 = struct.Struct("<I")


def _labels(typ, ctx) -> dict:
    seen = 0
    while typ is not None and typ.typtype == "d" and typ.typbasetype and seen < 32:
        typ = ctx.catalog.type(typ.typbasetype)
        seen += 1
    return typ.enum_labels if typ is not None else {}


def enum_out(value, typ, ctx) -> str:
    if len(value) != 4:
        raise CorruptRecordError(f"enum datum is {len(value)} bytes, expected 4")
    label_oid = _u32.unpack(value)[0]
    label = _labels(typ, ctx).get(label_oid)
    if label is None:
        # Not among this type's labels: look through every enum (e.g. a mislabelled domain)
        for other in ctx.catalog.types.values():
            if other.enum_labels and label_oid in other.enum_labels:
                return other.enum_labels[label_oid]

        raise TypeOutputError(f"enum value OID {label_oid} of type {typ.typname} is not in the catalog "
                              f"(pg_enum row missing from the snapshot)")
    return label


OUTPUT_FUNCTIONS = {"enum_out": enum_out}
