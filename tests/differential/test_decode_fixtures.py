"""``waldecode decode`` against PostgreSQL's own test_decoding on the same WAL.

For every PostgreSQL 15 fixture, decoding its WAL from the slot's restart LSN with
the catalog snapshot taken at the workload's start must print exactly the rows the
server's test_decoding slot returned: with default options, with
include-timestamp and skip-empty-xacts, and (prepared workload) from a two_phase
slot.  Run for both implementations of the hot path, and with a spill threshold
small enough that every large transaction goes through .spill files.  DDL inside
the range (``ddl``, ``truncate``) is decoded with the catalog history built from
the WAL's catalog rows; no change may be skipped.
"""

from __future__ import annotations

import json
import re

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.request import DecodeRequest
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

CASES = []
for fx in all_fixtures():
    if fx.major != 15:
        continue
    for out_file, meta in fx.meta.get("decoding_options", {}).items():
        if meta["plugin"] != "test_decoding":
            continue
        CASES.append(pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}"))

pytestmark = pytest.mark.skipif(not CASES, reason="no PostgreSQL 15 fixtures")


def expected_rows(fx, out_file) -> list[str]:
    rows = []
    with open(fx.path / out_file, encoding="ascii") as f:
        for line in f:
            rows.append(json.loads(line)[2])
    return rows


def decode_fixture(fx, meta, spill_threshold=4096, memory_budget=64 << 20, spill_dir=None, restart=False,
                   plugin=None):
    """Decode as the fixture's slot: from its confirmed position (and, with ``restart``, its restart LSN)."""
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    rows: list[str] = []
    plugin = plugin or TestDecoding(rows.append)
    request = DecodeRequest(meta["options"], parse_lsn(slot["confirmed_flush_lsn"]),
                            parse_lsn(slot["restart_lsn"]) if restart else None, fx.end_lsn,
                            two_phase=slot["two_phase"], spill_threshold=spill_threshold,
                            memory_budget=memory_budget, spill_dir=spill_dir)
    result = decode_wal([fx.wal_dir], catalog, plugin, request)
    assert result.stop.kind == "limit"
    assert result.not_decoded == []
    return rows, result.open_transactions, result.decoder


ROW_CHANGE = re.compile(r"table [^:]+: (INSERT|UPDATE|DELETE):")
# Fixtures whose tables have columns of types without C output (xml, ranges, enums, arrays of
# them, ...): their values go through Python output functions
RARE_TYPES = {"types"}


@pytest.mark.parametrize("restart", [False, True], ids=["confirmed", "confirmed+restart"])
@pytest.mark.parametrize("fx,out_file,meta", CASES)
def test_decode_equals_test_decoding(fx, out_file, meta, impl, restart):
    rows, _open, decoder = decode_fixture(fx, meta, restart=restart)
    expected = expected_rows(fx, out_file)
    for i, (got, exp) in enumerate(zip(rows, expected)):
        assert got == exp, f"{fx.name}/{out_file}: row {i} differs"
    assert len(rows) == len(expected)
    # The generator recreates "public" before each workload: a schema OID the snapshot cannot name
    assert decoder.warnings == []
    counters = decoder.plugin.native_counters()
    if impl == "cython":
        # every row change was printed by the native path, and nothing of it was handed back to Python
        # but the values of types without C output
        assert counters["native_changes"] == sum(1 for r in rows if ROW_CHANGE.match(r))
        assert counters["python_tuples"] == 0
        if fx.path.name not in RARE_TYPES:
            assert counters["python_values"] == counters["declined_values"] == 0
    else:
        assert counters["native_changes"] == 0


@pytest.mark.parametrize("fx,out_file,meta", [c for c in CASES if c.id.endswith("/test_decoding.jsonl")])
def test_decode_with_spilling_equals_test_decoding(fx, out_file, meta, tmp_path, impl):
    """A tiny threshold and memory budget: the same rows, and no .spill file left behind."""
    rows, _open, decoder = decode_fixture(fx, meta, spill_threshold=7, memory_budget=20_000, spill_dir=str(tmp_path))
    assert rows == expected_rows(fx, out_file)
    assert list(tmp_path.iterdir()) == []
    if any(len(r) > 0 for r in rows) and fx.path.name in ("big_txn", "copy"):
        assert decoder.rb.spilled_txns > 0


@pytest.mark.parametrize("fx,out_file,meta", [c for c in CASES if c.id.endswith("/test_decoding.jsonl")])
def test_decode_within_a_memory_budget_equals_test_decoding(fx, out_file, meta, tmp_path, impl):
    """--memory-budget alone (no change threshold reached): the largest transactions are evicted to
    .spill files whenever the buffered changes exceed it, and the rows stay the same."""
    rows, _open, decoder = decode_fixture(fx, meta, spill_threshold=1 << 30, memory_budget=50_000,
                                          spill_dir=str(tmp_path))
    assert rows == expected_rows(fx, out_file)
    assert list(tmp_path.iterdir()) == []
    if fx.path.name in ("big_txn", "copy"):
        assert decoder.rb.spilled_txns > 0
