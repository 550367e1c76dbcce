"""The options the decoding commands share, each declared here once.

``decode``, ``spark decode``, ``diverge`` and ``apply`` read WAL with a catalog snapshot between a
start and an end and print through an output plugin: their options of the same name mean the same
thing and read the same way in ``--help``.  ``add_decode_options`` is what ``decode`` and ``spark
decode`` have in common; the others take the single options they need.  What one command alone
has is declared with that command.
"""

from __future__ import annotations

from .. import argtypes
from ..errors import UsageError
from ..logical.request import DECODER_OPTIONS
from ..output import PLUGINS

CATALOG_HELP = ("catalog snapshot written by 'waldecode catalog' (relations, types, settings), or a directory of "
                "them, or a pgBackRest repository or barman server (its backups): the latest taken at or before "
                "the reading start is used")


def add_paths(parser, help: str = "WAL segment files or directories", required: bool = True) -> None:
    parser.add_argument("paths", nargs="+" if required else "*", metavar="PATH", help=help)


def add_backup_set(parser, also: str = "") -> None:
    """``--backup-set LABEL``: one backup of the repository ``--backup`` names (``catalog``, ``table``)."""
    parser.add_argument("--backup-set", metavar="LABEL",
                        help="with --backup: the backup to read, by its label (pgBackRest's set label, barman's "
                             "backup id)" + also)


def add_catalog(parser, required: bool = False, also: str = "") -> None:
    parser.add_argument("--catalog", required=required, metavar="FILE|DIR", help=CATALOG_HELP + also)


def add_plugin(parser, flag: str = "--format", help: str = "output plugin") -> None:
    parser.add_argument(flag, default="test_decoding", choices=tuple(PLUGINS), help=help)


def add_plugin_options(parser) -> None:
    parser.add_argument("-o", "--option", dest="options", action="append", default=[], metavar="NAME[=VALUE]",
                        help="output plugin option, as pg_recvlogical -o passes it (repeatable); "
                             + ", ".join(f"{name}={values[1]}" for name, values in DECODER_OPTIONS.items())
                             + " are waldecode's own (docs/replica.md)")


def plugin_options(items) -> dict:
    """``-o NAME[=VALUE]`` as a dict (a bare NAME is None, as pg_recvlogical passes it)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        out[name] = value if sep else None
    return out


def add_start(parser, restart: bool = True, times: bool = True) -> None:
    start = parser.add_mutually_exclusive_group() if times else parser
    start.add_argument("-s", "--start-lsn", type=argtypes.lsn,
                       help="decode what a logical slot confirmed up to this LSN (its confirmed_flush_lsn, "
                            "pg_recvlogical --startpos) decodes: every transaction committing at or after it, "
                            "whole, reading back through the input as far as needed; default: what a slot "
                            "created at the input's first record decodes")
    if times:
        start.add_argument("--start-time", metavar="TIME",
                           help="as --start-lsn at the first commit whose time is at or after TIME (ISO 8601 or "
                                "PostgreSQL's timestamptz text; without an offset in the snapshot's TimeZone)")
    if restart:
        parser.add_argument("--restart-lsn", type=argtypes.lsn,
                            help="with --start-lsn: the slot's restart_lsn; reading begins there, consistent from "
                                 "there on as the server's slot is")


def add_end(parser, times: bool = True) -> None:
    end = parser.add_mutually_exclusive_group() if times else parser
    end.add_argument("-e", "--end-lsn", type=argtypes.lsn,
                     help="stop before the first record that ends after this LSN")
    if times:
        end.add_argument("--end-time", metavar="TIME",
                         help="every transaction committing at or before TIME: stop before the first commit or "
                              "abort whose time is after it, as recovery_target_time does")


def add_two_phase(parser) -> None:
    parser.add_argument("--two-phase", action="store_true",
                        help="decode prepared transactions at PREPARE, as a slot created with two_phase")


def add_settings(parser) -> None:
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                        help="override a setting output depends on (TimeZone, DateStyle, IntervalStyle, "
                             "extra_float_digits, bytea_output, lc_monetary)")


def key_values(items, flag: str, form: str = "NAME=VALUE") -> dict:
    """A repeated ``flag NAME=VALUE`` option as a dict (``--set``, ``spark decode --conf``)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"{flag} expects {form}, not {item!r}")
        out[name] = value
    return out


def settings_overrides(items) -> dict:
    """``--set NAME=VALUE`` as a dict."""
    return key_values(items, "--set")


def add_include_uncommitted(parser) -> None:
    parser.add_argument("--include-uncommitted", action="store_true",
                        help="after the committed ones, print the changes of transactions still open at the end "
                             "of the WAL read, each ended by an 'UNCOMMITTED <xid>' line")


def add_output(parser) -> None:
    parser.add_argument("--output", metavar="FILE", help="write to this file instead of standard output")


def add_spill_dir(parser) -> None:
    parser.add_argument("--spill-dir", help="directory for .spill files (default: a temporary directory)")


def add_timeline(parser, flags=("-t", "--timeline")) -> None:
    parser.add_argument(*flags, type=int, help="read this timeline when the input holds several")


def add_quiet(parser, help: str = "no progress line on stderr") -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help=help)


def add_diagnostics_options(parser) -> None:
    """``-v`` and ``--report``: how much of the warnings and notes a decoding run prints or writes."""
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every warning and note as it happens (default: the first of each cause, "
                             "then one summary line per cause)")
    parser.add_argument("--report", metavar="FILE",
                        help="write every warning and note as JSON (cause, count, whether the output lacks "
                             "something, examples with LSN, transaction, relation)")


def add_decode_options(parser, catalog_also: str = "", catalog_required: bool = False,
                       format_help: str = "output plugin") -> None:
    """What ``decode`` and ``spark decode`` share: the WAL, the catalog, the plugin and its options, where
    decoding starts and ends, two-phase, settings, uncommitted transactions, the timeline, the warnings'
    report and how the input is reached."""
    add_paths(parser)
    add_catalog(parser, required=catalog_required, also=catalog_also)
    add_plugin(parser, help=format_help)
    add_plugin_options(parser)
    add_start(parser)
    add_end(parser)
    add_two_phase(parser)
    add_settings(parser)
    add_include_uncommitted(parser)
    add_timeline(parser)
    add_diagnostics_options(parser)
    argtypes.add_input_options(parser)
