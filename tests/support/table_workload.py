"""The workload ``waldecode table`` is compared with PostgreSQL's point-in-time recovery on (issue 23).

``SCHEMA`` is the table ``orders`` as backed up; ``workload(p)`` runs, on a ``pitr.PitrPrimary``
after its base backup, about 30 transactions whose ends are recovery targets: inserts, HOT and
non-HOT updates, deletes, TOASTed values (stored out of line, compressed out of line and inline,
then updated and deleted), a rolled-back transaction, subtransactions rolled back and released, a
row locked FOR UPDATE, two sessions holding FOR SHARE (a locker-only multixact), a FOR KEY SHARE
locker open while a row is updated (a multixact with an updater), a chain of HOT updates then a read
that prunes, VACUUM, VACUUM FREEZE, a column added with a default and one dropped, a rewrite (ALTER
TABLE ... TYPE), VACUUM FULL and a TRUNCATE; two segment switches in the middle.  Used by
tests/live/test_table_as_of.py (PostgreSQL 15) and test_table_as_of_versions.py (16, 18).
"""

from __future__ import annotations

from pitr import DB, PitrPrimary

SCHEMA = """
CREATE TABLE orders (id int PRIMARY KEY, customer text, amount numeric(10,2), note text, gone int);
ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTERNAL;
INSERT INTO orders SELECT g, 'c' || g, g * 1.5, NULL, g FROM generate_series(1, 60) g;
INSERT INTO orders VALUES (61, E'tab\\there\\nnewline \\\\ backslash', 0, E'\\x01ctl', 0);
"""

BIG = "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, {n}) g)"


def workload(p: PitrPrimary) -> None:
    tx = p.transaction
    tx("INSERT INTO orders SELECT g, 'c' || g, g * 1.5, NULL, g FROM generate_series(62, 120) g")
    tx("UPDATE orders SET amount = amount + 1 WHERE id % 3 = 0")  # HOT: no indexed column
    tx("DELETE FROM orders", commit=False)
    tx("DELETE FROM orders WHERE id BETWEEN 5 AND 12")
    tx("SAVEPOINT a", "INSERT INTO orders VALUES (500, 'lost', 1, NULL, 0)", "ROLLBACK TO SAVEPOINT a",
       "INSERT INTO orders VALUES (501, 'kept', 2, NULL, 0)", "SAVEPOINT b",
       "UPDATE orders SET customer = 'sub' WHERE id = 1", "RELEASE SAVEPOINT b")
    tx("UPDATE orders SET id = id + 1000 WHERE id BETWEEN 30 AND 35")  # non-HOT: the key changes
    tx(f"INSERT INTO orders VALUES (600, 'toast', 3, {BIG.format(n=300)}, 0)",
       f"INSERT INTO orders VALUES (601, 'toast compressed', 3, repeat('abc', 5000), 0)")
    tx("ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTENDED",
       "INSERT INTO orders VALUES (602, 'inline compressed', 3, repeat('xyz', 1000), 0)")
    tx("SELECT * FROM orders WHERE id = 40 FOR UPDATE")  # a committed locker-only xmax
    # two sessions FOR SHARE: a locker-only multixact on rows 41 and 42, held across transactions
    a, b = p.cluster.connect(DB), p.cluster.connect(DB)
    try:
        for s in (a, b):
            s.execute("BEGIN")
            s.execute("SELECT * FROM orders WHERE id IN (41, 42) FOR SHARE")
        tx("UPDATE orders SET customer = 'while locked' WHERE id = 43")
        for s in (a, b):
            s.execute("COMMIT")
        # a key-share locker open while the row is updated: a multixact with an updater
        a.execute("BEGIN")
        a.execute("SELECT * FROM orders WHERE id = 44 FOR KEY SHARE")
        tx("UPDATE orders SET customer = 'multi updated' WHERE id = 44")
        tx("UPDATE orders SET customer = 'multi updated twice' WHERE id = 44", commit=False)
        a.execute("COMMIT")
    finally:
        a.close()
        b.close()
    tx(f"UPDATE orders SET note = {BIG.format(n=250)} WHERE id = 600")  # a new TOAST value, the old one dead
    tx("DELETE FROM orders WHERE id = 601")
    for i in range(4):  # a chain of HOT updates on one page, then a read that prunes it
        tx(f"UPDATE orders SET amount = amount + {i} WHERE id = 50")
    p.outside("SELECT pg_switch_wal()")  # a segment of its own in the middle, for the missing-segment test
    p.outside("SELECT count(*) FROM orders", "VACUUM orders")
    tx("DELETE FROM orders WHERE id % 2 = 1 AND id < 100", "INSERT INTO orders VALUES (700, 'last', 4, NULL, 0)")
    p.outside("VACUUM FREEZE orders")
    tx("ALTER TABLE orders ADD COLUMN flag text DEFAULT 'dflt'", "ALTER TABLE orders DROP COLUMN gone")
    tx("INSERT INTO orders VALUES (701, 'after add', 5, NULL, 'own')")
    tx("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(12,3)")  # a rewrite: a new relfilenode
    tx("UPDATE orders SET customer = 'after rewrite' WHERE id = 2")
    p.outside("VACUUM FULL orders")
    tx("UPDATE orders SET customer = 'after vacuum full' WHERE id = 3")
    p.outside("SELECT pg_switch_wal()")  # another: a gap after a target is no concern
    tx("TRUNCATE orders", "INSERT INTO orders VALUES (800, 'after truncate', 5, NULL, 'x')")
    tx("INSERT INTO orders VALUES (801, 'the end', 6, NULL, 'y')")
    tx("INSERT INTO orders VALUES (802, 'the very end', 7, NULL, 'z')")
