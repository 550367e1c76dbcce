"""Catalog history against PostgreSQL's own catalog rows, on the fixtures (no server).

The ``ddl`` fixtures of every cluster (15 with each wal_compression, 16, 18) carry the raw
catalog rows the generator read after each DDL statement, in the session that ran it
(``catalog.json``): the history's view at that LSN, for that session's transaction, must
hold the same relations, columns and types.  A materialized catalog restarts decoding where
it was taken; without the history, unknown relations are skipped with a warning.
"""

from __future__ import annotations

import dataclasses
import json
import re

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixture_data import all_fixtures
from live import DB, SlotRun, live_cluster
from waldecode.catalog import DEFAULT_SETTINGS, Catalog, CatalogError, CatalogPages
from waldecode.catalog.dsn import parse_single_element_array, snapshot_from_connection
from waldecode.errors import format_lsn
from waldecode.catalog.history import DECODED_COLUMNS, CatalogHistory, CatalogLayout, HistoricCatalog
from waldecode.logical.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.snapbuild import SNAPBUILD_CONSISTENT, SnapBuilder
from waldecode.wal.xlogreader import XLogReader, parse_lsn

# -- the fixtures' catalog rows ------------------------------------------------------------------

DDL_FIXTURES = [pytest.param(fx, id=fx.name) for fx in all_fixtures()
                if fx.path.name == "ddl" and (fx.path / "catalog.json").is_file()
                and (fx.path / "snapshot.json.gz").is_file()]

REL_FIELDS = ("relname", "nspname", "relkind", "relpersistence", "relfilenode", "reltablespace", "reltoastrelid",
              "relrewrite", "relreplident")
ATT_FIELDS = ("attname", "atttypid", "atttypmod", "attlen", "attalign", "attbyval", "attstorage", "attisdropped",
              "attnotnull", "atthasmissing")
TYPE_FIELDS = ("typname", "nspname", "typlen", "typbyval", "typtype", "typcategory", "typdelim", "typelem",
               "typarray", "typrelid", "typbasetype", "typtypmod", "typalign", "typstorage", "typoutput",
               "format_type")


def _check_view(view, snap: dict, all_rel_oids: set, where: str) -> None:
    spc = view.database_tablespace
    rels = {r["oid"]: r for r in snap["relations"]}
    for oid, exp in rels.items():
        rel = view.relation(oid)
        assert rel is not None, f"{where}: relation {exp['relname']} ({oid}) missing"
        for f in REL_FIELDS:
            assert getattr(rel, f) == exp[f], f"{where}: {exp['relname']}.{f}: {getattr(rel, f)!r} != {exp[f]!r}"
        if exp["relfilenode"]:
            assert view.relation_by_filenode(exp["reltablespace"] or spc, exp["relfilenode"]) is rel, where
        atts = [a for a in snap["attributes"] if a["attrelid"] == oid]
        assert [a.attnum for a in rel.attributes] == [a["attnum"] for a in atts], f"{where}: {exp['relname']}"
        for att, a in zip(rel.attributes, atts):
            for f in ATT_FIELDS:
                assert getattr(att, f) == a[f], f"{where}: {exp['relname']}.{a['attname']}.{f}"
            missing = None
            if a["attmissingval"] is not None and not a["attisdropped"]:
                missing = parse_single_element_array(a["attmissingval"])
            assert att.attmissingval == missing, f"{where}: {exp['relname']}.{a['attname']} attmissingval"
            if not att.attisdropped:
                typ = next(t for t in snap["types"] if t["oid"] == a["atttypid"])
                assert att.type_name == typ["format_type"], f"{where}: {exp['relname']}.{a['attname']} type"
    for oid in all_rel_oids - set(rels):
        rel = view.relation(oid)
        assert rel is None, f"{where}: relation {oid} ({rel.relname}) should not exist"
    for exp in snap["types"]:
        typ = view.type(exp["oid"])
        assert typ is not None, f"{where}: type {exp['typname']} missing"
        for f in TYPE_FIELDS:
            assert getattr(typ, f) == exp[f], f"{where}: type {exp['typname']}.{f}"


@pytest.mark.parametrize("fx", DDL_FIXTURES)
def test_decoded_catalog_rows_equal_the_servers(fx, impl):
    """At every 'after statement N' point the view for the session's transaction has the server's rows,
    the records read by either implementation."""
    doc = json.loads((fx.path / "catalog.json").read_text())
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    history = CatalogHistory(catalog)
    assert history.active
    labels = [(parse_lsn(s["insert_lsn"]), s) for s in doc["snapshots"] if s["label"].startswith("after statement")]
    all_oids = {r["oid"] for s in doc["snapshots"] for r in s["relations"]}
    start = min(parse_lsn(s["restart_lsn"]) for s in fx.meta["slots"])
    reader = XLogReader([fx.wal_dir], start, fx.end_lsn)
    last_xid = 0
    checked = 0
    for rec in reader:
        while labels and rec.lsn >= labels[0][0]:
            lsn, snap = labels.pop(0)
            _check_view(history.view(lsn, last_xid), snap, all_oids, f"{fx.name} {snap['label']}")
            checked += 1
        history.process(rec)
        if rec.xl_rmid in (9, 10) and rec.xl_xid:
            last_xid = history.tracker.top(rec.xl_xid)
    assert checked and not labels
    assert history.problems == []
    # The views inside the transaction saw its own uncommitted DDL: the history's transactions commit
    assert not history.txns


RESTART_FIXTURES = [pytest.param(fx, id=fx.name) for fx in all_fixtures()
                    if fx.name in ("pg15-off/ddl", "pg15-off/truncate", "pg15-zstd/ddl", "pg15-zstd/truncate")]


@pytest.mark.parametrize("fx", RESTART_FIXTURES)
def test_materialized_catalog_restarts_decoding(fx):
    """``materialize`` between transactions: a decoder started from that catalog (written as JSON and
    read back) at that point, fed the records after it, prints what the uninterrupted run printed after
    it, and ends with the same catalog.  While a transaction with catalog changes is open it refuses."""
    meta = fx.meta["decoding_options"]["test_decoding.jsonl"]
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    reader = XLogReader([fx.wal_dir], parse_lsn(slot["restart_lsn"]), fx.end_lsn)
    records = list(reader)

    def decoder_for(cat: Catalog, rows: list) -> LogicalDecoder:
        return LogicalDecoder(cat, TestDecoding(rows.append), plugin_options=meta["options"],
                              segment_size=reader.seg_size)

    rows: list[str] = []
    decoder = decoder_for(catalog, rows)
    points = []  # (index of the last record taken, materialized catalog as JSON, rows printed by then)
    refused = 0
    for i, rec in enumerate(records):
        decoder.process(rec)
        history = decoder.history
        if history.has_uncommitted_changes:
            assert history.materialize() is None
            refused += 1
        elif decoder.snapbuild.state == SNAPBUILD_CONSISTENT and not decoder.rb.toplevel:
            points.append((i, history.materialize().to_json(), len(rows)))
    decoder.finish()
    assert rows == [json.loads(line)[2] for line in (fx.path / "test_decoding.jsonl").read_text().splitlines()]
    assert refused and len(points) > 5
    final = decoder.history.materialize()
    assert final.lsn == records[-1].end_lsn
    for i, text, printed in points[::max(1, len(points) // 6)] + points[-1:]:
        restarted = Catalog.from_json(text)
        assert restarted.lsn == records[i].end_lsn
        again: list[str] = []
        d2 = decoder_for(restarted, again)
        d2.snapbuild = SnapBuilder(restarted.lsn, assume_consistent=True)  # as a slot restarting there would be
        for rec in records[i + 1:]:
            d2.process(rec)
        d2.finish()
        assert again == rows[printed:], f"restarted after record {i}"
        assert d2.warnings == []
        assert d2.history.materialize().to_json() == final.to_json(), f"restarted after record {i}"


def test_without_history_unknown_relations_are_skipped_with_a_warning():
    """The static snapshot alone (history off): every change to a table created in the range is
    reported and skipped; the transactions and other rows still print."""
    fx = next(p.values[0] for p in DDL_FIXTURES if p.values[0].name == "pg15-off/ddl")
    meta = fx.meta["decoding_options"]["test_decoding.jsonl"]
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    got: list[str] = []
    reader = XLogReader([fx.wal_dir], parse_lsn(slot["restart_lsn"]), fx.end_lsn)
    seen = []
    decoder = LogicalDecoder(catalog, TestDecoding(got.append), segment_size=reader.seg_size,
                             catalog_history=False, on_warning=seen.append)
    for rec in reader:
        decoder.process(rec)
    decoder.finish()
    expected = [json.loads(line)[2] for line in (fx.path / "test_decoding.jsonl").read_text().splitlines()]
    assert got == [r for r in expected if not r.startswith("table ")]
    # (more warnings than rows: the rewrites' inserts into their transient heaps are unknown too)
    assert seen == decoder.warnings and len(seen) >= sum(1 for r in expected if r.startswith("table "))
    assert all(re.fullmatch(r"could not map filenumber 1663/16384/\d+ to a relation for the (INSERT|UPDATE|DELETE) "
                            r"of transaction \d+ at [0-9A-F]+/[0-9A-F]+: not in the catalog snapshot taken at "
                            r"[0-9A-F]+/[0-9A-F]+; change skipped", w) for w in seen), seen[0]


def test_catalog_pages_in_json():
    """The pages' JSON: blocks with their tuples by offset, partial blocks, unknown ones; damage named."""
    tuples = {1: bytes(range(30)), 3: b"\xff" * 40}
    pages = CatalogPages(1259, 16500, "history", {0: list(tuples.items()), 2: []}, {2})
    catalog = Catalog("15.0", 150000, 15, 0x1000028, "db", 5, 1663, dict(DEFAULT_SETTINGS), {}, {},
                      catalog_pages={1259: pages}, catalog_pages_note="a note")
    text = catalog.to_json()
    again = Catalog.from_json(text)
    assert again == catalog and again.to_json() == text
    got = again.catalog_pages[1259]
    assert (got.relfilenode, got.source, got.partial) == (16500, "history", {2})
    assert got.tuples(0) == tuples and got.tuples(2) == {} and got.tuples(1) is None
    assert again.catalog_pages_note == "a note"
    doc = json.loads(text)
    assert doc["version"] == 1 and doc["catalog_pages"][0]["blocks"][0]["items"] == [[1, 30], [3, 40]]
    doc["catalog_pages"][0]["blocks"][0]["data"] = "eJw="
    damaged = Catalog.from_json(json.dumps(doc))
    with pytest.raises(CatalogError, match="catalog snapshot: block 0 of catalog 1259 does not unpack"):
        damaged.catalog_pages[1259].tuples(0)


def test_a_snapshot_without_catalogs_disables_the_history():
    catalog = Catalog("15.0", 150000, 15, 0, "db", 5, 1663, {"TimeZone": "UTC"}, {}, {})
    decoder = LogicalDecoder(catalog, TestDecoding(lambda row: None), segment_size=16 << 20)
    assert decoder.history is None
    assert decoder.warnings == ["the catalog snapshot has no pg_class (OID 1259) with its columns and relfilenode: "
                                "catalog changes in the WAL are not tracked"]
