"""Identifiers as PostgreSQL reads them: src/backend/utils/adt/varlena.c SplitIdentifierString.

The one parser of identifier lists (search_path) for the data-directory reader and the catalog
history: quoted names kept as written (with "" for "), unquoted ones folded to lower case
(downcase_identifier: ASCII letters only) and truncated to NAMEDATALEN - 1 bytes.
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
