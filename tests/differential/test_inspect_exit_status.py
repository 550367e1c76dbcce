"""``waldecode inspect`` stops where pg_waldump stops, with its exit status, on damaged fixture WAL.

Segments of the pg15-off cluster (small_dml's 0B, big_txn's 0D, interleaved's 0F: copied from the
fixtures, decompressed) make the inputs, damaged in a temporary directory: a missing middle segment, a last
segment cut short inside its records, a tail zeroed from a record boundary.  Each is read by the real
pg_waldump 15 and by ``waldecode inspect`` (both implementations); stdout must be byte-identical, the
exit statuses pg_waldump's.  The one deliberate difference: at WAL zeroed from a record boundary
pg_waldump ends with "invalid record length ... got 0" and exit 1, waldecode reports the normal end of
WAL and exits 0 (the output is complete: README, "Exit status").
"""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest

from waldecode.testing.cluster import find_bindir

CLUSTER = Path(__file__).resolve().parents[2] / "fixtures" / "pg15-off"
SEGS = ["00000001000000000000000B"]
CUT_AT = 100_000  # inside the records of segment 0B (they fill it up to 0x20DD0)
ZERO_FROM = 0xFE78  # a record start in segment 0B (pg_waldump prints 0/B0FE78 as a record)


def _bindir():
    try:
        return find_bindir(15)
    except Exception:
        return None


BINDIR = _bindir()
pytestmark = pytest.mark.skipif(BINDIR is None or not CLUSTER.is_dir(), reason="needs pg_waldump 15 and fixtures")


def _segment(name: str) -> bytes:
    (path,) = CLUSTER.glob(f"*/wal/{name}.gz")
    return gzip.decompress(path.read_bytes())


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """name -> (directory, first segment, last segment) of each damaged input."""
    root = tmp_path_factory.mktemp("inspect-exit")
    b = _segment(SEGS[0])
    made = {}
    # 0B, 0D and 0F of one cluster: 0C (and 0E) missing in the middle
    gap = root / "gap"
    gap.mkdir()
    for name in (SEGS[0], "00000001000000000000000D", "00000001000000000000000F"):
        (gap / name).write_bytes(_segment(name))
    made["gap"] = (gap, SEGS[0], "00000001000000000000000F")
    for name, data in (("cut", b[:CUT_AT]), ("zeroed", b[:ZERO_FROM] + bytes(len(b) - ZERO_FROM)), ("whole", b)):
        d = root / name
        d.mkdir()
        (d / SEGS[0]).write_bytes(data)
        made[name] = (d, SEGS[0], SEGS[0])
    return made


def pg_waldump(inputs, name: str, *extra) -> subprocess.CompletedProcess:
    d, first, last = inputs[name]
    return subprocess.run([str(BINDIR / "pg_waldump"), *extra, "-p", str(d), first, last], capture_output=True,
                          timeout=60)


class Run:
    """What one ``waldecode inspect`` printed and returned (in-process, under the active implementation)."""

    def __init__(self, capfdbinary, *argv):
        from waldecode import cli

        capfdbinary.readouterr()
        self.returncode = cli.main(["inspect", *map(str, argv)])
        self.stdout, self.stderr = capfdbinary.readouterr()


def _one_error(proc) -> str:
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("waldecode: error: "), proc.stderr
    return lines[0]


def test_missing_middle_segment_prints_up_to_the_gap(inputs, impl, capfdbinary):
    server = pg_waldump(inputs, "gap")
    assert server.returncode == 1 and b'could not find file "00000001000000000000000C"' in server.stderr
    assert server.stdout.count(b"\n") > 1000  # the records of 0B
    ours = Run(capfdbinary, inputs["gap"][0])
    assert ours.stdout == server.stdout
    assert ours.returncode == 1
    line = _one_error(ours)
    assert "missing WAL segment 00000001000000000000000C" in line and "0/C00000" in line
    # --stats: pg_waldump stops at the gap without its table; so does inspect
    assert pg_waldump(inputs, "gap", "--stats").stdout == b""
    stats = Run(capfdbinary, inputs["gap"][0], "--stats")
    assert stats.returncode == 1 and stats.stdout == b""
    # a --limit met before the gap ends the run there, status 0 for both
    assert pg_waldump(inputs, "gap", "-n", "5").returncode == 0
    limited = Run(capfdbinary, inputs["gap"][0], "-n", "5")
    assert limited.returncode == 0 and limited.stdout.count(b"\n") == 5


def test_last_segment_cut_short_is_an_error(inputs, impl, capfdbinary):
    server = pg_waldump(inputs, "cut")
    assert server.returncode == 1 and b"could not read from file" in server.stderr
    ours = Run(capfdbinary, inputs["cut"][0])
    assert ours.stdout == server.stdout and ours.stdout
    assert ours.returncode == 1
    line = _one_error(ours)
    d, first, _ = inputs["cut"]
    assert str(d / first) in line and "cut short" in line and "0/B17FF0" in line and f"holds {CUT_AT} of" in line
    # pg_waldump --stats fails before its table: no table either
    assert pg_waldump(inputs, "cut", "--stats").stdout == b""
    stats = Run(capfdbinary, d, "--stats")
    assert stats.returncode == 1 and stats.stdout == b""


def test_zeroed_tail_is_the_normal_end(inputs, impl, capfdbinary):
    server = pg_waldump(inputs, "zeroed")
    # pg_waldump's own status at zeroed space: the deliberate difference (see the module docstring)
    assert server.returncode == 1 and b"invalid record length at 0/B0FE78: wanted 24, got 0" in server.stderr
    ours = Run(capfdbinary, inputs["zeroed"][0])
    assert ours.stdout == server.stdout
    assert ours.returncode == 0
    assert ours.stderr.decode().startswith("waldecode: end of WAL at 0/B0FE78")
    quiet = Run(capfdbinary, inputs["zeroed"][0], "-q")
    assert quiet.returncode == 0 and quiet.stderr == b"" and quiet.stdout == server.stdout


def test_whole_segment_both_succeed_and_quiet_is_silent(inputs, capfdbinary):
    server = pg_waldump(inputs, "whole")
    assert server.returncode == 0 and server.stderr == b""
    ours = Run(capfdbinary, inputs["whole"][0])
    assert ours.returncode == 0 and ours.stdout == server.stdout
    assert ours.stderr.decode().startswith("waldecode: end of WAL at 0/C00000")
    quiet = Run(capfdbinary, inputs["whole"][0], "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == b"" and quiet.stdout == server.stdout
