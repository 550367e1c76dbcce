"""DDL inside a wal_level=replica range is followed as a logical slot follows it.

One initdb, one schema, a copy of the stopped data directory; the same deterministic workload of DDL
and DML runs from that copy at wal_level=logical under a test_decoding slot (the truth) and at
wal_level=replica.  The replica WAL, decoded with the catalog snapshot taken before both runs (the
catalog then followed through the redone catalog pages, docs/replica.md "DDL"), must give the slot's
lines transaction by transaction: ADD, DROP and RENAME COLUMN, ALTER COLUMN TYPE with a rewrite,
CREATE and DROP TABLE, TRUNCATE (told from the new relfilenode, no XLOG_HEAP_TRUNCATE below logical),
VACUUM FULL, CREATE INDEX, a rename, a change of replica identity, and DDL with DML before and after it
in one transaction.  The comparison can fail: with the TRUNCATE rule turned off, or with a change
inside a DDL transaction shown the catalog before the transaction's own catalog rows, it differs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from waldecode.errors import DecodeError, format_lsn
from waldecode.logical import replica_ddl
from waldecode.logical.session import decode_wal
from waldecode.output.pgoutput import PgOutput
from waldecode.output.test_decoding import TestDecoding
from waldecode.rmgr.xlog import WAL_LEVEL_REPLICA

from replica_runs import pristine_cluster, start_at
from test_replica_decode import _transactions, _wal_run

pytestmark = [pytest.mark.server, pytest.mark.slow]

DB = "live"

SCHEMA = """
CREATE TABLE t_a (id int PRIMARY KEY, v text);
CREATE TABLE t_b (id int PRIMARY KEY, v text, w int);
CREATE TABLE t_trunc (id int PRIMARY KEY, v text);
CREATE TABLE t_vac (id int PRIMARY KEY, v text);
INSERT INTO t_a SELECT g, 'a' || g FROM generate_series(1, 20) g;
INSERT INTO t_b SELECT g, 'b' || g, g FROM generate_series(1, 20) g;
INSERT INTO t_trunc SELECT g, 't' || g FROM generate_series(1, 20) g;
INSERT INTO t_vac SELECT g, 'v' || g FROM generate_series(1, 50) g;
DELETE FROM t_vac WHERE id % 2 = 0;
CREATE TABLE t_serial (id serial PRIMARY KEY, v text);
INSERT INTO t_serial (v) VALUES ('s');
CREATE PUBLICATION p FOR ALL TABLES;
"""

# Each item one transaction; a list is one transaction of several statements
WORKLOAD = [
    "INSERT INTO t_a VALUES (101, 'before any DDL')",
    "ALTER TABLE t_a ADD COLUMN c int",
    ["INSERT INTO t_a VALUES (102, 'with c', 2)", "UPDATE t_a SET c = 5 WHERE id = 1"],
    "ALTER TABLE t_a RENAME COLUMN v TO vv",
    "UPDATE t_a SET vv = 'renamed' WHERE id = 2",
    "ALTER TABLE t_a DROP COLUMN c",
    ["INSERT INTO t_a VALUES (103, 'c dropped')", "DELETE FROM t_a WHERE id = 3"],
    "ALTER TABLE t_b ALTER COLUMN w TYPE bigint",  # a rewrite: a new relfilenode through a transient heap
    ["INSERT INTO t_b VALUES (100, 'big', 10000000000)", "UPDATE t_b SET v = 'after rewrite' WHERE id = 1"],
    "CREATE TABLE t_new (a int PRIMARY KEY, b text)",
    "INSERT INTO t_new VALUES (1, 'new table')",
    ["CREATE TABLE t_new2 (a int, b text)", "INSERT INTO t_new2 VALUES (1, 'created and filled')"],
    "DROP TABLE t_new2",
    "TRUNCATE t_trunc",
    "INSERT INTO t_trunc VALUES (101, 'after truncate')",
    ["INSERT INTO t_trunc VALUES (102, 'before truncate, same transaction')", "TRUNCATE t_trunc",
     "INSERT INTO t_trunc VALUES (103, 'after truncate, same transaction')"],
    # heap_truncate_one_rel: a table created, or given new storage, in the same transaction is truncated in
    # place (XLOG_SMGR_TRUNCATE, no catalog row)
    ["CREATE TABLE t_tmp (a int)", "INSERT INTO t_tmp VALUES (1)", "TRUNCATE t_tmp", "INSERT INTO t_tmp VALUES (2)"],
    ["TRUNCATE t_trunc", "INSERT INTO t_trunc VALUES (104, 'between')", "TRUNCATE t_trunc",
     "INSERT INTO t_trunc VALUES (105, 'after both')"],
    ["INSERT INTO t_trunc VALUES (106, 'before')", "SAVEPOINT s", "TRUNCATE t_trunc", "ROLLBACK TO SAVEPOINT s"],
    "VACUUM FULL t_vac",
    "UPDATE t_vac SET v = 'after vacuum full' WHERE id = 3",
    "CREATE INDEX t_a_vv ON t_a (vv)",
    "INSERT INTO t_a VALUES (104, 'indexed')",
    ["ALTER TABLE t_a ADD COLUMN d text DEFAULT 'dflt'", "INSERT INTO t_a VALUES (105, 'x', 'dd')",
     "UPDATE t_a SET d = 'u' WHERE id = 4"],
    ["INSERT INTO t_b VALUES (200, 'before DDL', 1)", "ALTER TABLE t_b ADD COLUMN z int",
     "INSERT INTO t_b VALUES (201, 'after DDL', 2, 3)", "ALTER TABLE t_b DROP COLUMN v",
     "UPDATE t_b SET z = 9 WHERE id = 200"],
    # a subtransaction's rows under its top-level transaction's DDL: its records do not name the top-level
    # transaction, its changes read the same under either catalog
    ["ALTER TABLE t_a ADD COLUMN e int", "SAVEPOINT s", "INSERT INTO t_a VALUES (106, 'in a subtransaction', 'd', 6)",
     "UPDATE t_a SET e = 7 WHERE id = 7", "RELEASE SAVEPOINT s"],
    ["CREATE TABLE t_sub (a int)", "SAVEPOINT s", "INSERT INTO t_sub VALUES (1)", "RELEASE SAVEPOINT s"],
    # two sessions: a transaction of the other commits between the DDL and the DML of this one (the other's
    # change of another table is not its subtransaction's), then this one
    ("interleaved", ["ALTER TABLE t_a ADD COLUMN f int"], ["INSERT INTO t_b VALUES (300, 3, 3)"],
     ["INSERT INTO t_a VALUES (107, 'after the other commit', 'd', 7, 8)"]),
    "ALTER TABLE t_b RENAME TO t_b2",
    "UPDATE t_b2 SET z = 10 WHERE id = 201",
    "ALTER TABLE t_a REPLICA IDENTITY FULL",
    "UPDATE t_a SET vv = 'full identity' WHERE id = 5",
    "DELETE FROM t_a WHERE id = 6",
]


# Transactions whose decoding the catalog rows of replica-level WAL cannot decide: (items, the error)
REFUSED = {
    # one TRUNCATE of two tables, or two TRUNCATE commands: no XLOG_HEAP_TRUNCATE tells
    "truncate_two": ([["TRUNCATE t_trunc, t_vac"]],
                     r"transaction \d+ gave table public\.t_trunc \(OID \d+\) new storage at [0-9A-F]+/[0-9A-F]+ and "
                     r"table public\.t_vac \(OID \d+\) at [0-9A-F]+/[0-9A-F]+ with no row change between"),
    # RESTART IDENTITY gives the table's sequence new storage too: like ALTER SEQUENCE ... RESTART after it
    "truncate_restart_identity": ([["TRUNCATE t_serial RESTART IDENTITY"]],
                                  r"transaction \d+ gave (table public\.t_serial|sequence t_serial_id_seq) \(OID \d+\) "
                                  r"new storage at [0-9A-F]+/[0-9A-F]+ and (table public\.t_serial|sequence "
                                  r"t_serial_id_seq) \(OID \d+\) at [0-9A-F]+/[0-9A-F]+ with no row change between"),
    # a table created in a transaction, truncated in a subtransaction of it: the subtransaction's catalog
    # rows do not name their top-level transaction
    "truncate_in_subxact": ([["CREATE TABLE t_tmp (a int)", "SAVEPOINT s", "TRUNCATE t_tmp", "RELEASE SAVEPOINT s"]],
                            r"the new storage of table t_tmp \(OID \d+\) by transaction \d+ at [0-9A-F]+/[0-9A-F]+ "
                            r"cannot be decoded: transaction \d+, still open, changed the relation's catalog rows"),
    # a subtransaction's update under its top-level transaction's change of replica identity: the old row
    # it logs depends on whether it is that transaction's subtransaction (FULL) or not (the key, unchanged)
    "subxact_identity": ([["ALTER TABLE t_a REPLICA IDENTITY FULL", "SAVEPOINT s",
                           "UPDATE t_a SET v = 'x' WHERE id = 1", "RELEASE SAVEPOINT s"]],
                         r"the row change of transaction \d+ at [0-9A-F]+/[0-9A-F]+ \(file \d+/\d+/\d+\) reads "
                         r"differently whether it is a subtransaction of transaction \d+, still open"),
}

# pgoutput hears catalog cache invalidations: the workload with each statement a transaction of its own (DML
# after DDL in one transaction is refused for it, and so is TRUNCATE: test_plugin_hearing_invalidations_...),
# without the transactions with a savepoint and without TRUNCATE
PGOUTPUT_WORKLOAD = [stmt for item in WORKLOAD if not isinstance(item, tuple)
                     if not (isinstance(item, list) and any("SAVEPOINT" in s for s in item))
                     for stmt in ([item] if isinstance(item, str) else item) if not stmt.startswith("TRUNCATE")]
PGOUTPUT_OPTIONS = {"proto_version": "1", "publication_names": "p"}


def run_workload(c) -> None:
    run_items(c, WORKLOAD)


def run_items(c, items) -> None:
    with c.connect(DB) as conn, c.connect(DB) as other:
        for item in items:
            if isinstance(item, tuple):  # ("interleaved", this transaction's first, other's, this one's last)
                _, first, others, last = item
                conn.execute("BEGIN")
                for stmt in first:
                    conn.execute(stmt)
                for stmt in others:
                    other.execute(stmt)
                for stmt in last:
                    conn.execute(stmt)
                conn.execute("COMMIT")
            elif isinstance(item, list):
                conn.execute("BEGIN")
                for stmt in item:
                    conn.execute(stmt)
                conn.execute("COMMIT")
            else:
                conn.execute(item)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replicaddl")
    with pristine_cluster(DB, SCHEMA) as (c, catalog, pristine):
        out = {"catalog": catalog}

        # the truth: wal_level=logical and a test_decoding slot created before the workload
        c.start()
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('truth', 'test_decoding')")
        run_workload(c)
        with c.connect(DB) as conn:
            rows = conn.execute("SELECT data FROM pg_logical_slot_peek_changes('truth', NULL, NULL)").fetchall()
            out["expected"] = [r[0] for r in rows]
            conn.execute("SELECT pg_drop_replication_slot('truth')")

        # the same from the same data directory at wal_level=replica
        start_at(c, pristine, wal_level="replica")
        out["replica_wal"], out["replica_end"] = _wal_run(c, tmp, "replica", lambda: run_workload(c))
        # pgoutput's truth, and its workload at replica level
        start_at(c, pristine, wal_level="logical")
        with c.connect(DB) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot('truth_pgoutput', 'pgoutput')")
        run_items(c, PGOUTPUT_WORKLOAD)
        with c.connect(DB) as conn:
            args = [x for kv in PGOUTPUT_OPTIONS.items() for x in kv]
            rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('truth_pgoutput', NULL, NULL"
                                + ", %s" * len(args) + ")", args).fetchall()
            out["pgoutput_expected"] = [bytes(r[0]) for r in rows]
            conn.execute("SELECT pg_drop_replication_slot('truth_pgoutput')")
        start_at(c, pristine, wal_level="replica")
        out["pgoutput_wal"] = _wal_run(c, tmp, "pgoutput", lambda: run_items(c, PGOUTPUT_WORKLOAD))
        # what the rule cannot decide, each from the pristine copy at wal_level=replica
        for name, (work, _error) in REFUSED.items():
            start_at(c, pristine, wal_level="replica")
            out[name] = _wal_run(c, tmp, name, lambda work=work: run_items(c, work))
        yield out


def _decode(runs, tmp_path):
    got: list[str] = []
    result = decode_wal([runs["replica_wal"]], runs["catalog"], TestDecoding(got.append),
                        end_lsn=runs["replica_end"], spill_dir=str(tmp_path))
    return got, result


def test_replica_ddl_decodes_as_the_logical_slot(runs, tmp_path):
    expected = runs["expected"]
    got, result = _decode(runs, tmp_path)
    assert result.replica.wal_level == WAL_LEVEL_REPLICA, result.replica
    # one note: the TRUNCATE flags replica-level WAL does not record (said once, at the first TRUNCATE)
    assert result.not_decoded == [] and len(result.warnings) == 1, (result.not_decoded, result.warnings)
    assert "without its CASCADE and RESTART IDENTITY flags" in result.warnings[0], result.warnings
    assert not result.warnings[0].lacks
    text = "\n".join(expected)
    # the workload is what the test claims
    for needle in ("table public.t_a: UPDATE: id[integer]:1 v[text]:'a1' c[integer]:5",
                   "table public.t_a: UPDATE: id[integer]:2 vv[text]:'renamed'",
                   "table public.t_b: INSERT: id[integer]:100 v[text]:'big' w[bigint]:10000000000",
                   "table public.t_new2: INSERT: a[integer]:1",
                   "table public.t_trunc: TRUNCATE: (no-flags)",
                   "table public.t_tmp: INSERT: a[integer]:1\ntable public.t_tmp: TRUNCATE: (no-flags)\n"
                   "table public.t_tmp: INSERT: a[integer]:2",
                   "table public.t_trunc: INSERT: id[integer]:104 v[text]:'between'\ntable public.t_trunc: TRUNCATE: "
                   "(no-flags)\ntable public.t_trunc: INSERT: id[integer]:105",
                   "table public.t_vac: UPDATE: id[integer]:3 v[text]:'after vacuum full'",
                   "table public.t_a: INSERT: id[integer]:105 vv[text]:'x' d[text]:'dd'",
                   "table public.t_b: INSERT: id[integer]:200 v[text]:'before DDL' w[bigint]:1",
                   "table public.t_b: INSERT: id[integer]:201 v[text]:'after DDL' w[bigint]:2 z[integer]:3",
                   "table public.t_b2: UPDATE: id[integer]:201 w[bigint]:2 z[integer]:10",
                   "table public.t_a: UPDATE: old-key: id[integer]:5",
                   "table public.t_a: INSERT: id[integer]:106 vv[text]:'in a subtransaction' d[text]:'d' e[integer]:6",
                   "table public.t_sub: INSERT: a[integer]:1",
                   "table public.t_b: INSERT: id[integer]:300 w[bigint]:3 z[integer]:3",
                   "table public.t_a: INSERT: id[integer]:107 vv[text]:'after the other commit' d[text]:'d' "
                   "e[integer]:7 f[integer]:8"):
        assert needle in text, needle
    for i, (g, e) in enumerate(zip(_transactions(got), _transactions(expected))):
        assert g == e, f"transaction {i} differs"
    assert got == expected


# (ReplicaCatalog attribute, its replacement, what the decoding then does: None, other lines than the slot's;
# else the error it stops with)
MUTATIONS = {
    # the TRUNCATE rule off: a new relfilenode without a transient heap prints nothing
    "no_truncate": ("truncate_changes", lambda self, rec: [], None),
    # a change inside a DDL transaction shown the committed catalog only, not its transaction's own rows: the
    # INSERT into a table created in its transaction is lost, and the one between two TRUNCATEs of a table
    # given new storage in it is not seen
    "committed_only": ("view", lambda self, rec: self.history.view(rec.lsn, 0),
                       r"transaction \d+ gave table public\.t_trunc \(OID \d+\) new storage at [0-9A-F]+/[0-9A-F]+ "
                       r"and table public\.t_trunc \(OID \d+\) at [0-9A-F]+/[0-9A-F]+ with no row change between"),
    # a subtransaction's change read under its own catalog only, never its top-level transaction's
    "own_catalog_only": ("catalogs", lambda self, rec, blk, natts: [(rec.xl_xid, self.view(rec))],
                         r"cannot read a row of public\.t_a from its page: tuple has 5 attributes but its relation "
                         r"has only 4"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_wrong_rule_fails_the_comparison(runs, tmp_path, monkeypatch, mutation):
    """The comparison can fail: another TRUNCATE rule, or another catalog for a DDL transaction's changes."""
    attribute, replacement, error = MUTATIONS[mutation]
    monkeypatch.setattr(replica_ddl.ReplicaCatalog, attribute, replacement)
    if error is not None:
        with pytest.raises(DecodeError, match=error):
            _decode(runs, tmp_path)
        return
    got, _result = _decode(runs, tmp_path)
    assert got != runs["expected"]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_rule_cannot_decide_is_named(runs, tmp_path, case):
    wal, end = runs[case]
    with pytest.raises(DecodeError, match=REFUSED[case][1]):
        decode_wal([wal], runs["catalog"], TestDecoding(lambda line: None), end_lsn=end, spill_dir=str(tmp_path))


def test_pgoutput_on_replica_ddl_as_the_logical_slot(runs, tmp_path):
    """pgoutput, which hears invalidations, on DDL in transactions of its own: the messages of a pgoutput
    slot on the same workload at logical level (RELATION messages again after each DDL), byte for byte."""
    wal, end = runs["pgoutput_wal"]
    got: list[bytes] = []
    result = decode_wal([wal], runs["catalog"], PgOutput(lambda m: got.append(m.encode("utf-8", "surrogateescape"))),
                        plugin_options=PGOUTPUT_OPTIONS, end_lsn=end, spill_dir=str(tmp_path))
    assert result.warnings == [] and result.not_decoded == [], (result.warnings, result.not_decoded)
    expected = [_without_positions(m) for m in runs["pgoutput_expected"]]
    got = [_without_positions(m) for m in got]
    assert sum(m[:1] == b"R" for m in expected) > 5, "RELATION messages after the DDL"
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"message {i} differs"
    assert got == expected


def _without_positions(message: bytes) -> bytes:
    """A pgoutput message with the LSNs and times of BEGIN and COMMIT zeroed (proto.c logicalrep_write_begin:
    final LSN, commit time, xid; logicalrep_write_commit: flags, commit LSN, end LSN, commit time): the
    two runs wrote the same transactions at other positions and times."""
    if message[:1] == b"B":
        return b"B" + bytes(16) + message[17:]
    if message[:1] == b"C":
        return message[:2] + bytes(24) + message[26:]
    return message


def test_plugin_hearing_invalidations_refuses_dml_after_ddl_in_one_transaction(runs, tmp_path):
    """pgoutput hears a DDL command's invalidations before the transaction's next change at logical level
    (XLOG_XACT_INVALIDATIONS); replica level logs them only in the commit: such a transaction is refused."""
    with pytest.raises(DecodeError, match=r"transaction \d+ changed a row of public\.t_new2 at [0-9A-F]+/[0-9A-F]+ "
                                          r"after changing the catalog at [0-9A-F]+/[0-9A-F]+: the output plugin "
                                          r"hears catalog cache invalidations"):
        decode_wal([runs["replica_wal"]], runs["catalog"], PgOutput(lambda m: None),
                   plugin_options={"proto_version": "1", "publication_names": "p"}, end_lsn=runs["replica_end"],
                   spill_dir=str(tmp_path))


def test_plugin_hearing_invalidations_refuses_truncate(runs, tmp_path):
    """pgoutput hears a TRUNCATE's invalidations before it at logical level (R before T): refused."""
    wal, end = runs["truncate_two"]
    with pytest.raises(DecodeError, match=r"transaction \d+ truncated public\.t_trunc at [0-9A-F]+/[0-9A-F]+: the "
                                          r"output plugin hears catalog cache invalidations"):
        decode_wal([wal], runs["catalog"], PgOutput(lambda m: None), plugin_options=PGOUTPUT_OPTIONS, end_lsn=end,
                   spill_dir=str(tmp_path))


def test_without_a_catalog_history_ddl_is_refused(runs, tmp_path):
    """Without the catalog history (``catalog_history=False``: the snapshot's catalog alone) the first
    commit of DDL is refused, naming the transaction, its commit and the catalog it changed."""
    with pytest.raises(DecodeError, match=r"transaction \d+, committed at [0-9A-F]+/[0-9A-F]+, changed the catalog "
                                          r"pg_catalog\.pg_\w+ at [0-9A-F]+/[0-9A-F]+: DDL inside a wal_level=replica "
                                          r"range is followed only through the catalog history"):
        decode_wal([runs["replica_wal"]], runs["catalog"], TestDecoding(lambda line: None), end_lsn=runs["replica_end"],
                   spill_dir=str(tmp_path), catalog_history=False)


def test_decode_command_on_replica_ddl(runs, tmp_path):
    """``waldecode decode --catalog FILE WALDIR``: the slot's lines on standard output, exit status 0, and one
    note that TRUNCATE is decoded without its flags; and a range the rules cannot decide is one error line
    on standard error, exit status 1."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(runs["catalog"].to_json())

    def decode(wal, end):
        return subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog),
                               "--end-lsn", format_lsn(end), str(wal)], capture_output=True, text=True, timeout=600)

    proc = decode(runs["replica_wal"], runs["replica_end"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == runs["expected"]
    # the TRUNCATE flags replica-level WAL does not record: said once, at the first TRUNCATE, as a note (exit 0)
    said = [line for line in proc.stderr.splitlines() if "without its CASCADE and RESTART IDENTITY flags" in line]
    assert said and "TRUNCATE of public.t_trunc" in said[0], proc.stderr
    assert "note: 1 note(s) of 1 cause(s)" in proc.stderr, proc.stderr
    proc = decode(*runs["truncate_two"])
    assert proc.returncode == 1 and re.search(REFUSED["truncate_two"][1], proc.stderr), proc.stderr
    # one error line (after the note of the first table's TRUNCATE, decoded before the second was seen)
    assert len([line for line in proc.stderr.splitlines() if "note:" not in line]) == 1, proc.stderr
