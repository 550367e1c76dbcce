"""pg_node_tree text, read back as PostgreSQL reads it (src/backend/nodes/read.c, readfuncs.c): the form a
row filter (pg_publication_rel.prqual) is stored in; and the error of everything row filters do."""

from __future__ import annotations

import re

from ...errors import OutputPluginError


class RowFilterError(OutputPluginError):
    """A row filter that cannot be read, compiled or evaluated (names the relation)."""


# ---------------------------------------------------------------------------------------------
# pg_node_tree text (src/backend/nodes/read.c: pg_strtok, nodeRead; readfuncs.c: readDatum)
# ---------------------------------------------------------------------------------------------

class Node:
    """One node of a parsed tree: its tag as outfuncs.c writes it (``OPEXPR``) and its fields,
    each a raw token (str, backslashes removed), None (``<>``), a ``Node``, a list, or the bytes
    of a Datum (``:constvalue``)."""

    __slots__ = ("tag", "fields")

    def __init__(self, tag: str, fields: dict):
        self.tag = tag
        self.fields = fields

    def __repr__(self) -> str:
        return f"Node({self.tag}, {self.fields!r})"

    def __getitem__(self, name: str):
        try:
            return self.fields[name]
        except KeyError:
            raise RowFilterError(f"node {self.tag} has no field :{name}") from None

    def int(self, name: str) -> int:
        return int(self[name])

    def bool(self, name: str) -> bool:
        return self[name] == "true"


_TOKEN_RE = re.compile(r"[(){}]|(?:\\.|[^\s(){}])+", re.S)
_UNESCAPE_RE = re.compile(r"\\(.)", re.S)


def _tokens(text: str) -> list[str]:
    # pg_strtok: parentheses and braces are tokens of their own; anything else runs to the next
    # blank or bracket, a backslash escaping the character after it
    return _TOKEN_RE.findall(text)


def parse_node_tree(text: str):
    """stringToNode: the node (or list, or None) a pg_node_tree text holds."""
    toks = _tokens(text)
    pos, value = _read_value(toks, 0, text)
    if pos != len(toks):
        raise RowFilterError(f"node tree has trailing text after token {pos}: {' '.join(toks[pos:pos + 5])}")
    return value


def _read_value(toks: list[str], pos: int, text: str):
    if pos >= len(toks):
        raise RowFilterError(f"node tree ends early: {text[:200]!r}")
    tok = toks[pos]
    if tok == "{":
        return _read_node(toks, pos + 1, text)
    if tok == "(":
        return _read_list(toks, pos + 1, text)
    if tok == "<>":
        return pos + 1, None
    if tok in (")", "}"):
        raise RowFilterError(f"node tree has an unexpected {tok!r} at token {pos}")
    value = _UNESCAPE_RE.sub(r"\1", tok)
    if pos + 1 < len(toks) and toks[pos + 1] == "[":
        # readDatum: "<length> [ b0 b1 ... ]", each byte a signed char in decimal
        try:
            end = toks.index("]", pos + 2)
            data = bytes(int(b) & 0xFF for b in toks[pos + 2:end])
        except ValueError:
            raise RowFilterError(f"node tree has a malformed datum at token {pos}") from None
        return end + 1, data
    return pos + 1, value


def _read_node(toks: list[str], pos: int, text: str):
    if pos >= len(toks):
        raise RowFilterError("node tree ends inside a node")
    node = Node(toks[pos], {})
    pos += 1
    while True:
        if pos >= len(toks):
            raise RowFilterError(f"node tree ends inside a {node.tag} node")
        tok = toks[pos]
        if tok == "}":
            return pos + 1, node
        if not tok.startswith(":"):
            raise RowFilterError(f"node tree has {tok!r} where a field of {node.tag} was expected")
        pos, node.fields[tok[1:]] = _read_value(toks, pos + 1, text)


def _read_list(toks: list[str], pos: int, text: str):
    items = []
    if pos < len(toks) and toks[pos] in ("i", "o", "b", "x"):
        # integer, OID, Bitmapset or xid list: "(i 1 2 3)"
        pos += 1
        while pos < len(toks) and toks[pos] != ")":
            items.append(int(toks[pos]))
            pos += 1
    else:
        while pos < len(toks) and toks[pos] != ")":
            pos, item = _read_value(toks, pos, text)
            items.append(item)
    if pos >= len(toks):
        raise RowFilterError("node tree ends inside a list")
    return pos + 1, items
