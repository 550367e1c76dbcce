"""``waldecode decode --format pgoutput`` against the servers' own pgoutput slots, on the bundled WAL.

For every fixture with pgoutput output (PostgreSQL 16 and 18 above all: with no test_decoding in
their builds, this is how decoding of their WAL is proven), decoding its WAL as the fixture's
slot did, with the catalog snapshot taken at the workload's start and the catalog history built
from the WAL's catalog rows, must give exactly the messages the server returned: protocol 1
with messages, the highest protocol with binary values, and protocol 3 with two-phase decoding.
Run for both implementations of the hot path (the 16 and 18 fixtures are decoded nowhere else).
"""

from __future__ import annotations

import json

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.logical.session import decode_wal
from waldecode.output.pgoutput import PgOutput
from waldecode.wal.xlogreader import parse_lsn

CASES = []
for fx in all_fixtures():
    for out_file, meta in fx.meta.get("decoding_options", {}).items():
        if meta["plugin"] == "pgoutput":
            CASES.append(pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}"))

pytestmark = pytest.mark.skipif(not CASES, reason="no fixtures with pgoutput output")


def _catalog(fx) -> Catalog:
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    if catalog.publications is None:
        pytest.skip(f"{fx.name}: its snapshot predates publications in snapshots (regenerate the fixtures)")
    return catalog


@pytest.mark.parametrize("fx, out_file, meta", CASES)
def test_pgoutput_fixture(fx, out_file, meta, impl):
    catalog = _catalog(fx)
    with open(fx.path / out_file, encoding="ascii") as f:
        expected = [bytes.fromhex(json.loads(line)[2]) for line in f]
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    got: list[bytes] = []
    plugin = PgOutput(lambda m: got.append(m.encode("utf-8", "surrogateescape")))
    result = decode_wal([fx.wal_dir], catalog, plugin, plugin_options=meta["options"],
                        start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn,
                        two_phase=slot["two_phase"], spill_threshold=256)
    assert result.stop.kind == "limit"
    assert result.not_decoded == []
    assert result.warnings == []
    assert got == expected
