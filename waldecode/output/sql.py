"""SQL output: executable statements that redo (or undo) the decoded transactions.

``decode --format sql`` writes, per committed transaction and in commit order, ``BEGIN``, one
``INSERT`` / ``UPDATE … WHERE key`` / ``DELETE … WHERE key`` / ``TRUNCATE`` per change and
``COMMIT``: applied to a copy of the database as it was before the decoded range, it brings the
tables to where the WAL left them.  ``-o undo`` writes the inverse instead, newest transaction
and newest change first, where the WAL holds the old values (REPLICA IDENTITY FULL); what cannot
be redone or undone (no key in the WAL, old values missing, TRUNCATE) is written as a comment
at its place and listed in ``problems``, never guessed.

Values are written as the server's output text, quoted and untyped, where the server resolves
them to the column's type: its input function reads back exactly what its output function
wrote, provided the session's settings that input depends on (DateStyle, IntervalStyle,
TimeZone, lc_monetary) are those the output was made with: the script sets them first, from
the catalog snapshot.

Conflict handling (``-o conflict=``):
    error    plain statements: a duplicate key stops the script (the default)
    nothing  INSERT … ON CONFLICT DO NOTHING
    guard    each statement checks it met the row as the WAL had it (its old values where the
             WAL has them, else its key) and raises a WARNING naming the change instead of
             overwriting newer data or failing
Format version 1.
"""

from __future__ import annotations

from ..catalog import Relation
from ..catalog.relcache import format_type_typmod
from ..pg.lsn import format_lsn
from ..types.datetime import USE_ISO_DATES, timestamptz_text
from . import UNCHANGED_TOAST, OutputPluginError
from .base import DELETE, INSERT, UPDATE, CatalogView, OutputPlugin, OutputPluginOptions, OutputWriter, Transaction
from .base import unknown_option
from .quote import quote_identifier, quote_literal_cstr, quote_qualified_identifier
from .test_decoding import parse_bool

SQL_FORMAT_VERSION = 1
CONFLICT_MODES = ("error", "nothing", "guard")
# The settings whose value decides how input functions read the output text (DateStyle's order,
# IntervalStyle's sql_standard signs, TimeZone for local times, lc_monetary for money), and
# search_path, relative to which the snapshot names the row types it casts to (format_type)
INPUT_SETTINGS = ("DateStyle", "IntervalStyle", "TimeZone", "lc_monetary", "search_path")
# Types without an equality operator: compared through their text (their output function's)
_NO_EQUALITY = frozenset(("json", "xml", "point", "line", "lseg", "box", "path", "polygon", "circle"))
ATTRIBUTE_GENERATED_STORED = "s"  # src/include/catalog/pg_attribute.h
ATTRIBUTE_IDENTITY_ALWAYS = "a"
REPLICA_IDENTITY_FULL = "f"  # src/include/catalog/pg_class.h


class SqlOutput(OutputPlugin):
    """The plugin; ``write(text)`` receives each line, or ``output`` (an ``OutputWriter``) the lines as bytes."""

    ranges_apart = False  # the DDL written so far, and undo's reversal, span the whole run
    def __init__(self, write=None, *, output: OutputWriter | None = None):
        if (write is None) == (output is None):
            raise TypeError("SqlOutput takes write (a line callback) or output (an OutputWriter)")
        self.output = output
        self.write = write if output is None else output.write_line
        self.problems: list[str] = []  # what could not be redone or undone, with where
        # the statements of the transaction being decoded: (text, (action, lsn, relation) or None for a comment)
        self._txn: list[tuple] | None = None
        self._current: tuple | None = None  # (action, lsn, relation) of the change being written
        self._undo_txns: list[tuple] = []  # undo: (head lines, statements newest first, tail lines)
        self._tag_n = 0
        # DDL: each relation as the statements so far have left it (OID -> Relation), starting from
        # the snapshot's; relations the statements created (their generated columns are plain ones)
        self._start: CatalogView | None = None
        self._baseline: CatalogView | None = None  # the catalog the target has: as of the first transaction
        self._defined: dict[int, Relation | None] = {}
        self._created: set[int] = set()
        self._shapes: dict[int, set] = {}  # undo: OID -> the definitions its changes saw
        self.changes_written = 0

    # -- life cycle -----------------------------------------------------------------------------

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        self.conflict = "error"
        self.undo = False
        for name, value in options.items():
            if name == "conflict":
                if value not in CONFLICT_MODES:
                    raise OutputPluginError(f'conflict must be one of {", ".join(CONFLICT_MODES)}, not "{value}"')
                self.conflict = value
            elif name == "undo":
                flag = True if value is None else parse_bool(value)
                if flag is None:
                    raise OutputPluginError(f'could not parse value "{value}" for parameter "undo"')
                self.undo = flag
            else:
                raise unknown_option(name, value)
        self.major = catalog.major
        self._session = catalog.output_context()
        self._start = catalog
        what = "undo, newest first" if self.undo else "redo, in commit order"
        self.write(f"-- waldecode SQL output, format {SQL_FORMAT_VERSION}: {what}; conflict handling: {self.conflict}")
        self.write("SET standard_conforming_strings = on;")
        for name in INPUT_SETTINGS:
            value = catalog.settings.get(name)
            if value is not None:
                self.write(f"SELECT pg_catalog.set_config({quote_literal_cstr(name)}, "
                           f"{quote_literal_cstr(str(value))}, false);")
        return OutputPluginOptions()

    def shutdown(self) -> None:
        if self.undo:
            # A table whose definition changed inside the range (renamed, columns added, dropped, retyped)
            # is left alone: statements written against one of its definitions would not fit the other
            changed = {oid for oid, shapes in self._shapes.items() if len(shapes) > 1}
            for head, stmts, tail in reversed(self._undo_txns):
                for line in head:
                    self.write(line)
                for text, change in stmts:
                    if change is not None and change[2] is not None and change[2].oid in changed:
                        action, lsn, rel = change
                        note = (f"cannot undo {action} of {self._name(rel)} at {format_lsn(lsn)}: the table's "
                                "definition changed inside the decoded range")
                        self.problems.append(note)
                        text = "-- " + note
                    self.write(text)
                for line in tail:
                    self.write(line)
            self._undo_txns = []
        if self.output is not None:
            self.output.flush()

    # -- transactions ---------------------------------------------------------------------------

    def _time(self, ts: int) -> str:
        return timestamptz_text(ts, self._session.timezone, USE_ISO_DATES, 0)

    def begin(self, txn: Transaction) -> None:
        self._txn = []
        if self._baseline is None:
            # The target is the database as it was before the first transaction handed here (the
            # requested start): DDL committed before it is there already
            self._baseline = self._start.at(txn.final_lsn) if txn.final_lsn else self._start

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        self._end(txn, f"committed at {format_lsn(commit_lsn)} ({self._time(txn.xact_time)})")

    def uncommitted(self, txn: Transaction) -> None:
        # a transaction with no commit in the WAL read: its changes, never applied as committed
        self._end(txn, "NOT COMMITTED in the WAL read", commit=False)

    def _end(self, txn: Transaction, what: str, commit: bool = True) -> None:
        stmts, self._txn = self._txn or [], None
        gid = f" (prepared as {quote_literal_cstr(txn.gid)})" if txn.gid else ""
        head = [f"-- transaction {txn.xid}{gid} {what}", "BEGIN;"]
        tail = ["COMMIT;" if commit else "ROLLBACK;  -- not committed: review before applying"]
        if self.undo:
            self._undo_txns.append((head, stmts[::-1], tail))
            return
        for line in head:
            self.write(line)
        for text, _ in stmts:
            self.write(text)
        for line in tail:
            self.write(line)

    # -- changes --------------------------------------------------------------------------------

    def _add(self, stmt: str) -> None:
        self._txn.append((stmt, self._current))
        self.changes_written += 1

    def _skip(self, what: str, lsn: int, relation: Relation | None, why: str) -> None:
        where = f" of {self._name(relation)}" if relation is not None else ""
        note = f"cannot {'undo' if self.undo else 'redo'} {what}{where} at {format_lsn(lsn)}: {why}"
        self.problems.append(note)
        self._txn.append(("-- " + note, None))

    def _name(self, rel: Relation) -> str:
        return quote_qualified_identifier(rel.nspname, rel.relname, self.major)

    def _columns(self, rel: Relation, values) -> list[tuple]:
        """(attribute, value) of the columns a statement may write: not dropped, not generated (but in a
        table these statements created, where a generated column is a plain one)."""
        created = rel.oid in self._created
        return [(att, v) for att, v in zip(rel.attributes, values)
                if not att.attisdropped and (created or att.attgenerated != ATTRIBUTE_GENERATED_STORED)]

    # -- DDL: the catalog history's changes, before the first change that needs them ---------------

    def _column_type(self, catalog: CatalogView, att) -> str:
        t = catalog.type(att.atttypid)
        return format_type_typmod(att.type_name, att.atttypid, t.typelem if t is not None and t.typelem and
                                  att.type_name.endswith("[]") else 0, att.atttypmod)

    def _column_def(self, catalog: CatalogView, att) -> str:
        return f"{quote_identifier(att.attname, self.major)} {self._column_type(catalog, att)}"

    def _check_type(self, catalog: CatalogView, att, lsn: int, rel: Relation) -> None:
        # a type the range created is not in the snapshot: these statements do not create types
        if self._baseline.type(att.atttypid) is None:
            self._skip(f"the type {att.type_name} of column {att.attname}", lsn, rel,
                       "the type was created inside the decoded range: create it on the target first")

    def _ddl(self, catalog: CatalogView, rel: Relation, lsn: int) -> None:
        """The DDL that takes the target's ``rel`` from how earlier statements (or the snapshot) left it
        to how this change sees it: CREATE TABLE, renames, ADD/DROP COLUMN, ALTER COLUMN TYPE."""
        if self.undo:
            shape = (rel.nspname, rel.relname, tuple((a.attnum, a.attname, a.atttypid, a.atttypmod, a.attisdropped)
                                                     for a in rel.attributes))
            self._shapes.setdefault(rel.oid, set()).add(shape)
            return
        if rel.oid not in self._defined:
            self._defined[rel.oid] = self._baseline.relation(rel.oid)
        was = self._defined[rel.oid]
        if was is not None and was.attributes is rel.attributes and was.relname == rel.relname \
                and was.nspname == rel.nspname:
            return
        self._defined[rel.oid] = rel
        name = self._name(rel)
        stmts = []
        if was is None:
            cols = [att for att in rel.attributes if not att.attisdropped]
            for att in cols:
                self._check_type(catalog, att, lsn, rel)
            defs = [self._column_def(catalog, att) + (" NOT NULL" if att.attnotnull else "") for att in cols]
            key = [a.attname for a in cols if a.attnum in rel.replica_identity_key]
            if key and rel.relreplident != REPLICA_IDENTITY_FULL:
                defs.append("PRIMARY KEY (" + ", ".join(quote_identifier(k, self.major) for k in key) + ")")
            if rel.nspname not in ("public", "pg_catalog"):
                stmts.append(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(rel.nspname, self.major)};")
            stmts.append(f"CREATE TABLE {name} ({', '.join(defs)});")
            if rel.relreplident == REPLICA_IDENTITY_FULL:
                stmts.append(f"ALTER TABLE {name} REPLICA IDENTITY FULL;")
            self._created.add(rel.oid)
        else:
            if (was.nspname, was.relname) != (rel.nspname, rel.relname):
                old = self._name(was)
                if was.nspname != rel.nspname:
                    stmts.append(f"ALTER TABLE {old} SET SCHEMA {quote_identifier(rel.nspname, self.major)};")
                    old = quote_qualified_identifier(rel.nspname, was.relname, self.major)
                if was.relname != rel.relname:
                    stmts.append(f"ALTER TABLE {old} RENAME TO {quote_identifier(rel.relname, self.major)};")
            before = {a.attnum: a for a in was.attributes}
            for att in rel.attributes:
                prev = before.get(att.attnum)
                if prev is None:
                    if not att.attisdropped:
                        self._check_type(catalog, att, lsn, rel)
                        stmts.append(f"ALTER TABLE {name} ADD COLUMN {self._column_def(catalog, att)};")
                elif att.attisdropped and not prev.attisdropped:
                    stmts.append(f"ALTER TABLE {name} DROP COLUMN {quote_identifier(prev.attname, self.major)};")
                elif not att.attisdropped:
                    if prev.attname != att.attname:
                        stmts.append(f"ALTER TABLE {name} RENAME COLUMN {quote_identifier(prev.attname, self.major)}"
                                     f" TO {quote_identifier(att.attname, self.major)};")
                    if (prev.atttypid, prev.atttypmod) != (att.atttypid, att.atttypmod):
                        self._check_type(catalog, att, lsn, rel)
                        stmts.append(f"ALTER TABLE {name} ALTER COLUMN {quote_identifier(att.attname, self.major)} "
                                     f"TYPE {self._column_type(catalog, att)};")
        for stmt in stmts:
            self._txn.append((stmt, ("DDL", lsn, rel)))

    def _literal(self, catalog: CatalogView, att, value) -> str:
        if value is None:
            return "NULL"
        # untyped: the server reads it with the column's own input function and typmod (INSERT
        # VALUES, UPDATE SET and ``column = literal`` resolve an unknown literal to the column's type)
        return quote_literal_cstr(catalog.output_context().output(att.atttypid, value))

    def _match(self, catalog: CatalogView, att, value) -> str:
        """A condition that holds for the row whose column ``att`` has ``value``."""
        col = quote_identifier(att.attname, self.major)
        if value is None:
            return f"{col} IS NULL"
        base = att.type_name[:-2] if att.type_name.endswith("[]") else att.type_name
        if base in _NO_EQUALITY:
            text = catalog.output_context().output(att.atttypid, value)
            return f"{col}::text = {quote_literal_cstr(text)}"
        lit = self._literal(catalog, att, value)
        typ = catalog.type(att.atttypid)
        if typ is not None and typ.typtype == "c":
            # a row literal compared with a row: the server cannot tell which row type unless told
            lit += "::" + att.type_name
        return f"{col} = {lit}"

    def _where(self, catalog: CatalogView, rel: Relation, values, key_only: bool) -> str | None:
        """The condition naming one row of ``values``: its replica-identity key if the relation has one
        (and the key columns are known), else every known column, the row picked by its ctid."""
        key = set(rel.replica_identity_key)
        cols = self._columns(rel, values)
        if key and all(att.attnum not in key or v is not UNCHANGED_TOAST for att, v in cols):
            return " AND ".join(self._match(catalog, att, v) for att, v in cols if att.attnum in key)
        if key_only:
            return None
        conds = [self._match(catalog, att, v) for att, v in cols if v is not UNCHANGED_TOAST]
        if not conds:
            return None
        # no key: one row with these values (duplicates are interchangeable), as the apply worker
        # of a REPLICA IDENTITY FULL subscription finds it
        return f"ctid = (SELECT ctid FROM {self._name(rel)} WHERE {' AND '.join(conds)} LIMIT 1)"

    def _guarded(self, stmt: str, what: str, lsn: int, rel: Relation) -> str:
        """``stmt`` in a DO block that warns instead of passing silently when it met no row."""
        if self.conflict != "guard":
            return stmt + ";"
        note = f"waldecode: conflict: {what} of {self._name(rel)} at {format_lsn(lsn)} met no row as the WAL had it"
        tag = "$waldecode$"
        while tag in stmt:
            self._tag_n += 1
            tag = f"$waldecode{self._tag_n}$"
        return (f"DO {tag}BEGIN {stmt}; IF NOT FOUND THEN RAISE WARNING {quote_literal_cstr(note.replace('%', '%%'))};"
                f" END IF; END{tag};")

    def _insert(self, catalog: CatalogView, rel: Relation, values, lsn: int) -> str:
        cols = [(att, v) for att, v in self._columns(rel, values) if v is not UNCHANGED_TOAST]
        names = ", ".join(quote_identifier(att.attname, self.major) for att, _ in cols)
        lits = ", ".join(self._literal(catalog, att, v) for att, v in cols)
        stmt = f"INSERT INTO {self._name(rel)} ({names}) OVERRIDING SYSTEM VALUE VALUES ({lits})"
        if self.conflict != "error":
            stmt += " ON CONFLICT DO NOTHING"
        return self._guarded(stmt, "INSERT", lsn, rel)

    def _update(self, catalog: CatalogView, rel: Relation, values, where: str, lsn: int) -> str:
        # a GENERATED ALWAYS identity column cannot be SET (nor does an UPDATE change it but to DEFAULT)
        sets = ", ".join(f"{quote_identifier(att.attname, self.major)} = {self._literal(catalog, att, v)}"
                         for att, v in self._columns(rel, values)
                         if v is not UNCHANGED_TOAST and att.attidentity != ATTRIBUTE_IDENTITY_ALWAYS)
        return self._guarded(f"UPDATE {self._name(rel)} SET {sets} WHERE {where}", "UPDATE", lsn, rel)

    def _delete(self, rel: Relation, where: str, lsn: int) -> str:
        return self._guarded(f"DELETE FROM {self._name(rel)} WHERE {where}", "DELETE", lsn, rel)

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        self._ddl(catalog, relation, lsn)
        self._current = (action, lsn, relation)
        full_old = old is not None and relation.relreplident == REPLICA_IDENTITY_FULL
        if self.undo:
            self._undo_change(catalog, relation, action, new, old, full_old, lsn)
            return
        if action == INSERT:
            if new is None:
                return self._skip("INSERT", lsn, relation, "the WAL holds no tuple")
            return self._add(self._insert(catalog, relation, new, lsn))
        if action == UPDATE:
            if new is None:
                return self._skip("UPDATE", lsn, relation, "the WAL holds no new tuple")
            # the row is found by its old key (or old row) when the WAL has it, else by the key the
            # new row has (a key that did not change is not logged twice)
            where = self._where(catalog, relation, old, False) if old is not None else \
                self._where(catalog, relation, new, True)
            if where is None:
                return self._skip("UPDATE", lsn, relation, "the WAL holds no key of the row "
                                  "(REPLICA IDENTITY NOTHING, or DEFAULT without a primary key)")
            if self.conflict == "guard" and full_old:
                where = self._where_all(catalog, relation, old, where)
            return self._add(self._update(catalog, relation, new, where, lsn))
        # DELETE
        where = self._where(catalog, relation, old, False) if old is not None else None
        if where is None:
            return self._skip("DELETE", lsn, relation, "the WAL holds no key of the row "
                              "(REPLICA IDENTITY NOTHING, or DEFAULT without a primary key)")
        if self.conflict == "guard" and full_old:
            where = self._where_all(catalog, relation, old, where)
        self._add(self._delete(relation, where, lsn))

    def _where_all(self, catalog: CatalogView, rel: Relation, values, where: str) -> str:
        """``where``, and every column the WAL has an old value of as it had it (a guarded change)."""
        extra = [self._match(catalog, att, v) for att, v in self._columns(rel, values)
                 if v is not UNCHANGED_TOAST and att.attnum not in rel.replica_identity_key]
        return " AND ".join([where] + extra)

    def _undo_change(self, catalog: CatalogView, relation: Relation, action: str, new, old, full_old: bool,
                     lsn: int) -> None:
        if action == INSERT:
            where = self._where(catalog, relation, new, False) if new is not None else None
            if where is None:
                return self._skip("INSERT", lsn, relation, "the WAL holds no tuple")
            return self._add(self._delete(relation, where, lsn))
        if not full_old:
            return self._skip(action, lsn, relation, "the WAL holds no old row (REPLICA IDENTITY FULL logs it)")
        if action == UPDATE:
            where = self._where(catalog, relation, new, False) if new is not None else None
            if where is None:
                return self._skip("UPDATE", lsn, relation, "the WAL holds no new tuple")
            return self._add(self._update(catalog, relation, old, where, lsn))
        self._add(self._insert(catalog, relation, old, lsn))

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        for rel in relations:
            self._ddl(catalog, rel, lsn)
        self._current = ("TRUNCATE", lsn, relations[0] if relations else None)
        if self.undo:
            names = ", ".join(self._name(r) for r in relations)
            return self._skip(f"TRUNCATE of {names}", lsn, None, "the WAL holds no rows of a truncated table")
        names = ", ".join(self._name(r) for r in relations)
        self._add(f"TRUNCATE ONLY {names}{' RESTART IDENTITY' if restart_seqs else ''}"
                  f"{' CASCADE' if cascade else ''};")

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        if transactional and self._txn is not None:
            # a logical message has no SQL to redo it with (pg_logical_emit_message writes a new one)
            self._txn.append((f"-- message at {format_lsn(message_lsn)}, prefix {prefix!r}, {len(content)} bytes",
                              None))
