"""``LogicalDecoder`` takes its parts by injection: a reorder buffer given to it is the one it queues into.

A stream of real WAL record bytes (``walgen.assemble``): a running-xacts record (the consistent
point), three inserts into the model catalog's table, a commit.  Under both implementations: a
reorder buffer of another class turns the native record loop off (it would queue into the buffer's
state itself, past the buffer's ``queue_change``).  Spark's driver decoder gives its counting buffer
and recording replayer the same way.
"""

from __future__ import annotations

import struct

import pytest

from model_catalog import DB, REL, SPC, make_catalog, tuple_body
from walgen import Block, Record, assemble
from waldecode import _impl
from waldecode.logical.decode import LogicalDecoder
from waldecode.logical.reorderbuffer import ReorderBuffer
from waldecode.output.base import OutputWriter
from waldecode.output.test_decoding import TestDecoding
from waldecode.spark.plan import CountingReorderBuffer, DriverDecoder

# src/include/access/rmgrlist.h, standbydefs.h, heapam_xlog.h, xact.h
RM_XACT_ID, RM_STANDBY_ID, RM_HEAP_ID = 1, 8, 10
XLOG_RUNNING_XACTS = 0x10
XLOG_HEAP_INSERT = 0x00
XLH_INSERT_CONTAINS_NEW_TUPLE = 0x08
XLOG_XACT_COMMIT, XLOG_XACT_HAS_INFO, XACT_XINFO_HAS_DBINFO = 0x00, 0x80, 0x01
MAJOR = 15
SEG = 1 << 20
XID = 1000
ROWS = 3


def framed_stream() -> list[tuple[int, int, bytes]]:
    """(lsn, raw_end, bytes) of: running xacts, ROWS inserts of transaction XID, its commit."""
    records = [Record(RM_STANDBY_ID, XLOG_RUNNING_XACTS, 0,
                      main_data=struct.pack("<iiB3xIII", 0, 0, 0, XID, XID, XID - 1))]
    for n in range(ROWS):
        data = struct.pack("<HHB", 2, 0x0002, 24) + tuple_body(n, f"row {n}")
        records.append(Record(RM_HEAP_ID, XLOG_HEAP_INSERT, XID, (Block(0, (SPC, DB, REL), data=data),),
                              struct.pack("<HB", 1, XLH_INSERT_CONTAINS_NEW_TUPLE)))
    commit = struct.pack("<q", 0) + struct.pack("<I", XACT_XINFO_HAS_DBINFO) + struct.pack("<II", DB, SPC)
    records.append(Record(RM_XACT_ID, XLOG_XACT_COMMIT | XLOG_XACT_HAS_INFO, XID, main_data=commit))
    framed, lsn, prev = [], 0x1000028, 0
    for rec in records:
        raw = assemble(rec, prev, MAJOR)
        framed.append((lsn, lsn + len(raw), raw))
        prev, lsn = lsn, lsn + ((len(raw) + 7) & ~7)
    return framed


class CountingBuffer(ReorderBuffer):
    """A reorder buffer that counts the changes queued into it, per xid, and keeps them as its class does."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.queued: dict[int, int] = {}

    def queue_change(self, xid, change) -> None:
        self.queued[xid] = self.queued.get(xid, 0) + 1
        super().queue_change(xid, change)


def decode(impl: str, **parts) -> tuple[LogicalDecoder, list[str]]:
    previous = _impl.IMPL
    _impl.use(impl)
    try:
        blocks: list[bytes] = []
        dec = LogicalDecoder(make_catalog(), TestDecoding(output=OutputWriter(blocks.append)), segment_size=SEG,
                             **parts)
        framed = framed_stream()
        dec.process_framed("wal", framed, framed[0][0])
        dec.finish()
        return dec, b"".join(blocks).decode().splitlines()
    finally:
        _impl.use(previous)


@pytest.mark.parametrize("impl", _impl.available())
def test_the_decoder_queues_into_the_reorder_buffer_it_is_given(impl):
    rb = CountingBuffer(segment_size=SEG)
    dec, lines = decode(impl, reorder_buffer=rb)
    assert dec.rb is rb
    assert rb.queued == {XID: ROWS}
    # the buffer kept what it was given: the transaction decodes as with the decoder's own
    _own, own_lines = decode(impl)
    assert lines == own_lines and len(lines) == ROWS + 2
    assert lines[0] == f"BEGIN {XID}" and lines[1].startswith("table public.t: INSERT: ")


def test_the_spark_driver_counts_changes_and_records_replays():
    """``DriverDecoder`` gives its counting buffer and recording replayer: the inserts are counted on the
    transaction, none is kept, and the commit is recorded as a replay of ROWS changes."""
    previous = _impl.IMPL
    _impl.use("python")
    try:
        dec = DriverDecoder(make_catalog(), TestDecoding(lambda line: None), segment_size=SEG)
        kept = []
        rb = dec.rb
        original_cleanup = rb.cleanup

        def cleanup(txn):
            kept.append((txn.xid, txn.nentries, len(txn.changes)))
            original_cleanup(txn)

        rb.cleanup = cleanup
        for lsn, raw_end, raw in framed_stream():
            rec = _impl.decode_record(raw, lsn, (raw_end + 7) & ~7, MAJOR)
            dec.item(lsn, ("r", rec))
        dec.finish()
    finally:
        _impl.use(previous)
    assert type(rb) is CountingReorderBuffer
    assert kept == [(XID, ROWS, 0)]
    [event] = dec.events
    assert event[0] == "replay" and event[1].xid == XID and event[4] == [(XID, framed_stream()[1][0])]
    assert event[5] == ROWS and event[3][0] == "commit"
