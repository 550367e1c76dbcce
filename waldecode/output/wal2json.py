"""wal2json 2.5, message for message as wal2json.c writes them (format versions 1 and 2).

Options as ``pg_recvlogical -o`` passes them, parsed in wal2json's order with its defaults and its
error texts (``numeric-data-types-as-string`` is 2.6's and, as in the 2.5 Debian installs, unknown).
Each ``OutputPluginWrite`` of wal2json is one call of ``write`` (one message: ``pg_recvlogical -f``
writes it and a newline); ``ctx->out`` between ``OutputPluginPrepareWrite`` and the write is kept
as wal2json keeps it, so that format 1 builds a whole transaction as one message, or one per
change with ``write-in-chunks``.  Values are the type output text of ``waldecode.types`` under the
snapshot's settings, put in JSON by ``escape_json`` (``types.jsonb``, json.c's rule); column
types come from ``catalog.relcache.format_type_typmod``, defaults from the snapshot's
``Attribute.attdefault`` under the session's search_path.
"""

from __future__ import annotations

import math

from ..catalog import REPLICA_IDENTITY_DEFAULT, REPLICA_IDENTITY_FULL, Relation
from ..catalog.pg_catalog import BYTEAOID
from ..catalog.relcache import catalog_only_name, format_type_typmod, is_true_array, quote_all_identifiers
from ..errors import CatalogError
from ..heap.varlena import ToastPointer
from ..pg.lsn import format_lsn
from ..types.datetime import USE_ISO_DATES, timestamptz_text
from ..types.jsonb import escape_json
from . import UNCHANGED_TOAST, OutputPluginError
from .base import DELETE, INSERT, UPDATE, CatalogView, OutputPlugin, OutputPluginOptions, OutputWriter, Transaction
from .test_decoding import (BOOLOID, FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, NUMERICOID, OIDOID,
                            parse_bool)

# wal2json.c: WAL2JSON_FORMAT_VERSION, WAL2JSON_FORMAT_MIN_VERSION
WAL2JSON_FORMAT_VERSION = 2
WAL2JSON_FORMAT_MIN_VERSION = 1

# The types wal2json prints bare: the seven test_decoding prints unquoted (src/include/catalog/pg_type.dat)
_NUMBER_OIDS = frozenset((INT2OID, INT4OID, INT8OID, OIDOID, FLOAT4OID, FLOAT8OID, NUMERICOID))
_NUMBER_CHARS = frozenset("0123456789+-eE.")

# src/include/catalog/pg_type.h
TYPTYPE_DOMAIN = "d"

# The boolean options, each with wal2json's default (pg_decode_startup)
_BOOL_DEFAULTS = {
    "include-transaction": True, "include-xids": False, "include-timestamp": False, "include-pk": False,
    "include-origin": False, "include-schemas": True, "include-types": True, "include-type-oids": False,
    "include-typmod": True, "include-domain-data-type": False, "include-column-positions": False,
    "include-not-null": False, "include-default": False, "pretty-print": False, "write-in-chunks": False,
    "include-lsn": False,
}
_ACTIONS = ("insert", "update", "delete", "truncate")


def _could_not_parse(value: str, name: str) -> OutputPluginError:
    return OutputPluginError(f'could not parse value "{value}" for parameter "{name}"')


def parse_int(value: str) -> int | None:
    """src/backend/utils/misc/guc.c parse_int without units: strtol with base 0 (octal and hex), else
    strtod for a decimal point or exponent, rounded half to even; trailing spaces allowed; int32 range."""
    s = value.lstrip(" \t\n\r\f\v")
    end = len(s.rstrip(" \t\n\r\f\v"))
    body = s[:end]
    if not body:
        return None
    try:
        sign = -1 if body[0] == "-" else 1
        digits = body[1:] if body[0] in "+-" else body
        if digits[:2].lower() == "0x" and len(digits) > 2:
            val = sign * int(digits[2:], 16)
        elif digits[:1] == "0" and len(digits) > 1 and digits.isdigit():
            val = sign * int(digits, 8)
        elif digits.isdigit():
            val = sign * int(digits)
        else:
            f = float(body)
            if math.isnan(f) or math.isinf(f):
                return None
            val = round(f)  # rint: half to even, as Python's round
    except ValueError:
        return None
    if val > 0x7FFFFFFF or val < -0x80000000:
        return None
    return val


def _split_list(raw: str, empty_items: bool = False) -> list[str] | None:
    """wal2json.c split_string_to_list with ',': names separated by commas, spaces around them skipped,
    a backslash keeping the next character in the name (and in the result); None for bad syntax.
    ``empty_items``: split_string_to_oid_list's variant, which lets an item be empty."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n and raw[i].isspace():
        i += 1
    if i == n:
        return out
    while True:
        start = i
        while i < n and raw[i] != "," and not raw[i].isspace():
            if raw[i] == "\\":
                i += 1
            i += 1
        i = min(i, n)
        name_end = i
        if start == i and not empty_items:
            return None
        while i < n and raw[i].isspace():
            i += 1
        if i < n and raw[i] == ",":
            i += 1
            while i < n and raw[i].isspace():
                i += 1
            out.append(raw[start:name_end])
            continue
        if i == n:
            out.append(raw[start:name_end])
            return out
        return None


def _split_oids(raw: str) -> list[int] | None:
    """wal2json.c split_string_to_oid_list: ``_split_list`` with empty items allowed, each read by atoi."""
    items = _split_list(raw, empty_items=True)
    return None if items is None else [_atoi(t) for t in items]


def _atoi(tok: str) -> int:
    """atoi, then the cast to Oid: leading digits after spaces and a sign, 0 without them."""
    s = tok.lstrip()
    j = 1 if s[:1] in ("+", "-") else 0
    k = j
    while k < len(s) and s[k].isdigit():
        k += 1
    v = int(s[:k]) if k > j else 0
    return v & 0xFFFFFFFF


class _SelectTable:
    """wal2json.c SelectTable: a schema.table pattern, ``*`` for any schema or any table."""

    __slots__ = ("schemaname", "tablename", "allschemas", "alltables")

    def __init__(self, schemaname, tablename, allschemas: bool, alltables: bool):
        self.schemaname = schemaname
        self.tablename = tablename
        self.allschemas = allschemas
        self.alltables = alltables

    def matches(self, schemaname: str, tablename: str) -> bool:
        return ((self.allschemas or self.schemaname == schemaname)
                and (self.alltables or self.tablename == tablename))


def _unescape_until(s: str, i: int, stop: str | None) -> tuple[str, int]:
    """parse_table_identifier's loop: characters up to ``stop`` (or the end), each backslash removed
    (the character after it kept, even a ``stop``, as memmove then ``nextp++`` do)."""
    out = []
    n = len(s)
    while i < n and (stop is None or s[i] != stop):
        if s[i] == "\\":
            i += 1
            if i >= n:
                break
        out.append(s[i])
        i += 1
    return "".join(out), i


def _select_tables(raw: str) -> list[_SelectTable] | None:
    """wal2json.c string_to_SelectTable: a list of schema.table (``_split_list``), each split at its first
    unescaped dot; ``*.`` any schema, ``.*`` any table; None for bad syntax or a name without a schema."""
    names = _split_list(raw)
    if names is None:
        return None
    out = []
    for name in names:
        allschemas = name[:2] == "*."
        schema, i = _unescape_until(name, 0, ".")
        if i >= len(name):
            return None
        rest = name[i + 1:]
        alltables = rest == "*"
        table, _ = _unescape_until(rest, 0, None)
        out.append(_SelectTable(schema, table, allschemas, alltables))
    return out


class Wal2Json(OutputPlugin):
    """The plugin; ``write(text)`` receives each message (what one OutputPluginWrite sends), or, given
    ``output`` (a ``base.OutputWriter``), the messages go there, each followed by a newline."""

    def __init__(self, write=None, *, output: OutputWriter | None = None):
        if (write is None) == (output is None):
            raise TypeError("Wal2Json takes write (a message callback) or output (an OutputWriter)")
        self.output = output
        self.write = write if output is None else output.write_line
        self.changes_written = 0  # change and message objects (a progress line counts them)
        self._out: list[str] = []  # ctx->out
        self.nr_changes = 0
        # per relation OID: (relation, catalog view, per column facts)
        self._columns: dict[int, tuple] = {}

    # -- options ---------------------------------------------------------------------------------

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        """pg_decode_startup: the options in the order given, each checked as wal2json checks it."""
        flags = dict(_BOOL_DEFAULTS)
        actions = {"insert": True, "update": True, "delete": True, "truncate": True}
        filter_origins: list[int] = []
        filter_tables: list[_SelectTable] = []
        add_tables: list[_SelectTable] = [_SelectTable(None, None, True, True)]
        filter_msg_prefixes: list[str] = []
        add_msg_prefixes: list[str] = []
        format_version = 1
        for name, value in options.items():
            if name in flags:
                if value is None:
                    flags[name] = True
                else:
                    flag = parse_bool(value)
                    if flag is None:
                        raise _could_not_parse(value, name)
                    flags[name] = flag
            elif name == "include-unchanged-toast":
                raise OutputPluginError(f'parameter "{name}" was deprecated')
            elif name == "actions":
                if value is None:
                    continue  # the default
                selected = _split_list(value)
                if selected is None:
                    raise _could_not_parse(value, name)
                actions = dict.fromkeys(_ACTIONS, False)
                for p in selected:
                    if p not in actions:
                        raise _could_not_parse(p, name)
                    actions[p] = True
            elif name == "filter-origins":
                if value is None:
                    filter_origins = []
                else:
                    got = _split_oids(value)
                    if got is None:
                        raise _could_not_parse(value, name)
                    filter_origins += got
            elif name in ("filter-tables", "add-tables"):
                if name == "add-tables":
                    add_tables = []  # given at all: no longer every table
                if value is None:
                    if name == "filter-tables":
                        filter_tables = []
                    continue
                got = _select_tables(value)
                if got is None:
                    raise _could_not_parse(value, name)
                (filter_tables if name == "filter-tables" else add_tables).extend(got)
            elif name in ("filter-msg-prefixes", "add-msg-prefixes"):
                target = filter_msg_prefixes if name == "filter-msg-prefixes" else add_msg_prefixes
                if value is None:
                    target.clear()
                    continue
                got = _split_list(value)
                if got is None:
                    raise _could_not_parse(value, name)
                target += got
            elif name == "format-version":
                if value is None:
                    format_version = WAL2JSON_FORMAT_VERSION
                else:
                    v = parse_int(value)
                    if v is None:
                        raise _could_not_parse(value, name)
                    format_version = v
                if format_version > WAL2JSON_FORMAT_VERSION:
                    raise OutputPluginError(f"client sent format_version={format_version} but we only support "
                                            f"format {WAL2JSON_FORMAT_VERSION} or lower")
                if format_version < WAL2JSON_FORMAT_MIN_VERSION:
                    raise OutputPluginError(f"client sent format_version={format_version} but we only support "
                                            f"format {WAL2JSON_FORMAT_MIN_VERSION} or higher")
            else:
                raise OutputPluginError(f'option "{name}" = "{value if value is not None else "(null)"}" is unknown')
        f = flags
        self.include_transaction = f["include-transaction"]
        self.include_xids = f["include-xids"]
        self.include_timestamp = f["include-timestamp"]
        self.include_pk = f["include-pk"]
        self.include_origin = f["include-origin"]
        self.include_schemas = f["include-schemas"]
        self.include_types = f["include-types"]
        self.include_type_oids = f["include-type-oids"]
        self.include_typmod = f["include-typmod"]
        self.include_domain_data_type = f["include-domain-data-type"]
        self.include_column_positions = f["include-column-positions"]
        self.include_not_null = f["include-not-null"]
        self.include_default = f["include-default"]
        self.write_in_chunks = f["write-in-chunks"]
        self.include_lsn = f["include-lsn"]
        pretty = f["pretty-print"]
        self.ht, self.nl, self.sp = ("\t", "\n", " ") if pretty else ("", "", "")
        self.actions = actions
        self.filter_origins = filter_origins
        self.filter_tables = filter_tables
        self.add_tables = add_tables
        self.filter_msg_prefixes = filter_msg_prefixes
        self.add_msg_prefixes = add_msg_prefixes
        self.format_version = format_version
        self.major = catalog.major
        self._session = catalog.output_context()  # commit timestamps
        self._value_ctx = self._session
        return OutputPluginOptions()

    def shutdown(self) -> None:
        if self.output is not None:
            self.output.flush()

    # -- ctx->out ------------------------------------------------------------------------------

    def _prepare(self) -> None:
        """OutputPluginPrepareWrite: ctx->out starts over."""
        self._out = []

    def _send(self) -> None:
        """OutputPluginWrite: what ctx->out holds is one message."""
        self.write("".join(self._out))

    def _timestamp(self, ts: int) -> str:
        """timestamptz_to_str: ISO style whatever DateStyle says, in the session TimeZone."""
        return timestamptz_text(ts, self._session.timezone, USE_ISO_DATES, 0)

    def filter_by_origin(self, origin_id: int) -> bool:
        """pg_filter_by_origin: local changes never; others when filter-origins lists them."""
        return origin_id != 0 and origin_id in self.filter_origins

    def _table_selected(self, rel: Relation) -> bool:
        """pg_filter_by_table, then pg_add_by_table."""
        schema, table = rel.nspname, rel.relname
        if any(t.matches(schema, table) for t in self.filter_tables):
            return False
        return any(t.matches(schema, table) for t in self.add_tables)

    # -- transactions ----------------------------------------------------------------------------

    @property
    def events_apart(self) -> bool:
        # format 1 puts a comma before a message that follows a transaction of two or more changes
        # (data->nr_changes is reset only at BEGIN): its output depends on the transaction before
        return self.format_version != 1

    def begin(self, txn: Transaction) -> None:
        ht, nl, sp = self.ht, self.nl, self.sp
        if self.format_version == 1:
            self.nr_changes = 0
            self._prepare()
            o = self._out
            o.append("{" + nl)
            if self.include_xids:
                o.append(f'{ht}"xid":{sp}{txn.xid},{nl}')
            if self.include_lsn:
                o.append(f'{ht}"nextlsn":{sp}"{format_lsn(txn.end_lsn)}",{nl}')
            if self.include_timestamp:
                o.append(f'{ht}"timestamp":{sp}"{self._timestamp(txn.xact_time)}",{nl}')
            if self.include_origin:
                o.append(f'{ht}"origin":{sp}{txn.origin_id},{nl}')
            o.append(f'{ht}"change":{sp}[')
            if self.write_in_chunks:
                self._send()
            return
        if not self.include_transaction:
            return
        self._prepare()
        self._out.append(self._txn_object("B", txn, txn.final_lsn))
        self._send()

    def _txn_object(self, action: str, txn: Transaction, lsn: int) -> str:
        """pg_decode_begin_txn_v2 / pg_decode_commit_txn_v2."""
        parts = ['{"action":"', action, '"']
        if self.include_xids:
            parts.append(f',"xid":{txn.xid}')
        if self.include_timestamp:
            parts.append(f',"timestamp":"{self._timestamp(txn.xact_time)}"')
        if self.include_origin:
            parts.append(f',"origin":{txn.origin_id}')
        if self.include_lsn:
            parts.append(f',"lsn":"{format_lsn(lsn)}","nextlsn":"{format_lsn(txn.end_lsn)}"')
        parts.append("}")
        return "".join(parts)

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        ht, nl = self.ht, self.nl
        if self.format_version == 1:
            if self.write_in_chunks:
                self._prepare()
            else:
                self._out.append(nl)
            self._out.append(f"{ht}]{nl}}}")
            self._send()
            return
        if not self.include_transaction:
            return
        self._prepare()
        self._out.append(self._txn_object("C", txn, commit_lsn))
        self._send()

    def uncommitted(self, txn: Transaction) -> None:
        """wal2json has no way to say a transaction did not commit: refuse rather than print it as if it had."""
        raise OutputPluginError(f"transaction {txn.xid} has no commit in the WAL read, and wal2json has no form "
                                "for one without it: --include-uncommitted goes with test_decoding")

    # -- columns ---------------------------------------------------------------------------------

    def _column_facts(self, catalog: CatalogView, rel: Relation) -> list:
        """Per column (None for a dropped one): (attribute, v1 type text, v1 PK type text, v1 type OID,
        v1 value type, v2 type text, default JSON text); cached per relation and catalog view."""
        hit = self._columns.get(rel.oid)
        if hit is not None and hit[0] is rel and hit[1] is catalog:
            return hit[2]
        quote_all = quote_all_identifiers(catalog.settings)
        major = self.major
        name_of = None
        if catalog.settings.get("search_path", "") == "":
            # a replication connection's (pg_recvlogical): names as format_type gives them then, not as the
            # snapshot's session had them
            def name_of(t):
                return catalog_only_name(t, major, quote_all)

        def fmt(oid, typmod):
            """format_type(oid, typmod): from format_type(oid, NULL), the snapshot's or under an empty
            search_path."""
            t = catalog.type(oid)
            if t is None:
                return "???"
            elem = t.typelem if (is_true_array(major, t.typelem, None, t.typoutput, t.typtype)
                                 and t.typstorage != "p") else 0
            if name_of is None:
                text = t.format_type
            else:
                e = catalog.type(elem) if elem else t
                text = ("???" if e is None else name_of(e)) + ("[]" if elem else "")
            return format_type_typmod(text, oid, elem, typmod, strict=True)

        type_of = catalog.type
        facts = []
        for att in rel.attributes:
            if att.attisdropped:
                facts.append(None)
                continue
            typ = type_of(att.atttypid)
            if typ is None:
                raise CatalogError(f"column {att.attname} of {rel.nspname}.{rel.relname}: type {att.atttypid} "
                                   "is not in the catalog")
            domain_base = self.include_domain_data_type and typ.typtype == TYPTYPE_DOMAIN
            v1_typid = att.atttypid
            v1_type = None
            if self.include_types:
                if domain_base:
                    v1_typid = typ.typbasetype
                    if self.include_typmod:
                        v1_type = fmt(typ.typbasetype, typ.typtypmod)
                    else:
                        base = type_of(typ.typbasetype)
                        v1_type = base.typname if base is not None else "???"
                elif self.include_typmod:
                    v1_type = fmt(att.atttypid, att.atttypmod)
                else:
                    v1_type = typ.typname
            if domain_base:
                v2_type = fmt(typ.typbasetype, typ.typtypmod)
            else:
                v2_type = fmt(att.atttypid, att.atttypmod)
            facts.append((att, _type_json(v1_type, True) if v1_type is not None else None,
                          _type_json(v1_type, False) if v1_type is not None else None,
                          v1_typid, _type_json(v2_type, True), self._default_json(catalog, rel, att)))
        self._columns[rel.oid] = (rel, catalog, facts)
        return facts

    def _default_json(self, catalog: CatalogView, rel: Relation, att) -> str | None:
        """The default as wal2json prints it: its pg_get_expr text in quotes, unescaped (as wal2json does),
        or null; None when include-default is off."""
        if not self.include_default:
            return None
        if not att.atthasdef or att.attgenerated:
            return "null"
        path = catalog.settings.get("search_path", "")
        for p, text in att.attdefault:
            if p == path:
                return '"' + text + '"'
        raise OutputPluginError(
            f"include-default: the default of column {att.attname} of table {rel.nspname}.{rel.relname} is not "
            f"known under search_path {path!r}: the catalog snapshot records defaults only as 'waldecode catalog "
            "--dsn' reads them (under the session's search_path and an empty one), and not those set inside the "
            "decoded range")

    def _value_json(self, typid: int, v) -> str:
        """The value part of tuple_to_stringinfo / pg_decode_write_value: numbers bare (NaN and infinities
        null), booleans, bytea without its \\x, anything else a JSON string."""
        text = self._value_ctx.output(typid, v)
        if typid in _NUMBER_OIDS:
            low = text[:9].lower()
            if low.startswith("nan") or low.startswith("infinity") or low.startswith("-infinity"):
                return "null"
            if set(text) <= _NUMBER_CHARS:
                return text
            raise OutputPluginError(f"{text} is not a number")
        if typid == BOOLOID:
            return "true" if text == "t" else "false"
        if typid == BYTEAOID:
            return escape_json(text[2:])
        return escape_json(text)

    # -- format version 1 ------------------------------------------------------------------------

    def _tuple_v1(self, facts: list, values, keys: set | None, replident: bool, addcomma: bool) -> None:
        """tuple_to_stringinfo."""
        ht, nl, sp = self.ht, self.nl, self.sp
        ht3, ht4 = ht * 3, ht * 4
        names, types, oids, positions, notnulls, defaults, vals = [], [], [], [], [], [], []
        for fact, v in zip(facts, values):
            if fact is None:
                continue
            att, v1_type, _pk_type, v1_typid, _v2_type, default = fact
            if keys is not None and att.attnum not in keys:
                continue
            if v is None and replident:
                continue
            if v is UNCHANGED_TOAST or v.__class__ is ToastPointer:
                continue  # an unchanged TOASTed value is not printed
            names.append(escape_json(att.attname))
            if self.include_types:
                types.append(v1_type)
                if not replident and self.include_not_null:
                    notnulls.append("false" if att.attnotnull else "true")
            if self.include_type_oids:
                oids.append(str(v1_typid))
            if not replident and self.include_column_positions:
                positions.append(str(att.attnum))
            if not replident and self.include_default:
                defaults.append(default)
            vals.append("null" if v is None else self._value_json(v1_typid, v))
        sep = "," + sp
        o = self._out
        if replident:
            o.append(f'{ht3}"oldkeys":{sp}{{{nl}{ht4}"keynames":{sp}[{sep.join(names)}],{nl}')
            if self.include_types:
                o.append(f'{ht4}"keytypes":{sp}[{sep.join(types)}],{nl}')
            if self.include_type_oids:
                o.append(f'{ht4}"keytypeoids":{sp}[{sep.join(oids)}],{nl}')
            o.append(f'{ht4}"keyvalues":{sp}[{sep.join(vals)}]{nl}{ht3}}}{nl}')
            return
        o.append(f'{ht3}"columnnames":{sp}[{sep.join(names)}],{nl}')
        if self.include_types:
            o.append(f'{ht3}"columntypes":{sp}[{sep.join(types)}],{nl}')
        if self.include_type_oids:
            o.append(f'{ht3}"columntypeoids":{sp}[{sep.join(oids)}],{nl}')
        if self.include_column_positions:
            o.append(f'{ht3}"columnpositions":{sp}[{sep.join(positions)}],{nl}')
        if self.include_not_null:
            o.append(f'{ht3}"columnoptionals":{sp}[{sep.join(notnulls)}],{nl}')
        if self.include_default:
            o.append(f'{ht3}"columndefaults":{sp}[{sep.join(defaults)}],{nl}')
        o.append(f'{ht3}"columnvalues":{sp}[{sep.join(vals)}]{"," if addcomma else ""}{nl}')

    def _pk_v1(self, facts: list, keys: set | None, addcomma: bool) -> None:
        """pk_to_stringinfo."""
        ht, nl, sp = self.ht, self.nl, self.sp
        names, types = [], []
        for fact in facts:
            if fact is None:
                continue
            att, _v1_type, pk_type = fact[0], fact[1], fact[2]
            if keys is not None and att.attnum not in keys:
                continue
            names.append(escape_json(att.attname))
            if self.include_types:
                types.append(pk_type)
        sep = "," + sp
        self._out.append(f'{ht * 3}"pk":{sp}{{{nl}{ht * 4}"pknames":{sp}[{sep.join(names)}],{nl}'
                         f'{ht * 4}"pktypes":{sp}[{sep.join(types)}]{nl}{ht * 3}}}{"," if addcomma else ""}{nl}')

    def _change_v1(self, catalog: CatalogView, rel: Relation, action: str, new, old) -> None:
        """pg_decode_change_v1."""
        if self.write_in_chunks:
            self._prepare()
        if not self._table_selected(rel):
            return
        has_identity = bool(rel.replica_identity_key)  # rd_replidindex
        if action == INSERT:
            if new is None:
                return  # WARNING no tuple data for INSERT
        elif not has_identity and rel.relreplident != REPLICA_IDENTITY_FULL:
            return  # WARNING table without primary key or replica identity is nothing
        elif action == UPDATE and new is None:
            return
        elif action == DELETE and old is None:
            return
        self.nr_changes += 1
        self.changes_written += 1
        ht, nl, sp = self.ht, self.nl, self.sp
        ht3 = ht * 3
        o = self._out
        if not self.write_in_chunks:
            o.append(nl)
        o.append(ht + ht + ("," if self.nr_changes > 1 else "") + "{" + nl)
        o.append(f'{ht3}"kind":{sp}"{action.lower()}",{nl}')
        if self.include_schemas:
            o.append(f'{ht3}"schema":{sp}{escape_json(rel.nspname)},{nl}')
        o.append(f'{ht3}"table":{sp}{escape_json(rel.relname)},{nl}')
        facts = self._column_facts(catalog, rel)
        self._value_ctx = catalog.output_context()  # the catalog of this change: types made in the range
        pk_keys = set(rel.primary_key) or None
        ri_keys = set(rel.replica_identity_key) or None
        with_pk = self.include_pk and has_identity and rel.relreplident == REPLICA_IDENTITY_DEFAULT
        if action == INSERT:
            self._tuple_v1(facts, new, None, False, with_pk)
            if with_pk:
                self._pk_v1(facts, pk_keys, False)
        elif action == UPDATE:
            self._tuple_v1(facts, new, None, False, True)
            if with_pk:
                self._pk_v1(facts, pk_keys, True)
            if old is None:
                self._tuple_v1(facts, new, ri_keys, True, False)
            else:
                self._tuple_v1(facts, old, None, True, False)
        else:
            if with_pk:
                self._pk_v1(facts, pk_keys, True)
            self._tuple_v1(facts, old, ri_keys, True, False)
        o.append(ht + ht + "}")
        if self.write_in_chunks:
            self._send()

    # -- format version 2 ------------------------------------------------------------------------

    def _tuple_v2(self, facts: list, values, keys: set | None, kind: str) -> str:
        """pg_decode_write_tuple; ``kind``: "change", "identity" or "pk"."""
        out = []
        change = kind == "change"
        for fact, v in zip(facts, values):
            if fact is None:
                continue
            att = fact[0]
            if keys is not None and att.attnum not in keys:
                continue
            if v is UNCHANGED_TOAST or v.__class__ is ToastPointer:
                continue
            parts = ['{"name":', escape_json(att.attname)]
            if self.include_types:
                parts.append(',"type":')
                parts.append(fact[4])
            if self.include_type_oids:
                oid = att.atttypid
                parts.append(f',"typeoid":{oid - (1 << 32) if oid >= 1 << 31 else oid}')  # printed with %d
            if kind != "pk":
                parts.append(',"value":')
                parts.append("null" if v is None else self._value_json(att.atttypid, v))
            if change and self.include_not_null:
                parts.append(',"optional":false' if att.attnotnull else ',"optional":true')
            if change and self.include_column_positions:
                parts.append(f',"position":{att.attnum}')
            if change and self.include_default:
                parts.append(',"default":')
                parts.append(fact[5])
            parts.append("}")
            out.append("".join(parts))
        return ",".join(out)

    def _head_v2(self, action: str, txn: Transaction, lsn: int, rel: Relation) -> list:
        """What a change or truncate object of format 2 starts with: action, transaction, LSN, table."""
        parts = ['{"action":"', action, '"']
        if self.include_xids:
            parts.append(f',"xid":{txn.xid}')
        if self.include_timestamp:
            parts.append(f',"timestamp":"{self._timestamp(txn.xact_time)}"')
        if self.include_origin:
            parts.append(f',"origin":{txn.origin_id}')
        if self.include_lsn:
            parts.append(f',"lsn":"{format_lsn(lsn)}"')
        if self.include_schemas:
            parts.append(',"schema":' + escape_json(rel.nspname))
        parts.append(',"table":' + escape_json(rel.relname))
        return parts

    def _change_v2(self, txn: Transaction, lsn: int, catalog: CatalogView, rel: Relation, action: str,
                   new, old) -> None:
        """pg_decode_change_v2, pg_decode_write_change."""
        if not self._table_selected(rel):
            return
        has_identity = bool(rel.replica_identity_key)
        if action == INSERT:
            if new is None:
                return
        elif action == UPDATE:
            if new is None:
                return
            if old is None and not has_identity and rel.relreplident != REPLICA_IDENTITY_FULL:
                return  # WARNING no tuple identifier for UPDATE
        elif old is None and not has_identity and rel.relreplident != REPLICA_IDENTITY_FULL:
            return
        self.changes_written += 1
        self._prepare()
        parts = self._head_v2(action[0], txn, lsn, rel)
        facts = self._column_facts(catalog, rel)
        self._value_ctx = catalog.output_context()  # the catalog of this change: types made in the range
        ri_keys = set(rel.replica_identity_key) or None
        if new is not None:
            parts.append(',"columns":[' + self._tuple_v2(facts, new, None, "change") + "]")
        if old is not None:
            parts.append(',"identity":[' + self._tuple_v2(facts, old, ri_keys, "identity") + "]")
        elif action == UPDATE and (rel.primary_key or has_identity):
            parts.append(',"identity":[' + self._tuple_v2(facts, new, ri_keys, "identity") + "]")
        if self.include_pk:
            parts.append(',"pk":[')
            if rel.primary_key:
                tup = old if old is not None else new
                if tup is not None:
                    parts.append(self._tuple_v2(facts, tup, set(rel.primary_key), "pk"))
            parts.append("]")
        parts.append("}")
        self._out.append("".join(parts))
        self._send()

    # -- callbacks -------------------------------------------------------------------------------

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        """pg_decode_change: actions left out first, then the version's own."""
        if not self.actions[action.lower()]:
            return
        if self.format_version == 1:
            self._change_v1(catalog, relation, action, new, old)
        else:
            self._change_v2(txn, lsn, catalog, relation, action, new, old)

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        """pg_decode_truncate: format 1 prints nothing (its code is #ifdef _NOT_USED); format 2 one object
        per selected relation."""
        if self.format_version == 1 or not self.actions["truncate"]:
            return
        for rel in relations:
            if not self._table_selected(rel):
                continue
            self.changes_written += 1
            self._prepare()
            parts = self._head_v2("T", txn, lsn, rel)
            parts.append("}")
            self._out.append("".join(parts))
            self._send()

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        """pg_decode_message: prefixes filtered out, then only added ones if any are named."""
        if prefix in self.filter_msg_prefixes:
            return
        if self.add_msg_prefixes and prefix not in self.add_msg_prefixes:
            return
        self.changes_written += 1
        # strncpy into a C string: the content ends at its first NUL byte
        nul = content.find(b"\0")
        text = (content if nul < 0 else content[:nul]).decode("utf-8", "surrogateescape")
        if self.format_version == 1:
            self._message_v1(transactional, prefix, text)
            return
        self._prepare()
        parts = ['{"action":"M"']
        if self.include_xids:
            parts.append(f',"xid":{txn.xid}' if transactional else ',"xid":null')
        if self.include_timestamp:
            parts.append(f',"timestamp":"{self._timestamp(txn.xact_time)}"' if transactional
                         else ',"timestamp":null')
        if self.include_origin:
            parts.append(f',"origin":{txn.origin_id}' if transactional else ',"origin":null')
        if self.include_lsn:
            parts.append(f',"lsn":"{format_lsn(message_lsn)}"')
        parts.append(',"transactional":true' if transactional else ',"transactional":false')
        parts.append(',"prefix":' + escape_json(prefix) + ',"content":' + escape_json(text) + "}")
        self._out.append("".join(parts))
        self._send()

    def _message_v1(self, transactional: bool, prefix: str, text: str) -> None:
        """pg_decode_message_v1.  A non-transactional message is an object of its own, but its comma
        follows the change counter of the last transaction, as wal2json's does."""
        ht, nl, sp = self.ht, self.nl, self.sp
        ht3 = ht * 3
        immediate = self.write_in_chunks or not transactional
        if immediate:
            self._prepare()
        if transactional:
            self.nr_changes += 1
        o = self._out
        if not self.write_in_chunks and transactional:
            o.append(nl)
        if not transactional:
            o.append(f'{{{nl}{ht}"change":{sp}[{nl}')
        o.append(ht + ht + ("," if self.nr_changes > 1 else ""))
        o.append(f'{{{nl}{ht3}"kind":{sp}"message",{nl}')
        o.append(f'{ht3}"transactional":{sp}{"true" if transactional else "false"},{nl}')
        o.append(f'{ht3}"prefix":{sp}{escape_json(prefix)},{nl}{ht3}"content":{sp}{escape_json(text)}')
        o.append(f"{nl}{ht}{ht}}}")
        if not transactional:
            o.append(f"{nl}{ht}]{nl}}}")
        if immediate:
            self._send()


def _type_json(type_str: str, array_check: bool) -> str:
    """A type name in wal2json's JSON: as it is when format_type quoted it (it already reads as a JSON
    string), else escaped; column types escape a quoted array type ("x"[]), primary key types do not."""
    if type_str[:1] == '"' and (not array_check or type_str[-1:] != "]"):
        return type_str
    return escape_json(type_str)
