"""``waldecode table`` reads the WAL once: the records pass 2 replays are those pass 1 kept (issue 23).

``redo.table._RedoSpool`` keeps, as the first pass reads the WAL, the records that may change the
table's pages: not those of relations the backup's catalog gives to another relation.  Against
PostgreSQL 15's own point-in-time recovery (tests/support/pitr.py): ``orders`` and ``staging`` are
backed up; ``staging`` takes most of the WAL's traffic, then the two swap names (``orders`` becomes
``orders_old``, ``staging`` becomes ``orders``) and the new ``orders`` is updated.  Before the swap
the kept records serve (far fewer than the WAL holds); after it the table is a relation the backup
knew by another name, whose records were not kept, and the WAL is read again.  The rows equal the
recovered cluster's at both targets.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from pitr import DB, PitrPrimary, Target, copy_lines  # noqa: E402
from waldecode.cli import main  # noqa: E402
from waldecode.redo import table as table_mod  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE orders (id int, v text);
CREATE TABLE staging (id int, v text);
INSERT INTO orders SELECT g, 'order ' || g FROM generate_series(1, 50) g;
INSERT INTO staging SELECT g, 'staged ' || g FROM generate_series(1, 2000) g;
"""


def test_kept_records_and_a_table_renamed_after_the_backup(capsys, monkeypatch):
    with PitrPrimary(SCHEMA, "orders") as p:
        tx = p.transaction
        tx("UPDATE staging SET v = v || ' again'", "UPDATE orders SET v = 'changed' WHERE id <= 10")
        tx("DELETE FROM orders WHERE id > 40")
        tx("ALTER TABLE orders RENAME TO orders_old", "ALTER TABLE staging RENAME TO orders")
        tx("UPDATE orders SET v = 'renamed' WHERE id <= 5")
        p.finish()
        spools = []
        real_init, real_covers = table_mod._RedoSpool.__init__, table_mod._RedoSpool.covers

        def init(self, *args, **kwargs):
            real_init(self, *args, **kwargs)
            spools.append(self)

        def covers(self, wanted):
            self.covered = real_covers(self, wanted)
            return self.covered

        monkeypatch.setattr(table_mod._RedoSpool, "__init__", init)
        monkeypatch.setattr(table_mod._RedoSpool, "covers", covers)
        records = {}
        for txn, covered in ((p.txns[1], True), (p.txns[3], False)):
            target = Target("xid", str(txn.xid), True, txn.index)
            expected = p.recover(target).lines
            assert expected == copy_lines(txn.rows)
            capsys.readouterr()
            assert main(["table", "--backup", str(p.backup), "--table", "orders", "--at", target.value,
                         "--database", DB, str(p.archive)]) == 0
            assert copy_lines(capsys.readouterr().out.encode()) == expected, target
            assert spools[-1].covered is covered, target
            records[covered] = spools[-1].count
        # before the swap: the updates of staging (2000 rows, most of the WAL) were not kept
        assert 0 < records[True] < 200, records
