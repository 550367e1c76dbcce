"""Parity of the native logical-decoding path (``waldecode._logical``) with the pure-Python reference.

The record loop and the native replay (``LogicalDecoder.process_framed`` under Cython:
``decode_framed``, its transaction path and ``replay``) against the reference (every record
decoded and given to ``LogicalDecoder.process``, lines formatted in Python): hypothesis
writes streams of real WAL record bytes (``walgen.assemble``) — inserts, updates and deletes
with and without old tuples, hot updates, multi-inserts, speculative inserts, records
decoding ignores, row locks, other databases and origins, relations not in the catalog,
catalog changes, subtransactions, commits with invalidations, of another database or of an
origin, and aborts — and both must write the same bytes and warnings, under every spill
threshold and memory budget, leaving no spill file.  Which records the native path takes
itself, and which it must leave to the decoder, is pinned below the property test.
(``ChangeBuffer`` against ``ChangeList`` is in test_reorderbuffer_properties.)
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model_catalog import DB, REL, SPC, make_catalog, tuple_body, tuple_bytes
from walgen import Block, Record, assemble
from waldecode import _impl
from waldecode.logical.decode import LogicalDecoder
from waldecode.logical.reorderbuffer import Change
from waldecode.output.base import OutputWriter
from waldecode.errors import WALError
from waldecode.output.test_decoding import TestDecoding
from waldecode.testing.datums import varlena

logical_native = pytest.importorskip("waldecode._logical") if "cython" in _impl.available() else None
pytestmark = pytest.mark.skipif(logical_native is None, reason="the Cython implementation is not built")

RM_XACT_ID, RM_STANDBY_ID, RM_HEAP2_ID, RM_HEAP_ID, RM_BTREE_ID = 1, 8, 9, 10, 11
XLOG_XACT_COMMIT, XLOG_XACT_ABORT, XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_HAS_INFO = 0x00, 0x20, 0x30, 0x80
XACT_XINFO_HAS_DBINFO, XACT_XINFO_HAS_SUBXACTS, XACT_XINFO_HAS_INVALS, XACT_XINFO_HAS_TWOPHASE = 1, 2, 8, 0x10
XACT_XINFO_HAS_ORIGIN, XACT_XINFO_HAS_AE_LOCKS = 0x20, 0x40
XLOG_RUNNING_XACTS = 0x10
XLOG_HEAP_INSERT, XLOG_HEAP_DELETE, XLOG_HEAP_UPDATE, XLOG_HEAP_HOT_UPDATE, XLOG_HEAP_CONFIRM, XLOG_HEAP_LOCK = \
    0x00, 0x10, 0x20, 0x40, 0x50, 0x60
XLOG_HEAP2_PRUNE, XLOG_HEAP2_MULTI_INSERT, XLOG_HEAP2_NEW_CID = 0x10, 0x50, 0x70
XLH_INSERT_LAST_IN_MULTI, XLH_INSERT_IS_SPECULATIVE, XLH_INSERT_CONTAINS_NEW_TUPLE = 0x02, 0x04, 0x08
XLH_UPDATE_CONTAINS_OLD_KEY, XLH_UPDATE_CONTAINS_NEW_TUPLE = 0x08, 0x10
XLH_DELETE_CONTAINS_OLD_KEY, XLH_DELETE_IS_SUPER = 0x04, 0x08
MAJOR = 15
SEG = 1 << 20


def test_a_spill_batch_that_does_not_hold_its_changes_goes_to_the_reference():
    buf = logical_native.ChangeBuffer()
    buf.append(Change(1, 0, 2, 3, 0, True, b"abc", None, None))
    data = buf.getvalue()
    assert list(logical_native.from_batch(data, 1)) == list(buf)
    assert not isinstance(logical_native.from_batch(data[:-1], 1), logical_native.ChangeBuffer)


# -- the record loop and the replay against the reference ------------------------------------------------

class Stream:
    """Raw WAL records for operations of several sessions, as (lsn, raw_end, bytes)."""

    def __init__(self):
        self.lsn = 0x1000028
        self.prev = 0
        self.next_xid = 1000
        self.framed: list[tuple[int, int, bytes]] = []
        self.open: dict[int, list] = {}  # session -> [top xid, [subxids]]
        self.n = 0

    def add(self, rec: Record) -> None:
        raw = assemble(rec, self.prev, MAJOR)
        self.framed.append((self.lsn, self.lsn + len(raw), raw))
        self.prev = self.lsn
        self.lsn += (len(raw) + 7) & ~7
        if self.lsn // SEG != (self.lsn + 200) // SEG:
            self.lsn = (self.lsn // SEG + 1) * SEG + 40  # the next segment, after its long page header

    def running_xacts(self) -> None:
        main = struct.pack("<iiB3xIII", 0, 0, 0, self.next_xid, self.next_xid, self.next_xid - 1)
        self.add(Record(RM_STANDBY_ID, XLOG_RUNNING_XACTS, 0, main_data=main))

    def _xid(self, s: int, sub: bool) -> tuple[int, int | None]:
        sess = self.open.get(s)
        if sess is None:
            sess = self.open[s] = [self.next_xid, []]
            self.next_xid += 1
        if sub:
            sess[1].append(self.next_xid)
            self.next_xid += 1
            return sess[1][-1], sess[0]
        return (sess[1][-1] if sess[1] else sess[0]), None

    def row(self, s: int, kind: str, sub: bool, other_db: bool, origin: int) -> None:
        xid, top = self._xid(s, sub)
        self.n += 1
        rel = (SPC, DB + 1 if other_db else DB, REL + 7 if kind == "unknown" else REL)
        new = tuple_body(self.n, f"row {self.n} " + "x" * (self.n % 7))
        old = tuple_bytes(self.n - 1, "old")
        origin = origin or None
        if kind in ("insert", "spec", "unknown"):
            flags = XLH_INSERT_CONTAINS_NEW_TUPLE | (XLH_INSERT_IS_SPECULATIVE if kind == "spec" else 0)
            data = struct.pack("<HHB", 2, 0x0002, 24) + new
            self.add(Record(RM_HEAP_ID, XLOG_HEAP_INSERT, xid, (Block(0, rel, data=data),),
                            struct.pack("<HB", 1, flags), origin, top))
            if kind == "spec":
                self.add(Record(RM_HEAP_ID, XLOG_HEAP_CONFIRM, xid, (Block(0, rel),), struct.pack("<H", 1),
                                origin))
        elif kind in ("update", "hot", "update_key"):
            flags = XLH_UPDATE_CONTAINS_NEW_TUPLE | (XLH_UPDATE_CONTAINS_OLD_KEY if kind == "update_key" else 0)
            main = struct.pack("<IHBBIH", 0, 1, 0, flags, 0, 2) + (old if kind == "update_key" else b"")
            data = struct.pack("<HHB", 2, 0x0002, 24) + new
            self.add(Record(RM_HEAP_ID, XLOG_HEAP_HOT_UPDATE if kind == "hot" else XLOG_HEAP_UPDATE, xid,
                            (Block(0, rel, data=data),), main, origin, top))
        elif kind in ("delete", "delete_key"):
            flags = XLH_DELETE_CONTAINS_OLD_KEY if kind == "delete_key" else 0
            main = struct.pack("<IHBB", 0, 1, 0, flags) + (old if kind == "delete_key" else b"")
            self.add(Record(RM_HEAP_ID, XLOG_HEAP_DELETE, xid, (Block(0, rel),), main, origin, top))
        elif kind == "multi":
            ntuples = 1 + self.n % 4
            data = b""
            for i in range(ntuples):
                data += b"\x00" * (len(data) & 1)
                body = tuple_body(self.n * 10 + i, f"multi {i}")
                data += struct.pack("<HHHB", len(body), 2, 0x0002, 24) + body
            main = struct.pack("<BxH", XLH_INSERT_CONTAINS_NEW_TUPLE | XLH_INSERT_LAST_IN_MULTI, ntuples) \
                + struct.pack(f"<{ntuples}H", *range(1, ntuples + 1))
            self.add(Record(RM_HEAP2_ID, XLOG_HEAP2_MULTI_INSERT, xid, (Block(0, rel, data=data),), main,
                            origin, top))
        elif kind == "lock":
            self.add(Record(RM_HEAP_ID, XLOG_HEAP_LOCK, xid, (Block(0, rel),), struct.pack("<IHBB", xid, 1, 0, 0),
                            None, top))
        elif kind == "catalog":
            # xl_heap_new_cid of a catalog row: the transaction changed the catalog
            main = struct.pack("<IIII", top or xid, 1, 0, 0) + struct.pack("<III", SPC, DB, 1259) + bytes(6)
            self.add(Record(RM_HEAP2_ID, XLOG_HEAP2_NEW_CID, xid, (Block(0, (SPC, DB, 1259)),), main, None, top))
        elif kind == "bulk":  # more rows than the native commit path takes
            for i in range(70):
                data = struct.pack("<HHB", 2, 0x0002, 24) + tuple_body(self.n * 100 + i, "bulk")
                self.add(Record(RM_HEAP_ID, XLOG_HEAP_INSERT, xid, (Block(0, rel, data=data),),
                                struct.pack("<HB", 1, XLH_INSERT_CONTAINS_NEW_TUPLE), origin, top))
        elif kind == "ignored":
            self.add(Record(RM_HEAP2_ID, XLOG_HEAP2_PRUNE, 0, (Block(0, rel),), b"\x00" * 8))
            self.add(Record(RM_BTREE_ID, 0x00, xid, (Block(0, (SPC, DB, REL + 1), data=b"idx"),), b"\x01\x00",
                            None, top))

    def finish(self, s: int, commit: bool, variant: str = "plain") -> None:
        """End session ``s``'s transaction: a commit as PostgreSQL writes it (xact.c XactLogCommitRecord),
        ``variant`` "plain", "invals" (with an invalidation message), "origin" (of replication
        origin 3), "other_db", "ae_locks", "empty_subxacts" (the subxacts flag, none listed: no
        server writes it), "prepared" (COMMIT PREPARED of a transaction never prepared); or an abort."""
        sess = self.open.pop(s, None)
        if sess is None:
            return
        top, subs = sess
        if commit:
            xinfo = XACT_XINFO_HAS_DBINFO | (XACT_XINFO_HAS_SUBXACTS if subs or variant == "empty_subxacts" else 0)
            xinfo |= {"invals": XACT_XINFO_HAS_INVALS, "origin": XACT_XINFO_HAS_ORIGIN,
                      "ae_locks": XACT_XINFO_HAS_AE_LOCKS, "prepared": XACT_XINFO_HAS_TWOPHASE}.get(variant, 0)
            main = struct.pack("<q", 0) + struct.pack("<I", xinfo) + struct.pack("<II", DB + 1 if variant == "other_db"
                                                                                   else DB, SPC)
            if xinfo & XACT_XINFO_HAS_SUBXACTS:
                main += struct.pack("<i", len(subs)) + struct.pack(f"<{len(subs)}I", *subs)
            if variant == "invals":  # a relcache invalidation (SHAREDINVALRELCACHE_ID) of our table
                main += struct.pack("<i", 1) + struct.pack("<bxxxIII", -2, DB, REL, 0)
            if variant == "prepared":
                main += struct.pack("<I", top)
            if variant == "origin":
                main += struct.pack("<Qq", 0x1234, 0)
            info = XLOG_XACT_COMMIT_PREPARED if variant == "prepared" else XLOG_XACT_COMMIT
            self.add(Record(RM_XACT_ID, info | XLOG_XACT_HAS_INFO, top, main_data=main,
                            origin=3 if variant == "origin" else None))
        else:
            main = struct.pack("<q", 0) + struct.pack("<I", XACT_XINFO_HAS_SUBXACTS) \
                + struct.pack("<i", len(subs)) + struct.pack(f"<{len(subs)}I", *subs)
            self.add(Record(RM_XACT_ID, XLOG_XACT_ABORT | XLOG_XACT_HAS_INFO, top, main_data=main))


KINDS = ["insert", "insert", "update", "hot", "update_key", "delete", "delete_key", "multi", "spec", "ignored",
         "lock", "unknown", "catalog", "bulk"]
VARIANTS = ["plain", "plain", "plain", "invals", "origin", "other_db", "ae_locks", "empty_subxacts", "prepared"]
OPS = st.lists(st.one_of(
    st.tuples(st.just("row"), st.integers(0, 2), st.sampled_from(KINDS), st.booleans(),
              st.sampled_from([False, False, False, True]), st.sampled_from([0, 0, 0, 3])),
    st.tuples(st.sampled_from(["commit", "commit", "abort"]), st.integers(0, 2), st.sampled_from(VARIANTS))),
    min_size=1, max_size=80)


def build(ops) -> Stream:
    s = Stream()
    s.running_xacts()
    for op in ops:
        if op[0] == "row":
            _, sess, kind, sub, other_db, origin = op
            s.row(sess, kind, sub and sess in s.open, other_db, origin)
        else:
            s.finish(op[1], op[0] == "commit", op[2])
    for sess in sorted(s.open):
        s.finish(sess, True)
    return s


def decode_with(impl: str, framed, options, threshold, budget, spill_dir) -> tuple[bytes, list, list]:
    previous = _impl.IMPL
    _impl.use(impl)
    try:
        blocks: list[bytes] = []
        writer = OutputWriter(blocks.append, block_size=256)
        dec = LogicalDecoder(make_catalog(), TestDecoding(output=writer), plugin_options=options,
                             spill_threshold=threshold, memory_budget=budget, segment_size=SEG,
                             spill_dir=str(spill_dir))
        # two batches, as two segments' records come
        half = len(framed) // 2
        dec.process_framed("wal", framed[:half], framed[0][0])
        dec.process_framed("wal", framed[half:], framed[0][0])
        open_txns = dec.finish()
        return b"".join(blocks), [(t.xid, t.nchanges) for t in open_txns], dec.warnings
    finally:
        _impl.use(previous)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, options=st.sampled_from([{}, {"skip-empty-xacts": "1"}, {"only-local": "1", "include-xids": "0"},
                                         {"include-timestamp": "1"}]))
def test_native_record_loop_and_replay_write_what_the_reference_writes(ops, options, tmp_path_factory):
    stream = build(ops)
    for threshold, budget in ((4096, 64 << 20), (1, 64 << 20), (3, 64 << 20), (4096, 400)):
        outs = []
        for impl in ("python", "cython"):
            spill_dir = tmp_path_factory.mktemp("spill")
            outs.append(decode_with(impl, stream.framed, options, threshold, budget, spill_dir))
            assert list(spill_dir.iterdir()) == [], "spill files left behind"
        assert outs[0] == outs[1], (threshold, budget)


def run_loop(stream: Stream, options=None, plugin=None, **kw) -> tuple[list[int], int, bytes]:
    """The native loop over ``stream`` with the Python decoder as its ``slow``: the LSNs of the records
    it left to the decoder, how many it took, and what the plugin wrote."""
    previous = _impl.IMPL
    _impl.use("cython")
    try:
        blocks: list[bytes] = []
        writer = OutputWriter(blocks.append)
        dec = LogicalDecoder(make_catalog(), plugin or TestDecoding(output=writer), plugin_options=options,
                             segment_size=SEG, **kw)
        slow = []

        def process(rec, lsn, end_lsn):
            slow.append(lsn)
            dec.process(_impl.decode_record(rec, lsn, end_lsn, MAJOR))

        taken = logical_native.decode_framed(dec, stream.framed, 0, MAJOR, process)
        dec.finish()
    finally:
        _impl.use(previous)
    return slow, taken, b"".join(blocks)


def reference(stream: Stream, options=None, **kw) -> bytes:
    """What the pure-Python decoder writes for ``stream``."""
    previous = _impl.IMPL
    _impl.use("python")
    try:
        blocks: list[bytes] = []
        dec = LogicalDecoder(make_catalog(), TestDecoding(output=OutputWriter(blocks.append)), plugin_options=options,
                             segment_size=SEG, **kw)
        dec.process_framed("wal", stream.framed, 0)
        dec.finish()
    finally:
        _impl.use(previous)
    return b"".join(blocks)


@pytest.mark.parametrize("options", [{}, {"skip-empty-xacts": "1"}, {"include-xids": "0"}])
def test_the_record_loop_takes_plain_transactions_whole(options, tmp_path):
    """The parity above would hold if every record went to the Python decoder: the loop does take
    every record of plain transactions itself — their first records (a row change, a row lock),
    their rows, the records decoding ignores, their commits — and writes what the reference writes."""
    ops = [("row", 0, kind, False, False, 0) for kind in ("insert", "update_key", "hot", "delete_key", "multi",
                                                          "ignored")] + [("commit", 0, "plain")]
    ops += [("row", 1, "lock", False, False, 0), ("row", 1, "update", False, False, 0), ("commit", 1, "ae_locks")]
    ops += [("row", 2, "insert", False, True, 0), ("commit", 2, "plain")]  # only a row of another database
    ops += [("row", 0, "lock", False, False, 0), ("commit", 0, "plain")]  # no change: no base snapshot
    stream = build(ops)
    slow, taken, out = run_loop(stream, options, spill_dir=str(tmp_path))
    # the running-xacts record and the last transaction's commit (nothing to replay) go the Python way
    assert slow == [stream.framed[0][0], stream.framed[-1][0]] and taken == len(stream.framed) - 2
    assert out == reference(stream, options, spill_dir=str(tmp_path))
    lines = out.decode().splitlines()
    assert len(lines) == 8 + 3 + (0 if options.get("skip-empty-xacts") else 2)
    assert lines[0] == ("BEGIN" if options.get("include-xids") == "0" else "BEGIN 1000")


# Each a transaction whose commit the native path must leave to the decoder: (ops, options, decoder arguments)
LEFT_TO_THE_DECODER = {
    "subtransaction": ([("row", 0, "insert", False, False, 0), ("row", 0, "update", True, False, 0),
                        ("commit", 0, "plain")], {}, {}),
    "invalidations": ([("row", 0, "insert", False, False, 0), ("commit", 0, "invals")], {}, {}),
    "catalog change": ([("row", 0, "insert", False, False, 0), ("row", 0, "catalog", False, False, 0),
                        ("commit", 0, "plain")], {}, {}),
    "catalog change first": ([("row", 0, "catalog", False, False, 0), ("row", 0, "insert", False, False, 0),
                              ("commit", 0, "plain")], {}, {}),
    "other database": ([("row", 0, "insert", False, False, 0), ("commit", 0, "other_db")], {}, {}),
    "origin": ([("row", 0, "insert", False, False, 0), ("commit", 0, "origin")], {}, {}),
    "origin filtered": ([("row", 0, "insert", False, False, 3), ("commit", 0, "origin")], {"only-local": "1"}, {}),
    "commit prepared": ([("row", 0, "insert", False, False, 0), ("commit", 0, "prepared")], {}, {}),
    "include-timestamp": ([("row", 0, "insert", False, False, 0), ("commit", 0, "plain")],
                          {"include-timestamp": "1"}, {}),
    "speculative insert": ([("row", 0, "spec", False, False, 0), ("commit", 0, "plain")], {}, {}),
    "relation not in the catalog": ([("row", 0, "unknown", False, False, 0), ("commit", 0, "plain")], {}, {}),
    "too many changes": ([("row", 0, "bulk", False, False, 0), ("commit", 0, "plain")], {}, {}),
    "spilled": ([("row", 0, "insert", False, False, 0), ("row", 0, "update", False, False, 0),
                 ("commit", 0, "plain")], {}, {"spill_threshold": 2}),
    "before the start": ([("row", 0, "insert", False, False, 0), ("commit", 0, "plain")], {},
                         {"start_decoding_at": 1 << 40}),
}


@pytest.mark.parametrize("case", sorted(LEFT_TO_THE_DECODER))
def test_commits_the_native_path_leaves_to_the_decoder(case, tmp_path):
    """Commits that are not plain go to the Python decoder (which writes what the reference writes);
    a plain one in the same stream, after them, is still taken natively."""
    ops, options, kw = LEFT_TO_THE_DECODER[case]
    stream = build(ops + [("row", 2, "insert", False, False, 0), ("commit", 2, "plain")])
    commits = [lsn for lsn, _end, rec in stream.framed if rec[17] == RM_XACT_ID]
    slow, _taken, out = run_loop(stream, options, spill_dir=str(tmp_path), **kw)
    assert commits[0] in slow
    if case not in ("before the start", "include-timestamp"):  # which hold for every commit
        assert commits[-1] not in slow
    assert out == reference(stream, options, spill_dir=str(tmp_path), **kw)


def test_a_plugin_without_txn_lines_has_its_commits_decoded_in_python(tmp_path):
    rows: list[str] = []
    stream = build([("row", 0, "insert", False, False, 0), ("commit", 0, "plain")])
    slow, _taken, _out = run_loop(stream, plugin=TestDecoding(rows.append), spill_dir=str(tmp_path))
    assert stream.framed[-1][0] in slow
    assert rows == ["BEGIN 1000", "table public.t: INSERT: id[integer]:1 v[text]:'row 1 x'", "COMMIT 1000"]


# -- rows whose values the row writer cannot read in place ------------------------------------------------

def compressed_rows(damaged: bool = False) -> Stream:
    """A plain transaction whose text values are compressed inline (pglz, varattrib_4b with va_tcinfo): an
    INSERT, an UPDATE with its old key, a DELETE whose old key holds one.  ``damaged``: the INSERT's value
    says it decompresses to more bytes than its stream gives, which only the Python path names."""
    s = Stream()
    s.running_xacts()
    xid, _top = s._xid(0, False)
    rel = (SPC, DB, REL)
    raw = ("compressible text " * 30).encode()

    def tup(ident: int, value: bytes) -> bytes:
        # xl_heap_header (natts 2, HEAP_HASVARWIDTH, t_hoff 24), a byte up to t_hoff, the int4, the varlena
        return struct.pack("<HHB", 2, 0x0002, 24) + b"\x00" + struct.pack("<i", ident) + value

    value = varlena(raw, "pglz")
    bad = value[:4] + struct.pack("<I", int.from_bytes(value[4:8], "little") + 5) + value[8:]
    flags = XLH_INSERT_CONTAINS_NEW_TUPLE
    s.add(Record(RM_HEAP_ID, XLOG_HEAP_INSERT, xid, (Block(0, rel, data=tup(1, bad if damaged else value)),),
                 struct.pack("<HB", 1, flags)))
    old = tup(1, varlena(b"old", "1b"))
    main = struct.pack("<IHBBIH", 0, 1, 0, XLH_UPDATE_CONTAINS_NEW_TUPLE | XLH_UPDATE_CONTAINS_OLD_KEY, 0, 2) + old
    s.add(Record(RM_HEAP_ID, XLOG_HEAP_UPDATE, xid, (Block(0, rel, data=tup(2, value)),), main))
    main = struct.pack("<IHBB", 0, 1, 0, XLH_DELETE_CONTAINS_OLD_KEY) + tup(2, value)
    s.add(Record(RM_HEAP_ID, XLOG_HEAP_DELETE, xid, (Block(0, rel),), main))
    s.finish(0, True)
    return s


@pytest.mark.parametrize("spill_threshold", [4096, 1])
def test_rows_with_compressed_values_written_from_the_arena(spill_threshold, tmp_path):
    """The row writer reads the change arena in place (``_typeout.append_change_at``, no bytes object per
    tuple); a value it must decompress is copied out first.  On the commit path (the transaction taken
    whole) and on the replay of a spilled one, the same lines as the reference."""
    stream = compressed_rows()
    kw = dict(spill_dir=str(tmp_path), spill_threshold=spill_threshold)
    slow, _taken, out = run_loop(stream, **kw)
    commit = stream.framed[-1][0]
    assert (commit in slow) == (spill_threshold == 1)  # the spilled one is replayed by _logical.replay
    assert out == reference(stream, **kw)
    assert out.count(b"compressible text") == 3 * 30


@pytest.mark.parametrize("spill_threshold", [4096, 1])
def test_a_row_only_the_python_path_reads_raises_the_reference_error(spill_threshold, tmp_path):
    """A value whose decompression fails sends the tuple the Python way (a copy of it out of the arena),
    which raises the reference's error, naming the row."""
    stream = compressed_rows(damaged=True)
    kw = dict(spill_dir=str(tmp_path), spill_threshold=spill_threshold)
    with pytest.raises(WALError) as native:
        run_loop(stream, **kw)
    with pytest.raises(WALError) as ref:
        reference(stream, **kw)
    assert (type(native.value), str(native.value)) == (type(ref.value), str(ref.value))
    assert "decompress" in str(ref.value) or "compressed" in str(ref.value)
