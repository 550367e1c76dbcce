"""pglz decompression (src/common/pg_lzcompress.c: pglz_decompress).

PostgreSQL's own LZ variant, used for full-page images (wal_compression=pglz, or
``on`` before 15) and for TOAST values compressed with pglz.  The stream has no
header: the caller knows the raw size.  No PyPI package implements it, so it lives
here, in pure Python, and again in ``native/`` for speed.
"""

from __future__ import annotations

from ..errors import DecompressionError


def pglz_decompress(src, rawsize: int, check_complete: bool = True) -> bytes:
    src = bytes(src)
    srclen = len(src)
    out = bytearray()
    sp = 0
    while sp < srclen and len(out) < rawsize:
        ctrl = src[sp]
        sp += 1
        for _ in range(8):
            if sp >= srclen or len(out) >= rawsize:
                break
            if ctrl & 1:
                if sp + 1 >= srclen:
                    raise DecompressionError("pglz: compressed data is truncated inside a match tag")
                b0 = src[sp]
                b1 = src[sp + 1]
                sp += 2
                length = (b0 & 0x0F) + 3
                off = ((b0 & 0xF0) << 4) | b1
                if length == 18:
                    if sp >= srclen:
                        raise DecompressionError("pglz: compressed data is truncated inside a match tag")
                    length += src[sp]
                    sp += 1
                if off == 0 or off > len(out):
                    raise DecompressionError(f"pglz: match offset {off} outside the {len(out)} bytes decoded")
                length = min(length, rawsize - len(out))
                start = len(out) - off
                if off >= length:
                    out += out[start:start + length]
                else:
                    # Overlapping copy: the source advances with the output
                    while length > 0:
                        chunk = min(off, length)
                        out += out[start:start + chunk]
                        length -= chunk
                        start += chunk
            else:
                out.append(src[sp])
                sp += 1
            ctrl >>= 1
    if check_complete and (len(out) != rawsize or sp != srclen):
        raise DecompressionError(f"pglz: decompressed {len(out)} of {rawsize} bytes using {sp} of {srclen} input bytes")
    return bytes(out)
