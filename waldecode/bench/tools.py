"""The tools the benchmark times on one WAL, and the command line of each.

``Tool`` names one side of a comparison: its label in the table, what its rate counts
(WAL records or decoded changes) and the tool it is compared with (``reference``).
``tools_for(impls)`` lists them in the order they run: PostgreSQL's own first
(``pg_waldump --stats=record`` and text, the server's peek, ``pg_recvlogical -f``),
then ``waldecode inspect --stats``, ``inspect`` and ``decode`` under each
implementation.  ``WalUnderTest`` is what their command lines need; the ``*_argv``
functions build them.  ``pg_waldump --stats=record`` is the table ``waldecode inspect
--stats`` prints, so the two outputs can be compared too.
"""

from __future__ import annotations

import compileall
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..spark import classdata


@dataclass(frozen=True)
class Tool:
    key: str
    label: str
    unit: str  # "records" or "changes": what its rate counts
    reference: str | None = None  # key of the tool it is compared with
    impl: str | None = None  # waldecode's implementation, for waldecode's tools


WALDUMP_STATS = Tool("pg_waldump_stats", "pg_waldump --stats", "records")
WALDUMP = Tool("pg_waldump", "pg_waldump", "records")
PEEK = Tool("peek", "server peek_changes count(*)", "changes", "pg_recvlogical")
RECVLOGICAL = Tool("pg_recvlogical", "pg_recvlogical -f", "changes")


def inspect_stats(impl: str) -> Tool:
    return Tool(f"inspect_stats_{impl}", f"waldecode inspect --stats [{impl}]", "records", WALDUMP_STATS.key, impl)


def inspect(impl: str) -> Tool:
    return Tool(f"inspect_{impl}", f"waldecode inspect [{impl}]", "records", WALDUMP.key, impl)


def decode(impl: str) -> Tool:
    return Tool(f"decode_{impl}", f"waldecode decode [{impl}]", "changes", RECVLOGICAL.key, impl)


def spark_decode(cores: int, impl: str) -> Tool:
    """``waldecode spark decode --master local[cores]``, compared with single-process ``decode``."""
    return Tool(f"spark_decode_local{cores}", f"waldecode spark decode local[{cores}] [{impl}]", "changes",
                f"decode_{impl}", impl)


def tools_for(impls: list[str], spark: bool = False) -> list[Tool]:
    tools = ([WALDUMP_STATS, WALDUMP, PEEK, RECVLOGICAL] + [inspect_stats(i) for i in impls]
             + [inspect(i) for i in impls] + [decode(i) for i in impls])
    if spark:
        impl = "cython" if "cython" in impls else impls[0]
        tools += [spark_decode(1, impl), spark_decode(2, impl)]
    return tools


@dataclass
class WalUnderTest:
    """One workload's archived WAL and what reading it needs."""

    wal_dir: Path
    catalog: Path
    start_lsn: str  # the slots' restart_lsn: where pg_waldump and inspect start
    decode_start_lsn: str  # the slots' confirmed_flush_lsn: what decode --start-lsn takes
    end_lsn: str
    bindir: Path  # the server's binaries
    socket_dir: Path
    port: int
    dbname: str
    tool_env: dict  # environment for the server's tools (no PG* variables of ours)


def waldump_argv(w: WalUnderTest, stats: bool) -> list[str]:
    argv = [str(w.bindir / "pg_waldump"), "--path", str(w.wal_dir), "--start", w.start_lsn, "--end", w.end_lsn]
    return argv + ["--stats=record"] if stats else argv


def recvlogical_argv(w: WalUnderTest, slot: str, out: Path) -> list[str]:
    return [str(w.bindir / "pg_recvlogical"), "-h", str(w.socket_dir), "-p", str(w.port), "-U", "postgres",
            "-d", w.dbname, "-S", slot, "--start", "--no-loop", "-E", w.end_lsn, "-f", str(out)]


def _waldecode(*args: str) -> list[str]:
    return [sys.executable, "-m", "waldecode.cli", *args]


def inspect_argv(w: WalUnderTest, stats: bool) -> list[str]:
    argv = _waldecode("inspect", "--quiet", "--start-lsn", w.start_lsn, "--end-lsn", w.end_lsn, str(w.wal_dir))
    return argv + ["--stats"] if stats else argv


def decode_argv(w: WalUnderTest, out: Path, spill_dir: Path) -> list[str]:
    return _waldecode("decode", "--quiet", "--catalog", str(w.catalog), "--start-lsn", w.decode_start_lsn,
                      "--end-lsn", w.end_lsn, "--spill-dir", str(spill_dir), "--output", str(out), str(w.wal_dir))


def impl_env(impl: str) -> dict:
    """Our environment with the hot path's implementation forced (fails loudly if it cannot load)."""
    return dict(os.environ, WALDECODE_IMPL=impl)


def spark_class_archive() -> str:
    """The class-data archive ``spark decode`` maps for Spark's JVM (``waldecode spark prepare``), written
    before anything is timed when it is missing — as ``compile_bytecode`` writes what an installed package
    has: the Spark runs then start as on a machine where it was prepared.  Says what was found, for the JSON."""
    path = classdata.archive_path()
    if path is None:
        return "none: no Java or no pyspark"
    if os.path.exists(path):
        return f"found {path}"
    classdata.prepare(quiet=True)
    return f"written {path}"


def compile_bytecode() -> str:
    """Write the package's cached bytecode (``__pycache__``) before anything is timed.

    An installed package has it (pip compiles at install time), but an editable install run
    under PYTHONDONTWRITEBYTECODE never writes it, and every waldecode process would then
    compile its modules from source: 50–100 ms of start-up no user pays.  Python reads the
    cache even under PYTHONDONTWRITEBYTECODE, so compiling it once here is enough.  Says what
    was found, for the JSON."""
    package = Path(__file__).resolve().parents[1]
    if not os.access(package, os.W_OK):
        return f"{package} is not writable: bytecode left as installed"
    ok = compileall.compile_dir(str(package), quiet=1)
    return f"compiled in {package}" if ok else f"compiling {package} failed: modules compile at each start"
