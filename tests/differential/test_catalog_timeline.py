"""The catalog timeline: built once, serialised, loaded, it answers as the live history did.

On every ``ddl`` fixture (PostgreSQL 15 with each wal_compression, 16, 18) the decoder runs
with its catalog history, and every (LSN, transaction) query made during the run is recorded
with the answer the history gave then: the queries of the apply stage (one per change, made at
the transaction's commit) and the 'after statement N' queries of the session's transaction
(made as the record is read, the transaction still open).  The history's timeline, written to
bytes and loaded again, must give every one of them the same relations (columns, identity key,
type names, relfilenode), the same relation for every (tablespace, relfilenode) the apply stage
looked up, and the same types: a view is a function of the timeline, the LSN and the
transaction alone, not of how far the history had been fed when it was asked.
"""

from __future__ import annotations

import json

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import DEFAULT_SETTINGS, Catalog, CatalogError
from waldecode.catalog.history import CatalogTimeline
from waldecode.catalog.history.layers import RowEvent, TxnEvents
from waldecode.catalog.pg_catalog import AttributeRelationId, RelationRelationId, TypeRelationId
from waldecode.logical.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.heap.varlena import ToastPointer
from waldecode.wal.xlogreader import XLogReader, parse_lsn

DDL_FIXTURES = [pytest.param(fx, id=fx.name) for fx in all_fixtures()
                if fx.path.name == "ddl" and (fx.path / "catalog.json").is_file()
                and (fx.path / "snapshot.json.gz").is_file()]


def _keys(timeline, cat: int) -> set:
    """Every OID of ``cat`` the timeline holds a row of so far (committed or a transaction's own)."""
    keys = {k for (c, k) in timeline.committed.rows if c == cat}
    for txn in timeline.txns.values():
        keys |= {k for (c, k) in txn.layer.rows if c == cat}
    return keys


def _answer(view, rel_oids, type_oids) -> tuple:
    return ({oid: view.relation(oid) for oid in rel_oids}, {oid: view.type(oid) for oid in type_oids})


class _Looked:
    """The view the apply stage was handed, recording each relation_by_filenode it asks."""

    def __init__(self, view, log: list, query: list):
        self._view = view
        self._log = log
        self._query = query

    def relation_by_filenode(self, spc: int, relfilenode: int):
        rel = self._view.relation_by_filenode(spc, relfilenode)
        self._log.append((*self._query[0], spc, relfilenode, rel))
        return rel

    def __getattr__(self, name):
        return getattr(self._view, name)


@pytest.mark.parametrize("fx", DDL_FIXTURES)
def test_a_loaded_timeline_answers_every_query_as_the_live_history_did(fx):
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    options = fx.meta.get("decoding_options", {}).get("test_decoding.jsonl")
    if options is not None:
        slot = next(s for s in fx.meta["slots"] if s["name"] == options["slot"])
        start = parse_lsn(slot["restart_lsn"])
    else:
        start = min(parse_lsn(s["restart_lsn"]) for s in fx.meta["slots"])
    reader = XLogReader([fx.wal_dir], start, fx.end_lsn)
    rows: list[str] = []
    decoder = LogicalDecoder(catalog, TestDecoding(rows.append),
                             plugin_options=options["options"] if options else None, segment_size=reader.seg_size)
    history = decoder.history
    timeline = history.timeline
    asked: dict = {}  # (lsn, xid) -> (relation OIDs, type OIDs, the answer then)
    looked: list = []  # (lsn, xid, spc, relfilenode, relation) the apply stage asked
    proxies: dict = {}
    query: list = [None]

    def ask(lsn: int, xid: int):
        view = timeline.view(lsn, xid)
        if (lsn, xid) not in asked:
            rel_oids = set(catalog.relations) | _keys(timeline, RelationRelationId)
            type_oids = set(catalog.types) | _keys(timeline, TypeRelationId)
            asked[(lsn, xid)] = (rel_oids, type_oids, _answer(view, rel_oids, type_oids))
        return view

    def applied(lsn: int, xid: int = 0):  # what the apply stage calls, at each change
        view = ask(lsn, xid)
        query[0] = (lsn, xid)
        if id(view) not in proxies:
            proxies[id(view)] = (view, _Looked(view, looked, query))
        return proxies[id(view)][1]

    history.view = applied
    doc = json.loads((fx.path / "catalog.json").read_text())
    labels = sorted(parse_lsn(s["insert_lsn"]) for s in doc["snapshots"] if s["label"].startswith("after statement"))
    last_xid = 0
    statements = 0
    for rec in reader:
        while labels and rec.lsn >= labels[0]:
            ask(labels.pop(0), last_xid)  # the session's transaction, still open (its commit not read yet)
            statements += 1
        decoder.process(rec)
        if rec.xl_rmid in (9, 10) and rec.xl_xid:
            last_xid = decoder.txns.top(rec.xl_xid)
    decoder.finish()
    if options is not None:
        assert rows == [json.loads(line)[2] for line in (fx.path / "test_decoding.jsonl").read_text().splitlines()]
    assert decoder.warnings == [] and history.problems == []
    assert statements and len(looked) > 20 and len(asked) > len(timeline.commit_lsns) > 5

    data = timeline.to_bytes()
    loaded = CatalogTimeline.from_bytes(data)
    assert loaded.to_bytes() == data
    for (lsn, xid), (rel_oids, type_oids, answer) in asked.items():
        got = _answer(loaded.view(lsn, xid), rel_oids, type_oids)
        assert got[0] == answer[0], f"relations at {lsn:X} for {xid}"
        assert got[1] == answer[1], f"types at {lsn:X} for {xid}"
    for lsn, xid, spc, relfilenode, rel in looked:
        assert loaded.view(lsn, xid).relation_by_filenode(spc, relfilenode) == rel, (lsn, xid, spc, relfilenode)
    # the transactions' own changes count, long after they committed: some answers differ from the
    # committed catalog at the same LSN
    assert any(xid and _answer(loaded.view(lsn, 0), rels, types) != answer
               for (lsn, xid), (rels, types, answer) in asked.items())


def test_timeline_values_round_trip_and_bad_input_is_named():
    """Rows keep their Python values through the JSON: bytes (attmissingval, indpred), TOAST pointers,
    text with bytes the encoding could not decode, int2vector lists, pg_attribute's (attrelid, attnum)
    keys; a document of another kind, or damaged bytes, is refused with a message."""
    catalog = Catalog("15.0", 150000, 15, 0x1000028, "db", 5, 1663, dict(DEFAULT_SETTINGS), {}, {}, namespaces={11: "x"})
    tl = CatalogTimeline(catalog)
    att = {"attrelid": 16400, "attnum": 2, "attname": "caf\udce9", "attmissingval": b"\x00\x01\xff",
           "atthasmissing": True}
    idx = {"indexrelid": 16401, "indrelid": 16400, "indkey": [2, 1], "indpred": ToastPointer(10, 20, 30, 40)}
    tl.commit(0x2000000, [RowEvent(0x1FFFFF0, 700, AttributeRelationId, (16400, 2), False, att)])
    tl.txns[701] = TxnEvents(701, [RowEvent(0x2000100, 702, 2610, 16401, True, idx)])
    again = CatalogTimeline.from_json(tl.to_json())
    assert again.commits == tl.commits and again.commit_lsns == [0x2000000]
    assert again.txns[701].events == tl.txns[701].events
    assert again.base == catalog and again.to_json() == tl.to_json()
    with pytest.raises(CatalogError, match="not a waldecode catalog timeline"):
        CatalogTimeline.from_json(catalog.to_json(), "t.json")
    with pytest.raises(CatalogError, match="^t: not a compressed catalog timeline"):
        CatalogTimeline.from_bytes(b"junk", "t")
