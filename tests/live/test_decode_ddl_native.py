"""Decoding through DDL stays on the native path, and equal to the server's slot.

Real archives hold migrations: a decoder that leaves its fast path at the first catalog change
is an order of magnitude slower from there on.  Here a PostgreSQL 15 workload interleaves row
changes with DDL every few statements (ADD/DROP/RENAME COLUMN, ALTER COLUMN TYPE with a
rewrite, CREATE/DROP TABLE, TRUNCATE, VACUUM FULL of a user table and of a catalog,
publications), a transaction that runs across a DDL commit, DDL and rows in one transaction,
and prepared transactions, decoded with and without two-phase.  The offline decode must print
what the slot printed, warn about nothing, and (under Cython) hand no row change to the Python
replay (``Replayer.apply_change``): every row is written by ``_logical``'s replay or commit.
"""

from __future__ import annotations

import pytest

from live import DB, SlotRun, live_cluster
from waldecode import _impl
from waldecode.logical import replay
from waldecode.logical.reorderbuffer import REORDER_BUFFER_CHANGE_DELETE
from waldecode.logical.session import decode_wal
from waldecode.output.base import OutputWriter
from waldecode.output.test_decoding import TestDecoding
from waldecode.wal.xlogreader import parse_lsn

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL, note text);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int, delta int, at text);
CREATE TABLE keep (id int PRIMARY KEY, v text);
INSERT INTO acct SELECT g, 0, 'a' || g FROM generate_series(1, 50) g;
INSERT INTO keep SELECT g, 'k' || g FROM generate_series(1, 20) g;
"""


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_replication_slots=10, max_prepared_transactions=5, lock_timeout="20s") as c:
        yield c


def _dml(k: int) -> list[str]:
    """A few plain transactions (one statement each, autocommit)."""
    return [f"UPDATE acct SET balance = balance + {k} WHERE id = {k % 50 + 1}",
            f"INSERT INTO hist (acct, delta) VALUES ({k % 50 + 1}, {k})",
            f"UPDATE keep SET v = v || '.{k}' WHERE id = {k % 20 + 1}",
            f"DELETE FROM hist WHERE id = {max(1, k - 3)}"]


DDL = [
    "ALTER TABLE hist ADD COLUMN extra text DEFAULT 'x'",
    "ALTER TABLE hist RENAME COLUMN at TO happened",
    "ALTER TABLE hist ALTER COLUMN delta TYPE bigint",  # rewrites the table
    "CREATE TABLE later (id int PRIMARY KEY, v text)",
    "INSERT INTO later VALUES (1, 'created'), (2, 'then')",
    "VACUUM FULL keep",
    "VACUUM FULL pg_class",  # a mapped catalog: a new relfilenode through the relation mapper
    "CREATE PUBLICATION pub_all FOR TABLE acct, hist",
    "ALTER TABLE acct DROP COLUMN note",
    "TRUNCATE hist",
    "ALTER PUBLICATION pub_all ADD TABLE later",
    "DROP TABLE later",
    "ALTER TABLE keep ALTER COLUMN v TYPE varchar(200)",
]


def _workload(run: SlotRun, cluster) -> None:
    step = 0
    with cluster.connect(run.db) as conn, cluster.connect(run.db, autocommit=False) as long_txn:
        # a transaction that runs across the first catalog changes: its later rows see the new columns
        long_txn.execute("INSERT INTO keep VALUES (300, 'before ddl')")
        for i, ddl in enumerate(DDL):
            for s in _dml(step):
                conn.execute(s)
            step += 1
            conn.execute(ddl)
            if i == 2:
                long_txn.execute("INSERT INTO keep VALUES (301, 'after ddl')")
                long_txn.execute("INSERT INTO hist (acct, delta, happened) VALUES (1, 7, 'long')")
                long_txn.commit()
            if i % 4 == 1:
                # DDL and rows in one transaction, with a savepoint rolled back
                conn.execute("BEGIN")
                conn.execute(f"ALTER TABLE acct ADD COLUMN c{i} int DEFAULT {i}")
                conn.execute(f"UPDATE acct SET c{i} = c{i} + 1 WHERE id <= 3")
                conn.execute("SAVEPOINT s")
                conn.execute("UPDATE acct SET balance = -1")
                conn.execute("ROLLBACK TO SAVEPOINT s")
                conn.execute("INSERT INTO keep VALUES (100 + %s, 'in ddl txn')" % i)
                conn.execute("COMMIT")
            if i % 4 == 3:
                with cluster.connect(run.db, autocommit=False) as tp:
                    tp.execute(f"UPDATE acct SET balance = balance - 1 WHERE id = {i}")
                    tp.execute(f"INSERT INTO keep VALUES (200 + {i}, 'prepared')")
                    tp.execute(f"PREPARE TRANSACTION 'tp{i}'")
                    tp.commit()
                for s in _dml(step):
                    conn.execute(s)
                conn.execute(f"COMMIT PREPARED 'tp{i}'")


def _decode_to_bytes(run: SlotRun) -> bytes:
    """The run's WAL decoded as ``waldecode decode`` writes a file (the plugin's lines into an
    OutputWriter: the native path's output)."""
    blocks: list[bytes] = []
    writer = OutputWriter(lambda b: blocks.append(bytes(b)))
    result = decode_wal([run.wal], run.catalog, TestDecoding(output=writer), plugin_options=run.options,
                        start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn),
                        two_phase=run.two_phase)
    writer.flush()
    assert result.not_decoded == [] and result.warnings == []
    run.decoder = result.decoder
    return b"".join(blocks)


@pytest.mark.server
@pytest.mark.parametrize("two_phase", [False, True], ids=["commit-prepared", "two-phase"])
def test_ddl_workload_decodes_natively(cluster, tmp_path, two_phase, monkeypatch):
    db = f"ddl_{'tp' if two_phase else 'cp'}"
    cluster.sql(f"CREATE DATABASE {db} TEMPLATE {DB}")  # the workload's DDL starts from the schema each time
    run = SlotRun(cluster, dbname=db, two_phase=two_phase, options={"include-xids": "0", "skip-empty-xacts": "1"})
    _workload(run, cluster)
    got, expected = run.finish(tmp_path)
    assert got == expected
    assert any("happened[text]:'long'" in r for r in expected), "the long transaction's row after the DDL"
    assert any("extra[text]:'x'" in r for r in expected)
    assert any(r.startswith("PREPARE TRANSACTION") for r in expected) == two_phase
    expected_bytes = "".join(line + "\n" for line in expected).encode("utf-8", "surrogateescape")

    python_rows = []
    reference = replay.Replayer.apply_change

    def counting(self, txn, change, state):
        if change.action <= REORDER_BUFFER_CHANGE_DELETE:
            python_rows.append((change.lsn, change.relNumber, change.action))
        return reference(self, txn, change, state)

    monkeypatch.setattr(replay.Replayer, "apply_change", counting)
    previous = _impl.IMPL
    try:
        for impl in _impl.available():
            _impl.use(impl)
            python_rows.clear()
            assert _decode_to_bytes(run) == expected_bytes, impl
            assert run.decoder.history.timeline.commit_lsns, "the catalog changed in the range"
            if impl == "cython":
                assert python_rows == [], \
                    f"{len(python_rows)} row changes replayed in Python, the first {python_rows[:3]}"
    finally:
        _impl.use(previous)
