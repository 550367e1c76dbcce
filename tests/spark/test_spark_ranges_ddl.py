"""The range path of ``spark decode`` through catalog changes: ranges start from the catalog in force.

A throw-away PostgreSQL 15 (1 MB segments) runs row changes with DDL every few hundred kB
(ADD/DROP/RENAME COLUMN, ALTER COLUMN TYPE with a rewrite, CREATE/DROP TABLE, TRUNCATE, VACUUM
FULL of a user table and of a mapped catalog), a transaction open across DDL commits and segment
boundaries, and DDL with rows and a rolled-back savepoint in one transaction.  Phase 1 sees the
catalog change (commits with invalidations), the catalog pass collects the records the catalog
history needs on the executors, the driver builds the history of the whole WAL read once, and
every range decodes each transaction with the catalog in force for it.  The output must be the
server's own test_decoding slot's, for 1, 2 and 7 ranges of one segment per task, in this process
under both implementations and through Spark, without leaving the range path.
"""

from __future__ import annotations

import io
import json

import pytest

from ddl_workload import TABLES, prepare
from live import SlotRun, live_cluster

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = TABLES

DDL = [
    "ALTER TABLE hist ADD COLUMN extra text DEFAULT 'x'",
    "ALTER TABLE hist RENAME COLUMN note TO remark",
    "ALTER TABLE hist ALTER COLUMN delta TYPE float8",  # rewrites the table
    "CREATE TABLE later (id int PRIMARY KEY, v text)",
    "VACUUM FULL keep",
    "VACUUM FULL pg_class",
    "ALTER TABLE acct DROP COLUMN owner",
    "TRUNCATE later",
    "DROP TABLE later",
]


def _filler(conn, n: int, batch: int = 200) -> None:
    """About n * 330 bytes of WAL in committed transactions of ``batch`` rows."""
    for i in range(0, n, batch):
        conn.execute("INSERT INTO hist (acct, delta) SELECT g %% 500 + 1, g FROM generate_series(%s::int, %s::int) g",
                     (i, i + batch - 1))
        conn.execute("UPDATE keep SET v = v || '.' WHERE id = %s", (i // batch % 200 + 1,))


@pytest.fixture(scope="module")
def workloads(tmp_path_factory):
    """{two_phase: (run, WAL directory, the server's rows)}: one workload, a test_decoding slot without and
    one with two-phase decoding."""
    tmp = tmp_path_factory.mktemp("spark-ranges-ddl")
    with live_cluster(SCHEMA, lock_timeout="20s", max_prepared_transactions=5) as c:
        run = SlotRun(c)
        run_tp = SlotRun(c, two_phase=True)
        with c.connect("live") as conn, c.connect("live", autocommit=False) as long_txn:
            long_txn.execute("INSERT INTO keep VALUES (1000, 'before the first DDL')")
            # prepared across segments and DDL commits: its COMMIT PREPARED, ranges later
            prepare(c, "across", ["INSERT INTO pt VALUES (1, 'prepared early')",
                                   "INSERT INTO pt VALUES (2, 'and its second row')"])
            for i, ddl in enumerate(DDL):
                _filler(conn, 3000)
                conn.execute(ddl)
                if i == 2:
                    conn.execute("COMMIT PREPARED 'across'")
                    prepare(c, "rolled", ["INSERT INTO pt VALUES (3, 'prepared, rolled back')"])
                if i == 5:
                    conn.execute("ROLLBACK PREPARED 'rolled'")
                    prepare(c, "open", ["INSERT INTO pt VALUES (4, 'still prepared at the end')"])
                if i == 3:
                    conn.execute("INSERT INTO later VALUES (1, 'in the new table')")
                    long_txn.execute("INSERT INTO keep VALUES (1001, 'after three DDL')")
                    long_txn.commit()
                if i == 4:
                    conn.execute("BEGIN")
                    conn.execute("ALTER TABLE acct ADD COLUMN c int DEFAULT 4")
                    conn.execute("UPDATE acct SET c = c + 1 WHERE id <= 3")
                    conn.execute("SAVEPOINT s")
                    conn.execute("UPDATE acct SET balance = -1")
                    conn.execute("ROLLBACK TO SAVEPOINT s")
                    conn.execute("INSERT INTO keep VALUES (2000, 'in the DDL transaction')")
                    conn.execute("COMMIT")
            _filler(conn, 1500)
        out = {}
        for r, two_phase in ((run, False), (run_tp, True)):
            d = tmp / ("two-phase" if two_phase else "commit-prepared")
            d.mkdir()
            got, expected = r.finish(d)
            assert got == expected
            r.catalog_path = d / "catalog.json"
            r.catalog_path.write_text(r.catalog.to_json())
            out[two_phase] = (r, d / "wal", expected)
        c.sql("ROLLBACK PREPARED 'open'", dbname="live")
    return out


@pytest.fixture(params=[False, True], ids=["commit-prepared", "two-phase"])
def prepared(request, workloads):
    return workloads[request.param]


def _text(rows) -> bytes:
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)


def test_workload_changes_the_catalog_across_segments(prepared):
    run, wal, expected = prepared
    assert len(list(wal.iterdir())) >= 6
    assert run.decoder.history.timeline.commit_lsns
    assert any("remark[text]" in r for r in expected) and any("extra[text]:'x'" in r for r in expected)
    assert any("after three DDL" in r for r in expected)
    assert any("prepared early" in r for r in expected)
    assert any(r.startswith("COMMIT PREPARED 'across'") for r in expected) == run.two_phase
    assert any(r.startswith("ROLLBACK PREPARED 'rolled'") for r in expected) == run.two_phase
    assert any("still prepared at the end" in r for r in expected) == run.two_phase


@pytest.mark.parametrize("ranges", [1, 2, 7])
def test_ranges_through_ddl_in_process_equal_server(prepared, ranges, impl, monkeypatch):
    from waldecode.catalog import Catalog
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.spark import ranges as _ranges
    from waldecode.spark.executors import LocalExecutor
    from waldecode.spark.job import decode_spark
    from waldecode.wal.xlogreader import parse_lsn

    run, wal, expected = prepared
    histories = []
    real = _ranges.catalog_history

    def keep(*a, **kw):
        histories.append(real(*a, **kw))
        return histories[-1]

    monkeypatch.setattr(_ranges, "catalog_history", keep)
    executor = LocalExecutor()
    executor.ranges = ranges
    passes = []
    catalog_records = executor.catalog_records
    executor.catalog_records = lambda scan, nodes: passes.append(nodes) or catalog_records(scan, nodes)
    out = io.BytesIO()
    result = decode_spark(executor, [wal], Catalog.load(run.catalog_path), TestDecoding, out,
                          start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn),
                          two_phase=run.two_phase, segments_per_run=1, method="ranges")
    assert executor.method == "ranges"
    assert out.getvalue() == _text(expected)
    assert result.warnings == []
    # the catalog pass read again once VACUUM FULL pg_class gave the catalog a new relfilenode; its history
    # changed the catalog where the single process's did
    assert len(histories) == 2
    assert histories[-1].timeline.commit_lsns == run.decoder.history.timeline.commit_lsns
    # the first history from the records phase 1 took in its own read; only the second read again
    assert len(passes) == 1


@pytest.mark.spark
def test_ranges_through_ddl_by_spark_equal_server(spark, prepared, tmp_path, capfd):
    from waldecode.cli import main

    run, wal, expected = prepared
    out = tmp_path / "spark.out"
    status = main(["spark", "decode", "--master", "local[2]", "--catalog", str(run.catalog_path),
                   "--start-lsn", run.confirmed_lsn, "--end-lsn", run.end_lsn, "--segments-per-task", "1",
                   "--ranges", "7", "--output", str(out), "--timings", str(tmp_path / "timings.json"), str(wal)]
                  + (["--two-phase"] if run.two_phase else []))
    err = capfd.readouterr().err
    assert status == 0, err
    assert "event path" not in err  # the note spark decode gives when it leaves the range path
    assert out.read_bytes() == _text(expected)
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert timings["method"] == "ranges" and timings["ranges"] == 7
    assert {"context", "phase1", "catalog_pass", "catalog_history", "ranges"} <= set(timings["phases"])
    assert all(v >= 0 for v in timings["phases"].values()) and timings["phases"]["ranges"] > 0


@pytest.mark.spark
@pytest.mark.parametrize("on_driver", [0, 3, 99])
def test_phase1_reads_on_the_driver_while_the_context_starts(spark, workloads, on_driver):
    """``SparkExecutor.spans`` on a context still starting (``PendingContext``): the driver reads runs in
    order until it is ready, the tasks read the rest; the spans are those of reading every run in one
    process, with the catalog's records, whatever the split."""
    from waldecode.catalog import Catalog
    from waldecode.spark import plan as _plan
    from waldecode.spark.context import PendingContext, local_slots
    from waldecode.spark.executors import LocalExecutor, SparkExecutor
    from waldecode.spark.job import plan_scan
    from waldecode.wal.segments import discover

    class Starting(PendingContext):
        def __init__(self, checks: int):
            self.master, self.confs, self.checks = "local[2]", {}, checks

        def ready(self):
            self.checks -= 1
            return self.checks < 0

        def get(self, warmed=False):
            return spark.sparkContext

    run, wal = workloads[False][:2]
    catalog = Catalog.load(run.catalog_path)
    segments = discover([wal], None)
    scan = plan_scan(segments, None, None, 1, catalog.database_oid, frozenset())
    nodes = _plan.tracked_relfilenodes(catalog)
    executor = SparkExecutor(Starting(on_driver))
    assert executor.slots == local_slots("local[2]") == 2
    got = executor.spans(scan, nodes)
    assert executor.driver_runs == min(on_driver, len(scan.runs))
    want = LocalExecutor().spans(scan, nodes)
    assert [vars(s) for s in got] == [vars(s) for s in want]
    assert any(s.catalog_records for s in got)


@pytest.mark.spark
@pytest.mark.parametrize("after", [0, 2, 99])
def test_ranges_decoded_on_the_driver_while_the_context_starts(spark, prepared, tmp_path, after):
    """``SparkExecutor.decode_ranges`` on a context still starting: the driver decodes ranges from the first
    until the context is ready (here: once it has decoded ``after`` of them; never, for 99), the job takes
    the rest.  The output is the server's whatever the split."""
    from waldecode.catalog import Catalog
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.spark.context import PendingContext
    from waldecode.spark.executors import SparkExecutor
    from waldecode.spark.job import decode_spark
    from waldecode.wal.xlogreader import parse_lsn

    class Starting(PendingContext):
        def __init__(self):
            self.master, self.confs = "local[2]", {}

        def ready(self):  # up once the driver has written ``after`` ranges' summaries
            return len(list(tmp_path.rglob("*.done"))) >= after

        def get(self, warmed=False):
            return spark.sparkContext

    run, wal, expected = prepared
    executor = SparkExecutor(Starting(), ranges=7)
    out = io.BytesIO()
    decode_spark(executor, [wal], Catalog.load(run.catalog_path), TestDecoding, out,
                 start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn), two_phase=run.two_phase,
                 segments_per_run=1, method="ranges", parts_dir=str(tmp_path))
    assert executor.method == "ranges"
    assert out.getvalue() == _text(expected)
    tasks = executor.timings.range_tasks
    assert len(tasks) > 2  # as many as the runs' starts allow
    assert executor.driver_ranges == min(after, len(tasks))
    assert [t["on_driver"] for t in tasks] == [i < executor.driver_ranges for i in range(len(tasks))]


def test_local_slots():
    from waldecode.spark.context import local_slots

    assert [local_slots(m) for m in ("local", "local[3]", "local[2,4]", "spark://h:7077", "local[x]")] == \
        [1, 3, 2, None, None]
    assert local_slots("local[*]") >= 1


@pytest.mark.parametrize("where", ["middle", "last range"])
def test_a_damaged_record_ends_the_output_where_decode_ends_it(workloads, tmp_path, where, monkeypatch):
    """A record with a wrong CRC (phase 1 and the catalog pass frame without checking CRCs): in a range
    before the last, that range stops short and the run goes to the event path; in the last range, the
    ranges end there.  Either way the output and the stop are decode's."""
    from damaged_wal import with_bad_crc
    from waldecode.catalog import Catalog
    from waldecode.logical.session import decode_wal
    from waldecode.output.base import OutputWriter
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.spark import ranges as _ranges
    from waldecode.spark.executors import LocalExecutor
    from waldecode.spark.job import decode_spark
    from waldecode.wal.xlogreader import parse_lsn

    run, wal, _expected = workloads[False]
    plans = []
    real = _ranges.plan_ranges
    monkeypatch.setattr(_ranges, "plan_ranges", lambda *a, **kw: plans.append(real(*a, **kw)) or plans[-1])
    kw = dict(start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn), segments_per_run=1)
    executor = LocalExecutor()
    executor.ranges = 7
    decode_spark(executor, [wal], Catalog.load(run.catalog_path), TestDecoding, io.BytesIO(), **kw)
    starts = [r.start for r in plans[0].ranges]
    lo, hi = (starts[2], starts[3]) if where == "middle" else (starts[-1], parse_lsn(run.end_lsn))
    bad, bad_lsn = with_bad_crc(wal, tmp_path, lo, hi)

    blocks: list = []
    writer = OutputWriter(blocks.append)
    single = decode_wal([bad], Catalog.load(run.catalog_path), TestDecoding(output=writer),
                        start_lsn=kw["start_lsn"], end_lsn=kw["end_lsn"])
    writer.flush()
    assert (single.stop.kind, single.stop.lsn) == ("invalid", bad_lsn)
    out = io.BytesIO()
    result = decode_spark(executor, [bad], Catalog.load(run.catalog_path), TestDecoding, out, **kw)
    assert (result.stop.kind, result.stop.lsn) == ("invalid", bad_lsn)
    assert out.getvalue() == b"".join(bytes(b) for b in blocks)
    assert executor.method == ("events" if where == "middle" else "ranges")


@pytest.mark.spark
def test_ranges_through_ddl_on_a_standalone_cluster_equal_server(standalone, workloads, tmp_path):
    """The same past one machine: a master and a worker on 127.0.0.1 (conftest.standalone), spark decode in
    a process of its own, with two-phase decoding."""
    import subprocess
    import sys

    run, wal, expected = workloads[True]
    out = tmp_path / "spark.out"
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "decode", "--master", standalone.url,
                           "--catalog", str(run.catalog_path), "--start-lsn", run.confirmed_lsn, "--end-lsn",
                           run.end_lsn, "--segments-per-task", "1", "--ranges", "7", "--two-phase",
                           "--output", str(out), str(wal)], env=standalone.env, capture_output=True, timeout=600)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    assert "event path" not in err
    assert out.read_bytes() == _text(expected)
