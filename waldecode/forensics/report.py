"""A ``Divergence`` as the DBA reads it (``report``) and as programs read it (``to_json``).

The JSON form is versioned (``FORMAT_NAME``, ``FORMAT_VERSION``) and documented in
the README ("After a failover"); LSNs are written as PostgreSQL prints them (``X/X``), times as ISO 8601
in UTC, keys of rows as objects of column name to the column's output text (null for NULL).
A transaction whose changes could not all be decoded says so (``changes_complete``, ``undecoded``;
in text, next to its counts): its counts and changes are those that could be decoded.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from ..logical.diagnostics import Diagnostics
from ..pg.lsn import format_lsn
from .collect import ALL_ROWS
from .diverge import Divergence

FORMAT_NAME = "waldecode-diverge"
FORMAT_VERSION = 1

_POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


def timestamp_iso(ts: int) -> str | None:
    """A TimestampTz (microseconds since 2000-01-01 UTC) as ISO 8601 in UTC."""
    if not ts:
        return None
    return (_POSTGRES_EPOCH + timedelta(microseconds=ts)).isoformat()


def _pg_time(ts: int) -> str:
    """As PostgreSQL prints a timestamptz in UTC with ISO DateStyle: 2026-11-24 11:57:35.19+00."""
    text = timestamp_iso(ts) or ""
    day, _, rest = text.partition("T")
    clock, frac = rest[:8], rest[8:-6].rstrip("0").rstrip(".")
    return f"{day} {clock}{frac}+00"


def _lsn(lsn: int | None) -> str | None:
    return None if lsn is None else format_lsn(lsn)


def _key(key: tuple) -> dict | str:
    return "all rows" if key == ALL_ROWS else {c: v for c, v in key}


def _key_text(key: tuple) -> str:
    if key == ALL_ROWS:
        return "all rows (TRUNCATE)"
    return ", ".join(f"{c} = {'NULL' if v is None else repr(v)}" for c, v in key)


def _tables(tables: dict) -> dict:
    return {t: {op: n for op, n in ops.items() if n} for t, ops in tables.items()}


def _txn(t, with_changes: bool) -> dict:
    d = {"timeline": t.timeline, "xid": t.xid, "first_lsn": _lsn(t.first_lsn),
         "commit_lsn": _lsn(t.commit_lsn) if t.commit_lsn else None,
         "end_lsn": _lsn(t.end_lsn) if t.commit_lsn else None,
         "commit_time": timestamp_iso(t.commit_time), "gid": t.gid, "changes_count": t.nchanges,
         "tables": _tables(t.tables), "changes_complete": t.changes_complete,
         "undecoded": [{"lsn": u.lsn, "filenumber": u.filenumber, "reason": u.reason} for u in t.undecoded]}
    if with_changes:
        d["changes"] = list(t.changes)
    return d


def to_dict(d: Divergence) -> dict:
    return {
        "format": FORMAT_NAME, "version": FORMAT_VERSION,
        "old_timeline": d.old_timeline, "new_timeline": d.new_timeline,
        "switch_lsn": format_lsn(d.switch_lsn), "switch_source": d.switch_source,
        "read_from": _lsn(d.read_from), "consistent_lsn": _lsn(d.consistent_lsn), "old_end_lsn": _lsn(d.old_end_lsn),
        "next_xid_at_switch": d.next_xid_at_switch,
        "plugin": d.plugin,
        "catalog": d.catalog_source, "catalog_lsn": _lsn(d.catalog_lsn),
        "complete": d.complete,
        "lost_transactions": [_txn(t, d.with_changes) for t in d.lost],
        "prepared": [{"gid": p.gid, "xid": p.xid, "prepare_lsn": _lsn(p.prepare_lsn), "old_fate": p.old_fate,
                      "old_lsn": _lsn(p.old_lsn), "new_fate": p.new_fate, "action": p.action, "note": p.note}
                     for p in d.prepared],
        "open_at_crash": [dict(_txn(t, d.with_changes), began_before_fork=t.first_lsn < d.switch_lsn)
                          for t in d.open_at_crash],
        "missing_ddl": [{"xid": m.xid, "commit_lsn": format_lsn(m.commit_lsn), "kind": m.kind,
                         "relation": m.relation, "statement": m.statement} for m in d.missing_ddl],
        "conflicts_checked": d.conflicts_from,
        "conflicts": [{"table": c.table, "key": _key(c.key),
                       "old": [{"xid": x, "commit_lsn": _lsn(lsn), "operations": ops} for x, lsn, ops in c.old],
                       "new": [{"xid": x, "commit_lsn": _lsn(lsn), "operations": ops} for x, lsn, ops in c.new]}
                      for c in d.conflicts],
        "xids_reused": d.xids_reused,
        "errors": d.errors,
        "warnings": d.warnings,
    }


def to_json(d: Divergence) -> str:
    return json.dumps(to_dict(d), indent=2, ensure_ascii=False) + "\n"


def _counts(tables: dict) -> str:
    parts = []
    for t, ops in tables.items():
        parts.append(f"{t} (" + ", ".join(f"{n} {op.lower()}" for op, n in ops.items() if n) + ")")
    return "; ".join(parts) if parts else "no row changes"


def _undecoded_text(t) -> str:
    files = ", ".join(dict.fromkeys(u.filenumber for u in t.undecoded))
    return (f"{len(t.undecoded)} change(s) could not be decoded (relation file {files}, from "
            f"{t.undecoded[0].lsn})")


def _txn_lines(w, head: str, t) -> None:
    """A transaction's line (what it did per table; what could not be decoded), then its changes when kept."""
    counts = _counts(_tables(t.tables))
    if t.undecoded:
        counts = f"{counts}; {_undecoded_text(t)}, not counted" if t.tables else _undecoded_text(t)
    w(f"  {head}: {counts}")
    for line in t.changes:
        w(f"    {line}")


def conflict_text(c) -> str:
    olds = ", ".join(f"xid {x} {'/'.join(ops)}" for x, _lsn, ops in c.old)
    news = ", ".join((f"xid {x} at {format_lsn(lsn)} " if x is not None else "") + "/".join(ops)
                     for x, lsn, ops in c.new)
    return f"{c.table} {_key_text(c.key)}: old timeline {olds}; new timeline {news}"


def report(d: Divergence) -> str:
    out = []
    w = out.append
    new = f"timeline {d.new_timeline}" if d.new_timeline is not None else "the new timeline"
    w(f"switch point {format_lsn(d.switch_lsn)} ({d.switch_source}): timeline {d.old_timeline} -> "
      + (f"timeline {d.new_timeline}" if d.new_timeline is not None else "a new timeline"))
    if d.read_from is not None:
        w(f"timeline {d.old_timeline} read from {format_lsn(d.read_from)}"
          + (f" (consistent at {format_lsn(d.consistent_lsn)})" if d.consistent_lsn is not None else "")
          + (f" to {format_lsn(d.old_end_lsn)}" if d.old_end_lsn is not None else ""))
    if not d.complete:
        w(f"the report is incomplete: {len(d.errors)} error(s), listed at the end")
    w("")
    w(f"lost transactions: {len(d.lost)} committed on timeline {d.old_timeline} at or after the switch point, "
      f"never on {new}")
    for t in d.lost:
        gid = f" prepared as '{t.gid}'" if t.gid else ""
        _txn_lines(w, f"timeline {t.timeline} xid {t.xid}{gid} committed at {format_lsn(t.commit_lsn)} "
                      f"({_pg_time(t.commit_time)})", t)
    w("")
    w(f"prepared transactions whose fate differs: {len(d.prepared)}")
    for p in d.prepared:
        w(f"  '{p.gid}' (xid {p.xid}): {p.note}")
        if p.action:
            w(f"    run on the new primary: {p.action};")
    w("")
    w(f"open at the end of timeline {d.old_timeline}'s WAL (the crash; rolled back by recovery): "
      f"{len(d.open_at_crash)}")
    for t in d.open_at_crash:
        before = ", begun before the fork" if t.first_lsn < d.switch_lsn else ""
        _txn_lines(w, f"xid {t.xid} first LSN {format_lsn(t.first_lsn)}{before}", t)
    w("")
    w(f"DDL {new} lacks: {len(d.missing_ddl)}")
    for m in d.missing_ddl:
        w(f"  xid {m.xid} committed at {format_lsn(m.commit_lsn)}: {m.statement};")
    w("")
    if d.conflicts_from is None:
        w("rows changed on both sides: not checked (give --new with the new timeline's WAL, or --dsn of the "
          "new primary)")
    else:
        w(f"rows changed on both sides (from the {d.conflicts_from}): {len(d.conflicts)}")
        for c in d.conflicts:
            w("  " + conflict_text(c))
    if d.xids_reused:
        w("")
        w(f"xids of lost transactions that {new} used for other transactions: "
          + ", ".join(map(str, d.xids_reused)))
    if d.warnings:  # one line per cause, with its count and first example (logical.diagnostics)

        diags = Diagnostics()
        for m in d.warnings:
            diags.add(m)
        for line in diags.summary():
            w(line if line.startswith(("note: ", "... and ")) else f"warning: {line}")
    for e in d.errors:
        w(f"error: {e}")
    return "\n".join(out) + "\n"


SQL_FORMAT_VERSION = 1


def to_sql(d: Divergence) -> str:
    """``diverge --format sql``: the lost transactions as statements to run on the new primary, in
    commit order (the ``sql`` plugin's, guarded: a row changed on both sides draws a WARNING and
    keeps the new primary's version).  A transaction prepared before the fork and committed on the
    old timeline is left to the ``COMMIT PREPARED`` the header names, to run first (outside any
    transaction block); one whose changes could not all be decoded is left out (its statements
    as comments); the findings that need a decision are comments."""
    out = []
    w = out.append
    w(f"-- waldecode diverge, format sql {SQL_FORMAT_VERSION}: what timeline {d.old_timeline} committed after the "
      f"switch point {format_lsn(d.switch_lsn)}, to re-apply on the new primary")
    actions = [p for p in d.prepared if p.action]
    if actions:
        w("-- run first on the new primary, each by itself (not inside a transaction block):")
        for p in actions:
            w(f"--   {p.action};  -- {p.note}")
    for c in d.conflicts:
        w(f"-- conflict: {conflict_text(c)}")
    for t in d.open_at_crash:
        w(f"-- open at the crash, not re-applied: xid {t.xid} (first LSN {format_lsn(t.first_lsn)})")
    if not d.complete:
        for e in d.errors:
            w(f"-- INCOMPLETE: {e}")
    out.extend(d.preamble)
    for t, how in _sql_transactions(d):
        if how == "prepared":
            w(f"-- transaction {t.xid} (prepared as '{t.gid}'): left to the COMMIT PREPARED above")
        elif how == "incomplete":
            # a part of a transaction is not what it did: shown, never run
            w(f"-- INCOMPLETE: transaction {t.xid}: {_undecoded_text(t)}; left out, its statements that could "
              "be decoded shown as comments")
            out.extend("-- " + line for text in t.changes for line in text.split("\n"))
        else:
            out.extend(t.changes)
    return "\n".join(out) + "\n"


def _sql_transactions(d: Divergence):
    """The lost transactions as ``to_sql`` writes them, each with how: ``"prepared"`` (left to the
    ``COMMIT PREPARED`` its header names), ``"incomplete"`` (its changes could not all be decoded: its
    statements only shown, as comments), or ``"run"`` (its statements)."""
    finish_prepared = {p.xid for p in d.prepared if p.action and p.action.startswith("COMMIT PREPARED")}
    for t in d.lost:
        yield t, "prepared" if t.xid in finish_prepared else "incomplete" if t.undecoded else "run"


def sql_problems(d: Divergence) -> list[str]:
    """The changes ``to_sql`` lists that it could not redo, in the sql plugin's words (a comment stands
    at each one's place): those of the transactions whose statements it writes.  The command counts
    them in its exit status as ``decode --format sql`` counts its own (``cli.report_problems``)."""
    return [p for t, how in _sql_transactions(d) if how == "run" for p in t.problems]
