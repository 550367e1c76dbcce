"""Argument types of the command line (argparse ``type=``): LSNs as PostgreSQL writes them, counts.

Shared by ``cli`` and ``bench``, so each rule and its message exists once.
"""

from __future__ import annotations

import argparse

from .wal.storage import InputOptions
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


def add_input_options(parser) -> None:
    """The options of every command that reads WAL, beyond its paths: which stanza of a pgBackRest
    repository, and how to reach an object store."""
    g = parser.add_argument_group("WAL input (PATHs: pg_wal, an archive directory, a pgBackRest repository, "
                                  "a barman server, a WAL-G prefix, files, s3:// URLs)")
    g.add_argument("--stanza", help="pgBackRest: the stanza to read, when the repository holds several")
    g.add_argument("--endpoint-url", metavar="URL",
                   help="s3:// input: the endpoint of an S3-compatible store (default: AWS_ENDPOINT_URL, else AWS)")
    g.add_argument("--no-verify-tls", dest="verify_tls", action="store_false",
                   help="s3:// input: do not check the endpoint's TLS certificate (a self-signed test store)")
    g.add_argument("--prefetch", metavar="N", type=int, default=InputOptions.prefetch,
                   help="s3:// input: segments fetched ahead of the reader, concurrently (default: %(default)s; "
                        "0: none)")


def input_options(args) -> InputOptions:
    return InputOptions(stanza=getattr(args, "stanza", None), endpoint_url=getattr(args, "endpoint_url", None),
                        verify_tls=getattr(args, "verify_tls", True),
                        prefetch=max(0, getattr(args, "prefetch", InputOptions.prefetch)))
