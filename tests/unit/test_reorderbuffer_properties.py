"""Property test of the decoding core: random interleavings of transactions.

Hypothesis writes programs for several sessions (inserts, savepoints, ROLLBACK TO,
RELEASE, COMMIT, ROLLBACK) and turns them into the WAL records PostgreSQL writes for
them (xids assigned at first write, parents before children, subtransactions
announced with XLR_BLOCK_ID_TOPLEVEL_XID, an ABORT record per rolled-back
subtransaction, the commit record listing the surviving ones).  The decoder's
test_decoding output must equal the model (committed transactions in commit order,
their surviving inserts in WAL order) for every spill threshold and memory budget,
and no .spill file may be left behind.
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from model_catalog import DB, REL, SPC, make_catalog, tuple_bytes
from waldecode.logical.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.reorderbuffer import Change
from waldecode.wal.xlogrecord import BlockRef, DecodedRecord

RM_XACT_ID, RM_STANDBY_ID, RM_HEAP_ID = 1, 8, 10
XLOG_XACT_COMMIT, XLOG_XACT_ABORT, XLOG_XACT_HAS_INFO = 0x00, 0x20, 0x80
XACT_XINFO_HAS_DBINFO, XACT_XINFO_HAS_SUBXACTS = 1, 2
XLOG_RUNNING_XACTS = 0x10
XLOG_HEAP_INSERT = 0x00
XLH_INSERT_CONTAINS_NEW_TUPLE = 0x08


class WalModel:
    """Turns session operations into records, and keeps the expected output."""

    def __init__(self):
        self.lsn = 0x1000000
        self.prev = 0
        self.next_xid = 1000
        self.records: list[DecodedRecord] = []
        self.expected: list[str] = []
        self.sessions: dict[int, dict] = {}
        self.counter = 0

    def _record(self, rmid, info, xid, main=b"", blocks=(), toplevel=0) -> None:
        tot = 24 + len(main) + sum(len(b.data) for b in blocks) + 40
        self.records.append(DecodedRecord(self.lsn, self.lsn + tot, tot, xid, self.prev, info, rmid, 0,
                                          tuple(blocks), main, 0, toplevel))
        self.prev = self.lsn
        self.lsn += (tot + 7) & ~7

    def running_xacts(self) -> None:
        main = struct.pack("<iiB3xIII", 0, 0, 0, self.next_xid, self.next_xid, self.next_xid - 1)
        self._record(RM_STANDBY_ID, XLOG_RUNNING_XACTS, 0, main)

    def _session(self, s: int) -> dict:
        # levels: list of [xid or 0, inserts (list of (lsn-order, line)), xids of the subtransactions
        # released into it], index 0 = top level
        return self.sessions.setdefault(s, {"levels": [[0, [], []]]})

    def _xid_for_write(self, sess: dict) -> tuple[int, int]:
        """AssignTransactionId: parents first.  Returns (xid, toplevel xid to announce or 0)."""
        announce = 0
        for i, level in enumerate(sess["levels"]):
            if level[0] == 0:
                level[0] = self.next_xid
                self.next_xid += 1
                if i > 0:
                    announce = sess["levels"][0][0]
        return sess["levels"][-1][0], announce

    def insert(self, s: int) -> None:
        sess = self._session(s)
        xid, announce = self._xid_for_write(sess)
        self.counter += 1
        text = f"s{s} row {self.counter}"
        blk = BlockRef(0, 0, 0x20, SPC, DB, REL, 0, False, 0, 0, 0, 0, None, tuple_bytes(self.counter, text))
        self._record(RM_HEAP_ID, XLOG_HEAP_INSERT, xid, struct.pack("<HB", 1, XLH_INSERT_CONTAINS_NEW_TUPLE),
                     (blk,), announce)
        sess["levels"][-1][1].append(f"table public.t: INSERT: id[integer]:{self.counter} v[text]:'{text}'")

    def savepoint(self, s: int) -> None:
        self._session(s)["levels"].append([0, [], []])

    def _subxids(self, level_list) -> list[int]:
        return [lvl[0] for lvl in level_list if lvl[0]]

    def rollback_to(self, s: int) -> None:
        sess = self._session(s)
        if len(sess["levels"]) == 1:
            return
        level = sess["levels"].pop()
        if level[0]:
            # RollbackToSavepoint aborts the subtransaction with the ones released into it: one abort
            # record of its xid listing theirs (xact.c RecordTransactionAbort, xactGetCommittedChildren)
            main = struct.pack("<q", 0)
            info = XLOG_XACT_ABORT
            if level[2]:
                main += struct.pack("<I", XACT_XINFO_HAS_SUBXACTS) + struct.pack("<i", len(level[2])) \
                    + struct.pack(f"<{len(level[2])}I", *level[2])
                info |= XLOG_XACT_HAS_INFO
            self._record(RM_XACT_ID, info, level[0], main)

    def release(self, s: int) -> None:
        sess = self._session(s)
        if len(sess["levels"]) == 1:
            return
        self._release_level(sess)

    @staticmethod
    def _release_level(sess: dict) -> None:
        level = sess["levels"].pop()
        # The released subtransaction's xid, and those released into it, are committed children of
        # its parent: a ROLLBACK TO the parent aborts them too
        sess["levels"][-1][2].extend(([level[0]] if level[0] else []) + level[2])
        sess["levels"][-1][1].extend(level[1])

    def finish(self, s: int, commit: bool) -> None:
        sess = self.sessions.pop(s, None)
        if sess is None:
            return
        # Close open savepoints as COMMIT/ROLLBACK do
        while len(sess["levels"]) > 1:
            self._release_level(sess)
        top = sess["levels"][0]
        subxids = top[2]
        if not top[0]:
            return  # no xid: no commit record at all
        if commit:
            main = struct.pack("<q", 0) + struct.pack("<I", XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_SUBXACTS) \
                + struct.pack("<II", DB, SPC) + struct.pack("<i", len(subxids)) \
                + struct.pack(f"<{len(subxids)}I", *subxids)
            self._record(RM_XACT_ID, XLOG_XACT_COMMIT | XLOG_XACT_HAS_INFO, top[0], main)
            self.expected.append(f"BEGIN {top[0]}")
            self.expected.extend(top[1])
            self.expected.append(f"COMMIT {top[0]}")
        else:
            main = struct.pack("<q", 0) + struct.pack("<I", XACT_XINFO_HAS_SUBXACTS) \
                + struct.pack("<i", len(subxids)) + struct.pack(f"<{len(subxids)}I", *subxids)
            self._record(RM_XACT_ID, XLOG_XACT_ABORT | XLOG_XACT_HAS_INFO, top[0], main)


OPS = st.lists(st.tuples(st.sampled_from(["insert", "insert", "insert", "savepoint", "rollback_to", "release",
                                          "commit", "abort"]), st.integers(0, 3)), min_size=1, max_size=120)


def build(ops) -> WalModel:
    m = WalModel()
    m.running_xacts()
    for op, s in ops:
        if op == "insert":
            m.insert(s)
        elif op == "savepoint":
            m.savepoint(s)
        elif op == "rollback_to":
            m.rollback_to(s)
        elif op == "release":
            m.release(s)
        else:
            m.finish(s, op == "commit")
    for s in sorted(m.sessions):
        m.finish(s, True)
    return m


def decode(records, catalog, spill_threshold, memory_budget, spill_dir) -> list[str]:
    rows: list[str] = []
    dec = LogicalDecoder(catalog, TestDecoding(rows.append), spill_threshold=spill_threshold,
                         memory_budget=memory_budget, segment_size=1 << 20, spill_dir=str(spill_dir))
    for r in records:
        dec.process(r)
    assert dec.finish() == []
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
# a subtransaction released into a savepoint that is then rolled back: aborted with it
@example(ops=[("savepoint", 3), ("savepoint", 3), ("insert", 3), ("release", 3), ("rollback_to", 3)])
def test_any_interleaving_decodes_like_the_model_whatever_the_spilling(ops, tmp_path_factory):
    model = build(ops)
    catalog = make_catalog()
    for threshold, budget in ((4096, 64 << 20), (1, 64 << 20), (3, 64 << 20), (4096, 600), (2, 300)):
        spill_dir = tmp_path_factory.mktemp("spill")
        rows = decode(model.records, catalog, threshold, budget, spill_dir)
        assert rows == model.expected, (threshold, budget)
        assert list(spill_dir.iterdir()) == [], "spill files left behind"


def test_spill_files_are_named_as_postgresql_names_them(tmp_path):
    """xid-<xid>-lsn-<HI>-<LO>.spill, one per WAL segment of the changes, present until commit."""
    model = build([("insert", 0)] * 10)
    catalog = make_catalog()
    rows: list[str] = []
    dec = LogicalDecoder(catalog, TestDecoding(rows.append), spill_threshold=4,
                         segment_size=1 << 20, spill_dir=str(tmp_path))
    commit = model.records[-1]
    for r in model.records[:-1]:
        dec.process(r)
    xid = model.records[1].xl_xid
    seg = (model.records[1].lsn >> 20) << 20
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"xid-{xid}-lsn-{seg >> 32:X}-{seg & 0xFFFFFFFF:X}.spill"]
    dec.process(commit)
    assert list(tmp_path.iterdir()) == []
    assert rows == model.expected


def test_cleanup_forgets_every_subtransaction_and_its_spill_files(tmp_path):
    """A transaction with several spilled subtransactions leaves nothing behind when it ends."""
    from waldecode.logical.reorderbuffer import Change, ReorderBuffer

    rb = ReorderBuffer(str(tmp_path), spill_threshold=1, segment_size=1 << 20)
    for xid in (10, 11, 12, 13):
        rb.queue_change(xid, Change(0x100000 + xid, 0, SPC, REL, 0, True, b"x", None, None))
    for sub in (11, 12, 13):
        rb.assign_child(10, sub, 0)
    assert len(list(tmp_path.iterdir())) == 4
    rb.cleanup(rb.by_xid[10])
    assert list(tmp_path.iterdir()) == []
    assert rb.by_xid == {} and rb.size == 0


_parts = st.one_of(st.none(), st.binary(max_size=40))
_changes = st.lists(st.builds(Change, st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 2, 3, 7, 8, 9, 10]),
                              st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1),
                              st.booleans(), _parts, _parts, _parts), max_size=20)


@given(_changes, st.booleans())
def test_change_stores_of_both_implementations_agree(changes, ordered):
    """A transaction's changes held as bytes (ChangeBuffer) give back what the reference (ChangeList)
    holds: the same changes, byte counts (the memory budget) and spill batches, which read back
    the same changes."""
    from waldecode import _impl
    from waldecode.logical.reorderbuffer import ChangeList, _deserialize

    if ordered:
        changes = sorted(changes, key=lambda c: c.lsn)
    ref = ChangeList()
    for c in changes:
        ref.append(c)
    data = ref.getvalue()
    assert _deserialize(data, len(changes)) == changes == list(ref)
    if "cython" not in _impl.available():
        return
    from waldecode import _logical

    buf = _logical.ChangeBuffer()
    for c in changes:
        buf.append(c)
    assert (len(buf), buf.nbytes, list(buf), buf.getvalue()) == (len(ref), ref.nbytes, changes, data)
    assert buf.batches(1 << 20) == ref.batches(1 << 20)
    assert list(_logical.from_batch(data, len(changes))) == changes
    buf.clear()
    ref.clear()
    assert (len(buf), buf.nbytes, list(buf)) == (len(ref), ref.nbytes, list(ref)) == (0, 0, [])
