"""PostgreSQL's catalog rules, stated once: the history through the WAL agrees with the server.

Two copies of the same rule had drifted apart (the catalog history's own encoding lookup and
search_path splitting, against ``--datadir``'s): catalog names of a database in a single-byte
encoding other than LATIN1 came out of the WAL history decoded as UTF-8, and an unquoted
``search_path = Public`` was not folded to lower case.  Each case is checked against the
server: the names a ``--dsn`` snapshot reads after the DDL, and the rows a real slot prints.
"""

from __future__ import annotations

import pytest

from live import SlotRun, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection

pytestmark = [pytest.mark.server]


@pytest.fixture(scope="module")
def cluster():
    with live_cluster("CREATE TABLE seed (id int PRIMARY KEY)", max_replication_slots=10) as c:
        yield c



@pytest.mark.parametrize("encoding,name", [("WIN1252", "café_€"), ("KOI8R", "таблица"),
                                           ("ISO_8859_5", "данные")])
def test_catalog_names_of_a_single_byte_database_come_out_as_the_server_names_them(cluster, tmp_path,
                                                                                   encoding, name):
    db = f"enc_{encoding.lower()}"
    cluster.sql(f"CREATE DATABASE {db} ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    with cluster.connect(db) as conn:
        conn.execute("CREATE TABLE seed (id int PRIMARY KEY)")
    run = SlotRun(cluster, dbname=db)
    run.sql(f'CREATE TABLE "{name}" (id int PRIMARY KEY, "{name}_col" text)',
            f"INSERT INTO \"{name}\" VALUES (1, 'x')")
    run.finish(tmp_path)
    with cluster.connect(db) as conn:
        after = snapshot_from_connection(conn)
    rel = next(r for r in after.relations.values() if r.relname == name)
    view = run.decoder.history.view(2 ** 63, 0)
    got = view.relation(rel.oid)
    assert got is not None
    assert (got.relname, [a.attname for a in got.attributes]) == (name, ["id", f"{name}_col"])



def test_an_unquoted_search_path_is_folded_to_lower_case(tmp_path):
    """search_path = 'Public' in postgresql.conf names the schema public (SplitIdentifierString folds
    unquoted names): a type created there in the range is visible, so format_type prints it
    unqualified, as the server's slot does."""
    with live_cluster("CREATE TABLE seed (id int PRIMARY KEY)", search_path="Public") as c:
        run = SlotRun(c)
        assert run.catalog.settings["search_path"] == "Public"
        run.sql("CREATE TYPE public.feeling AS ENUM ('calm', 'stormy')",
                "CREATE TABLE public.moods (id int PRIMARY KEY, f feeling)",
                "INSERT INTO moods VALUES (1, 'calm')")
        got, expected = run.finish(tmp_path)
    assert any("f[feeling]:'calm'" in row for row in expected), expected
    assert got == expected
