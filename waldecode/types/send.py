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

from ..errors import CorruptRecordError, TypeOutputError, UnsupportedTypeError
from ..heap.heaptuple import MissingValue, datum_type_oid, deform_datum_tuple
from .arrays import deconstruct
from .enums import enum_out
from .jsonb import jsonb_text
from .misc import xml_out_internal
from .numeric import numeric_parts
from .ranges import multirange_ranges, range_parts



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
    sign, weight, dscale, digits = numeric_parts(bytes(value))
    return struct.pack(f">hhHh{len(digits)}H", len(digits), weight, sign, dscale, *digits)


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
    return b"\x01" + jsonb_text(value).encode("utf-8", "surrogateescape")


def xml_send(value, typ, ctx) -> bytes:
    """xml_send: pq_sendtext of xml_out_internal(x, client encoding), the client's encoding being the
    database's here (a walsender's default client_encoding; pq_sendtext then converts nothing)."""
    return xml_out_internal(value, ctx.settings.get("server_encoding"))


def enum_send(value, typ, ctx) -> bytes:
    """enum_send: the label's text."""
    return enum_out(value, typ, ctx).encode("utf-8", "surrogateescape")


def _network_send(is_cidr: bool):
    """inet_send / cidr_send: family, bits, is_cidr, address length, address."""
    def send(value, typ, ctx) -> bytes:
        v = bytes(value)
        if len(v) not in (6, 18):
            raise CorruptRecordError(f"inet datum is {len(v)} bytes, expected 6 or 18")
        return bytes((v[0], v[1], 1 if is_cidr else 0, len(v) - 2)) + v[2:]
    return send


def varbit_send(value, typ, ctx) -> bytes:
    """bit_send / varbit_send: int32 bit length, then the bits."""
    if len(value) < 4:
        raise CorruptRecordError(f"bit string datum of {len(value)} bytes has no length")
    return bytes(value[0:4])[::-1] + bytes(value[4:])


def _float8s(n: int, what: str):
    """point_send, box_send: ``n`` float8s, each in network byte order."""
    def send(value, typ, ctx) -> bytes:
        if len(value) != 8 * n:
            raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {8 * n}")
        v = bytes(value)
        return b"".join(v[i:i + 8][::-1] for i in range(0, 8 * n, 8))
    return send


def _counted(fn, value) -> bytes:
    """A nested value as send functions embed one: int32 length, then its bytes."""
    data = fn(value)
    return struct.pack(">i", len(data)) + data


def array_send(value, typ, ctx) -> bytes:
    """array_send: ndim, has-nulls flag, element type, (dim, lower bound) per dimension, then each
    element as int32 length (-1: NULL) and its send function's bytes."""
    elemtype, dims, lbounds, items = deconstruct(value, ctx)
    has_nulls = len(value) >= 8 and struct.unpack_from("<i", value, 4)[0] != 0  # dataoffset: a null bitmap
    parts = [struct.pack(">iiI", len(dims), 1 if has_nulls else 0, elemtype)]
    for d, lb in zip(dims, lbounds):
        parts.append(struct.pack(">ii", d, lb))
    if items:
        send = send_function(ctx, elemtype)
        for item in items:
            parts.append(b"\xff\xff\xff\xff" if item is None else _counted(send, item))
    return b"".join(parts)


def record_send(value, typ, ctx) -> bytes:
    """record_send: the number of columns, then per column its type OID and its value (int32 length,
    -1 for NULL, and the send function's bytes)."""
    typeoid = datum_type_oid(value)
    rtyp = ctx.catalog.type(typeoid) or typ
    relation = ctx.catalog.relation(rtyp.typrelid) if rtyp.typrelid else None
    if relation is None:
        raise UnsupportedTypeError(typeoid, rtyp.typname, "record_send (the composite type's attributes are not "
                                   "in the catalog)")
    atts = relation.attributes
    values = deform_datum_tuple(value, atts)
    live = [(a, v) for a, v in zip(atts, values) if not a.attisdropped]
    parts = [struct.pack(">i", len(live))]
    for a, v in live:
        parts.append(struct.pack(">I", a.atttypid))
        parts.append(b"\xff\xff\xff\xff" if v is None else _counted(send_function(ctx, a.atttypid), v))
    return b"".join(parts)


def _range_bytes(ctx, subtype: int, flags: int, lower, upper) -> bytes:
    """range_send of one range: its flags byte, then each bound present, counted."""
    parts = [bytes((flags,))]
    if lower is not None or upper is not None:
        send = send_function(ctx, subtype)
        for bound in (lower, upper):
            if bound is not None:
                parts.append(_counted(send, bound))
    return b"".join(parts)


def range_send(value, typ, ctx) -> bytes:
    subtype, flags, lower, upper = range_parts(value, typ, ctx)
    return _range_bytes(ctx, subtype, flags, lower, upper)


def multirange_send(value, typ, ctx) -> bytes:
    """multirange_send: the number of ranges, then each range_send's bytes, counted."""
    subtype, ranges = multirange_ranges(value, typ, ctx)
    parts = [struct.pack(">i", len(ranges))]
    for flags, lower, upper in ranges:
        data = _range_bytes(ctx, subtype, flags, lower, upper)
        parts.append(struct.pack(">i", len(data)) + data)
    return b"".join(parts)


def tsvector_send(value, typ, ctx) -> bytes:
    """tsvectorsend: the number of lexemes, then each lexeme NUL-terminated, its number of positions
    and the positions (WordEntryPos, uint16)."""
    v = bytes(value)
    if len(v) < 4:
        raise CorruptRecordError(f"tsvector datum of {len(v)} bytes has no size")
    size = struct.unpack_from("<i", v, 0)[0]
    strptr = 4 + 4 * size
    if size < 0 or strptr > len(v):
        raise CorruptRecordError(f"tsvector datum of {len(v)} bytes claims {size} lexemes")
    parts = [struct.pack(">i", size)]
    for e in struct.unpack_from(f"<{size}I", v, 4):
        haspos, length, pos = e & 1, (e >> 1) & 0x7FF, e >> 12
        start = strptr + pos
        if start + length > len(v):
            raise CorruptRecordError(f"tsvector lexeme at {pos} (+{length}) runs past the end of the value")
        parts.append(v[start:start + length] + b"\x00")
        npos = 0
        positions = ()
        if haspos:
            p = strptr + ((pos + length + 1) & ~1)
            if p + 2 > len(v):
                raise CorruptRecordError("tsvector position vector runs past the end of the value")
            npos = struct.unpack_from("<H", v, p)[0]
            if p + 2 + 2 * npos > len(v):
                raise CorruptRecordError("tsvector position vector runs past the end of the value")
            positions = struct.unpack_from(f"<{npos}H", v, p + 2)
        parts.append(struct.pack(f">H{npos}H", npos, *positions))
    return b"".join(parts)


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
    "xml_out": xml_send,
    "byteaout": _as_is,
    "uuid_out": _as_is,
    "nameout": namesend,
    "numeric_out": numeric_send,
    "jsonb_out": jsonb_send,
    "enum_out": enum_send,
    "inet_out": _network_send(False),
    "cidr_out": _network_send(True),
    "macaddr_out": _as_is,
    "macaddr8_out": _as_is,
    "bit_out": varbit_send,
    "varbit_out": varbit_send,
    "point_out": _float8s(2, "point"),
    "box_out": _float8s(4, "box"),
    "array_out": array_send,
    "record_out": record_send,
    "range_out": range_send,
    "multirange_out": multirange_send,
    "tsvectorout": tsvector_send,
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
