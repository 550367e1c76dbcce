"""Change rows: decoding as records of named fields, the shape JSON lines and Parquet share.

Owns the row model of ``output.jsonl`` (``decode --format jsonl``), ``output.parquet``
(``decode --parquet``, ``spark decode --parquet``) and the leading columns of the ``pgwal``
DataFrame source (``spark.datasource``): the schema version, the names and order of the
fields every row starts with, the ``op`` values, and ``RowPlugin``, which turns the output
plugin callbacks into those rows (one per change, per transaction boundary, per message)
and leaves the values of a change to its subclass: text in JSON lines, typed in Parquet.
The schema is documented in ``docs/jsonl-parquet.md``.
"""

from __future__ import annotations

from .. import _impl
from ..catalog import Relation
from ..heap.varlena import ToastPointer
from ..types.datetime import USE_ISO_DATES, timestamptz_text
from . import UNCHANGED_TOAST
from .base import CatalogView, OutputPlugin, OutputPluginOptions, Transaction

#: The version of the row schema below (JSON lines' ``"v"``, Parquet's ``waldecode.schema_version``
#: file metadata): raised whenever a field is renamed, retyped or removed, or its meaning changes
SCHEMA_VERSION = 1

# ``op`` of each row (those of the pgwal source's rows too)
BEGIN = "BEGIN"
COMMIT = "COMMIT"
PREPARE = "PREPARE"
COMMIT_PREPARED = "COMMIT PREPARED"
ROLLBACK_PREPARED = "ROLLBACK PREPARED"
UNCOMMITTED = "UNCOMMITTED"
TRUNCATE = "TRUNCATE"
MESSAGE = "MESSAGE"

#: The fields every row starts with, in this order, and their type where rows are typed (Spark SQL
#: DDL names; Parquet: int64, timestamp[us, UTC], string).  ``commit_lsn``: the record that ends the
#: transaction as decoded (its commit, or its PREPARE when decoded at PREPARE); ``lsn``: the row's
#: own record (a change's, a message's; BEGIN: the transaction's first record; COMMIT, PREPARE,
#: COMMIT/ROLLBACK PREPARED: that record); ``commit_time``: the time that record carries.
LEADING_FIELDS = (("commit_lsn", "long"), ("lsn", "long"), ("xid", "long"), ("commit_time", "timestamp"),
                  ("op", "string"), ("schema", "string"), ("table", "string"))


def leading_fields_ddl() -> str:
    """``LEADING_FIELDS`` as Spark SQL DDL (the pgwal source's schema starts with it)."""
    return ", ".join(f"{name} {typ}" for name, typ in LEADING_FIELDS)


def old_columns(relation: Relation, old: list) -> list[int]:
    """Indexes (into ``relation.attributes``) of the columns an old tuple reports: every column with
    REPLICA IDENTITY FULL, else the replica identity key's (the WAL carries the others as NULL,
    which test_decoding leaves out)."""
    atts = relation.attributes
    if relation.relreplident == "f":
        return [i for i, att in enumerate(atts) if not att.attisdropped]
    return [i for i, (att, v) in enumerate(zip(atts, old)) if not att.attisdropped and v is not None]


def is_unchanged_toast(value) -> bool:
    """A TOASTed value the change did not carry: the new tuple's unresolved pointer, or an old
    tuple's pointer (old tuples are not resolved, as test_decoding prints unchanged-toast-datum)."""
    return value is UNCHANGED_TOAST or value.__class__ is ToastPointer


class RowPlugin(OutputPlugin):
    """The output-plugin callbacks as rows: ``event(row)`` gets each transaction boundary, message
    and truncate as a dict starting with ``LEADING_FIELDS`` (LSNs as ints, ``commit_time`` as
    TimestampTz microseconds or None); ``change`` is the subclass's.  Knows no ``-o`` option
    unless the subclass parses some (``options``)."""

    changes_written = 0  # rows of changes and messages (the progress line counts them)

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        self.options(dict(options))
        self.major = catalog.major
        self._session = catalog.output_context()
        self._time_text = (None, None)
        self._value_text = (None, None)
        self._typeout = _impl.typeout()
        return OutputPluginOptions()

    def options(self, options: dict) -> None:
        """Parse ``-o`` options (the subclass's); this default knows none."""
        super().startup(options, None)

    def event(self, row: dict) -> None:
        raise NotImplementedError

    def timestamp_text(self, ts: int) -> str:
        """A commit time as test_decoding's include-timestamp prints it (timestamptz_to_str: ISO in
        the session TimeZone); the last one is kept (every row of a transaction prints it)."""
        last, text = self._time_text
        if ts != last:
            text = timestamptz_text(ts, self._session.timezone, USE_ISO_DATES, 0)
            self._time_text = (ts, text)
        return text

    def value_text(self, catalog: CatalogView):
        """``fn(typeoid, value)``: the output text of a column value under ``catalog``'s output
        context, printed in C (``_typeout.TypeOut``) under the Cython implementation."""
        ctx = catalog.output_context()
        last, fn = self._value_text
        if ctx is not last:
            if self._typeout is None:
                fn = ctx.output
            else:
                native = self._typeout.TypeOut(ctx).value_text

                def fn(typeoid, value):
                    return native(typeoid, value).decode("utf-8", "surrogateescape")
            self._value_text = (ctx, fn)
        return fn

    @staticmethod
    def head(txn: Transaction | None, lsn: int | None, op: str, schema=None, table=None) -> dict:
        ended = txn is not None and txn.final_lsn
        return {"commit_lsn": txn.final_lsn if ended else None, "lsn": lsn, "xid": txn.xid if txn is not None else None,
                "commit_time": txn.xact_time if ended else None, "op": op, "schema": schema, "table": table}

    # -- transactions ------------------------------------------------------------------------------

    def begin(self, txn: Transaction) -> None:
        self.event(self.head(txn, txn.first_lsn, BEGIN))

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        self.event(self.head(txn, commit_lsn, COMMIT))

    def begin_prepare(self, txn: Transaction) -> None:
        self.event(dict(self.head(txn, txn.first_lsn, BEGIN), gid=txn.gid))

    def prepare(self, txn: Transaction, prepare_lsn: int) -> None:
        self.event(dict(self.head(txn, prepare_lsn, PREPARE), gid=txn.gid))

    def commit_prepared(self, txn: Transaction, commit_lsn: int) -> None:
        self.event(dict(self.head(txn, commit_lsn, COMMIT_PREPARED), gid=txn.gid))

    def rollback_prepared(self, txn: Transaction, prepare_end_lsn: int, prepare_time: int) -> None:
        self.event(dict(self.head(txn, txn.final_lsn, ROLLBACK_PREPARED), gid=txn.gid))

    def uncommitted(self, txn: Transaction) -> None:
        self.event(self.head(txn, None, UNCOMMITTED))

    # -- what happens inside -----------------------------------------------------------------------

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        self.changes_written += 1
        self.event(dict(self.head(txn, lsn, TRUNCATE), relations=[(r.nspname, r.relname) for r in relations],
                        restart_seqs=bool(restart_seqs), cascade=bool(cascade)))

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        self.changes_written += 1
        self.event(dict(self.head(txn, message_lsn, MESSAGE), transactional=bool(transactional), prefix=prefix,
                        content=bytes(content)))
