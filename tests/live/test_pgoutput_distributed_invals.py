"""Invalidations distributed into open transactions, as pgoutput hears them: the server's bytes.

Since the minor releases of May 2025 (15.13; Debian's here is 15.18), a transaction that commits catalog
changes hands its invalidations to every transaction still open that has a base snapshot and is not
prepared (snapbuild.c SnapBuildDistributeSnapshotAndInval): replaying one of those, the server executes
them at that commit's LSN among its changes and, apart from its own, once more at its end
(ReorderBufferProcessTXN).  pgoutput hears them through its relation cache callbacks: a relation's
entry is rebuilt and its Relation message sent again at its next change.

Each case opens a transaction, has another connection commit DDL (ALTER TABLE its row locks let through,
or a publication change) while it is open, and goes on; a pgoutput slot made before is peeked with
``pg_logical_slot_peek_binary_changes`` and the WAL decoded offline from a catalog snapshot, under every
implementation: the same bytes.  The same WAL decoded as a server of the minor release before (15.12,
no distribution) must not give them, so each case shows the rule at work; where the open transaction
aborts, executing its distributed invalidations at the abort must not give them either
(ReorderBufferAbort executes none).
"""

from __future__ import annotations

import itertools

import pytest

from live import DB, live_cluster
from waldecode import _impl
from waldecode.catalog import Catalog
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.logical import decode as decode_mod
from waldecode.logical.session import decode_wal
from waldecode.output.pgoutput import PgOutput
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server]

SCHEMA = """
CREATE TABLE a (id int PRIMARY KEY, v text);
CREATE TABLE b (id int PRIMARY KEY, v text);
CREATE TABLE late (id int PRIMARY KEY, v text);
CREATE PUBLICATION p FOR TABLE a, b;
CREATE PUBLICATION p_every FOR ALL TABLES;
"""

OPTIONS = [{"proto_version": "1", "publication_names": "p"},
           {"proto_version": "2", "publication_names": "p_every", "binary": "true"}]


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=4, autovacuum="off") as c:
        v = c.sql("SELECT current_setting('server_version_num')::int")[0][0]
        if decode_mod.invalidation_distribution(v) is None:
            pytest.skip(f"PostgreSQL {v} does not distribute invalidations into open transactions")
        yield c


_ids = itertools.count(1000)  # row ids and column names no case used before


def change_after_ddl(conn, long):
    """The open transaction changes the table again after the DDL committed (an ALTER TABLE its row lock
    lets through): the Relation goes out again inside it, and once more in the next transaction (the
    distributed invalidations executed again at its end)."""
    long.execute("INSERT INTO a VALUES (%s, 'open, before')", (next(_ids),))
    conn.execute("ALTER TABLE a SET (fillfactor = 90)")
    long.execute("INSERT INTO a VALUES (%s, 'open, after')", (next(_ids),))
    long.commit()
    conn.execute("INSERT INTO a VALUES (%s, 'next')", (next(_ids),))


def no_change_after_ddl(conn, long):
    """No change of the open transaction after the DDL commit: the invalidations distributed into it still
    reach the relation cache at its end, so the next transaction sends the Relation again."""
    long.execute("INSERT INTO a VALUES (%s, 'open')", (next(_ids),))
    conn.execute("ALTER TABLE a SET (fillfactor = 80)")
    long.commit()
    conn.execute("INSERT INTO a VALUES (%s, 'next')", (next(_ids),))


def built_in_between(conn, long):
    """A transaction that began after the DDL and committed before the open one sends the new Relation;
    the open one, replayed after it, finds the entry valid at its first change, and its distributed
    invalidations make the next transaction send the Relation again."""
    long.execute("INSERT INTO a VALUES (%s, 'open')", (next(_ids),))
    conn.execute("ALTER TABLE a ALTER COLUMN v SET STATISTICS 500")
    conn.execute("INSERT INTO a VALUES (%s, 'after the DDL')", (next(_ids),))
    long.commit()
    conn.execute("INSERT INTO a VALUES (%s, 'next')", (next(_ids),))


def new_column_elsewhere(conn, long):
    """ALTER TABLE ADD COLUMN of a table the open transaction writes only after it committed."""
    long.execute("INSERT INTO a VALUES (%s, 'open')", (next(_ids),))
    conn.execute(f"ALTER TABLE b ADD COLUMN c{next(_ids)} int DEFAULT 5")
    long.execute("INSERT INTO b (id, v) VALUES (%s, 'open, after')", (next(_ids),))
    long.commit()
    conn.execute("INSERT INTO b (id, v) VALUES (%s, 'next')", (next(_ids),))


def aborted(conn, long):
    """The open transaction rolls back after the DDL and a transaction that sent the Relation again:
    nothing is executed at its abort, so the next change of the table goes without one."""
    long.execute("INSERT INTO a VALUES (%s, 'open, rolled back')", (next(_ids),))
    conn.execute("ALTER TABLE a SET (fillfactor = 70)")
    conn.execute("INSERT INTO a VALUES (%s, 'after the DDL')", (next(_ids),))
    long.rollback()
    conn.execute("INSERT INTO a VALUES (%s, 'after the rollback')", (next(_ids),))


def publication_added(conn, long):
    """invalidation_distribution.spec's case: a table added to the publication while a transaction that
    writes it is open has that transaction's rows after the change published."""
    long.execute("INSERT INTO late VALUES (%s, 'open, not published')", (next(_ids),))
    conn.execute("ALTER PUBLICATION p ADD TABLE late")
    long.execute("INSERT INTO late VALUES (%s, 'open, published')", (next(_ids),))
    long.commit()
    conn.execute("INSERT INTO late VALUES (%s, 'next')", (next(_ids),))
    conn.execute("ALTER PUBLICATION p DROP TABLE late")


def in_subtransaction(conn, long):
    """The open transaction's changes are a subtransaction's: the invalidations go to its top-level one."""
    long.execute("SAVEPOINT s")
    long.execute("INSERT INTO b (id, v) VALUES (%s, 'sub, before')", (next(_ids),))
    conn.execute("ALTER TABLE b SET (fillfactor = 60)")
    long.execute("INSERT INTO b (id, v) VALUES (%s, 'sub, after')", (next(_ids),))
    long.execute("RELEASE SAVEPOINT s")
    long.commit()
    conn.execute("INSERT INTO b (id, v) VALUES (%s, 'next')", (next(_ids),))


def prepared_then_ddl(conn, long):
    """Prepared before the DDL, committed after: decoded at COMMIT PREPARED (the slot is not two-phase), it
    takes the invalidations distributed while it waited (the server marks prepared only a transaction
    whose PREPARE it decodes or skips, not one filtered out there)."""
    long.execute("INSERT INTO b (id, v) VALUES (%s, 'prepared')", (next(_ids),))
    long.execute("PREPARE TRANSACTION 'distributed_into_prepared'")
    long.commit()
    conn.execute("ALTER TABLE b SET (fillfactor = 50)")
    conn.execute("COMMIT PREPARED 'distributed_into_prepared'")
    conn.execute("INSERT INTO b (id, v) VALUES (%s, 'next')", (next(_ids),))


CASES = [change_after_ddl, no_change_after_ddl, built_in_between, new_column_elsewhere, aborted, publication_added,
         in_subtransaction, prepared_then_ddl]


def _decode(catalog, wal, options, start, end) -> list[bytes]:
    got: list[bytes] = []
    result = decode_wal([wal], catalog, PgOutput(lambda m: got.append(m.encode("utf-8", "surrogateescape"))),
                        plugin_options=options, start_lsn=start, end_lsn=end)
    assert result.not_decoded == [] and result.warnings == [], (result.not_decoded, result.warnings)
    return got


def _executing_at_abort(monkeypatch):
    """The decoder as if ReorderBufferAbort executed a transaction's distributed invalidations."""
    original = decode_mod.LogicalDecoder._decode_abort

    def _decode_abort(self, rec, parsed, xid, two_phase):
        txn = self.rb.txn_by_xid(xid, False)
        if txn is not None and txn.invalidations_distributed:
            self.plugin.invalidate(txn.invalidations_distributed)
        original(self, rec, parsed, xid, two_phase)
    monkeypatch.setattr(decode_mod.LogicalDecoder, "_decode_abort", _decode_abort)


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_distributed_invalidations_as_the_server(cluster, case, tmp_path, monkeypatch):
    slot = f"dist_{case.__name__}"
    with cluster.connect(DB) as conn:
        catalog = snapshot_from_connection(conn)
        conn.execute("CHECKPOINT")
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        restart, confirmed = conn.execute("SELECT restart_lsn::text, confirmed_flush_lsn::text "
                                          "FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    with cluster.connect(DB) as conn, cluster.connect(DB, autocommit=False) as long:
        case(conn, long)
    with cluster.connect(DB) as conn:
        conn.execute("CHECKPOINT")
        end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        expected = []
        for options in OPTIONS:
            args = [x for kv in options.items() for x in kv]
            rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL"
                                + ", %s" * len(args) + ")", (slot, end, *args)).fetchall()
            expected.append([bytes(r[0]) for r in rows])
        first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (restart,)).fetchone()[0]
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    wal = cluster.archive_wal(tmp_path / "wal", first)
    start, stop = parse_lsn(confirmed), parse_lsn(end)
    # as a server of the minor release before the distribution
    assert catalog.major == 15
    older = Catalog.from_json(catalog.to_json())
    older.server_version_num = 150012
    previous = _impl.IMPL
    try:
        for options, exp in zip(OPTIONS, expected):
            assert any(m[:1] == b"R" for m in exp), f"the server sent no Relation for {options}: nothing tested"
            for impl in _impl.available():
                _impl.use(impl)
                assert _decode(catalog, wal, options, start, stop) == exp, (impl, options)
            _impl.use(previous)
            if case is aborted:
                with monkeypatch.context() as m:
                    _executing_at_abort(m)
                    assert _decode(catalog, wal, options, start, stop) != exp, options
            else:
                assert _decode(older, wal, options, start, stop) != exp, options
    finally:
        _impl.use(previous)
