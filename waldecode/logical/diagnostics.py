"""What a decoding run had to say besides its output: warnings and notes, grouped by cause.

The decoder (``decode.LogicalDecoder.warn``), the replayer and the catalog history hand their
messages here.  Each message is a ``Diagnostic``: the text as before (it *is* a ``str``, so every
caller that prints or ships warnings keeps working, Spark's tasks included), plus a stable cause
key (e.g. "could not map filenumber 1663/16384/16390 to a relation"), whether the output lacks
something because of it (``lacks``), and where (LSN, transaction, relation, catalog).

``Diagnostics`` groups them by cause, counts them and keeps a few examples; the CLI prints the
first occurrence of each cause while decoding (every occurrence with ``-v``), then one summary
line per cause at the end, and ``--report FILE`` writes them all as JSON (``to_json``).

Which ones fail a run (exit status 1): a change that was skipped (its relation could not be
mapped) and anything else the decoder could not decode.  A catalog change the history could not
follow is a *note*: it removes nothing from the output by itself.  It becomes a failure when a
row change of a relation that catalog change's transaction concerned (or of any relation, when
which ones is unknown) is decoded after it, since that change may then have been decoded with an
outdated definition (``LogicalDecoder`` watches for those through the replayer).
"""

from __future__ import annotations

import json
import re

#: the occurrences kept per cause for ``--report`` (the count is always exact): a bound on memory
MAX_EXAMPLES = 10_000
#: the causes listed in the summary; the rest are counted
MAX_CAUSES_LISTED = 20

_LSN = re.compile(r"\b[0-9A-F]{1,8}/[0-9A-F]{1,8}\b")
_XID = re.compile(r"\btransaction \d+\b")


class Diagnostic(str):
    """A warning's text, with its cause key and where it happened (see the module docstring)."""

    cause: str
    lacks: bool
    lsn: int | None
    xid: int | None
    relation: str | None
    catalog: str | None
    concerns: frozenset | None  # a note's relation OIDs whose later row changes make it a failure; None: any

    @classmethod
    def make(cls, text: str, cause: str | None = None, *, lacks: bool = True, lsn: int | None = None,
             xid: int | None = None, relation: str | None = None, catalog: str | None = None,
             concerns=None) -> "Diagnostic":
        d = cls(text)
        d.cause = cause or cause_of(text)
        d.lacks = lacks
        d.lsn, d.xid, d.relation, d.catalog = lsn, xid, relation, catalog
        d.concerns = frozenset(concerns) if concerns is not None else None
        return d

    @classmethod
    def of(cls, message) -> "Diagnostic":
        """``message`` as a Diagnostic: a plain string (a warning from elsewhere) counts as lacking."""
        return message if isinstance(message, Diagnostic) else cls.make(str(message))

    def __reduce__(self):  # pickled across Spark's tasks with its fields
        return (_rebuild, (str(self), dict(self.__dict__)))


def _rebuild(text: str, fields: dict) -> Diagnostic:
    d = Diagnostic(text)
    d.__dict__.update(fields)
    return d


def cause_of(text: str) -> str:
    """A plain message's cause: the text without its LSNs and transaction numbers."""
    return _XID.sub("transaction N", _LSN.sub("X/X", text))


def _format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


class _Cause:
    __slots__ = ("key", "count", "lacks", "examples", "escalated")

    def __init__(self, key: str):
        self.key = key
        self.count = 0
        self.lacks = False
        self.examples: list[Diagnostic] = []
        self.escalated: str | None = None  # why a note became a failure


class Diagnostics:
    """The diagnostics of one run, by cause, in order of first occurrence."""

    def __init__(self):
        self.causes: dict[str, _Cause] = {}
        self.total = 0

    def add(self, message) -> tuple[Diagnostic, bool]:
        """Record ``message``; (it as a Diagnostic, whether it is the first of its cause)."""
        d = Diagnostic.of(message)
        c = self.causes.get(d.cause)
        first = c is None
        if first:
            c = self.causes[d.cause] = _Cause(d.cause)
        c.count += 1
        c.lacks = c.lacks or d.lacks
        if len(c.examples) < MAX_EXAMPLES:
            c.examples.append(d)
        self.total += 1
        return d, first

    def escalate(self, d: Diagnostic, why: str) -> None:
        """A note turned out to matter: the output may lack or misstate what ``why`` names."""
        d.lacks = True
        c = self.causes.get(d.cause)
        if c is not None and not c.lacks:
            c.lacks = True
            c.escalated = why

    @property
    def lacking(self) -> list[_Cause]:
        return [c for c in self.causes.values() if c.lacks]

    @property
    def notes(self) -> list[_Cause]:
        return [c for c in self.causes.values() if not c.lacks]

    def summary(self, limit: int = MAX_CAUSES_LISTED) -> list[str]:
        """One line per cause (failures first), with its count and first example, capped at ``limit``."""
        causes = self.lacking + self.notes
        lines = []
        for c in causes[:limit]:
            ex = c.examples[0]
            where = ", ".join(x for x in (
                f"LSN {_format_lsn(ex.lsn)}" if ex.lsn is not None else "",
                f"transaction {ex.xid}" if ex.xid else "",
                f"relation {ex.relation}" if ex.relation else "",
                f"catalog {ex.catalog}" if ex.catalog else "") if x)
            kind = "" if c.lacks else "note: "
            line = f"{kind}{c.count} x {c.key}" + (f" (first at {where})" if where else "")
            if c.escalated:
                line += f"; {c.escalated}"
            lines.append(line)
        if len(causes) > limit:
            lines.append(f"... and {len(causes) - limit} more causes")
        return lines

    def to_json(self) -> str:
        """Every cause with its count, whether the output lacks something, and its examples."""
        doc = {"format": "waldecode-diagnostics", "version": 1, "total": self.total,
               "complete": not self.lacking, "causes": []}
        for c in self.causes.values():
            doc["causes"].append({
                "cause": c.key, "count": c.count, "lacks": c.lacks, "escalated": c.escalated,
                "examples": [{"message": str(d), "lsn": _format_lsn(d.lsn) if d.lsn is not None else None,
                              "xid": d.xid, "relation": d.relation, "catalog": d.catalog}
                             for d in c.examples]})
        return json.dumps(doc, indent=1) + "\n"
