"""``waldecode pgoutput-dump``: a pgoutput stream (what ``pg_recvlogical -f`` writes for a pgoutput slot)
printed one message per line, by ``output.pgoutput_dump``."""

from __future__ import annotations

import sys

from ..errors import UsageError
from ..output.pgoutput_dump import dump


def add_arguments(sub) -> None:
    p = sub.add_parser("pgoutput-dump", help="print a pgoutput stream (pg_recvlogical -f output) readably",
                       description="Print the logical replication messages of a pgoutput stream, as "
                                   "'pg_recvlogical -f FILE' writes it for a pgoutput slot, one line per "
                                   "message (offset, type, fields).")
    p.add_argument("file", metavar="FILE", help="the stream ('-' for standard input)")
    p.add_argument("--streaming", choices=("off", "on", "parallel"),
                   help="the slot's streaming option (only Stream Abort depends on it: parallel adds "
                        "abort_lsn and abort_time; default: inferred)")
    p.set_defaults(func=cmd_pgoutput_dump)


def cmd_pgoutput_dump(args) -> int:
    if args.file == "-":
        data, path = sys.stdin.buffer.read(), "standard input"
    else:
        try:
            with open(args.file, "rb") as fh:
                data = fh.read()
        except OSError as e:
            raise UsageError(f"cannot read {args.file}: {e.strerror}") from None
        path = args.file
    dump(data, sys.stdout, path, args.streaming)
    sys.stdout.flush()
    return 0
