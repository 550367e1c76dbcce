"""The reorder buffer's invalidations: a transaction's own, those distributed into it, and their changes.

reorderbuffer.c ReorderBufferAddInvalidations gathers a (sub)transaction's XLOG_XACT_INVALIDATIONS
messages on its top-level transaction and queues an invalidation change; at a catalog-changing commit
snapbuild.c SnapBuildDistributeSnapshotAndInval gives the committing transaction's messages to every
transaction of the top-level list that has a base snapshot, is not marked prepared and is not the
committing one: as their own on the minor releases of May 2025 (ReorderBufferAddInvalidations), apart
from them since August 2025 and in 18 (ReorderBufferAddDistributedInvalidations, at most
MAX_DISTR_INVAL_MSG_PER_TXN kept).  ``iter_changes`` hands the invalidation changes out among the row
changes, in LSN order.  The decoder picks the server's way by the catalog snapshot's version, for a
plugin that hears invalidations.  tests/live/test_pgoutput_distributed_invals.py checks the whole against a
server.
"""

from __future__ import annotations

import pytest

from model_catalog import make_catalog
from waldecode.logical.decode import LogicalDecoder
from waldecode.logical.reorderbuffer import (
    DISTRIBUTE_APART,
    DISTRIBUTE_AS_OWN,
    DISTRIBUTE_NONE,
    MAX_DISTR_INVAL_MSG_PER_TXN,
    REORDER_BUFFER_CHANGE_INSERT,
    REORDER_BUFFER_CHANGE_INVALIDATION,
    Change,
    ReorderBuffer,
    invalidation_distribution,
)
from waldecode.output.test_decoding import TestDecoding

SEG = 16 << 20


def msg(n: int) -> bytes:
    """A SharedInvalidationMessage told apart by ``n`` (a relcache message: id -2, database, relation)."""
    return (-2).to_bytes(1, "little", signed=True) + bytes(3) + (5).to_bytes(4, "little") + n.to_bytes(4, "little") \
        + bytes(4)


def row(lsn: int) -> Change:
    return Change(lsn, REORDER_BUFFER_CHANGE_INSERT, 1663, 16384, 0, True, b"\x01\x00\x00\x00\x18" + bytes(4), None,
                  None)


@pytest.mark.parametrize("version, how", [
    (120022, DISTRIBUTE_NONE), (130020, DISTRIBUTE_NONE), (130021, DISTRIBUTE_AS_OWN), (130022, DISTRIBUTE_APART),
    (140017, DISTRIBUTE_NONE), (140018, DISTRIBUTE_AS_OWN), (140019, DISTRIBUTE_APART),
    (150012, DISTRIBUTE_NONE), (150013, DISTRIBUTE_AS_OWN), (150014, DISTRIBUTE_APART), (150018, DISTRIBUTE_APART),
    (160008, DISTRIBUTE_NONE), (160009, DISTRIBUTE_AS_OWN), (160010, DISTRIBUTE_APART), (160014, DISTRIBUTE_APART),
    (170004, DISTRIBUTE_NONE), (170005, DISTRIBUTE_AS_OWN), (170006, DISTRIBUTE_APART),
    (180000, DISTRIBUTE_APART), (180004, DISTRIBUTE_APART), (190000, DISTRIBUTE_APART),
])
def test_distribution_by_minor_release(version, how):
    assert invalidation_distribution(version) == how


def _rb(tmp_path) -> ReorderBuffer:
    return ReorderBuffer(str(tmp_path), segment_size=SEG)


def test_own_invalidations_gather_on_the_top_level_transaction(impl, tmp_path):
    rb = _rb(tmp_path)
    rb.process_xid(100, 10)
    rb.assign_child(100, 101, 20)
    rb.add_invalidations(101, 30, msg(1))  # a subtransaction's: on its top-level transaction
    rb.add_invalidations(100, 40, msg(2))
    rb.add_invalidations(102, 50, msg(3))  # a subtransaction not known as one: its own
    top, sub, unknown = rb.by_xid[100], rb.by_xid[101], rb.by_xid[102]
    assert (top.invalidations, sub.invalidations, unknown.invalidations) == (msg(1) + msg(2), b"", msg(3))
    # each a change of the xid whose record it was
    assert [(c.lsn, c.extra) for c in sub.inval_changes] == [(30, msg(1))]
    assert [(c.lsn, c.extra) for c in top.inval_changes] == [(40, msg(2))]
    assert top.nentries == sub.nentries == 0  # not row changes: nothing counted, stored or spilled


def test_distribution_goes_to_open_transactions_with_a_base_snapshot(impl, tmp_path):
    rb = _rb(tmp_path)
    for xid in (200, 201, 202, 203, 204, 205):
        rb.process_xid(xid, xid)
    for xid in (200, 202, 203, 204, 205):
        rb.set_base_snapshot(xid, xid)
    rb.assign_child(204, 206, 300)  # a known subtransaction: its top-level transaction takes them
    rb.prepare(202, "decoded", 400, 408)  # PREPARE decoded (or skipped by DecodePrepare): marked prepared
    rb.prepare(203, "later", 410, 418, remember=False)  # filtered out at PREPARE: decoded at COMMIT PREPARED
    rb.add_invalidations(205, 500, msg(7))
    assert rb.distribute_invalidations(205, 600, DISTRIBUTE_APART) == [200, 203, 204]
    for xid in (200, 203, 204):
        txn = rb.by_xid[xid]
        assert (txn.invalidations, txn.invalidations_distributed) == (b"", msg(7))
        assert [(c.lsn, c.action, c.extra) for c in txn.inval_changes] == [(600, REORDER_BUFFER_CHANGE_INVALIDATION,
                                                                             msg(7))]
    assert rb.by_xid[201].inval_changes is None and rb.by_xid[202].inval_changes is None
    # nothing to distribute, or a server that does not
    assert rb.distribute_invalidations(200, 700, DISTRIBUTE_APART) == []
    assert rb.distribute_invalidations(205, 700, DISTRIBUTE_NONE) == []


def test_distributed_as_own_are_distributed_again(impl, tmp_path):
    """The May 2025 releases: what a transaction was given counts as its own, executed and handed on with them."""
    rb = _rb(tmp_path)
    for xid in (300, 301, 302):
        rb.process_xid(xid, xid)
        rb.set_base_snapshot(xid, xid)
    rb.add_invalidations(300, 400, msg(1))
    assert rb.distribute_invalidations(300, 410, DISTRIBUTE_AS_OWN) == [301, 302]
    rb.cleanup(rb.by_xid[300])
    rb.add_invalidations(301, 420, msg(2))
    assert rb.by_xid[301].invalidations == msg(1) + msg(2)
    assert rb.distribute_invalidations(301, 430, DISTRIBUTE_AS_OWN) == [302]
    got = rb.by_xid[302]
    assert (got.invalidations, got.invalidations_distributed) == (msg(1) + msg(1) + msg(2), b"")
    # apart, they would not have been handed on
    assert rb.by_xid[301].invalidations_distributed == b""


def test_distributed_invalidations_overflow(tmp_path):
    rb = _rb(tmp_path)
    rb.process_xid(400, 1)
    rb.add_distributed_invalidations(400, 10, msg(0) * (MAX_DISTR_INVAL_MSG_PER_TXN - 1))
    txn = rb.by_xid[400]
    assert not txn.distr_inval_overflowed
    assert len(txn.invalidations_distributed) == 16 * (MAX_DISTR_INVAL_MSG_PER_TXN - 1)
    rb.add_distributed_invalidations(400, 20, msg(1))  # reaches the limit: none kept, every cache at the end
    assert txn.distr_inval_overflowed and txn.invalidations_distributed == b""
    rb.add_distributed_invalidations(400, 30, msg(2))
    assert txn.distr_inval_overflowed and txn.invalidations_distributed == b""
    assert [c.lsn for c in txn.inval_changes] == [10, 20, 30]  # still executed where they came


def test_invalidation_changes_come_in_lsn_order_among_the_changes(impl, tmp_path):
    rb = ReorderBuffer(str(tmp_path), spill_threshold=2, segment_size=SEG)  # some of them spilled
    rb.process_xid(500, 100)
    rb.assign_child(500, 501, 150)
    for lsn in (100, 200, 300):
        rb.queue_change(500, row(lsn))
    rb.queue_change(501, row(250))
    rb.add_invalidations(501, 260, msg(1))
    rb.add_distributed_invalidations(500, 300, msg(2))  # at the LSN of a change queued before it: after it
    rb.add_distributed_invalidations(500, 400, msg(3))  # after the last change
    got = [(c.lsn, c.action) for c in rb.iter_changes(rb.by_xid[500], runs=True)]
    inval, ins = REORDER_BUFFER_CHANGE_INVALIDATION, REORDER_BUFFER_CHANGE_INSERT
    assert got == [(100, ins), (200, ins), (250, ins), (260, inval), (300, ins), (300, inval), (400, inval)]
    # truncated at PREPARE: the changes go, what was gathered stays for COMMIT/ROLLBACK PREPARED
    top = rb.by_xid[500]
    rb.truncate(top)
    assert top.inval_changes is None
    assert (top.invalidations, top.invalidations_distributed) == (msg(1), msg(2) + msg(3))
    assert list(rb.iter_changes(top)) == []
    rb.close()


class _Hears(TestDecoding):
    """A plugin with caches of its own."""

    def invalidate(self, messages):
        pass


@pytest.mark.parametrize("server_version, num, how", [
    ("15.12", 150012, DISTRIBUTE_NONE),
    ("15.13", 150013, DISTRIBUTE_AS_OWN),
    ("15.18 (Debian 15.18-0+deb12u1)", 150018, DISTRIBUTE_APART),
    ("15", 150000, DISTRIBUTE_APART),  # a data directory's or a backup's snapshot: the major's latest minor
    ("16.14", 160014, DISTRIBUTE_APART),
    ("18.0", 180000, DISTRIBUTE_APART),
])
def test_the_decoder_follows_the_snapshots_server(server_version, num, how):
    catalog = make_catalog()
    catalog.server_version, catalog.server_version_num, catalog.major = server_version, num, num // 10000
    assert LogicalDecoder(catalog, _Hears(lambda line: None), segment_size=SEG).distribution == how
    # a plugin without caches of its own is given none of it: nothing is kept
    quiet = LogicalDecoder(catalog, TestDecoding(lambda line: None), segment_size=SEG)
    assert not quiet.hears_invalidations and quiet.distribution is DISTRIBUTE_NONE
