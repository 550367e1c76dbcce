"""``catalog --backup``: catalog snapshots read from the backups pgBackRest and barman keep, checked
against the same backups restored by the tools themselves.

One PostgreSQL 15 cluster (wal_level=logical, archive_mode=on) archives through one script to a
pgBackRest repository (gz, two stanzas for the same cluster) and to barman's incoming directory.
pgBackRest takes a full backup, then after DDL an incremental one (most files referenced in the
full), then after more DDL a differential one in bundles (``--repo1-bundle``); barman takes a
``backup_method = postgres`` backup with ``backup_compression = gzip`` (``data/base.tar.gz``).
Each set's snapshot must equal, field for field, ``catalog --datadir`` of what ``pgbackrest
restore --set`` writes (the files as they are, no recovery) or of the barman tar extracted by
``tar``; the only field that names its source is ``catalog_pages_note``'s path.  Then the choice
of a set (label, ``--before`` an LSN or a time, the latest) and bad input: two stanzas without
``--stanza``, damaged stored files, an unknown label, each one line and exit 1.  After the barman
backup a test_decoding slot, then rows (an enum value the incremental set's DDL added, an UPDATE of a
REPLICA IDENTITY FULL table, the differential set's new table), archived into barman's ``wals/``: the
README's ``decode --catalog BARMAN_SERVER --start-time T BARMAN_SERVER`` from the first of them must
print what the slot printed.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta

import pytest

from waldecode.catalog.backups import find_backup, list_backups
from waldecode.catalog.datadir.files import PgBackRestSet, read_pgbackrest_ini
from waldecode.cli import main as waldecode_main
from waldecode.pg.lsn import format_lsn

from backup_tools import (  # tests/support/
    archive_script,
    barman,
    chown_to_server,
    barman_config,
    barman_incoming,
    init_cluster,
    missing_tools,
    pgbackrest,
    pgbackrest_config,
    pgbackrest_push,
)

pytestmark = [pytest.mark.server, pytest.mark.slow]

psycopg = pytest.importorskip("psycopg")

from waldecode.testing.cluster import Cluster  # noqa: E402

STANZA = "main"
OTHER_STANZA = "other"  # a second stanza of the same cluster in the same repository
BARMAN_SERVER = "pg"

SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE t (id int PRIMARY KEY, v text, m mood);
INSERT INTO t SELECT g, repeat('x', g % 50), 'ok' FROM generate_series(1, 500) g;
CREATE PUBLICATION pub_t FOR TABLE t;
"""
# between the full and the incremental backup
DDL_INCR = """
CREATE TABLE u (a int, b jsonb, c numeric(10,2));
ALTER TABLE t ADD COLUMN w int DEFAULT 5;
ALTER TABLE t REPLICA IDENTITY FULL;
ALTER TYPE mood ADD VALUE 'meh';
INSERT INTO u SELECT g, '{}', g FROM generate_series(1, 100) g;
"""
# between the incremental and the differential backup
DDL_DIFF = """
CREATE SCHEMA s2;
CREATE TABLE s2.v (k text PRIMARY KEY, t timestamptz);
DROP TABLE u;
"""
# after the barman backup, one transaction each, decoded from barman's server directory
AFTER_BARMAN = [
    "INSERT INTO t (id, v, m) VALUES (1001, 'after barman', 'meh')",
    "UPDATE t SET m = 'happy', w = 6 WHERE id = 1001",
    "INSERT INTO s2.v VALUES ('k1', '2026-11-27 14:00+01')",
]


class Backups:
    """What the module fixture made: the repository, the barman server, the restored copies."""

    base: str
    repo: str
    barman_server: str
    labels: dict  # full, incr, diff -> pgBackRest label
    restored: dict  # label -> restored data directory
    barman_backup: str  # <server>/base/<id>
    barman_extracted: str
    after_barman: list  # the slot's rows (include-timestamp) of AFTER_BARMAN, archived into barman's wals/


@pytest.fixture(scope="module")
def backups():
    missing = missing_tools("pgbackrest", "barman", "tar")
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (./dev test installs them)")
    c, base = init_cluster("waldecode-catalog-backup")
    try:
        yield _make_backups(c, base)
    finally:
        try:
            c.stop()
        finally:
            c.cleanup()
            shutil.rmtree(base, ignore_errors=True)


def _make_backups(c: Cluster, base) -> Backups:
    b = Backups()
    b.base = str(base)
    repo = base / "repo"
    conf = pgbackrest_config(base, [STANZA, OTHER_STANZA], repo, "gz", c.pgdata, c.socket_dir, c.port,
                             extra={"repo1-retention-full": "9"})
    home = base / "barman"
    bconf = barman_config(base, home, {BARMAN_SERVER: None}, c.socket_dir, c.port,
                          extra={BARMAN_SERVER: {"backup_compression": "gzip", "path_prefix": str(c.bindir)}})
    # pgBackRest's archive check wants "pgbackrest" in archive_command: it is in the script's name
    command = archive_script(base / "pgbackrest-and-barman-archive.sh",
                             [pgbackrest_push(conf, STANZA), barman_incoming(home, BARMAN_SERVER)])
    with open(c.pgdata / "postgresql.conf", "a", encoding="utf-8") as f:
        f.write(f"archive_mode = on\narchive_command = '{command}'\n")
    c.start()
    # the database lives in a tablespace: pg_tblspc/<oid>/… in a pgBackRest set, <oid>.tar.gz beside
    # barman's base.tar.gz
    (base / "ts").mkdir()
    chown_to_server(base / "ts")
    c.sql(f"CREATE TABLESPACE ts LOCATION '{base / 'ts'}'")
    c.sql("CREATE DATABASE app TABLESPACE ts")
    with c.connect("app") as conn:
        conn.execute(SCHEMA)
    for stanza in (STANZA, OTHER_STANZA):
        pgbackrest(conf, stanza, "stanza-create")
    pgbackrest(conf, STANZA, "backup", "--type=full")
    with c.connect("app") as conn:
        conn.execute(DDL_INCR)
    pgbackrest(conf, STANZA, "backup", "--type=incr")
    with c.connect("app") as conn:
        conn.execute(DDL_DIFF)
    pgbackrest(conf, STANZA, "backup", "--type=diff", "--repo1-bundle")
    barman(bconf, "switch-wal", "--force", "--archive", BARMAN_SERVER)
    barman(bconf, "backup", BARMAN_SERVER)
    with c.connect("app") as conn:
        conn.execute("SELECT pg_create_logical_replication_slot('after_barman', 'test_decoding')")
        for stmt in AFTER_BARMAN:
            conn.execute(stmt)
        b.after_barman = [bytes(r[0]).decode() for r in conn.execute(
            "SELECT data FROM pg_logical_slot_peek_binary_changes('after_barman', NULL, NULL, "
            "'include-timestamp', '1')").fetchall()]
        conn.execute("SELECT pg_drop_replication_slot('after_barman')")
    barman(bconf, "switch-wal", "--force", "--archive", BARMAN_SERVER)  # into wals/, as barman cron would
    c.stop()

    b.repo = str(repo)
    sets = sorted(os.listdir(repo / "backup" / STANZA))
    b.labels = {kind: next(s for s in sets if s.endswith(suffix)) for kind, suffix in
                (("full", "F"), ("incr", "I"), ("diff", "D"))}
    b.restored = {}
    for label in b.labels.values():
        target = base / f"restored-{label}"
        pgbackrest(conf, STANZA, "restore", f"--set={label}", f"--pg1-path={target}",
                   f"--tablespace-map-all={base / f'restored-ts-{label}'}")
        b.restored[label] = str(target)
    b.barman_server = str(home / BARMAN_SERVER)
    (backup_id,) = os.listdir(home / BARMAN_SERVER / "base")
    b.barman_backup = str(home / BARMAN_SERVER / "base" / backup_id)
    b.barman_extracted = str(base / "barman-extracted")
    os.mkdir(b.barman_extracted)
    # as a restore lays it out: base.tar.gz in the data directory, <oid>.tar.gz in pg_tblspc/<oid>
    for tar in sorted(os.listdir(os.path.join(b.barman_backup, "data"))):
        if tar.endswith(".tar.gz"):
            oid = tar[:-len(".tar.gz")]
            into = b.barman_extracted if oid == "base" else os.path.join(b.barman_extracted, "pg_tblspc", oid)
            os.makedirs(into, exist_ok=True)
            subprocess.run(["tar", "-xzf", os.path.join(b.barman_backup, "data", tar), "-C", into], check=True)
    return b


def catalog(capsys, tmp_path, *args: str) -> tuple[int, dict | None, str]:
    """``waldecode catalog ARGS --database app -o FILE`` in-process: (exit status, the JSON, stderr)."""
    out = tmp_path / f"snap-{len(list(tmp_path.iterdir()))}.json"
    rc = waldecode_main(["catalog", *args, "--database", "app", "-o", str(out)])
    err = capsys.readouterr().err
    snap = json.loads(out.read_text()) if out.exists() else None
    return rc, snap, err


def differences(a: dict, b: dict, a_root: str, b_root: str) -> list[str]:
    """Every top-level field that differs, and inside relations and types every entry; the pages note
    names its data directory, which is the one thing allowed to differ."""
    a, b = dict(a), dict(b)
    a["catalog_pages_note"] = a.get("catalog_pages_note", "").replace(a_root, "<root>")
    b["catalog_pages_note"] = b.get("catalog_pages_note", "").replace(b_root, "<root>")
    out = []
    for key in sorted(a.keys() | b.keys()):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if isinstance(x, list) and isinstance(y, list) and all(isinstance(e, dict) and "oid" in e for e in x + y):
            x, y = {e["oid"]: e for e in x}, {e["oid"]: e for e in y}  # relations, types: by OID
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(x.keys() | y.keys()):
                if x.get(k) != y.get(k):
                    out.append(f"{key}[{k}]: {x.get(k)!r:.200} != {y.get(k)!r:.200}")
        else:
            out.append(f"{key}: {x!r:.200} != {y!r:.200}")
    return out


def _names(snap: dict) -> set[str]:
    return {r["relname"] for r in snap["relations"]}


# -- the same files: read in the repository, and restored by pgBackRest ------------------------------

@pytest.mark.parametrize("kind", ["full", "incr", "diff"])
def test_pgbackrest_set_equals_its_restore(backups, capsys, tmp_path, kind):
    label = backups.labels[kind]
    rc, got, err = catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", STANZA, "--backup-set", label)
    assert rc == 0, err
    assert err.splitlines()[0].startswith(f"waldecode: catalog from pgBackRest backup {label} ({kind}), stopped at ")
    rc, expected, err2 = catalog(capsys, tmp_path, "--datadir", backups.restored[label])
    assert rc == 0, err2
    set_root = os.path.join(backups.repo, "backup", STANZA, label, "pg_data")
    assert differences(expected, got, backups.restored[label], set_root) == []
    # and each set holds its own moment's catalog
    names = _names(got)
    assert "t" in names
    assert ("u" in names) == (kind == "incr")
    assert ("v" in names) == (kind == "diff")
    t = next(r for r in got["relations"] if r["relname"] == "t")
    assert [a["attname"] for a in t["attributes"]] == (["id", "v", "m"] if kind == "full" else ["id", "v", "m", "w"])


def test_pgbackrest_sets_exercise_references_and_bundles(backups):
    """The incremental set reads most files from the full one, the differential one from bundles."""
    stanza_dir = os.path.join(backups.repo, "backup", STANZA)
    incr = PgBackRestSet(os.path.join(stanza_dir, backups.labels["incr"]))
    diff = PgBackRestSet(os.path.join(stanza_dir, backups.labels["diff"]))
    referenced = [rel for rel, e in incr.files.items() if e.get("reference") == backups.labels["full"]]
    assert len(referenced) > len(incr.files) // 2
    assert incr.stored_path("PG_VERSION").endswith(f"{backups.labels['full']}/pg_data/PG_VERSION.gz")
    tblspc = [rel for rel, e in incr.files.items()  # the database's own files, in its tablespace
              if rel.startswith("pg_tblspc/") and e.get("reference") == backups.labels["full"]]
    assert tblspc and incr.stored_path(tblspc[0]).startswith(os.path.join(stanza_dir, backups.labels["full"],
                                                                           "pg_tblspc", ""))
    bundled = [rel for rel, e in diff.files.items() if "bni" in e and "reference" not in e]
    assert "global/pg_control" in bundled
    assert diff.read("global/pg_control") == open(os.path.join(backups.restored[backups.labels["diff"]],
                                                               "global", "pg_control"), "rb").read()


# -- barman ---------------------------------------------------------------------------------------------

def test_barman_tar_backup_equals_its_extracted_tar(backups, capsys, tmp_path):
    tars = sorted(os.listdir(os.path.join(backups.barman_backup, "data")))
    assert "base.tar.gz" in tars and any(t[0].isdigit() and t.endswith(".tar.gz") for t in tars), tars  # a tablespace
    rc, expected, err = catalog(capsys, tmp_path, "--datadir", backups.barman_extracted)
    assert rc == 0, err
    tar_root = os.path.join(backups.barman_backup, "data", "base.tar.gz")
    backup_id = os.path.basename(backups.barman_backup)
    for args in (("--backup", backups.barman_server), ("--backup", backups.barman_backup),
                 ("--datadir", backups.barman_backup)):
        rc, got, err = catalog(capsys, tmp_path, *args)
        assert rc == 0, (args, err)
        assert err.splitlines()[0].startswith(f"waldecode: catalog from barman backup {backup_id} (full), stopped at ")
        assert differences(expected, got, backups.barman_extracted, tar_root) == [], args
    assert {"t", "v"} <= _names(got) and "u" not in _names(got)


def test_documented_barman_decode_from_a_time(backups, tmp_path):
    """``decode --catalog SERVER --start-time T SERVER`` as the README shows it, barman's server directory for
    its path and for its example time the commit time the slot printed of the second transaction after the
    backup (barman keeps the WAL from its backup on, so the first commit in it is the first one's: from a
    time at or before that, an earlier commit could be missing and decode refuses): the catalog from that
    backup, said in one line, and the slot's rows from there to the WAL's end."""
    from doc_commands import argv, lane_command
    from td_rows import timed_transactions

    cmd = lane_command("tests/live/test_catalog_backup.py::test_documented_barman_decode_from_a_time")
    txns, current = timed_transactions(backups.after_barman)
    assert len(txns) == len(AFTER_BARMAN) and not current
    start = txns[1][0]
    args, _ = argv(cmd, {"/var/lib/barman/pg": backups.barman_server, "2026-11-27 14:00+01": start})
    assert args.count(backups.barman_server) == 2 and start in args, args
    r = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, capture_output=True, timeout=300)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    said = [ln for ln in err if not ln.startswith("waldecode: end of WAL at ")]
    backup_id = os.path.basename(backups.barman_backup)
    assert len(said) == 1 and said[0].startswith(f"waldecode: catalog from barman backup {backup_id} (full), "
                                                 "stopped at "), err
    assert r.stdout.decode() == "".join(row + "\n" for _t, rows in txns[1:] for row in rows)
    assert "m[mood]:'meh'" in r.stdout.decode()  # the UPDATE's old row: the value the incremental set's DDL added


# -- choosing the set -------------------------------------------------------------------------------------

def test_listing_and_choosing(backups):
    sets = list_backups(backups.repo, STANZA)
    assert [(s.label, s.type) for s in sets] == [(backups.labels[k], k) for k in ("full", "incr", "diff")]
    full, incr, diff = sets
    info = read_pgbackrest_ini(os.path.join(backups.repo, "backup", STANZA, "backup.info"))
    assert full.sysid == info["db"]["db-system-id"] and full.version == "15"
    assert full.stop_lsn < incr.stop_lsn < diff.stop_lsn
    assert find_backup(backups.repo, STANZA).label == diff.label
    assert find_backup(backups.repo, STANZA, before_lsn=incr.stop_lsn).label == incr.label
    assert find_backup(backups.repo, STANZA, before_lsn=incr.stop_lsn - 1).label == full.label
    assert find_backup(backups.repo, STANZA, before_time=incr.stop_time).label == incr.label
    if full.stop_time < incr.stop_time:  # pgBackRest's times are whole seconds
        assert find_backup(backups.repo, STANZA, before_time=incr.stop_time - timedelta(seconds=1)).label == full.label
    assert find_backup(os.path.join(backups.repo, "backup", STANZA), label=full.label).label == full.label
    assert find_backup(os.path.join(backups.repo, "archive", STANZA)).label == diff.label
    (bar,) = list_backups(backups.barman_server)
    assert bar.sysid == full.sysid and bar.version == "15" and bar.stop_lsn > diff.stop_lsn


def test_before_on_the_command_line(backups, capsys, tmp_path):
    incr = find_backup(backups.repo, STANZA, label=backups.labels["incr"])
    for before in (format_lsn(incr.stop_lsn), incr.stop_time.strftime("%Y-%m-%dT%H:%M:%S.%f"),
                   incr.stop_time.astimezone().isoformat()):
        rc, _snap, err = catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", STANZA, "--before", before)
        assert rc == 0, err
        assert err.splitlines()[0] == f"waldecode: catalog from {incr.describe()}", before


# -- bad input ----------------------------------------------------------------------------------------------

def _one_error_line(rc: int, snap, err: str) -> str:
    assert rc == 1 and snap is None, err
    lines = err.splitlines()
    assert len([x for x in lines if x.startswith("waldecode: error: ")]) == 1, err
    assert "Traceback" not in err
    return lines[-1]


def test_two_stanzas_need_stanza(backups, capsys, tmp_path):
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", backups.repo))
    assert line == (f"waldecode: error: {backups.repo}: the pgBackRest repository holds 2 stanzas "
                    f"({STANZA}, {OTHER_STANZA}): name one with --stanza")
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", "nope"))
    assert line == (f"waldecode: error: {backups.repo}: no stanza 'nope' in this pgBackRest repository "
                    f"(stanzas: {STANZA}, {OTHER_STANZA})")
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", OTHER_STANZA))
    assert line.endswith(": no usable backup")


def test_unknown_label(backups, capsys, tmp_path):
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", STANZA,
                                    "--backup-set", "20200101-000000F"))
    labels = ", ".join(backups.labels[k] for k in ("full", "incr", "diff"))
    assert line == (f"waldecode: error: pgBackRest stanza {STANZA} in {backups.repo}: no backup '20200101-000000F' "
                    f"(backups: {labels})")
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", backups.repo, "--stanza", STANZA,
                                    "--before", "0/1"))
    assert f"no backup stopped at or before 0/1 (the earliest, {backups.labels['full']}, stopped at " in line


def test_damaged_stored_files(backups, capsys, tmp_path):
    """A copy of the stanza: the incremental set's pg_control.gz with a byte flipped in its deflate data,
    then the full set's PG_VERSION.gz (read through a reference) holding other bytes."""
    repo = tmp_path / "repo"
    shutil.copytree(os.path.join(backups.repo, "backup", STANZA), repo / "backup" / STANZA, symlinks=True)
    incr, full = backups.labels["incr"], backups.labels["full"]
    control = repo / "backup" / STANZA / incr / "pg_data" / "global" / "pg_control.gz"
    data = bytearray(control.read_bytes())
    data[len(data) // 2] ^= 0xFF
    control.write_bytes(bytes(data))
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", str(repo), "--backup-set", incr))
    assert line.startswith(f"waldecode: error: {control}: ")
    assert "damaged" in line or "cannot decompress the stored file (gzip)" in line
    # the same bytes again, then a referenced file whose content is not what the manifest says
    shutil.copy(os.path.join(backups.repo, "backup", STANZA, incr, "pg_data", "global", "pg_control.gz"), control)
    version = repo / "backup" / STANZA / full / "pg_data" / "PG_VERSION.gz"
    version.write_bytes(gzip.compress(b"14\n"))
    line = _one_error_line(*catalog(capsys, tmp_path, "--backup", str(repo), "--backup-set", incr))
    assert line.startswith(f"waldecode: error: {version}: SHA-1 ")
    assert line.endswith("is not the manifest's 587b596f04f7db9c2cad3d6b87dd2b3a05de4f35: damaged")


def test_damaged_barman_tar(backups, capsys, tmp_path):
    backup = tmp_path / "base" / "20000101T000000"
    (backup / "data").mkdir(parents=True)
    shutil.copy(os.path.join(backups.barman_backup, "backup.info"), backup)
    data = bytearray(open(os.path.join(backups.barman_backup, "data", "base.tar.gz"), "rb").read())
    del data[len(data) // 2:]
    (backup / "data" / "base.tar.gz").write_bytes(bytes(data))
    line = _one_error_line(*catalog(capsys, tmp_path, "--datadir", str(backup)))
    assert line.startswith(f"waldecode: error: {backup}/data/base.tar.gz: cannot decompress the archive (gz): ")
