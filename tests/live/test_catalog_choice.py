"""The catalog snapshot that belongs to the start, and ``--start-time``/``--end-time``, on a live PostgreSQL 15.

One cluster (TimeZone Europe/Berlin) runs, in order: snapshot S0, a test_decoding slot ``first``,
five inserts, ANALYZE (its commit carries invalidations, but it changes no catalog decoding
reads), snapshot S1, inserts, ``ALTER TABLE ... ADD COLUMN``, inserts, snapshot S2, a slot
``second``, updates.  Another cluster (another initdb) gives a foreign snapshot F.  The servers'
slots, peeked with include-timestamp, are the truth; ``decode`` must print the same or refuse:

* S2 for the first slot's start (DDL between): one error line naming the DDL's xid, exit 1,
  neither --output nor --slot file written; S1 (only ANALYZE between) and S0: the slot's output;
* F: one line naming both system identifiers, exit 1; ``catalog --datadir`` records the same
  identifier as ``catalog --dsn`` and pg_controldata;
* ``--catalog DIR``: the latest snapshot at or before the reading start (F passed over), said on
  stderr; all later: the earliest, then judged as above;
* ``--end-time``/``--start-time`` at the commit times the slot printed (with and without offset,
  read in the snapshot's TimeZone): the slot's transactions up to / from there, as recovery
  reads ``recovery_target_time``; ``inspect`` with times prints what pg_waldump prints between the
  commit records' LSNs pg_waldump itself shows; times outside the WAL are one line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection

pytestmark = [pytest.mark.server]

SCHEMA = "CREATE TABLE t (id int PRIMARY KEY, v text)"
TS = ("include-timestamp", "1")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=300)


class World:
    """What the module's clusters left: the WAL, the snapshots, the slots' positions and output."""


def _peek(conn, slot: str, end: str) -> list[str]:
    rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, %s, %s)",
                        (slot, end, *TS)).fetchall()
    return [bytes(r[0]).decode("utf-8", "surrogateescape") for r in rows]


def _slot(conn, name: str) -> tuple[str, str]:
    conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (name,))
    return conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text FROM pg_replication_slots "
                        "WHERE slot_name = %s", (name,)).fetchone()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World()
    d = w.dir = tmp_path_factory.mktemp("catalog_choice")
    with live_cluster(SCHEMA, TimeZone="Europe/Berlin") as c, c.connect(DB) as conn:
        w.cluster = c
        w.sysid = int(c.run_bin("pg_controldata", "-D", c.pgdata).stdout.split("Database system identifier:")[1]
                      .split()[0])
        (d / "s0.json").write_text(snapshot_from_connection(conn).to_json())
        conn.execute("CHECKPOINT")
        w.first, w.first_restart = _slot(conn, "first")
        for i in range(1, 6):
            conn.execute("INSERT INTO t VALUES (%s, %s)", (i, f"one {i}"))
            time.sleep(0.02)
        conn.execute("ANALYZE t")
        (d / "s1.json").write_text(snapshot_from_connection(conn).to_json())
        for i in range(6, 9):
            conn.execute("INSERT INTO t VALUES (%s, %s)", (i, f"two {i}"))
        conn.execute("ALTER TABLE t ADD COLUMN w int")
        w.ddl_xid = conn.execute("SELECT xmin::text::int FROM pg_class WHERE relname = 't'").fetchone()[0]
        conn.execute("INSERT INTO t VALUES (9, 'three', 9), (10, 'three', 10)")
        (d / "s2.json").write_text(snapshot_from_connection(conn).to_json())
        conn.execute("CHECKPOINT")
        w.second, _ = _slot(conn, "second")
        for i in (1, 5, 9):
            conn.execute("UPDATE t SET v = v || ' updated' WHERE id = %s", (i,))
            time.sleep(0.02)
        conn.execute("CHECKPOINT")
        w.end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        w.rows = {s: _peek(conn, s, w.end) for s in ("first", "second")}
        first_seg, last_seg = conn.execute("SELECT pg_walfile_name(%s::pg_lsn), pg_walfile_name(%s::pg_lsn)",
                                           (w.first_restart, w.end)).fetchone()
        w.wal = c.archive_wal(d / "wal", first_seg, last_seg)
        # pg_waldump (as the server's user, on pg_wal itself) from the third transaction's commit record to
        # (before) the eighth's, found by their xids in its own output
        commit_lsn = {}
        for line in c.run_bin("pg_waldump", "--path", c.waldir, "--start", w.first_restart, "--end",
                              w.end).stdout.splitlines():
            m = re.search(r"tx:\s+(\d+), lsn: (\S+), .*desc: COMMIT ", line)
            if m:
                commit_lsn[int(m[1])] = m[2]
        xids = [int(re.match(r"COMMIT (\d+)", rows[-1])[1]) for _t, rows in transactions(w.rows["first"])]
        w.waldump = c.run_bin("pg_waldump", "--path", c.waldir, "--start", commit_lsn[xids[2]], "--end",
                              commit_lsn[xids[7]]).stdout
        for s in ("first", "second"):
            conn.execute("SELECT pg_drop_replication_slot(%s)", (s,))
    with live_cluster(SCHEMA) as other:
        with other.connect(DB) as conn:
            foreign = snapshot_from_connection(conn)
        (d / "foreign.json").write_text(foreign.to_json())
        w.foreign_sysid = int(other.run_bin("pg_controldata", "-D", other.pgdata).stdout
                              .split("Database system identifier:")[1].split()[0])
        other.stop()
        from waldecode.catalog.datadir import snapshot_from_datadir

        w.foreign_datadir_sysid = snapshot_from_datadir(other.pgdata, DB, warn=lambda m: None).system_identifier
    return w


def decode(world, catalog, *args, out: Path | None = None):
    extra = ["--output", out] if out is not None else []
    return run_cli("decode", "--catalog", catalog, "-o", "include-timestamp=1", *args, *extra, world.wal)


def text(rows) -> str:
    return "".join(r + "\n" for r in rows)


def ok(r) -> bool:
    """Exit 0, and on stderr only the normal end of the WAL read and the transactions left open there (the
    next one's first record read, its commit not, as recovery leaves it)."""
    return r.returncode == 0 and all("is still open at the end of the WAL read" in x
                                     or x.startswith("waldecode: end of WAL at ")
                                     for x in r.stderr.decode().splitlines())


def transactions(rows: list[str]) -> list[tuple[str, list[str]]]:
    """The slot's rows as (commit time text, rows) per transaction."""
    out, cur = [], []
    for r in rows:
        cur.append(r)
        m = re.match(r"COMMIT \d+ \(at (.+)\)$", r)
        if m:
            out.append((m[1], cur))
            cur = []
    assert not cur
    return out


# -- the snapshot and the start --------------------------------------------------------------------


def test_a_late_snapshot_with_ddl_in_between_is_one_line_and_writes_nothing(world, tmp_path):
    out, slot = tmp_path / "out", tmp_path / "slot"
    r = decode(world, world.dir / "s2.json", "--start-lsn", world.first, "--end-lsn", world.end,
               "--slot", slot, out=out)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 1, err
    assert len(err) == 1, err
    assert re.match(rf"waldecode: error: the catalog snapshot {re.escape(str(world.dir / 's2.json'))} was taken at "
                    rf"\S+, after the reading start \S+ \(for the start {world.first}\), and transaction "
                    rf"{world.ddl_xid} changed the catalog in between \(committed at \S+, \S+ \S+\+01\): the "
                    r"changes before \S+ cannot be decoded with it; take a snapshot at or before the start: "
                    r"'waldecode catalog --datadir' of a backup taken before it, or --catalog DIR holding one$",
                    err[0]), err[0]
    assert not out.exists() and not slot.exists() and r.stdout == b""


@pytest.mark.parametrize("snapshot", ["s0.json", "s1.json"])
def test_a_snapshot_before_the_start_or_with_only_analyze_in_between_equals_the_slot(world, snapshot):
    r = decode(world, world.dir / snapshot, "--start-lsn", world.first, "--end-lsn", world.end)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert r.stdout.decode() == text(world.rows["first"])
    assert any(" ADD COLUMN" not in x and "w[integer]:9" in x for x in world.rows["first"])  # the DDL decoded


def test_a_snapshot_of_another_cluster_is_one_line(world, tmp_path):
    assert world.foreign_sysid != world.sysid
    assert world.foreign_datadir_sysid == world.foreign_sysid  # catalog --datadir records pg_control's
    out = tmp_path / "out"
    r = decode(world, world.dir / "foreign.json", "--start-lsn", world.first, out=out)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 1 and len(err) == 1, err
    assert err[0] == (f"waldecode: error: the catalog snapshot {world.dir / 'foreign.json'} is of the cluster with "
                      f"system identifier {world.foreign_sysid}, the WAL ({_first_segment(world)}) of the cluster "
                      f"with system identifier {world.sysid}: take the snapshot of the cluster that wrote the WAL")
    assert not out.exists()


def _first_segment(world) -> Path:
    return sorted(world.wal.iterdir())[0]


def _dir_of(world, tmp_path, *names) -> Path:
    d = tmp_path / "snapshots"
    d.mkdir()
    for n in names:
        shutil.copy(world.dir / n, d / n)
    (d / "notes.json").write_text('{"not": "a snapshot"}')
    return d


def test_catalog_dir_takes_the_latest_snapshot_at_or_before_the_start(world, tmp_path):
    d = _dir_of(world, tmp_path, "s0.json", "s1.json", "s2.json", "foreign.json")
    r = decode(world, d, "--start-lsn", world.first, "--end-lsn", world.end)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert len(err) == 1 and re.match(rf"waldecode: catalog snapshot {re.escape(str(d / 's0.json'))} taken at \S+ "
                                      r"\(latest at or before the start \S+\)$", err[0]), err
    assert r.stdout.decode() == text(world.rows["first"])
    # a later start: S2 (taken before the second slot), and the second slot's output
    r = decode(world, d, "--start-lsn", world.second, "--end-lsn", world.end)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0 and len(err) == 1 and f"{d / 's2.json'} taken at " in err[0], err
    assert r.stdout.decode() == text(world.rows["second"])


def test_catalog_dir_with_only_later_snapshots_takes_the_earliest_and_judges_it(world, tmp_path):
    d = _dir_of(world, tmp_path, "s1.json", "s2.json")
    r = decode(world, d, "--start-lsn", world.first, "--end-lsn", world.end)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert len(err) == 1 and re.match(rf"waldecode: catalog snapshot {re.escape(str(d / 's1.json'))} taken at \S+ "
                                      r"\(the earliest; every one is after the start \S+\)$", err[0]), err
    assert r.stdout.decode() == text(world.rows["first"])
    (d / "s1.json").unlink()
    r = decode(world, d, "--start-lsn", world.first, "--end-lsn", world.end)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 1 and len(err) == 2 and f"transaction {world.ddl_xid} changed the catalog" in err[1], err


# -- times -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_end_time_and_start_time_cut_as_recovery_target_time(world):
    txns = transactions(world.rows["first"])
    assert len(txns) >= 10 and all(a[0] < b[0] for a, b in zip(txns, txns[1:]))  # one session: in order
    for k in (2, 6):
        t = txns[k][0]
        # at a commit's time: that commit is the last one in (printed with its offset, or without: Berlin)
        for given in (t, t[:-3]):
            r = decode(world, world.dir / "s0.json", "--start-lsn", world.first, "--end-time", given)
            assert ok(r), r.stderr.decode()
            assert r.stdout.decode() == text(row for _t, rows in txns[:k + 1] for row in rows)
        # from a commit's time: that commit is the first one out
        r = decode(world, world.dir / "s0.json", "--start-time", t)
        assert ok(r), r.stderr.decode()
        assert r.stdout.decode() == text(row for _t, rows in txns[k:] for row in rows)
    # both, and a time between two commits (UTC, 1 µs after the fourth's)
    a, b = txns[3][0], txns[7][0]
    r = decode(world, world.dir / "s0.json", "--start-time", a, "--end-time", b)
    assert r.stdout.decode() == text(row for _t, rows in txns[3:8] for row in rows), r.stderr.decode()
    r = decode(world, world.dir / "s0.json", "--start-time", _plus_one_microsecond(a))
    assert r.stdout.decode() == text(row for _t, rows in txns[4:] for row in rows), r.stderr.decode()


def _plus_one_microsecond(t: str) -> str:
    from datetime import datetime, timedelta

    return (datetime.fromisoformat(t) + timedelta(microseconds=1)).isoformat()


def test_times_outside_the_wal_are_one_line(world, tmp_path):
    out = tmp_path / "out"
    r = decode(world, world.dir / "s0.json", "--start-time", "2000-01-01 00:00", out=out)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 1 and len(err) == 1 and not out.exists(), err
    assert err[0].startswith("waldecode: error: --start-time 2000-01-01 00:00:00+01 is at or before the first commit "
                             "in the WAL, the commit of transaction ")
    r = decode(world, world.dir / "s0.json", "--start-time", "2100-01-01 00:00")
    err = r.stderr.decode().splitlines()
    assert r.returncode == 1 and len(err) == 1 and "is after the last commit in the WAL" in err[0], err
    r = decode(world, world.dir / "s0.json", "--start-lsn", world.first, "--end-time", "2100-01-01 00:00")
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert err[0].startswith("waldecode: note: the WAL ends before --end-time 2100-01-01 00:00:00+01: no commit or "
                             "abort after it (the last: the commit of transaction "), err
    assert r.stdout.decode() == text(world.rows["first"])
    r = decode(world, world.dir / "s0.json", "--end-time", "2100-01-01", "--end-lsn", world.end)
    assert r.returncode == 2 and b"not allowed with argument" in r.stderr


def test_inspect_with_times_prints_what_pg_waldump_prints_between_the_commits(world):
    txns = transactions(world.rows["first"])
    want = world.waldump  # from the third commit record to (before) the eighth's; times given in UTC
    r = run_cli("inspect", "--start-time", _utc(txns[2][0]), "--end-time", _utc(txns[6][0]), world.wal)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == want
    assert want.count("desc: COMMIT ") == 5


def _utc(t: str) -> str:
    from datetime import datetime, timezone

    return datetime.fromisoformat(t).astimezone(timezone.utc).isoformat()


# -- a backup repository as --catalog --------------------------------------------------------------


@pytest.fixture(scope="module")
def repo_world():
    """A cluster archiving to pgBackRest: a full backup, a slot, DDL and rows, a second full backup."""
    from backup_tools import archive_script, init_cluster, missing_tools, pgbackrest, pgbackrest_config, \
        pgbackrest_push

    if missing_tools("pgbackrest"):
        pytest.skip("pgbackrest is not installed (./dev test installs it)")
    c, base = init_cluster("waldecode-catalog-choice")
    w = World()
    try:
        w.repo = base / "repo"
        conf = pgbackrest_config(base, "main", w.repo, "gz", c.pgdata, c.socket_dir, c.port)
        command = archive_script(base / "pgbackrest-archive.sh", [pgbackrest_push(conf, "main")])
        with open(c.pgdata / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write(f"archive_mode = on\narchive_command = '{command}'\n")
        c.start()
        c.sql(f"CREATE DATABASE {DB}")
        with c.connect(DB) as conn:
            conn.execute(SCHEMA)
        pgbackrest(conf, "main", "stanza-create")
        pgbackrest(conf, "main", "backup", "--type=full")
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            w.first, restart = _slot(conn, "first")
            conn.execute("INSERT INTO t VALUES (1, 'before')")
            conn.execute("ALTER TABLE t ADD COLUMN w int")
            conn.execute("INSERT INTO t VALUES (2, 'after', 2)")
        pgbackrest(conf, "main", "backup", "--type=full")
        with c.connect(DB) as conn:
            conn.execute("UPDATE t SET w = 3")
            conn.execute("CHECKPOINT")
            w.end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            w.rows = _peek(conn, "first", w.end)
            first_seg, last_seg = conn.execute("SELECT pg_walfile_name(%s::pg_lsn), pg_walfile_name(%s::pg_lsn)",
                                               (restart, w.end)).fetchone()
        w.wal = c.archive_wal(base / "wal", first_seg, last_seg)
        w.labels = sorted(p.name for p in (w.repo / "backup" / "main").iterdir() if p.name.endswith("F"))
        yield w
    finally:
        try:
            c.stop()
        finally:
            c.cleanup()
            shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_a_backup_repository_gives_the_backup_before_the_start(repo_world):
    w = repo_world
    assert len(w.labels) == 2
    r = run_cli("decode", "--catalog", w.repo, "-o", "include-timestamp=1", "--start-lsn", w.first, "--end-lsn",
                w.end, w.wal)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert len(err) == 1 and re.match(rf"waldecode: catalog from pgBackRest backup {w.labels[0]} \(full\), "
                                      r"stopped at \S+ \(latest at or before the start \S+\)$", err[0]), err
    assert r.stdout.decode() == text(w.rows)
    assert any("w[integer]:3" in x for x in w.rows)


# -- the README's pgBackRest examples, as written ------------------------------------------------------


def _without_timestamps(rows) -> list[str]:
    """The slot's rows as test_decoding prints them without include-timestamp: ``COMMIT xid``."""
    return [re.sub(r"^(COMMIT \d+) \(at .+\)$", r"\1", r) for r in rows]


def _txn_with(txns, value: str) -> int:
    """The index of the one transaction that inserts the row whose t.v is ``value``."""
    (i,) = [i for i, (_t, rows) in enumerate(txns)
            if any(" INSERT: " in r and f"v[text]:'{value}'" in r for r in rows)]
    return i


@pytest.mark.slow
def test_documented_pgbackrest_decode_by_times(repo_world, tmp_path):
    """``decode --catalog REPO --start-time T1 --end-time T2 REPO`` as the README shows it, the repository for
    its path and, for its example times, the commit times the slot printed of the first row's transaction
    and of the last one archived with the second backup (between them the ADD COLUMN): those transactions
    as the slot printed them, the catalog from the backup before them."""
    from doc_commands import argv, lane_command

    w = repo_world
    cmd = lane_command("tests/live/test_catalog_choice.py::test_documented_pgbackrest_decode_by_times")
    txns = transactions(w.rows)
    first, last = _txn_with(txns, "before"), _txn_with(txns, "after")
    assert first < last
    args, _ = argv(cmd, {"/var/lib/pgbackrest": str(w.repo), "2026-11-27 14:00+01": txns[first][0],
                         "2026-11-27 14:05+01": txns[last][0]})
    assert args.count(str(w.repo)) == 2 and txns[last][0] in args, args
    r = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, capture_output=True, timeout=300)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    # besides the choice of the catalog, the end of the archive: the last commit archived is the end time's
    # ("the WAL ends before --end-time": no commit after it), read to the archive's end
    said = [ln for ln in err if not ln.startswith(("waldecode: note: the WAL ends before --end-time ",
                                                   "waldecode: end of WAL at "))]
    assert len(said) == 1 and re.match(rf"waldecode: catalog from pgBackRest backup {w.labels[0]} \(full\), "
                                       r"stopped at \S+ \(latest at or before the start \S+\)$", said[0]), err
    assert r.stdout.decode() == text(_without_timestamps(row for _t, rows in txns[first:last + 1] for row in rows))
    assert any("w[integer]:2" in x for x in r.stdout.decode().splitlines())  # the ADD COLUMN decoded


@pytest.mark.slow
def test_documented_catalog_backup_before(repo_world, tmp_path):
    """``catalog --backup REPO --before TIME -o app-catalog.json`` as the README shows it, the repository for
    its path and for its example time the commit time of the first row after the first backup: that backup's
    snapshot, said in one line, which decodes the slot's rows from its start (across the ADD COLUMN)."""
    from datetime import datetime

    from doc_commands import argv, lane_command
    from waldecode.catalog.backups import find_backup

    w = repo_world
    cmd = lane_command("tests/live/test_catalog_choice.py::test_documented_catalog_backup_before")
    txns = transactions(w.rows)
    before = txns[_txn_with(txns, "before")][0]
    chosen = find_backup(w.repo, before_time=datetime.fromisoformat(before))
    assert chosen.label == w.labels[0]
    args, _ = argv(cmd, {"/var/lib/pgbackrest": str(w.repo), "2026-11-27 14:00": before})
    assert str(w.repo) in args and before in args, args
    r = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, capture_output=True, timeout=300)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert err[0] == f"waldecode: catalog from {chosen.describe()}", err
    assert (tmp_path / "app-catalog.json").is_file()
    r = decode(w, tmp_path / "app-catalog.json", "--start-lsn", w.first, "--end-lsn", w.end)
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert r.stdout.decode() == text(w.rows)
