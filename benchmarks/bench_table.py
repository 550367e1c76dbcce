"""Benchmark: one table as of a target, the DBA's way with PostgreSQL 15 against ``waldecode table`` (issue 23).

Builds, on a throw-away PostgreSQL 15 cluster that archives its WAL (``archive_command`` copying into
a directory), a database of about ``--size-gb`` GiB: pgbench's tables (``pgbench -i``) for nine
tenths and ``orders`` (about 200-byte rows) for one tenth, vacuumed; the bulk's WAL is dropped from
the archive, then a plain base backup (``pg_basebackup -Fp -X none``) is taken.  A workload follows:
pgbench for ``--seconds`` (two clients), updates, deletes and inserts on ``orders``, a VACUUM of it;
the target is the insert LSN after it.  The primary is stopped, then the same rows are got twice:

(a) as a DBA does: the backup copied (``cp -a``) into a new data directory, ``recovery.signal``,
    ``restore_command`` from the archive, ``recovery_target_lsn`` and ``recovery_target_action =
    'promote'``, the server started (in the foreground, under the measuring helper) until it promoted,
    ``psql -c 'COPY orders TO STDOUT'`` into a file, the server stopped;
(b) ``waldecode table --backup ... --table orders --at LSN --format copy --output FILE ARCHIVE``.

Each step runs under ``waldecode.bench.measure.run_measured`` (wall time, and peak RSS as the process
and the children it waited for saw it: for the server, the largest of its processes, shared buffers
counted in each one that touched them).  Prints the sizes, each step's time and peak RSS, the totals,
the ratio, and whether both files hold the same rows (as multisets: the row count and a sum of row
hashes); exits 1 when they differ.  ``--profile FILE`` also runs (b) under cProfile and prints the
functions with the most cumulative time.

Run (as root the servers run as ``postgres``)::

    nice -n 19 .venv/bin/python benchmarks/bench_table.py [--size-gb 2] [--seconds 30] [--work-dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pstats
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from waldecode.bench.measure import Measurement, run_measured
from waldecode.redo.backup_label import read_backup_label
from waldecode.testing.cluster import SERVER_USER, Cluster

DB = "bench"
#: pgbench_accounts and its index take about 15.6 MiB per unit of scale (pgbench -i)
MIB_PER_SCALE = 15.6
#: an ``orders`` row (text of about 170 bytes, a few numbers) takes about 250 bytes on disk
ORDERS_ROW_BYTES = 250

# src/include/utils/pidfile.h: LOCK_FILE_LINE_PM_STATUS (1-based), PM_STATUS_READY
LOCK_FILE_LINE_PM_STATUS = 8
PM_STATUS_READY = "ready"


def as_server(argv: list[str]) -> list[str]:
    """``argv`` run as the server's user when this process is root (the server refuses root)."""
    return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else argv


def chown_to_server(path: Path) -> None:
    if os.geteuid() == 0:
        pw = pwd.getpwnam(SERVER_USER)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def rows_digest(path: Path) -> str:
    """The rows of a ``COPY ... TO STDOUT`` file as a multiset, in constant memory: how many, and the sum
    modulo 2**256 of each line's SHA-256 (a row's line break is escaped: a line is a row)."""
    n = total = 0
    with open(path, "rb") as f:
        for line in f:
            total += int.from_bytes(hashlib.sha256(line.rstrip(b"\n")).digest(), "big")
            n += 1
    return f"{n} rows, sha256 sum {total % 2 ** 256:064x}"


def build(work: Path, size_gb: float, seconds: int) -> dict:
    """The primary, its data, the backup, the workload; returns what the two ways need."""
    archive = work / "archive"
    archive.mkdir()
    chown_to_server(archive)
    # archive_command: cp %p DIR/%f, as a DBA's simplest archive
    settings = {"archive_mode": "on", "archive_command": f"cp %p {shlex.quote(str(archive))}/%f",
                "max_wal_size": "8GB", "checkpoint_timeout": "1h", "wal_level": "replica",
                # initdb's default, which the restored copy keeps (the test clusters' 32MB would flatter (a)'s
                # memory); fsync stays off as in every throw-away cluster, which flatters (a)'s time
                "shared_buffers": "128MB"}
    c = Cluster(15, settings=settings, base_dir=work)
    c.__enter__()
    try:
        c.sql(f"CREATE DATABASE {DB}")
        scale = max(1, round(size_gb * 1024 * 0.9 / MIB_PER_SCALE))
        orders = int(size_gb * 1024 ** 3 * 0.1 / ORDERS_ROW_BYTES)
        t = time.perf_counter()
        c.run_bin("pgbench", "-i", "-q", "-s", str(scale), "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  DB, timeout=7200)
        with c.connect(DB) as conn:
            conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY, customer int, amount numeric(12,2), "
                         "status text, note text, created timestamptz)")
            conn.execute(f"INSERT INTO orders SELECT g, g % 10007, (g % 100000) / 100.0, 'new', "
                         f"repeat(md5(g::text), 5), '2026-01-01'::timestamptz + g * interval '1 second' "
                         f"FROM generate_series(1, {orders}) g")
            conn.execute("VACUUM ANALYZE")
            conn.execute("SELECT pg_switch_wal()")
            _wait_archived(c)
            for f in archive.iterdir():  # the bulk's WAL: before the backup, no recovery reads it
                f.unlink()
            conn.execute("CHECKPOINT")
            sizes = conn.execute("SELECT pg_database_size(%s), pg_total_relation_size('orders'), "
                                 "pg_relation_size('orders')", (DB,)).fetchone()
        load_seconds = time.perf_counter() - t
        backup = work / "backup"
        c.run_bin("pg_basebackup", "-D", backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres", "-Fp",
                  "-X", "none", "-c", "fast", "--no-sync", timeout=7200)
        t = time.perf_counter()
        with c.connect(DB) as conn:
            conn.execute("UPDATE orders SET status = 'paid', amount = amount + 1 WHERE id % 20 = 0")
        c.run_bin("pgbench", "-n", "-c", "2", "-j", "2", "-T", str(seconds), "-h", c.socket_dir, "-p", str(c.port),
                  "-U", "postgres", DB, timeout=seconds + 600)
        with c.connect(DB) as conn:
            conn.execute("DELETE FROM orders WHERE id % 100 = 1")
            conn.execute(f"INSERT INTO orders SELECT g, g % 10007, 1, 'late', md5(g::text), now() "
                         f"FROM generate_series({orders + 1}, {orders + orders // 50}) g")
            conn.execute("VACUUM orders")
            conn.execute("UPDATE orders SET note = 'last' WHERE id = 2")
            target = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            conn.execute("SELECT pg_switch_wal()")
        _wait_archived(c)
        workload_seconds = time.perf_counter() - t
    finally:
        c.__exit__(None, None, None)
    start = read_backup_label(backup).start_wal_file
    wal = sum(f.stat().st_size for f in archive.iterdir() if f.name >= start and len(f.name) == 24)
    return {"bindir": c.bindir, "backup": backup, "archive": archive, "target": target, "db_bytes": sizes[0],
            "table_bytes": sizes[1], "heap_bytes": sizes[2], "wal_bytes": wal, "scale": scale, "orders": orders,
            "load_seconds": load_seconds, "workload_seconds": workload_seconds}


def _wait_archived(c: Cluster, timeout: float = 600) -> None:
    """Until pg_wal/archive_status holds no .ready: the archiver pushed every segment."""
    status = c.waldir / "archive_status"
    deadline = time.monotonic() + timeout
    while any(f.suffix == ".ready" for f in status.iterdir()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"archiving did not finish; server log:\n{c.log_tail()}")
        time.sleep(0.2)


def dba_way(env: dict, work: Path, out: Path) -> dict:
    """(a): restore, recover to the target, promote, COPY, as a DBA does; each step measured."""
    bindir = env["bindir"]
    data = work / "restored"
    steps: dict[str, Measurement] = {}
    steps["restore (cp -a)"] = run_measured(as_server(["cp", "-a", str(env["backup"]), str(data)]), what="cp -a")
    sock = work / "restore-sock"
    sock.mkdir()
    chown_to_server(sock)
    conf = {"restore_command": f"cp {shlex.quote(str(env['archive']))}/%f %p",
            "recovery_target_lsn": env["target"], "recovery_target_action": "promote",
            "archive_mode": "off", "hot_standby": "off",  # promoted once postmaster.pid says "ready"
            "unix_socket_directories": str(sock), "port": "5432", "listen_addresses": ""}
    with open(data / "postgresql.auto.conf", "a", encoding="utf-8") as f:
        f.writelines(f"{k} = '{v}'\n" for k, v in conf.items())
    (data / "recovery.signal").write_bytes(b"")
    server: dict = {}

    def run_server():
        try:
            server["m"] = run_measured(as_server([str(bindir / "postgres"), "-D", str(data)]),
                                       stdout=work / "restored.log", what="postgres (recovery)")
        except Exception as e:  # reported by the main thread
            server["error"] = e

    started = time.perf_counter()
    thread = threading.Thread(target=run_server)
    thread.start()
    pidfile = data / "postmaster.pid"
    while True:
        try:
            lines = pidfile.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        if len(lines) >= LOCK_FILE_LINE_PM_STATUS and lines[LOCK_FILE_LINE_PM_STATUS - 1].strip() == PM_STATUS_READY:
            break
        if not thread.is_alive():
            raise RuntimeError(f"the recovering server stopped: {server.get('error')}")
        time.sleep(0.05)
    recovery_seconds = time.perf_counter() - started
    try:
        steps["COPY (psql)"] = run_measured(
            as_server([str(bindir / "psql"), "-X", "-h", str(sock), "-p", "5432", "-U", "postgres", "-d", DB,
                       "-c", "COPY orders TO STDOUT"]), stdout=out, what="psql COPY")
    finally:
        subprocess.run(as_server([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                       capture_output=True, check=False)
        thread.join()
    if "error" in server:
        raise server["error"]
    steps["recovery + promote (postgres)"] = Measurement(recovery_seconds, server["m"].rss_mb,
                                                         rss_method=server["m"].rss_method)
    return steps


def waldecode_way(env: dict, work: Path, out: Path) -> Measurement:
    """(b): ``waldecode table ... --format copy``."""
    return run_measured([sys.executable, "-c", _CLI, *_table_args(env, work, out)], what="waldecode table",
                        env=_env())


_CLI = "import sys; from waldecode.cli import main; sys.exit(main(sys.argv[1:]))"


def _table_args(env: dict, work: Path, out: Path) -> list[str]:
    return ["table", "--backup", str(env["backup"]), "--table", "public.orders", "--at", env["target"],
            "--database", DB, "--format", "copy", "--work-dir", str(work), "--output", str(out),
            str(env["archive"])]


def _env() -> dict:
    # this checkout's waldecode, as this script imports it
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def profile(env: dict, work: Path, out: Path, path: Path) -> None:
    script = work / "waldecode_cli.py"  # cProfile runs a script or a module, not -c
    script.write_text(_CLI + "\n")
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(path), str(script), *_table_args(env, work, out)],
                   env=_env(), check=True)
    pstats.Stats(str(path)).sort_stats("cumulative").print_stats(30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gb", type=float, default=2.2, help="the database's size, roughly (default 2.2 GiB)")
    ap.add_argument("--seconds", type=int, default=30, help="pgbench's time in the workload after the backup")
    ap.add_argument("--work-dir", help="where the cluster, backup, archive and outputs go (default: a temporary "
                                       "directory, removed at the end unless --keep); one a run kept is "
                                       "measured again without building anything")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--profile", metavar="FILE", help="also run waldecode table under cProfile, stats to FILE")
    args = ap.parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="waldecode-bench-table-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    chown_to_server(work)
    try:
        saved = work / "bench-table.json"
        if saved.exists():  # a kept work directory: measure again on the same backup, archive and target
            env = json.loads(saved.read_text())
            env.update(backup=Path(env["backup"]), archive=Path(env["archive"]), bindir=Path(env["bindir"]))
            for old in ("restored", "restore-sock", "dba.copy", "waldecode.copy", "profile.copy"):
                shutil.rmtree(work / old, ignore_errors=True) if (work / old).is_dir() else \
                    (work / old).unlink(missing_ok=True)
        else:
            env = build(work, args.size_gb, args.seconds)
            saved.write_text(json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in env.items()}))
        print(f"database {env['db_bytes'] / 2 ** 30:.2f} GiB (pgbench scale {env['scale']}); orders "
              f"{env['table_bytes'] / 2 ** 20:.0f} MiB with its index, heap {env['heap_bytes'] / 2 ** 20:.0f} MiB "
              f"({env['orders']} rows before the workload); WAL from the backup to the target "
              f"{env['wal_bytes'] / 2 ** 20:.0f} MiB; target {env['target']}; load {env['load_seconds']:.0f} s, "
              f"workload {env['workload_seconds']:.0f} s; load average {os.getloadavg()[0]:.1f}")
        a_out, b_out = work / "dba.copy", work / "waldecode.copy"
        steps = dba_way(env, work, a_out)
        b = waldecode_way(env, work, b_out)
        a_seconds = sum(m.seconds for m in steps.values())
        a_rss = max(m.rss_mb for m in steps.values())
        print(f"\n{'':40} {'wall s':>8} {'peak RSS MiB':>13}")
        for name, m in steps.items():
            print(f"  (a) {name:35} {m.seconds:8.1f} {m.rss_mb:13.0f}")
        print(f"(a) restore + recovery + promote + COPY {a_seconds:8.1f} {a_rss:13.0f}")
        print(f"(b) waldecode table --format copy       {b.seconds:8.1f} {b.rss_mb:13.0f}   "
              f"(CPU {b.cpu_seconds:.1f} s)")
        print(f"(b) / (a): wall {b.seconds / a_seconds:.2f}x, peak RSS {b.rss_mb / a_rss:.2f}x; "
              f"load average {os.getloadavg()[0]:.1f}; RSS by {b.rss_method}")
        da, db = rows_digest(a_out), rows_digest(b_out)
        same = da == db
        print(f"rows: (a) {da}\n      (b) {db}\n      {'identical' if same else 'DIFFERENT'}")
        if args.profile:
            profile(env, work, work / "profile.copy", Path(args.profile))
        return 0 if same else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


if __name__ == "__main__":
    sys.exit(main())
