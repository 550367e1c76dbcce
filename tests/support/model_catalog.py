"""The one-table catalog the decoding model tests decode with, and its rows as WAL carries them.

``public.t (id integer, v text)`` in database 16384, tablespace 1663, relfilenode 16400
(replica identity: id); ``tuple_bytes`` is a row as a heap insert's block data holds it
(xl_heap_header, then the tuple body from the padding up to t_hoff 24).
"""

from __future__ import annotations

import struct

from waldecode.catalog import Attribute, Catalog, Relation, TypeInfo

DB = 16384
REL = 16400
SPC = 1663


def make_catalog() -> Catalog:
    atts = (Attribute(1, "id", 23, -1, 4, True, "i", "p", False, type_name="integer"),
            Attribute(2, "v", 25, -1, -1, False, "i", "x", False, type_name="text"))
    rel = Relation(REL, "t", "public", "r", "p", REL, 0, "d", attributes=atts, replica_identity_key=(1,))
    types = {23: TypeInfo(23, "int4", "pg_catalog", 4, True, "i", "p", "b", "N", ",", 0, 1007, 0, -1, 0,
                          "int4out", "integer"),
             25: TypeInfo(25, "text", "pg_catalog", -1, False, "i", "x", "b", "S", ",", 0, 1009, 0, -1, 0,
                          "textout", "text")}
    return Catalog("15.0", 150000, 15, 0, "db", DB, SPC, {"TimeZone": "UTC"}, {REL: rel}, types)


def tuple_body(ident: int, text: str) -> bytes:
    """The tuple body: the byte of padding up to t_hoff 24, the int4, the text as a 1-byte varlena."""
    raw = text.encode()
    return b"\x00" + struct.pack("<i", ident) + bytes([((len(raw) + 1) << 1) | 1]) + raw


def tuple_bytes(ident: int, text: str) -> bytes:
    """xl_heap_header (natts 2, HEAP_HASVARWIDTH, t_hoff 24), then the body."""
    return struct.pack("<HHB", 2, 0x0002, 24) + tuple_body(ident, text)
