"""Identifier and literal quoting as PostgreSQL's ruleutils.c and quote.c do it.

``quote_identifier`` leaves a name bare only when it is lower-case ASCII letters,
digits and underscores, starts with a letter or underscore, and is not a keyword
other than an unreserved one (src/include/parser/kwlist.h, whose list grows with
the major version: Appendix A of the WAL format reference).
"""

from __future__ import annotations

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


def quote_identifier(ident: str, major: int = 15) -> str:
    safe = bool(ident) and (ident[0] in "abcdefghijklmnopqrstuvwxyz_")
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


def quote_qualified_identifier(qualifier: str | None, ident: str, major: int = 15) -> str:
    if qualifier:
        return quote_identifier(qualifier, major) + "." + quote_identifier(ident, major)
    return quote_identifier(ident, major)


def quote_literal_cstr(raw: str) -> str:
    """quote.c quote_literal_cstr: E'' when a backslash is present, quotes and backslashes doubled."""
    body = raw.replace("'", "''")
    if "\\" in raw:
        return "E'" + body.replace("\\", "\\\\") + "'"
    return "'" + body + "'"
