"""Change rows read back from a ``--parquet`` dataset by any reader, held to the JSON lines' values
(which tests hold to the server's test_decoding rows): shared by the fixture and live tests."""

from __future__ import annotations

from decimal import Decimal


def same(value, text) -> bool:
    """A value read back says what the server's text says (numbers compared as numbers: a retyped
    column's values are written at the wider scale)."""
    if text is None or value is None:
        return text is None and value is None
    if isinstance(value, Decimal):
        return value == Decimal(text)
    if isinstance(value, bool):
        return ("t" if value else "f") == text
    if isinstance(value, int):
        return str(value) == text
    return value == text


def check_table_rows(rows: list, objects: list, schema: str, table: str) -> int:
    """Every change of ``schema.table`` among the JSON ``objects`` is in ``rows`` (dicts with lsn, op,
    new, old as a reader returns them) once, with its values, the other fields of ``new``/``old``
    null; no other row is.  Returns how many changes were compared."""
    want = [o for o in objects
            if o["op"] in ("INSERT", "UPDATE", "DELETE") and (o["schema"], o["table"]) == (schema, table)]
    by_key: dict = {}
    for r in rows:
        by_key.setdefault((r["lsn"], r["op"]), []).append(r)
    for o in want:
        hi, lo = o["lsn"].split("/")
        got = by_key.get((int(hi, 16) << 32 | int(lo, 16), o["op"]))
        assert got, f"no row for {o}"
        row = got.pop()
        for which, key in (("columns", "new"), ("old", "old")):
            if o[which] is None:
                assert row[key] is None or all(v is None for v in row[key].values()), (o, row)
                continue
            values = dict(row[key])
            texts = dict(row.get(key + "_text") or [])
            for c in o[which]:
                value = values.pop(c["name"])
                if c.get("unchanged_toast"):
                    assert value is None, (table, c)
                elif c["name"] in texts:
                    assert value is None and texts[c["name"]] == c["value"], (table, c, texts)
                else:
                    assert same(value, c["value"]), (table, c, row[key])
            # the fields of the table's other versions (dropped, renamed, later added) are null here
            assert all(v is None for v in values.values()), (table, o, values)
    assert all(not v for v in by_key.values()), "rows the JSON lines do not have"
    return len(want)
