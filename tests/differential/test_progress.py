"""The progress line of ``inspect`` and ``decode``: on stderr only on a terminal, never in the output.

When stderr is not a terminal (pipes, files, CI) or with ``--quiet`` nothing changes:
stdout and stderr are what they were without the feature.  On a terminal the line appears on
stderr while the decoded output is the same bytes: ``test_progress_pty.py`` runs it on a pty.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from fixture_data import all_fixtures
from waldecode import progress

FIXTURES = {f.name: f for f in all_fixtures()}
FX = FIXTURES.get("pg15-off/small_dml")
pytestmark = pytest.mark.skipif(FX is None, reason="no fixtures")


class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("quiet,stderr_tty,stdout_tty,streams_stdout,expected", [
    (False, True, False, True, True),     # inspect > file, on a terminal
    (False, True, True, False, True),     # decode --output FILE, on a terminal
    (False, True, True, True, False),     # records stream to the terminal the line would be drawn on
    (False, False, False, False, False),  # stderr redirected
    (True, True, False, False, False),    # --quiet
])
def test_enabled_only_on_a_terminal_and_not_quiet(quiet, stderr_tty, stdout_tty, streams_stdout, expected):
    assert progress.enabled(quiet, streams_stdout, _Stream(stderr_tty), _Stream(stdout_tty)) is expected


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "waldecode.cli", *map(str, args)]


def _decode_args(out):
    slot = FX.meta["slots"][0]
    return ["decode", "--catalog", FX.path / "snapshot.json.gz", "--start-lsn", slot["restart_lsn"],
            "--end-lsn", FX.meta["end_lsn"], "--output", out, FX.wal_dir]


def test_off_when_stderr_is_not_a_terminal_and_quiet_is_accepted(tmp_path):
    for cmd in (["inspect", FX.wal_dir], ["inspect", FX.wal_dir, "--stats"]):
        plain = subprocess.run(_cli(*cmd), capture_output=True, timeout=120)
        quiet = subprocess.run(_cli(*cmd, "--quiet"), capture_output=True, timeout=120)
        assert plain.returncode == quiet.returncode == 0, plain.stderr
        assert plain.stdout == quiet.stdout and plain.stdout
        # only the end-of-WAL note, no progress line; --quiet leaves the note out too
        assert plain.stderr.startswith(b"waldecode: end of WAL at ") and plain.stderr.count(b"\n") == 1
        assert quiet.stderr == b""
        assert b"segments" not in plain.stderr and b"\r" not in plain.stderr
    outs = []
    for extra in ([], ["--quiet"]):
        out = tmp_path / f"out{len(outs)}.txt"
        run = subprocess.run(_cli(*_decode_args(out), *extra), capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert b"segments" not in run.stderr and b"\r" not in run.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0]
