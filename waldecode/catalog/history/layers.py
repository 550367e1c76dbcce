"""Versioned catalog rows: the store the catalog timeline is made of.

Owns ``RowEvent`` (one catalog row inserted or deleted by a transaction at an LSN), the key and
secondary links under which a row is found, ``Layer`` (rows by (catalog, key), each a list of
versions stamped with increasing numbers, readable as of any stamp) and ``TxnEvents`` (one
top-level transaction's events in LSN order, with their own layer).  Commit epochs stamp the
committed layer, event positions a transaction's own.  Hands rows to ``timeline`` and ``view``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import NamedTuple

from ..pg_catalog import (
    AttributeRelationId,
    EnumRelationId,
    IndexRelationId,
    InheritsRelationId,
    NamespaceRelationId,
    PUBLICATION_CATALOGS,
    RangeRelationId,
    RelationRelationId,
    TypeRelationId,
)

#: pseudo-catalog: relation-mapper updates (XLOG_RELMAP_UPDATE), keyed by catalog OID, rows {"filenode"}
RELMAP = 0

#: what ``Layer.get`` returns for a key it has no version of at that point: the base snapshot's object holds
ABSENT = object()


class RowEvent(NamedTuple):
    """A catalog row a transaction (``xid``, maybe a subtransaction) inserted, or deleted, at ``lsn``; an
    update is a deletion of the old row and an insertion of the new one."""

    lsn: int
    xid: int
    cat: int  # the catalog's OID (or RELMAP)
    key: object  # ``row_key``
    deleted: bool
    row: dict  # the columns ``pg_catalog.DECODED_COLUMNS`` names, decoded


def row_key(cat: int, row: dict):
    """The row's identity in its catalog: its OID, or pg_attribute's (attrelid, attnum), pg_index's
    indexrelid, pg_range's rngtypid."""
    if cat == AttributeRelationId:
        return (row["attrelid"], row["attnum"])
    if cat == IndexRelationId:
        return row["indexrelid"]
    if cat == RangeRelationId:
        return row["rngtypid"]
    if cat == InheritsRelationId:
        return (row["inhrelid"], row["inhseqno"])
    return row["oid"]


def row_links(cat: int, row: dict) -> tuple:
    """The secondary keys under which a row is found, as (index name, value): a relation by relfilenode,
    columns by relation, every type (and by name), every schema, enum labels by type, indexes by table,
    ranges (and by multirange), mapper entries by relfilenode."""
    if cat == RelationRelationId:
        return (("filenode", row["relfilenode"]),) if row["relfilenode"] else ()
    if cat == AttributeRelationId:
        return (("attrs", row["attrelid"]),)
    if cat == TypeRelationId:
        return (("types", 0), ("typname", row["typname"]))
    if cat == NamespaceRelationId:
        return (("nsp", 0),)
    if cat == EnumRelationId:
        return (("enum", row["enumtypid"]), ("enumtypes", 0))
    if cat == IndexRelationId:
        return (("index", row["indrelid"]),)
    if cat == RangeRelationId:
        multi = row.get("rngmultitypid")
        return (("ranges", 0),) + ((("multirange", multi),) if multi else ())
    if cat == RELMAP:
        return (("filenode", row["filenode"]),)
    if cat in PUBLICATION_CATALOGS:
        return (("pubs", cat),)
    return ()


class Layer:
    """Rows by (catalog, key), each a list of versions stamped with increasing numbers; a version is
    seen by a reader whose limit is above its stamp."""

    __slots__ = ("rows", "index")

    def __init__(self):
        self.rows: dict = {}  # (cat, key) -> ([stamps], [(deleted, row)])
        self.index: dict = {}  # (name, value) -> ([stamps], [(cat, key)])

    def add(self, stamp: int, ev: RowEvent) -> None:
        ent = self.rows.get((ev.cat, ev.key))
        if ent is None:
            ent = self.rows[(ev.cat, ev.key)] = ([], [])
        if ent[0] and ent[0][-1] == stamp:
            ent[1][-1] = (ev.deleted, ev.row)
        else:
            ent[0].append(stamp)
            ent[1].append((ev.deleted, ev.row))
        for link in row_links(ev.cat, ev.row):
            ix = self.index.get(link)
            if ix is None:
                ix = self.index[link] = ([], [])
            ix[0].append(stamp)
            ix[1].append((ev.cat, ev.key))

    def get(self, cat: int, key, limit: int):
        """(deleted, row) of the last version stamped below ``limit``, or ABSENT."""
        ent = self.rows.get((cat, key))
        if ent is None:
            return ABSENT
        stamps = ent[0]
        if stamps[-1] < limit:
            return ent[1][-1]
        i = bisect_left(stamps, limit)
        return ent[1][i - 1] if i else ABSENT

    def linked(self, name: str, value, limit: int, at_most: int | None = None) -> list:
        """Keys linked under (name, value) by versions below ``limit`` (the first ``at_most``)."""
        ix = self.index.get((name, value))
        if ix is None:
            return []
        n = len(ix[0]) if ix[0][-1] < limit else bisect_left(ix[0], limit)
        if at_most is not None:
            n = min(n, at_most)
        return ix[1][:n]


class TxnEvents:
    """A top-level transaction's catalog events (its subtransactions' included), in LSN order, and
    the layer they make, stamped by position: the first ``n`` are the rows it sees before event ``n``."""

    __slots__ = ("top", "events", "lsns", "layer", "xids")

    def __init__(self, top: int, events=()):
        self.top = top
        self.events: list[RowEvent] = []
        self.lsns: list[int] = []
        self.layer = Layer()
        self.xids: set = set()
        for ev in events:
            self.append(ev)

    def append(self, ev: RowEvent) -> None:
        self.layer.add(len(self.events), ev)
        self.events.append(ev)
        self.lsns.append(ev.lsn)
        self.xids.add(ev.xid)
