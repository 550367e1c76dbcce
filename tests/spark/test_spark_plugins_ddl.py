"""``spark decode`` with pgoutput and wal2json through catalog and publication changes: the server's bytes.

A throw-away PostgreSQL 15 (1 MB segments) runs row changes with DDL every few hundred kB:
ADD/DROP/RENAME COLUMN, ALTER COLUMN TYPE with a rewrite, CREATE/DROP TABLE, TRUNCATE, VACUUM FULL
of a user table and of pg_class, CREATE/DROP PUBLICATION and ALTER PUBLICATION ADD/DROP TABLE, a
transaction open across DDL commits, DDL with rows, a message and a rolled-back savepoint in one
transaction, and prepared transactions (one with DDL of its own) committed, rolled back and left
open.  Slots made after one catalog snapshot, before the workload: pgoutput (not two-phase, peeked
with protocols 1 and 2; one peeked with ``two_phase`` on; one made two-phase), wal2json and
test_decoding.  ``spark decode`` through the range path must write each server's messages, each
followed by a newline as ``pg_recvlogical -f`` writes them: pgoutput as one output range, wal2json
format 2 over 7 ranges and format 1 (whose output depends on the transaction before) over one,
one segment per task; test_decoding on ``local[1]`` in a process of its own (the lane's ``spark``
fixture keeps a ``local[2]`` session active in this one, which an in-process run would reuse).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddl_workload import TABLES, prepare
from live import DB, live_cluster

pytestmark = [pytest.mark.server, pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(not Path("/usr/lib/postgresql/15/lib/wal2json.so").exists(),
                                 reason="wal2json for PostgreSQL 15 is not installed (./dev test installs it)")]

SCHEMA = TABLES + """
CREATE PUBLICATION p_all FOR ALL TABLES;
CREATE PUBLICATION p_some FOR TABLE acct, pt;
"""

# One DDL statement after each stretch of row changes (_filler); what else happens after some is in _workload
DDL = [
    "ALTER TABLE hist ADD COLUMN extra text DEFAULT 'x'",
    "ALTER PUBLICATION p_some ADD TABLE hist",
    "ALTER TABLE hist RENAME COLUMN note TO remark",
    "CREATE PUBLICATION p_new FOR TABLE keep, hist",  # named by no slot's options: the publications reload
    "ALTER TABLE hist ALTER COLUMN delta TYPE float8",  # rewrites the table
    "CREATE TABLE later (id int PRIMARY KEY, v text)",
    "ALTER PUBLICATION p_some ADD TABLE later",
    "VACUUM FULL keep",
    "VACUUM FULL pg_class",
    "ALTER PUBLICATION p_some DROP TABLE hist",
    "ALTER TABLE acct DROP COLUMN owner",
    "TRUNCATE later",
    "DROP PUBLICATION p_new",
    "DROP TABLE later",
]

# name: (slot, plugin, the slot's two_phase, options, output ranges)
CASES = {
    "pgoutput-proto1": ("pgo", "pgoutput", False, {"proto_version": "1", "publication_names": "p_some"}, 1),
    "pgoutput-proto2-binary": ("pgo", "pgoutput", False, {"proto_version": "2", "publication_names": "p_all",
                                                          "binary": "true", "messages": "true"}, 1),
    # two_phase on in the options marks the slot two-phase from then on (CreateDecodingContext): a slot of its own
    "pgoutput-proto3-two_phase-option": ("pgo_opt", "pgoutput", False, {"proto_version": "3",
                                                                       "publication_names": "p_some",
                                                                       "two_phase": "on"}, 1),
    "pgoutput-proto3-two-phase-slot": ("pgo_tp", "pgoutput", True, {"proto_version": "3",
                                                                   "publication_names": "p_some,p_all",
                                                                   "messages": "true"}, 1),
    "wal2json-format2": ("w2j", "wal2json", False, {"format-version": "2", "include-xids": "1", "include-lsn": "1",
                                                    "include-pk": "1"}, 7),
    "wal2json-format1": ("w2j", "wal2json", False, {"include-xids": "1", "include-lsn": "1",
                                                    "include-typmod": "0"}, 1),
    "test_decoding-local1": ("td", "test_decoding", False, {}, 3),
}


def _filler(conn, n: int, batch: int = 300) -> None:
    """About n * 330 bytes of WAL: inserts, updates and deletes in committed transactions of ``batch`` rows."""
    for i in range(0, n, batch):
        conn.execute("INSERT INTO hist (acct, delta) SELECT g %% 500 + 1, g FROM generate_series(%s::int, %s::int) g",
                     (i, i + batch - 1))
        conn.execute("UPDATE keep SET v = v || '.' WHERE id = %s", (i // batch % 200 + 1,))
        conn.execute("UPDATE acct SET balance = balance + 1 WHERE id = %s", (i // batch % 500 + 1,))
        conn.execute("DELETE FROM hist WHERE id = (SELECT min(id) FROM hist)")


def _workload(c) -> None:
    with c.connect(DB) as conn, c.connect(DB, autocommit=False) as long_txn:
        long_txn.execute("INSERT INTO keep VALUES (1000, 'before the first DDL')")
        # prepared across segments and DDL commits, with DDL of its own
        prepare(c, "across", ["INSERT INTO pt VALUES (1, 'prepared early')",
                               "ALTER TABLE pt ADD COLUMN w int DEFAULT 7",
                               "INSERT INTO pt VALUES (2, 'after its own DDL', 8)"])
        for i, ddl in enumerate(DDL):
            _filler(conn, 2000)
            conn.execute(ddl)
            if i == 2:
                conn.execute("COMMIT PREPARED 'across'")
                long_txn.execute("INSERT INTO keep VALUES (1001, 'after three DDL')")
                long_txn.commit()
                # A server decoding 'rolled' at PREPARE after its ROLLBACK PREPARED (a peek at the end) stops
                # at its first catalog lookup (a concurrent abort), which depends on the server's caches
                # rather than on the WAL; a committed change first rebuilds pt's caches after across's DDL,
                # so that the server decodes 'rolled' as a subscriber streaming at the time would have
                conn.execute("INSERT INTO pt VALUES (100, 'committed between the prepared ones', 1)")
                prepare(c, "rolled", ["INSERT INTO pt VALUES (3, 'prepared, rolled back', 9)"])
            if i == 4:
                conn.execute("BEGIN")
                conn.execute("ALTER TABLE acct ADD COLUMN c int DEFAULT 4")
                conn.execute("UPDATE acct SET c = c + 1 WHERE id <= 3")
                conn.execute("SELECT pg_logical_emit_message(true, 'pfx', 'in the DDL transaction')")
                conn.execute("SAVEPOINT s")
                conn.execute("UPDATE acct SET balance = -1")
                conn.execute("ROLLBACK TO SAVEPOINT s")
                conn.execute("INSERT INTO keep VALUES (2000, 'in the DDL transaction')")
                conn.execute("COMMIT")
                conn.execute("SELECT pg_logical_emit_message(false, 'pfx', 'not transactional')")
            if i in (5, 6, 11):
                conn.execute("INSERT INTO later VALUES (%s, %s)", (i, f"into later after DDL {i}"))
            if i == 8:
                conn.execute("ROLLBACK PREPARED 'rolled'")
                prepare(c, "open", ["INSERT INTO pt VALUES (4, 'still prepared at the end', 10)"])
        _filler(conn, 600)


def _peek(conn, slot: str, end_lsn: str, options: dict) -> list[bytes]:
    args = [x for kv in options.items() for x in kv]
    rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL"
                        + ", %s" * len(args) + ")", (slot, end_lsn, *args)).fetchall()
    return [bytes(r[0]) for r in rows]


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    """The WAL (a copy, as an archive holds it), the catalog snapshot file, the end LSN, and per case its
    slot's confirmed_flush_lsn and the server's messages."""
    from waldecode.catalog.dsn import snapshot_from_connection

    tmp = tmp_path_factory.mktemp("spark-plugins-ddl")
    slots = {name: (plugin, two_phase) for name, plugin, two_phase, _o, _r in CASES.values()}
    with live_cluster(SCHEMA, lock_timeout="20s", max_prepared_transactions=5) as c:
        with c.connect(DB) as conn:
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            for name, (plugin, two_phase) in slots.items():
                conn.execute("SELECT pg_create_logical_replication_slot(%s, %s, false, %s)", (name, plugin, two_phase))
            found = {r[0]: r[1:] for r in conn.execute(
                "SELECT slot_name, restart_lsn::text, confirmed_flush_lsn::text, "
                "pg_walfile_name(restart_lsn) FROM pg_replication_slots").fetchall()}
        _workload(c)
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            # the slots are peeked, never advanced: each case sees the whole workload
            expected = {case: _peek(conn, slot, end_lsn, options)
                        for case, (slot, _p, _t, options, _r) in CASES.items()}
        wal = c.archive_wal(tmp / "wal", min(f[2] for f in found.values()))
        c.sql("ROLLBACK PREPARED 'open'", dbname=DB)
    catalog_path = tmp / "catalog.json"
    catalog_path.write_text(catalog.to_json())
    return {"wal": wal, "catalog": catalog_path, "end_lsn": end_lsn,
            "confirmed": {case: found[slot][1] for case, (slot, *_rest) in CASES.items()},
            "expected": expected}


def _args(w, case: str, out: Path, timings: Path) -> list[str]:
    _slot, plugin, two_phase, options, ranges = CASES[case]
    return (["--format", plugin, *[a for k, v in options.items() for a in ("-o", f"{k}={v}")],
             "--catalog", str(w["catalog"]), "--start-lsn", w["confirmed"][case], "--end-lsn", w["end_lsn"],
             "--segments-per-task", "1", "--output", str(out), "--timings", str(timings)]
            + (["--ranges", str(ranges)] if plugin != "pgoutput" else [])  # pgoutput: one range, the default
            + (["--two-phase"] if two_phase else []) + [str(w["wal"])])


def _same(got: bytes, messages: list[bytes]) -> None:
    """Byte equality with the server's messages (each and a newline), failing with the first message that
    differs and ours at the same place."""
    expected = b"".join(m + b"\n" for m in messages)
    if got == expected:
        return
    at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    start = 0
    for n, m in enumerate(messages):
        if at < start + len(m) + 1:
            pytest.fail(f"{len(got)} bytes, the server's {len(expected)}; first difference at byte {at}, in the "
                        f"server's message {n + 1} of {len(messages)}:\n server: {m[:400]!r}\n ours:   "
                        f"{got[start:start + len(m) + 1][:400]!r}")
        start += len(m) + 1
    pytest.fail(f"{len(got)} bytes, the server's {len(expected)}: ours go on after its last message with "
                f"{got[len(expected):len(expected) + 400]!r}")


def _kinds(messages) -> set:
    return {m[:1] for m in messages}


def test_workload_changes_catalog_and_publications_across_segments(workload):
    """What the cases below decode through: many segments, the publication changes and every prepared
    transaction seen by the server's plugins."""
    ex = workload["expected"]
    assert len(list(workload["wal"].iterdir())) >= 6
    assert all(ex[case] for case in CASES)
    # proto 1, p_some: hist's rows only while it was in p_some (its name in Relation messages, a NUL after)
    hist_rels = [m for m in ex["pgoutput-proto1"] if m[:1] == b"R" and b"\x00hist\x00" in m]
    assert hist_rels and any(b"remark\x00" in m for m in hist_rels)
    assert any(m[:1] == b"T" for m in ex["pgoutput-proto1"])  # TRUNCATE later, added to p_some
    assert any(b"\x00later\x00" in m for m in ex["pgoutput-proto1"])
    assert b"M" in _kinds(ex["pgoutput-proto2-binary"])
    # decoded at PREPARE (Begin Prepare, Prepare, Commit and Rollback Prepared) only where two-phase is on
    two_phase_kinds = {b"b", b"P", b"K", b"r"}
    assert two_phase_kinds <= _kinds(ex["pgoutput-proto3-two_phase-option"])
    assert two_phase_kinds <= _kinds(ex["pgoutput-proto3-two-phase-slot"])
    assert not two_phase_kinds & _kinds(ex["pgoutput-proto1"])
    # the rolled-back prepared transaction's row, decoded at its PREPARE
    assert any(m[:1] == b"I" and b"prepared, rolled back" in m for m in ex["pgoutput-proto3-two-phase-slot"])
    text = b"\n".join(ex["wal2json-format2"])
    assert b'"remark"' in text and b"after its own DDL" in text and b"still prepared" not in text
    assert b'"action":"T"' in text and b'"action":"M"' in text
    td = b"\n".join(ex["test_decoding-local1"])
    assert b"extra[text]:'x'" in td and b"in the DDL transaction" in td


# pgoutput's Relation messages follow the invalidations PostgreSQL 15.13+ distributes into the transactions
# open across a catalog change (SnapBuildDistributeSnapshotAndInval), which the decoder hands to the plugin
# where the server executes them: tests/live/test_pgoutput_distributed_invals.py pins the rule itself.
@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("test_decoding")])
def test_spark_decode_equals_server(spark, workload, case, tmp_path, capfd):
    from waldecode.cli import main

    out, timings = tmp_path / "spark.out", tmp_path / "timings.json"
    status = main(["spark", "decode", "--master", "local[2]", *_args(workload, case, out, timings)])
    err = capfd.readouterr().err
    assert status == 0, err
    assert "event path" not in err, err  # the note spark decode gives when it leaves the range path
    assert json.loads(timings.read_text())["method"] == "ranges"
    _same(out.read_bytes(), workload["expected"][case])


def test_test_decoding_on_local1_equals_server(workload, tmp_path):
    """``local[1]``: one core runs every task, phase 1's and the ranges', in turn."""
    pytest.importorskip("pyspark")
    from waldecode import _impl

    case = "test_decoding-local1"
    out, timings = tmp_path / "spark.out", tmp_path / "timings.json"
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "decode", "--master", "local[1]",
                           *_args(workload, case, out, timings)],
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable, WALDECODE_IMPL=_impl.IMPL),
                          capture_output=True, timeout=600)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    assert "event path" not in err, err[-3000:]
    doc = json.loads(timings.read_text())
    assert (doc["method"], doc["cores"], doc["ranges"]) == ("ranges", 1, 3)
    _same(out.read_bytes(), workload["expected"][case])
