"""The progress line of ``decode`` as a terminal receives it: run on a pseudo-terminal.

``waldecode decode --output FILE`` runs with stdout and stderr on a 120-column pty, as a user
types it; what the terminal received is read back byte for byte and played on a small screen
model.  The line must be drawn from column 0 with its fields (position, segments done/total,
changes, changes/s once redrawn, percentage, bar, times), redrawn in place (carriage returns,
never a newline), fit the terminal, and be blanked out before the final "end of WAL" line, so
that the screen ends holding that line alone.  ``-q`` draws nothing, stderr on a pipe gets no
line, and the output file is the same bytes in every case.

The fixture (``pg15-off/big_txn``, one transaction of 5,150 changes) is read in a few milliseconds, far
less than the 0.25 s between redraws: ``WALDECODE_PROGRESS_INTERVAL`` (progress.py's setting)
makes the thread redraw every millisecond, so that the redraws show in a short run.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from fixture_data import all_fixtures
from waldecode.pg.lsn import parse_lsn

FX = {f.name: f for f in all_fixtures()}.get("pg15-off/big_txn")
pytestmark = pytest.mark.skipif(FX is None, reason="no fixtures")

COLUMNS = 120
#: redraw every millisecond: the few milliseconds the fixture's reading takes see several redraws
FAST = {**os.environ, "WALDECODE_PROGRESS_INTERVAL": "0.001"}

# progress.Tracker's line: "<LSN>  <done>/<total> segments  <n> changes[  <rate> changes/s] <pct>%|<bar>| [<times>]"
_LINE = re.compile(r"(?P<lsn>[0-9A-F]+/[0-9A-F]+)  (?P<done>\d+)/(?P<total>\d+) segments  (?P<count>[\d,]+) changes"
                   r"(?:  (?P<rate>[\d,]+) changes/s)? +(?P<pct>\d+)%\|[^|]*\| \[\d\d:\d\d<(?:\d\d:\d\d|\?)\]")


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "waldecode.cli", *map(str, args)]


def _decode(out, *extra) -> list[str]:
    # to the end of the input: the run ends with the "end of WAL at ..." line
    return _cli("decode", "--catalog", FX.path / "snapshot.json.gz", "--start-lsn", FX.meta["slots"][0]["restart_lsn"],
                "--output", out, *extra, FX.wal_dir)


def _on_a_terminal(argv, env=None) -> tuple[int, bytes]:
    """Run with stdout and stderr on a COLUMNS-wide pty; (exit code, what the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
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


def _screen(shown: bytes) -> list[str]:
    """The rows a COLUMNS-wide terminal shows after ``shown`` (trailing blanks cut, blank rows at the end
    dropped): text overwrites the cells under it, a carriage return goes to column 0, a newline down a
    row (the pty sends "\\r\\n" for a program's "\\n"), a full row wraps.  Anything else is not expected
    of the line: an escape sequence fails the test."""
    rows: list[list[str]] = [[]]
    row = col = 0
    for ch in shown.decode("utf-8"):
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
        elif ch.isprintable():
            if col == COLUMNS:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            cells = rows[row]
            cells.extend(" " * (col + 1 - len(cells)))
            cells[col] = ch
            col += 1
        else:
            raise AssertionError(f"unexpected control character {ch!r} in what the terminal received: {shown!r}")
        while len(rows) <= row:
            rows.append([])
    text = ["".join(cells).rstrip(" ") for cells in rows]
    while text and not text[-1]:
        text.pop()
    return text


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    """The run with stderr on a pipe: (its output file's bytes, its stderr)."""
    out = tmp_path_factory.mktemp("progress") / "piped.txt"
    run = subprocess.run(_decode(out), capture_output=True, timeout=120, env=FAST)
    assert run.returncode == 0, run.stderr
    return out.read_bytes(), run.stderr.decode()


def test_on_a_pipe_no_line(piped):
    output, stderr = piped
    # the end-of-WAL line alone: no carriage return, no drawing, however often the thread would redraw
    assert re.fullmatch(r"waldecode: end of WAL at [0-9A-F]+/[0-9A-F]+: [^\r\n]*\n", stderr), stderr
    assert output.count(b"\ntable public.") == 5150


def test_on_a_terminal_the_line_is_drawn_redrawn_in_place_and_erased(piped, tmp_path):
    output, stderr = piped
    end_line = stderr.rstrip("\n")
    got = tmp_path / "got.txt"
    code, shown = _on_a_terminal(_decode(got), env=FAST)
    assert code == 0, shown
    assert got.read_bytes() == output  # the output is the same bytes with the line on
    text = shown.decode("utf-8")
    assert text.endswith(end_line + "\r\n"), text
    drawn = text[:-len(end_line + "\r\n")]
    assert "\n" not in drawn  # every drawing in place, on one row
    # "\r" first, each drawing after its own "\r", then blanks over the longest drawing and "\r": the
    # "end of WAL" line starts at column 0 of a blank row
    first, *draws, blanks, last = drawn.split("\r")
    assert first == "" and last == "", drawn
    assert len(draws) >= 2, drawn  # drawn, then redrawn
    assert blanks == " " * len(blanks) and len(blanks) >= max(len(d) for d in draws), drawn
    assert all(len(d) <= COLUMNS for d in draws)  # fits the terminal: never wraps onto a second row
    lines = [_LINE.fullmatch(d.rstrip(" ")) for d in draws]
    assert all(lines), draws
    # the first drawing: where reading starts, nothing counted yet; the redraws add the rate
    start = FX.meta["slots"][0]["restart_lsn"]
    assert (lines[0]["lsn"], lines[0]["count"], lines[0]["rate"], lines[0]["pct"]) == (start, "0", None, "0")
    assert all(m["rate"] is not None for m in lines[1:])
    # positions and counts only move forward, within what is read and written
    end_of_wal = parse_lsn(re.match(r"waldecode: end of WAL at (\S+):", end_line)[1])
    lsns = [parse_lsn(m["lsn"]) for m in lines]
    assert lsns == sorted(lsns) and parse_lsn(start) <= lsns[0] and lsns[-1] <= end_of_wal
    counts = [int(m["count"].replace(",", "")) for m in lines]
    assert counts == sorted(counts) and counts[-1] <= output.count(b"\ntable ")
    assert {(m["done"], m["total"]) for m in lines} <= {("0", "1"), ("1", "1")}  # one segment
    # what the terminal is left showing: the end-of-WAL line, nothing of the progress line
    assert _screen(shown) == [end_line]


def test_quiet_draws_nothing(piped, tmp_path):
    output, _ = piped
    got = tmp_path / "got.txt"
    code, shown = _on_a_terminal(_decode(got, "-q"), env=FAST)
    # -q: no line, and a successful run says nothing at all
    assert code == 0 and shown == b""
    assert got.read_bytes() == output


def test_records_streamed_to_the_terminal_get_no_line():
    # inspect printing records to the terminal the line would be drawn on: no line between them
    code, shown = _on_a_terminal(_cli("inspect", FX.wal_dir, "-n", "3"), env=FAST)
    # three records, each ended by the terminal's "\r\n", and no other carriage return: no drawing
    assert code == 0 and b"segments" not in shown
    assert shown.count(b"rmgr: ") == 3 and shown.count(b"\r") == shown.count(b"\r\n") == 3, shown


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_interval_must_be_seconds_above_zero(tmp_path, value):
    run = subprocess.run(_decode(tmp_path / "out.txt"), capture_output=True, timeout=120,
                         env={**os.environ, "WALDECODE_PROGRESS_INTERVAL": value})
    assert run.returncode == 2
    assert run.stderr.decode() == ("waldecode: error: WALDECODE_PROGRESS_INTERVAL must be a number of seconds "
                                   f"greater than 0, not '{value}'\n")
    assert not (tmp_path / "out.txt").exists()
