"""test_decoding, line for line as contrib/test_decoding/test_decoding.c prints it.

Options as ``pg_recvlogical -o`` passes them (``include-xids`` on by default,
``include-timestamp``, ``skip-empty-xacts``, ``only-local``, ``include-rewrites``,
``force-binary``, ``stream-changes``); unknown options and unparsable values are
rejected with the server's own wording.  Values are the type output text of
``waldecode.types`` under the snapshot's settings, quoted by ``print_literal``.
"""

from __future__ import annotations

from .. import _impl
from ..catalog import Relation
from ..types.datetime import USE_ISO_DATES, timestamptz_text
from . import UNCHANGED_TOAST, OutputPluginError
from .base import (DELETE, INSERT, UPDATE, CatalogView, OutputPlugin, OutputPluginOptions, OutputWriter, Transaction,
                   unknown_option)
from .quote import quote_identifier, quote_literal_cstr, quote_qualified_identifier
from ..pg.pg_type import (BITOID, BOOLOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID,  # the types
                          NUMERICOID, OIDOID, VARBITOID)  # print_literal special-cases

_UNQUOTED_OIDS = frozenset((INT2OID, INT4OID, INT8OID, OIDOID, FLOAT4OID, FLOAT8OID, NUMERICOID))
_SPECIAL_OIDS = _UNQUOTED_OIDS | {BITOID, VARBITOID, BOOLOID}


def print_literal(typid: int, outputstr: str) -> str:
    """print_literal: how test_decoding prints ``outputstr``, the output text of a value in a
    column of type ``typid``.  Decided by the column's type OID only (a domain over integer
    is quoted); numbers as they are, bit strings as B'...', booleans as true/false, anything
    else as a literal with its quotes doubled."""
    if typid in _UNQUOTED_OIDS:
        return outputstr
    if typid == BITOID or typid == VARBITOID:
        return "B'" + outputstr + "'"
    if typid == BOOLOID:
        return "true" if outputstr == "t" else "false"
    return "'" + outputstr.replace("'", "''") + "'"


def parse_bool(value: str) -> bool | None:
    """src/backend/utils/adt/bool.c parse_bool_with_len: prefixes of true/false/yes/no, on/off, 1/0."""
    v = value.lower()
    n = len(v)
    if not v:
        return None
    c = v[0]
    if c == "t" and "true".startswith(v):
        return True
    if c == "f" and "false".startswith(v):
        return False
    if c == "y" and "yes".startswith(v):
        return True
    if c == "n" and "no".startswith(v):
        return False
    if c == "o" and n >= 2:  # a lone 'o' is not unique enough
        if "on".startswith(v):
            return True
        if "off".startswith(v):
            return False
    if v == "1":
        return True
    if v == "0":
        return False
    return None


# src/include/replication/reorderbuffer.h: ReorderBufferChangeType, what RelDesc.append_change takes
_CHANGE_TYPES = {INSERT: 0, UPDATE: 1, DELETE: 2}


class TestDecoding(OutputPlugin):
    """The plugin; ``write(text)`` receives each output row without its newline, or, given
    ``output`` (a ``base.OutputWriter``), the rows go there as bytes in large blocks.

    Under the Cython implementation (``_impl.typeout()``) row changes come as WAL tuples
    (``change_tuples``) and their lines are built in C (``waldecode._typeout``: a ``TypeOut``
    per catalog view, a ``RelDesc`` per relation); under pure Python as column values
    (``change``), formatted here: the reference.
    """

    __test__ = False  # not a pytest test class, despite the name
    BOOL_OPTIONS = ("include-xids", "include-timestamp", "force-binary", "skip-empty-xacts", "only-local",
                    "include-rewrites", "stream-changes")

    def __init__(self, write=None, *, output: OutputWriter | None = None):
        if (write is None) == (output is None):
            raise TypeError("TestDecoding takes write (a line callback) or output (an OutputWriter)")
        self.output = output
        self.write = write if output is None else output.write_line
        self._wrote_changes = False
        # per relation OID: (attributes, catalog view, [(column prefix, value formatter) or None])
        self._column_cache: dict[int, tuple] = {}
        self._relname_cache: dict[int, tuple] = {}
        # the native path: waldecode._typeout, the TypeOut of the last output context, per relation
        # OID (relation, catalog view, b"table name:", RelDesc)
        self._typeout_module = None
        self._typeout_ctx = None
        self._typeout = None
        self._reldescs: dict[int, tuple] = {}
        self._line = None  # the OutBuf a line is built in without ``output``
        # the fallback counters of the TypeOuts and RelDescs replaced since (native_counters)
        self._retired = {"python_values": 0, "declined_values": 0, "python_tuples": 0}
        self.native_changes = 0  # change lines built by the native path
        self.changes_written = 0  # change and message lines (a progress line counts them)

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        """pg_decode_startup: the options, each a boolean; the session's settings for timestamps."""
        flags = {"include-xids": True, "include-timestamp": False, "skip-empty-xacts": False,
                 "only-local": False, "include-rewrites": False}
        for name, value in options.items():
            if name not in self.BOOL_OPTIONS:
                raise unknown_option(name, value)
            if value is None:
                flag = True
            else:
                flag = parse_bool(value)
                if flag is None:
                    raise OutputPluginError(f'could not parse value "{value}" for parameter "{name}"')
            flags[name] = flag
        self.include_xids = flags["include-xids"]
        self.include_timestamp = flags["include-timestamp"]
        self.skip_empty_xacts = flags["skip-empty-xacts"]
        self.only_local = flags["only-local"]
        self.major = catalog.major
        self._session = catalog.output_context()
        typeout = _impl.typeout()
        if self.output is not None and not self.output.native:
            typeout = None  # the writer's buffer is not one native code can append to
        self._typeout_module = typeout
        if typeout is not None and self.output is None:
            self._line = typeout.OutBuf(4096)
        return OutputPluginOptions(receive_rewrites=flags["include-rewrites"], receive_wal_tuples=typeout is not None)

    def shutdown(self) -> None:
        if self.output is not None:
            self.output.flush()

    def native_counters(self) -> dict[str, int]:
        """How much the native path did and what it left to Python: change lines built in C, values
        printed by a Python output function (types without C code, and values the C code declined),
        tuples a check sent to the Python deformer."""
        counters = dict(self._retired, native_changes=self.native_changes)
        if self._typeout is not None:
            counters["python_values"] += self._typeout.python_values
            counters["declined_values"] += self._typeout.declined_values
        counters["python_tuples"] += sum(d[3].python_tuples for d in self._reldescs.values())
        return counters

    # -- transaction lines ---------------------------------------------------------------------

    def _timestamp(self, ts: int) -> str:
        """timestamptz_to_str: ISO style whatever DateStyle says, in the session TimeZone."""
        return timestamptz_text(ts, self._session.timezone, USE_ISO_DATES, 0)

    def _begin_line(self, txn: Transaction) -> None:
        self.write(f"BEGIN {txn.xid}" if self.include_xids else "BEGIN")

    def begin(self, txn: Transaction) -> None:
        self._wrote_changes = False
        if not self.skip_empty_xacts:
            self._begin_line(txn)

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        line = f"COMMIT {txn.xid}" if self.include_xids else "COMMIT"
        if self.include_timestamp:
            line += f" (at {self._timestamp(txn.xact_time)})"
        self.write(line)

    def _mark_change(self, txn: Transaction) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            self._begin_line(txn)
        self._wrote_changes = True
        self.changes_written += 1

    def uncommitted(self, txn: Transaction) -> None:
        """Not test_decoding's: ends a transaction that has no commit record in the WAL read."""
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        self.write(f"UNCOMMITTED {txn.xid}" if self.include_xids else "UNCOMMITTED")

    # two-phase (slots created with two_phase)
    def begin_prepare(self, txn: Transaction) -> None:
        self.begin(txn)

    def prepare(self, txn: Transaction, prepare_lsn: int) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        line = "PREPARE TRANSACTION " + quote_literal_cstr(txn.gid)
        if self.include_xids:
            line += f", txid {txn.xid}"
        if self.include_timestamp:
            line += f" (at {self._timestamp(txn.xact_time)})"
        self.write(line)

    def _finish_prepared(self, word: str, txn: Transaction) -> None:
        line = f"{word} PREPARED " + quote_literal_cstr(txn.gid)
        if self.include_xids:
            line += f", txid {txn.xid}"
        if self.include_timestamp:
            line += f" (at {self._timestamp(txn.xact_time)})"
        self.write(line)

    def commit_prepared(self, txn: Transaction, commit_lsn: int) -> None:
        self._finish_prepared("COMMIT", txn)

    def rollback_prepared(self, txn: Transaction, prepare_end_lsn: int, prepare_time: int) -> None:
        # test_decoding prints the abort's time (txn->xact_time), not the prepare's
        self._finish_prepared("ROLLBACK", txn)

    def filter_prepare(self, xid: int, gid: str) -> bool:
        """pg_decode_filter_prepare: GIDs containing _nodecode are decoded at COMMIT PREPARED instead."""
        return "_nodecode" in gid

    def filter_by_origin(self, origin_id: int) -> bool:
        return self.only_local and origin_id != 0

    # -- changes -------------------------------------------------------------------------------

    def _relname(self, catalog: CatalogView, rel: Relation) -> str:
        hit = self._relname_cache.get(rel.oid)
        if hit is not None and hit[0] is rel:
            return hit[1]
        name = rel.relname
        if rel.relrewrite:
            # A rewrite's transient heap prints as the table it rewrites
            target = catalog.relation(rel.relrewrite)
            if target is not None:
                name = target.relname
        text = quote_qualified_identifier(rel.nspname, name, self.major)
        self._relname_cache[rel.oid] = (rel, text)
        return text

    def _columns(self, catalog: CatalogView, rel: Relation) -> list:
        """Per column: (prefix ' name[type]:', formatter of a non-NULL value), or None for a dropped
        column; cached per relation and catalog view, so a row costs one call per value."""
        hit = self._column_cache.get(rel.oid)
        if hit is not None and hit[0] is rel.attributes and hit[1] is catalog:
            return hit[2]
        ctx = catalog.output_context()
        cols = [None if att.attisdropped else
                (f" {quote_identifier(att.attname, self.major)}[{att.type_name}]:", _formatter(ctx, att.atttypid))
                for att in rel.attributes]
        self._column_cache[rel.oid] = (rel.attributes, catalog, cols)
        return cols

    def _tuple(self, catalog: CatalogView, rel: Relation, values, skip_nulls: bool) -> str:
        """tuple_to_stringinfo."""
        out = []
        for col, value in zip(self._columns(catalog, rel), values):
            if col is None:
                continue
            if value is None:
                if skip_nulls:
                    continue
                out.append(col[0] + "null")
            elif value is UNCHANGED_TOAST:
                out.append(col[0] + "unchanged-toast-datum")
            else:
                out.append(col[0] + col[1](value))
        return "".join(out)

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        self._mark_change(txn)
        parts = ["table ", self._relname(catalog, relation), ":"]
        if action == INSERT:
            parts.append(" INSERT:")
            parts.append(" (no-tuple-data)" if new is None else self._tuple(catalog, relation, new, False))
        elif action == UPDATE:
            parts.append(" UPDATE:")
            if old is not None:
                parts.append(" old-key:")
                parts.append(self._tuple(catalog, relation, old, True))
                parts.append(" new-tuple:")
            parts.append(" (no-tuple-data)" if new is None else self._tuple(catalog, relation, new, False))
        else:
            parts.append(" DELETE:")
            parts.append(" (no-tuple-data)" if old is None else self._tuple(catalog, relation, old, True))
        self.write("".join(parts))

    def _native_relation(self, catalog: CatalogView, rel: Relation) -> tuple:
        """(b"table name:", RelDesc) of ``rel`` as ``catalog`` describes it: a TypeOut per output
        context (a new one when the catalog view changes), a RelDesc per relation and view."""
        hit = self._reldescs.get(rel.oid)
        if hit is not None and hit[0] is rel and hit[1] is catalog:
            return hit
        ctx = catalog.output_context()
        if ctx is not self._typeout_ctx:
            if self._typeout is not None:
                self._retired["python_values"] += self._typeout.python_values
                self._retired["declined_values"] += self._typeout.declined_values
            self._typeout = self._typeout_module.TypeOut(ctx)
            self._typeout_ctx = ctx
        head = ("table " + self._relname(catalog, rel) + ":").encode("utf-8", "surrogateescape")
        hit = (rel, catalog, head, self._typeout.relation(rel.attributes))
        old = self._reldescs.get(rel.oid)
        if old is not None:
            self._retired["python_tuples"] += old[3].python_tuples
        self._reldescs[rel.oid] = hit
        return hit

    def change_tuples(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
                      newtuple, oldtuple, toast) -> None:
        """The native ``change``: the same line, built in C from the WAL tuples."""
        self._mark_change(txn)
        _rel, _view, head, desc = self._native_relation(catalog, relation)
        out = self.output
        if out is None:
            line = self._line
            desc.append_change(line, head, _CHANGE_TYPES[action], newtuple, oldtuple, toast)
            self.write(line.take().decode("utf-8", "surrogateescape"))
        else:
            desc.append_change(out.buffer, head, _CHANGE_TYPES[action], newtuple, oldtuple, toast, True)
            out.wrote()
        self.native_changes += 1

    # The replayer's native loop (``waldecode._logical.replay``) appends the lines of row changes
    # itself: ``change_tuples`` without a Python call per change
    def row_writer(self, catalog: CatalogView, relation: Relation):
        """(the relation's ``_typeout.RelDesc``, the output buffer, b"table name:", block size) for
        ``relation`` under ``catalog``, or None when rows go through ``change_tuples`` (no OutputWriter).
        The native loop calls the RelDesc's C entry point (``append_change_at``), with the tuples in
        place in its change arena."""
        if self.output is None or self._typeout_module is None:
            return None
        _rel, _view, head, desc = self._native_relation(catalog, relation)
        return desc, self.output.buffer, head, self.output.block_size

    def txn_lines(self):
        """For the decoder's native commit path (``waldecode._logical``), which writes a plain committed
        transaction whole: (a ``_typeout.TxnLines`` writing this plugin's BEGIN and COMMIT lines into the
        output buffer, the OutputWriter), or None when ``begin`` and ``commit`` write more than those
        lines (include-timestamp, a subclass) or rows are not appended natively.  That path tells
        ``rows_written`` what it appended; it leaves ``_wrote_changes``, which only means something
        between ``begin`` and the end of a transaction."""
        cls = type(self)
        if not (cls.begin is TestDecoding.begin and cls.commit is TestDecoding.commit
                and cls.rows_begin is TestDecoding.rows_begin):
            return None  # a subclass that does more at a transaction's ends
        if self.output is None or self._typeout_module is None or self.include_timestamp:
            return None
        lines = self._typeout_module.TxnLines(self.output.buffer, b"BEGIN", b"COMMIT", self.include_xids,
                                              self.skip_empty_xacts)
        return lines, self.output

    def rows_begin(self, txn: Transaction) -> None:
        """A row change of ``txn`` is about to be appended by the replayer's loop."""
        if self.skip_empty_xacts and not self._wrote_changes:
            self._begin_line(txn)
        self._wrote_changes = True

    def rows_written(self, n: int) -> None:
        """The replayer's loop appended ``n`` change lines to the output buffer."""
        self.changes_written += n
        self.native_changes += n
        self.output.wrote()

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        self._mark_change(txn)
        names = ", ".join(quote_qualified_identifier(r.nspname, r.relname, self.major) for r in relations)
        flags = ""
        if restart_seqs or cascade:
            if restart_seqs:
                flags += " restart_seqs"
            if cascade:
                flags += " cascade"
        else:
            flags = " (no-flags)"
        self.write(f"table {names}: TRUNCATE:{flags}")

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        # 13-16 print no BEGIN for a transaction holding only a message, even with skip-empty-xacts
        if transactional and self.major >= 17:
            self._mark_change(txn)
        else:
            self.changes_written += 1
        text = content.decode("utf-8", errors="surrogateescape")
        self.write(f"message: transactional: {int(transactional)} prefix: {prefix}, sz: {len(content)} "
                   f"content:{text}")


def _formatter(ctx, typeoid: int):
    """value -> what print_literal prints for it: the type's output text under ``ctx``, quoted by the
    column's type OID."""
    output = ctx.output
    fn, typ = ctx.function(typeoid)

    def text_of(v) -> str:
        # bytes are the common case; markers (missing values) take the general path
        return fn(v, typ, ctx) if v.__class__ is bytes else output(typeoid, v)

    if typeoid in _SPECIAL_OIDS:
        def fmt(v) -> str:
            return print_literal(typeoid, text_of(v))
    else:
        def fmt(v) -> str:
            # print_literal's default case, inlined: it is most columns' path
            return "'" + text_of(v).replace("'", "''") + "'"
    return fmt
