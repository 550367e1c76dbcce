"""The range path of ``spark decode`` on a fresh workload whose transactions cross segment boundaries.

A throw-away PostgreSQL 15 (1 MB segments) runs concurrent sessions without DDL, so ``spark
decode`` takes its range path (each output range decoded by the single-process decoder as a
slot restarted at the range's start): a long transaction with savepoints, a released and a
rolled-back subtransaction and a transactional message, open across several segments while
other sessions commit; a transaction of 12,000 rows (spilled) across segments; a transaction
rolled back after crossing a segment; a non-transactional message; and a transaction in flight
from the start to the end.  The server's own test_decoding slot gives the expected rows.  With one
segment per task the ranges' starts fall inside those transactions, so a range must read from
before its start; the test checks that the plan did (a restart before its start) and that the
output is the server's, for 1, 2 and 7 ranges, in this process under both implementations and
through Spark.
"""

from __future__ import annotations

import io
from contextlib import ExitStack

import pytest

from live import SlotRun, live_cluster

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int, delta numeric, note text);
INSERT INTO acct SELECT g, 'owner ' || g, 100 FROM generate_series(1, 500) g;
"""


def _filler(conn, n: int, batch: int = 400) -> None:
    """About n * 330 bytes of WAL in committed transactions of ``batch`` rows."""
    for i in range(0, n, batch):
        conn.execute("INSERT INTO hist (acct, delta, note) SELECT g % 500 + 1, g, repeat('f', 200) "
                     f"FROM generate_series({i}, {i + batch - 1}) g")


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """(run, catalog file, WAL directory, the server's rows)."""
    tmp = tmp_path_factory.mktemp("spark-ranges-live")
    with live_cluster(SCHEMA) as c:
        run = SlotRun(c)
        with ExitStack() as stack:
            long_, other, big, aborted, open_ = (stack.enter_context(c.connect("live")) for _ in range(5))
            for conn in (long_, other, big, aborted, open_):
                conn.autocommit = True
            open_.execute("BEGIN")  # in flight from the first segment to the end: the last range reads it all
            open_.execute("INSERT INTO hist (acct, delta, note) VALUES (7, 7, 'never committed')")
            long_.execute("BEGIN")
            long_.execute("UPDATE acct SET balance = balance - 1 WHERE id = 1")
            _filler(other, 4000)
            long_.execute("SAVEPOINT a")
            long_.execute("INSERT INTO hist (acct, delta, note) VALUES (1, -1, 'in savepoint a')")
            long_.execute("RELEASE a")
            big.execute("BEGIN")
            big.execute("INSERT INTO hist (acct, delta, note) SELECT g % 500 + 1, g, repeat('b', 100) "
                        "FROM generate_series(1, 6000) g")
            aborted.execute("BEGIN")
            aborted.execute("UPDATE acct SET owner = owner || ' (gone)' WHERE id BETWEEN 100 AND 150")
            _filler(other, 4000)
            long_.execute("SAVEPOINT b")
            long_.execute("DELETE FROM acct WHERE id = 500")
            long_.execute("ROLLBACK TO b")
            long_.execute("SELECT pg_logical_emit_message(true, 'long', 'inside the long transaction')")
            big.execute("INSERT INTO hist (acct, delta, note) SELECT g % 500 + 1, g, repeat('c', 100) "
                        "FROM generate_series(6001, 12000) g")
            other.execute("SELECT pg_logical_emit_message(false, 'nontx', 'between')")
            aborted.execute("ROLLBACK")
            _filler(other, 3000)
            big.execute("COMMIT")
            other.execute("SELECT pg_switch_wal()")
            _filler(other, 2000)
            long_.execute("UPDATE acct SET balance = balance + 1 WHERE id = 2")
            long_.execute("COMMIT")
            _filler(other, 2000)
            got, expected = run.finish(tmp)  # the open transaction is still in flight here
        assert got == expected
    catalog = tmp / "catalog.json"
    catalog.write_text(run.catalog.to_json())
    return run, catalog, tmp / "wal", expected


def _text(rows) -> bytes:
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)


def _decode(executor, run, wal, **kw):
    from waldecode.catalog import Catalog
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.spark.job import decode_spark
    from waldecode.wal.xlogreader import parse_lsn

    out = io.BytesIO()
    result = decode_spark(executor, [wal], Catalog.load(run.catalog_path), TestDecoding, out,
                          start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn),
                          segments_per_run=1, **kw)
    return out.getvalue(), result


@pytest.fixture(scope="module")
def prepared(workload):
    run, catalog, wal, expected = workload
    run.catalog_path = catalog
    return run, wal, expected


def test_workload_crosses_segments(prepared):
    run, wal, expected = prepared
    assert len(list(wal.iterdir())) >= 6
    assert any("inside the long transaction" in r for r in expected)
    assert sum(r.startswith("table public.hist: INSERT") and "bbbb" in r for r in expected) == 6000


@pytest.mark.parametrize("ranges", [1, 2, 7])
def test_ranges_in_process_equal_server(prepared, ranges, impl, monkeypatch):
    from waldecode.spark import ranges as _ranges
    from waldecode.spark.executors import LocalExecutor

    run, wal, expected = prepared
    plans = []
    real = _ranges.plan_ranges

    def keep(*a, **kw):
        plans.append(real(*a, **kw))
        return plans[-1]

    monkeypatch.setattr(_ranges, "plan_ranges", keep)
    executor = LocalExecutor()
    executor.ranges = ranges
    got, result = _decode(executor, run, wal, method="ranges")
    assert executor.method == "ranges"
    assert got == _text(expected)
    assert [(t.xid, t.first_lsn, t.nchanges) for t in result.open_transactions] == \
        [(t.xid, t.first_lsn, t.nchanges) for t in run.result.open_transactions]
    assert len(result.open_transactions) == 1
    assert len(plans[0].ranges) == ranges
    if ranges == 7:
        # a range's start falls inside a transaction that commits in it: it reads from that one's start
        assert any(r.restart < r.start for r in plans[0].ranges[1:])


def test_ranges_include_uncommitted_equal_decode(prepared):
    """The transaction in flight at the end, printed with --include-uncommitted, as decode prints it."""
    from waldecode.catalog import Catalog
    from waldecode.logical.session import decode_wal
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.spark.executors import LocalExecutor
    from waldecode.wal.xlogreader import parse_lsn

    run, wal, expected = prepared
    rows: list = []
    decode_wal([wal], Catalog.load(run.catalog_path), TestDecoding(rows.append), start_lsn=parse_lsn(run.confirmed_lsn),
               end_lsn=parse_lsn(run.end_lsn), include_uncommitted=True)
    assert any("never committed" in r for r in rows)
    executor = LocalExecutor()
    executor.ranges = 7
    got, _result = _decode(executor, run, wal, method="ranges", include_uncommitted=True)
    assert got == _text(rows)


@pytest.mark.spark
def test_ranges_through_spark_equal_server(spark, prepared, tmp_path, capfd):
    from waldecode.cli import main

    run, wal, expected = prepared
    out = tmp_path / "spark.out"
    status = main(["spark", "decode", "--master", "local[2]", "--catalog", str(run.catalog_path),
                   "--start-lsn", run.confirmed_lsn, "--end-lsn", run.end_lsn, "--segments-per-task", "1",
                   "--ranges", "7", "--output", str(out), str(wal)])
    err = capfd.readouterr().err
    assert status == 0, err
    assert "event path" not in err  # the note spark decode gives when it leaves the range path
    assert out.read_bytes() == _text(expected)
