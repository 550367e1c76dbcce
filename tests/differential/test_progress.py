"""The progress line of ``inspect`` and ``decode``: on stderr only on a terminal, never in the output.

When stderr is not a terminal (pipes, files, CI) or with ``--quiet`` nothing changes:
stdout and stderr are what they were without the feature.  On a terminal (a pty here)
the line appears on stderr while the decoded output is the same bytes.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

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


def _on_a_terminal(argv) -> tuple[int, bytes]:
    """Run with stderr (and stdout) on a 120-column pty; (exit code, what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=120), shown


def test_on_a_terminal_the_line_is_drawn_and_the_output_unchanged(tmp_path):
    expected = tmp_path / "expected.txt"
    assert subprocess.run(_cli(*_decode_args(expected)), capture_output=True, timeout=120).returncode == 0
    got = tmp_path / "got.txt"
    code, shown = _on_a_terminal(_cli(*_decode_args(got)))
    assert code == 0, shown
    assert b"segments" in shown and b"changes" in shown  # the line, with its fields
    assert got.read_bytes() == expected.read_bytes()
    code, shown = _on_a_terminal(_cli(*_decode_args(got), "--quiet"))
    assert code == 0 and b"segments" not in shown
    # inspect printing records to the terminal draws no line between them
    code, shown = _on_a_terminal(_cli("inspect", FX.wal_dir, "-n", "3"))
    assert code == 0 and b"segments" not in shown and shown.count(b"rmgr:") == 3
