"""The relation mapper's files: the relfilenodes of mapped catalogs (pg_class, pg_attribute, ...).

Owns src/backend/utils/cache/relmapper.c's RelMapFile, declared once with ``construct`` for
13-18 (MAX_MAPPINGS 62 plus a pad in 13-15, 64 in 16+): ``global/pg_filenode.map`` and
``base/<db>/pg_filenode.map`` read with their CRC-32C checked, and the same layout as an
XLOG_RELMAP_UPDATE record carries it.  Hands {catalog OID: relfilenode} to the data-directory
reader and the catalog history.
"""

from __future__ import annotations

from construct import Array, Int32sl, Int32ul, Padding, Struct, Tell
from crc32c import crc32c

from ..model import CatalogError
from .control import read_head
from .files import LOCAL, DataFiles

RELMAPPER_FILENAME = "pg_filenode.map"
RELMAPPER_FILEMAGIC = 0x592717

# src/backend/utils/cache/relmapper.c
RelMapping = Struct("mapoid" / Int32ul, "mapfilenumber" / Int32ul)
RelMapFileHead = Struct("magic" / Int32sl, "num_mappings" / Int32sl)


def max_mappings(major: int) -> int:
    """MAX_MAPPINGS: 62 in 13-15 (the struct padded to 512 bytes), 64 in 16+ (524 bytes)."""
    return 64 if major >= 16 else 62


def rel_map_file(major: int) -> Struct:
    """RelMapFile: magic, num_mappings, mappings[MAX_MAPPINGS], crc (of all before it), 13-15: pad."""
    return Struct(
        "magic" / Int32sl,
        "num_mappings" / Int32sl,
        "mappings" / Array(max_mappings(major), RelMapping),
        "crc_offset" / Tell,
        "crc" / Int32ul,
        *((Padding(4),) if major < 16 else ()),
    )


def read_relmap_file(path: str, major: int, files: DataFiles = LOCAL) -> dict[int, int]:
    """A ``pg_filenode.map`` (of ``files``): {catalog OID: relfilenode}, magic, count and CRC-32C checked."""
    layout = rel_map_file(major)
    size = layout.sizeof()
    data = read_head(path, size, f"relation mapper file {path} is missing", "relation mapper file ", files)
    needed = size - (4 if major < 16 else 0)
    if len(data) < needed:
        raise CatalogError(f"relation mapper file {path}: {len(data)} bytes, expected {needed} or more")
    rmf = layout.parse(data.ljust(size, b"\x00"))
    if rmf.magic != RELMAPPER_FILEMAGIC or not 0 <= rmf.num_mappings <= max_mappings(major):
        raise CatalogError(f"relation mapper file {path} contains invalid data (magic {rmf.magic:#x}, "
                           f"{rmf.num_mappings} mappings)")
    if crc32c(data[:rmf.crc_offset]) != rmf.crc:
        raise CatalogError(f"relation mapper file {path}: CRC mismatch: the file is damaged")
    return {m.mapoid: m.mapfilenumber for m in rmf.mappings[:rmf.num_mappings]}


def relmap_update_mappings(data) -> list[tuple[int, int]] | None:
    """The (catalog OID, relfilenode) pairs of the RelMapFile an XLOG_RELMAP_UPDATE record carries (its
    ``data[nbytes]``); None when it is not one (magic, count)."""
    if len(data) < RelMapFileHead.sizeof():
        return None
    head = RelMapFileHead.parse(data)
    n = head.num_mappings
    if head.magic != RELMAPPER_FILEMAGIC or n < 0 or RelMapFileHead.sizeof() + RelMapping.sizeof() * n > len(data):
        return None
    return [(m.mapoid, m.mapfilenumber) for m in Array(n, RelMapping).parse(bytes(data[RelMapFileHead.sizeof():]))]
