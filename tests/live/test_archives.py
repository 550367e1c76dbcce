"""WAL as the backup tools keep it: every layout and input form decodes and inspects as the server prints.

One throw-away PostgreSQL 15 cluster archives every segment, through one ``archive_command``, to
pgBackRest (three repositories: gz, lz4, zst; a fourth holding two stanzas), to barman's ``incoming/``
(three servers: no compression, gzip, bzip2; ``barman archive-wal`` files them after the workload) and
to a plain directory, from which WAL-G's layout is built with the real compressors (lz4, lzma, brotli,
zstd).  A catalog snapshot (``waldecode catalog --dsn``) and a test_decoding slot come first; the
workload spans several segments (a transaction over two of them, DDL); the cluster then goes through
an archive recovery that ends on timeline 2 (so the archives hold a ``.history`` file and the old
timeline's ``.partial`` segment, as after a failover) and commits once more there.

Expected outputs are the server's: the slot's rows (peeked up to the end of timeline 1, and up to
the end), and ``pg_waldump`` over a copy of ``pg_wal`` taken before the switch.  From every form —
a repository, ``archive/<stanza>``, ``<version>-<id>``, leaf directories, file lists, lists with
``.backup`` labels and ``archive.info`` in them, barman's server directory, ``wals/`` and leaves (with
and without ``xlog.db``), WAL-G's prefix and ``wal_005/``, a nested tree, files whose names do not tell
their compression — ``waldecode decode`` must write the slot's bytes and
``waldecode inspect`` pg_waldump's.  Bad input (a repository with two stanzas, a segment missing, a
damaged ``.gz``, a SHA-1 that is not the segment's, a directory with no WAL) is one line on stderr and
a non-zero exit, with nothing written to ``--output`` or ``--slot``; a directory is called a directory,
never a "WAL segment".
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import backup_tools as bt
from waldecode.cli import main

pytestmark = [pytest.mark.server, pytest.mark.slow]

TOOLS = ("pgbackrest", "barman", "lz4", "xz", "bzip2", "brotli", "zstd")
DB = "live"
STANZA = "main"
PGBACKREST_COMPRESSIONS = ("gz", "lz4", "zst")
BARMAN_SERVERS = {"pg-none": None, "pg-gzip": "gzip", "pg-bzip2": "bzip2"}
MULTI_STANZAS = ("alpha", "beta")

SCHEMA = bt.WORKLOAD_SCHEMA

# Parts of the workload on timeline 1, a pg_switch_wal() after each
WORKLOAD = [
    *bt.WORKLOAD_PARTS,
    ["ALTER TABLE acct ADD COLUMN note text",
     "UPDATE acct SET note = 'noted ' || id WHERE id % 4 = 0",
     "CREATE TABLE later (k int PRIMARY KEY, v jsonb)",
     "INSERT INTO later VALUES (1, '{\"a\": 1}'), (2, '[1, 2]')"],
    ["BEGIN", "INSERT INTO later VALUES (3, 'null')", "SELECT pg_logical_emit_message(true, 'arch', 'tl1 end')",
     "COMMIT"],
]
# On timeline 2, after the archive recovery
WORKLOAD_TL2 = ["INSERT INTO acct VALUES (102, 'after the switch', 2.5, 'tl2')",
                "UPDATE later SET v = '{\"tl\": 2}' WHERE k = 1"]


@dataclass
class Archives:
    """What the fixture built: where each tool's archive is, and what the server printed."""

    base: Path
    catalog: Path
    restart_lsn: str          # the slot's, the start of the pg_waldump range
    confirmed_lsn: str        # the slot's, decode's --start-lsn
    end_tl1: str              # the end of timeline 1's workload
    end: str                  # the end of the workload on timeline 2
    expected_tl1: bytes       # the slot's rows up to end_tl1, as pg_recvlogical -f writes them
    expected: bytes           # ... up to end
    waldump: bytes            # pg_waldump from restart_lsn to end_tl1
    segments: list[str]       # timeline 1's segment names from restart_lsn's to end_tl1's
    pgbackrest: dict[str, Path] = field(default_factory=dict)   # compress-type -> repository
    multi: Path | None = None                                    # a repository with two stanzas
    barman: dict[str, Path] = field(default_factory=dict)        # server -> server directory
    walg: dict[str, Path] = field(default_factory=dict)          # extension -> prefix
    barman_no_xlogdb: Path | None = None                         # a barman server without wals/xlog.db
    plain: Path | None = None                                    # cp %p DIR/%f
    tree: Path | None = None                                     # a nested tree, mixed compression
    misnamed: Path | None = None                                 # compressed files whose names mislead


def _rows(rows) -> bytes:
    return b"".join(bytes(r[0]) + b"\n" for r in rows)


def _peek(conn, slot: str, upto: str) -> bytes:
    # binary: a row's text as the server sent it, newlines inside included
    return _rows(conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL)",
                              (slot, upto)).fetchall())


def _nested_tree(dest: Path, plain: Path) -> Path:
    """A tree a DBA might have made by hand: segments in nested directories, some compressed (gzip with
    its extension, bzip2 and xz under other names), with notes and a .backup label around them."""
    files = sorted(plain.iterdir())
    (dest / "notes").mkdir(parents=True)
    (dest / "notes" / "README.txt").write_text("WAL saved after the incident\n")
    for i, f in enumerate(files):
        sub = dest / f"batch-{i % 3}" / ("old" if i % 2 else "new")
        sub.mkdir(parents=True, exist_ok=True)
        data = f.read_bytes()
        kind = i % 4
        if kind == 0 or not (len(f.name) == 24):
            (sub / f.name).write_bytes(data)
        elif kind == 1:
            (sub / f"{f.name}.gz").write_bytes(gzip.compress(data))
        elif kind == 2:
            (sub / f"{f.name}.bz2").write_bytes(bz2.compress(data))
        else:
            (sub / f"{f.name}.xz").write_bytes(lzma.compress(data))
    return dest


def _misnamed(dest: Path, plain: Path, segments: list[str]) -> Path:
    """Plain copies, but for two segments whose names do not tell their compression: zstd under the bare
    segment name, lz4 under a ``.gz`` name (the content decides, the extension is only a hint)."""
    dest.mkdir()
    odd = {segments[1]: ("zst", ""), segments[2]: ("lz4", ".gz")}
    for f in plain.iterdir():
        if f.name in odd:
            tool, suffix = odd[f.name]
            with open(f, "rb") as src, open(dest / (f.name + suffix), "wb") as dst:
                subprocess.run(bt.WALG_COMPRESSORS[tool], stdin=src, stdout=dst, check=True, timeout=60)
        else:
            shutil.copy(f, dest / f.name)
    return dest


@pytest.fixture(scope="module")
def archives():
    missing = bt.missing_tools(*TOOLS)
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)} (./dev test installs them)")
    from waldecode.testing.cluster import Cluster, ClusterError

    base = bt.server_tempdir()
    try:
        try:
            # archive_command stays empty until the stanzas exist: the server keeps every segment
            # .ready meanwhile, so the archives hold all of them from the first
            c = Cluster(15, settings={"archive_mode": "on", "archive_command": ""})
            c.__enter__()
        except ClusterError as e:
            pytest.skip(f"PostgreSQL 15 is not available: {e}")
        try:
            yield _build(c, base)
        finally:
            c.__exit__(None, None, None)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _build(c, base: Path) -> Archives:
    conf = base / "conf"
    conf.mkdir()
    bt.chown_to_server(conf)
    where = dict(pg_path=c.pgdata, socket_dir=c.socket_dir, port=c.port)
    commands = []
    a = Archives(base=base, catalog=base / "catalog.json", restart_lsn="", confirmed_lsn="", end_tl1="", end="",
                 expected_tl1=b"", expected=b"", waldump=b"", segments=[])
    # pgBackRest: one repository per compression, and one holding two stanzas of the same cluster
    for comp in PGBACKREST_COMPRESSIONS:
        repo = base / f"pgbackrest-{comp}"
        cfg = bt.pgbackrest_config(conf, STANZA, repo, comp, **where)
        bt.pgbackrest(cfg, STANZA, "stanza-create")
        commands.append(bt.pgbackrest_push(cfg, STANZA))
        a.pgbackrest[comp] = repo
    a.multi = base / "pgbackrest-multi"
    cfg = bt.pgbackrest_config(conf, MULTI_STANZAS, a.multi, "gz", **where)
    for s in MULTI_STANZAS:
        bt.pgbackrest(cfg, s, "stanza-create")
        commands.append(bt.pgbackrest_push(cfg, s))
    # barman: archiver = on, segments handed over in incoming/
    barman_home = base / "barman"
    barman_cfg = bt.barman_config(conf, barman_home, BARMAN_SERVERS, c.socket_dir, c.port)
    commands += [bt.barman_incoming(barman_home, s) for s in BARMAN_SERVERS]
    a.barman = {s: barman_home / s for s in BARMAN_SERVERS}
    # a plain copy, as archive_command = 'cp %p DIR/%f'
    a.plain = base / "plain"
    a.plain.mkdir()
    bt.chown_to_server(a.plain)
    commands.append(bt.copy_to(a.plain))
    command = bt.archive_script(base / "archive.sh", commands)
    c.sql("ALTER SYSTEM SET archive_command = %s" % _literal(command))
    c.sql("SELECT pg_reload_conf()")

    c.sql(f"CREATE DATABASE {DB}")
    with c.connect(DB) as conn:
        conn.execute(SCHEMA)
        # a backup label (.backup) in every archive, as a base backup leaves
        conn.execute("SELECT pg_backup_start('waldecode archives', true)")
        conn.execute("SELECT * FROM pg_backup_stop(true)")
    dsn = f"host={c.socket_dir} port={c.port} user=postgres dbname={DB}"
    assert main(["catalog", "--dsn", dsn, "-o", str(a.catalog)]) == 0
    slot = "archives"
    with c.connect(DB) as conn:
        conn.execute("CHECKPOINT")
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
        a.restart_lsn, a.confirmed_lsn = conn.execute(
            "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (slot,)).fetchone()
        for part in WORKLOAD:
            for s in part:
                conn.execute(s)
            conn.execute("SELECT pg_switch_wal()")
        conn.execute("INSERT INTO acct VALUES (103, 'last of tl1', 3)")
        a.end_tl1 = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        a.expected_tl1 = _peek(conn, slot, a.end_tl1)
        first, last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn), pg_walfile_name(%s::pg_lsn)",
                                   (a.restart_lsn, a.end_tl1)).fetchone()
        conn.execute("SELECT pg_switch_wal()")
        # the server's restore_command for the archive recovery below: nothing to restore
        conn.execute("ALTER SYSTEM SET restore_command = 'false'")
    bt.wait_archived(c)
    a.segments = [f.name for f in sorted(c.waldir.iterdir())
                  if len(f.name) == 24 and first[8:] <= f.name[8:] <= last[8:]]
    pg_wal_copy = c.archive_wal(base / "pg_wal-tl1", first, last)
    bt.chown_to_server(pg_wal_copy)  # copied by root with pg_wal's modes: pg_waldump runs as the server's user
    a.waldump = c.run_bin("pg_waldump", "--path", pg_wal_copy, "--start", a.restart_lsn, "--end", a.end_tl1,
                          text=False).stdout

    # An archive recovery that ends at once (restore_command finds nothing): timeline 2, its .history
    # file and timeline 1's last segment as .partial go to the archives too
    c.stop()
    signal = c.pgdata / "recovery.signal"
    signal.write_text("")
    bt.chown_to_server(signal)
    c.start()
    deadline = time.monotonic() + 60
    while c.sql("SELECT pg_is_in_recovery()")[0][0]:
        assert time.monotonic() < deadline, c.log_tail()
        time.sleep(0.1)
    assert c.sql("SELECT pg_walfile_name(pg_current_wal_lsn())")[0][0].startswith("00000002"), c.log_tail()
    with c.connect(DB) as conn:
        for s in WORKLOAD_TL2:
            conn.execute(s)
        a.end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        a.expected = _peek(conn, slot, a.end)
        conn.execute("SELECT pg_switch_wal()")
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    bt.wait_archived(c)
    for server in BARMAN_SERVERS:
        bt.barman(barman_cfg, "archive-wal", server)
    # xlog.db is a hint where it exists, never needed
    a.barman_no_xlogdb = base / "barman-no-xlogdb" / "pg-gzip"
    shutil.copytree(a.barman["pg-gzip"], a.barman_no_xlogdb, ignore=shutil.ignore_patterns("xlog.db", "incoming"))
    # WAL-G's layout, and a hand-made tree, from the plain copies
    for ext in bt.WALG_COMPRESSORS:
        a.walg[ext] = bt.walg_layout(base / f"walg-{ext}", a.plain, ext)
    a.tree = _nested_tree(base / "tree", a.plain)
    a.misnamed = _misnamed(base / "misnamed", a.plain, a.segments)
    return a


def _literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# -- the input forms ------------------------------------------------------------------------------

def _archive_id_dir(repo: Path, stanza: str = STANZA) -> Path:
    """``archive/<stanza>/<version>-<id>``: the only one a fresh stanza has."""
    (d,) = [p for p in (repo / "archive" / stanza).iterdir() if p.is_dir()]
    return d


def _leaves(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.is_dir() and len(p.name) == 16)


def _files_under(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file())


def _form(a: Archives, name: str) -> tuple[list[str], bool]:
    """The paths (and options) of an input form, and whether it holds timeline 1 only."""
    layout, _, form = name.partition(":")
    tool, _, variant = layout.partition("-")
    if tool == "pgbackrest":
        repo = a.pgbackrest[variant]
        idd = _archive_id_dir(repo)
        tl1_leaf, *_ = _leaves(idd)
        # as a shell expands archive/main/* archive/main/*/* archive/main/*/*/*: archive.info, .backup files,
        # and the directories themselves (which a glob of files would not list) left out
        glob = [*sorted((repo / "archive" / STANZA).glob("*")), *sorted(idd.glob("*")), *sorted(idd.glob("*/*"))]
        return {
            "repository": ([repo], False),
            "stanza": ([repo / "archive" / STANZA], False),
            "archive-id": ([idd], False),
            "leaf": ([tl1_leaf], True),
            "leaves+history": ([*_leaves(idd), *sorted(idd.glob("*.history"))], False),
            "files": ([p for p in _files_under(idd) if "-" in p.name or p.name.endswith(".history")], False),
            "glob": ([p for p in glob if p.is_file()], False),
        }[form]
    if tool == "multi":
        return [a.multi, "--stanza", MULTI_STANZAS[1]], False
    if tool == "barman":
        server = a.barman_no_xlogdb if variant == "no_xlogdb" else a.barman[f"pg-{variant}"]
        wals = server / "wals"
        return {
            "server": ([server], False),
            "wals": ([wals], False),
            "leaf": ([_leaves(wals)[0]], True),
            "leaves+history": ([*_leaves(wals), *sorted(wals.glob("*.history"))], False),
        }[form]
    if tool == "walg":
        prefix = a.walg[variant]
        return {"prefix": ([prefix], False), "wal_005": ([prefix / "wal_005"], False)}[form]
    if tool == "plain":
        return [a.plain], False
    if tool == "tree":
        return [a.tree], False
    if tool == "misnamed":
        return [a.misnamed], False
    raise AssertionError(name)


FORMS = [
    *(f"pgbackrest-{comp}:{form}" for comp in PGBACKREST_COMPRESSIONS
      for form in ("repository", "stanza", "archive-id", "leaf", "leaves+history", "files", "glob")),
    "multi-stanza:--stanza",
    *(f"barman-{s.split('-')[1]}:{form}" for s in BARMAN_SERVERS
      for form in ("server", "wals", "leaf", "leaves+history")),
    *(f"walg-{ext}:{form}" for ext in bt.WALG_COMPRESSORS for form in ("prefix", "wal_005")),
    "barman-no_xlogdb:server", "barman-no_xlogdb:wals",
    "plain:directory",
    "tree:nested",
    "misnamed:directory",
]


def _cli(argv, capfdbinary) -> tuple[int, bytes, list[str]]:
    status = main([str(x) for x in argv])
    sys.stdout.flush()
    out, err = capfdbinary.readouterr()
    return status, out, err.decode("utf-8", "replace").splitlines()


# -- the harness built the archives as the tools keep them -------------------------------------------

def test_workload_spans_segments_and_timelines(archives):
    a = archives
    assert len(a.segments) >= 4
    assert a.expected_tl1 and a.expected.startswith(a.expected_tl1) and len(a.expected) > len(a.expected_tl1)
    assert b"after the switch" in a.expected and a.expected.count(b"table public.events: INSERT:") == 6000
    assert a.waldump.count(b"\n") > 6000
    history = [p.name for p in a.plain.iterdir() if p.name.endswith(".history")]
    assert history == ["00000002.history"]
    assert any(p.name.endswith(".partial") for p in a.plain.iterdir())
    assert any(p.name.endswith(".backup") for p in a.plain.iterdir())


@pytest.mark.parametrize("comp,magic", [("gz", b"\x1f\x8b"), ("lz4", b"\x04\x22\x4d\x18"),
                                        ("zst", b"\x28\xb5\x2f\xfd")])
def test_pgbackrest_repository_layout(archives, comp, magic):
    import hashlib

    repo = archives.pgbackrest[comp]
    assert (repo / "archive" / STANZA / "archive.info").is_file()
    assert (repo / "backup" / STANZA / "backup.info").is_file()
    idd = _archive_id_dir(repo)
    assert idd.name == "15-1"
    leaves = _leaves(idd)
    assert [p.name for p in leaves] == ["0000000100000000", "0000000200000000"]
    assert (idd / "00000002.history").is_file()
    names = {p.name for p in _files_under(idd)}
    for seg in archives.segments:
        (f,) = [idd / seg[:16] / n for n in names if n.startswith(seg + "-")]
        assert f.name.endswith("." + comp) and f.read_bytes()[:4].startswith(magic)
        sha1 = f.name[25:65]
        assert hashlib.sha1((archives.plain / seg).read_bytes()).hexdigest() == sha1
    assert any(".partial-" in n for n in names)


def test_barman_layout(archives):
    for server, comp in BARMAN_SERVERS.items():
        wals = archives.barman[server] / "wals"
        assert (wals / "xlog.db").is_file()
        assert (wals / "00000002.history").is_file()
        for seg in archives.segments:
            f = wals / seg[:16] / seg
            data = f.read_bytes()
            head = {None: (archives.plain / seg).read_bytes()[:4], "gzip": b"\x1f\x8b", "bzip2": b"BZh"}[comp]
            assert data.startswith(head), (f, data[:4])
        # timeline 1's last segment, cut at the switch, under pg_wal's name; the base backup's label
        dotted = sorted(p.suffix for p in (wals / "0000000100000000").iterdir() if "." in p.name)
        assert dotted == [".backup", ".partial"]
    assert not (archives.barman_no_xlogdb / "wals" / "xlog.db").exists()


def test_walg_layout(archives):
    magic = {"lz4": b"\x04\x22\x4d\x18", "lzma": b"\x5d\x00\x00", "zst": b"\x28\xb5\x2f\xfd", "br": b""}
    for ext, prefix in archives.walg.items():
        wal = prefix / "wal_005"
        assert (wal / f"00000002.history.{ext}").is_file()
        for seg in archives.segments:
            assert (wal / f"{seg}.{ext}").read_bytes().startswith(magic[ext])


# -- every form decodes as the slot and inspects as pg_waldump ----------------------------------------

@pytest.mark.parametrize("form", FORMS)
def test_decode_equals_slot(archives, form, tmp_path, capfdbinary):
    a = archives
    paths, tl1_only = _form(a, form)
    out = tmp_path / "out"
    status, _, err = _cli(["decode", "--catalog", a.catalog, "--start-lsn", a.confirmed_lsn,
                           "--end-lsn", a.end_tl1 if tl1_only else a.end, "--output", out, "--quiet",
                           "--spill-dir", tmp_path, *paths], capfdbinary)
    errors = [ln for ln in err if "note:" not in ln]
    assert (status, errors) == (0, []), err
    assert out.read_bytes() == (a.expected_tl1 if tl1_only else a.expected)


@pytest.mark.parametrize("form", FORMS)
def test_inspect_equals_pg_waldump(archives, form, capfdbinary):
    a = archives
    paths, _ = _form(a, form)
    status, out, err = _cli(["inspect", "--quiet", "--start-lsn", a.restart_lsn, "--end-lsn", a.end_tl1, *paths],
                            capfdbinary)
    assert (status, err) == (0, []), err
    assert out == a.waldump


def test_command_line_writes_the_slot_to_stdout(archives):
    """The installed command, as a DBA runs it on a repository: stdout is the slot's bytes."""
    a = archives
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(a.catalog),
                           "--start-lsn", a.confirmed_lsn, "--end-lsn", a.end, str(a.pgbackrest["zst"])],
                          capture_output=True, timeout=300)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert proc.stdout == a.expected


# -- bad input: one line, a non-zero exit, nothing written ------------------------------------------

def _refused(a: Archives, paths, tmp_path, capfdbinary, *extra) -> str:
    """Decode ``paths`` into --output and --slot files: the one line on stderr (asserting the rest)."""
    out, slot = tmp_path / "refused.out", tmp_path / "refused.slot"
    status, stdout, err = _cli(["decode", "--catalog", a.catalog, "--start-lsn", a.confirmed_lsn, "--quiet",
                                "--output", out, "--slot", slot, *extra, *paths], capfdbinary)
    left = {"stdout": len(stdout), "--output": out.stat().st_size if out.exists() else 0,
            "--slot": slot.stat().st_size if slot.exists() else 0}
    assert (status != 0, len(err), [n for n, size in left.items() if size]) == (True, 1, []), (status, err, left)
    assert err[0].startswith("waldecode: error: ") and not slot.exists(), err
    return err[0]


def _copy_repo(repo: Path, dest: Path) -> tuple[Path, Path]:
    shutil.copytree(repo, dest)
    return dest, _archive_id_dir(dest)


def test_two_stanzas_need_stanza(archives, tmp_path, capfdbinary):
    line = _refused(archives, [archives.multi], tmp_path, capfdbinary)
    assert all(s in line for s in MULTI_STANZAS), line
    assert str(archives.multi) in line, line


def test_unknown_stanza(archives, tmp_path, capfdbinary):
    line = _refused(archives, [archives.multi], tmp_path, capfdbinary, "--stanza", "gamma")
    assert "gamma" in line, line


def test_missing_segment_in_repository(archives, tmp_path, capfdbinary):
    repo, idd = _copy_repo(archives.pgbackrest["gz"], tmp_path / "repo")
    gone = archives.segments[len(archives.segments) // 2]
    (victim,) = (idd / gone[:16]).glob(gone + "-*")
    victim.unlink()
    line = _refused(archives, [repo], tmp_path, capfdbinary)
    assert gone in line, line


def test_corrupt_gz_names_the_file(archives, tmp_path, capfdbinary):
    repo, idd = _copy_repo(archives.pgbackrest["gz"], tmp_path / "repo")
    seg = archives.segments[1]
    (victim,) = (idd / seg[:16]).glob(seg + "-*.gz")
    data = bytearray(victim.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 16] = bytes(b ^ 0xFF for b in data[middle:middle + 16])
    victim.write_bytes(bytes(data))
    line = _refused(archives, [repo], tmp_path, capfdbinary)
    assert victim.name in line, line


def test_sha1_mismatch_names_the_file(archives, tmp_path, capfdbinary):
    """Another segment's bytes under a segment's name and SHA-1 (as a botched copy would leave)."""
    repo, idd = _copy_repo(archives.pgbackrest["zst"], tmp_path / "repo")
    seg, other = archives.segments[1], archives.segments[2]
    (victim,) = (idd / seg[:16]).glob(seg + "-*.zst")
    (donor,) = (idd / other[:16]).glob(other + "-*.zst")
    victim.write_bytes(donor.read_bytes())
    line = _refused(archives, [repo], tmp_path, capfdbinary)
    assert victim.name in line and "sha" in line.lower(), line


def test_sha1_in_name_not_the_content(archives, tmp_path, capfdbinary):
    """A segment's right bytes under a name carrying another segment's SHA-1."""
    repo, idd = _copy_repo(archives.pgbackrest["lz4"], tmp_path / "repo")
    seg, other = archives.segments[1], archives.segments[2]
    (victim,) = (idd / seg[:16]).glob(seg + "-*.lz4")
    (donor,) = (idd / other[:16]).glob(other + "-*.lz4")
    renamed = victim.with_name(seg + donor.name[24:])
    victim.rename(renamed)
    line = _refused(archives, [repo], tmp_path, capfdbinary)
    assert renamed.name in line and "sha" in line.lower(), line


@pytest.mark.parametrize("what", ["empty", "labels-only", "pgbackrest-backup"])
def test_directory_without_wal(archives, tmp_path, capfdbinary, what):
    """A directory holding no WAL is named as a directory, never as a "WAL segment"."""
    d = tmp_path / what
    if what == "empty":
        d.mkdir()
    elif what == "labels-only":
        d.mkdir()
        for p in archives.plain.glob("*.backup"):
            shutil.copy(p, d / p.name)
        (d / "notes.txt").write_text("nothing here\n")
    else:  # a repository's backup/ side, which holds no WAL
        d = archives.pgbackrest["gz"] / "backup" / STANZA
    for line in (_refused(archives, [d], tmp_path, capfdbinary), _inspect_refused(d, capfdbinary)):
        assert str(d) in line and "director" in line, line
        assert f"segment {d}" not in line and f"segment file {d}" not in line, line


def _inspect_refused(path, capfdbinary) -> str:
    status, out, err = _cli(["inspect", "--quiet", path], capfdbinary)
    assert status != 0 and out == b"", out[:200]
    assert len(err) == 1 and err[0].startswith("waldecode: error: "), err
    return err[0]


# -- timelines and diverge read every layout as they read plain files -----------------------------------

LAYOUT_SAMPLES = ["pgbackrest-gz:repository", "barman-bzip2:server", "walg-br:prefix", "tree:nested"]


def _without_paths(text: bytes) -> list[str]:
    # the file each timeline's WAL ends in is named by its path: the same segment, another file
    import re

    return [re.sub(r" in \S+: ", " in FILE: ", ln) for ln in text.decode().splitlines()]


@pytest.mark.parametrize("form", LAYOUT_SAMPLES)
def test_timelines_as_of_plain_files(archives, form, capfdbinary):
    a = archives
    paths, _ = _form(a, form)
    status, expected, err = _cli(["timelines", "--start-lsn", a.confirmed_lsn, a.plain], capfdbinary)
    assert (status, err) == (0, [])
    assert "timeline 2" in expected.decode()
    status, out, err = _cli(["timelines", "--start-lsn", a.confirmed_lsn, *paths], capfdbinary)
    assert (status, err) == (0, [])
    assert _without_paths(out) == _without_paths(expected)


@pytest.mark.parametrize("form", LAYOUT_SAMPLES)
def test_diverge_as_of_plain_files(archives, form, tmp_path, capfdbinary):
    """The old timeline 1 decoded past 00000002.history's switch point: the same report from every layout."""
    import json

    a = archives
    paths, _ = _form(a, form)

    def report(old) -> dict:
        out = tmp_path / "report.json"
        status, _, err = _cli(["diverge", "--old", *old, "--catalog", a.catalog, "--format", "json", "--changes",
                               "--output", out], capfdbinary)
        assert status == 0, err
        return json.loads(out.read_text())

    expected = report([a.plain])
    assert expected["old_timeline"] == 1 and expected["switch_lsn"]
    assert report(paths) == expected
