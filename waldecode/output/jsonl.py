"""JSON lines (``decode --format jsonl``): one JSON object per change, transaction boundary and message.

Owns the JSON rendering of ``output.rows``' rows: LSNs as PostgreSQL prints them (``0/16B3748``),
commit times as test_decoding's include-timestamp prints them, column values as the server's
output text under the snapshot's settings (the text test_decoding quotes), with their column
name and type (format_type).  Every object carries ``"v"``, the schema version
(``rows.SCHEMA_VERSION``); the schema is documented in ``docs/jsonl-parquet.md``.  Knows no
``-o`` option.
"""

from __future__ import annotations

import base64
import json

from ..catalog import Relation
from ..errors import format_lsn
from .base import CatalogView, OutputWriter, Transaction
from .rows import SCHEMA_VERSION, RowPlugin, is_unchanged_toast, old_columns

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class JsonLines(RowPlugin):
    """The plugin: ``write(text)`` receives each object's line without its newline, or, given
    ``output`` (a ``base.OutputWriter``), the lines go there as bytes in large blocks."""

    def __init__(self, write=None, *, output: OutputWriter | None = None):
        if (write is None) == (output is None):
            raise TypeError("JsonLines takes write (a line callback) or output (an OutputWriter)")
        self.output = output
        self.write = write if output is None else output.write_line
        # per relation OID: (attributes, catalog view, [(name, type, typeoid) or None per attribute])
        self._columns: dict[int, tuple] = {}

    def shutdown(self) -> None:
        if self.output is not None:
            self.output.flush()

    def _line(self, row: dict) -> None:
        self.write(_dumps(row))

    def event(self, row: dict) -> None:
        out = {"v": SCHEMA_VERSION}
        for name, value in row.items():
            if value is None and name in ("schema", "table"):
                continue
            if name in ("commit_lsn", "lsn") and value is not None:
                value = format_lsn(value)
            elif name == "commit_time" and value is not None:
                value = self.timestamp_text(value)
            elif name == "relations":
                value = [{"schema": s, "table": t} for s, t in value]
            elif name == "content":
                # the bytes exactly; the text too when it is UTF-8 (it usually is)
                try:
                    out["content"] = value.decode("utf-8")
                except UnicodeDecodeError:
                    out["content"] = None
                value = base64.b64encode(value).decode("ascii")
                name = "content_base64"
            out[name] = value
        self._line(out)

    def _describe(self, catalog: CatalogView, rel: Relation) -> list:
        hit = self._columns.get(rel.oid)
        if hit is not None and hit[0] is rel.attributes and hit[1] is catalog:
            return hit[2]
        cols = [None if att.attisdropped else (att.attname, att.type_name, att.atttypid) for att in rel.attributes]
        self._columns[rel.oid] = (rel.attributes, catalog, cols)
        return cols

    @staticmethod
    def _values(text, cols: list, values: list, which) -> list:
        out = []
        for i in which:
            name, typ, typeoid = cols[i]
            v = values[i]
            if v is None:
                out.append({"name": name, "type": typ, "value": None})
            elif is_unchanged_toast(v):
                out.append({"name": name, "type": typ, "value": None, "unchanged_toast": True})
            else:
                out.append({"name": name, "type": typ, "value": text(typeoid, v)})
        return out

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        self.changes_written += 1
        cols = self._describe(catalog, relation)
        text = self.value_text(catalog)
        row = self.head(txn, lsn, action, relation.nspname, relation.relname)
        row["commit_lsn"] = format_lsn(row["commit_lsn"]) if row["commit_lsn"] is not None else None
        row["lsn"] = format_lsn(lsn)
        if row["commit_time"] is not None:
            row["commit_time"] = self.timestamp_text(row["commit_time"])
        out = {"v": SCHEMA_VERSION, **row}
        out["columns"] = (None if new is None else
                          self._values(text, cols, new, [i for i, c in enumerate(cols) if c is not None]))
        out["old"] = None if old is None else self._values(text, cols, old, old_columns(relation, old))
        self._line(out)
