"""``waldecode apply``: decoded transactions applied to a live server, as a subscriber applies them.

Owns the rules of PostgreSQL's logical-replication apply worker (src/backend/replication/
logical/worker.c) for WAL decoded offline: transactions in commit order, one target
transaction per source transaction; an UPDATE or DELETE whose row is not there is skipped
and logged (the worker's "logical replication did not find row to be updated/deleted"); any
error — a constraint violation above all — stops the run with the transaction, its commit
LSN, the change's LSN and relation named, the target transaction rolled back.

Progress lives in a replication origin on the target (pg_replication_origin_*): each target
transaction is committed with ``pg_replication_origin_xact_setup(commit_lsn, commit_time)``,
so the origin's progress moves with the commit itself, atomically.  A run (re)starts by
reading that progress and skips every transaction committed at or before it: after a crash
at any point, nothing is lost and nothing applied twice.  The statements are the ``sql``
plugin's (``output.sql``), with conflict handling left to these rules.
"""

from __future__ import annotations

from ..errors import Error
from ..faults import crashpoint
from ..output.base import DELETE, UPDATE, CatalogView, OutputPluginOptions, Transaction
from ..output.sql import SqlOutput
from ..pg.lsn import format_lsn, parse_lsn


class ApplyError(Error):
    """A transaction could not be applied to the target; nothing of it was."""


class ApplyOutput(SqlOutput):
    """The sql plugin, its transactions executed on ``conn`` (psycopg, not autocommit) under replication
    origin ``origin``; with ``dry_run`` they are printed by ``write`` instead (nothing is changed)."""

    def __init__(self, conn, origin: str, *, write, dry_run: bool = False, log=None):
        super().__init__(write=self._setting if not dry_run else write)
        self.conn = conn
        self.origin = origin
        self.dry_run = dry_run
        self.print = write
        self.log = log or (lambda message: None)
        self.applied = 0
        self.already_applied = 0
        self.skipped_changes = 0
        self.progress = 0

    def _setting(self, line: str) -> None:
        # the sql plugin's preamble: the settings the input functions read the values with
        if not line.startswith("--"):
            self.conn.execute(line)

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        conn = self.conn
        if not self.dry_run:
            conn.execute("SELECT pg_catalog.pg_replication_origin_create(%s) WHERE "
                         "pg_catalog.pg_replication_origin_oid(%s) IS NULL", (self.origin, self.origin))
            conn.commit()
            conn.execute("SELECT pg_catalog.pg_replication_origin_session_setup(%s)", (self.origin,))
        # false: the progress of the last commit, flushed or not (a server crash loses the two together:
        # the commit record carries the origin's position)
        row = conn.execute("SELECT pg_catalog.pg_replication_origin_progress(%s, false)::text",
                           (self.origin,)).fetchone() if self._origin_exists() else None
        conn.commit()
        self.progress = parse_lsn(row[0]) if row and row[0] else 0
        opts = super().startup(dict(options), catalog)
        if not self.dry_run:
            conn.commit()  # the settings are session-wide (set_config(..., false))
        if self.progress:
            self.log(f"origin {self.origin!r} has applied up to {format_lsn(self.progress)}: "
                     "transactions committed there or before are skipped")
        return opts

    def _origin_exists(self) -> bool:
        return self.conn.execute("SELECT pg_catalog.pg_replication_origin_oid(%s) IS NOT NULL",
                                 (self.origin,)).fetchone()[0]

    def uncommitted(self, txn: Transaction) -> None:
        self._txn = None  # never applied: it did not commit

    def _end(self, txn: Transaction, what: str, commit: bool = True) -> None:
        stmts, self._txn = self._txn or [], None
        if not commit:
            return
        if txn.final_lsn <= self.progress:
            self.already_applied += 1
            return
        if self.dry_run:
            self.print(f"-- transaction {txn.xid} {what}: would be applied")
            for text, _ in stmts:
                self.print(text)
            self.applied += 1
            return
        conn = self.conn
        try:
            for text, change in stmts:
                if change is None:
                    continue  # a comment: a message, or what the sql plugin cannot express
                cur = conn.execute(text)
                action, lsn, rel = change
                if action in (UPDATE, DELETE) and cur.rowcount == 0:
                    # worker.c: the row is not there; the change is skipped, with a log line
                    self.skipped_changes += 1
                    self.log(f"transaction {txn.xid} (commit {format_lsn(txn.final_lsn)}): {action} at "
                             f"{format_lsn(lsn)} of {self._name(rel)} skipped: the row is not on the target")
            unexpressed = [text for text, change in stmts if change is None and text.startswith("-- cannot")]
            if unexpressed:
                raise ApplyError(unexpressed[0][3:])
            # An xid makes the target write a commit record, which carries the origin's new position,
            # even when every change was skipped (a transaction without one commits without a record)
            conn.execute("SELECT pg_catalog.pg_current_xact_id(), pg_catalog.pg_replication_origin_xact_setup("
                         "%s::pg_lsn, %s::timestamptz)", (format_lsn(txn.final_lsn), self._time(txn.xact_time)))
            crashpoint("apply-before-commit")
            conn.commit()
        except Exception as e:
            conn.rollback()
            where = ""
            if "change" in locals() and change is not None:
                action, lsn, rel = change
                shown = text if len(text) <= 300 else text[:300] + "..."
                where = f" at its {action} at {format_lsn(lsn)} of {self._name(rel) if rel else '?'} ({shown})"
            message = e.diag.message_primary if hasattr(e, "diag") and e.diag.message_primary else str(e)
            raise ApplyError(f"transaction {txn.xid} (commit {format_lsn(txn.final_lsn)}) was not applied: "
                             f"stopped{where}: {message}") from None
        self.progress = txn.final_lsn
        self.applied += 1
        crashpoint("apply-after-commit")


# -- the command ---------------------------------------------------------------------------------------


def add_arguments(sub) -> None:
    from .. import argtypes

    ap = sub.add_parser("apply", help="apply decoded transactions to a live server, as a subscriber would",
                        description="Decode WAL and apply each committed transaction to TARGET in commit order, "
                                    "one target transaction each, with a logical-replication subscriber's rules; "
                                    "progress is kept in a replication origin on the target, so a rerun resumes "
                                    "after the last transaction applied.")
    ap.add_argument("paths", nargs="+", metavar="PATH", help="WAL segment files or directories")
    ap.add_argument("--dsn", required=True, help="libpq connection string of the target database (superuser: "
                                                 "replication origins)")
    ap.add_argument("--catalog", required=True, metavar="FILE", help="catalog snapshot of the source database")
    ap.add_argument("--origin", default="waldecode", help="replication origin on the target (default: waldecode)")
    ap.add_argument("-s", "--start-lsn", type=argtypes.lsn, help="as decode --start-lsn")
    ap.add_argument("-e", "--end-lsn", type=argtypes.lsn, help="as decode --end-lsn")
    ap.add_argument("--timeline", type=int, help="follow this timeline (as decode --timeline)")
    ap.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                    help="as decode --set")
    ap.add_argument("--dry-run", action="store_true", help="print what would be applied; change nothing")
    ap.set_defaults(func=cmd_apply)


def cmd_apply(args) -> int:
    import sys

    import psycopg

    from ..catalog import Catalog
    from ..cli import fit_catalog, report_decode_result
    from ..logical.session import decode_wal
    from ..wal.segments import discover

    segments = discover(args.paths, args.timeline)
    catalog = Catalog.load(args.catalog)
    fit_catalog(catalog, segments, args.settings, args.catalog)

    def log(message: str) -> None:
        print(f"waldecode: {message}", file=sys.stderr)

    try:
        conn = psycopg.connect(args.dsn, autocommit=False)
    except psycopg.Error as e:
        raise ApplyError(f"could not connect to the target: {str(e).strip()}") from None
    with conn:
        plugin = ApplyOutput(conn, args.origin, write=lambda line: print(line), dry_run=args.dry_run, log=log)
        result = decode_wal(segments, catalog, plugin, start_lsn=args.start_lsn, end_lsn=args.end_lsn,
                            on_warning=lambda m: log(f"warning: {m}"))
    log(f"{plugin.applied} transaction(s) {'would be ' if args.dry_run else ''}applied, "
        f"{plugin.already_applied} applied before (origin {args.origin!r}), "
        f"{plugin.skipped_changes} change(s) skipped (row not on the target)")
    return report_decode_result(result, segments, args.start_lsn)
