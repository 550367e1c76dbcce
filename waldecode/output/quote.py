"""Quoting for output plugins as PostgreSQL's quote.c and ruleutils.c do it.

Identifier quoting (``quote_identifier``, ``quote_qualified_identifier`` and the keyword lists
per major version) is PostgreSQL's one copy in ``waldecode.pg.quote``, re-exported here;
literal quoting (``quote_literal_cstr``) is the plugins' own.
"""

from __future__ import annotations

from ..pg.quote import non_unreserved_keywords, quote_identifier, quote_qualified_identifier  # noqa: F401


def quote_literal_cstr(raw: str) -> str:
    """quote.c quote_literal_cstr: E'' when a backslash is present, quotes and backslashes doubled."""
    body = raw.replace("'", "''")
    if "\\" in raw:
        return "E'" + body.replace("\\", "\\\\") + "'"
    return "'" + body + "'"
