"""Identifiers as PostgreSQL reads and writes them: the one copy for every stage.

Reading: src/backend/utils/adt/varlena.c SplitIdentifierString, the parser of identifier lists
(search_path): quoted names kept as written (with "" for "), unquoted ones folded to lower case
(downcase_identifier: ASCII letters only) and truncated to NAMEDATALEN - 1 bytes.  Writing:
ruleutils.c quote_identifier, which leaves a name bare only when it is lower-case ASCII letters,
digits and underscores, starts with a letter or underscore, and is not a keyword other than an
unreserved one (src/include/parser/kwlist.h, whose list grows with the major version), unless
quote_all_identifiers is on.  Used by format_type (catalog.relcache) and the output plugins.
"""

from __future__ import annotations

import re

# src/include/pg_config_manual.h
NAMEDATALEN = 64


def split_identifier_string(raw: str, sep: str = ",") -> list[str] | None:
    """SplitIdentifierString: the names of a list; None on bad syntax (as the server rejects it)."""
    out = []
    s = raw.lstrip()
    if not s:
        return out
    while True:
        if s.startswith('"'):
            end = 1
            name = []
            while True:
                q = s.find('"', end)
                if q < 0:
                    return None
                name.append(s[end:q])
                if s[q + 1:q + 2] == '"':
                    name.append('"')
                    end = q + 2
                    continue
                s = s[q + 1:]
                break
            ident = "".join(name)
        else:
            m = re.match(r'[^\s"' + re.escape(sep) + r']*', s)
            ident = "".join(c.lower() if "A" <= c <= "Z" else c for c in m.group(0))
            if not ident:
                return None
            s = s[m.end():]
        if len(ident.encode("utf-8")) >= NAMEDATALEN:  # truncate_identifier
            ident = ident.encode("utf-8")[:NAMEDATALEN - 1].decode("utf-8", "ignore")
        out.append(ident)
        s = s.lstrip()
        if s.startswith(sep):
            s = s[1:].lstrip()
        elif not s:
            return out
        else:
            return None


# src/include/parser/kwlist.h @ REL_13..15: keywords that are not UNRESERVED_KEYWORD
_NON_UNRESERVED_13 = frozenset("""
all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both case
cast char character check coalesce collate collation column concurrently constraint create cross
current_catalog current_date current_role current_schema current_time current_timestamp current_user dec
decimal default deferrable desc distinct do else end except exists extract false fetch float for foreign
freeze from full grant greatest group grouping having ilike in initially inner inout int integer intersect
interval into is isnull join lateral leading least left like limit localtime localtimestamp national natural
nchar none normalize not notnull null nullif numeric offset on only or order out outer overlaps overlay placing
position precision primary real references returning right row select session_user setof similar smallint
some substring symmetric table tablesample then time timestamp to trailing treat trim true union unique user
using values varchar variadic verbose when where window with xmlattributes xmlconcat xmlelement xmlexists
xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable
""".split())
_NON_UNRESERVED_16 = _NON_UNRESERVED_13 | frozenset(
    "json_array json_arrayagg json_object json_objectagg system_user".split())
_NON_UNRESERVED_17 = _NON_UNRESERVED_16 | frozenset(
    "json json_exists json_query json_scalar json_serialize json_table json_value merge_action".split())


def non_unreserved_keywords(major: int) -> frozenset:
    if major >= 17:
        return _NON_UNRESERVED_17
    if major >= 16:
        return _NON_UNRESERVED_16
    return _NON_UNRESERVED_13


def quote_identifier(ident: str, major: int = 15, quote_all: bool = False) -> str:
    """ruleutils.c quote_identifier (``quote_all``: the quote_all_identifiers setting is on)."""
    safe = not quote_all and bool(ident) and (ident[0] in "abcdefghijklmnopqrstuvwxyz_")
    if safe:
        for ch in ident:
            if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_"):
                safe = False
                break
    if safe and ident in non_unreserved_keywords(major):
        safe = False
    if safe:
        return ident
    return '"' + ident.replace('"', '""') + '"'


def quote_qualified_identifier(qualifier: str | None, ident: str, major: int = 15, quote_all: bool = False) -> str:
    """ruleutils.c quote_qualified_identifier."""
    if qualifier:
        return quote_identifier(qualifier, major, quote_all) + "." + quote_identifier(ident, major, quote_all)
    return quote_identifier(ident, major, quote_all)
