"""Progress of a long WAL read on a terminal: position, segments done/total, changes/s, time left.

Owns the one line ``inspect`` and ``decode`` keep up to date on stderr while they
read (drawn with tqdm).  ``track(reader, ...)`` hands back what to iterate instead of
the reader; when the line is off (``--quiet``, stderr not a terminal, or stdout the
same terminal the records are streamed to) that is the reader's own iterator, so the
hot path is not touched at all.  When it is on, the records pass through a generator
that only notes the last LSN and a count, and a daemon thread redraws the line four
times a second (``WALDECODE_PROGRESS_INTERVAL``: seconds between redraws): the line keeps
moving while one big transaction is replayed at its commit record, when no record is read
for a long time.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator

from .errors import UsageError, format_lsn

#: Seconds between redraws (the thread sleeps in between; the records never wait for it)
REFRESH_INTERVAL = 0.25
#: Overrides it: e.g. longer over a slow link; a test sets it short to see a short run's line redrawn
INTERVAL_ENV = "WALDECODE_PROGRESS_INTERVAL"


def refresh_interval() -> float:
    """Seconds between redraws: ``WALDECODE_PROGRESS_INTERVAL`` when set (a number > 0), else 0.25."""
    text = os.environ.get(INTERVAL_ENV, "").strip()
    if not text:
        return REFRESH_INTERVAL
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"{INTERVAL_ENV} must be a number of seconds greater than 0, not {text!r}")
    return value


def enabled(quiet: bool, streams_stdout: bool, stderr=None, stdout=None) -> bool:
    """Whether to draw: not ``quiet``, stderr a terminal, and stdout not that terminal while records stream to it."""
    stderr = stderr if stderr is not None else sys.stderr
    stdout = stdout if stdout is not None else sys.stdout
    if quiet or not _isatty(stderr):
        return False
    return not (streams_stdout and _isatty(stdout))


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def track(reader, *, quiet: bool = False, streams_stdout: bool = True, unit: str = "records") -> "Tracker":
    """What to iterate instead of ``reader``: its records, with the progress line when it is on.

    ``unit`` is what the rate counts: ``"records"`` (each record read) or ``"changes"``
    (what the function given to ``count_changes`` returns).  Call ``close()`` when done (also after an
    early ``break``) so the line is erased before anything else is printed.
    """
    return Tracker(reader, unit, enabled(quiet, streams_stdout), refresh_interval())


class Tracker:
    """Iterates a reader's records and, when on, shows how far it got (see the module docstring)."""

    def __init__(self, reader, unit: str, on: bool, interval: float = REFRESH_INTERVAL):
        self.reader = reader
        self.unit = unit
        self.on = on
        self.interval = interval  # seconds between redraws
        self.lsn = 0  # start of the last record read
        self.records = 0
        self._changes = None  # () -> changes written so far
        self._gen: Iterator | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar = None

    # -- what the command iterates and writes through ------------------------------------------

    def __iter__(self) -> Iterator:
        if not self.on:
            self._gen = iter(self.reader)
            return self._gen
        self._gen = self._records()
        return self._gen

    def frames(self) -> Iterator:
        """The reader's ``frames()`` (segment by segment), the line following each segment."""
        if not self.on:
            self._gen = self.reader.frames()
            return self._gen
        self._gen = self._frames()
        return self._gen

    def _frames(self) -> Iterator:
        self._start()
        n = 0
        try:
            for item in self.reader.frames():
                records = item[1]
                n += len(records)
                self.records = n
                self.lsn = records[-1][0]
                yield item
        finally:
            self._end_line()

    def count_changes(self, changes) -> None:
        """The changes written so far are ``changes()`` (e.g. the plugin's count of its change rows)."""
        self._changes = changes

    def _records(self) -> Iterator:
        # The line starts with the reading, not while the command still loads its catalog
        self._start()
        n = 0
        try:
            for rec in self.reader:
                n += 1
                self.records = n
                self.lsn = rec.lsn
                yield rec
        finally:
            self._end_line()

    def begin(self) -> None:
        """Start the line for a caller that reads on its own instead of iterating (the native
        ``inspect``): it then keeps ``lsn`` and ``records`` up to date, and calls ``close()``."""
        if self.on:
            self._start()

    def close(self) -> None:
        """Erase the line and close the record iterator (idempotent)."""
        self._end_line()
        gen, self._gen = self._gen, None
        if gen is not None and hasattr(gen, "close"):
            gen.close()

    def _end_line(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # -- the line -------------------------------------------------------------------------------

    def _range(self) -> tuple[int, int, int]:
        """(first byte, end byte, segment size) of what the reader will read."""
        segs = self.reader.segments
        seg = segs.seg_size
        start = self.reader.start_lsn
        if start is None:
            start = segs.first_segno * seg
        end = (segs.last_segno + 1) * seg
        if self.reader.end_lsn is not None:
            end = min(end, self.reader.end_lsn)
        return start, max(end, start + 1), seg

    def _start(self) -> None:
        from tqdm import tqdm  # lazy: 30 ms of start-up; only a shown progress bar needs it

        self._first, self._end, self._seg = self._range()
        self._segs_total = (self._end - 1) // self._seg - self._first // self._seg + 1
        self.lsn = self._first
        # Everything but the bar and the times goes in the description: tqdm's postfix adds ", "
        self._bar = tqdm(total=self._end - self._first, file=sys.stderr, leave=False, dynamic_ncols=True,
                         desc=f"{format_lsn(self._first)}  0/{self._segs_total} segments  0 {self.unit}",
                         mininterval=0, miniters=1, smoothing=0.1,
                         bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]")
        self._thread = threading.Thread(target=self._run, name="waldecode-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        done_before = 0
        last_t, last_count = time.monotonic(), 0
        rate = 0.0
        while not self._stop.wait(self.interval):
            lsn = self.lsn
            count = (self._changes() if self._changes is not None else 0) if self.unit == "changes" else self.records
            now = time.monotonic()
            # A smoothed rate: a big transaction is read first (no changes) and written at its commit
            inst = (count - last_count) / (now - last_t)
            rate = inst if rate == 0.0 else 0.7 * rate + 0.3 * inst
            last_t, last_count = now, count
            done = min(max(lsn - self._first, 0), self._end - self._first)
            segs_done = lsn // self._seg - self._first // self._seg
            self._bar.set_description_str(f"{format_lsn(lsn)}  {segs_done}/{self._segs_total} segments  "
                                          f"{count:,} {self.unit}  {rate:,.0f} {self.unit}/s", refresh=False)
            if done > done_before:
                self._bar.update(done - done_before)
            else:
                self._bar.refresh()  # no record read (a commit replaying): the count and times still move
            done_before = done
