"""The backup tools DBAs keep WAL with, run against a live test cluster: pgBackRest, barman, WAL-G's layout.

Owns what the live tests need to make real archives: the tools' configuration files
(``pgbackrest_config``, ``barman_config``), the shell commands an ``archive_command`` runs for each
(``pgbackrest_push``, ``barman_incoming``, ``copy_to``) gathered in one script (``archive_script``),
running the tools as the server's unprivileged user (``run_as_server``, ``pgbackrest``, ``barman``),
directories that user can write (``server_tempdir``), and WAL-G's layout ``<prefix>/wal_005/<name>.<ext>``
built from plain copies with the real compressors (``walg_layout``).  Hands the tests paths: the
repositories, barman server directories and WAL-G prefixes as each tool lays them out.

pgBackRest 2.45 and barman 3.4 are Debian's; WAL-G itself is not packaged, so its layout is written
here the way ``wal-g wal-push`` names files (``internal/compression``: lz4 frame, lzma-alone, brotli,
zstd), compressed by the Debian command-line tools of those formats.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

from waldecode.testing.cluster import SERVER_USER

__all__ = [
    "WALG_COMPRESSORS", "archive_script", "barman", "barman_config", "barman_incoming", "chown_to_server",
    "copy_to", "missing_tools", "pgbackrest", "pgbackrest_config", "pgbackrest_push", "run_as_server",
    "server_tempdir", "walg_layout",
]

#: WAL-G's file extension per compression method, and the Debian tool writing that format to stdout.
#: Fast levels: a level changes the bytes, never the format (brotli's default, 11, takes 20 s here).
WALG_COMPRESSORS: Mapping[str, tuple[str, ...]] = {
    "lz4": ("lz4", "-q", "-c"),                   # lz4 frame format, as WAL-G's lz4 compressor writes
    "lzma": ("xz", "--format=lzma", "-1", "-c"),  # lzma-alone (.lzma), not xz
    "br": ("brotli", "-q", "4", "-c"),
    "zst": ("zstd", "-q", "-c"),
}


def missing_tools(*names: str) -> list[str]:
    """The command-line tools among ``names`` that are not on PATH (``./dev test`` installs them)."""
    return [n for n in names if shutil.which(n) is None]


# -- running as the server's user -----------------------------------------------------------------

def _server_account() -> pwd.struct_passwd | None:
    """The account tools run as: ``postgres`` when this process is root (as waldecode.testing.cluster
    runs the server), else none (run as ourselves)."""
    return pwd.getpwnam(SERVER_USER) if os.geteuid() == 0 else None


def chown_to_server(path: Path | str) -> None:
    """Give ``path`` and everything under it to the server's user (nothing to do when not root)."""
    pw = _server_account()
    if pw is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, pw.pw_uid, pw.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), pw.pw_uid, pw.pw_gid, follow_symlinks=False)


def server_tempdir(prefix: str = "waldecode-archives") -> Path:
    """A new temporary directory the server's user owns (pytest's own are private to root).

    The caller removes it (``shutil.rmtree``)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o755)  # readable by both: root reads what the tools wrote
    chown_to_server(path)
    return path


def run_as_server(argv: Sequence[str | os.PathLike], *, cwd: Path | str | None = None,
                  check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``argv`` as the server's user (as ``runuser -u postgres --`` would), output captured as text.

    The environment is the caller's without PG* variables, with the user's HOME, USER and LOGNAME and a
    C locale.  With ``check`` a non-zero exit raises ``RuntimeError`` carrying the command and its output.
    """
    argv = [str(a) for a in argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    kwargs: dict = {}
    pw = _server_account()
    if pw is not None:
        kwargs.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        env.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd or "/", env=env, timeout=timeout,
                          **kwargs)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited with {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()}")
    return proc


# -- pgBackRest -----------------------------------------------------------------------------------

def pgbackrest_config(dir: Path | str, stanza: str | Sequence[str], repo_path: Path | str, compress_type: str,
                      pg_path: Path | str, socket_dir: Path | str, port: int, *, name: str | None = None,
                      extra: Mapping[str, str] | None = None) -> Path:
    """Write a pgBackRest configuration file for one repository and return its path.

    ``stanza`` is one stanza name or several (each a section for the same cluster: a repository holding
    several stanzas); ``compress_type`` is pgBackRest's (``gz``, ``lz4``, ``zst``, ``bz2``, ``none``).
    Logs, locks and the spool live under ``dir`` (the defaults in /var are not the server user's);
    ``extra`` adds or overrides ``[global]`` options (e.g. ``{"repo1-retention-full": "2"}``).
    The file is ``dir/pgbackrest-<name>.conf`` (``name`` defaults to the repository's directory name).
    """
    dir, repo_path = Path(dir), Path(repo_path)
    name = name or repo_path.name
    state = dir / f"pgbackrest-{name}"
    for sub in ("log", "lock", "spool"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    glob = {
        "repo1-path": str(repo_path),
        "compress-type": compress_type,
        "log-path": str(state / "log"),
        "lock-path": str(state / "lock"),
        "spool-path": str(state / "spool"),
        "log-level-console": "warn",
        "log-level-stderr": "off",
        "log-level-file": "detail",
        "start-fast": "y",
        "archive-async": "n",
    }
    glob.update(extra or {})
    lines = ["[global]", *(f"{k}={v}" for k, v in glob.items())]
    for s in ([stanza] if isinstance(stanza, str) else list(stanza)):
        lines += ["", f"[{s}]", f"pg1-path={pg_path}", f"pg1-socket-path={socket_dir}", f"pg1-port={port}",
                  "pg1-user=postgres"]
    conf = dir / f"pgbackrest-{name}.conf"
    conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
    repo_path.mkdir(parents=True, exist_ok=True)
    chown_to_server(state)
    chown_to_server(repo_path)
    chown_to_server(conf)
    return conf


def pgbackrest(config: Path | str, stanza: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``pgbackrest --config=CONFIG --stanza=STANZA ARGS...`` as the server's user (e.g. ``"stanza-create"``,
    ``"backup", "--type=full"``); a failure raises with pgBackRest's message."""
    return run_as_server(["pgbackrest", f"--config={config}", f"--stanza={stanza}", *args], timeout=timeout)


def pgbackrest_push(config: Path | str, stanza: str) -> str:
    """The shell command an archive script runs to push ``$1`` (``%p``) to a pgBackRest stanza."""
    return f'pgbackrest --config={shlex.quote(str(config))} --stanza={shlex.quote(stanza)} archive-push "$1"'


# -- barman ---------------------------------------------------------------------------------------

def barman_config(dir: Path | str, barman_home: Path | str, servers: Mapping[str, str | None],
                  socket_dir: Path | str, port: int, *, extra: Mapping[str, Mapping[str, str]] | None = None,
                  name: str = "barman") -> Path:
    """Write a barman configuration file with one server section per entry of ``servers`` and return it.

    ``servers`` maps a server name to its WAL ``compression`` (``gzip``, ``bzip2``… or ``None`` for none).
    Every server archives through ``archiver = on`` (``archive_command`` copies segments into
    ``<barman_home>/<server>/incoming/``, see ``barman_incoming``) and backs up with
    ``backup_method = postgres`` over the cluster's unix socket; ``extra`` adds or overrides options per
    server (e.g. ``{"pg": {"backup_compression": "gzip"}}``).  The barman user is the server's user, so
    the tools run through ``barman`` below.  The file is ``dir/<name>.conf``.
    """
    dir, home = Path(dir), Path(barman_home)
    home.mkdir(parents=True, exist_ok=True)
    conninfo = f"host={socket_dir} port={port} user=postgres dbname=postgres"
    lines = ["[barman]", f"barman_home = {home}", f"barman_user = {SERVER_USER}",
             f"log_file = {home / 'barman.log'}", "log_level = INFO", "minimum_redundancy = 0"]
    for server, compression in servers.items():
        opts = {
            "description": f"waldecode test server {server}",
            "conninfo": conninfo,
            "streaming_conninfo": conninfo,
            "backup_method": "postgres",
            "archiver": "on",
            "streaming_archiver": "off",
        }
        if compression:
            opts["compression"] = compression
        opts.update((extra or {}).get(server, {}))
        lines += ["", f"[{server}]", *(f"{k} = {v}" for k, v in opts.items())]
        (home / server / "incoming").mkdir(parents=True, exist_ok=True)
    conf = dir / f"{name}.conf"
    conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
    chown_to_server(home)
    chown_to_server(conf)
    return conf


def barman(config: Path | str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``barman -c CONFIG ARGS...`` as the server's user (e.g. ``"archive-wal", "pg"``, ``"backup", "pg"``)."""
    return run_as_server(["barman", "-c", str(config), "-q", *args], timeout=timeout)


def barman_incoming(barman_home: Path | str, server: str) -> str:
    """The shell command an archive script runs to hand ``$1`` (``%p``, named ``$2``, ``%f``) to barman's
    ``archiver``: a copy into the server's ``incoming/`` directory, renamed in place once complete so that
    barman never takes a half-written file."""
    incoming = Path(barman_home) / server / "incoming"
    tmp = shlex.quote(str(Path(barman_home) / server / ".incoming-")) + '"$2"'
    return f'cp "$1" {tmp} && mv {tmp} {shlex.quote(str(incoming))}/"$2"'


# -- archive_command ------------------------------------------------------------------------------

def copy_to(directory: Path | str) -> str:
    """The shell command an archive script runs to copy ``$1`` (``%p``) to ``directory/$2`` (``%f``),
    as ``archive_command = 'cp %p DIR/%f'`` does."""
    return f'cp "$1" {shlex.quote(str(directory))}/"$2"'


def archive_script(path: Path | str, commands: Sequence[str]) -> str:
    """Write an ``archive_command`` script running ``commands`` in turn (``$1`` = ``%p``, ``$2`` = ``%f``),
    failing as soon as one fails (the server then retries the segment), and return the
    ``archive_command`` setting that runs it."""
    path = Path(path)
    path.write_text("#!/bin/sh\n# archive_command: $1 is %p (relative to the data directory), $2 is %f\n"
                    "set -e\n" + "\n".join(commands) + "\n", encoding="utf-8")
    os.chmod(path, 0o755)
    chown_to_server(path)
    return f"{shlex.quote(str(path))} %p %f"


# -- WAL-G ----------------------------------------------------------------------------------------

def walg_layout(prefix: Path | str, source: Path | str, compression: str) -> Path:
    """WAL-G's layout of the files in ``source`` (plain copies, as ``cp %p``): ``prefix/wal_005/<name>.<ext>``.

    Every file of ``source`` (segments, ``.partial``, ``.history``, ``.backup``) is compressed with the
    real tool of ``compression`` (a key of ``WALG_COMPRESSORS``), as ``wal-g wal-push`` stores it; an
    empty ``basebackups_005/`` sits beside, as in a WAL-G prefix.  Returns ``prefix``.
    """
    prefix, source = Path(prefix), Path(source)
    tool = WALG_COMPRESSORS[compression]
    wal = prefix / "wal_005"
    wal.mkdir(parents=True, exist_ok=True)
    (prefix / "basebackups_005").mkdir(exist_ok=True)
    for f in sorted(source.iterdir()):
        if not f.is_file():
            continue
        with open(f, "rb") as src, open(wal / f"{f.name}.{compression}", "wb") as dst:
            subprocess.run(tool, stdin=src, stdout=dst, check=True, timeout=120)
    return prefix


# -- pgBackRest in object storage (tests/live/test_object_store.py) ---------------------------------

def pgbackrest_s3_config(dir: Path | str, stanza: str, s3, bucket: str, s3_path: str, local_repo: Path | str,
                         compress_type: str, pg_path: Path | str, socket_dir: Path | str, port: int) -> Path:
    """A pgBackRest configuration whose repo1 is ``s3_path`` in ``bucket`` of the S3 server ``s3``
    (tests/support/s3server.py: path-style addressing, its self-signed certificate not checked) and whose
    repo2 is the local directory ``local_repo``: ``archive-push`` writes the same archive to both."""
    extra = {
        "repo1-type": "s3",
        "repo1-path": s3_path,
        "repo1-s3-bucket": bucket,
        "repo1-s3-endpoint": "127.0.0.1",
        "repo1-storage-port": str(s3.port),
        "repo1-s3-uri-style": "path",
        "repo1-storage-verify-tls": "n",
        "repo1-s3-region": s3.region,
        "repo1-s3-key": s3.access_key,
        "repo1-s3-key-secret": s3.secret_key,
        "repo2-type": "posix",
        "repo2-path": str(local_repo),
    }
    return pgbackrest_config(dir, stanza, local_repo, compress_type, pg_path, socket_dir, port,
                             name=f"s3-{bucket}", extra=extra)


# The archive tests' workload (tests/live/test_archives.py, test_object_store.py): its tables, and the
# parts every archive holds, a pg_switch_wal() after each: plain DML, one transaction over two 1 MB
# segments, a column added
WORKLOAD_SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2));
CREATE TABLE events (id bigserial PRIMARY KEY, kind text, payload text);
INSERT INTO acct SELECT g, 'owner ' || g, g * 10 FROM generate_series(1, 20) g;
"""
WORKLOAD_PARTS = [
    ["INSERT INTO acct VALUES (101, 'new', 1.5)",
     "UPDATE acct SET balance = balance + 1 WHERE id <= 3",
     "DELETE FROM acct WHERE id = 20"],
    ["BEGIN",
     "INSERT INTO events (kind, payload) SELECT 'bulk', repeat(md5(g::text), 6) FROM generate_series(1, 6000) g",
     "UPDATE acct SET owner = 'bulk owner' WHERE id = 5",
     "COMMIT"],
]


def init_cluster(prefix: str):
    """A new PostgreSQL 15 cluster (initdb'd, not started) and a temporary directory the server's user
    owns, or a skip when PostgreSQL 15 is missing."""
    import pytest

    from waldecode.testing.cluster import Cluster, ClusterError

    base = server_tempdir(prefix)
    try:
        c = Cluster(15)
        c.init()
    except ClusterError as e:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    return c, base


def wait_archived(c, timeout: float = 90) -> None:
    """Until the archiver has no segment left to push (pg_wal/archive_status holds no .ready)."""
    status = c.waldir / "archive_status"
    deadline = time.monotonic() + timeout
    while any(f.suffix == ".ready" for f in status.iterdir()):
        if time.monotonic() > deadline:
            failed = c.sql("SELECT last_failed_wal, failed_count FROM pg_stat_archiver")
            raise RuntimeError(f"archiving did not finish: {failed}; server log:\n{c.log_tail()}")
        c.sql("SELECT pg_stat_clear_snapshot()")
        time.sleep(0.1)
