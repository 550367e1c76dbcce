"""The output-plugin contract: which callbacks the decoder calls, in which order, with what.

Owns the interface between the apply stage (``replay``, ``decode``) and an output plugin,
with the callback names of src/include/replication/output_plugin.h (OutputPluginCallbacks):
a plugin subclasses ``OutputPlugin``, and the decoder calls nothing else on it and sets
nothing on it.  Hands plugins a read-only ``Transaction`` (ReorderBufferTXN) with every
transaction callback and, with every change, the ``CatalogView`` of the catalog in force
for that change (PostgreSQL's historic snapshot).

Order of calls, as logical decoding makes them::

    startup(options, catalog)                  once, before the first record is decoded
    for each transaction decoded, at its commit (or at PREPARE on a two-phase slot):
        begin(txn)                             begin_prepare(txn) at PREPARE
        change(txn, lsn, ...) | truncate(txn, lsn, ...) | message(txn, lsn, ...)   in LSN order
                                               (change_tuples instead of change for a plugin
                                               that asked for receive_wal_tuples)
          | invalidate(messages)               among them, at their LSN: its own invalidations
                                               and those distributed into it
        commit(txn, commit_lsn)                prepare(txn, prepare_lsn) at PREPARE
        invalidate(messages) ...               its own invalidations, then those distributed into
                                               it (or invalidate_all())
    commit_prepared(txn, ...), rollback_prepared(txn, ...)   at COMMIT/ROLLBACK PREPARED,
        invalidate(messages)                   then its own invalidations
    message(txn or None, lsn, False, ...)      a non-transactional message, at its record
    invalidate(messages)                       catalog cache invalidations executed outside any
                                               transaction handed to the plugin, at their record
    uncommitted(txn)                           waldecode's: ends a transaction still open at
                                               the end of the WAL, when asked to print those
    shutdown()                                 once, at the end (after an error too)

``filter_by_origin`` is asked for each change and transaction end, with its replication
origin, whether to leave it out; ``filter_prepare`` whether a prepared transaction is
decoded at COMMIT PREPARED rather than at PREPARE.

Where a plugin writes is its own affair; ``OutputWriter`` is a place that takes lines as bytes
in large blocks, with a buffer native code appends to (test_decoding's native path).

A plugin may also offer the native decoding loop (``waldecode._logical``) an optional capability,
which replaces ``begin``, ``change_tuples`` and ``commit`` for the plain commits that loop writes
whole (docs/native.md): ``row_writer(catalog, relation)`` (the relation's native row appender,
a ``_typeout.RelDesc``, the output buffer, the table's head, the block size), ``txn_lines()`` (a ``_typeout.TxnLines`` writing its lines at a
transaction's ends, and the ``OutputWriter``), ``rows_begin(txn)`` and ``rows_written(n)``; a plugin
without them, or returning None, has every transaction go through the callbacks above.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from .. import _impl
from ..catalog import Relation, TypeInfo
from ..errors import OutputPluginError
from ..types import OutputContext

# Values of ``change``'s ``action`` (test_decoding prints them as they are)
INSERT = "INSERT"
UPDATE = "UPDATE"
DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class OutputPluginOptions:
    """OutputPluginOptions: what ``startup`` tells the decoder about the plugin's needs."""

    # Also decode changes to the transient heaps of table rewrites (a relation with relrewrite)
    receive_rewrites: bool = False
    # Decode prepared transactions at PREPARE even on a slot not created two_phase (ctx->twophase_opt_given:
    # pgoutput's two_phase option)
    two_phase: bool = False
    # Deliver row changes as the WAL carries their tuples, through ``change_tuples``, instead of
    # as column values through ``change`` (a plugin with native tuple output asks for this)
    receive_wal_tuples: bool = False


@dataclass(frozen=True, slots=True)
class Transaction:
    """A decoded transaction as plugins see it: the read-only part of ReorderBufferTXN.

    ``final_lsn`` is the LSN of the record that ends what the callback reports (commit,
    prepare, COMMIT/ROLLBACK PREPARED) and ``end_lsn`` the end of that record; both are 0
    for a transaction still open at the end of the WAL (``uncommitted``).  ``xact_time``
    is the time that record carries (commit_time, prepare_time or the abort time, as
    PostgreSQL's ``xact_time`` union; TimestampTz: microseconds since 2000-01-01 UTC).
    ``origin_id`` is the replication origin (0: none), ``gid`` the GID of a prepared
    transaction, else None.  ``invalidations`` are the catalog cache invalidation messages
    the ending record carries (SharedInvalidationMessage, 16 bytes each), for information:
    a plugin with caches of its own hears the invalidations logical decoding executes through
    ``invalidate``.
    """

    xid: int
    first_lsn: int
    final_lsn: int
    end_lsn: int
    xact_time: int
    origin_id: int = 0
    origin_lsn: int = 0
    gid: str | None = None
    invalidations: bytes = b""


class CatalogView:
    """The catalog in force for one change, as a plugin may use it.

    ``relation(oid)`` and ``type(oid)`` look up relations and types as the transaction
    saw them at that change (``catalog.Relation``, ``catalog.TypeInfo``, or None);
    ``output_context()`` gives the ``types.OutputContext`` whose ``output(typeoid, value)``
    is the type's output text under the snapshot's settings; ``major`` and ``settings``
    are the server's.  The decoder hands out one view per catalog state and reuses it as
    long as that state lasts, so plugins may cache per view (by identity).
    """

    __slots__ = ("_catalog", "_make_context", "_context", "_at", "major", "settings")

    def __init__(self, catalog, output_context=None, at=None):
        """``catalog``: a ``catalog.Catalog`` or a historic view of it; ``output_context``: a
        callable giving the catalog's own output context, if it keeps one; ``at``: a callable
        giving the ``CatalogView`` of an LSN (``at``), where the decoder follows the history."""
        self._catalog = catalog
        self._make_context = output_context
        self._at = at
        self._context: OutputContext | None = None
        self.major: int = catalog.major
        self.settings: dict = catalog.settings

    def __repr__(self) -> str:
        return f"<CatalogView of {self._catalog!r}>"

    @property
    def catalog(self):
        """The catalog itself (``catalog.Catalog`` or a historic view of it), for what this view does
        not wrap: the publication catalogs pgoutput reads, ``position`` in the catalog history."""
        return self._catalog

    def at(self, lsn: int) -> "CatalogView":
        """The catalog as the transactions committed before ``lsn`` left it (a view of the snapshot
        decoding started from when no history is followed)."""
        return self._at(lsn) if self._at is not None else self

    def relation(self, oid: int) -> Relation | None:
        return self._catalog.relation(oid)

    def type(self, oid: int) -> TypeInfo | None:
        return self._catalog.type(oid)

    def output_context(self) -> OutputContext:
        if self._context is None:
            self._context = (self._make_context() if self._make_context is not None
                             else OutputContext(self._catalog, self.settings))
        return self._context


class OutputWriter:
    """Where a plugin's text goes as bytes, in large blocks (the file ``pg_recvlogical -f`` writes).

    Lines are appended to ``buffer`` (``write_line(text)``, or native code appending to the
    buffer itself and then calling ``wrote()``); ``write_block(data)`` receives whole lines,
    ``block_size`` bytes or more at a time, and the rest at ``flush()``.  Whoever needs the
    output on disk up to a point (a slot confirming it, the end of the run) calls ``flush()``
    first.  ``buffer`` is a ``waldecode._typeout.OutBuf`` under the Cython implementation, for
    native code to append to, else a bytearray.
    """

    BLOCK_SIZE = 1 << 20

    def __init__(self, write_block, block_size: int = BLOCK_SIZE):
        typeout = _impl.typeout()
        self.write_block = write_block
        self.block_size = block_size
        self.native = typeout is not None
        # room for a block and the line that completes it, without growing
        self.buffer = typeout.OutBuf(block_size + (block_size >> 2)) if self.native else bytearray()
        self._append = self.buffer.write if self.native else self.buffer.extend

    def write_line(self, line: str) -> None:
        self._append(line.encode("utf-8", "surrogateescape"))
        self._append(b"\n")
        if len(self.buffer) >= self.block_size:
            self.flush()

    def write_bytes_line(self, data: bytes) -> None:
        """A line that is bytes already (a binary plugin's message; pg_recvlogical -f ends each with a newline)."""
        self._append(data)
        self._append(b"\n")
        if len(self.buffer) >= self.block_size:
            self.flush()

    def wrote(self) -> None:
        """Lines were appended to ``buffer`` directly: write a block out once there is one."""
        if len(self.buffer) >= self.block_size:
            self.flush()

    def flush(self) -> None:
        buf = self.buffer
        if not len(buf):
            return
        if self.native:
            data = buf.take()
        else:
            data = bytes(buf)
            del buf[:]
        self.write_block(data)


def unknown_option(name: str, value: str | None) -> OutputPluginError:
    """The error for an option a plugin does not know, worded as test_decoding words it."""
    return OutputPluginError(f'option "{name}" = "{value if value is not None else "(null)"}" is unknown')


_TWO_PHASE_CALLBACKS = ("begin_prepare", "prepare", "commit_prepared", "rollback_prepared", "filter_prepare")


class OutputPlugin(abc.ABC):
    """Base class of output plugins: PostgreSQL's OutputPluginCallbacks as methods.

    ``begin``, ``change`` and ``commit`` are required; the others default to what
    PostgreSQL does when a plugin leaves the callback unset.
    """

    #: Whether Spark may decode the transactions of different ranges in separate instances of the
    #: plugin (``spark decode``): False for one whose output for a transaction depends on what it
    #: printed for earlier ones beyond the event before it (SQL's DDL tracking, undo's reversal)
    ranges_apart = True
    #: With ``ranges_apart`` False: whether Spark may still decode it as one output range, in order (what
    #: pgoutput sends depends on what it sent before, which one range keeps)
    in_one_range = False

    @property
    def events_apart(self) -> bool:
        """After ``startup``: does what it writes for a transaction or a call depend on nothing it wrote
        before?  Then decodes of consecutive LSN ranges, each by a plugin of its own, concatenate into
        one run's output (``spark decode``'s range path); False sends Spark to its event path."""
        return self.ranges_apart

    # -- life cycle --------------------------------------------------------------------------------

    def startup(self, options: dict[str, str | None], catalog: CatalogView) -> OutputPluginOptions | None:
        """startup_cb: parse ``options`` (name -> value, None for a bare ``-o name``, as
        ``pg_recvlogical -o`` passes them) and raise ``OutputPluginError`` for one that is
        unknown or malformed.  ``catalog`` is the catalog snapshot decoding starts from
        (what session-wide output, such as commit timestamps, is formatted with).  Returns
        what the decoder should deliver (None: the defaults).  This default knows no option."""
        if options:
            raise unknown_option(*next(iter(options.items())))
        return OutputPluginOptions()

    def shutdown(self) -> None:
        """shutdown_cb: decoding is over (normally or not); release what the plugin holds."""

    # -- transactions ------------------------------------------------------------------------------

    @abc.abstractmethod
    def begin(self, txn: Transaction) -> None:
        """begin_cb: a committed transaction's changes follow."""

    @abc.abstractmethod
    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new: list | None, old: list | None) -> None:
        """change_cb: one row change of ``relation``, at ``lsn``, as ``catalog`` (the catalog in
        force for this change) describes the relation.  ``action`` is ``INSERT``, ``UPDATE`` or
        ``DELETE``; ``new`` and ``old`` are column values in attnum order (see
        ``waldecode.output``), or None where the WAL carries no such tuple: ``old`` is the
        replica-identity key (or the whole old row with REPLICA IDENTITY FULL) of an UPDATE or
        DELETE that logged it, the other columns NULL."""

    def change_tuples(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
                      newtuple: bytes | None, oldtuple: bytes | None, toast) -> None:
        """change_cb for a plugin whose ``startup`` asked for ``receive_wal_tuples``: called instead
        of ``change``, with the same arguments but the tuples as the WAL carries them
        (xl_heap_header, then the tuple body; ``waldecode._typeout.RelDesc`` deforms them) rather
        than column values.  ``toast(pointer)`` gives the value of an external TOAST pointer of
        ``newtuple`` (a ``varlena.ToastPointer``) that this transaction wrote, or None for one it
        did not (test_decoding's ``unchanged-toast-datum``); pointers in ``oldtuple`` are not
        resolved, as ``change``'s ``old`` does not resolve them."""
        raise OutputPluginError(f"{type(self).__name__} asked for WAL tuples but has no change_tuples callback")

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list[Relation],
                 restart_seqs: bool, cascade: bool) -> None:
        """truncate_cb: ``relations`` were truncated together (the logically logged ones of the
        TRUNCATE).  Without it a TRUNCATE is not reported."""

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        """message_cb: a pg_logical_emit_message() message.  A transactional one comes inside
        its transaction, in LSN order.  A non-transactional one comes at its record, with the
        transaction it was written in, still open (``final_lsn`` 0), or None outside any.
        Without it messages are not reported."""

    @abc.abstractmethod
    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        """commit_cb: the transaction begun by ``begin`` committed at ``commit_lsn``."""

    def uncommitted(self, txn: Transaction) -> None:
        """Not PostgreSQL's: ends a transaction that has no commit or abort in the WAL read, whose
        changes were asked for (``--include-uncommitted``)."""

    # -- two-phase commit (a slot created with two_phase) ------------------------------------------

    @classmethod
    def supports_two_phase(cls) -> bool:
        """StartupDecodingContext's ctx->twophase: a plugin that implements any of the two-phase
        callbacks has prepared transactions decoded at PREPARE on a two-phase slot; one that
        implements none has them decoded at COMMIT PREPARED, as if the slot were not two-phase."""
        return any(getattr(cls, name) is not getattr(OutputPlugin, name) for name in _TWO_PHASE_CALLBACKS)

    def filter_prepare(self, xid: int, gid: str) -> bool:
        """filter_prepare_cb: True to decode this prepared transaction at COMMIT PREPARED instead."""
        return False

    # Required once a plugin implements two-phase decoding (PostgreSQL's wrappers say the same)
    def begin_prepare(self, txn: Transaction) -> None:
        """begin_prepare_cb: a prepared transaction's changes follow (``txn.gid`` is set)."""
        raise OutputPluginError("logical replication at prepare time requires a begin_prepare callback")

    def prepare(self, txn: Transaction, prepare_lsn: int) -> None:
        """prepare_cb: the transaction begun by ``begin_prepare`` was prepared at ``prepare_lsn``."""
        raise OutputPluginError("logical replication at prepare time requires a prepare callback")

    def commit_prepared(self, txn: Transaction, commit_lsn: int) -> None:
        """commit_prepared_cb: a transaction decoded at PREPARE committed (COMMIT PREPARED)."""
        raise OutputPluginError("logical replication at prepare time requires a commit_prepared callback")

    def rollback_prepared(self, txn: Transaction, prepare_end_lsn: int, prepare_time: int) -> None:
        """rollback_prepared_cb: a transaction decoded at PREPARE was rolled back (ROLLBACK
        PREPARED); ``prepare_end_lsn`` and ``prepare_time`` are those of its PREPARE."""
        raise OutputPluginError("logical replication at prepare time requires a rollback_prepared callback")

    # -- catalog cache invalidations ---------------------------------------------------------------

    def invalidate(self, messages: bytes) -> None:
        """Catalog cache invalidations logical decoding executes (LocalExecuteInvalidationMessage),
        SharedInvalidationMessage, 16 bytes each: inside a transaction's replay, among its changes at
        their LSN (REORDER_BUFFER_CHANGE_INVALIDATION: its own XLOG_XACT_INVALIDATIONS records, and
        from PostgreSQL 15.13, 16.9 and 17.5 on those of transactions that committed catalog changes
        while it was open), and after its end callback (its own, then those distributed into it);
        after COMMIT/ROLLBACK PREPARED (its own); outside any transaction handed to the plugin
        (ReorderBufferImmediateInvalidation: those of a transaction without xid, as VACUUM's in-place
        updates log them; of a transaction skipped).  A plugin with caches of its own acts on them
        (pgoutput's relation sync cache); the others need not, and only a plugin that defines it is
        given the ones of a transaction's replay."""

    def invalidate_all(self) -> None:
        """InvalidateSystemCaches: every catalog cache entry is invalid, as at the end of the replay of
        a transaction given more distributed invalidations than PostgreSQL keeps for one
        (RBTXN_DISTR_INVAL_OVERFLOWED).  A plugin with caches of its own acts on it."""

    # -- origins -----------------------------------------------------------------------------------

    def filter_by_origin(self, origin_id: int) -> bool:
        """filter_by_origin_cb: True to leave out changes replayed from replication origin
        ``origin_id`` (0: local changes)."""
        return False
