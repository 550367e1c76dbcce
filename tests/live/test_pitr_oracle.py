"""The oracle of issue 23 at work: PostgreSQL's own point-in-time recovery, target by target.

tests/support/pitr.py starts a PostgreSQL 15 primary that archives its WAL, takes a plain base backup
before the workload, and records, per transaction, what recovery can be told to stop at and the
table as the primary holds it afterwards.  Here the workload (inserts, HOT and non-HOT updates,
deletes, a rolled-back transaction, subtransactions rolled back and released, a TOASTed value, a
VACUUM, a rewrite by ALTER TABLE ... TYPE, a TRUNCATE) runs
once, then the backup is recovered to targets of each kind (``recovery_target_lsn``, ``_time``,
``_xid``; inclusive on and off): each recovered and promoted copy's ``COPY`` must hold, as a
multiset, exactly the rows the primary held after the last transaction the target includes, and
the rows must differ between targets.  Targets recovery cannot reach (after the archive's end,
before the backup is consistent, an xid that never ended) fail with PostgreSQL's own FATAL line.
"""

from __future__ import annotations

import time

import pytest

psycopg = pytest.importorskip("psycopg")

from pitr import PitrPrimary, RecoveryFailed, Target, copy_lines  # noqa: E402
from waldecode.pg.lsn import format_lsn  # noqa: E402
from waldecode.redo.backup_label import read_backup_label  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE orders (id int PRIMARY KEY, customer text, amount numeric(10,2), note text);
ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTERNAL;
INSERT INTO orders SELECT g, 'c' || g, g * 1.5, NULL FROM generate_series(1, 10) g;
"""

# One transaction each; (statements, commit)
WORKLOAD = [
    (["INSERT INTO orders SELECT g, 'c' || g, g * 1.5, NULL FROM generate_series(11, 40) g"], True),
    (["UPDATE orders SET amount = amount + 1 WHERE id % 3 = 0"], True),  # HOT: no indexed column
    (["DELETE FROM orders"], False),
    (["DELETE FROM orders WHERE id BETWEEN 5 AND 12"], True),
    (["SAVEPOINT a", "INSERT INTO orders VALUES (100, 'lost', 1, NULL)", "ROLLBACK TO SAVEPOINT a",
      "INSERT INTO orders VALUES (101, 'kept', 2, NULL)", "SAVEPOINT b",
      "UPDATE orders SET customer = 'sub' WHERE id = 1", "RELEASE SAVEPOINT b"], True),
    (["UPDATE orders SET id = id + 1000 WHERE id BETWEEN 30 AND 35"], True),  # non-HOT: the key changes
    (["INSERT INTO orders VALUES (200, 'toast', 3, (SELECT string_agg(md5(g::text), '') "
      "FROM generate_series(1, 200) g))"], True),
    (["DELETE FROM orders WHERE id % 2 = 1", "INSERT INTO orders VALUES (300, 'last', 4, NULL)"], True),
    ("VACUUM orders", None),  # pruning and vacuum records, no target
    (["ALTER TABLE orders ALTER COLUMN amount TYPE numeric(12,3)"], True),  # a rewrite: a new relfilenode
    (["TRUNCATE orders", "INSERT INTO orders VALUES (400, 'after truncate', 5, NULL)"], True),
    (["INSERT INTO orders VALUES (401, 'the end', 6, NULL)"], True),
]


@pytest.fixture(scope="module")
def primary():
    with PitrPrimary(SCHEMA, "orders") as p:
        for statements, commit in WORKLOAD:
            if commit is None:
                p.outside(statements)
                continue
            p.transaction(*statements, commit=commit)
            time.sleep(0.01)  # commit timestamps well apart from the clock readings between them
        p.finish()
        yield p


def test_workload_recorded(primary):
    """What the targets stand on: one commit (or abort) record per transaction, in order, after the
    backup, with the table changing from one committed transaction to the next."""
    lsns = [t.lsn for t in primary.txns]
    assert lsns == sorted(lsns) and lsns[0] > primary.backup_end_lsn
    assert all(t.lsn < t.end_lsn for t in primary.txns)
    assert [t.committed for t in primary.txns] == [c for _, c in WORKLOAD if c is not None]
    committed = [t for t in primary.txns if t.committed]
    assert all(t.time < t.after for t in committed)
    rows = [primary.backup_rows] + [t.rows for t in committed]
    assert all(a != b for a, b in zip(rows, rows[1:]))
    # the rolled-back transaction left the rows as they were
    aborted = primary.txns[2]
    assert not aborted.committed and aborted.rows == primary.txns[1].rows


def _check(primary, kind: str, report: list) -> None:
    targets = [t for t in primary.targets(every=2) if t.kind == kind]
    assert len(targets) >= 6
    wrong = []
    expected_counts = set()
    for target in targets:
        got = primary.recover(target)
        expected = primary.rows_after(target.last_included)
        expected_counts.add(len(copy_lines(expected)))
        report.append(f"{target}: {len(got.lines)} rows in {got.seconds:.2f} s ({got.stopping})")
        if got.lines != copy_lines(expected):
            wrong.append(f"{target}: {len(got.lines)} rows, expected {len(copy_lines(expected))} "
                         f"(those after transaction {target.last_included}); {got.stopping}")
    print("\n".join(report))
    assert wrong == []
    # the targets tell apart different states of the table
    assert len(expected_counts) >= 3, expected_counts


@pytest.mark.parametrize("kind", ["lsn", "time", "xid"])
def test_recovery_to_targets(primary, kind):
    """Recovery to each target shows exactly the rows committed before it, inclusive on and off."""
    _check(primary, kind, [])


def test_inclusive_matters(primary):
    """At a commit's own LSN, time and xid, inclusive on and off differ by exactly that transaction."""
    t = primary.txns[3]
    for kind, value in (("lsn", format_lsn(t.lsn)), ("time", t.time), ("xid", str(t.xid))):
        on = primary.recover(Target(kind, value, True, t.index))
        off = primary.recover(Target(kind, value, False, t.index - 1))
        assert on.lines == copy_lines(t.rows), kind
        assert off.lines == copy_lines(primary.txns[t.index - 1].rows), kind
        assert on.lines != off.lines
        assert "recovery stopping" in on.stopping and "recovery stopping" in off.stopping


def test_backup_label_and_end(primary):
    """The backup's label as the server wrote it, and its XLOG_BACKUP_END record: the end the server's
    backup history file (``.backup`` in the archive) gives as STOP WAL LOCATION."""
    from waldecode.pg.lsn import parse_lsn
    from waldecode.redo.backup_label import backup_end_lsn
    from waldecode.wal.xlogreader import XLogReader

    label = read_backup_label(primary.backup)
    history = [f for f in primary.archive.iterdir() if f.name.endswith(".backup")]
    assert len(history) == 1
    fields = dict(line.split(": ", 1) for line in history[0].read_text().splitlines() if ": " in line)
    assert fields["START WAL LOCATION"] == f"{format_lsn(label.start_lsn)} (file {label.start_wal_file})"
    assert fields["CHECKPOINT LOCATION"] == format_lsn(label.checkpoint_lsn)
    assert (fields["BACKUP METHOD"], fields["BACKUP FROM"], fields["START TIME"], fields["LABEL"]) == \
        (label.backup_method, label.backup_from, label.start_time, label.label)
    assert int(fields["START TIMELINE"]) == label.start_timeline == 1 and not label.incremental
    ends = [e for e in (backup_end_lsn(label, r) for r in XLogReader([primary.archive], start_lsn=label.start_lsn))
            if e is not None]
    assert ends == [parse_lsn(fields["STOP WAL LOCATION"].split()[0])]


def test_unreachable_targets_report_postgres_fatal(primary):
    """A target recovery cannot reach is PostgreSQL's own FATAL line, not rows."""
    label = read_backup_label(primary.backup)
    cases = [
        (Target("lsn", format_lsn(primary.end_lsn + 16 * 1024 * 1024), True, -1),
         "recovery ended before configured recovery target was reached"),
        (Target("xid", str(primary.txns[-1].xid + 1000), True, -1),
         "recovery ended before configured recovery target was reached"),
        (Target("lsn", format_lsn(label.start_lsn), False, -1),
         "requested recovery stop point is before consistent recovery point"),
        # a time is reached only at a later transaction's end: none follows the last commit
        (Target("time", primary.txns[-1].time, True, -1),
         "recovery ended before configured recovery target was reached"),
    ]
    for target, message in cases:
        with pytest.raises(RecoveryFailed) as e:
            primary.recover(target)
        assert e.value.fatal.startswith("FATAL:") and message in e.value.fatal, e.value.fatal
