"""Geometric types (geo_ops.c): point_out, lseg_out, box_out, line_out,
path_out, poly_out, circle_out.  Coordinates print with float8out's rules
(extra_float_digits applies).

On disk: point = 2 float8; lseg, box = 2 points; line = 3 float8 (A, B, C);
circle = point + radius; path (varlena) = int32 npts, int32 closed, int32
padding, points; polygon (varlena) = int32 npts, a bounding box, points.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from .float import float8_text

_d = struct.Struct("<d")


def _floats(value, n: int, what: str, off: int = 0):
    if len(value) < off + 8 * n:
        raise CorruptRecordError(f"{what} datum of {len(value)} bytes is too short")
    return struct.unpack_from(f"<{n}d", value, off)


def _points(coords, efd: int) -> list:
    return [f"({float8_text(coords[i], efd)},{float8_text(coords[i + 1], efd)})" for i in range(0, len(coords), 2)]


def _exact(value, n: int, what: str):
    if len(value) != n:
        raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {n}")


def point_out(value, typ, ctx) -> str:
    _exact(value, 16, "point")
    return _points(_floats(value, 2, "point"), ctx.extra_float_digits)[0]


def lseg_out(value, typ, ctx) -> str:
    _exact(value, 32, "lseg")
    return "[" + ",".join(_points(_floats(value, 4, "lseg"), ctx.extra_float_digits)) + "]"


def box_out(value, typ, ctx) -> str:
    _exact(value, 32, "box")
    return ",".join(_points(_floats(value, 4, "box"), ctx.extra_float_digits))


def line_out(value, typ, ctx) -> str:
    _exact(value, 24, "line")
    a, b, c = _floats(value, 3, "line")
    efd = ctx.extra_float_digits
    return "{" + f"{float8_text(a, efd)},{float8_text(b, efd)},{float8_text(c, efd)}" + "}"


def circle_out(value, typ, ctx) -> str:
    _exact(value, 24, "circle")
    x, y, r = _floats(value, 3, "circle")
    efd = ctx.extra_float_digits
    return f"<({float8_text(x, efd)},{float8_text(y, efd)}),{float8_text(r, efd)}>"


def path_out(value, typ, ctx) -> str:
    if len(value) < 12:
        raise CorruptRecordError(f"path datum of {len(value)} bytes is too short")
    npts, closed = struct.unpack_from("<ii", value, 0)
    if npts < 0 or len(value) != 12 + 16 * npts:
        raise CorruptRecordError(f"path datum of {len(value)} bytes claims {npts} points")
    pts = ",".join(_points(_floats(value, 2 * npts, "path", 12), ctx.extra_float_digits))
    return f"({pts})" if closed else f"[{pts}]"


def poly_out(value, typ, ctx) -> str:
    if len(value) < 36:
        raise CorruptRecordError(f"polygon datum of {len(value)} bytes is too short")
    npts = struct.unpack_from("<i", value, 0)[0]
    if npts < 0 or len(value) != 36 + 16 * npts:
        raise CorruptRecordError(f"polygon datum of {len(value)} bytes claims {npts} points")
    return "(" + ",".join(_points(_floats(value, 2 * npts, "polygon", 36), ctx.extra_float_digits)) + ")"


OUTPUT_FUNCTIONS = {
    "point_out": point_out,
    "lseg_out": lseg_out,
    "box_out": box_out,
    "line_out": line_out,
    "circle_out": circle_out,
    "path_out": path_out,
    "poly_out": poly_out,
}
