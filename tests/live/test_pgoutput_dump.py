"""``waldecode pgoutput-dump`` on what pg_recvlogical writes for a real PostgreSQL 15 pgoutput slot.

A workload of known transactions (their xids taken from the server's txid_current()) runs
against a pgoutput slot; ``pg_recvlogical -f FILE`` writes the stream with proto_version 1
(plain), 2 (streaming=on, a transaction larger than logical_decoding_work_mem) and 3
(two_phase); every message read back is checked against what the workload did.  A stream cut
short or damaged is an error naming the offset.
"""

from __future__ import annotations

import io

import pytest

from live import DB, live_cluster

from waldecode import cli
from waldecode.output.pgoutput_dump import UNCHANGED, PgoutputStreamError, dump, read_messages
from waldecode.pg.lsn import parse_lsn

pytestmark = pytest.mark.slow

SCHEMA = """
CREATE TABLE t1 (id int PRIMARY KEY, v text, big text);
CREATE TABLE t2 (id int PRIMARY KEY, n numeric);
ALTER TABLE t2 REPLICA IDENTITY FULL;
CREATE PUBLICATION pub FOR TABLE t1, t2;
CREATE TABLE unpublished (id int);
"""


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, logical_decoding_work_mem="64kB") as c:
        yield c


def _xid(conn) -> int:
    return conn.execute("SELECT txid_current() % 4294967296").fetchone()[0]


def _record(cluster, slot: str, proto: int, options: dict, two_phase: bool = False) -> bytes:
    """pg_recvlogical -f FILE on ``slot`` up to the current end of WAL: the bytes it wrote."""
    with cluster.connect(DB) as conn:
        end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
    out = cluster.base / f"{slot}.bin"
    args = ["-h", str(cluster.socket_dir), "-p", str(cluster.port), "-U", "postgres", "-d", DB, "-S", slot,
            "--start", "--no-loop", "-E", end, "-f", str(out), "-o", f"proto_version={proto}",
            "-o", "publication_names=pub"]
    for k, v in options.items():
        args += ["-o", f"{k}={v}"]
    cluster.run_bin("pg_recvlogical", *args, timeout=120)
    return out.read_bytes()


def _by_name(messages):
    return [m.name for m in messages]


def _transactions(messages):
    """BEGIN..COMMIT groups (non-streamed, non-prepared)."""
    out, cur = [], None
    for m in messages:
        if m.name == "BEGIN":
            cur = [m]
        elif cur is not None:
            cur.append(m)
            if m.name == "COMMIT":
                out.append(cur)
                cur = None
    return out


def test_proto1_plain_workload(cluster, tmp_path):
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_create_logical_replication_slot('dump1', 'pgoutput')")
        oids = dict(conn.execute("SELECT relname, oid FROM pg_class WHERE relname IN ('t1', 't2')").fetchall())
    xids = []
    with cluster.connect(DB, autocommit=False) as conn:
        xids.append(_xid(conn))
        # md5 text does not compress below the TOAST threshold: stored out of line
        conn.execute("INSERT INTO t1 VALUES (1, 'one', NULL), (3, NULL, NULL), "
                     "(2, 'two', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g))")
        big = conn.execute("SELECT big FROM t1 WHERE id = 2").fetchone()[0]
        conn.execute("INSERT INTO t2 VALUES (10, 1.5), (11, -2)")
        conn.commit()
        xids.append(_xid(conn))
        conn.execute("UPDATE t1 SET v = 'uno' WHERE id = 1")
        conn.execute("UPDATE t1 SET v = 'dos' WHERE id = 2")  # big stays TOASTed and unchanged
        conn.execute("DELETE FROM t2 WHERE id = 11")
        conn.execute("SELECT pg_logical_emit_message(true, 'pfx', 'in txn')")
        conn.commit()
        xids.append(_xid(conn))
        conn.execute("TRUNCATE t2")
        conn.commit()
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_logical_emit_message(false, 'solo', 'outside')")
    data = _record(cluster, "dump1", 1, {"messages": "true"})
    msgs = list(read_messages(data, streaming="off"))
    txns = _transactions(msgs)
    assert [t[0].fields["xid"] for t in txns] == xids
    for t in txns:
        begin, commit = t[0], t[-1]
        assert commit.fields["commit_lsn"] == begin.fields["final_lsn"]
        assert commit.fields["end_lsn"] > commit.fields["commit_lsn"]
        assert commit.fields["commit_time"] == begin.fields["commit_time"]
    # transaction 1: relation messages then the inserts, in order
    t1 = txns[0]
    assert _by_name(t1) == ["BEGIN", "RELATION", "INSERT", "INSERT", "INSERT", "RELATION", "INSERT", "INSERT",
                            "COMMIT"]
    rel1, rel2 = t1[1].fields, t1[5].fields
    assert (rel1["nspname"], rel1["relname"], rel1["relid"], rel1["replident"]) == ("public", "t1", oids["t1"], "d")
    assert [c["name"] for c in rel1["columns"]] == ["id", "v", "big"]
    assert [c["flags"] for c in rel1["columns"]] == [1, 0, 0]
    assert [c["typid"] for c in rel1["columns"]] == [23, 25, 25]
    assert (rel2["relname"], rel2["replident"]) == ("t2", "f")
    assert [m.fields["new"] for m in t1[2:5]] == [["1", "one", None], ["3", None, None], ["2", "two", big]]
    assert [m.fields["new"] for m in t1[6:8]] == [["10", "1.5"], ["11", "-2"]]
    # transaction 2: updates (unchanged TOAST marked), a full-identity delete, a message
    t2 = txns[1]
    assert _by_name(t2) == ["BEGIN", "UPDATE", "UPDATE", "DELETE", "MESSAGE", "COMMIT"]
    assert t2[1].fields["new"] == ["1", "uno", None] and "old" not in t2[1].fields
    assert t2[2].fields["new"] == ["2", "dos", UNCHANGED]
    assert t2[3].fields["old_kind"] == "O" and t2[3].fields["old"] == ["11", "-2"]
    assert t2[4].fields["transactional"] is True
    assert (t2[4].fields["prefix"], t2[4].fields["content"]) == ("pfx", b"in txn")
    # transaction 3: the truncate
    t3 = txns[2]
    # (the truncate invalidated t2's cache entry: its Relation message is sent again first)
    assert _by_name(t3) == ["BEGIN", "RELATION", "TRUNCATE", "COMMIT"]
    assert t3[1].fields["relid"] == oids["t2"]
    assert t3[2].fields["relids"] == [oids["t2"]]
    assert t3[2].fields["cascade"] is False and t3[2].fields["restart_seqs"] is False
    # the non-transactional message comes alone, last
    assert msgs[-1].name == "MESSAGE" and msgs[-1].fields["transactional"] is False
    assert (msgs[-1].fields["prefix"], msgs[-1].fields["content"]) == ("solo", b"outside")
    assert len(msgs) == sum(len(t) for t in txns) + 1

    # the CLI prints one line per message, naming relations and values
    f = tmp_path / "stream.bin"
    f.write_bytes(data)
    out = io.StringIO()
    assert dump(data, out, str(f)) == len(msgs)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(msgs)
    assert f"xid {xids[0]}" in lines[0] and "BEGIN" in lines[0]
    assert "public.t1" in lines[2] and "id='1'" in lines[2] and "v='one'" in lines[2]
    assert "big=unchanged-toast" in [ln for ln in lines if "UPDATE" in ln][1]


def test_cli_and_damaged_stream(cluster, tmp_path, capsys):
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_create_logical_replication_slot('dump2', 'pgoutput')")
        conn.execute("INSERT INTO t1 VALUES (100, 'hundred', NULL)")
    data = _record(cluster, "dump2", 1, {})
    msgs = list(read_messages(data))
    assert _by_name(msgs) == ["BEGIN", "RELATION", "INSERT", "COMMIT"]
    f = tmp_path / "ok.bin"
    f.write_bytes(data)
    assert cli.main(["pgoutput-dump", str(f)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    # cut inside the INSERT: the error names the file and the offset where bytes ran out
    insert_at = msgs[2].offset
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:insert_at + 10])
    with pytest.raises(PgoutputStreamError) as ei:
        list(read_messages(cut.read_bytes(), str(cut)))
    assert f"truncated INSERT message (starting at offset {insert_at})" in str(ei.value)
    assert str(cut) in str(ei.value)
    assert cli.main(["pgoutput-dump", str(cut)]) == 1
    err = capsys.readouterr().err
    assert "truncated INSERT message" in err and str(cut) in err
    # an unknown message type
    bad = tmp_path / "bad.bin"
    bad.write_bytes(data[:insert_at] + b"Z" + data[insert_at + 1:])
    with pytest.raises(PgoutputStreamError, match=f"unknown pgoutput message type 90 \\('Z'\\) at offset {insert_at}"):
        list(read_messages(bad.read_bytes(), str(bad)))
    # a message not followed by pg_recvlogical's newline
    nonl = tmp_path / "nonl.bin"
    nonl.write_bytes(data[:insert_at - 1] + b"X" + data[insert_at:])
    with pytest.raises(PgoutputStreamError, match="newline pg_recvlogical writes"):
        list(read_messages(nonl.read_bytes(), str(nonl)))


@pytest.mark.parametrize("major, proto, streaming", [(15, 2, "on"), (16, 4, "parallel"), (18, 4, "parallel")])
def test_streaming(cluster, major, proto, streaming):
    """Streamed transactions: one committed, one committed after rolling back a subtransaction
    (Stream Abort of the subtransaction, with abort_lsn and abort_time under streaming=parallel),
    one aborted (streamed before 18; 18 skips a transaction already aborted when it is decoded)."""
    if major == 15:
        _streaming_workload(cluster, major, proto, streaming)
    else:
        with live_cluster(SCHEMA, major=major, logical_decoding_work_mem="64kB") as c:
            _streaming_workload(c, major, proto, streaming)


def _streaming_workload(cluster, major, proto, streaming):
    slot = f"stream{proto}"
    with cluster.connect(DB) as conn:
        conn.execute(f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")
    with cluster.connect(DB, autocommit=False) as conn:
        xid = _xid(conn)
        conn.execute("INSERT INTO t1 SELECT g, 'row ' || g, NULL FROM generate_series(1000, 4999) g")
        conn.commit()
        top = _xid(conn)
        conn.execute("SAVEPOINT s")
        conn.execute("INSERT INTO t1 SELECT g, 'undone ' || g, NULL FROM generate_series(10000, 13999) g")
        sub = conn.execute("SELECT xmin::text::bigint FROM t1 WHERE id = 10000").fetchone()[0]
        conn.execute("ROLLBACK TO SAVEPOINT s")
        conn.execute("RELEASE SAVEPOINT s")  # back in the top transaction
        sub_abort_end = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        conn.execute("INSERT INTO t1 VALUES (14000, 'kept', NULL)")
        conn.commit()
        aborted = _xid(conn)
        conn.execute("INSERT INTO t1 SELECT g, 'gone ' || g, NULL FROM generate_series(5000, 8999) g")
        conn.rollback()
    with cluster.connect(DB) as conn:
        # a commit (not published) flushes the aborted transaction's WAL, for the walsender to read
        conn.execute("INSERT INTO unpublished VALUES (1)")
    data = _record(cluster, slot, proto, {"streaming": streaming})
    msgs = list(read_messages(data, streaming=streaming))
    starts = [m for m in msgs if m.name == "STREAM START"]
    streamed = {xid, top} | ({aborted} if major < 18 else set())
    assert {m.fields["xid"] for m in starts} == streamed
    assert [m.fields["first_segment"] for m in starts if m.fields["xid"] == xid][0] is True
    assert sum(m.name == "STREAM STOP" for m in msgs) == len(starts)
    inserts = [m for m in msgs if m.name == "INSERT"]
    assert [m.fields["new"][0] for m in inserts if m.fields["xid"] == xid] == [str(g) for g in range(1000, 5000)]
    # the subtransaction's inserts carry its own xid; the one kept after it, the top's
    assert {m.fields["xid"] for m in inserts if m.fields["new"][1].startswith("undone")} == {sub}
    assert [m.fields["new"][0] for m in inserts if m.fields["xid"] == top] == ["14000"]
    commits = [m for m in msgs if m.name == "STREAM COMMIT"]
    assert [m.fields["xid"] for m in commits] == [xid, top]
    assert all(m.fields["end_lsn"] > m.fields["commit_lsn"] for m in commits)
    aborts = [m for m in msgs if m.name == "STREAM ABORT"]
    expected = [(top, sub)] + ([(aborted, aborted)] if major < 18 else [])
    assert [(m.fields["xid"], m.fields["subxid"]) for m in aborts] == expected
    if streaming == "parallel":
        # abort_lsn: the end of the abort record (DecodeAbort passes EndRecPtr)
        assert aborts[0].fields["abort_lsn"] == sub_abort_end
        assert commits[0].fields["commit_time"] <= aborts[0].fields["abort_time"] <= commits[1].fields["commit_time"]
    else:
        assert all("abort_lsn" not in m.fields for m in aborts)
    # the same, with the streaming mode left to be inferred
    assert [m.fields for m in read_messages(data)] == [m.fields for m in msgs]


def test_proto3_two_phase(cluster):
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_create_logical_replication_slot('dump4', 'pgoutput', false, true)")
    with cluster.connect(DB, autocommit=False) as conn:
        x1 = _xid(conn)
        conn.execute("INSERT INTO t1 VALUES (20000, 'prepared', NULL)")
        conn.execute("PREPARE TRANSACTION 'g1'")
        conn.commit()
        x2 = _xid(conn)
        conn.execute("INSERT INTO t1 VALUES (20001, 'rolled back', NULL)")
        conn.execute("PREPARE TRANSACTION 'g2'")
        conn.commit()
    with cluster.connect(DB) as conn:
        conn.execute("COMMIT PREPARED 'g1'")
        conn.execute("ROLLBACK PREPARED 'g2'")
    data = _record(cluster, "dump4", 3, {"two_phase": "on"})
    msgs = list(read_messages(data))
    names = _by_name(msgs)
    assert names.count("BEGIN PREPARE") == 2 and names.count("PREPARE") == 2
    bp = [m for m in msgs if m.name == "BEGIN PREPARE"]
    assert [(m.fields["xid"], m.fields["gid"]) for m in bp] == [(x1, "g1"), (x2, "g2")]
    prep = [m for m in msgs if m.name == "PREPARE"]
    assert [(m.fields["xid"], m.fields["gid"]) for m in prep] == [(x1, "g1"), (x2, "g2")]
    for b, p in zip(bp, prep):
        assert (p.fields["prepare_lsn"], p.fields["end_lsn"]) == (b.fields["prepare_lsn"], b.fields["end_lsn"])
    cp = [m for m in msgs if m.name == "COMMIT PREPARED"]
    assert [(m.fields["xid"], m.fields["gid"]) for m in cp] == [(x1, "g1")]
    rp = [m for m in msgs if m.name == "ROLLBACK PREPARED"]
    assert [(m.fields["xid"], m.fields["gid"]) for m in rp] == [(x2, "g2")]
    assert rp[0].fields["prepare_end_lsn"] == prep[1].fields["end_lsn"]
    assert rp[0].fields["prepare_time"] == prep[1].fields["prepare_time"]
    ins = [m.fields["new"] for m in msgs if m.name == "INSERT"]
    assert ins == [["20000", "prepared", None], ["20001", "rolled back", None]]
    assert parse_lsn("0/0") == 0
