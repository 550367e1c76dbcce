"""``waldecode table`` on a table over 1 GB against PostgreSQL 15's own point-in-time recovery (issue 23).

The table's bulk (about 1.03 GiB: two rows of about 3 kB a page, ``pad`` stored PLAIN so that
nothing goes to TOAST) is loaded and vacuumed before the base backup, so that only the changes are
WAL-logged after it.  Between the backup and the targets its second segment file (``<relNumber>.1``,
the blocks from md.c's RELSEG_SIZE on) is changed: HOT updates that shrink rows, deletes, updates
that grow rows off their pages (the relation extends), an aborted delete, a VACUUM, then inserts
into the space it freed.  At two targets the recovered cluster's rows and ``waldecode table``'s are
the same multiset, compared as ``pitr.copy_digest`` (the row count and a sum of row hashes), never
held in memory; waldecode runs as a process of its own whose peak resident memory (``wait4``'s
``ru_maxrss``) must stay far below the table's size: pages live in the page store on disk.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

import backup_tools as bt  # noqa: E402
from pitr import DB, PitrPrimary, Target, copy_digest  # noqa: E402
from waldecode.bench.measure import run_measured  # noqa: E402
from waldecode.pg.lsn import format_lsn  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

# src/include/pg_config.h: RELSEG_SIZE, the blocks of one segment file (1 GB of 8 kB blocks)
RELSEG_SIZE = 131072
#: blocks past the first segment the bulk fills (two rows a block)
SECOND_SEGMENT_BLOCKS = 4000
ROWS = 2 * (RELSEG_SIZE + SECOND_SEGMENT_BLOCKS)
PAD = "repeat(md5({g}::text), 94)"  # 3008 characters: two tuples of about 3 kB a page

SCHEMA = f"""
CREATE TABLE big (id int, v int, pad text);
ALTER TABLE big ALTER COLUMN pad SET STORAGE PLAIN;
INSERT INTO big SELECT g, g, {PAD.format(g="g")} FROM generate_series(1, {ROWS}) g;
"""

#: peak resident memory allowed to waldecode (MiB), far below the table's 1 GiB
MAX_RSS_MB = 400


def _seg2(first: int, last: int) -> str:
    """The tuples of blocks ``first`` to ``last`` - 1 past the first segment (a TID range scan)."""
    return f"ctid >= '({RELSEG_SIZE + first},0)' AND ctid < '({RELSEG_SIZE + last},0)'"


def _before_backup(p: PitrPrimary) -> None:
    """VACUUM the bulk (all-visible: the VACUUM after the backup visits only the pages changed), and
    drop its WAL from the archive: recovery of the backup reads from the backup's start on."""
    p.conn.execute("VACUUM big")
    p.conn.execute("SELECT pg_switch_wal()")
    bt.wait_archived(p.cluster)
    for f in p.archive.iterdir():
        f.unlink()
    p.conn.execute("CHECKPOINT")


@pytest.fixture(scope="module")
def primary():
    with PitrPrimary(SCHEMA, "big", before_backup=_before_backup, digest=True,
                     settings={"max_wal_size": "4GB", "checkpoint_timeout": "1h"}) as p:
        tx = p.transaction
        # the table's rows (a 1 GiB COPY digested) are recorded only where a target compares them: after
        # the third transaction and the last
        tx(f"UPDATE big SET v = -v, pad = 'hot ' || id WHERE {_seg2(0, 200)}", rows=False)  # shrink: HOT, same page
        tx(f"DELETE FROM big WHERE {_seg2(1000, 1100)}", rows=False)
        tx(f"UPDATE big SET pad = pad || 'grown' WHERE {_seg2(2000, 2050)}")  # no room on the page
        tx(f"DELETE FROM big WHERE {_seg2(3000, 3500)}", commit=False, rows=False)
        p.outside("VACUUM big")  # prunes the HOT chains, frees the deleted rows' space
        tx(f"INSERT INTO big SELECT g, 0, {PAD.format(g='g')} FROM generate_series({ROWS + 1}, {ROWS + 300}) g",
           f"UPDATE big SET v = 7 WHERE {_seg2(SECOND_SEGMENT_BLOCKS - 10, SECOND_SEGMENT_BLOCKS)}")
        p.finish()
        yield p


def _waldecode(p: PitrPrimary, target: Target, out: Path, work: Path):
    """``waldecode table --format copy --output out`` as a process of its own, measured by the
    benchmark's ``run_measured`` (a small helper forks it, so that its peak RSS is its own, not this
    test's): a ``Measurement`` (``seconds``, ``rss_mb``); a non-zero exit raises with its stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in sys.path if x))
    cli = "import sys; from waldecode.cli import main; sys.exit(main(sys.argv[1:]))"
    return run_measured([sys.executable, "-c", cli, "table", "--backup", str(p.backup), "--table", "public.big",
                         "--at", target.value, "--inclusive", "on" if target.inclusive else "off",
                         "--database", DB, "--format", "copy", "--work-dir", str(work), "--output", str(out),
                         str(p.archive)], env=env, what="waldecode table")


def _file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return copy_digest(iter(lambda: f.read(1 << 20), b""))


def test_a_table_over_1gb_changed_in_its_second_segment(primary, tmp_path):
    relpath = primary.conn.execute("SELECT pg_relation_filepath('big')").fetchone()[0]
    # the relation file node did not change since the backup (no rewrite): its segment .1 is the backup's
    second = primary.backup / f"{relpath}.1"
    assert second.exists() and second.stat().st_size >= SECOND_SEGMENT_BLOCKS * 8192, second
    size = primary.conn.execute("SELECT pg_relation_size('big')").fetchone()[0]
    assert size > RELSEG_SIZE * 8192
    committed = [t for t in primary.txns if t.committed]
    targets = [Target("xid", str(committed[2].xid), True, committed[2].index),  # before the VACUUM
               Target("lsn", format_lsn(primary.txns[-1].end_lsn), True, primary.txns[-1].index)]
    for target in targets:
        got = primary.recover(target)
        expected = primary.rows_after(target.last_included).decode()
        assert got.copy.decode() == expected, f"the oracle disagrees with the primary at {target}"
        out = tmp_path / "big.copy"
        run = _waldecode(primary, target, out, tmp_path)
        mine = _file_digest(out)
        print(f"{target}: recovery {expected} in {got.seconds:.1f} s; waldecode {mine} in {run.seconds:.1f} s, "
              f"peak RSS {run.rss_mb:.0f} MiB ({run.rss_method}); table {size / 2 ** 20:.0f} MiB")
        assert mine == expected, target
        assert run.rss_mb < MAX_RSS_MB, f"waldecode's peak RSS {run.rss_mb:.0f} MiB"
        out.unlink()
    # the changes are there: the rows differ from the backup's, and between the targets
    assert len({primary.backup_rows, *(primary.rows_after(t.last_included) for t in targets)}) == 3
