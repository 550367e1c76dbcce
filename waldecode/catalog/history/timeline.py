"""The catalog timeline: the catalog as of any (LSN, transaction), an immutable query.

Owns ``CatalogTimeline``: the base snapshot, the committed catalog rows stamped by commit epoch
(the commit LSNs, in WAL order), and every top-level transaction's own catalog events, kept
after its commit, so that ``view(lsn, xid)`` is a pure function of the timeline, ``lsn`` and
``xid``; ``BaseFacts``, what the WAL read reveals of the catalog before it that the snapshot
does not record.  Built by ``CatalogHistory``, or loaded from ``to_bytes``/``to_json`` (for a
Spark worker, a ``--slot`` file); hands ``view.HistoricCatalog`` views to the decoder.
"""

from __future__ import annotations

import base64
import json
import zlib
from bisect import bisect_left

from ...heap.varlena import ToastPointer
from ..model import Catalog, CatalogError
from ..pg_catalog import (
    FIXED_NAMESPACES,
    PG_CATALOG_NAMESPACE,
    PG_PUBLIC_NAMESPACE,
    PG_TOAST_NAMESPACE,
    AttributeRelationId,
    InheritsRelationId,
    IndexRelationId,
    NamespaceRelationId,
    RelationRelationId,
    TypeRelationId,
)
from ..relcache import search_path_schemas
from .layers import ABSENT, RELMAP, Layer, RowEvent, TxnEvents
from .view import HistoricCatalog

FORMAT_NAME = "waldecode-catalog-timeline"
FORMAT_VERSION = 1


class BaseFacts:
    """What the WAL read shows of the catalog as it was before the read, beyond the snapshot: schema
    names by OID (a snapshot may not record them), from old row versions and from the rows on the
    catalog pages seen, and the pg_index rows on those pages (for a replica identity key the
    snapshot's relations may lose).  While a history is built the pages are read as needed
    (``pages``: ``rows(catalog)`` and ``count``); a loaded timeline holds what they showed."""

    def __init__(self, base: Catalog, warn=None, pages=None):
        self.base = base
        self.warn = warn
        self.namespaces: dict[int, str] = {}  # schema OID -> its name before the read changed it
        self.guesses: dict[int, str] = {}  # schema OID -> the name assumed for it (nothing told)
        self._pages = pages
        self._harvested = -1  # how many pages there were when they were last searched for schemas
        self._indexes: dict | None = None  # relid -> {indexrelid: row}, once loaded
        self._base_type_names: dict | None = None

    def known_namespace_name(self, nspoid: int) -> str | None:
        """The name schema ``nspoid`` had before the range, if a row of it (or the snapshot) says."""
        if nspoid in self.base.namespaces:
            return self.base.namespaces[nspoid]
        return self.namespaces.get(nspoid) or FIXED_NAMESPACES.get(nspoid)

    def namespace_name(self, nspoid: int) -> str | None:
        """The name of schema ``nspoid`` as the range found it (before any rename in it).

        Snapshots that record no schema OIDs: pg_catalog and pg_toast are pinned; others are
        learnt from pg_namespace rows the WAL shows, or from rows of pg_class and pg_type on
        pages seen whose objects the snapshot names.  A schema never seen is taken to be where
        an unqualified CREATE puts objects: the first schema of search_path (``public`` for OID
        2200), with a warning."""
        name = self.namespaces.get(nspoid)
        if name is not None:
            return name
        if nspoid in self.base.namespaces:
            return self.base.namespaces[nspoid]
        if nspoid in (PG_CATALOG_NAMESPACE, PG_TOAST_NAMESPACE):
            return FIXED_NAMESPACES[nspoid]
        if self._pages is not None and self._harvested != self._pages.count:  # pages seen since the last look
            self._harvested = self._pages.count
            self._harvest(self.namespaces)
            name = self.namespaces.get(nspoid)
            if name is not None:
                return name
        name = self.guesses.get(nspoid)
        if name is None:
            taken = set(self.namespaces.values()) | set(self.guesses.values())
            if nspoid == PG_PUBLIC_NAMESPACE and "public" not in taken:
                name = "public"
            else:
                for cand in search_path_schemas(self.base.settings.get("search_path", "")):
                    if cand not in ("pg_catalog",) and cand not in taken:
                        name = cand
                        break
            if name is None:
                return None
            self.guesses[nspoid] = name
            if nspoid != PG_PUBLIC_NAMESPACE and self.warn is not None:
                self.warn(f"schema OID {nspoid} is not in the catalog snapshot and its name is not in the WAL "
                          f"read: taken to be {name!r}, the first schema of search_path")
        return name

    def _harvest(self, into: dict) -> None:
        for row in self._pages.rows(NamespaceRelationId):
            into.setdefault(row["oid"], row["nspname"])
        for row in self._pages.rows(RelationRelationId):
            rel = self.base.relation(row["oid"])
            if rel is not None:
                into.setdefault(row["relnamespace"], rel.nspname)
        for row in self._pages.rows(TypeRelationId):
            typ = self.base.type(row["oid"])
            if typ is not None:
                into.setdefault(row["typnamespace"], typ.nspname)

    def type_oids(self, nspname: str, typname: str) -> list:
        """The OIDs of the base snapshot's types ``nspname.typname``."""
        if self._base_type_names is None:
            names: dict = {}
            for t in self.base.types.values():
                names.setdefault((t.nspname, t.typname), []).append(t.oid)
            self._base_type_names = names
        return self._base_type_names.get((nspname, typname), [])

    def indexes(self, relid: int) -> dict:
        """{indexrelid: row} of the pg_index rows of ``relid`` the pages seen held before the range."""
        if self._indexes is not None:
            return dict(self._indexes.get(relid, {}))
        if self._pages is None:
            return {}
        return {row["indexrelid"]: row for row in self._pages.rows(IndexRelationId) if row["indrelid"] == relid}

    def to_dict(self) -> dict:
        """What the pages seen show, as a loaded timeline keeps it."""
        names = dict(self.namespaces)
        indexes: dict = {}
        if self._pages is not None:
            self._harvest(names)
            for row in self._pages.rows(IndexRelationId):
                indexes.setdefault(row["indrelid"], {})[row["indexrelid"]] = row
        elif self._indexes is not None:
            indexes = self._indexes
        return {"namespaces": [[oid, name] for oid, name in names.items()],
                "guesses": [[oid, name] for oid, name in self.guesses.items()],
                "indexes": [_encode_row(row) for rows in indexes.values() for row in rows.values()]}

    @classmethod
    def from_dict(cls, base: Catalog, d: dict, warn=None) -> BaseFacts:
        facts = cls(base, warn)
        facts.namespaces = {int(oid): name for oid, name in d["namespaces"]}
        facts.guesses = {int(oid): name for oid, name in d["guesses"]}
        facts._indexes = {}
        for row in d["indexes"]:
            row = _decode_row(row)
            facts._indexes.setdefault(row["indrelid"], {})[row["indexrelid"]] = row
        return facts


class CatalogTimeline:
    """The base catalog plus every catalog change the WAL read shows, by LSN and transaction.

    ``commit_lsns[e]`` is where epoch ``e + 1`` begins: the committed catalog at an LSN is the base
    with the events of every commit before it.  ``txns`` holds each top-level transaction's own
    events (its subtransactions' included, aborted ones left out), also after it committed: a
    transaction sees its own changes made before an LSN on top of the committed catalog."""

    def __init__(self, base: Catalog, facts: BaseFacts | None = None, warn=None):
        self.base = base
        self.major = base.major
        self.facts = facts if facts is not None else BaseFacts(base, warn)
        self.warn = warn
        self.committed = Layer()
        # Commits arrive in WAL order, so appending keeps this list sorted and bisect finds the epoch of
        # an LSN in O(log n) with O(1) appends; a sortedcontainers.SortedList would only add cost to
        # every append (nothing is ever inserted out of order).  A transaction's ``lsns`` likewise.
        self.commit_lsns: list[int] = []
        self.commits: list[tuple] = []  # the events of each epoch, as committed
        self.txns: dict[int, TxnEvents] = {}
        self._views: dict = {}

    # -- building -----------------------------------------------------------------------------------

    def commit(self, lsn: int, events) -> None:
        """A new epoch at ``lsn``: ``events`` become everybody's."""
        epoch = len(self.commit_lsns)
        self.commit_lsns.append(lsn)
        events = tuple(events)
        self.commits.append(events)
        add = self.committed.add
        for ev in events:
            add(epoch, ev)

    def set_txn(self, top: int, txn: TxnEvents | None) -> None:
        """Transaction ``top``'s own events are now ``txn`` (None: it has none, e.g. it aborted)."""
        if txn is None:
            self.txns.pop(top, None)
        else:
            self.txns[top] = txn
        self._views.clear()

    def mapped_filenode(self, oid: int, epoch: int | None = None) -> int:
        """The relfilenode the relation mapper gives catalog ``oid`` in ``epoch`` (default: the last)."""
        v = self.committed.get(RELMAP, oid, len(self.commit_lsns) if epoch is None else epoch)
        if v is not ABSENT:
            return v[1]["filenode"]
        rel = self.base.relation(oid)
        return rel.relfilenode if rel is not None else 0

    # -- querying -----------------------------------------------------------------------------------

    def view(self, lsn: int, xid: int = 0):
        """The catalog as transaction ``xid`` (top-level) sees it at ``lsn``: the base ``Catalog`` itself
        while nothing applies, else a ``HistoricCatalog``."""
        epoch = bisect_left(self.commit_lsns, lsn) if self.commit_lsns else 0
        txn = self.txns.get(xid) if xid else None
        count = bisect_left(txn.lsns, lsn) if txn is not None else 0
        if not epoch and not count:
            return self.base
        key = (epoch, txn if count else None, count)
        v = self._views.get(key)
        if v is None:
            if len(self._views) > 256:
                self._views.clear()
            v = self._views[key] = HistoricCatalog(self, epoch, txn if count else None, count, lsn)
        return v

    def relation_by_filenode(self, spc: int, relfilenode: int, lsn: int, xid: int = 0):
        return self.view(lsn, xid).relation_by_filenode(spc, relfilenode)

    def relation(self, oid: int, lsn: int, xid: int = 0):
        return self.view(lsn, xid).relation(oid)

    # -- serialising --------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "base": self.base.to_dict(pages=False),
            "commits": [[lsn, [_encode_event(e) for e in events]] for lsn, events in zip(self.commit_lsns, self.commits)],
            "transactions": [[top, [_encode_event(e) for e in txn.events]] for top, txn in self.txns.items()],
            "facts": self.facts.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_bytes(self) -> bytes:
        """The timeline as zlib-compressed JSON (``from_bytes`` reads it back)."""
        return zlib.compress(self.to_json().encode("utf-8"), 6)

    @classmethod
    def from_dict(cls, doc, source: str = "catalog timeline", warn=None) -> CatalogTimeline:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise CatalogError(f"{source}: not a waldecode catalog timeline (no \"format\": \"{FORMAT_NAME}\")")
        if doc.get("version") != FORMAT_VERSION:
            raise CatalogError(f"{source}: catalog timeline version {doc.get('version')!r} is not supported "
                               f"(this waldecode reads version {FORMAT_VERSION})")
        base = Catalog.from_dict(doc["base"], source)
        try:
            tl = cls(base, BaseFacts.from_dict(base, doc["facts"], warn), warn)
            for lsn, events in doc["commits"]:
                tl.commit(int(lsn), [_decode_event(e) for e in events])
            for top, events in doc["transactions"]:
                tl.txns[int(top)] = TxnEvents(int(top), [_decode_event(e) for e in events])
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise CatalogError(f"{source}: malformed catalog timeline: {type(e).__name__}: {e}") from None
        return tl

    @classmethod
    def from_json(cls, text: str, source: str = "catalog timeline", warn=None) -> CatalogTimeline:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise CatalogError(f"{source}: not a JSON document: {e}") from None
        return cls.from_dict(doc, source, warn)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "catalog timeline", warn=None) -> CatalogTimeline:
        try:
            text = zlib.decompress(data).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as e:
            raise CatalogError(f"{source}: not a compressed catalog timeline: {e}") from None
        return cls.from_json(text, source, warn)


# -- values in JSON: rows hold ints, bools, text, lists of ints, and bytes (attmissingval, indpred) -----

def _encode_value(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"bytes": base64.b64encode(bytes(v)).decode("ascii")}
    if isinstance(v, ToastPointer):
        return {"toast": list(v)}
    return v


def _decode_value(v):
    if isinstance(v, dict):
        if "bytes" in v:
            return base64.b64decode(v["bytes"])
        return ToastPointer(*v["toast"])
    return v


def _encode_row(row: dict) -> dict:
    return {k: _encode_value(v) for k, v in row.items()}


def _decode_row(row: dict) -> dict:
    return {k: _decode_value(v) for k, v in row.items()}


def _encode_event(ev: RowEvent) -> list:
    return [ev.lsn, ev.xid, ev.cat, list(ev.key) if isinstance(ev.key, tuple) else ev.key, ev.deleted,
            _encode_row(ev.row)]


def _decode_event(e: list) -> RowEvent:
    lsn, xid, cat, key, deleted, row = e
    if cat in (AttributeRelationId, InheritsRelationId):
        key = tuple(key)
    return RowEvent(int(lsn), int(xid), int(cat), key, bool(deleted), _decode_row(row))
