"""The documents' commands that need only a live server (``doc_commands.LIVE``), run as written.

One throw-away PostgreSQL 15 holds the database the examples' DSNs name (``dbname=app``), with the
tables of the fixture the differential lane runs the other commands on
(``fixtures/pg15-off/interleaved``: its ``setup_sql``).  Each command is taken from the documents,
its DSN pointed at the server (host, port and user; the rest as written) and its paths and LSNs at
the fixture (``doc_commands.placeholders``), then run as a separate process:

- ``catalog --dsn`` must write a snapshot of that database whose tables have the relfilenodes the
  server itself reports;
- ``apply --dsn`` applies the fixture's WAL from its slot's confirmed position: the tables must then
  hold exactly what the fixture's workload leaves on a server, which a second database of the same
  server gets by running the workload's own statements, session by session, in their order.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from doc_commands import FIXTURE, LIVE, argv, documented, placeholders
from waldecode.catalog import Catalog

psycopg = pytest.importorskip("psycopg")
from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: E402

from waldecode.testing.cluster import Cluster, ClusterError  # noqa: E402

pytestmark = [pytest.mark.server]

META = json.loads((FIXTURE / "meta.json").read_text())
TABLES = ("il_accounts", "il_log")


def _command(prefix: str) -> str:
    """The one command of ``LIVE`` that starts with ``prefix``, shown by a document as it is classified."""
    cmds = [cmd for cmd in LIVE if cmd.startswith(prefix)]
    assert len(cmds) == 1, cmds
    assert cmds[0] in documented(), f"no document shows {cmds[0]} any more"
    return cmds[0]


def _server_dsn(cluster: Cluster, documented_dsn: str) -> str:
    """The documented DSN pointed at ``cluster``: its socket, port and superuser; dbname and the rest as written."""
    params = conninfo_to_dict(documented_dsn)
    params.update(host=str(cluster.socket_dir), port=str(cluster.port), user="postgres")
    return make_conninfo(**params)


def _run(cluster: Cluster, cmd: str, cwd, subst: dict) -> subprocess.CompletedProcess:
    args, _ = argv(cmd, subst)
    i = args.index("--dsn")
    args[i + 1] = _server_dsn(cluster, args[i + 1])
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=cwd, capture_output=True,
                          timeout=120)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return proc


def _setup(cluster: Cluster, dbname: str) -> None:
    cluster.sql(f"CREATE DATABASE {dbname}")
    with cluster.connect(dbname) as conn:
        for stmt in META["setup_sql"]:
            conn.execute(stmt["sql"])


def _rows(cluster: Cluster, dbname: str) -> dict:
    with cluster.connect(dbname) as conn:
        return {t: conn.execute(f"SELECT x::text FROM {t} x ORDER BY id").fetchall() for t in TABLES}


@pytest.fixture(scope="module")
def cluster():
    try:
        c = Cluster(15)
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    try:
        _setup(c, "app")
        yield c
    finally:
        c.__exit__(None, None, None)


def test_catalog_dsn(cluster, tmp_path):
    # the snapshot is written where the example says, in the working directory: not onto the
    # fixture's snapshot, which the other examples' app-catalog.json stands for
    subst = {k: v for k, v in placeholders().items() if k != "app-catalog.json"}
    proc = _run(cluster, _command("waldecode catalog --dsn "), tmp_path, subst)
    assert proc.returncode == 0, proc.stderr.decode()
    catalog = Catalog.load(tmp_path / "app-catalog.json")
    assert catalog.database == "app"
    by_name = {(r.nspname, r.relname): r for r in catalog.relations.values()}
    with cluster.connect("app") as conn:
        for table in TABLES:
            filenode = conn.execute("SELECT pg_relation_filenode(%s::regclass)", (table,)).fetchone()[0]
            assert by_name[("public", table)].relfilenode == filenode, table


def test_apply_dsn(cluster, tmp_path):
    # what the fixture's workload leaves on a server: its statements run again, each session on its own
    # connection, in the order the fixture's generator ran them
    _setup(cluster, "expected")
    sessions = {}
    try:
        for stmt in META["sql"]:
            conn = sessions.get(stmt["session"]) or sessions.setdefault(stmt["session"], cluster.connect("expected"))
            conn.execute(stmt["sql"])
    finally:
        for conn in sessions.values():
            conn.close()
    expected = _rows(cluster, "expected")
    assert expected != _rows(cluster, "app")   # the workload changes something to apply

    proc = _run(cluster, _command("waldecode apply --dsn "), tmp_path, placeholders())
    assert proc.returncode == 0, proc.stderr.decode()
    assert _rows(cluster, "app") == expected
