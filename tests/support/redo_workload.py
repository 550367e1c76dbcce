"""A workload for the heap redo checks: every kind of heap and heap2 record a table sees.

``SCHEMA`` is loaded before the checkpoint redo starts from; ``workload(cluster)`` then runs, in
database ``live``: single-row inserts into existing and new tables, COPY into both, HOT updates and a
read that prunes on access, key-changing updates and rows that grow out of their pages, deletes,
TOAST values stored, updated and deleted, a checkpoint in the middle, an aborted transaction,
subtransactions rolled back and kept, INSERT ... ON CONFLICT, two sessions locking rows FOR SHARE
then an update, a row locked FOR KEY SHARE while another transaction updates it, VACUUM and
VACUUM FREEZE, rows moved to another partition, and a table whose emptied tail VACUUM truncates
before it grows again.  ``TABLES`` are its tables (their TOAST tables hold the long values of
``docs``).
"""

from __future__ import annotations

from live import DB

TABLES = ("acct", "docs", "upsert", "wide", "fresh", "bulk", "parted_lo", "parted_hi")

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance int, note text) WITH (fillfactor = 70);
CREATE TABLE docs (id int PRIMARY KEY, body text);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE upsert (k int PRIMARY KEY, v int);
CREATE TABLE wide (id int PRIMARY KEY, pad text);
CREATE TABLE parted (k int, v text) PARTITION BY RANGE (k);
CREATE TABLE parted_lo PARTITION OF parted FOR VALUES FROM (0) TO (1000);
CREATE TABLE parted_hi PARTITION OF parted FOR VALUES FROM (1000) TO (2000);
INSERT INTO parted SELECT g, 'p' || g FROM generate_series(0, 199) g;
INSERT INTO acct SELECT g, 'owner ' || g, g, NULL FROM generate_series(1, 3000) g;
INSERT INTO wide SELECT g, repeat('w', 1500) FROM generate_series(1, 40) g;
"""


def workload(c) -> None:
    with c.connect(DB) as conn:
        # single-row inserts, into an existing table and into a new one (INSERT+INIT)
        conn.execute("CREATE TABLE fresh (id int, v text)")
        for i in range(200):
            conn.execute("INSERT INTO fresh VALUES (%s, %s)", (i, "v%d" % i))
            conn.execute("INSERT INTO acct VALUES (%s, 'new', 0, NULL)", (10000 + i,))
        # COPY: multi-insert, into a new table (MULTI_INSERT+INIT) and an existing one
        conn.execute("CREATE TABLE bulk (id int, a text, b int)")
        with conn.cursor().copy("COPY bulk FROM STDIN") as cp:
            for i in range(6000):
                cp.write_row((i, "row %d" % i, i * 3))
        with conn.cursor().copy("COPY acct FROM STDIN") as cp:
            for i in range(500):
                cp.write_row((20000 + i, "copied", i, None))
        # HOT updates (balance and note are not indexed; fillfactor leaves room), then a read that
        # prunes the chains on access
        for _ in range(6):
            conn.execute("UPDATE acct SET balance = balance + 1 WHERE id % 7 = 0 AND id < 3000")
        conn.execute("SELECT count(*) FROM acct")
        # non-HOT updates: a key change, and rows that grow out of their pages (UPDATE+INIT)
        conn.execute("UPDATE acct SET id = id + 100000 WHERE id % 97 = 0 AND id < 3000")
        conn.execute("UPDATE wide SET pad = repeat('W', 3000) WHERE id % 2 = 0")
        conn.execute("DELETE FROM acct WHERE id % 13 = 0")
        # TOAST: values stored out of line, updated and deleted
        for i in range(30):
            conn.execute("INSERT INTO docs VALUES (%s, (SELECT string_agg(md5((g + %s)::text), '') "
                         "FROM generate_series(1, 200) g))", (i, i))
        conn.execute("UPDATE docs SET body = body || 'tail' WHERE id % 3 = 0")
        conn.execute("DELETE FROM docs WHERE id % 4 = 0")
        conn.execute("CHECKPOINT")  # pages touched from here on get new full-page images
        # an aborted transaction, and subtransactions rolled back and kept
        conn.execute("BEGIN")
        conn.execute("INSERT INTO acct SELECT g, 'aborted', 0, NULL FROM generate_series(30000, 30100) g")
        conn.execute("UPDATE acct SET note = 'aborted' WHERE id < 100")
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
        conn.execute("INSERT INTO acct VALUES (40000, 'sub', 0, NULL)")
        conn.execute("SAVEPOINT s1")
        conn.execute("INSERT INTO acct VALUES (40001, 'sub rolled back', 0, NULL)")
        conn.execute("DELETE FROM acct WHERE id = 101")
        conn.execute("ROLLBACK TO SAVEPOINT s1")
        conn.execute("SAVEPOINT s2")
        conn.execute("UPDATE acct SET note = 'sub kept' WHERE id = 102")
        conn.execute("RELEASE SAVEPOINT s2")
        conn.execute("COMMIT")
        # INSERT ... ON CONFLICT: speculative insertions confirmed, then conflicts updating
        for k in range(20):
            conn.execute("INSERT INTO upsert VALUES (%s, 1) ON CONFLICT (k) DO UPDATE SET v = upsert.v + 1", (k,))
        for k in range(0, 20, 2):
            conn.execute("INSERT INTO upsert VALUES (%s, 1) ON CONFLICT (k) DO UPDATE SET v = upsert.v + 1", (k,))
        conn.execute("INSERT INTO upsert VALUES (1, 1) ON CONFLICT DO NOTHING")
    # two sessions lock the same rows FOR SHARE (a multixact), then one of them updates
    with c.connect(DB) as a, c.connect(DB) as b:
        a.execute("BEGIN")
        a.execute("SELECT * FROM acct WHERE id IN (5, 6) FOR SHARE")
        b.execute("BEGIN")
        b.execute("SELECT * FROM acct WHERE id IN (5, 6) FOR SHARE")
        a.execute("COMMIT")
        b.execute("UPDATE acct SET note = 'after share' WHERE id = 5")
        b.execute("COMMIT")
        # a row updated by an open transaction, locked FOR KEY SHARE by another: the lock follows
        # the update chain (XLOG_HEAP2_LOCK_UPDATED)
        a.execute("BEGIN")
        a.execute("UPDATE acct SET note = 'updating' WHERE id = 8")
        b.execute("BEGIN")
        b.execute("SELECT * FROM acct WHERE id = 8 FOR KEY SHARE")
        a.execute("COMMIT")
        b.execute("COMMIT")
    with c.connect(DB) as conn:
        # VACUUM: prune, vacuum (second pass with indexes), visible; the catalogs' in-place updates
        conn.execute("VACUUM acct")
        conn.execute("VACUUM docs")
        conn.execute("UPDATE acct SET balance = -1 WHERE id = 9")  # clears an all-visible page
        conn.execute("VACUUM FREEZE")
        conn.execute("INSERT INTO acct VALUES (50000, 'after freeze', 0, NULL)")
        conn.execute("DELETE FROM bulk WHERE id % 5 = 0")
        conn.execute("VACUUM FREEZE bulk")
        # rows moved to another partition: the delete says so (XLH_DELETE_IS_PARTITION_MOVE)
        conn.execute("UPDATE parted SET k = k + 1000 WHERE k < 50")
        # trailing pages emptied, then cut off by VACUUM (XLOG_SMGR_TRUNCATE), then the table grows again
        conn.execute("DELETE FROM bulk WHERE id >= 1000")
        conn.execute("VACUUM bulk")
        conn.execute("INSERT INTO bulk SELECT g, 'again', 0 FROM generate_series(1, 3000) g")
