"""The small types: bool, "char", name, the text family (text, varchar, bpchar,
json), xml, bytea, uuid, the oid family (oid, xid, cid, xid8), money, pg_lsn,
bit strings and tid.

Sources (src/backend/utils/adt/): bool.c boolout, char.c charout (15+ prints
bytes >= 0x80 as \\ooo), name.c nameout, varlena.c textout / byteaout
(bytea_output hex or escape), varchar.c, json.c json_out, xml.c xml_out
(drops a redundant XML declaration), uuid.c, oid.c, xid.c, cash.c cash_out
(lc_monetary conventions), pg_lsn.c, varbit.c, tid.c.

Text is decoded as UTF-8 (the server encoding of a normal cluster); bytes that
are not UTF-8 are kept as surrogate escapes.
"""

from __future__ import annotations

import locale
import struct
from typing import NamedTuple

from ..errors import CorruptRecordError, UnsupportedSettingError

_u32 = struct.Struct("<I")
_i32 = struct.Struct("<i")
_u64 = struct.Struct("<Q")
_i64 = struct.Struct("<q")
_tid = struct.Struct("<HHH")


def _fixed(value, n: int, what: str):
    if len(value) != n:
        raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {n}")


def text_of(value) -> str:
    return bytes(value).decode("utf-8", "surrogateescape")


def boolout(value, typ, ctx) -> str:
    _fixed(value, 1, "bool")
    return "t" if value[0] else "f"


def charout(value, typ, ctx) -> str:
    _fixed(value, 1, '"char"')
    b = value[0]
    if b >= 0x80 and ctx.major >= 15:
        return "\\%03o" % b
    if b == 0:
        return ""
    return text_of(bytes((b,)))  # 13, 14: the raw byte


def nameout(value, typ, ctx) -> str:
    nul = bytes(value).find(b"\x00")
    return text_of(value if nul < 0 else value[:nul])


def textout(value, typ, ctx) -> str:
    return text_of(value)


_HEX = [b"%02x" % i for i in range(256)]
_ESC = []
for _i in range(256):
    if _i == 0x5C:
        _ESC.append(b"\\\\")
    elif _i < 0x20 or _i > 0x7E:
        _ESC.append(b"\\%03o" % _i)
    else:
        _ESC.append(bytes((_i,)))
del _i


def bytea_text(value, hex_output: bool = True) -> str:
    if hex_output:
        return "\\x" + bytes(value).hex()
    return b"".join([_ESC[b] for b in value]).decode("ascii")


def byteaout(value, typ, ctx) -> str:
    return bytea_text(value, ctx.bytea_hex)


def uuid_out(value, typ, ctx) -> str:
    _fixed(value, 16, "uuid")
    h = bytes(value).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def oidout(value, typ, ctx) -> str:
    _fixed(value, 4, typ.typname)
    return str(_u32.unpack(value)[0])


def xid8out(value, typ, ctx) -> str:
    _fixed(value, 8, "xid8")
    return str(_u64.unpack(value)[0])


def pg_lsn_out(value, typ, ctx) -> str:
    _fixed(value, 8, "pg_lsn")
    lsn = _u64.unpack(value)[0]
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def tidout(value, typ, ctx) -> str:
    _fixed(value, 6, "tid")
    hi, lo, off = _tid.unpack(value)
    return f"({(hi << 16) | lo},{off})"


def varbit_text(value) -> str:
    """varbit_out: int32 bit_len, then the bits, most significant first."""
    if len(value) < 4:
        raise CorruptRecordError(f"bit string datum of {len(value)} bytes has no length")
    nbits = _i32.unpack_from(value, 0)[0]
    nbytes = (nbits + 7) >> 3
    if nbits < 0 or len(value) - 4 != nbytes:
        raise CorruptRecordError(f"bit string datum of {len(value)} bytes claims {nbits} bits")
    if nbits == 0:
        return ""
    return bin(int.from_bytes(value[4:], "big") | (1 << (nbytes * 8)))[3:3 + nbits]


def varbit_out(value, typ, ctx) -> str:
    return varbit_text(value)


# -- xml -----------------------------------------------------------------------------------------

_XML_BLANK = b" \t\n\r"


def _xml_skip(s: bytes, p: int) -> int:
    while p < len(s) and s[p] in _XML_BLANK:
        p += 1
    return p


def _xml_quoted(s: bytes, p: int):
    if p < len(s) and s[p] in b"'\"":
        q = s.find(s[p:p + 1], p + 1)
        if q >= 0:
            return s[p + 1:q], q + 1
    return None, p


def _parse_xml_decl(s: bytes):
    """xml.c parse_xml_decl: (decl length, version, standalone) or None on a malformed declaration."""
    version = None
    standalone = -1
    if not s.startswith(b"<?xml"):
        return 0, version, standalone
    nxt = s[5:6]
    if nxt and nxt not in _XML_BLANK and nxt != b"?":
        return 0, version, standalone  # a processing instruction such as <?xml-stylesheet ...?>
    p = 5
    if not nxt or nxt not in _XML_BLANK:
        return None
    p = _xml_skip(s, p)
    if not s.startswith(b"version", p):
        return None
    p = _xml_skip(s, p + 7)
    if s[p:p + 1] != b"=":
        return None
    p = _xml_skip(s, p + 1)
    version, p = _xml_quoted(s, p)
    if version is None:
        return None
    save_p = p
    p = _xml_skip(s, p)
    if s.startswith(b"encoding", p):
        if s[save_p:save_p + 1] not in (b" ", b"\t", b"\n", b"\r"):
            return None
        p = _xml_skip(s, p + 8)
        if s[p:p + 1] != b"=":
            return None
        p = _xml_skip(s, p + 1)
        enc, p = _xml_quoted(s, p)
        if enc is None:
            return None
    else:
        p = save_p
    save_p = p
    p = _xml_skip(s, p)
    if s.startswith(b"standalone", p):
        if s[save_p:save_p + 1] not in (b" ", b"\t", b"\n", b"\r"):
            return None
        p = _xml_skip(s, p + 10)
        if s[p:p + 1] != b"=":
            return None
        p = _xml_skip(s, p + 1)
        if s.startswith((b"'yes'", b'"yes"'), p):
            standalone = 1
            p += 5
        elif s.startswith((b"'no'", b'"no"'), p):
            standalone = 0
            p += 4
        else:
            return None
    else:
        p = save_p
    p = _xml_skip(s, p)
    if not s.startswith(b"?>", p):
        return None
    p += 2
    if any(b > 127 for b in s[:p]):
        return None
    return p, version, standalone


def xml_out_internal(value, encoding: str | None = None) -> bytes:
    """xml.c xml_out_internal: the stored text, its XML declaration printed only when needed
    (print_xml_decl: a version other than 1.0, standalone given, or a target ``encoding``
    other than UTF8 — xml_send's client encoding; xml_out passes none)."""
    s = bytes(value)
    parsed = _parse_xml_decl(s)
    if parsed is None:
        return s  # the server warns "could not parse XML declaration" and prints it as stored
    n, version, standalone = parsed
    # pg_enc 0 is SQL_ASCII: "encoding && encoding != PG_UTF8" leaves it out as well
    named = encoding not in (None, "UTF8", "SQL_ASCII")
    if (version is not None and version != b"1.0") or named or standalone != -1:
        decl = b'<?xml version="' + (version if version is not None else b"1.0") + b'"'
        if named:
            decl += b' encoding="' + encoding.encode("ascii") + b'"'
        if standalone == 1:
            decl += b' standalone="yes"'
        elif standalone == 0:
            decl += b' standalone="no"'
        return decl + b"?>" + s[n:]
    if s[n:n + 1] == b"\n":
        n += 1
    return s[n:]


def xml_out(value, typ, ctx) -> str:
    """xml_out: xml_out_internal(x, 0), never with an encoding."""
    return text_of(xml_out_internal(value))


# -- money ---------------------------------------------------------------------------------------

CHAR_MAX = 127
# struct lconv of the C/POSIX locale (and the fields cash_out reads)
_C_LCONV = {
    "currency_symbol": "", "mon_decimal_point": "", "mon_thousands_sep": "", "mon_grouping": [],
    "positive_sign": "", "negative_sign": "", "frac_digits": CHAR_MAX,
    "p_cs_precedes": CHAR_MAX, "p_sep_by_space": CHAR_MAX, "n_cs_precedes": CHAR_MAX,
    "n_sep_by_space": CHAR_MAX, "p_sign_posn": CHAR_MAX, "n_sign_posn": CHAR_MAX,
}
_lconv_cache: dict = {}


def monetary_conventions(lc_monetary: str) -> dict:
    """The lconv cash_out uses: C/POSIX built in; other locales read from this
    machine's C library (they must be installed here, as on the server)."""
    name = lc_monetary.strip()
    if name in ("", "C", "POSIX") or name.upper().startswith(("C.", "POSIX.")):
        return _C_LCONV
    conv = _lconv_cache.get(name)
    if conv is not None:
        return conv

    saved = locale.setlocale(locale.LC_MONETARY)
    try:
        locale.setlocale(locale.LC_MONETARY, name)
        lc = locale.localeconv()
    except locale.Error:
        raise UnsupportedSettingError(f"lc_monetary = {lc_monetary!r}: locale not available on this machine") \
            from None
    finally:
        locale.setlocale(locale.LC_MONETARY, saved)
    conv = {k: lc[k] for k in _C_LCONV}
    _lconv_cache[name] = conv
    return conv


class CashConventions(NamedTuple):
    """What cash_out takes of struct lconv, with its fallbacks applied."""

    points: int  # digits after the decimal point
    mon_group: int  # digits per group
    dsymbol: str  # decimal point
    ssymbol: str  # group separator
    csymbol: str  # currency symbol
    psign: str
    nsign: str
    p_layout: str  # cash_layout of positive amounts
    p_sep_by_space: int
    n_layout: str
    n_sep_by_space: int


def cash_conventions(lconv: dict) -> CashConventions:
    """cash_out's reading of struct lconv."""
    points = lconv["frac_digits"]
    if points < 0 or points > 10:
        points = 2
    grouping = lconv["mon_grouping"]
    mon_group = grouping[0] if grouping else 0
    if mon_group <= 0 or mon_group > 6:
        mon_group = 3
    dp = lconv["mon_decimal_point"]
    dsymbol = dp if len(dp.encode()) == 1 else "."
    return CashConventions(points, mon_group, dsymbol, lconv["mon_thousands_sep"] or ("," if dsymbol != "," else "."),
                           lconv["currency_symbol"] or "$", lconv["positive_sign"], lconv["negative_sign"] or "-",
                           cash_layout(lconv["p_sign_posn"], lconv["p_cs_precedes"]), lconv["p_sep_by_space"],
                           cash_layout(lconv["n_sign_posn"], lconv["n_cs_precedes"]), lconv["n_sep_by_space"])


def cash_text(value: int, lconv: dict) -> str:
    """cash_out."""
    c = cash_conventions(lconv)
    points, mon_group, dsymbol, ssymbol, csymbol = c.points, c.mon_group, c.dsymbol, c.ssymbol, c.csymbol
    if value < 0:
        value = -value
        signsymbol, layout, sep_by_space = c.nsign, c.n_layout, c.n_sep_by_space
    else:
        signsymbol, layout, sep_by_space = c.psign, c.p_layout, c.p_sep_by_space
    out = []
    digit_pos = points
    while True:
        if points and digit_pos == 0:
            out.append(dsymbol)
        elif digit_pos < 0 and digit_pos % mon_group == 0:
            out.append(ssymbol)
        out.append(chr(48 + value % 10))
        value //= 10
        digit_pos -= 1
        if not (value or digit_pos >= 0):
            break
    buf = "".join(reversed(out))  # built right to left, as cash_out does
    parts = {"N": buf, "C": csymbol, "S": signsymbol, "1": " " if sep_by_space == 1 else "",
             "2": " " if sep_by_space == 2 else "", "(": "(", ")": ")"}
    return "".join(parts[p] for p in layout)


def cash_layout(sign_posn: int, cs_precedes: int) -> str:
    """cash_out's placement of the parts, by the locale's sign_posn and cs_precedes: N the digits,
    C the currency symbol, S the sign, 1 a space where sep_by_space is 1, 2 one where it is 2."""
    if sign_posn == 0:
        return "(C1N)" if cs_precedes else "(N1C)"
    if sign_posn == 2:
        return "C1N2S" if cs_precedes else "N1C2S"
    if sign_posn == 3:
        return "S2C1N" if cs_precedes else "N1S2C"
    if sign_posn == 4:
        return "C2S1N" if cs_precedes else "N1C2S"
    return "S2C1N" if cs_precedes else "S2N1C"


def cash_out(value, typ, ctx) -> str:
    _fixed(value, 8, "money")
    return cash_text(_i64.unpack(value)[0], ctx.monetary)


OUTPUT_FUNCTIONS = {
    "boolout": boolout,
    "charout": charout,
    "nameout": nameout,
    "textout": textout,
    "varcharout": textout,
    "bpcharout": textout,
    "json_out": textout,
    "xml_out": xml_out,
    "byteaout": byteaout,
    "uuid_out": uuid_out,
    "oidout": oidout,
    "xidout": oidout,
    "cidout": oidout,
    "xid8out": xid8out,
    "pg_lsn_out": pg_lsn_out,
    "tidout": tidout,
    "bit_out": varbit_out,
    "varbit_out": varbit_out,
    "cash_out": cash_out,
    "citextout": textout,  # contrib citext: textout under another name
    "cstring_out": textout,  # attlen -2 values come without their NUL
    "unknownout": textout,
}
