"""What each decoded transaction did, kept for a forensic report: an output plugin that records.

Owns ``Collector``, an ``OutputPlugin`` that wraps another one (one of ``output.PLUGINS``, with
the options ``decode`` takes): every transaction it is handed is kept as a ``DecodedTxn`` — xid, commit LSN
and time, GID, per table the rows inserted, updated and deleted and the truncations, the keys of
the rows it touched (to find rows changed on both sides of a fork), and, when asked, the lines the
wrapped plugin printed for it.  Transactions still open at the end of the WAL read come through
``uncommitted`` (``decode_wal(include_uncommitted=True)``) and are kept apart.  Changes reach it as
column values (never as WAL tuples), so the key values are the types' output text.

A change the decoder skips (its relation file number maps to no relation of the catalog, e.g. a
table rewritten between the snapshot and the reading start) never reaches a plugin: the decoder
warns while it replays the transaction, and ``skipped`` keeps that warning with the transaction
being replayed (``undecoded``), so that a report never takes its missing changes for none.  What
the wrapped plugin could not write (the sql plugin's ``problems``: a change it cannot redo) is kept
with the transaction it belongs to (``problems``).  Hands the transactions to ``diverge``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..output import UNCHANGED_TOAST, plugin_class
from ..output.base import DELETE, INSERT, UPDATE, OutputPlugin, OutputPluginOptions, Transaction
from ..pg.quote import quote_qualified_identifier

TRUNCATE = "TRUNCATE"
#: a key standing for every row of a table (a TRUNCATE touches them all)
ALL_ROWS = ("*",)

#: the warning of a change the decoder skipped (logical.replay.Replayer._skip): what it names
_SKIPPED = re.compile(r"could not (?:map filenumber (?P<filenumber>\d+/\d+/\d+)|open relation with OID (?P<oid>\d+))"
                      r".*? of transaction (?P<xid>\d+) at (?P<lsn>[0-9A-F]+/[0-9A-F]+): (?P<why>.*); change skipped",
                      re.S)


@dataclass
class Undecoded:
    """A change of a transaction the decoder could not decode, and why."""

    lsn: str  # as PostgreSQL prints it
    filenumber: str  # tablespace/database/relfilenumber, or "OID n" (a TRUNCATE's relation)
    reason: str  # the decoder's warning


@dataclass
class DecodedTxn:
    """One transaction as a report tells it."""

    timeline: int
    xid: int
    first_lsn: int
    commit_lsn: int  # 0 for one still open at the end of the WAL read
    end_lsn: int
    commit_time: int  # TimestampTz (microseconds since 2000-01-01 UTC); 0 when open
    gid: str | None
    # table (schema-qualified, as PostgreSQL quotes it) -> {"INSERT": n, "UPDATE": n, "DELETE": n, "TRUNCATE": n}
    tables: dict = field(default_factory=dict)
    # (table, key) -> [operations in LSN order]; key: ((column, output text or None), ...)
    keys: dict = field(default_factory=dict)
    changes: list = field(default_factory=list)  # the wrapped plugin's lines, when kept
    nchanges: int = 0
    undecoded: list = field(default_factory=list)  # Undecoded: its changes the decoder skipped
    # what the wrapped plugin could not write of it, in its words (the sql plugin's "cannot redo ...")
    problems: list = field(default_factory=list)

    @property
    def changes_complete(self) -> bool:
        return not self.undecoded

    def count(self, table: str, op: str) -> None:
        per = self.tables.get(table)
        if per is None:
            per = self.tables[table] = {INSERT: 0, UPDATE: 0, DELETE: 0, TRUNCATE: 0}
        per[op] += 1
        self.nchanges += 1

    def touch(self, table: str, key: tuple, op: str) -> None:
        self.keys.setdefault((table, key), []).append(op)


def table_name(rel, catalog) -> str:
    """The table a change is reported under: a rewrite's transient heap as the table it rewrites."""
    if rel.relrewrite:
        target = catalog.relation(rel.relrewrite)
        if target is not None:
            rel = target
    return quote_qualified_identifier(rel.nspname, rel.relname, catalog.major)


def row_key(rel, catalog, values) -> tuple | None:
    """The identity of the row ``values`` (a tuple as ``change`` gets it): its replica-identity key
    columns, or, for a table without one (REPLICA IDENTITY FULL or NOTHING), all the columns the
    tuple carries.  ((column name, output text or None), ...); None when a key column is not in it."""
    if values is None:
        return None
    ctx = catalog.output_context()
    attrs = rel.attributes
    wanted = rel.replica_identity_key or tuple(a.attnum for a in attrs if not a.attisdropped)
    out = []
    for attnum in wanted:
        if attnum - 1 >= len(values):
            continue  # a column added after the row was written: not in its tuple
        att = attrs[attnum - 1]
        v = values[attnum - 1]
        if v is UNCHANGED_TOAST:
            if rel.replica_identity_key:
                return None
            continue
        out.append((att.attname, None if v is None else ctx.output(att.atttypid, v)))
    return tuple(out)


class Collector(OutputPlugin):
    """Keeps every transaction it is handed (``txns``, in commit order) and those still open at the
    end (``open``); ``plugin`` (a name in ``output.PLUGINS``, as ``decode --format``) prints the
    changes, kept per transaction when ``keep_changes``."""

    def __init__(self, timeline: int, plugin: str = "test_decoding", keep_changes: bool = True):
        self.timeline = timeline
        self.keep_changes = keep_changes
        self.inner = plugin_class(plugin)(write=self._line)
        self.txns: list[DecodedTxn] = []
        self.open: list[DecodedTxn] = []
        self.preamble: list[str] = []  # what the plugin printed outside any transaction (sql's settings)
        self._cur: DecodedTxn | None = None
        self._problems_kept = 0  # how many of the wrapped plugin's problems went to a transaction

    def _line(self, text: str) -> None:
        if self.keep_changes and self._cur is not None:
            self._cur.changes.append(text)
        elif self._cur is None:
            self.preamble.append(text)

    def _keep_problems(self, cur: DecodedTxn) -> None:
        # the plugin's problems since the last transaction ended are this one's (one is replayed at a time)
        problems = getattr(self.inner, "problems", None)
        if problems is not None and len(problems) > self._problems_kept:
            cur.problems.extend(problems[self._problems_kept:])
            self._problems_kept = len(problems)

    def _txn(self, txn: Transaction) -> DecodedTxn:
        if self._cur is None or self._cur.xid != txn.xid:
            self._cur = DecodedTxn(self.timeline, txn.xid, txn.first_lsn, 0, 0, 0, txn.gid)
        return self._cur

    # -- life cycle ---------------------------------------------------------------------------------

    def startup(self, options, catalog) -> OutputPluginOptions:
        inner = self.inner.startup(options, catalog) or OutputPluginOptions()
        # Column values, not WAL tuples: the keys of the rows are needed as text
        return OutputPluginOptions(receive_rewrites=inner.receive_rewrites, receive_wal_tuples=False)

    def shutdown(self) -> None:
        self.inner.shutdown()

    # -- transactions -------------------------------------------------------------------------------

    def begin(self, txn: Transaction) -> None:
        self._cur = DecodedTxn(self.timeline, txn.xid, txn.first_lsn, 0, 0, 0, txn.gid)
        self.inner.begin(txn)

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        cur = self._txn(txn)
        self.inner.commit(txn, commit_lsn)
        self._keep_problems(cur)
        cur.commit_lsn, cur.end_lsn, cur.commit_time, cur.gid = commit_lsn, txn.end_lsn, txn.xact_time, txn.gid
        self.txns.append(cur)
        self._cur = None

    def uncommitted(self, txn: Transaction) -> None:
        cur = self._txn(txn)
        self.inner.uncommitted(txn)
        self._keep_problems(cur)
        self.open.append(cur)
        self._cur = None

    def change(self, txn, lsn, catalog, relation, action, new, old) -> None:
        cur = self._txn(txn)
        self.inner.change(txn, lsn, catalog, relation, action, new, old)
        table = table_name(relation, catalog)
        cur.count(table, action)
        if action == INSERT:
            keys = (row_key(relation, catalog, new),)
        elif action == UPDATE:
            # the old key when the update changed it (or the table logs whole old rows), and the new one
            keys = (row_key(relation, catalog, old), row_key(relation, catalog, new))
        else:
            keys = (row_key(relation, catalog, old),)
        seen = set()
        for key in keys:
            if key is not None and key not in seen:
                seen.add(key)
                cur.touch(table, key, action)

    def truncate(self, txn, lsn, catalog, relations, restart_seqs, cascade) -> None:
        cur = self._txn(txn)
        self.inner.truncate(txn, lsn, catalog, relations, restart_seqs, cascade)
        for rel in relations:
            table = table_name(rel, catalog)
            cur.count(table, TRUNCATE)
            cur.touch(table, ALL_ROWS, TRUNCATE)

    def skipped(self, warning: str) -> bool:
        """A decoder's warning: when it says a change of the transaction being replayed was skipped,
        keep it with the transaction (True)."""
        cur = self._cur
        m = _SKIPPED.search(warning)
        if cur is None or m is None or int(m["xid"]) != cur.xid:
            return False
        where = m["filenumber"] or f"OID {m['oid']}"
        cur.undecoded.append(Undecoded(m["lsn"], where, str(warning)))
        return True

    def message(self, txn, message_lsn, transactional, prefix, content) -> None:
        if txn is not None and transactional:
            self._txn(txn)
        self.inner.message(txn, message_lsn, transactional, prefix, content)

    def filter_by_origin(self, origin_id: int) -> bool:
        return self.inner.filter_by_origin(origin_id)
