"""``waldecode table`` against PostgreSQL's own point-in-time recovery (issue 23), for the tables that are
not simply there from the backup on: a table created between the backup and the target (its files and
its catalog rows come from the WAL alone), later dropped; and a partitioned table, whose rows are its leaf
partitions' (``SELECT *`` of it, which the oracle copies: ``COPY`` refuses a partitioned table), through
rows moved between partitions by an update of the partition key, a partition attached after the backup
with its columns in another order, a sub-partitioned branch, a partition detached and a column dropped
from the parent.  Each target's rows are the recovered cluster's, byte for byte, as multisets; where the
table does not exist at the target, one error line and nothing on stdout (tests/support/pitr.py)."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from pitr import DB, PitrPrimary, copy_lines  # noqa: E402
from waldecode.cli import main  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

BIG = "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g)"


@pytest.fixture(scope="module")
def created():
    with PitrPrimary("CREATE TABLE anchor (id int); INSERT INTO anchor VALUES (1);", "fresh") as p:
        tx = p.transaction
        tx("INSERT INTO anchor VALUES (2)")  # a target before the table exists
        tx("CREATE TABLE fresh (id int PRIMARY KEY, note text)",
           "ALTER TABLE fresh ALTER COLUMN note SET STORAGE EXTERNAL",
           "INSERT INTO fresh SELECT g, repeat('x', g) FROM generate_series(1, 50) g")
        tx(f"INSERT INTO fresh SELECT g, {BIG} FROM generate_series(51, 53) g")  # TOASTed
        tx("UPDATE fresh SET note = 'updated' WHERE id < 10", "DELETE FROM fresh WHERE id BETWEEN 46 AND 51")
        tx("DELETE FROM fresh", commit=False)
        tx("UPDATE fresh SET id = id + 100 WHERE id > 40")
        tx("DROP TABLE fresh")
        tx("INSERT INTO anchor VALUES (3)")  # a target after it is gone
        p.finish()
        yield p


@pytest.fixture(scope="module")
def partitioned():
    schema = """
    CREATE TABLE parted (id int, region text, gone int, v text) PARTITION BY LIST (region);
    CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
    CREATE TABLE parted_us PARTITION OF parted FOR VALUES IN ('us');
    INSERT INTO parted SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, g, 'v' || g
        FROM generate_series(1, 40) g;
    """
    with PitrPrimary(schema, "parted") as p:
        tx = p.transaction
        tx("UPDATE parted SET v = 'in place' WHERE id < 5")
        tx("UPDATE parted SET region = 'eu' WHERE id BETWEEN 11 AND 15 AND region = 'us'")  # moved across
        # columns in another order, attached after the backup
        tx("CREATE TABLE parted_ap (v text, gone int, region text, id int)",
           "INSERT INTO parted_ap VALUES ('ap row', 0, 'ap', 1000)",
           "ALTER TABLE parted ATTACH PARTITION parted_ap FOR VALUES IN ('ap')")
        tx("CREATE TABLE parted_sa PARTITION OF parted FOR VALUES IN ('sa', 'sb') PARTITION BY LIST (region)",
           "CREATE TABLE parted_sa1 PARTITION OF parted_sa FOR VALUES IN ('sa')",
           "CREATE TABLE parted_sb1 PARTITION OF parted_sa FOR VALUES IN ('sb')",
           "INSERT INTO parted SELECT g, CASE WHEN g % 2 = 0 THEN 'sa' ELSE 'sb' END, g, "
           f"CASE WHEN g = 2001 THEN {BIG} ELSE 's' || g END FROM generate_series(2000, 2010) g")
        tx("DELETE FROM parted WHERE id % 3 = 0")
        tx("INSERT INTO parted VALUES (3000, 'us', 1, 'rolled back')", commit=False)
        tx("ALTER TABLE parted DETACH PARTITION parted_us")
        tx("ALTER TABLE parted DROP COLUMN gone", "INSERT INTO parted VALUES (4000, 'eu', 'after drop')")
        tx("UPDATE parted SET region = 'sb' WHERE region = 'sa'")  # between sub-partitions
        p.finish()
        yield p


def _table(p: PitrPrimary, capsys, target, table: str):
    capsys.readouterr()
    status = main(["table", "--backup", str(p.backup), "--table", table, "--at", target.value,
                   "--inclusive", "on" if target.inclusive else "off", "--format", "copy", "--database", DB,
                   str(p.archive)])
    out = capsys.readouterr()
    return status, out.out.encode(), out.err.splitlines()


def _compare(p: PitrPrimary, capsys, table: str) -> dict:
    """``PitrPrimary.spread_targets``: every state of the table (before it exists, each one the
    workload made, after its drop) and every kind of target; the disagreements fail the test."""
    chosen = p.spread_targets()
    committed = [t.index for t in p.txns if t.committed]
    assert {t.last_included for t in chosen} >= {-1, *committed}
    assert {(t.kind, t.inclusive) for t in chosen} == {(k, i) for k in ("lsn", "time", "xid") for i in (True, False)}
    wrong, states, absent = [], set(), 0
    for target in chosen:
        got = p.recover(target)
        expected = p.rows_after(target.last_included)
        assert got.lines == (None if expected is None else copy_lines(expected)), \
            f"the oracle disagrees with the primary at {target}"
        status, out, err = _table(p, capsys, target, table)
        if got.lines is None:
            absent += 1
            if status == 0 or out or len(err) != 1 or "no table" not in err[0]:
                wrong.append(f"{target}: no table in recovery, waldecode: status {status}, {len(out)} bytes, {err}")
            continue
        mine = copy_lines(out)
        states.add(hash(tuple(mine)))
        if status != 0 or mine != got.lines:
            wrong.append(f"{target}: status {status} {err}; {len(mine)} rows, recovery {len(got.lines)}: "
                         f"only waldecode {sorted(set(mine) - set(got.lines))[:3]}, "
                         f"only recovery {sorted(set(got.lines) - set(mine))[:3]}")
    assert wrong == [], "\n".join(wrong)
    return {"targets": len(chosen), "states": len(states), "absent": absent}


def test_a_table_created_after_the_backup_then_dropped(created, capsys):
    seen = _compare(created, capsys, "public.fresh")
    # before its creation and after its drop there is no table; in between, several states of it
    assert seen["absent"] >= 4 and seen["states"] >= 4, seen


def test_a_partitioned_table_is_its_partitions_rows(partitioned, capsys):
    seen = _compare(partitioned, capsys, "public.parted")
    assert seen["absent"] == 0 and seen["states"] >= 6, seen
