"""Full-page images: rebuild the 8 kB page a block reference carries.

src/backend/access/transam/xlogreader.c RestoreBlockImage: decompress (pglz, lz4
or zstd from 15; pglz only in 13 and 14), then put the hole (the page's free
space, removed before compression) back as zeros.
"""

from __future__ import annotations

from ..errors import DecompressionError
from .. import _impl
from .xlogrecord import (
    BKPIMAGE_APPLY,
    BKPIMAGE_APPLY_V13,
    BKPIMAGE_COMPRESS_LZ4,
    BKPIMAGE_COMPRESS_PGLZ,
    BKPIMAGE_COMPRESS_ZSTD,
    BKPIMAGE_IS_COMPRESSED_V13,
    BLCKSZ,
    BlockRef,
)


def compression_method(block: BlockRef, major: int) -> str | None:
    """'pglz', 'lz4', 'zstd' or None for an uncompressed image."""
    info = block.bimg_info
    if major < 15:
        return "pglz" if info & BKPIMAGE_IS_COMPRESSED_V13 else None
    if info & BKPIMAGE_COMPRESS_PGLZ:
        return "pglz"
    if info & BKPIMAGE_COMPRESS_LZ4:
        return "lz4"
    if info & BKPIMAGE_COMPRESS_ZSTD:
        return "zstd"
    return None


def image_is_applied(block: BlockRef, major: int) -> bool:
    return bool(block.bimg_info & (BKPIMAGE_APPLY if major >= 15 else BKPIMAGE_APPLY_V13))


def restore_block_image(block: BlockRef, major: int, lsn: int | None = None) -> bytes:
    if not block.has_image:
        raise ValueError(f"block {block.block_id} has no image")
    method = compression_method(block, major)
    size = BLCKSZ - block.hole_length
    img = block.image
    try:
        if method == "pglz":
            img = _impl.pglz_decompress(img, size)
        elif method == "lz4":
            import lz4.block  # lazy: only lz4-compressed page images need it (1 ms)

            img = lz4.block.decompress(img, uncompressed_size=size)
        elif method == "zstd":
            import zstandard  # lazy: only zstd-compressed page images need it (2 ms)

            img = zstandard.ZstdDecompressor().decompress(img, max_output_size=size)
    except DecompressionError as e:
        raise DecompressionError(f"could not restore image of block {block.block_id}: {e.reason}", lsn=lsn) from None
    except Exception as e:  # lz4/zstandard raise their own error types
        raise DecompressionError(f"could not restore image of block {block.block_id}: {method}: {e}", lsn=lsn) from None
    if len(img) != size:
        raise DecompressionError(f"could not restore image of block {block.block_id}: {method or 'image'} gave "
                                 f"{len(img)} bytes, expected {size}", lsn=lsn)
    if block.hole_length:
        img = img[:block.hole_offset] + bytes(block.hole_length) + img[block.hole_offset:]
    return bytes(img)
