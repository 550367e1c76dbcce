"""Row filter values: datum bytes, attmissingval text and Const nodes to the Python values the built-in
functions compute on."""

from __future__ import annotations

import struct
from decimal import Context, Decimal

from ...heap.varlena import read_varlena
from ...pg.pg_type import (BOOLOID, BPCHAROID, DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, NAMEOID,
                           NUMERICOID, OIDOID, TEXTOID, TIMESTAMPOID, TIMESTAMPTZOID, UUIDOID, VARCHAROID)
from ...types.arrays import deconstruct
from ...types.numeric import numeric_text
from .nodetree import Node, RowFilterError


# ---------------------------------------------------------------------------------------------
# Types: datum bytes (or attmissingval text) to the Python values the functions below compute on
# ---------------------------------------------------------------------------------------------

# src/include/catalog/pg_collation.dat
DEFAULT_COLLATION_OID = 100
C_COLLATION_OID = 950
POSIX_COLLATION_OID = 951

# src/include/datatype/timestamp.h
TIMESTAMP_END_JULIAN = 109203528

_FIXED = {
    BOOLOID: struct.Struct("<?"), INT2OID: struct.Struct("<h"), INT4OID: struct.Struct("<i"),
    INT8OID: struct.Struct("<q"), OIDOID: struct.Struct("<I"), FLOAT4OID: struct.Struct("<f"),
    FLOAT8OID: struct.Struct("<d"), DATEOID: struct.Struct("<i"), TIMESTAMPOID: struct.Struct("<q"),
    TIMESTAMPTZOID: struct.Struct("<q"),
}
_TEXTUAL = (TEXTOID, VARCHAROID, BPCHAROID)
_INT_TYPES = (INT2OID, INT4OID, INT8OID)
# typlen, typalign of the element types an array Const may have (for arrays.deconstruct)
_ELEM_LAYOUT = {BOOLOID: (1, "c"), INT2OID: (2, "s"), INT4OID: (4, "i"), INT8OID: (8, "d"), OIDOID: (4, "i"),
                FLOAT4OID: (4, "i"), FLOAT8OID: (8, "d"), DATEOID: (4, "i"), TIMESTAMPOID: (8, "d"),
                TIMESTAMPTZOID: (8, "d"), NUMERICOID: (-1, "i"), TEXTOID: (-1, "i"), VARCHAROID: (-1, "i"),
                BPCHAROID: (-1, "i"), NAMEOID: (64, "c"), UUIDOID: (16, "c")}
_ARRAY_OF = {1000: BOOLOID, 1005: INT2OID, 1007: INT4OID, 1016: INT8OID, 1028: OIDOID, 1021: FLOAT4OID,
             1022: FLOAT8OID, 1182: DATEOID, 1115: TIMESTAMPOID, 1185: TIMESTAMPTZOID, 1231: NUMERICOID,
             1009: TEXTOID, 1015: VARCHAROID, 1014: BPCHAROID, 1003: NAMEOID, 2951: UUIDOID}
SUPPORTED_TYPES = frozenset(_ELEM_LAYOUT)

_NUMERIC_CONTEXT = Context(prec=1_000_000, Emax=10**9, Emin=-10**9, traps=[])


def _numeric(payload: bytes) -> Decimal:
    return Decimal(numeric_text(payload))


def datum_value(typoid: int, raw: bytes):
    """The value of a datum of type ``typoid`` as the decoder hands it (fixed-length: the
    ``typlen`` bytes; varlena: the payload without its header)."""
    st = _FIXED.get(typoid)
    if st is not None:
        return st.unpack_from(raw, 0)[0]
    if typoid in _TEXTUAL:
        return bytes(raw).decode("utf-8", "surrogateescape")
    if typoid == NUMERICOID:
        return _numeric(raw)
    if typoid == NAMEOID:
        return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    if typoid == UUIDOID:
        return bytes(raw)
    raise TypeError(typoid)


def text_value(typoid: int, text: str):
    """The value of the output text of a datum of type ``typoid`` (an attmissingval)."""
    if typoid in _INT_TYPES or typoid == OIDOID:
        return int(text)
    if typoid in (FLOAT4OID, FLOAT8OID):
        return float(text)
    if typoid == NUMERICOID:
        return Decimal(text)
    if typoid in _TEXTUAL or typoid == NAMEOID:
        return text
    if typoid == BOOLOID:
        return text == "t"
    if typoid == UUIDOID:
        return bytes.fromhex(text.replace("-", ""))
    # dates and timestamps print per DateStyle: not read back here
    raise RowFilterError(f"a missing value (attmissingval {text!r}) of type OID {typoid} cannot be read back")


class _ElemTypes:
    """What arrays.deconstruct asks of a catalog: typlen and typalign of an element type."""

    class _T:
        def __init__(self, typlen, typalign):
            self.typlen, self.typalign, self.typname = typlen, typalign, "element"

    def type(self, oid: int):
        layout = _ELEM_LAYOUT.get(oid)
        if layout is None:
            raise TypeError(oid)
        return self._T(*layout)


def _const_value(node: Node):
    """A Const's value: its Datum bytes as outDatum wrote them, read as the decoder reads a column."""
    if node.bool("constisnull"):
        return None
    typoid = node.int("consttype")
    data = node["constvalue"]
    constlen = node.int("constlen")
    if node.bool("constbyval"):
        raw = data[:constlen]
    elif constlen == -1:
        raw, _ = read_varlena(data, 0, len(data))
    else:
        raw = data[:constlen]
    if typoid in _ARRAY_OF:
        elemtype, _dims, _lb, items = deconstruct(raw, _ElemTypes())
        return [None if v is None else datum_value(elemtype, v) for v in items]
    return datum_value(typoid, raw)
