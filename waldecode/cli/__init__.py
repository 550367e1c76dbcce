"""Command line: ``inspect`` (pg_waldump's output), ``decode`` (logical decoding), ``catalog``, and the
command groups of their own modules (``spark``, ``timelines``/``diverge``/``apply``, ``bench``,
``pgoutput-dump``, ``table``).

Errors are one line on stderr and a non-zero exit; ``--traceback`` shows the Python traceback
instead, for debugging.  LSNs are written ``X/X`` as PostgreSQL writes them.  The options the
decoding commands share are declared once (``options``).
"""

from __future__ import annotations

import argparse
import sys

from .. import _impl
from ..errors import CatalogError, Error, OutputPluginError, UsageError
from ..wal.xlogpage import XLOG_PAGE_MAGIC_BY_MAJOR
from . import catalog as _catalog
from . import decode as _decode
from . import inspect as _inspect
from .report import EXIT_CORRUPT, EXIT_OK, EXIT_USAGE

_USAGE_ERRORS = (UsageError, CatalogError, OutputPluginError)


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="waldecode", description="Decode PostgreSQL WAL offline.")
    p.add_argument("--traceback", action="store_true", help="show the Python traceback on errors")
    p.add_argument("--version", action=_VersionAction, help="print the version, the PostgreSQL versions whose WAL "
                                                           "it reads and the implementation of the hot path")
    sub = p.add_subparsers(dest="command", required=True)
    _inspect.add_parser(sub)
    _decode.add_parser(sub)
    _catalog.add_parser(sub)
    for group in _command_groups(command):
        group(sub)
    return p


def version_text() -> str:
    """``waldecode --version``: the installed package's version, the majors of
    ``MAJOR_BY_XLOG_PAGE_MAGIC`` (the WAL page formats recognised) and the active implementation."""
    from importlib.metadata import PackageNotFoundError, version  # lazy: 50 ms that only --version needs

    try:
        v = version("waldecode")
    except PackageNotFoundError:  # run from a checkout that is not installed
        v = "(not installed)"
    majors = sorted(XLOG_PAGE_MAGIC_BY_MAJOR)
    return (f"waldecode {v} (reads WAL of PostgreSQL {majors[0]} to {majors[-1]}; hot path: {_impl.IMPL}, "
            f"available: {', '.join(_impl.available())})")


class _VersionAction(argparse.Action):
    """``--version``: computed when asked, so that every other start skips the package metadata."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def _bench_command(sub) -> None:
    from .bench import add_arguments as add_bench_arguments  # lazy: a command group, see _COMMAND_GROUPS

    ben = sub.add_parser("bench", help="time waldecode against pg_waldump and PostgreSQL's own decoding",
                         description="Build workloads on throw-away PostgreSQL 15 clusters and time, on the same "
                                     "WAL, pg_waldump, the server's decoding and waldecode; check the outputs match.")
    add_bench_arguments(ben)
    ben.set_defaults(func=cmd_bench)


def _spark_commands(sub) -> None:
    from .spark import add_arguments  # lazy: a command group, see _COMMAND_GROUPS

    add_arguments(sub)


def _pgoutput_dump_command(sub) -> None:
    from .pgoutput_dump import add_arguments  # lazy: a command group, see _COMMAND_GROUPS

    add_arguments(sub)


def _table_command(sub) -> None:
    from .table import add_parser  # lazy: a command group, see _COMMAND_GROUPS

    add_parser(sub)


def _forensics_commands(sub) -> None:
    from .forensics import add_apply_arguments, add_arguments  # lazy: a command group, see _COMMAND_GROUPS

    add_arguments(sub)
    add_apply_arguments(sub)


# The commands whose arguments live in modules of their own, which import what they need (bench,
# Spark, psycopg...): only the group of the command given is imported, so that "inspect" or
# "decode" does not pay for the others' imports at every start.
_COMMAND_GROUPS = {
    "bench": _bench_command,
    "spark": _spark_commands,
    "pgoutput-dump": _pgoutput_dump_command,
    "timelines": _forensics_commands,
    "diverge": _forensics_commands,
    "apply": _forensics_commands,
    "table": _table_command,
}


_OWN_COMMANDS = ("inspect", "decode", "catalog")


def _command_groups(command: str | None) -> list:
    """The argument builders to run for ``command``: all of them unless it is known (for --help,
    and for argparse's list of choices on a misspelt command)."""
    if command in _OWN_COMMANDS:
        return []
    if command in _COMMAND_GROUPS:
        return [_COMMAND_GROUPS[command]]
    return list(dict.fromkeys(_COMMAND_GROUPS.values()))


def _command_of(argv: list) -> str | None:
    """The command named in ``argv``: the first argument that is not an option (the top level
    has only flags that take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def cmd_bench(args) -> int:
    from .bench import main_bench  # lazy: a command group, see _COMMAND_GROUPS

    return main_bench(args)


def parse_args(argv: list) -> argparse.Namespace:
    """The command line as ``main`` reads it (argparse exits with status 2 on a usage error); the
    documents' examples are checked through it (tests/differential/test_docs_commands.py)."""
    parser = _build_parser(_command_of(argv))
    # "--stats=rmgr" goes to the hidden "--stats=" option ("--stats= rmgr" to argparse)
    argv = [x for a in argv for x in (("--stats=", a[8:]) if a.startswith("--stats=") else (a,))]
    args = parser.parse_args(argv)
    if getattr(args, "stats_kind", None):
        args.stats = args.stats_kind
    return args


def main(argv=None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except Error as e:
        if args.traceback:
            raise
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, _USAGE_ERRORS) else EXIT_CORRUPT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
