"""The pure extractors on one segment's records give what the sequential decoder takes from them.

``decode.changes_of`` and ``xact.xact_event`` hold no state: a Spark task runs them on the
records of one segment framed on its own (``xlogreader.read_segment``).  On every PostgreSQL 15
fixture (real-server WAL), the changes they extract from each segment after the consistent
point are exactly the changes the sequential decoder queued in its reorder buffer, and the
transaction ends are exactly those of the sequential read.
"""

from __future__ import annotations

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.logical.decode import changes_of
from waldecode.xact import xact_event
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.reorderbuffer import ReorderBuffer
from waldecode.logical.session import decode_wal
from waldecode.wal.segments import discover
from waldecode.wal.xlogreader import XLogReader, parse_lsn, read_segment

FIXTURES = [pytest.param(fx, id=fx.name) for fx in all_fixtures() if fx.major == 15 and "pg15-off" in fx.name]


@pytest.mark.parametrize("fx", FIXTURES)
def test_segment_extraction_equals_the_sequential_decoder(fx, monkeypatch, impl):
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    slot = fx.meta["slots"][0]
    queued = []
    real_spill = ReorderBuffer.spill

    # Every change is spilled as soon as it is queued (a threshold of 1), whether the Python decoder
    # queued it or the native record loop did: the spill sees each one, in queue order
    def spy(self, txn):
        queued.extend((txn.xid, c) for c in txn.changes)
        return real_spill(self, txn)

    monkeypatch.setattr(ReorderBuffer, "spill", spy)
    result = decode_wal([fx.wal_dir], catalog, TestDecoding(lambda row: None),
                        start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn, spill_threshold=1)
    monkeypatch.undo()
    assert result.consistent_lsn is not None
    start, end = result.consistent_lsn, fx.end_lsn

    segments = discover([fx.wal_dir])
    extracted, ends = [], []
    for segno in sorted(segments.files):
        records, _stop = read_segment(segments, segno)
        for rec in records:
            if start < rec.lsn and rec.end_lsn <= end:
                extracted.extend((rec.xl_xid, c) for c in changes_of(rec, catalog.database_oid))
                ev = xact_event(rec, segments.major)
                if ev is not None:
                    ends.append((ev.info, ev.xid, ev.lsn, ev.subxacts, ev.gid))
    sequential = [(x, c) for x, c in queued if c.lsn > start]
    assert extracted == sequential
    assert len(sequential) == sum(1 for x, c in queued) - sum(1 for x, c in queued if c.lsn <= start)
    expected_ends = []
    for rec in XLogReader([fx.wal_dir], start, end):
        ev = xact_event(rec, segments.major)
        if ev is not None and rec.lsn > start:
            expected_ends.append((ev.info, ev.xid, ev.lsn, ev.subxacts, ev.gid))
    assert ends == expected_ends
    assert ends, "every fixture ends transactions"
