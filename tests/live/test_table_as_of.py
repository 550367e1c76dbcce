"""``waldecode table`` against PostgreSQL's own point-in-time recovery (issue 23).

tests/support/pitr.py starts a PostgreSQL 15 primary that archives its WAL and takes a plain base
backup; the workload below then runs: inserts, HOT and non-HOT updates, deletes, TOASTed values
(stored, updated, deleted), a rolled-back transaction, subtransactions rolled back and released, a
row locked FOR UPDATE and never changed, two sessions holding FOR SHARE on rows (a locker-only
multixact) while other transactions commit, a FOR KEY SHARE locker open while a row is updated (a
multixact with an updater), VACUUM (pruning, dead items), VACUUM FREEZE, a column added with a
default (attmissingval) and one dropped, a rewrite (ALTER TABLE ... TYPE), VACUUM FULL and a
TRUNCATE.  For every target of ``PitrPrimary.spread_targets`` (every state of the table the
workload made; LSN, time and xid, inclusive on and off) the recovered cluster's ``COPY`` and
``waldecode table --format copy`` from the same backup and archive must hold the same rows, byte for
byte, as multisets.  Targets recovery cannot reach, and a
table that does not exist, give one error line and nothing on stdout.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter

import pytest

psycopg = pytest.importorskip("psycopg")

from doc_commands import lane_command  # noqa: E402
from pitr import DB, PitrPrimary, Target, copy_lines  # noqa: E402
from table_workload import SCHEMA, workload  # noqa: E402
from waldecode.cli import main  # noqa: E402
from waldecode.cli.table import _ParquetRows, copy_csv, copy_text  # noqa: E402
from waldecode.pg.lsn import format_lsn  # noqa: E402
from waldecode.redo.backup_label import read_backup_label  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture(scope="module")
def primary():
    with PitrPrimary(SCHEMA, "orders") as p:
        workload(p)
        p.finish()
        yield p


def _waldecode(p: PitrPrimary, capsys, at: str, inclusive: bool, table: str = "public.orders"):
    """(status, stdout bytes, stderr lines) of ``waldecode table --format copy``."""
    capsys.readouterr()
    status = main(["table", "--backup", str(p.backup), "--table", table, "--at", at,
                   "--inclusive", "on" if inclusive else "off", "--format", "copy", "--database", DB,
                   str(p.archive)])
    out = capsys.readouterr()
    return status, out.out.encode(), out.err.splitlines()


def test_rows_at_targets_equal_point_in_time_recovery(primary, capsys):
    """Every target of ``PitrPrimary.spread_targets``: a target including each committed transaction of
    the workload (every state of the table it made), one stopping before every third (the backup's
    rows first), each of the eight kinds of target at several points; waldecode's rows are the
    recovered cluster's, byte for byte, as multisets."""
    chosen = primary.spread_targets()
    wrong, report, counts = [], [], set()
    for target in chosen:
        got = primary.recover(target)
        expected = copy_lines(primary.rows_after(target.last_included))
        assert got.lines == expected, f"the oracle disagrees with the primary at {target}"
        status, out, err = _waldecode(primary, capsys, target.value, target.inclusive)
        mine = copy_lines(out)
        counts.add(len(mine))
        report.append(f"{target}: {len(mine)} rows, recovery {len(got.lines)}")
        if status != 0 or mine != got.lines:
            wrong.append(f"{target}: status {status} {err}; {len(mine)} rows, recovery {len(got.lines)}: "
                         f"only waldecode {sorted(set(mine) - set(got.lines))[:3]}, "
                         f"only recovery {sorted(set(got.lines) - set(mine))[:3]}")
    print("\n".join(report))
    print(f"{len(chosen)} targets, row counts {sorted(counts)}")
    assert wrong == [], "\n".join(wrong)
    # every state: the backup's and the one after each committed transaction
    committed = [t.index for t in primary.txns if t.committed]
    assert {t.last_included for t in chosen} >= {-1, *committed}
    # each of the eight kinds of target (PitrPrimary.targets_at: by LSN at the commit record, inclusive on
    # and off, and at the insert LSN after it; by time at the commit, inclusive on and off, and at a
    # clock reading after it; by xid, inclusive on and off) at three transactions at least
    kind_of = {target: i for t in primary.txns if t.committed for i, target in enumerate(primary.targets_at(t))}
    kinds = Counter(kind_of[t] for t in chosen)
    assert len(kinds) == 8 and min(kinds.values()) >= 3, kinds
    assert len(counts) >= 5, counts


def test_inclusive_on_and_off_at_one_commit(primary, capsys):
    """At one commit's LSN, time and xid, inclusive on shows the transaction and off does not."""
    t = next(x for x in primary.txns if x.committed and x.index > 3)
    for kind, value in (("lsn", format_lsn(t.lsn)), ("time", t.time), ("xid", str(t.xid))):
        _s, on, _e = _waldecode(primary, capsys, value, True)
        _s, off, _e = _waldecode(primary, capsys, value, False)
        assert copy_lines(on) == primary.recover(Target(kind, value, True, t.index)).lines
        assert copy_lines(off) == primary.recover(Target(kind, value, False, t.index - 1)).lines
        assert copy_lines(on) != copy_lines(off)


def test_unreachable_targets_and_unknown_table(primary, capsys):
    """One error line, nothing on stdout, a non-zero status: where recovery itself fails (FATAL), and
    for a table that does not exist at the target."""
    label = read_backup_label(primary.backup)
    last = primary.txns[-1]
    cases = [
        (format_lsn(primary.end_lsn + 16 * 1024 * 1024), True, "public.orders", "recovery ended before the target"),
        (str(last.xid + 1000), True, "public.orders", "recovery ended before the target"),
        (last.time, True, "public.orders", "recovery ended before the target"),
        (format_lsn(label.start_lsn), False, "public.orders", "is before the consistent recovery point"),
        (format_lsn(last.end_lsn), True, "public.nosuch", "no table public.nosuch"),
    ]
    for at, inclusive, table, message in cases:
        status, out, err = _waldecode(primary, capsys, at, inclusive, table)
        assert status != 0 and out == b"", (at, status, out[:200])
        assert len(err) == 1 and err[0].startswith("waldecode: error: ") and message in err[0], err


def test_missing_segment(primary, capsys, tmp_path):
    """A segment missing from the archive between the backup and the target names the segment."""
    segs = sorted(f for f in primary.archive.iterdir() if len(f.name) == 24)
    label = read_backup_label(primary.backup)
    # the segment after the backup's first: between the redo point and the target, with later ones kept
    gone = next(f for f in segs if f.name > label.start_wal_file)
    assert gone != segs[-1]
    for f in segs:
        if f != gone:
            (tmp_path / f.name).symlink_to(f)
    capsys.readouterr()
    status = main(["table", "--backup", str(primary.backup), "--table", "orders", "--at",
                   format_lsn(primary.txns[-1].end_lsn), "--database", DB, str(tmp_path)])
    out = capsys.readouterr()
    assert status != 0 and out.out == ""
    err = out.err.splitlines()
    assert len(err) == 1 and gone.name in err[0], err
    # a segment missing after the target: recovery never asks for it, nor does waldecode
    later = segs[-2]
    assert later.name > gone.name
    (tmp_path / gone.name).symlink_to(gone)
    (tmp_path / later.name).unlink()
    t = primary.txns[0]
    status = main(["table", "--backup", str(primary.backup), "--table", "orders", "--at", format_lsn(t.end_lsn),
                   "--database", DB, str(tmp_path)])
    assert status == 0 and copy_lines(capsys.readouterr().out.encode()) == copy_lines(t.rows)


def test_other_formats(primary, capsys, tmp_path, monkeypatch):
    """csv, jsonl and sql print the same rows (one line each) as copy; parquet holds jsonl's values,
    written a row group at a time (groups of 7 rows here)."""
    at = format_lsn(primary.txns[-1].end_lsn)
    _s, copy, _e = _waldecode(primary, capsys, at, True)
    n = len(copy_lines(copy))
    outs = {}
    for fmt in ("csv", "jsonl", "sql"):
        capsys.readouterr()
        assert main(["table", "--backup", str(primary.backup), "--table", "orders", "--at", at,
                     "--database", DB, "--format", fmt, str(primary.archive)]) == 0
        outs[fmt] = capsys.readouterr().out.splitlines()
        assert len(outs[fmt]) == n, fmt
    # parquet: typed columns (int4, numeric(12,3)) and text ones hold the values jsonl prints as text
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "orders.parquet"
    assert main(["table", "--backup", str(primary.backup), "--table", "orders", "--at", at, "--database", DB,
                 "--format", "parquet", "--output", str(path), str(primary.archive)]) == 0
    table = pq.read_table(path)
    assert pq.ParquetFile(path).num_row_groups == 1  # 64k rows a group
    monkeypatch.setattr(_ParquetRows, "ROW_GROUP_ROWS", 7)
    assert main(["table", "--backup", str(primary.backup), "--table", "orders", "--at", at, "--database", DB,
                 "--format", "parquet", "--output", str(path), str(primary.archive)]) == 0
    assert pq.ParquetFile(path).num_row_groups == -(-n // 7)
    assert pq.read_table(path).equals(table)
    texts = sorted(tuple(c["value"] for c in json.loads(line)["columns"]) for line in outs["jsonl"])
    got = sorted(tuple(None if row[f] is None else str(row[f]) for f in table.column_names if f != "_text")
                 for row in table.to_pylist())
    assert got == texts and str(table.schema.field("id").type) == "int32"


def test_time_between_commits(primary, capsys):
    """A clock reading between two commits keeps the first, inclusive on or off (as recovery does)."""
    t = primary.txns[5]
    _s, out, _e = _waldecode(primary, capsys, t.after, False)
    assert copy_lines(out) == copy_lines(t.rows)


def test_documented_table_command(primary, capsys, tmp_path):
    """docs/table-as-of.md's example, its backup, time and archive replaced by this run's: the file it
    writes holds the rows recovery to that time (inclusive off) shows."""
    cmd = lane_command("tests/live/test_table_as_of.py::test_documented_table_command")
    t = next(x for x in primary.txns if x.committed and x.index > 3)
    subst = {"/backups/base-2026-11-20": str(primary.backup), "2026-11-27 14:02:59+01": t.time,
             "/archive/wal/": str(primary.archive)}
    tokens = shlex.split(cmd)
    assert tokens[0] == "waldecode" and tokens[-2] == ">"
    capsys.readouterr()
    assert main([subst.get(tok, tok) for tok in tokens[1:-2]]) == 0
    (tmp_path / tokens[-1]).write_bytes(capsys.readouterr().out.encode())
    expected = primary.recover(Target("time", t.time, False, t.index - 1))
    assert copy_lines((tmp_path / tokens[-1]).read_bytes()) == expected.lines
    assert expected.lines != copy_lines(t.rows)  # the transaction at that time is left out


def test_copy_escapes_as_the_server(primary):
    """The text and CSV escaping of the columns, against the server's own COPY of the same values
    (every ASCII character, quotes, delimiters, line breaks, the empty string, NULL, and ``\\.``)."""
    values = [None, "", "\\.", "plain", 'a,b', 'say "hi"', "x\ry", "tab\there", "é ü 中"] + \
        [f"<{chr(c)}>" for c in range(1, 128)]
    conn = primary.conn
    for fmt, escape in (("text", copy_text), ("csv", lambda v: copy_csv(v, True))):
        with conn.cursor() as cur:
            with cur.copy(f"COPY (SELECT v FROM unnest(%s::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n) "
                          f"TO STDOUT (FORMAT {fmt})", (values,)) as cp:
                server = b"".join(bytes(b) for b in cp)
        assert server == "".join(escape(v) + "\n" for v in values).encode(), fmt
    # two columns: ``\\.`` needs no quotes when it is not alone on its line
    with conn.cursor() as cur:
        with cur.copy("COPY (SELECT '\\.', 'x') TO STDOUT (FORMAT csv)") as cp:
            server = b"".join(bytes(b) for b in cp)
    assert server == (",".join(copy_csv(v, False) for v in ("\\.", "x")) + "\n").encode()
