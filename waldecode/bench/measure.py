"""Time and peak memory of one run of a tool: child processes through ``rusage.py``, and the server's peek.

``run_measured(argv)`` runs a command (stdout to a file or /dev/null, stderr kept for the
error message) and returns a ``Measurement``: wall seconds and CPU seconds measured
around fork/exec/``os.wait4`` in a small helper process, and ``ru_maxrss``.  The
helper is there because a child of the benchmark would inherit the benchmark's peak
RSS (see ``rusage.py``); ``rss_floor()`` is the smallest peak it can report.
``time_peek`` times ``pg_logical_slot_peek_changes`` in the server: the backend's time,
no RSS (the decoding runs in a server backend, not a process of ours).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import Error

_HELPER = Path(__file__).with_name("rusage.py")


class BenchError(Error):
    """A tool failed, or the outputs the benchmark compares differ."""


@dataclass
class Measurement:
    seconds: float
    rss_mb: float | None  # None: not a process of ours (the server's peek)
    cpu_seconds: float | None = None
    rss_method: str | None = None  # "GNU time" or "wait4" (see rusage.py)
    extra: dict | None = None  # what else a tool's measurement says (sparkrun: the driver's and JVM's peaks)
    phases: dict | None = None  # seconds per phase (``spark decode --timings``)

    def to_json(self) -> dict:
        return asdict(self)


def run_measured(argv: list[str], *, stdout: Path | str | None = None, env: dict | None = None,
                 what: str | None = None) -> Measurement:
    """Run ``argv`` to completion; stdout to ``stdout`` (default /dev/null).  A non-zero exit raises
    ``BenchError`` with the tail of its stderr."""
    with tempfile.TemporaryDirectory(prefix="waldecode-measure-") as tmp:
        result = Path(tmp) / "result"
        err_path = Path(tmp) / "stderr"
        with open(stdout or os.devnull, "wb") as out, open(err_path, "wb") as err:
            subprocess.run([sys.executable, "-I", "-S", str(_HELPER), str(result), *map(str, argv)],
                           stdout=out, stderr=err, env=env, check=False)
        try:
            wall, maxrss_kb, status, cpu, method = result.read_text().split()
        except (OSError, ValueError):
            status = "?"
        if status != "0":
            tail = err_path.read_text(errors="replace").strip()[-2000:]
            raise BenchError(f"{what or argv[0]} exited with status {status}: {tail or '(no stderr)'}")
    return Measurement(float(wall), int(maxrss_kb) / 1024, float(cpu), method.replace("_", " "))


def rss_floor() -> Measurement:
    """What ``run_measured`` reports for a process that uses almost no memory (/bin/true): the RSS floor."""
    return run_measured(["true"])


def time_peek(conn, slot: str, end_lsn: str) -> tuple[Measurement, int]:
    """(time of ``SELECT count(*) FROM pg_logical_slot_peek_changes(slot, end, NULL)``, rows)."""
    t = time.perf_counter()
    rows = conn.execute("SELECT count(*) FROM pg_logical_slot_peek_changes(%s, %s::pg_lsn, NULL)",
                        (slot, end_lsn)).fetchone()[0]
    return Measurement(time.perf_counter() - t, None), rows
