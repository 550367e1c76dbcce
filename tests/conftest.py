"""Shared fixtures: ``impl`` runs a test once per implementation of the hot path.

The tests come in lanes, one folder each (``./dev test LANE`` runs one, ``./dev test`` all):
``unit`` (no server, no fixtures), ``differential`` (the bundled real-server fixtures against
the servers' own output), ``live`` (throw-away PostgreSQL servers), ``spark`` (Apache Spark,
local and a standalone cluster).  ``support/`` holds what they share: the WAL writer
(``walgen``), the fixtures (``fixture_data``) and the live-slot harness (``live``).

The test header says which implementation is active by default and which can be
loaded, so a run that silently tests only pure Python (the Cython extension not
built) is visible at a glance.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from waldecode import _impl


def pytest_report_header(config):
    avail = _impl.available()
    line = f"waldecode implementation: {_impl.IMPL} (default); available: {', '.join(avail)}"
    if "cython" not in avail:
        line += " (Cython extension not built: only pure Python is tested)"
    return line


@pytest.fixture(params=_impl.available())
def impl(request):
    """Make ``request.param`` ("python" or "cython") the active implementation for one test."""
    previous = _impl.IMPL
    _impl.use(request.param)
    try:
        yield request.param
    finally:
        _impl.use(previous)
