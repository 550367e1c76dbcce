"""``waldecode apply``: a subscriber's rules, resumable through a replication origin.

A source database and a copy of it made before a workload (CREATE DATABASE … TEMPLATE) on a
throw-away PostgreSQL 15; the workload's WAL is applied to the copy by ``waldecode apply``
as a separate process, SIGKILLed at chosen points (after a target commit, before one) and
run again: the copy must end with exactly the source's rows — no transaction lost, none
applied twice (an insert-only table without a key would show a doubled row) — and the
origin's progress at the last commit.  A row missing on the target makes its UPDATE and
DELETE skipped and logged; a duplicate key stops the run with the transaction, LSN and
relation named, the origin left before it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from live import DB, SlotRun, live_cluster
from waldecode.logical.session import decode_wal
from waldecode.output.sql import SqlOutput
from waldecode.pg.lsn import format_lsn, parse_lsn

pytestmark = [pytest.mark.server]

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2));
CREATE TABLE journal (at_step int, note text);  -- no key: a doubled insert shows
CREATE TABLE gone (id int PRIMARY KEY, v text);
INSERT INTO acct SELECT g, 'owner ' || g, g * 10 FROM generate_series(1, 10) g;
INSERT INTO gone SELECT g, 'v' || g FROM generate_series(1, 3) g;
"""
TABLES = ("acct", "journal", "gone")


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_replication_slots=5) as c:
        yield c


def contents(cluster, db: str) -> dict:
    with cluster.connect(db) as conn:
        return {t: sorted(r[0] for r in conn.execute(f"SELECT x::text FROM {t} x").fetchall()) for t in TABLES}


def dsn(cluster, db: str) -> str:
    return f"host={cluster.socket_dir} port={cluster.port} user=postgres dbname={db}"


def workload(cluster, base: int, steps: int = 8) -> None:
    with cluster.connect(DB) as conn:
        for i in range(steps):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO journal VALUES (%s, %s)", (base + i, f"step {i}"))
            conn.execute("UPDATE acct SET balance = balance + %s WHERE id = %s", (i, i % 5 + 1))
            conn.execute("INSERT INTO acct VALUES (%s, %s, %s)", (base + i, f"new {i}", i))
            conn.execute("COMMIT")
        conn.execute("UPDATE gone SET v = 'changed' WHERE id = 1")
        conn.execute("DELETE FROM gone WHERE id = 2")


def apply_cmd(cluster, run: SlotRun, tmp_path, target: str, catalog_file) -> list[str]:
    return [sys.executable, "-m", "waldecode.cli", "apply", "--dsn", dsn(cluster, target), "--catalog",
            str(catalog_file), "--start-lsn", run.confirmed_lsn, "--end-lsn", format_lsn(run.result.end_lsn),
            str(tmp_path / "wal")]


def prepare(cluster, tmp_path, target: str, base: int):
    cluster.sql(f"CREATE DATABASE {target} TEMPLATE {DB}")
    run = SlotRun(cluster)
    workload(cluster, base)
    got, expected = run.finish(tmp_path)
    assert got == expected
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(run.catalog.to_json())
    return run, catalog_file


def origin_progress(cluster, db: str) -> str | None:
    with cluster.connect(db) as conn:
        row = conn.execute("SELECT pg_replication_origin_progress('waldecode', false)::text").fetchone()
    return row[0]


def test_killed_and_resumed_applies_each_transaction_once(cluster, tmp_path):
    run, catalog_file = prepare(cluster, tmp_path, "target_kill", 100)
    with cluster.connect("target_kill") as conn:
        conn.execute("DELETE FROM gone WHERE id IN (1, 2)")  # the workload's UPDATE and DELETE find nothing
    cmd = apply_cmd(cluster, run, tmp_path, "target_kill", catalog_file)
    for point in ("apply-after-commit:3", "apply-before-commit:2", "apply-after-commit:1"):
        out = subprocess.run(cmd, capture_output=True, env=dict(os.environ, WALDECODE_CRASH_AT=point))
        assert out.returncode == -signal.SIGKILL, (point, out.stderr.decode())
    out = subprocess.run(cmd, capture_output=True)
    assert out.returncode == 0, out.stderr.decode()
    err = out.stderr.decode()
    assert "skipped: the row is not on the target" in err and "applied before (origin 'waldecode')" in err
    source, target = contents(cluster, DB), contents(cluster, "target_kill")
    assert target["acct"] == source["acct"] and target["journal"] == source["journal"]
    assert target["gone"] == ["(3,v3)"]  # the skipped changes' rows were not there to change
    # the origin stands at the last transaction's commit (as the sql plugin names it)
    lines: list[str] = []
    decode_wal([tmp_path / "wal"], run.catalog, SqlOutput(lines.append), start_lsn=parse_lsn(run.confirmed_lsn),
               end_lsn=run.result.end_lsn)
    last_commit = [ln.split(" committed at ")[1].split()[0] for ln in lines if " committed at " in ln][-1]
    assert origin_progress(cluster, "target_kill") == last_commit
    # A rerun has nothing left to do
    out = subprocess.run(cmd, capture_output=True)
    assert out.returncode == 0 and "0 transaction(s) applied" in out.stderr.decode(), out.stderr.decode()
    assert contents(cluster, "target_kill") == target
    # --dry-run changes nothing and says what it would do
    out = subprocess.run(cmd + ["--dry-run", "--origin", "fresh"], capture_output=True)
    assert out.returncode == 0 and b"would be applied" in out.stdout and b"INSERT INTO public.journal" in out.stdout
    assert contents(cluster, "target_kill") == target


def test_a_constraint_violation_stops_with_the_transaction_named(cluster, tmp_path):
    run, catalog_file = prepare(cluster, tmp_path, "target_dup", 200)
    with cluster.connect("target_dup") as conn:
        conn.execute("INSERT INTO acct VALUES (203, 'already here', 0)")  # the 4th transaction's insert
    cmd = apply_cmd(cluster, run, tmp_path, "target_dup", catalog_file)
    out = subprocess.run(cmd, capture_output=True)
    err = out.stderr.decode()
    assert out.returncode != 0
    assert "was not applied: stopped at its INSERT at" in err and "of public.acct" in err and "duplicate key" in err
    with cluster.connect("target_dup") as conn:
        steps = [r[0] for r in conn.execute("SELECT at_step FROM journal WHERE at_step >= 200 ORDER BY 1").fetchall()]
    assert steps == [200, 201, 202]  # the three transactions before it, each once; nothing of the fourth
    assert origin_progress(cluster, "target_dup") is not None
