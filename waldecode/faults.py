"""Fault injection for the crash tests: a real SIGKILL at a named point of a run.

Off unless ``WALDECODE_CRASH_AT=NAME[:N]`` is set (the N-th time the run passes NAME).
The names: ``after-output`` (OUT synced, slot file not yet updated), ``after-slot``
(slot file replaced), ``spill`` (a transaction's changes written to a .spill file).
"""

from __future__ import annotations

import os
import signal

_CRASH = os.environ.get("WALDECODE_CRASH_AT")  # "NAME[:N]": SIGKILL ourselves at the N-th pass (tests)
_crash_counts: dict[str, int] = {}


def crashpoint(name: str) -> None:
    """SIGKILL this process here when the crash tests ask for it."""
    if _CRASH is None:
        return
    want, _, nth = _CRASH.partition(":")
    if want != name:
        return
    _crash_counts[name] = _crash_counts.get(name, 0) + 1
    if _crash_counts[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
