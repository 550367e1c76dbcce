"""``spark.ranges.plan_ranges``: where each output range starts and reads from, from phase 1's runs.

The runs here are built from real phase 1 (``run_spans``) over a bundled fixture, then the plan's
rules are checked against what the runs say; the bytes the ranges print are checked against the
server in tests/spark/test_spark_ranges_live.py.
"""

from __future__ import annotations

from array import array

import pytest

from fixture_data import all_fixtures
from waldecode.spark.ranges import RunSpans, plan_ranges, run_spans
from waldecode.wal.segments import discover

FIXTURES = [fx for fx in all_fixtures() if fx.name == "pg15-off/checkpoint_fpi"]
pytestmark = pytest.mark.skipif(not FIXTURES, reason="no PostgreSQL 15 fixtures")


def _spans(run, first_lsn, open_=None, ended=()):
    """A run's spans: ``ended`` as (xid, lsn, is commit), sorted by xid as run_spans sorts them."""
    ended = sorted(ended)
    return RunSpans(run, first_lsn, dict(open_ or {}), array("Q", [e[0] for e in ended]),
                    array("Q", [e[1] for e in ended]), bytes(e[2] for e in ended))


def test_restart_moves_back_to_the_first_record_of_a_transaction_committing_in_the_range():
    runs = [_spans(0, 100, {7: 150}, [(5, 120, 1)]),
            _spans(1, 200, {}, [(6, 210, 1)]),
            _spans(2, 300, {}, [(7, 310, 1), (8, 320, 1)])]
    plan = plan_ranges(runs, 3, None, None, None)
    assert plan.reason is None
    assert [(r.start, r.restart, r.end) for r in plan.ranges] == [(None, None, 200), (200, 200, 300), (300, 150, None)]


def test_an_xid_never_ended_moves_the_last_range_back_and_an_abort_moves_nothing():
    runs = [_spans(0, 100, {7: 150, 9: 160}, [(5, 120, 1)]),
            _spans(1, 200, {}, [(9, 250, 0), (6, 210, 1)]),
            _spans(2, 300, {}, [(8, 320, 1)])]
    plan = plan_ranges(runs, 3, None, None, None)
    assert [(r.start, r.restart) for r in plan.ranges] == [(None, None), (200, 200), (300, 150)]


def test_ranges_start_after_the_start_lsn_and_balance_commits():
    runs = [_spans(0, 100, {}, [(x, 100 + x, 1) for x in range(1, 3)]),
            _spans(1, 200, {}, [(x, 200 + x, 1) for x in range(10, 11)]),
            _spans(2, 300, {}, [(x, 300 + x, 1) for x in range(20, 22)]),
            _spans(3, 400, {}, [(x, 400 + x, 1) for x in range(30, 31)])]
    assert [r.start for r in plan_ranges(runs, 2, None, None, None).ranges] == [None, 300]  # 3 and 3 commits
    assert [r.start for r in plan_ranges(runs, 2, 300, None, None).ranges] == [300, 400]


def test_a_prepared_transaction_moves_back_the_ranges_of_its_prepare_and_of_its_commit_prepared():
    """With two-phase decoding it prints at PREPARE, and its COMMIT PREPARED needs the PREPARE read (the
    transaction and its GID): both ranges read it from its first record."""
    runs = [_spans(0, 100, {7: 150}, [(5, 120, 1)]),
            _spans(1, 200, {7: 250}, [(6, 210, 1)]),
            _spans(2, 300, {}, [(7, 350, 1), (8, 320, 1)])]
    runs[1].prepared = {7: 250}
    plan = plan_ranges(runs, 3, None, None, None)
    assert plan.reason is None
    assert [(r.start, r.restart) for r in plan.ranges] == [(None, None), (200, 150), (300, 150)]


@pytest.mark.parametrize("bad,reason", [({"error": "x"}, "error")])
def test_refused(bad, reason):
    runs = [_spans(0, 100), _spans(1, 200)]
    for k, v in bad.items():
        setattr(runs[1], k, v)
    assert reason in plan_ranges(runs, 2, None, None, None).reason


def test_phase1_of_a_fixture_finds_every_commit_once():
    fx = FIXTURES[0]
    segments = discover([fx.wal_dir], None)
    first, last = segments.first_segno, segments.last_segno
    whole = run_spans(segments, 0, first, last, None, None)
    parts = [run_spans(segments, i, s, s, None, None) for i, s in enumerate(range(first, last + 1))]
    assert len(parts) >= 2 and whole.error is None
    assert sorted(whole.ended_xids) == list(whole.ended_xids)
    assert sorted(x for p in parts for x in p.ended_xids) == list(whole.ended_xids)
    assert set(whole.open) <= set().union(*(p.open for p in parts))
    plan = plan_ranges(parts, len(parts), None, None, None)
    assert plan.reason is None and len(plan.ranges) == len(parts)


DDL_FIXTURES = [fx for fx in all_fixtures() if fx.name == "pg15-off/ddl"]


@pytest.mark.skipif(not DDL_FIXTURES, reason="no PostgreSQL 15 ddl fixture")
def test_the_catalog_pass_refuses_catalog_rows_whose_commit_it_did_not_collect():
    """The catalog pass keeps only the commits with invalidations: were a transaction that wrote catalog
    rows to commit without them, its history would take it for a crashed one; the pass says so instead."""
    from waldecode.catalog import Catalog
    from waldecode.catalog.history import CatalogHistory
    from waldecode.rmgr import RM_XACT_ID
    from waldecode.rmgr.xact import XLOG_XACT_COMMIT, XLOG_XACT_OPMASK
    from waldecode.spark.ranges import catalog_history, run_catalog_records

    (fx,) = DDL_FIXTURES
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    segments = discover([fx.wal_dir], None)
    first, last = segments.first_segno, segments.last_segno
    spans = [run_spans(segments, 0, first, last, None, None)]
    assert spans[0].catalog_changes
    nodes = frozenset(CatalogHistory(catalog).redo.nodes)
    records = run_catalog_records(segments, first, last, None, None, nodes)
    history = catalog_history(catalog, [records], segments.major, spans)
    assert not isinstance(history, str) and history.timeline.commit_lsns
    without_commits = [t for t in records if not (t[2][17] == RM_XACT_ID
                                                  and t[2][16] & XLOG_XACT_OPMASK == XLOG_XACT_COMMIT)]
    refused = catalog_history(catalog, [without_commits], segments.major, spans)
    assert isinstance(refused, str) and "without invalidations" in refused
