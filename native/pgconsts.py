"""Writes native/pgconsts.pxd: the PostgreSQL constants of the pure-Python modules, for Cython, and
native/pgconsts.h: those of ``C_SOURCES``, for the header-only C (``native/wd_xlogpage.h``,
``native/wd_xlogrecord.h``, ``native/wd_xlogframe.h``).

The pure-Python modules are the one place each constant is written (named as PostgreSQL names
it, with the header it comes from); the native code cimports the same names from the
declarations this script generates at build time (setup.py runs it), so that the two
implementations can never disagree on a value.  Read with ``ast``, never imported: the build
environment has none of the package's dependencies.

A constant is a module-level ``NAME = <integer expression>`` whose name starts with a capital
letter; values that fit a C int become ``cdef enum`` members, the others — and those annotated
``NAME: "int64" = ...``, PostgreSQL's INT64CONSTs — 64-bit ``#define``s.
"""

from __future__ import annotations

import ast
import operator
import os
import sys

# The modules that own the constants the native code uses (relative to the repository root)
SOURCES = (
    "waldecode/heap/heaptuple.py",
    "waldecode/heap/varlena.py",
    "waldecode/rmgr/heap.py",
    "waldecode/logical/reorderbuffer.py",
    "waldecode/pg/pg_type.py",
    "waldecode/types/arrays.py",
    "waldecode/types/numeric.py",
    "waldecode/types/datetime.py",
    "waldecode/types/jsonb.py",
    "waldecode/types/network.py",
    "waldecode/types/float.py",
    "waldecode/wal/xlogpage.py",
    "waldecode/wal/xlogrecord.py",
    "waldecode/rmgr/__init__.py",
    "waldecode/rmgr/xlog.py",
    "waldecode/rmgr/xact.py",
    "waldecode/logical/snapbuild.py",
)

# The modules whose constants the header-only C uses, as #defines of native/pgconsts.h: few, so that
# their names (PostgreSQL's, unprefixed) cannot meet another header's
C_SOURCES = (
    "waldecode/wal/xlogpage.py",
    "waldecode/wal/xlogrecord.py",
    "waldecode/rmgr/__init__.py",
    "waldecode/rmgr/xlog.py",
)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_UNOPS = {ast.USub: operator.neg, ast.Invert: operator.invert, ast.UAdd: operator.pos}
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def _value(node, known: dict):
    """The integer an expression of literals and earlier constants gives, or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        v = _value(node.operand, known)
        return None if v is None else _UNOPS[type(node.op)](v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _value(node.left, known), _value(node.right, known)
        return None if a is None or b is None else _BINOPS[type(node.op)](a, b)
    return None


def module_constants(path: str, wide_names: set) -> dict[str, int]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    known: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, wide = node.targets[0], False
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, wide = node.target, isinstance(node.annotation, ast.Constant) and node.annotation.value == "int64"
        else:
            continue
        if isinstance(target, ast.Name) and target.id[:1].isupper():
            v = _value(node.value, known)
            if v is not None:
                known[target.id] = v
                if wide:
                    wide_names.add(target.id)
    return known


def render(root: str) -> str:
    seen: dict[str, tuple[int, str]] = {}
    enums, wide, wide_names = [], [], set()
    for rel in SOURCES:
        consts = module_constants(os.path.join(root, rel), wide_names)
        members = []
        for name, v in consts.items():
            if name in seen:
                if seen[name][0] != v:
                    raise SystemExit(f"{name} is {seen[name][0]} in {seen[name][1]} but {v} in {rel}")
                continue
            seen[name] = (v, rel)
            if INT_MIN <= v <= INT_MAX and name not in wide_names:
                members.append(f"    {name} = {v}")
            else:
                wide.append((name, v, rel))
        if members:
            enums.append(f"# {rel}\ncdef enum:\n" + "\n".join(members) + "\n")
    out = ["# Generated at build time by native/pgconsts.py from the pure-Python modules: do not edit.\n"]
    if wide:
        defines = "\n".join(f"    #define {n} ((long long) {v}LL)" if v > -(1 << 63) else
                            f"    #define {n} ((long long) (-{-v - 1}LL - 1))" for n, v, _ in wide)
        decls = "\n".join(f"    const long long {n}  # {rel}" for n, _, rel in wide)
        out.append(f'cdef extern from *:\n    """\n{defines}\n    """\n{decls}\n')
    out.extend(enums)
    return "\n".join(out)


def render_c(root: str) -> str:
    """native/pgconsts.h: a ``#define`` per constant of ``C_SOURCES``.  Cython mangles the names of the
    enums of pgconsts.pxd, so the two never meet in an extension's C."""
    out = ["/* Generated at build time by native/pgconsts.py from the pure-Python modules: do not edit. */",
           "#ifndef WD_PGCONSTS_H", "#define WD_PGCONSTS_H"]
    for rel in C_SOURCES:
        out.append(f"\n/* {rel} */")
        for name, v in module_constants(os.path.join(root, rel), set()).items():
            out.append(f"#define {name} {v}" if INT_MIN <= v <= INT_MAX else f"#define {name} {v}LL")
    out.append("\n#endif")
    return "\n".join(out) + "\n"


def write(root: str, target: str, render=render) -> None:
    text = render(root)
    try:
        with open(target, encoding="utf-8") as f:
            if f.read() == text:
                return  # unchanged: keep the timestamp, no rebuild
    except FileNotFoundError:
        pass
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.dirname(here), sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "pgconsts.pxd"))
    write(os.path.dirname(here), sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "pgconsts.h"), render_c)
