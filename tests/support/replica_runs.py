"""The replica-level tests' method (docs/replica.md, "How it is verified"): one initdb and one schema, then a
copy of the stopped data directory (the pristine copy); every run starts from that copy, at wal_level=logical
under a slot (the truth) or at wal_level=replica, so the runs write the same xids and values."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import contextmanager

import pytest

from waldecode.catalog.dsn import snapshot_from_connection


def copy_datadir(src, dst) -> None:
    """cp -a: the server's user keeps owning the files."""
    if dst.exists():
        shutil.rmtree(dst)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


def start_at(c, pristine, **settings) -> None:
    """Restart cluster ``c`` from the pristine copy with ``settings`` (e.g. wal_level) added."""
    c.stop()
    copy_datadir(pristine, c.pgdata)
    with open(c.pgdata / "postgresql.conf", "a", encoding="utf-8") as f:
        f.writelines(f"{k} = '{v}'\n" for k, v in settings.items())
    c.start()


@contextmanager
def pristine_cluster(db: str, schema: str, major: int = 15, modules=()):
    """(cluster, catalog snapshot taken after ``schema``, the pristine copy): a server of ``major`` (with the
    loadable ``modules``) whose database ``db`` holds ``schema``, stopped and copied; the cluster is stopped
    and removed at the end.  A server missing fails the test: ./dev test installs every one used."""
    from waldecode.testing.cluster import Cluster, ClusterError, find_bindir

    try:
        c = Cluster(bindir=find_bindir(major, list(modules)), settings={"wal_keep_size": "1GB"})
        c.__enter__()
    except ClusterError as e:
        pytest.fail(f"PostgreSQL {major}{' with ' + ', '.join(modules) if modules else ''} is needed "
                    f"(./dev test installs it): {e}")
    try:
        c.sql(f"CREATE DATABASE {db}")
        with c.connect(db) as conn:
            conn.execute(schema)
            catalog = snapshot_from_connection(conn)
        c.stop()
        pristine = c.base / "pristine"
        copy_datadir(c.pgdata, pristine)
        yield c, catalog, pristine
    finally:
        c.__exit__(None, None, None)
