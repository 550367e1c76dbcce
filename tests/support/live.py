"""Harness for live differential tests: a server's own test_decoding slot against waldecode.

``live_cluster(schema, major=15, **settings)`` runs a module's throw-away PostgreSQL (15 unless
``major`` says otherwise) with a database
``live`` holding ``schema``; ``SlotRun`` takes a catalog snapshot, a CHECKPOINT and a
test_decoding slot, lets the test run its workload, then ``finish`` peeks the slot and
decodes a copy of the WAL offline with the same options: ``(got, expected)``.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.logical.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

DB = "live"


@contextmanager
def live_cluster(schema: str, major: int = 15, **settings):
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(major, settings=settings)
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL {major} is not available: {e}")
    try:
        c.sql(f"CREATE DATABASE {DB}")
        with c.connect(DB) as conn:
            conn.execute(schema)
        yield c
    finally:
        c.__exit__(None, None, None)


class SlotRun:
    """A workload between a catalog snapshot and a checkpoint, decoded by the server's slot and offline."""

    _n = 0

    def __init__(self, cluster, *, two_phase: bool = False, options: dict | None = None,
                 before_slot: str | None = None, after_checkpoint: str | None = None, dbname: str = DB,
                 **decoder_kw):
        SlotRun._n += 1
        self.c = cluster
        self.db = dbname
        self.slot = f"live_{SlotRun._n}"
        self.two_phase = two_phase
        self.options = options or {}
        self.decoder_kw = decoder_kw
        self.decoder: LogicalDecoder | None = None
        with cluster.connect(dbname) as conn:
            self.catalog = snapshot_from_connection(conn)
            if before_slot:
                conn.execute(before_slot)
            conn.execute("CHECKPOINT")
            if after_checkpoint:
                conn.execute(after_checkpoint)
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding', false, %s)",
                         (self.slot, two_phase))
            self.restart_lsn, self.confirmed_lsn = conn.execute(
                "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots "
                "WHERE slot_name = %s", (self.slot,)).fetchone()

    def sql(self, *statements: str, conn=None) -> None:
        if conn is not None:
            for s in statements:
                conn.execute(s)
            return
        with self.c.connect(self.db) as conn:
            for s in statements:
                conn.execute(s)

    def finish(self, tmp_path) -> tuple[list[str], list[str]]:
        with self.c.connect(self.db) as conn:
            conn.execute("CHECKPOINT")
            end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            self.end_lsn = end_lsn
            args = [x for kv in self.options.items() for x in kv]
            rows = conn.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL"
                                + ", %s" * len(args) + ")", (self.slot, end_lsn, *args)).fetchall()
            expected = [bytes(r[1]).decode("utf-8", "surrogateescape") for r in rows]
            self.peek_lsns = [r[0] for r in rows]
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (self.restart_lsn,)).fetchone()[0]
            conn.execute("SELECT pg_drop_replication_slot(%s)", (self.slot,))
        # A copy of the WAL, as an archive would hold it
        wal = self.c.archive_wal(tmp_path / "wal", first)
        self.wal, self.end_lsn = wal, end_lsn  # for a test that decodes the same WAL again
        got: list[str] = []
        plugin = TestDecoding(got.append)
        spill = tmp_path / "spill"
        spill.mkdir()
        # Decoded as the slot decodes: from its confirmed position, reading back as far as needed
        result = decode_wal([wal], self.catalog, plugin, plugin_options=self.options,
                            start_lsn=parse_lsn(self.confirmed_lsn),
                            end_lsn=parse_lsn(end_lsn), two_phase=self.two_phase, spill_dir=str(spill),
                            **self.decoder_kw)
        self.result = result
        self.decoder = result.decoder
        assert result.not_decoded == [], result.not_decoded
        assert list(spill.iterdir()) == [], "spill files left behind"
        return got, expected
