"""A row filter's expression compiled into Python closures over a row, with SQL's three-valued logic."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Callable

from ...heap.heaptuple import MissingValue
from ...heap.varlena import ToastPointer
from ...pg.pg_type import BOOLOID, BPCHAROID, FLOAT4OID, FLOAT8OID, NAMEOID, NUMERICOID, TEXTOID, VARCHAROID
from .. import UNCHANGED_TOAST
from ..quote import quote_identifier
from .datums import (C_COLLATION_OID, DEFAULT_COLLATION_OID, POSIX_COLLATION_OID, SUPPORTED_TYPES, _ARRAY_OF,
                     _NUMERIC_CONTEXT, _const_value, datum_value, text_value)
from .functions import (_CMP_RESULT, _CMP_SUFFIX, _PROCS, _bpchar_cmp, _date_timestamp, _dtof, _float_arith,
                        _float_cmp, _float_to_int, _float_to_numeric, _int_div, _int_mod, _int_result, _like,
                        _numeric_cmp, _numeric_to_float4, _numeric_to_float8, _numeric_to_int, _plain_cmp)
from .nodetree import Node, RowFilterError


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
    return f"{quote_identifier(relation.nspname)}.{quote_identifier(relation.relname)}"
