"""``waldecode table --backup REPOSITORY``: a table as of a target, from the backups pgBackRest and barman
keep, against PostgreSQL's own point-in-time recovery (issue 23).

tests/support/pitr.py's PostgreSQL 15 primary archives every segment into its plain archive (the
oracle's ``restore_command``), into a pgBackRest repository (stanza ``main``, gz) and into barman's
``incoming/`` (server ``pg``, ``backup_method = postgres``, ``backup_compression = gzip``: the data
directory as ``base.tar.gz``).  After the oracle's plain base backup: a pgBackRest full backup and a
barman backup; workload A; a pgBackRest incremental backup (the files A left alone are references
into the full set) and a second barman backup; workload B.  For targets of each kind (LSN, time,
xid; inclusive on and off) on both sides of the second backups, ``waldecode table`` from the
repository, with no WAL path (the repository's own archive) or the repository as the WAL path,
holds the rows of the oracle's ``COPY`` (a recovery of the plain backup to the same target), byte
for byte, as multisets, and names on stderr the backup an operator restoring to that target would
take: the latest consistent at or before it.  A target before every backup's consistency point and
an unknown ``--backup-set`` are one error line each.
"""

from __future__ import annotations

import os
import shlex
from datetime import timedelta

import pytest

psycopg = pytest.importorskip("psycopg")

import backup_tools as bt  # noqa: E402
from doc_commands import lane_command  # noqa: E402
from pitr import PitrPrimary, Target, copy_lines  # noqa: E402
from waldecode.catalog.backups import list_backups  # noqa: E402
from waldecode.catalog.datadir.files import PgBackRestSet  # noqa: E402
from waldecode.cli import main  # noqa: E402
from waldecode.pg.lsn import format_lsn  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

STANZA = "main"
SERVER = "pg"

SCHEMA = """
CREATE TABLE orders (id int PRIMARY KEY, customer text, amount numeric(10,2), note text);
ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTERNAL;
INSERT INTO orders SELECT g, 'c' || g, g * 1.5, NULL FROM generate_series(1, 80) g;
CREATE TABLE still (k int, v text);
INSERT INTO still SELECT g, 'v' || g FROM generate_series(1, 50) g;
"""

BIG = "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, {n}) g)"


def _workload_a(p: PitrPrimary) -> None:
    tx = p.transaction
    tx("INSERT INTO orders SELECT g, 'a' || g, g, NULL FROM generate_series(81, 120) g")
    tx("UPDATE orders SET amount = amount + 1 WHERE id % 4 = 0")
    tx("DELETE FROM orders WHERE id BETWEEN 10 AND 19")
    tx("DELETE FROM orders", commit=False)
    tx(f"INSERT INTO orders VALUES (500, 'toast', 1, {BIG.format(n=300)})")
    tx("UPDATE orders SET id = id + 1000 WHERE id BETWEEN 30 AND 33")


def _workload_b(p: PitrPrimary) -> None:
    tx = p.transaction
    tx("UPDATE orders SET customer = 'after incr' WHERE id < 10")
    tx("SAVEPOINT s", "INSERT INTO orders VALUES (600, 'lost', 1, NULL)", "ROLLBACK TO SAVEPOINT s",
       "INSERT INTO orders VALUES (601, 'kept', 2, NULL)")
    p.outside("VACUUM orders")
    tx(f"UPDATE orders SET note = {BIG.format(n=200)} WHERE id = 500")
    tx("DELETE FROM orders WHERE id % 3 = 0")
    tx("INSERT INTO orders VALUES (700, 'the end', 7, NULL)")
    tx("INSERT INTO orders VALUES (701, 'the very end', 8, NULL)")


class Repos:
    """The primary and what the fixture made beside it."""

    p: PitrPrimary
    repo: str  # the pgBackRest repository's root
    barman_server: str  # <barman_home>/pg
    a: range  # indexes of workload A's transactions (between the first and second backups)
    b: range  # workload B's (after the second backups)
    pgbackrest: dict  # full, incr -> the set's label
    barman: list  # the two barman backup ids, oldest first


@pytest.fixture(scope="module")
def repos():
    missing = bt.missing_tools("pgbackrest", "barman")
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (./dev test installs them)")
    r = Repos()

    def archive_also(base):
        repo, home = base / "repo", base / "barman"
        (home / SERVER / "incoming").mkdir(parents=True)
        bt.chown_to_server(home)
        # segments archived before the stanza exists (the schema, the plain backup) are the oracle's only
        info = repo / "archive" / STANZA / "archive.info"
        return [f"if [ -f {info} ]; then {bt.pgbackrest_push(base / 'pgbackrest-repo.conf', STANZA)}; fi",
                bt.barman_incoming(home, SERVER)]

    def before_backup(p):
        c = p.cluster
        p.pgbackrest_conf = bt.pgbackrest_config(p.base, STANZA, p.base / "repo", "gz", c.pgdata, c.socket_dir,
                                                 c.port, extra={"repo1-retention-full": "9"})
        p.barman_conf = bt.barman_config(p.base, p.base / "barman", {SERVER: None}, c.socket_dir, c.port,
                                         extra={SERVER: {"backup_compression": "gzip", "path_prefix": str(c.bindir)}})
        bt.pgbackrest(p.pgbackrest_conf, STANZA, "stanza-create")

    def barman_backup(p):
        bt.barman(p.barman_conf, "switch-wal", "--force", "--archive", SERVER)
        bt.barman(p.barman_conf, "backup", SERVER)

    # the backups' checkpoints would recycle segments that finish() reads back with pg_walinspect
    with PitrPrimary(SCHEMA, "orders", settings={"wal_keep_size": "1GB"}, before_backup=before_backup,
                     archive_also=archive_also,
                     archive_script_name="pgbackrest-and-barman-archive.sh") as p:
        r.p = p
        bt.pgbackrest(p.pgbackrest_conf, STANZA, "backup", "--type=full")
        barman_backup(p)
        _workload_a(p)
        r.a = range(0, len(p.txns))
        bt.pgbackrest(p.pgbackrest_conf, STANZA, "backup", "--type=incr")
        barman_backup(p)
        _workload_b(p)
        r.b = range(r.a.stop, len(p.txns))
        p.finish()
        bt.barman(p.barman_conf, "switch-wal", "--force", "--archive", SERVER)  # into wals/, as barman cron would
        r.repo = str(p.base / "repo")
        r.barman_server = str(p.base / "barman" / SERVER)
        sets = sorted(os.listdir(os.path.join(r.repo, "backup", STANZA)))
        r.pgbackrest = {kind: next(s for s in sets if s.endswith(suffix)) for kind, suffix in
                        (("full", "F"), ("incr", "I"))}
        r.barman = [b.label for b in list_backups(r.barman_server)]
        assert len(r.barman) == 2, r.barman
        yield r


def _table(capsys, backup: str, at: str, inclusive: bool, *more: str, table: str = "public.orders"):
    """(status, stdout bytes, stderr lines) of ``waldecode table --format copy`` in-process."""
    capsys.readouterr()
    status = main(["table", "--backup", backup, "--table", table, "--at", at, "--inclusive",
                   "on" if inclusive else "off", "--database", "pitr", *more])
    out = capsys.readouterr()
    return status, out.out.encode(), out.err.splitlines()


def _targets(r: Repos) -> list[tuple[Target, str]]:
    """Targets on each side of the second backups, with the side (``a``: the first backups are the
    latest consistent before them, ``b``: the second ones): at the first transaction after the backups,
    nearest their consistency point, every kind of ``PitrPrimary.targets_at`` (LSN, time, xid; inclusive
    on and off); at the last but one, further on, its xid inclusive on and off (each target costs a
    recovery, and the kinds are all tried at the first)."""
    chosen = []
    for side, txns in (("a", r.a), ("b", r.b)):
        committed = [r.p.txns[i] for i in txns if r.p.txns[i].committed]
        chosen += [(t, side) for t in r.p.targets_at(committed[0])]
        chosen += [(t, side) for t in r.p.targets_at(committed[-2]) if t.kind == "xid"]
    return chosen


def _recover(r: Repos, target: Target):
    """The oracle's Recovered (``PitrPrimary.recover`` recovers a target once for the tests of both tools)."""
    got = r.p.recover(target)
    assert got.lines == copy_lines(r.p.rows_after(target.last_included)), f"the oracle disagrees at {target}"
    return got


def _check(r: Repos, capsys, backup: str, expect_labels: dict, *more: str) -> list[str]:
    """Every target: waldecode's rows from ``backup`` equal the recovered cluster's, and the backup it
    names is ``expect_labels[side]``; the disagreements, one line each."""
    wrong = []
    targets = _targets(r)
    assert {t.kind for t, _s in targets} == {"lsn", "time", "xid"} and {t.inclusive for t, _s in targets} == {
        True, False} and {s for _t, s in targets} == {"a", "b"}, targets
    for target, side in targets:
        got = _recover(r, target)
        status, out, err = _table(capsys, backup, target.value, target.inclusive, *more)
        label = expect_labels[side]
        if status != 0 or copy_lines(out) != got.lines or len(err) != 1 or f" backup {label} " not in err[0]:
            mine = copy_lines(out)
            wrong.append(f"{target} (side {side}, expected backup {label}): status {status} {err}; {len(mine)} rows, "
                         f"recovery {len(got.lines)}: only waldecode {sorted(set(mine) - set(got.lines))[:2]}, "
                         f"only recovery {sorted(set(got.lines) - set(mine))[:2]}")
    print(f"{backup}: {len(targets)} targets")
    return wrong


def test_pgbackrest_repository_equals_point_in_time_recovery(repos, capsys):
    """The repository's root, no WAL path: the full set before the incremental one's stop, the
    incremental set after it, rows as recovery shows them."""
    r = repos
    # the incremental set reads ``still`` (untouched between the two) from the full set
    incr = PgBackRestSet(os.path.join(r.repo, "backup", STANZA, r.pgbackrest["incr"]))
    refs = {e.get("reference") for rel, e in incr.files.items() if rel.startswith("base/")}
    assert r.pgbackrest["full"] in refs
    wrong = _check(r, capsys, r.repo, {"a": r.pgbackrest["full"], "b": r.pgbackrest["incr"]})
    assert wrong == [], "\n".join(wrong)


def test_barman_server_equals_point_in_time_recovery(repos, capsys):
    """barman's server directory, no WAL path: the first backup before the second one's end, the
    second after it."""
    r = repos
    wrong = _check(r, capsys, r.barman_server, {"a": r.barman[0], "b": r.barman[1]})
    assert wrong == [], "\n".join(wrong)


def test_one_backup_and_the_repository_as_wal(repos, capsys):
    """A set's or a backup's own directory as --backup, the repository (or barman server) as the WAL
    path, --backup-set with the root; a table other than the workload's, read from the incremental
    set whose file of it is a reference into the full one."""
    r, p = repos, repos.p
    last = p.txns[r.b[-1]]
    expected = copy_lines(last.rows)
    full_set = os.path.join(r.repo, "backup", STANZA, r.pgbackrest["full"])
    for backup, more in ((full_set, (r.repo,)), (os.path.join(r.barman_server, "base", r.barman[0]),
                                                 (r.barman_server,)),
                         (r.repo, ("--backup-set", r.pgbackrest["full"], r.repo))):
        status, out, err = _table(capsys, backup, format_lsn(last.end_lsn), True, *more)
        assert status == 0 and copy_lines(out) == expected, (backup, err)
    with p.conn.cursor() as cur:
        with cur.copy("COPY still TO STDOUT") as cp:
            still = copy_lines(b"".join(bytes(b) for b in cp))
    status, out, err = _table(capsys, r.repo, format_lsn(last.end_lsn), True, table="public.still")
    assert status == 0 and copy_lines(out) == still and r.pgbackrest["incr"] in err[0], err


def test_target_before_every_backup_and_unknown_label(repos, capsys):
    """One error line, nothing on stdout: a target before the first backup's consistency point, by
    LSN, time and xid (a transaction that ended before every backup), naming the earliest backup and
    its stop LSN; a --backup-set the repository does not hold."""
    r, p = repos, repos.p
    old_xid = p.conn.execute("SELECT xmin::text FROM still LIMIT 1").fetchone()[0]  # the schema's
    for backup in (r.repo, r.barman_server):
        first = list_backups(backup)[0]
        cases = [(format_lsn(first.start_lsn), True), (format_lsn(first.stop_lsn - 1), False),
                 ((first.stop_time - timedelta(minutes=5)).isoformat(), True), (old_xid, True)]
        for at, inclusive in cases:
            status, out, err = _table(capsys, backup, at, inclusive)
            assert status == 1 and out == b"", (backup, at, err)
            assert len(err) == 1 and err[0].startswith("waldecode: error: ") and \
                f"the earliest, {first.label}, stopped at {format_lsn(first.stop_lsn)}" in err[0], (backup, at, err)
    status, out, err = _table(capsys, r.repo, format_lsn(p.txns[-1].end_lsn), True, "--backup-set", "nosuch")
    assert status != 0 and out == b""
    assert len(err) == 1 and "no backup 'nosuch'" in err[0] and r.pgbackrest["full"] in err[0], err


def _documented(capsys, cmd: str, subst: dict) -> tuple[list[str], bytes, list[str]]:
    """A command of docs/table-as-of.md (``lane_command``'s), its placeholders replaced, run in-process:
    (the argv after ``waldecode``, stdout, stderr lines)."""
    tokens = shlex.split(cmd)
    assert tokens[0] == "waldecode"
    argv = [subst.get(tok, tok) for tok in tokens[1:]]
    if argv[-2:-1] == [">"]:
        argv = argv[:-2]  # the redirection: stdout is captured
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr()
    return argv, out.out.encode(), out.err.splitlines()


def test_documented_pgbackrest_table_command(repos, capsys):
    """The pgBackRest example of docs/table-as-of.md, at the time of a commit after the incremental set
    (inclusive on, the default): the rows of the recovery to that time, read from the incremental set."""
    r = repos
    t = r.p.txns[r.b[0]]
    cmd = lane_command("tests/live/test_table_from_repository.py::test_documented_pgbackrest_table_command")
    _argv, out, err = _documented(capsys, cmd,
                                  {"/var/lib/pgbackrest": r.repo, "2026-11-27 14:02:59+01": t.time})
    assert copy_lines(out) == _recover(r, Target("time", t.time, True, t.index)).lines
    assert f" backup {r.pgbackrest['incr']} " in err[0]


def test_documented_barman_table_command(repos, capsys):
    """The barman example of docs/table-as-of.md, its backup id the first backup's and its LSN the end
    of the last transaction: the first backup is read, as asked, and the rows are the primary's."""
    r = repos
    last = r.p.txns[-1]
    cmd = lane_command("tests/live/test_table_from_repository.py::test_documented_barman_table_command")
    _argv, out, err = _documented(capsys, cmd,
                                  {"/var/lib/barman/pg": r.barman_server, "20261120T020000": r.barman[0],
                                   "0/5A0003B8": format_lsn(last.end_lsn)})
    assert copy_lines(out) == copy_lines(last.rows)
    assert f" backup {r.barman[0]} " in err[0]
