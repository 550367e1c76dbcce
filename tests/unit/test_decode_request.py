"""``logical.request.DecodeRequest``: one run's parameters, checked when made and passed whole (to
``decode_wal``, Spark's ranges, ``diverge``).  Outputs compared with the fixtures' server-made ones."""

from __future__ import annotations

import json
import pickle

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.errors import UsageError
from waldecode.logical.request import DecodeRequest
from waldecode.logical.session import decode_wal
from waldecode.output.test_decoding import TestDecoding
from waldecode.pg.settings import DEFAULT_MEMORY_BUDGET, DEFAULT_SPILL_THRESHOLD
from waldecode.wal.xlogreader import parse_lsn


@pytest.mark.parametrize("fields,says", [
    ({"spill_threshold": 0}, "at least 1 change"),
    ({"memory_budget": -1}, "cannot be negative"),
    ({"start_lsn": -5}, "start lsn -5 is not an LSN"),
    ({"end_lsn": 1 << 64}, "is not an LSN"),
    ({"timeline": 0}, "numbered from 1"),
])
def test_a_request_is_checked_when_made(fields, says):
    with pytest.raises(UsageError, match=says):
        DecodeRequest(**fields)


def test_defaults_are_the_servers():
    r = DecodeRequest()
    # reorderbuffer.c's max_changes_in_memory and logical_decoding_work_mem's boot value
    assert (r.spill_threshold, r.memory_budget) == (DEFAULT_SPILL_THRESHOLD, DEFAULT_MEMORY_BUDGET) == (4096, 64 << 20)
    assert r.plugin_options == {} and not r.two_phase and not r.include_uncommitted


def test_plugin_options_are_the_requests_own():
    options = {"include-xids": "0"}
    r = DecodeRequest(options)
    options["skip-empty-xacts"] = "1"
    assert r.plugin_options == {"include-xids": "0"}
    assert pickle.loads(pickle.dumps(r)) == r  # Spark broadcasts it with the ranges' context


def test_waldecodes_own_options_are_taken_out_of_the_plugins():
    """``-o old-rows=full``, ``-o toast=fill``: the decoder's (request.DECODER_OPTIONS), never the plugin's, kept
    through a range's request; a value they do not take is a usage error naming the option."""
    r = DecodeRequest({"include-xids": "0", "old-rows": "full"})
    assert r.plugin_options == {"include-xids": "0"}
    assert r.decoder_options == {"old-rows": "full", "toast": "unchanged"} and r.old_rows_full and not r.toast_fill
    ranged = r.for_range(None, None, None, True, None)
    assert ranged.decoder_options == r.decoder_options and ranged.plugin_options == r.plugin_options
    assert DecodeRequest().decoder_options == {"old-rows": "identity", "toast": "unchanged"}
    with pytest.raises(UsageError, match="^-o toast takes unchanged or fill, not nothing$"):
        DecodeRequest({"toast": None})
    with pytest.raises(UsageError, match="^spark decode does not take -o old-rows=full"):
        r.refuse_decoder_options("spark decode")
    DecodeRequest({"toast": "unchanged"}).refuse_decoder_options("spark decode")  # the defaults: nothing asked


def test_a_range_is_a_slot_restarted_there():
    r = DecodeRequest({"x": "1"}, 100, None, 900, 2, two_phase=True, include_uncommitted=True, spill_threshold=7)
    first = r.for_range(100, 50, 400, last=False, spill_dir="/s")
    last = r.for_range(400, 380, 900, last=True, spill_dir="/t")
    assert (first.start_lsn, first.restart_lsn, first.end_lsn, first.spill_dir) == (100, 50, 400, "/s")
    # what is open at the end is the run's only in its last range
    assert not first.include_uncommitted and last.include_uncommitted
    assert not DecodeRequest().for_range(1, 1, 2, last=True, spill_dir=None).include_uncommitted
    for sub in (first, last):
        assert (sub.plugin_options, sub.timeline, sub.two_phase, sub.spill_threshold) == ({"x": "1"}, 2, True, 7)


def _prepared():
    for fx in all_fixtures():
        if fx.major == 15 and fx.path.name == "prepared":
            for out_file, meta in fx.meta.get("decoding_options", {}).items():
                if meta["plugin"] == "test_decoding" and next(
                        s for s in fx.meta["slots"] if s["name"] == meta["slot"])["two_phase"]:
                    return fx, out_file, meta
    pytest.skip("no PostgreSQL 15 prepared fixture with a two_phase slot")


def test_decode_wal_takes_a_request_and_keywords_on_top(impl):
    """The server's two_phase slot output, from a request; keywords given with a request replace its
    fields (a request without two-phase, made two-phase by a keyword, prints the PREPAREs too)."""
    fx, out_file, meta = _prepared()
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    with open(fx.path / out_file, encoding="ascii") as f:
        expected = [json.loads(line)[2] for line in f]
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    request = DecodeRequest(meta["options"], parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn)

    def rows(*args, **kw):
        out: list[str] = []
        decode_wal([fx.wal_dir], catalog, TestDecoding(out.append), *args, **kw)
        return out

    assert rows(request, two_phase=True) == expected
    assert rows(**{"plugin_options": meta["options"], "start_lsn": request.start_lsn, "end_lsn": fx.end_lsn,
                   "two_phase": True}) == expected
    without = rows(request)
    assert without != expected and not any(r.startswith("PREPARE TRANSACTION") for r in without)
    assert any(r.startswith("PREPARE TRANSACTION") for r in expected)
