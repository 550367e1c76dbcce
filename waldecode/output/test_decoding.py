"""test_decoding, line for line as contrib/test_decoding/test_decoding.c prints it.

Options as ``pg_recvlogical -o`` passes them (``include-xids`` on by default,
``include-timestamp``, ``skip-empty-xacts``, ``only-local``, ``include-rewrites``,
``force-binary``, ``stream-changes``); unknown options and unparsable values are
rejected with the server's own wording.  Values go through the type output
functions of ``waldecode.types`` with the catalog snapshot's settings.
"""

from __future__ import annotations

from .. import types
from ..types.datetime import USE_ISO_DATES, timestamptz_text
from ..catalog import Catalog, Relation
from . import UNCHANGED_TOAST, OutputPluginError
from .quote import quote_identifier, quote_literal_cstr, quote_qualified_identifier


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


class TestDecoding:
    """The plugin; ``write(text)`` receives each output row without its newline."""

    __test__ = False  # not a pytest test class, despite the name
    BOOL_OPTIONS = ("include-xids", "include-timestamp", "force-binary", "skip-empty-xacts", "only-local",
                    "include-rewrites", "stream-changes")

    def __init__(self, catalog: Catalog, write, options: dict | None = None):
        self.catalog = catalog
        self.major = catalog.major
        self.settings = catalog.settings
        self.write = write
        self.include_xids = True
        self.include_timestamp = False
        self.skip_empty_xacts = False
        self.only_local = False
        self.include_rewrites = False
        for name, value in (options or {}).items():
            if name not in self.BOOL_OPTIONS:
                raise OutputPluginError(f'option "{name}" = "{value if value is not None else "(null)"}" is unknown')
            if value is None:
                flag = True
            else:
                flag = parse_bool(value)
                if flag is None:
                    raise OutputPluginError(f'could not parse value "{value}" for parameter "{name}"')
            if name == "include-xids":
                self.include_xids = flag
            elif name == "include-timestamp":
                self.include_timestamp = flag
            elif name == "skip-empty-xacts":
                self.skip_empty_xacts = flag
            elif name == "only-local":
                self.only_local = flag
            elif name == "include-rewrites":
                self.include_rewrites = flag
        self._wrote_changes = False
        self.ctx = types.OutputContext(catalog, catalog.settings)
        self._column_cache: dict[int, tuple] = {}
        self._relname_cache: dict[int, tuple] = {}

    # -- transaction lines ---------------------------------------------------------------------

    def _timestamp(self, ts: int) -> str:
        """timestamptz_to_str: ISO style whatever DateStyle says, in the session TimeZone."""
        return timestamptz_text(ts, self.ctx.timezone, USE_ISO_DATES, 0)

    def _begin_line(self, xid: int) -> None:
        self.write(f"BEGIN {xid}" if self.include_xids else "BEGIN")

    def begin(self, xid: int) -> None:
        self._wrote_changes = False
        if not self.skip_empty_xacts:
            self._begin_line(xid)

    def commit(self, xid: int, commit_time: int) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        line = f"COMMIT {xid}" if self.include_xids else "COMMIT"
        if self.include_timestamp:
            line += f" (at {self._timestamp(commit_time)})"
        self.write(line)

    def _mark_change(self, xid: int) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            self._begin_line(xid)
        self._wrote_changes = True

    def uncommitted(self, xid: int) -> None:
        """Not test_decoding's: ends a transaction that has no commit record in the WAL read."""
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        self.write(f"UNCOMMITTED {xid}" if self.include_xids else "UNCOMMITTED")

    # two-phase (slots created with two_phase)
    def begin_prepare(self, xid: int) -> None:
        self.begin(xid)

    def prepare(self, xid: int, gid: str, prepare_time: int) -> None:
        if self.skip_empty_xacts and not self._wrote_changes:
            return
        line = "PREPARE TRANSACTION " + quote_literal_cstr(gid)
        if self.include_xids:
            line += f", txid {xid}"
        if self.include_timestamp:
            line += f" (at {self._timestamp(prepare_time)})"
        self.write(line)

    def _finish_prepared(self, word: str, xid: int, gid: str, ts: int) -> None:
        line = f"{word} PREPARED " + quote_literal_cstr(gid)
        if self.include_xids:
            line += f", txid {xid}"
        if self.include_timestamp:
            line += f" (at {self._timestamp(ts)})"
        self.write(line)

    def commit_prepared(self, xid: int, gid: str, commit_time: int) -> None:
        self._finish_prepared("COMMIT", xid, gid, commit_time)

    def rollback_prepared(self, xid: int, gid: str, abort_time: int) -> None:
        self._finish_prepared("ROLLBACK", xid, gid, abort_time)

    @staticmethod
    def filter_prepare(gid: str) -> bool:
        """pg_decode_filter_prepare: GIDs containing _nodecode are decoded at COMMIT PREPARED instead."""
        return "_nodecode" in gid

    def filter_by_origin(self, origin: int) -> bool:
        return self.only_local and origin != 0

    # -- changes -------------------------------------------------------------------------------

    def _relname(self, rel: Relation) -> str:
        hit = self._relname_cache.get(rel.oid)
        if hit is not None and hit[0] is rel:
            return hit[1]
        text = self._relname_uncached(rel)
        self._relname_cache[rel.oid] = (rel, text)
        return text

    def _relname_uncached(self, rel: Relation) -> str:
        name = rel.relname
        if rel.relrewrite:
            target = self.catalog.relation(rel.relrewrite)
            if target is not None:
                name = target.relname
        return quote_qualified_identifier(rel.nspname, name, self.major)

    def _columns(self, rel: Relation) -> list:
        """Per column: (prefix ' name[type]:', formatter of a non-NULL value), or None for a dropped
        column; cached per relation, so a row costs one call per value."""
        hit = self._column_cache.get(rel.oid)
        if hit is not None and hit[0] is rel.attributes:
            return hit[1]
        cols = [None if att.attisdropped else
                (f" {quote_identifier(att.attname, self.major)}[{att.type_name}]:", self._formatter(att.atttypid))
                for att in rel.attributes]
        self._column_cache[rel.oid] = (rel.attributes, cols)
        return cols

    def _formatter(self, typeoid: int):
        """value -> what print_literal prints for it: the type's output text, quoted by the column's type OID."""
        ctx = self.ctx
        output = ctx.output
        fn, typ = ctx.function(typeoid)
        literal = types.test_decoding_value

        def text_of(v) -> str:
            # bytes are the common case; markers (missing values) take the general path
            return fn(v, typ, ctx) if v.__class__ is bytes else output(typeoid, v)

        quoted = literal(typeoid, "") == "''"
        if quoted:
            def fmt(v) -> str:
                return "'" + text_of(v).replace("'", "''") + "'"
        else:
            def fmt(v) -> str:
                return literal(typeoid, text_of(v))
        return fmt

    def _tuple(self, rel: Relation, values, skip_nulls: bool) -> str:
        out = []
        for col, value in zip(self._columns(rel), values):
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

    def change(self, xid: int, rel: Relation, action: str, newvals, oldvals) -> None:
        """action: INSERT, UPDATE or DELETE; values are lists in attnum order (None for a missing tuple)."""
        self._mark_change(xid)
        parts = ["table ", self._relname(rel), ":"]
        if action == "INSERT":
            parts.append(" INSERT:")
            parts.append(" (no-tuple-data)" if newvals is None else self._tuple(rel, newvals, False))
        elif action == "UPDATE":
            parts.append(" UPDATE:")
            if oldvals is not None:
                parts.append(" old-key:")
                parts.append(self._tuple(rel, oldvals, True))
                parts.append(" new-tuple:")
            parts.append(" (no-tuple-data)" if newvals is None else self._tuple(rel, newvals, False))
        else:
            parts.append(" DELETE:")
            parts.append(" (no-tuple-data)" if oldvals is None else self._tuple(rel, oldvals, True))
        self.write("".join(parts))

    def truncate(self, xid: int, relations: list, restart_seqs: bool, cascade: bool) -> None:
        self._mark_change(xid)
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

    def message(self, xid: int | None, transactional: bool, prefix: str, content: bytes) -> None:
        # 13-16 print no BEGIN for a transaction holding only a message, even with skip-empty-xacts
        if transactional and self.major >= 17:
            self._mark_change(xid)
        text = content.decode("utf-8", errors="surrogateescape")
        self.write(f"message: transactional: {int(transactional)} prefix: {prefix}, sz: {len(content)} "
                   f"content:{text}")
