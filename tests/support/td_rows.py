"""test_decoding's lines read back into their parts, and JSON lines (``decode --format jsonl``)
checked against them: the server's own text is the truth the JSON lines and Parquet tests compare
with (tests/live/test_jsonl_parquet.py, tests/differential/test_jsonl_fixtures.py)."""

from __future__ import annotations

import base64
import re

from waldecode.output.quote import quote_identifier, quote_literal_cstr, quote_qualified_identifier

_TXN_END = re.compile(r"(PREPARE TRANSACTION|COMMIT PREPARED|ROLLBACK PREPARED) ((?:E?'(?:[^']|'')*')), "
                      r"txid (\d+)(?: \(at (.*)\))?", re.S)
_CHANGE = re.compile(r"table (.+?): (INSERT|UPDATE|DELETE|TRUNCATE):(.*)", re.S)
_MESSAGE = re.compile(r"message: transactional: (\d) prefix: (.*?), sz: (\d+) content:(.*)", re.S)

TOAST = object()


def _quoted(s: str, i: int, q: str) -> tuple[str, int]:
    """The body of a q-quoted token starting at s[i] (doubled q inside), and the index after it."""
    assert s[i] == q, (s, i)
    out = []
    i += 1
    while True:
        j = s.index(q, i)
        out.append(s[i:j])
        if s.startswith(q + q, j):
            out.append(q)
            i = j + 2
        else:
            return "".join(out), j + 1


def parse_tuple(s: str, i: int) -> tuple[list, int]:
    """test_decoding's tuple_to_stringinfo, read back: [(quoted name, type, server text | None | TOAST)]."""
    cols = []
    while i < len(s) and s[i] == " " and not s.startswith(" new-tuple:", i):
        i += 1
        if s[i] == '"':
            body, i = _quoted(s, i, '"')
            name = quote_identifier(body)
        else:
            j = s.index("[", i)
            name, i = s[i:j], j
        j = s.index("]:", i)
        typ, i = s[i + 1:j], j + 2
        if s.startswith("null", i) and (i + 4 == len(s) or s[i + 4] == " "):
            value, i = None, i + 4
        elif s.startswith("unchanged-toast-datum", i):
            value, i = TOAST, i + len("unchanged-toast-datum")
        elif s[i] == "'":
            value, i = _quoted(s, i, "'")
        elif s.startswith("B'", i):
            value, i = _quoted(s, i + 1, "'")
        else:
            j = s.find(" ", i)
            j = len(s) if j < 0 else j
            value, i = s[i:j], j
            value = {"true": "t", "false": "f"}.get(value, value)
        cols.append((name, typ, value))
    return cols, i


def parse_line(line: str) -> dict:
    if line.startswith("BEGIN "):
        return {"op": "BEGIN", "xid": int(line[6:])}
    m = re.fullmatch(r"COMMIT (\d+)(?: \(at (.*)\))?", line)
    if m:
        return {"op": "COMMIT", "xid": int(m[1]), "time": m[2]}
    m = _TXN_END.fullmatch(line)
    if m:
        op = "PREPARE" if m[1] == "PREPARE TRANSACTION" else m[1]
        return {"op": op, "gid": m[2], "xid": int(m[3]), "time": m[4]}
    m = _MESSAGE.fullmatch(line)
    if m:
        return {"op": "MESSAGE", "transactional": m[1] == "1", "prefix": m[2], "sz": int(m[3]),
                "content": m[4].encode("utf-8", "surrogateescape")}
    m = _CHANGE.fullmatch(line)
    assert m, line
    name, op, rest = m[1], m[2], m[3]
    if op == "TRUNCATE":
        return {"op": op, "tables": name.split(", "), "flags": rest.strip()}
    row = {"op": op, "table": name, "new": None, "old": None}
    if rest == " (no-tuple-data)":
        return row
    if op == "UPDATE" and rest.startswith(" old-key:"):
        row["old"], i = parse_tuple(rest, len(" old-key:"))
        assert rest.startswith(" new-tuple:", i), rest
        row["new"], i = parse_tuple(rest, i + len(" new-tuple:"))
    elif op == "DELETE":
        row["old"], i = parse_tuple(rest, 0)
    else:
        row["new"], i = parse_tuple(rest, 0)
    assert i == len(rest), (rest[i:], line)
    return row


# -- JSON lines against test_decoding ----------------------------------------------------------------

def _json_columns(cols, skip_nulls: bool) -> list:
    out = []
    for c in cols:
        if c["value"] is None and not c.get("unchanged_toast") and skip_nulls:
            continue
        out.append((quote_identifier(c["name"]), c["type"],
                    TOAST if c.get("unchanged_toast") else c["value"]))
    return out


def check_jsonl(objects: list[dict], expected: list[str], lsns: list[str] | None = None) -> None:
    """Each JSON object says what the test_decoding line at its place says (``lsns``: the peek's lsn
    column of those lines, when known)."""
    assert len(objects) == len(expected)
    for k, (obj, line) in enumerate(zip(objects, expected)):
        lsn_text = lsns[k] if lsns is not None else None
        td = parse_line(line)
        assert obj["v"] == 1
        assert obj["op"] == td["op"], (obj, line)
        if "xid" in td:
            assert obj["xid"] == td["xid"], (obj, line)
        if td.get("time") is not None:
            assert obj["commit_time"] == td["time"], (obj, line)
        if "gid" in td:
            assert quote_literal_cstr(obj["gid"]) == td["gid"]
        if lsns is not None and td["op"] not in ("COMMIT", "PREPARE", "COMMIT PREPARED", "ROLLBACK PREPARED"):
            # the peek's lsn: the transaction's first record for BEGIN, else the row's own record
            # (a transaction's end rows get the end of its record there, not its start)
            assert obj["lsn"] == lsn_text, (obj, line, lsn_text)
        if td["op"] in ("INSERT", "UPDATE", "DELETE"):
            assert quote_qualified_identifier(obj["schema"], obj["table"]) == td["table"]
            assert (None if obj["columns"] is None else _json_columns(obj["columns"], False)) == td["new"], line
            assert (None if obj["old"] is None else _json_columns(obj["old"], True)) == td["old"], line
        elif td["op"] == "TRUNCATE":
            assert [quote_qualified_identifier(r["schema"], r["table"]) for r in obj["relations"]] == td["tables"]
            flags = " ".join(f for f in ("restart_seqs", "cascade") if obj[f]) or "(no-flags)"
            assert flags == td["flags"]
        elif td["op"] == "MESSAGE":
            content = base64.b64decode(obj["content_base64"])
            assert (obj["transactional"], obj["prefix"], len(content), content) == \
                (td["transactional"], td["prefix"], td["sz"], td["content"])
            assert obj["content"] == (content.decode("utf-8") if content.isascii() or _utf8(content) else None)


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


_TIMED_COMMIT = re.compile(r"^(COMMIT \d+) \(at (.+)\)$")


def timed_transactions(rows) -> tuple[list, list]:
    """test_decoding rows printed with include-timestamp (and include-xids), cut into transactions:
    ([(commit time as printed, the transaction's rows as printed without include-timestamp)], the rows
    after the last commit)."""
    txns, current = [], []
    for row in rows:
        m = _TIMED_COMMIT.match(row)
        current.append(m[1] if m else row)
        if m:
            txns.append((m[2], current))
            current = []
    return txns, current
