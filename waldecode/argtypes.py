"""Argument types of the command line (argparse ``type=``): LSNs as PostgreSQL writes them, counts.

Shared by ``cli`` and ``bench``, so each rule and its message exists once.
"""

from __future__ import annotations

import argparse

from .wal.xlogreader import parse_lsn


def lsn(text: str) -> int:
    try:
        return parse_lsn(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {v}")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return v
