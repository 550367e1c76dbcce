"""The server's derived catalog facts, stated once: what the relcache and format_type make of rows.

Owns the rules that turn catalog rows into what a ``Catalog`` records and test_decoding prints,
for the data-directory reader and the catalog history alike: ``format_type`` (format_type.c
with namespace.c's TypeIsVisible over the session's search_path), the replica identity key
(relcache.c RelationGetIndexList), ``attmissingval`` as text, an output function's regproc
name, and which views a snapshot keeps.  ``catalog.dsn`` asks the server for the same facts in
SQL (its queries state these rules).  Takes rows and lookups; hands back text and tuples.
"""

from __future__ import annotations

import struct
from typing import Callable, NamedTuple

from ..errors import WALError
from ..heap.varlena import VARHDRSZ, ToastPointer
from ..pg.pg_type import (BITOID, BPCHAROID, INTERVALOID, JSONOID, NUMERICOID, TIMEOID, TIMESTAMPOID, TIMESTAMPTZOID,
                          TIMETZOID, VARBITOID, VARCHAROID)
from ..pg.quote import quote_identifier, split_identifier_string
from ..types import TypeOutputError
from ..types.arrays import deconstruct
from .model import CatalogError

# src/include/catalog/pg_type.dat: OIDs format_type special-cases (utils/adt/format_type.c)
FORMAT_TYPE_SPECIAL = {
    1560: "bit", 16: "boolean", 1042: "character", 700: "real", 701: "double precision", 21: "smallint",
    23: "integer", 20: "bigint", 1700: "numeric", 1186: "interval", 1083: "time without time zone",
    1266: "time with time zone", 1114: "timestamp without time zone", 1184: "timestamp with time zone",
    1562: "bit varying", 1043: "character varying",
}
# src/include/catalog/pg_proc.dat: array_subscript_handler (IsTrueArrayType, 14+)
F_ARRAY_SUBSCRIPT_HANDLER = 6179


# -- format_type ------------------------------------------------------------------------------------

class TypeRow(NamedTuple):
    """What format_type reads of a pg_type row."""

    oid: int
    typname: str
    nspname: str | None  # None or "": the schema is unknown ("???")
    typelem: int
    typstorage: str
    true_array: bool  # IsTrueArrayType (``is_true_array``)


def is_true_array(major: int, typelem: int, typsubscript: int | None = None, typoutput: str = "",
                  typtype: str = "") -> bool:
    """IsTrueArrayType: 14+ an element type and array_subscript_handler as typsubscript; 13 any element
    type.  A snapshot's TypeInfo records no typsubscript: array_out as a base type's output function
    says the same."""
    if not typelem:
        return False
    if major < 14:
        return True
    if typsubscript is not None:
        return typsubscript == F_ARRAY_SUBSCRIPT_HANDLER
    return typoutput == "array_out" and typtype == "b"


def search_path_schemas(search_path: str, user: str | None = None) -> list[str]:
    """namespace.c recomputeNamespacePath for a new session: the schemas of ``search_path`` in order,
    ``"$user"`` as ``user`` (left out without one), ``pg_temp`` left out (no temporary schema yet),
    each once, and pg_catalog first unless listed.  Unparsable text gives pg_catalog alone."""
    path: list[str] = []
    for name in split_identifier_string(search_path) or []:
        if name == "$user":
            if user is None:
                continue
            name = user
        elif name == "pg_temp":
            continue
        if name not in path:
            path.append(name)
    if "pg_catalog" not in path:
        path.insert(0, "pg_catalog")
    return path


def type_is_visible(nspname: str | None, typname: str, path: list[str],
                    type_exists: Callable[[str, str], bool]) -> bool:
    """namespace.c TypeIsVisible: the type's schema is on ``path`` (``search_path_schemas``) and no
    schema before it has a type of that name (``type_exists(nspname, typname)``)."""
    if nspname not in path:
        return False
    for nsp in path:
        if nsp == nspname:
            return True
        if type_exists(nsp, typname):
            return False
    return False


def can_be_hidden(nspname: str | None, path: list[str]) -> bool:
    """Can a new type of the same name change whether a type of ``nspname`` is visible?  Only when its
    schema is on the path after another one."""
    return nspname in path[1:]


def format_type(oid: int, row_of: Callable[[int], TypeRow | None], visible: Callable[[TypeRow], bool],
                major: int, quote_all: bool = False, element_text: Callable[[int], str] | None = None) -> str:
    """format_type(oid, NULL): format_type.c format_type_extended with typemod -1 and
    FORMAT_TYPE_ALLOW_INVALID.  ``row_of`` looks types up, ``visible`` is TypeIsVisible.  An array
    prints as its element type's name and "[]": ``element_text``, where the caller keeps types'
    texts, gives that name (the element's own format_type: an element type is never a true array)."""
    if oid == 0:
        return "-"
    t = row_of(oid)
    if t is None:
        return "???"
    is_array = t.true_array and t.typstorage != "p"
    if is_array:
        elem = row_of(t.typelem)
        if elem is None:
            return "???[]"
        if element_text is not None:
            return element_text(t.typelem) + "[]"
        t = elem
    text = FORMAT_TYPE_SPECIAL.get(t.oid)
    if text is None and t.oid == JSONOID and major >= 17:
        text = "json"
    if text is None:
        text = quote_identifier(t.typname, major, quote_all)
        if not visible(t):
            text = quote_identifier(t.nspname or "???", major, quote_all) + "." + text
    return text + "[]" if is_array else text


# src/include/utils/timestamp.h, datetime.h: interval typmods (INTERVAL_TYPMOD(precision, range))
INTERVAL_FULL_RANGE = 0x7FFF
INTERVAL_FULL_PRECISION = 0xFFFF
_YEAR, _MONTH, _DAY, _HOUR, _MINUTE, _SECOND = (1 << 2), (1 << 1), (1 << 3), (1 << 10), (1 << 11), (1 << 12)
# timestamp.c intervaltypmodout: the fields' text, by INTERVAL_RANGE
_INTERVAL_FIELDS = {
    _YEAR: " year", _MONTH: " month", _DAY: " day", _HOUR: " hour", _MINUTE: " minute", _SECOND: " second",
    _YEAR | _MONTH: " year to month", _DAY | _HOUR: " day to hour", _DAY | _HOUR | _MINUTE: " day to minute",
    _DAY | _HOUR | _MINUTE | _SECOND: " day to second", _HOUR | _MINUTE: " hour to minute",
    _HOUR | _MINUTE | _SECOND: " hour to second", _MINUTE | _SECOND: " minute to second",
    INTERVAL_FULL_RANGE: "",
}


def _typmodout(oid: int, typmod: int) -> str | None:
    """The typmodout function's text of a built-in type (bpchartypmodout, numerictypmodout, ...)."""
    if oid in (BPCHAROID, VARCHAROID):
        return "(%d)" % (typmod - VARHDRSZ)
    if oid == NUMERICOID:  # precision, then the 11-bit signed scale (15+; 0..1000 before)
        t = typmod - VARHDRSZ
        return "(%d,%d)" % ((t >> 16) & 0xFFFF, ((t & 0x7FF) ^ 1024) - 1024)
    if oid in (TIMEOID, TIMETZOID, TIMESTAMPOID, TIMESTAMPTZOID, BITOID, VARBITOID):  # precision; bit length
        return "(%d)" % typmod
    if oid == INTERVALOID:
        fields = _INTERVAL_FIELDS.get((typmod >> 16) & 0x7FFF, " ???")
        precision = typmod & 0xFFFF
        return fields if precision == INTERVAL_FULL_PRECISION else "%s(%d)" % (fields, precision)
    return None


def format_type_typmod(text: str, oid: int, elem_oid: int, typmod: int, strict: bool = False) -> str:
    """format_type(oid, typmod) from format_type(oid, NULL)'s ``text``: format_type.c puts a
    built-in type's typmod text after its name, before " with(out) time zone"; an array's applies
    to its element (``elem_oid``; the type itself otherwise).  Other types (a user type's
    typmodout) print as without a typmod, or, ``strict``, are an error (wal2json must print it).
    What a column definition needs: a typmod of -1 is "given", as format_type(atttypid, atttypmod)
    gives it."""
    suffix = ""
    if text.endswith("[]"):
        text, suffix = text[:-2], "[]"
    base = elem_oid or oid
    if typmod < 0:
        # FORMAT_TYPE_TYPEMOD_GIVEN: a bpchar or bit without a length is the catalog name ("character"
        # and "bit" are char(1) and bit(1)); "bit" is a keyword, quoted
        return ("bpchar" if base == BPCHAROID else '"bit"' if base == BITOID else text) + suffix
    mod = _typmodout(base, typmod)
    if mod is None:
        if strict:
            raise CatalogError(f"format_type of type {text} (OID {base}) with typmod {typmod}: its typmodout "
                               "function is not known")
        return text + suffix
    for tail in (" without time zone", " with time zone"):
        if text.endswith(tail):
            return text[:-len(tail)] + mod + tail + suffix
    return text + mod + suffix


def catalog_only_name(t, major: int, quote_all: bool = False) -> str:
    """format_type's name of a type without a name of its own under an empty search_path (what
    replication connections run with): only pg_catalog is visible, other types are qualified."""
    special = FORMAT_TYPE_SPECIAL.get(t.oid)
    if special is not None:
        return special
    if t.oid == JSONOID and major >= 17:
        return "json"
    name = quote_identifier(t.typname, major, quote_all)
    if t.nspname == "pg_catalog":
        return name
    return quote_identifier(t.nspname or "???", major, quote_all) + "." + name




def quote_all_identifiers(settings: dict) -> bool:
    """Is quote_all_identifiers on in these (snapshot) settings?"""
    return str(settings.get("quote_all_identifiers", "off")).strip().lower() == "on"


def regproc_name(proname: str, nspname: str | None, major: int, quote_all: bool = False) -> str:
    """An output function's name as a snapshot's TypeInfo.typoutput holds it: bare in pg_catalog,
    else quote_ident(schema) || '.' || quote_ident(name), whatever the search_path."""
    if nspname == "pg_catalog":
        return proname
    return quote_identifier(nspname or "???", major, quote_all) + "." + quote_identifier(proname, major, quote_all)


# -- replica identity -------------------------------------------------------------------------------

def identity_index_flag(relreplident: str) -> str | None:
    """The pg_index flag that marks the replica identity index: indisprimary for REPLICA IDENTITY
    DEFAULT, indisreplident for USING INDEX; None for FULL and NOTHING (no key)."""
    if relreplident == "d":
        return "indisprimary"
    if relreplident == "i":
        return "indisreplident"
    return None


def index_qualifies(row: dict, flag: str) -> bool:
    """relcache.c RelationGetIndexList: a live, valid, unique, immediate, non-partial index with ``flag``."""
    return bool(row["indislive"] and row["indisvalid"] and row["indisunique"] and row["indimmediate"]
                and row["indpred"] is None and row[flag])


def index_key(row: dict) -> tuple:
    """The key columns of an index row: indkey[:indnkeyatts] (INCLUDE columns left out)."""
    return tuple(row["indkey"][:row["indnkeyatts"]])


def replica_identity_key(relreplident: str, indexes) -> tuple:
    """The attnums of the replica identity key among a relation's pg_index rows: the lowest-OID index
    that qualifies (``index_qualifies``); () when there is none or the identity is FULL or NOTHING."""
    flag = identity_index_flag(relreplident)
    if flag is None:
        return ()
    for row in sorted(indexes, key=lambda r: r["indexrelid"]):
        if index_qualifies(row, flag):
            return index_key(row)
    return ()


# -- attmissingval ----------------------------------------------------------------------------------

def missing_value_text(raw, ctx) -> str | None:
    """The output text of the one element of a pg_attribute.attmissingval (an anyarray payload), printed
    with ``ctx`` (a ``types.OutputContext``: the catalog and settings of the snapshot); None for NULL.
    Raises ``CatalogError`` with the reason when the value cannot be read."""
    if raw is None:
        return None
    if isinstance(raw, ToastPointer):
        raise CatalogError("it is stored out of line, but pg_attribute has no TOAST table")
    try:
        elemtype, _dims, _lb, items = deconstruct(raw, ctx)
        if len(items) != 1:
            raise CatalogError(f"array of {len(items)} elements, expected 1")
        return None if items[0] is None else ctx.output(elemtype, items[0])
    except (WALError, TypeOutputError, struct.error, ValueError) as e:
        raise CatalogError(getattr(e, "reason", None) or str(e)) from None


# -- which relations a snapshot keeps ---------------------------------------------------------------

def views_needed(relations: dict, views: dict, types: dict) -> set[int]:
    """Views whose row type a column of a kept relation uses (through arrays, domains, ranges, composites):
    a snapshot keeps pg_class rows of relkinds r, t, m, p, f, S, c and only these views."""
    needed: set[int] = set()
    seen_types: set[int] = set()
    pending = [a.atttypid for r in relations.values() for a in r.attributes if not a.attisdropped]
    while pending:
        oid = pending.pop()
        if oid in seen_types or oid not in types:
            continue
        seen_types.add(oid)
        t = types[oid]
        pending += [t.typelem, t.typbasetype, t.rngsubtype]
        if t.typrelid in views and t.typrelid not in needed:
            needed.add(t.typrelid)
            pending += [a.atttypid for a in views[t.typrelid].attributes if not a.attisdropped]
    return needed
