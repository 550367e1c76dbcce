"""What the Spark lane's live DDL workloads share (``test_spark_ranges_ddl``, ``test_spark_plugins_ddl``): the
tables the row changes and the DDL statements work on, and a prepared transaction made in a session of its own."""

from __future__ import annotations

from live import DB

TABLES = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int, delta numeric, note text);
CREATE TABLE keep (id int PRIMARY KEY, v text);
CREATE TABLE pt (id int PRIMARY KEY, v text);
INSERT INTO acct SELECT g, 'owner ' || g, 100 FROM generate_series(1, 500) g;
INSERT INTO keep SELECT g, 'k' || g FROM generate_series(1, 200) g;
"""


def prepare(cluster, gid: str, statements) -> None:
    """``statements`` in a transaction prepared as ``gid`` (its own session: the caller's goes on)."""
    with cluster.connect(DB, autocommit=False) as tp:
        for st in statements:
            tp.execute(st)
        tp.execute(f"PREPARE TRANSACTION '{gid}'")
        tp.commit()
