"""``waldecode table`` against PostgreSQL 16's and 18's own point-in-time recovery (issue 23).

The workload of tests/live/test_table_as_of.py (tests/support/table_workload.py: TOAST, HOT chains
and pruning, multixacts, VACUUM and VACUUM FREEZE, a rewrite, VACUUM FULL, a TRUNCATE) runs on a
primary of each version the machine has (16 and 18: the bundled servers); 16 writes the pruning
and freezing records of 14-16 (PRUNE, VACUUM, FREEZE_PAGE with freeze plans), 18 those of 17+
(PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN, PRUNE_VACUUM_CLEANUP) and initdb turns data checksums on (hint
bits WAL-logged).  Lighter than the PostgreSQL 15 test: a dozen targets spread over the workload,
each kind and inclusive setting among them, every one recovered by the server and read by waldecode,
the rows equal as multisets of COPY lines.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from pitr import DB, PitrPrimary, copy_lines  # noqa: E402
from table_workload import SCHEMA, workload  # noqa: E402
from waldecode.cli import main  # noqa: E402
from waldecode.pg.lsn import format_lsn  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

#: (kind, inclusive) in turn over the chosen transactions: every kind with both settings
_ROTATION = [("lsn", True), ("time", False), ("xid", True), ("lsn", False), ("time", True), ("xid", False)]


@pytest.fixture(scope="module", params=[16, 18], ids=lambda m: f"pg{m}")
def primary(request):
    with PitrPrimary(SCHEMA, "orders", major=request.param) as p:
        workload(p)
        p.finish()
        yield p


def _chosen(p: PitrPrimary, n: int = 12) -> list:
    """About ``n`` targets at committed transactions spread evenly over the workload, the kind and
    inclusive setting taking turns (``PitrPrimary.targets`` gives each its expected rows)."""
    committed = [t for t in p.txns if t.committed]
    picks = dict.fromkeys(committed[round(i * (len(committed) - 1) / (n - 1))].index for i in range(n))
    targets = p.targets()
    out = []
    for i, index in enumerate(picks):
        txn = p.txns[index]
        value = {"lsn": format_lsn(txn.lsn), "time": txn.time, "xid": str(txn.xid)}
        kind, inclusive = _ROTATION[i % len(_ROTATION)]
        # a time target inclusive on is reached only at a later transaction's end: not at the last one
        fits = [t for t in targets if t.value == value[t.kind] and t.inclusive == inclusive]
        out.append(next((t for t in fits if t.kind == kind), None) or next(t for t in fits if t.kind == "xid"))
    return out


def test_rows_at_targets_equal_point_in_time_recovery(primary, capsys):
    chosen = _chosen(primary)
    wrong, report, counts = [], [], set()
    for target in chosen:
        got = primary.recover(target)
        assert got.lines == copy_lines(primary.rows_after(target.last_included)), \
            f"the oracle disagrees with the primary at {target}"
        capsys.readouterr()
        status = main(["table", "--backup", str(primary.backup), "--table", "public.orders", "--at", target.value,
                       "--inclusive", "on" if target.inclusive else "off", "--database", DB,
                       str(primary.archive)])
        out = capsys.readouterr()
        mine = copy_lines(out.out.encode())
        counts.add(len(mine))
        report.append(f"{target}: {len(mine)} rows, recovery {len(got.lines)} ({got.stopping})")
        if status != 0 or mine != got.lines:
            wrong.append(f"{target}: status {status} {out.err.strip()}; {len(mine)} rows, recovery "
                         f"{len(got.lines)}: only waldecode {sorted(set(mine) - set(got.lines))[:3]}, "
                         f"only recovery {sorted(set(got.lines) - set(mine))[:3]}")
    print(f"PostgreSQL {primary.cluster.version}:\n" + "\n".join(report))
    assert wrong == [], "\n".join(wrong)
    assert len(chosen) >= 10
    assert {(t.kind, t.inclusive) for t in chosen} == set(_ROTATION)
    # spread: from the first transactions to after the TRUNCATE (the last three)
    assert min(t.last_included for t in chosen) <= 1 and max(t.last_included for t in chosen) >= \
        len(primary.txns) - 3
    assert len(counts) >= 5, counts
