"""Publication row filters: pg_publication_rel.prqual read and evaluated as pgoutput evaluates it.

Owns three things the pgoutput plugin needs to decide whether a row change is published:

* ``parse_node_tree(text)``: the pg_node_tree text a row filter is stored as (nodeToString's
  format, src/backend/nodes/outfuncs.c; read back by read.c and readfuncs.c) into ``Node``s.
* ``RowFilter``: one relation's filter for one publication action, compiled from one or more
  prqual texts (several publications' filters are ORed, make_orclause in pgoutput.c), and
  evaluated over a row with SQL's three-valued logic: ``evaluate(row)`` is True, False or None
  (NULL); ``matches(row)`` is pgoutput_row_filter_exec_expr's answer (NULL counts as false).
* ``RelationRowFilters``: the filters of one relation for INSERT, UPDATE and DELETE built from
  the publications a slot was started with (pgoutput_row_filter_init), and ``filter_change``,
  pgoutput_row_filter's rules for which tuple the filter sees and how an UPDATE whose old and
  new rows disagree becomes an INSERT or a DELETE.

Rows are what ``OutputPlugin.change`` receives: one value per attribute in attnum order (dropped
columns included), each None (NULL), ``bytes`` as ``heap.heaptuple`` gives them (fixed-length:
the ``attlen`` bytes as stored; varlena: the payload without its header), a
``heaptuple.MissingValue`` (its attmissingval text is parsed), ``output.UNCHANGED_TOAST`` or a
``varlena.ToastPointer``.  The last two hold no value here: a filter that needs one raises
``RowFilterError`` (the server would fetch it from the TOAST table; waldecode does not guess).

PostgreSQL allows only simple expressions in row filters (check_simple_rowfilter_expr_walker in
src/backend/commands/publicationcmds.c): columns, constants, built-in operators and immutable
built-in functions, over built-in types and collations.  The expression is stored as parsed (not
planned: no constant folding), so the nodes met are Var, Const, OpExpr, DistinctExpr,
NullIfExpr, ScalarArrayOpExpr (IN, = ANY) with an ArrayExpr or an array Const, BoolExpr,
NullTest, BooleanTest, FuncExpr, RelabelType, CollateExpr, CoalesceExpr, MinMaxExpr, CaseExpr
(and CaseTestExpr).  Functions are known by their pg_proc OID (``_PROCS``: OID -> prosrc, the C
function; built-in OIDs are fixed by pg_proc.dat and checked against live servers by the
tests), each implemented as the C function computes it, including its errors (overflow,
division by zero).  Anything else -- another node (RowCompareExpr, RowExpr, XmlExpr), a
function or a column type not implemented here, ordering text under a collation other than
C/POSIX -- raises ``RowFilterError`` naming the relation and what is missing, when the filter is
compiled: never a guessed answer.

Datums are read as little-endian, as everywhere in waldecode; Const values in the node tree are
the Datum's bytes in memory order (outDatum), so the same holds for them.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from typing import Callable

from ..errors import OutputPluginError
from ..heap.heaptuple import MissingValue
from ..heap.varlena import ToastPointer, read_varlena
from ..pg.pg_type import (BOOLOID, BPCHAROID, DATEOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID,
                           NAMEOID, NUMERICOID, OIDOID, TEXTOID, TIMESTAMPOID, TIMESTAMPTZOID, UUIDOID,
                           VARCHAROID)
from ..types.datetime import DATEVAL_NOBEGIN, DATEVAL_NOEND, DT_NOBEGIN, DT_NOEND, POSTGRES_EPOCH_JDATE, USECS_PER_DAY
from . import UNCHANGED_TOAST
from .base import DELETE, INSERT, UPDATE


class RowFilterError(OutputPluginError):
    """A row filter that cannot be read, compiled or evaluated (names the relation)."""


# ---------------------------------------------------------------------------------------------
# pg_node_tree text (src/backend/nodes/read.c: pg_strtok, nodeRead; readfuncs.c: readDatum)
# ---------------------------------------------------------------------------------------------

class Node:
    """One node of a parsed tree: its tag as outfuncs.c writes it (``OPEXPR``) and its fields,
    each a raw token (str, backslashes removed), None (``<>``), a ``Node``, a list, or the bytes
    of a Datum (``:constvalue``)."""

    __slots__ = ("tag", "fields")

    def __init__(self, tag: str, fields: dict):
        self.tag = tag
        self.fields = fields

    def __repr__(self) -> str:
        return f"Node({self.tag}, {self.fields!r})"

    def __getitem__(self, name: str):
        try:
            return self.fields[name]
        except KeyError:
            raise RowFilterError(f"node {self.tag} has no field :{name}") from None

    def int(self, name: str) -> int:
        return int(self[name])

    def bool(self, name: str) -> bool:
        return self[name] == "true"


_TOKEN_RE = re.compile(r"[(){}]|(?:\\.|[^\s(){}])+", re.S)
_UNESCAPE_RE = re.compile(r"\\(.)", re.S)


def _tokens(text: str) -> list[str]:
    # pg_strtok: parentheses and braces are tokens of their own; anything else runs to the next
    # blank or bracket, a backslash escaping the character after it
    return _TOKEN_RE.findall(text)


def parse_node_tree(text: str):
    """stringToNode: the node (or list, or None) a pg_node_tree text holds."""
    toks = _tokens(text)
    pos, value = _read_value(toks, 0, text)
    if pos != len(toks):
        raise RowFilterError(f"node tree has trailing text after token {pos}: {' '.join(toks[pos:pos + 5])}")
    return value


def _read_value(toks: list[str], pos: int, text: str):
    if pos >= len(toks):
        raise RowFilterError(f"node tree ends early: {text[:200]!r}")
    tok = toks[pos]
    if tok == "{":
        return _read_node(toks, pos + 1, text)
    if tok == "(":
        return _read_list(toks, pos + 1, text)
    if tok == "<>":
        return pos + 1, None
    if tok in (")", "}"):
        raise RowFilterError(f"node tree has an unexpected {tok!r} at token {pos}")
    value = _UNESCAPE_RE.sub(r"\1", tok)
    if pos + 1 < len(toks) and toks[pos + 1] == "[":
        # readDatum: "<length> [ b0 b1 ... ]", each byte a signed char in decimal
        try:
            end = toks.index("]", pos + 2)
            data = bytes(int(b) & 0xFF for b in toks[pos + 2:end])
        except ValueError:
            raise RowFilterError(f"node tree has a malformed datum at token {pos}") from None
        return end + 1, data
    return pos + 1, value


def _read_node(toks: list[str], pos: int, text: str):
    if pos >= len(toks):
        raise RowFilterError("node tree ends inside a node")
    node = Node(toks[pos], {})
    pos += 1
    while True:
        if pos >= len(toks):
            raise RowFilterError(f"node tree ends inside a {node.tag} node")
        tok = toks[pos]
        if tok == "}":
            return pos + 1, node
        if not tok.startswith(":"):
            raise RowFilterError(f"node tree has {tok!r} where a field of {node.tag} was expected")
        pos, node.fields[tok[1:]] = _read_value(toks, pos + 1, text)


def _read_list(toks: list[str], pos: int, text: str):
    items = []
    if pos < len(toks) and toks[pos] in ("i", "o", "b", "x"):
        # integer, OID, Bitmapset or xid list: "(i 1 2 3)"
        pos += 1
        while pos < len(toks) and toks[pos] != ")":
            items.append(int(toks[pos]))
            pos += 1
    else:
        while pos < len(toks) and toks[pos] != ")":
            pos, item = _read_value(toks, pos, text)
            items.append(item)
    if pos >= len(toks):
        raise RowFilterError("node tree ends inside a list")
    return pos + 1, items


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
    from ..types.numeric import numeric_text

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
        from ..types.arrays import deconstruct

        elemtype, _dims, _lb, items = deconstruct(raw, _ElemTypes())
        return [None if v is None else datum_value(elemtype, v) for v in items]
    return datum_value(typoid, raw)


# ---------------------------------------------------------------------------------------------
# Built-in functions by pg_proc OID (src/include/catalog/pg_proc.dat), implemented by prosrc
# ---------------------------------------------------------------------------------------------

# OID -> prosrc, the C function (several SQL functions share one); immutable built-ins only
_PROCS = {
    56: 'boollt',  # boollt(boolean, boolean)
    57: 'boolgt',  # boolgt(boolean, boolean)
    60: 'booleq',  # booleq(boolean, boolean)
    62: 'nameeq',  # nameeq(name, name)
    63: 'int2eq',  # int2eq(smallint, smallint)
    64: 'int2lt',  # int2lt(smallint, smallint)
    65: 'int4eq',  # int4eq(integer, integer)
    66: 'int4lt',  # int4lt(integer, integer)
    67: 'texteq',  # texteq(text, text)
    84: 'boolne',  # boolne(boolean, boolean)
    141: 'int4mul',  # int4mul(integer, integer)
    144: 'int4ne',  # int4ne(integer, integer)
    145: 'int2ne',  # int2ne(smallint, smallint)
    146: 'int2gt',  # int2gt(smallint, smallint)
    147: 'int4gt',  # int4gt(integer, integer)
    148: 'int2le',  # int2le(smallint, smallint)
    149: 'int4le',  # int4le(integer, integer)
    150: 'int4ge',  # int4ge(integer, integer)
    151: 'int2ge',  # int2ge(smallint, smallint)
    152: 'int2mul',  # int2mul(smallint, smallint)
    153: 'int2div',  # int2div(smallint, smallint)
    154: 'int4div',  # int4div(integer, integer)
    155: 'int2mod',  # int2mod(smallint, smallint)
    156: 'int4mod',  # int4mod(integer, integer)
    157: 'textne',  # textne(text, text)
    158: 'int24eq',  # int24eq(smallint, integer)
    159: 'int42eq',  # int42eq(integer, smallint)
    160: 'int24lt',  # int24lt(smallint, integer)
    161: 'int42lt',  # int42lt(integer, smallint)
    162: 'int24gt',  # int24gt(smallint, integer)
    163: 'int42gt',  # int42gt(integer, smallint)
    164: 'int24ne',  # int24ne(smallint, integer)
    165: 'int42ne',  # int42ne(integer, smallint)
    166: 'int24le',  # int24le(smallint, integer)
    167: 'int42le',  # int42le(integer, smallint)
    168: 'int24ge',  # int24ge(smallint, integer)
    169: 'int42ge',  # int42ge(integer, smallint)
    170: 'int24mul',  # int24mul(smallint, integer)
    171: 'int42mul',  # int42mul(integer, smallint)
    172: 'int24div',  # int24div(smallint, integer)
    173: 'int42div',  # int42div(integer, smallint)
    176: 'int2pl',  # int2pl(smallint, smallint)
    177: 'int4pl',  # int4pl(integer, integer)
    178: 'int24pl',  # int24pl(smallint, integer)
    179: 'int42pl',  # int42pl(integer, smallint)
    180: 'int2mi',  # int2mi(smallint, smallint)
    181: 'int4mi',  # int4mi(integer, integer)
    182: 'int24mi',  # int24mi(smallint, integer)
    183: 'int42mi',  # int42mi(integer, smallint)
    184: 'oideq',  # oideq(oid, oid)
    185: 'oidne',  # oidne(oid, oid)
    202: 'float4mul',  # float4mul(real, real)
    203: 'float4div',  # float4div(real, real)
    204: 'float4pl',  # float4pl(real, real)
    205: 'float4mi',  # float4mi(real, real)
    206: 'float4um',  # float4um(real)
    207: 'float4abs',  # float4abs(real)
    212: 'int4um',  # int4um(integer)
    213: 'int2um',  # int2um(smallint)
    216: 'float8mul',  # float8mul(double precision, double precision)
    217: 'float8div',  # float8div(double precision, double precision)
    218: 'float8pl',  # float8pl(double precision, double precision)
    219: 'float8mi',  # float8mi(double precision, double precision)
    220: 'float8um',  # float8um(double precision)
    221: 'float8abs',  # float8abs(double precision)
    235: 'i2tod',  # float8(smallint)
    236: 'i2tof',  # float4(smallint)
    237: 'dtoi2',  # int2(double precision)
    238: 'ftoi2',  # int2(real)
    279: 'float48mul',  # float48mul(real, double precision)
    280: 'float48div',  # float48div(real, double precision)
    281: 'float48pl',  # float48pl(real, double precision)
    282: 'float48mi',  # float48mi(real, double precision)
    283: 'float84mul',  # float84mul(double precision, real)
    284: 'float84div',  # float84div(double precision, real)
    285: 'float84pl',  # float84pl(double precision, real)
    286: 'float84mi',  # float84mi(double precision, real)
    287: 'float4eq',  # float4eq(real, real)
    288: 'float4ne',  # float4ne(real, real)
    289: 'float4lt',  # float4lt(real, real)
    290: 'float4le',  # float4le(real, real)
    291: 'float4gt',  # float4gt(real, real)
    292: 'float4ge',  # float4ge(real, real)
    293: 'float8eq',  # float8eq(double precision, double precision)
    294: 'float8ne',  # float8ne(double precision, double precision)
    295: 'float8lt',  # float8lt(double precision, double precision)
    296: 'float8le',  # float8le(double precision, double precision)
    297: 'float8gt',  # float8gt(double precision, double precision)
    298: 'float8ge',  # float8ge(double precision, double precision)
    299: 'float48eq',  # float48eq(real, double precision)
    300: 'float48ne',  # float48ne(real, double precision)
    301: 'float48lt',  # float48lt(real, double precision)
    302: 'float48le',  # float48le(real, double precision)
    303: 'float48gt',  # float48gt(real, double precision)
    304: 'float48ge',  # float48ge(real, double precision)
    305: 'float84eq',  # float84eq(double precision, real)
    306: 'float84ne',  # float84ne(double precision, real)
    307: 'float84lt',  # float84lt(double precision, real)
    308: 'float84le',  # float84le(double precision, real)
    309: 'float84gt',  # float84gt(double precision, real)
    310: 'float84ge',  # float84ge(double precision, real)
    311: 'ftod',  # float8(real)
    312: 'dtof',  # float4(double precision)
    313: 'i2toi4',  # int4(smallint)
    314: 'i4toi2',  # int2(integer)
    316: 'i4tod',  # float8(integer)
    317: 'dtoi4',  # int4(double precision)
    318: 'i4tof',  # float4(integer)
    319: 'ftoi4',  # int4(real)
    401: 'rtrim1',  # text(character)
    462: 'int8um',  # int8um(bigint)
    463: 'int8pl',  # int8pl(bigint, bigint)
    464: 'int8mi',  # int8mi(bigint, bigint)
    465: 'int8mul',  # int8mul(bigint, bigint)
    466: 'int8div',  # int8div(bigint, bigint)
    467: 'int8eq',  # int8eq(bigint, bigint)
    468: 'int8ne',  # int8ne(bigint, bigint)
    469: 'int8lt',  # int8lt(bigint, bigint)
    470: 'int8gt',  # int8gt(bigint, bigint)
    471: 'int8le',  # int8le(bigint, bigint)
    472: 'int8ge',  # int8ge(bigint, bigint)
    474: 'int84eq',  # int84eq(bigint, integer)
    475: 'int84ne',  # int84ne(bigint, integer)
    476: 'int84lt',  # int84lt(bigint, integer)
    477: 'int84gt',  # int84gt(bigint, integer)
    478: 'int84le',  # int84le(bigint, integer)
    479: 'int84ge',  # int84ge(bigint, integer)
    480: 'int84',  # int4(bigint)
    481: 'int48',  # int8(integer)
    482: 'i8tod',  # float8(bigint)
    483: 'dtoi8',  # int8(double precision)
    653: 'ftoi8',  # int8(real)
    655: 'namelt',  # namelt(name, name)
    656: 'namele',  # namele(name, name)
    657: 'namegt',  # namegt(name, name)
    658: 'namege',  # namege(name, name)
    659: 'namene',  # namene(name, name)
    714: 'int82',  # int2(bigint)
    716: 'oidlt',  # oidlt(oid, oid)
    717: 'oidle',  # oidle(oid, oid)
    740: 'text_lt',  # text_lt(text, text)
    741: 'text_le',  # text_le(text, text)
    742: 'text_gt',  # text_gt(text, text)
    743: 'text_ge',  # text_ge(text, text)
    754: 'int28',  # int8(smallint)
    837: 'int82pl',  # int82pl(bigint, smallint)
    838: 'int82mi',  # int82mi(bigint, smallint)
    839: 'int82mul',  # int82mul(bigint, smallint)
    840: 'int82div',  # int82div(bigint, smallint)
    841: 'int28pl',  # int28pl(smallint, bigint)
    850: 'textlike',  # textlike(text, text)
    851: 'textnlike',  # textnlike(text, text)
    852: 'int48eq',  # int48eq(integer, bigint)
    853: 'int48ne',  # int48ne(integer, bigint)
    854: 'int48lt',  # int48lt(integer, bigint)
    855: 'int48gt',  # int48gt(integer, bigint)
    856: 'int48le',  # int48le(integer, bigint)
    857: 'int48ge',  # int48ge(integer, bigint)
    870: 'lower',  # lower(text)
    871: 'upper',  # upper(text)
    881: 'ltrim1',  # ltrim(text)
    882: 'rtrim1',  # rtrim(text)
    885: 'btrim1',  # btrim(text)
    940: 'int2mod',  # mod(smallint, smallint)
    941: 'int4mod',  # mod(integer, integer)
    942: 'int28mi',  # int28mi(smallint, bigint)
    943: 'int28mul',  # int28mul(smallint, bigint)
    945: 'int8mod',  # int8mod(bigint, bigint)
    947: 'int8mod',  # mod(bigint, bigint)
    948: 'int28div',  # int28div(smallint, bigint)
    1048: 'bpchareq',  # bpchareq(character, character)
    1049: 'bpcharlt',  # bpcharlt(character, character)
    1050: 'bpcharle',  # bpcharle(character, character)
    1051: 'bpchargt',  # bpchargt(character, character)
    1052: 'bpcharge',  # bpcharge(character, character)
    1053: 'bpcharne',  # bpcharne(character, character)
    1086: 'date_eq',  # date_eq(date, date)
    1087: 'date_lt',  # date_lt(date, date)
    1088: 'date_le',  # date_le(date, date)
    1089: 'date_gt',  # date_gt(date, date)
    1090: 'date_ge',  # date_ge(date, date)
    1091: 'date_ne',  # date_ne(date, date)
    1152: 'timestamp_eq',  # timestamptz_eq(timestamp with time zone, timestamp with time zone)
    1153: 'timestamp_ne',  # timestamptz_ne(timestamp with time zone, timestamp with time zone)
    1154: 'timestamp_lt',  # timestamptz_lt(timestamp with time zone, timestamp with time zone)
    1155: 'timestamp_le',  # timestamptz_le(timestamp with time zone, timestamp with time zone)
    1156: 'timestamp_ge',  # timestamptz_ge(timestamp with time zone, timestamp with time zone)
    1157: 'timestamp_gt',  # timestamptz_gt(timestamp with time zone, timestamp with time zone)
    1230: 'int8abs',  # int8abs(bigint)
    1251: 'int4abs',  # int4abs(integer)
    1253: 'int2abs',  # int2abs(smallint)
    1257: 'textlen',  # textlen(text)
    1258: 'textcat',  # textcat(text, text)
    1274: 'int84pl',  # int84pl(bigint, integer)
    1275: 'int84mi',  # int84mi(bigint, integer)
    1276: 'int84mul',  # int84mul(bigint, integer)
    1277: 'int84div',  # int84div(bigint, integer)
    1278: 'int48pl',  # int48pl(integer, bigint)
    1279: 'int48mi',  # int48mi(integer, bigint)
    1280: 'int48mul',  # int48mul(integer, bigint)
    1281: 'int48div',  # int48div(integer, bigint)
    1317: 'textlen',  # length(text)
    1318: 'bpcharlen',  # length(character)
    1367: 'bpcharlen',  # character_length(character)
    1369: 'textlen',  # character_length(text)
    1372: 'bpcharlen',  # char_length(character)
    1374: 'textoctetlen',  # octet_length(text)
    1381: 'textlen',  # char_length(text)
    1394: 'float4abs',  # abs(real)
    1395: 'float8abs',  # abs(double precision)
    1396: 'int8abs',  # abs(bigint)
    1397: 'int4abs',  # abs(integer)
    1398: 'int2abs',  # abs(smallint)
    1569: 'textlike',  # like(text, text)
    1570: 'textnlike',  # notlike(text, text)
    1631: 'textlike',  # bpcharlike(character, text)
    1632: 'textnlike',  # bpcharnlike(character, text)
    1638: 'oidgt',  # oidgt(oid, oid)
    1639: 'oidge',  # oidge(oid, oid)
    1691: 'boolle',  # boolle(boolean, boolean)
    1692: 'boolge',  # boolge(boolean, boolean)
    1704: 'numeric_abs',  # numeric_abs(numeric)
    1705: 'numeric_abs',  # abs(numeric)
    1718: 'numeric_eq',  # numeric_eq(numeric, numeric)
    1719: 'numeric_ne',  # numeric_ne(numeric, numeric)
    1720: 'numeric_gt',  # numeric_gt(numeric, numeric)
    1721: 'numeric_ge',  # numeric_ge(numeric, numeric)
    1722: 'numeric_lt',  # numeric_lt(numeric, numeric)
    1723: 'numeric_le',  # numeric_le(numeric, numeric)
    1724: 'numeric_add',  # numeric_add(numeric, numeric)
    1725: 'numeric_sub',  # numeric_sub(numeric, numeric)
    1726: 'numeric_mul',  # numeric_mul(numeric, numeric)
    1740: 'int4_numeric',  # numeric(integer)
    1742: 'float4_numeric',  # numeric(real)
    1743: 'float8_numeric',  # numeric(double precision)
    1744: 'numeric_int4',  # int4(numeric)
    1745: 'numeric_float4',  # float4(numeric)
    1746: 'numeric_float8',  # float8(numeric)
    1771: 'numeric_uminus',  # numeric_uminus(numeric)
    1779: 'numeric_int8',  # int8(numeric)
    1781: 'int8_numeric',  # numeric(bigint)
    1782: 'int2_numeric',  # numeric(smallint)
    1783: 'numeric_int2',  # int2(numeric)
    1850: 'int28eq',  # int28eq(smallint, bigint)
    1851: 'int28ne',  # int28ne(smallint, bigint)
    1852: 'int28lt',  # int28lt(smallint, bigint)
    1853: 'int28gt',  # int28gt(smallint, bigint)
    1854: 'int28le',  # int28le(smallint, bigint)
    1855: 'int28ge',  # int28ge(smallint, bigint)
    1856: 'int82eq',  # int82eq(bigint, smallint)
    1857: 'int82ne',  # int82ne(bigint, smallint)
    1858: 'int82lt',  # int82lt(bigint, smallint)
    1859: 'int82gt',  # int82gt(bigint, smallint)
    1860: 'int82le',  # int82le(bigint, smallint)
    1861: 'int82ge',  # int82ge(bigint, smallint)
    2024: 'date_timestamp',  # timestamp(date)
    2052: 'timestamp_eq',  # timestamp_eq(timestamp without time zone, timestamp without time zone)
    2053: 'timestamp_ne',  # timestamp_ne(timestamp without time zone, timestamp without time zone)
    2054: 'timestamp_lt',  # timestamp_lt(timestamp without time zone, timestamp without time zone)
    2055: 'timestamp_le',  # timestamp_le(timestamp without time zone, timestamp without time zone)
    2056: 'timestamp_ge',  # timestamp_ge(timestamp without time zone, timestamp without time zone)
    2057: 'timestamp_gt',  # timestamp_gt(timestamp without time zone, timestamp without time zone)
    2954: 'uuid_lt',  # uuid_lt(uuid, uuid)
    2955: 'uuid_le',  # uuid_le(uuid, uuid)
    2956: 'uuid_eq',  # uuid_eq(uuid, uuid)
    2957: 'uuid_ge',  # uuid_ge(uuid, uuid)
    2958: 'uuid_gt',  # uuid_gt(uuid, uuid)
    2959: 'uuid_ne',  # uuid_ne(uuid, uuid)
}


class _EvalError(RowFilterError):
    """An ERROR the C function raises (overflow, division by zero, ...); ``evaluate`` names the relation."""


_INT_RANGE = {INT2OID: (-(1 << 15), (1 << 15) - 1, "smallint out of range"),
              INT4OID: (-(1 << 31), (1 << 31) - 1, "integer out of range"),
              INT8OID: (-(1 << 63), (1 << 63) - 1, "bigint out of range")}


def _int_result(restype: int):
    lo, hi, msg = _INT_RANGE[restype]

    def check(v: int) -> int:
        if v < lo or v > hi:
            raise _EvalError(msg)
        return v
    return check


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise _EvalError("division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise _EvalError("division by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _float_cmp(a: float, b: float) -> int:
    # float8_cmp_internal: NaN equals NaN and sorts above every other value
    if math.isnan(a):
        return 0 if math.isnan(b) else 1
    if math.isnan(b):
        return -1
    return (a > b) - (a < b)


def _numeric_cmp(a: Decimal, b: Decimal) -> int:
    # cmp_numerics: NaN equals NaN and sorts above everything, infinities at the ends
    if a.is_nan():
        return 0 if b.is_nan() else 1
    if b.is_nan():
        return -1
    return (a > b) - (a < b)


def _plain_cmp(a, b) -> int:
    return (a > b) - (a < b)


def _bpchar_cmp(a: str, b: str) -> int:
    # bpcharcmp: trailing blanks do not count (bcTruelen)
    a, b = a.rstrip(" "), b.rstrip(" ")
    return (a > b) - (a < b)


_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def _to_float4(x: float) -> float:
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _float_checked(result: float, a: float, b: float, zero_ok: bool) -> float:
    # float_overflow_error / float_underflow_error of float.h's check_float8_val
    if math.isinf(result) and not math.isinf(a) and not math.isinf(b):
        raise _EvalError("value out of range: overflow")
    if result == 0.0 and not zero_ok:
        raise _EvalError("value out of range: underflow")
    return result


def _float_arith(op: str, single: bool):
    def fn(a: float, b: float) -> float:
        if op == "pl":
            r, zero_ok = a + b, True
        elif op == "mi":
            r, zero_ok = a - b, True
        elif op == "mul":
            r, zero_ok = a * b, a == 0.0 or b == 0.0
        else:
            if b == 0.0 and not math.isnan(a):
                raise _EvalError("division by zero")
            r = a / b if b != 0.0 else math.nan
            zero_ok = a == 0.0 or math.isinf(b)
        if single:
            r = _to_float4(r)
        return _float_checked(r, a, b, zero_ok)
    return fn


def _numeric_to_int(restype: int):
    check = _int_result(restype)

    def fn(d: Decimal) -> int:
        if d.is_nan():
            raise _EvalError(f"cannot convert NaN to {_INT_NAMES[restype]}")
        if d.is_infinite():
            raise _EvalError(f"cannot convert infinity to {_INT_NAMES[restype]}")
        return check(int(d.quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_NUMERIC_CONTEXT)))
    return fn


_INT_NAMES = {INT2OID: "smallint", INT4OID: "integer", INT8OID: "bigint"}


def _float_to_int(restype: int):
    check = _int_result(restype)

    def fn(x: float) -> int:
        if math.isnan(x) or math.isinf(x):
            raise _EvalError(_INT_RANGE[restype][2])
        return check(round(x))  # rint: halves to even
    return fn


def _numeric_to_float8(d: Decimal) -> float:
    # numeric_float8 goes through numeric_out and float8in (strtod: correctly rounded)
    x = float(d)
    if math.isinf(x) and not d.is_infinite():
        raise _EvalError(f"\"{d}\" is out of range for type double precision")
    return x


def _nearest_float4(exact: Fraction) -> float:
    """The float4 nearest to ``exact``, ties to even (strtof), without double rounding."""
    f = _to_float4(float(exact))
    if math.isinf(f):
        return f
    bits = _U32.unpack(_F32.pack(f))[0]
    cands = [f]
    for b in (bits - 1, bits + 1):
        if 0 <= b < 1 << 32:
            g = _F32.unpack(_U32.pack(b))[0]
            if math.isfinite(g):
                cands.append(g)
    return min(cands, key=lambda g: (abs(Fraction(g) - exact), _U32.unpack(_F32.pack(g))[0] & 1))


def _numeric_to_float4(d: Decimal) -> float:
    # numeric_float4 goes through numeric_out and float4in (strtof: correctly rounded, no double rounding)
    if d.is_nan():
        return math.nan
    if d.is_infinite():
        return math.inf if d > 0 else -math.inf
    x = _nearest_float4(Fraction(d))
    if math.isinf(x) or (x == 0.0 and d != 0):
        raise _EvalError(f"\"{d}\" is out of range for type real")
    return x


def _float_to_numeric(digits: int):
    def fn(x: float) -> Decimal:
        # float8_numeric / float4_numeric: snprintf("%.*g", DBL_DIG or FLT_DIG), then numeric_in
        if math.isnan(x):
            return Decimal("NaN")
        if math.isinf(x):
            return Decimal("Infinity") if x > 0 else Decimal("-Infinity")
        return Decimal(format(x, f".{digits}g"))
    return fn


def _dtof(x: float) -> float:
    r = _to_float4(x)
    if math.isinf(r) and not math.isinf(x):
        raise _EvalError("value out of range: overflow")
    if r == 0.0 and x != 0.0:
        raise _EvalError("value out of range: underflow")
    return r


def _date_timestamp(d: int) -> int:
    if d == DATEVAL_NOBEGIN:
        return DT_NOBEGIN
    if d == DATEVAL_NOEND:
        return DT_NOEND
    if d >= TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE:
        raise _EvalError("date out of range for timestamp")
    return d * USECS_PER_DAY


def _like(s: str, pattern: str) -> bool:
    # like_match.c MatchText: % any run, _ any one character, backslash escapes the next
    return _like_regex(pattern).fullmatch(s) is not None


_LIKE_CACHE: dict = {}


def _like_regex(pattern: str):
    rx = _LIKE_CACHE.get(pattern)
    if rx is None:
        out = []
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "\\":
                if i + 1 >= len(pattern):
                    raise _EvalError("LIKE pattern must not end with escape character")
                out.append(re.escape(pattern[i + 1]))
                i += 2
                continue
            out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
            i += 1
        if len(_LIKE_CACHE) > 256:
            _LIKE_CACHE.clear()
        rx = _LIKE_CACHE[pattern] = re.compile("".join(out), re.S)
    return rx


_CMP_RESULT = {"eq": lambda c: c == 0, "ne": lambda c: c != 0, "lt": lambda c: c < 0, "le": lambda c: c <= 0,
               "gt": lambda c: c > 0, "ge": lambda c: c >= 0}
_CMP_SUFFIX = re.compile(r"^(.*?)_?(eq|ne|lt|le|gt|ge)$")
_INT_WIDTH = {"2": INT2OID, "4": INT4OID, "8": INT8OID}


class _Compiler:
    """Turns one row filter's node tree into a closure ``row -> value`` (None for NULL)."""

    def __init__(self, relation, lc_collate: str | None, lc_ctype: str | None):
        self.relation = relation
        self.lc_collate = lc_collate
        self.lc_ctype = lc_ctype
        self.attrs = {a.attnum: a for a in relation.attributes}
        self.case_values: list = []  # the CaseExpr test value cells, innermost last

    # -- errors ----------------------------------------------------------------------------------

    def unsupported(self, what: str) -> RowFilterError:
        return RowFilterError(f"row filter on table {_relname(self.relation)}: {what} is not supported "
                              f"by waldecode's row filter evaluation")

    def _c_like(self, collid: int, what: str) -> None:
        """Ordering text by collation ``collid`` is done here only for C and POSIX."""
        if collid in (C_COLLATION_OID, POSIX_COLLATION_OID):
            return
        if collid == DEFAULT_COLLATION_OID and self.lc_collate in ("C", "POSIX"):
            return
        where = (f"the database's default collation (lc_collate {self.lc_collate!r})"
                 if collid == DEFAULT_COLLATION_OID else f"collation OID {collid}")
        raise self.unsupported(f"{what} under {where} (only C and POSIX order text here)")

    def _ascii_case_ok(self, collid: int) -> bool:
        """lower/upper: C and POSIX change ASCII letters only; under another libc locale, ASCII
        letters change as in ASCII except in Turkish and Azeri (dotted and dotless i)."""
        if collid in (C_COLLATION_OID, POSIX_COLLATION_OID):
            return True
        if collid == DEFAULT_COLLATION_OID:
            if self.lc_ctype in ("C", "POSIX"):
                return True
            if self.lc_ctype is None:
                raise self.unsupported("lower()/upper() under the database's default collation with an "
                                       "unknown lc_ctype")
            return False
        raise self.unsupported(f"lower()/upper() under collation OID {collid}")

    # -- nodes -----------------------------------------------------------------------------------

    def compile(self, node) -> Callable:
        if not isinstance(node, Node):
            raise self.unsupported(f"node tree element {node!r}")
        method = getattr(self, "n_" + node.tag, None)
        if method is None:
            raise self.unsupported(f"expression node {node.tag}")
        return method(node)

    def n_VAR(self, node: Node):
        attno = node.int("varattno")
        if node.int("varlevelsup") != 0 or attno <= 0 or attno not in self.attrs:
            raise self.unsupported(f"column reference varattno {attno}")
        att = self.attrs[attno]
        typoid = node.int("vartype")
        if typoid not in SUPPORTED_TYPES:
            raise self.unsupported(f"column {att.attname} of type OID {typoid} ({att.type_name or '?'})")
        idx = attno - 1
        relname = _relname(self.relation)
        cache: dict = {}

        def var(row):
            v = row[idx] if idx < len(row) else None
            if v is None:
                return None
            if v.__class__ is MissingValue:
                return text_value(typoid, v.text)
            if v is UNCHANGED_TOAST or v.__class__ is ToastPointer:
                raise RowFilterError(f"row filter on table {relname} needs column {att.attname}, whose value "
                                     f"is stored out of line (TOAST) and is not in the change")
            key = bytes(v)
            hit = cache.get(key)
            if hit is None:
                if len(cache) > 1024:
                    cache.clear()
                hit = cache[key] = (datum_value(typoid, key),)
            return hit[0]
        return var

    def n_CONST(self, node: Node):
        typoid = node.int("consttype")
        if typoid not in SUPPORTED_TYPES and typoid not in _ARRAY_OF:
            raise self.unsupported(f"constant of type OID {typoid}")
        value = _const_value(node)
        return lambda row: value

    def n_RELABELTYPE(self, node: Node):
        # binary-compatible cast (varchar -> text, ...): the value is the same
        return self.compile(node["arg"])

    def n_COLLATEEXPR(self, node: Node):
        # the collation reaches the operators through their inputcollid
        return self.compile(node["arg"])

    def _call(self, funcid: int, restype: int, inputcollid: int):
        prosrc = _PROCS.get(funcid)
        if prosrc is None:
            raise self.unsupported(f"function with pg_proc OID {funcid}")
        return self.function(prosrc, restype, inputcollid)

    def n_OPEXPR(self, node: Node):
        return self.n_FUNCEXPR(node, funcid=node.int("opfuncid"), restype=node.int("opresulttype"))

    def n_FUNCEXPR(self, node: Node, funcid: int | None = None, restype: int | None = None):
        if funcid is None:
            if node.bool("funcretset"):
                raise self.unsupported("set-returning function")
            funcid, restype = node.int("funcid"), node.int("funcresulttype")
        args = node["args"] or []
        fn = self._call(funcid, restype, node.int("inputcollid"))
        argfns = [self.compile(a) for a in args]
        if len(argfns) == 1:
            a0 = argfns[0]

            def call1(row):
                v = a0(row)
                return None if v is None else fn(v)
            return call1
        if len(argfns) == 2:
            a0, a1 = argfns

            def call2(row):
                x = a0(row)
                if x is None:
                    return None
                y = a1(row)
                return None if y is None else fn(x, y)
            return call2
        raise self.unsupported(f"function with pg_proc OID {funcid} taking {len(argfns)} arguments")

    def n_DISTINCTEXPR(self, node: Node):
        args = node["args"]
        eq = self._call(node.int("opfuncid"), BOOLOID, node.int("inputcollid"))
        a0, a1 = (self.compile(a) for a in args)

        def distinct(row):
            x, y = a0(row), a1(row)
            if x is None or y is None:
                return (x is None) != (y is None)
            return not eq(x, y)
        return distinct

    def n_NULLIFEXPR(self, node: Node):
        args = node["args"]
        eq = self._call(node.int("opfuncid"), BOOLOID, node.int("inputcollid"))
        a0, a1 = (self.compile(a) for a in args)

        def nullif(row):
            x, y = a0(row), a1(row)
            if x is not None and y is not None and eq(x, y):
                return None
            return x
        return nullif

    def n_SCALARARRAYOPEXPR(self, node: Node):
        args = node["args"]
        scalar, array = args
        fn = self._call(node.int("opfuncid"), BOOLOID, node.int("inputcollid"))
        use_or = node.bool("useOr")
        sf, af = self.compile(scalar), self.compile(array)

        def saop(row):
            # ExecEvalScalarArrayOp: strict operator, NULL elements make an undecided result NULL
            items = af(row)
            if items is None:
                return None
            if not items:
                return not use_or
            x = sf(row)
            if x is None:
                return None
            saw_null = False
            for item in items:
                if item is None:
                    saw_null = True
                    continue
                r = fn(x, item)
                if use_or and r:
                    return True
                if not use_or and not r:
                    return False
            return None if saw_null else not use_or
        return saop

    def n_ARRAYEXPR(self, node: Node):
        elems = [self.compile(e) for e in node["elements"] or []]
        if node.bool("multidims"):
            # sub-arrays: flattened, as ScalarArrayOpExpr walks every element
            return lambda row: [v for e in elems for v in (e(row) or [])]
        return lambda row: [e(row) for e in elems]

    def n_BOOLEXPR(self, node: Node):
        op = node["boolop"]
        args = [self.compile(a) for a in node["args"]]
        if op == "not":
            a0 = args[0]

            def not_(row):
                v = a0(row)
                return None if v is None else not v
            return not_
        if op == "and":
            def and_(row):
                saw_null = False
                for a in args:
                    v = a(row)
                    if v is None:
                        saw_null = True
                    elif not v:
                        return False
                return None if saw_null else True
            return and_
        if op == "or":
            def or_(row):
                saw_null = False
                for a in args:
                    v = a(row)
                    if v is None:
                        saw_null = True
                    elif v:
                        return True
                return None if saw_null else False
            return or_
        raise self.unsupported(f"BoolExpr {op}")

    def n_NULLTEST(self, node: Node):
        if node.bool("argisrow"):
            raise self.unsupported("IS [NOT] NULL over a row value")
        a = self.compile(node["arg"])
        if node.int("nulltesttype") == 0:  # IS_NULL
            return lambda row: a(row) is None
        return lambda row: a(row) is not None

    def n_BOOLEANTEST(self, node: Node):
        a = self.compile(node["arg"])
        t = node.int("booltesttype")
        # primnodes.h BoolTestType: IS_TRUE, IS_NOT_TRUE, IS_FALSE, IS_NOT_FALSE, IS_UNKNOWN, IS_NOT_UNKNOWN
        tests = (lambda v: v is True, lambda v: v is not True, lambda v: v is False,
                 lambda v: v is not False, lambda v: v is None, lambda v: v is not None)
        if not 0 <= t < len(tests):
            raise self.unsupported(f"BooleanTest type {t}")
        test = tests[t]
        return lambda row: test(a(row))

    def n_COALESCEEXPR(self, node: Node):
        args = [self.compile(a) for a in node["args"]]

        def coalesce(row):
            for a in args:
                v = a(row)
                if v is not None:
                    return v
            return None
        return coalesce

    def n_MINMAXEXPR(self, node: Node):
        typoid = node.int("minmaxtype")
        cmp = self.comparator(typoid, node.int("inputcollid"), "GREATEST/LEAST")
        greatest = node.int("op") == 0  # IS_GREATEST
        args = [self.compile(a) for a in node["args"]]

        def minmax(row):
            best = None
            for a in args:
                v = a(row)
                if v is None:
                    continue
                if best is None or (cmp(v, best) > 0 if greatest else cmp(v, best) < 0):
                    best = v
            return best
        return minmax

    def n_CASEEXPR(self, node: Node):
        cell: list = [None]
        arg = self.compile(node["arg"]) if node["arg"] is not None else None
        if arg is not None:
            self.case_values.append(cell)
        try:
            whens = [(self.compile(w["expr"]), self.compile(w["result"])) for w in node["args"]]
        finally:
            if arg is not None:
                self.case_values.pop()
        default = self.compile(node["defresult"]) if node["defresult"] is not None else (lambda row: None)

        def case(row):
            if arg is not None:
                cell[0] = arg(row)
            for cond, result in whens:
                if cond(row) is True:
                    return result(row)
            return default(row)
        return case

    def n_CASETESTEXPR(self, node: Node):
        if not self.case_values:
            raise self.unsupported("CaseTestExpr outside a CASE")
        cell = self.case_values[-1]
        return lambda row: cell[0]

    # -- functions -------------------------------------------------------------------------------

    def comparator(self, typoid: int, collid: int, what: str):
        if typoid in (FLOAT4OID, FLOAT8OID):
            return _float_cmp
        if typoid == NUMERICOID:
            return _numeric_cmp
        if typoid in (TEXTOID, VARCHAROID, NAMEOID):
            self._c_like(collid, what)
            return _plain_cmp
        if typoid == BPCHAROID:
            self._c_like(collid, what)
            return _bpchar_cmp
        if typoid in SUPPORTED_TYPES:
            return _plain_cmp
        raise self.unsupported(f"{what} over type OID {typoid}")

    def function(self, prosrc: str, restype: int, collid: int):
        """The implementation of built-in C function ``prosrc`` returning ``restype``."""
        m = _CMP_SUFFIX.match(prosrc)
        if m:
            stem, op = m.groups()
            test = _CMP_RESULT[op]
            if stem in ("text", "name", "bpchar") or stem.startswith("bpchar"):
                cmp = _bpchar_cmp if stem.startswith("bpchar") else _plain_cmp
                if op not in ("eq", "ne"):
                    # equality under a deterministic collation (every built-in one) is byte equality
                    self._c_like(collid, f"text comparison {prosrc}")
            elif stem.startswith("float"):
                cmp = _float_cmp
            elif stem == "numeric":
                cmp = _numeric_cmp
            else:
                cmp = _plain_cmp
            return lambda a, b: test(cmp(a, b))
        impl = _SIMPLE.get(prosrc)
        if impl is not None:
            return impl
        m = re.fullmatch(r"int(\d)(\d?)(pl|mi|mul|div|mod)", prosrc)
        if m:
            check = _int_result(restype)
            op = m.group(3)
            f = {"pl": lambda a, b: a + b, "mi": lambda a, b: a - b, "mul": lambda a, b: a * b,
                 "div": _int_div, "mod": _int_mod}[op]
            return lambda a, b: check(f(a, b))
        m = re.fullmatch(r"float(4|8|48|84)(pl|mi|mul|div)", prosrc)
        if m:
            return _float_arith(m.group(2), single=m.group(1) == "4")
        if prosrc in ("int2um", "int4um", "int8um", "int2abs", "int4abs", "int8abs"):
            check = _int_result(restype)
            return (lambda a: check(-a)) if prosrc.endswith("um") else (lambda a: check(abs(a)))
        if prosrc in ("int48", "int84", "i2toi4", "i4toi2", "int28", "int82"):
            return _int_result(restype)
        if prosrc in ("numeric_int2", "numeric_int4", "numeric_int8"):
            return _numeric_to_int(restype)
        if prosrc in ("dtoi2", "dtoi4", "dtoi8", "ftoi2", "ftoi4", "ftoi8"):
            return _float_to_int(restype)
        if prosrc in ("lower", "upper"):
            ascii_only = not self._ascii_case_ok(collid)
            if ascii_only and self.lc_ctype[:2].lower() in ("tr", "az"):
                raise self.unsupported(f"{prosrc}() under lc_ctype {self.lc_ctype!r} (dotted and dotless i)")
            table = _ASCII_UPPER if prosrc == "upper" else _ASCII_LOWER
            relname = _relname(self.relation)
            lc_ctype = self.lc_ctype

            def case_map(s: str) -> str:
                if ascii_only and not s.isascii():
                    raise RowFilterError(f"row filter on table {relname}: {prosrc}() of non-ASCII text under "
                                         f"lc_ctype {lc_ctype!r} is not supported by waldecode")
                # asc_tolower / asc_toupper: ASCII letters only (what a libc locale other than
                # Turkish or Azeri does to ASCII text too)
                return s.translate(table)
            return case_map
        raise self.unsupported(f"function {prosrc}")


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_ASCII_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


_SIMPLE = {
    "numeric_add": lambda a, b: _NUMERIC_CONTEXT.add(a, b),
    "numeric_sub": lambda a, b: _NUMERIC_CONTEXT.subtract(a, b),
    "numeric_mul": lambda a, b: _NUMERIC_CONTEXT.multiply(a, b),
    "numeric_uminus": lambda a: a.copy_negate(),
    "numeric_abs": lambda a: a.copy_abs(),
    "float4um": lambda a: -a, "float8um": lambda a: -a,
    "float4abs": abs, "float8abs": abs,
    "i2tod": float, "i4tod": float, "i8tod": float, "i2tof": float, "i4tof": float,
    "ftod": lambda a: a, "dtof": _dtof,
    "int2_numeric": Decimal, "int4_numeric": Decimal, "int8_numeric": Decimal,
    "numeric_float8": _numeric_to_float8, "numeric_float4": _numeric_to_float4,
    "float8_numeric": _float_to_numeric(15), "float4_numeric": _float_to_numeric(6),
    "textlike": _like, "textnlike": lambda s, p: not _like(s, p),
    "textcat": lambda a, b: a + b,
    "textlen": len, "bpcharlen": lambda s: len(s.rstrip(" ")),
    "textoctetlen": lambda s: len(s.encode("utf-8", "surrogateescape")),
    "rtrim1": lambda s: s.rstrip(" "), "ltrim1": lambda s: s.lstrip(" "), "btrim1": lambda s: s.strip(" "),
    "date_timestamp": _date_timestamp,
}


def _relname(relation) -> str:
    from .quote import quote_identifier

    return f"{quote_identifier(relation.nspname)}.{quote_identifier(relation.relname)}"


# ---------------------------------------------------------------------------------------------
# Filters of a relation and pgoutput's rules for applying them
# ---------------------------------------------------------------------------------------------

class RowFilter:
    """The row filter of one relation for one action: the OR of one or more prqual texts.

    ``lc_collate`` / ``lc_ctype``: the database's (pg_database.datcollate / datctype), which the
    default collation means; only needed by filters that order text or change its case.
    """

    def __init__(self, prquals: list[str] | str, relation, lc_collate: str | None = None,
                 lc_ctype: str | None = None):
        if isinstance(prquals, str):
            prquals = [prquals]
        if not prquals:
            raise RowFilterError(f"row filter on table {_relname(relation)}: no expression")
        self.relation = relation
        self.prquals = list(prquals)
        comp = _Compiler(relation, lc_collate, lc_ctype)
        parts = []
        for text in self.prquals:
            try:
                tree = parse_node_tree(text)
            except RowFilterError as e:
                raise RowFilterError(f"row filter on table {_relname(relation)}: {e}") from None
            parts.append(comp.compile(tree))
        if len(parts) == 1:
            self._fn = parts[0]
        else:
            def or_(row):
                saw_null = False
                for p in parts:
                    v = p(row)
                    if v is None:
                        saw_null = True
                    elif v:
                        return True
                return None if saw_null else False
            self._fn = or_

    def evaluate(self, row: list):
        """True, False or None (NULL) for ``row`` (values in attnum order, as ``change`` has them)."""
        try:
            return self._fn(row)
        except _EvalError as e:
            # the server's ERROR stops decoding: so does this
            raise RowFilterError(f"row filter on table {_relname(self.relation)}: {e}") from None
        except (TypeError, ValueError, ArithmeticError) as e:
            raise RowFilterError(f"row filter on table {_relname(self.relation)} cannot be evaluated on "
                                 f"this row: {e}") from None

    def matches(self, row: list) -> bool:
        """pgoutput_row_filter_exec_expr: a NULL result counts as false."""
        return self.evaluate(row) is True


class Publication:
    """What pgoutput_row_filter_init reads of one publication for one relation: its actions,
    whether it covers the relation without a row filter (FOR ALL TABLES, FOR TABLES IN SCHEMA of
    the relation's schema, or a table entry whose prqual is NULL), and the prqual text otherwise."""

    __slots__ = ("name", "pubinsert", "pubupdate", "pubdelete", "prqual")

    def __init__(self, name: str, pubinsert: bool, pubupdate: bool, pubdelete: bool, prqual: str | None):
        self.name = name
        self.pubinsert = pubinsert
        self.pubupdate = pubupdate
        self.pubdelete = pubdelete
        self.prqual = prqual


class RelationRowFilters:
    """The row filters of one relation, per action, for the publications a slot publishes the
    relation through (pgoutput_row_filter_init): a publication without a filter for an action it
    publishes removes the filter of that action; the others' filters are ORed."""

    def __init__(self, relation, publications: list[Publication], lc_collate: str | None = None,
                 lc_ctype: str | None = None):
        self.relation = relation
        quals: dict[str, list[str]] = {INSERT: [], UPDATE: [], DELETE: []}
        no_filter = {INSERT: False, UPDATE: False, DELETE: False}
        for pub in publications:
            acts = ((INSERT, pub.pubinsert), (UPDATE, pub.pubupdate), (DELETE, pub.pubdelete))
            for action, published in acts:
                if not published:
                    continue
                if pub.prqual is None:
                    no_filter[action] = True
                elif not no_filter[action]:
                    quals[action].append(pub.prqual)
        self.filters: dict[str, RowFilter | None] = {}
        compiled: dict[tuple, RowFilter] = {}
        for action in (INSERT, UPDATE, DELETE):
            if no_filter[action] or not quals[action]:
                self.filters[action] = None
                continue
            key = tuple(quals[action])
            if key not in compiled:
                compiled[key] = RowFilter(list(key), relation, lc_collate, lc_ctype)
            self.filters[action] = compiled[key]

    def filter_change(self, action: str, old: list | None, new: list | None):
        """pgoutput_row_filter: ``(action, new)`` to send, or ``(None, None)`` to leave the change out.

        INSERT is judged on ``new``, DELETE on ``old``, an UPDATE without an old tuple on ``new``.
        An UPDATE with both: the old row and the new one (with the replica-identity columns that
        the WAL carried only in the old tuple, unchanged TOASTed values, taken from it) are both
        judged; neither matching drops the change, only the new one turns it into an INSERT of
        that completed new row, only the old one into a DELETE (of ``old``), both keep the UPDATE.
        """
        rf = self.filters.get(action)
        if rf is None:
            return action, new
        if new is None or old is None:
            return (action, new) if rf.matches(new if new is not None else old) else (None, None)
        tmp_new = None
        for i, att in enumerate(self.relation.attributes):
            if i >= len(new) or i >= len(old):
                break
            nv, ov = new[i], old[i]
            if nv is None or ov is None:
                continue
            if att.attlen == -1 and nv is UNCHANGED_TOAST and not (ov is UNCHANGED_TOAST or ov.__class__ is ToastPointer):
                if tmp_new is None:
                    tmp_new = list(new)
                tmp_new[i] = ov
        old_matched = rf.matches(old)
        new_matched = rf.matches(tmp_new if tmp_new is not None else new)
        if not old_matched and not new_matched:
            return None, None
        if not old_matched:
            return INSERT, (tmp_new if tmp_new is not None else new)
        if not new_matched:
            return DELETE, new
        return UPDATE, new


__all__ = ["Node", "parse_node_tree", "RowFilter", "RowFilterError", "Publication", "RelationRowFilters",
           "datum_value", "SUPPORTED_TYPES"]
