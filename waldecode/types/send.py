"""Binary send functions: the bytes a type's typsend gives for a stored datum (pgoutput binary=true).

Owns ``send_bytes(ctx, typeoid, value)``: what ``OidSendFunctionCall(typsend, value)`` returns
(without its varlena header) for a column value as ``heaptuple`` gives it (bytes as stored, a
varlena payload, or a ``MissingValue``).  Dispatch is by the type's output function name, as
``types.OUTPUT_FUNCTIONS`` dispatches output: each send function below is the one PostgreSQL pairs
with that output function (int4send with int4out, ...), and a domain carries its base type's.
Types whose send function is not written here raise ``UnsupportedSendError``: binary output of
them is refused, never approximated.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.heaptuple import MissingValue
from . import TypeOutputError
from .numeric import (NUMERIC_DSCALE_MASK, NUMERIC_EXT_SIGN_MASK, NUMERIC_NEG, NUMERIC_POS, NUMERIC_SHORT,
                      NUMERIC_SHORT_DSCALE_MASK, NUMERIC_SHORT_DSCALE_SHIFT, NUMERIC_SHORT_SIGN_MASK,
                      NUMERIC_SHORT_WEIGHT_MASK, NUMERIC_SHORT_WEIGHT_SIGN_MASK, NUMERIC_SIGN_MASK, NUMERIC_SPECIAL)

_u16 = struct.Struct("<H")
_i16 = struct.Struct("<h")


class UnsupportedSendError(TypeOutputError):
    """The type's send function is not implemented here."""


def _reversed(n: int, what: str):
    """A fixed-length little-endian datum sent in network byte order (pq_sendint16/32/64, pq_sendfloat4/8)."""
    def send(value, typ, ctx) -> bytes:
        if len(value) != n:
            raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {n}")
        return bytes(value)[::-1]
    return send


def _as_is(value, typ, ctx) -> bytes:
    """textsend, byteasend, bpcharsend, varcharsend, json_send, uuid_send, boolsend, charsend: the stored
    bytes (the server's encoding is the client's here: pq_sendtext converts nothing)."""
    return bytes(value)


def namesend(value, typ, ctx) -> bytes:
    """namesend: pq_sendtext of the name up to its NUL."""
    return bytes(value).split(b"\x00", 1)[0]


def numeric_send(value, typ, ctx) -> bytes:
    """numeric_send: int16 ndigits, weight, sign, dscale, then the base-10000 digits (init_var_from_num)."""
    payload = bytes(value)
    if len(payload) < 2:
        raise CorruptRecordError(f"numeric datum of {len(payload)} bytes has no header")
    header = _u16.unpack_from(payload, 0)[0]
    flags = header & NUMERIC_SIGN_MASK
    if flags == NUMERIC_SPECIAL:
        # NUMERIC_HEADER_IS_SHORT holds for specials: weight and dscale read as 0, the sign is the
        # extended flag bits (NaN, +Inf, -Inf)
        return struct.pack(">hhHh", 0, 0, header & NUMERIC_EXT_SIGN_MASK, 0)
    if flags == NUMERIC_SHORT:
        sign = NUMERIC_NEG if header & NUMERIC_SHORT_SIGN_MASK else NUMERIC_POS
        dscale = (header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT
        weight = header & NUMERIC_SHORT_WEIGHT_MASK
        if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK:
            weight -= 64
        pos = 2
    else:
        if len(payload) < 4:
            raise CorruptRecordError(f"numeric datum of {len(payload)} bytes is too short for its long header")
        sign = flags
        dscale = header & NUMERIC_DSCALE_MASK
        weight = _i16.unpack_from(payload, 2)[0]
        pos = 4
    ndigits = (len(payload) - pos) >> 1
    digits = struct.unpack_from(f"<{ndigits}H", payload, pos)
    return struct.pack(f">hhHh{ndigits}H", ndigits, weight, sign, dscale, *digits)


def timetz_send(value, typ, ctx) -> bytes:
    """timetz_send: int64 time, int32 zone (TimeTzADT stored as 8 + 4 bytes)."""
    if len(value) != 12:
        raise CorruptRecordError(f"timetz datum is {len(value)} bytes, expected 12")
    return bytes(value[0:8])[::-1] + bytes(value[8:12])[::-1]


def interval_send(value, typ, ctx) -> bytes:
    """interval_send: int64 time, int32 day, int32 month."""
    if len(value) != 16:
        raise CorruptRecordError(f"interval datum is {len(value)} bytes, expected 16")
    return bytes(value[0:8])[::-1] + bytes(value[8:12])[::-1] + bytes(value[12:16])[::-1]


def jsonb_send(value, typ, ctx) -> bytes:
    """jsonb_send: version 1, then the jsonb's text (JsonbToCString, as jsonb_out)."""
    from .jsonb import jsonb_text

    return b"\x01" + jsonb_text(value).encode("utf-8", "surrogateescape")


def enum_send(value, typ, ctx) -> bytes:
    """enum_send: the label's text."""
    from .enums import enum_out

    return enum_out(value, typ, ctx).encode("utf-8", "surrogateescape")


# output function name -> the send function PostgreSQL pairs with it (src/include/catalog/pg_type.dat)
SEND_FUNCTIONS = {
    "boolout": _as_is,  # boolsend: one byte, 0 or 1
    "charout": _as_is,  # charsend
    "int2out": _reversed(2, "int2"),
    "int4out": _reversed(4, "int4"),
    "int8out": _reversed(8, "int8"),
    "oidout": _reversed(4, "oid"),
    "xidout": _reversed(4, "xid"),
    "cidout": _reversed(4, "cid"),
    "xid8out": _reversed(8, "xid8"),
    "pg_lsn_out": _reversed(8, "pg_lsn"),
    "float4out": _reversed(4, "float4"),
    "float8out": _reversed(8, "float8"),
    "cash_out": _reversed(8, "money"),
    "date_out": _reversed(4, "date"),
    "time_out": _reversed(8, "time"),
    "timestamp_out": _reversed(8, "timestamp"),
    "timestamptz_out": _reversed(8, "timestamptz"),
    "timetz_out": timetz_send,
    "interval_out": interval_send,
    "textout": _as_is,
    "varcharout": _as_is,
    "bpcharout": _as_is,
    "json_out": _as_is,
    "byteaout": _as_is,
    "uuid_out": _as_is,
    "nameout": namesend,
    "numeric_out": numeric_send,
    "jsonb_out": jsonb_send,
    "enum_out": enum_send,
}

#: output functions of types without a send function (pg_type.typsend 0): pgoutput sends them as text
NO_SEND_FUNCTION = frozenset(("aclitemout",))

# output function name -> the input function for the text of a missing value (atthasmissing), as
# the stored datum: only for the types whose stored form is simple to make from text
_FROM_TEXT = {
    "int2out": lambda t: struct.pack("<h", int(t)),
    "int4out": lambda t: struct.pack("<i", int(t)),
    "int8out": lambda t: struct.pack("<q", int(t)),
    "oidout": lambda t: struct.pack("<I", int(t)),
    "boolout": lambda t: b"\x01" if t == "t" else b"\x00",
    "textout": lambda t: t.encode("utf-8", "surrogateescape"),
    "varcharout": lambda t: t.encode("utf-8", "surrogateescape"),
    "bpcharout": lambda t: t.encode("utf-8", "surrogateescape"),
    "json_out": lambda t: t.encode("utf-8", "surrogateescape"),
}


def _bare_name(regproc: str) -> str:
    name = regproc.rsplit(".", 1)[-1] if "." in regproc else regproc
    return name.strip('"')


def send_function(ctx, typeoid: int):
    """fn(value) -> bytes: type ``typeoid``'s send function over a column value; raises
    ``UnsupportedSendError`` for a type whose send function is not written here."""
    typ = ctx.type(typeoid)
    name = _bare_name(typ.typoutput)
    fn = SEND_FUNCTIONS.get(name)
    if fn is None:
        raise UnsupportedSendError(f"binary output of type {typ.typname} (OID {typeoid}) is not supported: its "
                                   f"send function (paired with {typ.typoutput}) is not implemented")
    from_text = _FROM_TEXT.get(name)

    def send(value) -> bytes:
        if value.__class__ is MissingValue:
            if from_text is None:
                raise UnsupportedSendError(f"binary output of a missing value (a column added with a default "
                                           f"later) of type {typ.typname} is not supported")
            value = from_text(value.text)
        return fn(value, typ, ctx)
    return send
