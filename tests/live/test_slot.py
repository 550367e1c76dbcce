"""``decode --slot FILE --output OUT``: an offline slot, against a real PostgreSQL 15.

One workload (interleaved sessions, transactions open across segment boundaries, a
transaction large enough to spill, DDL between the DML) is decoded by the server's own
test_decoding slot; waldecode must end with exactly those bytes in OUT however it is
run: killed with SIGKILL at random moments and at chosen points (between the output
write and the slot update, right after the update, while spilling) and started again
until it finishes; or run after each segment added to a growing archive, whose last
segment ends inside a record or is a ``.partial``.  Slot files of another cluster,
timeline, configuration or format are refused.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance int);
CREATE TABLE log (id serial PRIMARY KEY, who text, pad text);
INSERT INTO acct SELECT g, 'owner ' || g, 100 FROM generate_series(1, 50) g;
"""


class Archive:
    """The workload's WAL, the server's output for it and a catalog snapshot, made once."""

    def __init__(self, root, wal, catalog_file, start, end, expected: bytes, segments: list[str]):
        self.root, self.wal, self.catalog_file = root, wal, catalog_file
        self.start, self.end, self.expected, self.segments = start, end, expected, segments


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("slot")
    with live_cluster(SCHEMA, max_replication_slots=10) as c:
        with c.connect(DB) as conn, c.connect(DB) as other:
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('wd_slot', 'test_decoding')")
            start, first = conn.execute("SELECT confirmed_flush_lsn::text, pg_walfile_name(restart_lsn) "
                                        "FROM pg_replication_slots WHERE slot_name = 'wd_slot'").fetchone()
            for rnd in range(6):
                other.execute("BEGIN")
                other.execute("INSERT INTO log (who, pad) VALUES (%s, repeat('o', 200))", (f"other{rnd}",))
                for i in range(400):
                    conn.execute("UPDATE acct SET balance = balance + 1 WHERE id = %s", (i % 50 + 1,))
                    conn.execute("INSERT INTO log (who, pad) VALUES ('main', repeat(md5(%s::text), 8))", (i,))
                if rnd == 1:
                    conn.execute("INSERT INTO log (who, pad) SELECT 'bulk', repeat('b', 100) "
                                 "FROM generate_series(1, 6000)")  # spills past --spill-threshold
                if rnd == 2:
                    conn.execute("ALTER TABLE acct ADD COLUMN note text DEFAULT 'n'")
                    conn.execute("CREATE TABLE later (id int PRIMARY KEY, v text)")
                if rnd >= 2:
                    conn.execute("INSERT INTO later VALUES (%s, 'v')", (rnd,))
                if rnd == 3:
                    conn.execute("CHECKPOINT")
                other.execute("UPDATE acct SET owner = owner || '!' WHERE id = %s", (rnd + 1,))
                conn.execute("SELECT pg_switch_wal()")  # the open transaction crosses into the next segment
                other.execute("COMMIT")
            conn.execute("CHECKPOINT")
            end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('wd_slot', %s::pg_lsn, "
                                "NULL)", (end,)).fetchall()
            conn.execute("SELECT pg_drop_replication_slot('wd_slot')")
        wal = c.archive_wal(root / "wal", first)
    expected = b"".join(bytes(r[0]) + b"\n" for r in rows)
    catalog_file = root / "catalog.json"
    catalog_file.write_text(catalog.to_json())
    segments = sorted(p.name for p in wal.iterdir())
    yield Archive(root, wal, catalog_file, start, end, expected, segments)


def decode_cmd(a: Archive, slot, out, wal=None, end=True):
    return [sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(a.catalog_file),
            "--start-lsn", a.start, *(("--end-lsn", a.end) if end else ()), "--slot", str(slot),
            "--output", str(out), "--spill-threshold", "500", "--slot-interval", "0.05", str(wal or a.wal)]


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, timeout=600, env=env)


def test_one_run_with_a_slot_prints_the_servers_output(archive, tmp_path):
    out = run(decode_cmd(archive, tmp_path / "slot", tmp_path / "out"))
    assert out.returncode == 0, out.stderr.decode()
    assert (tmp_path / "out").read_bytes() == archive.expected
    doc = json.loads((tmp_path / "slot").read_text())
    assert doc["format"] == "waldecode-slot" and doc["output_bytes"] == len(archive.expected)
    assert parse_lsn(doc["confirmed_flush_lsn"]) <= parse_lsn(archive.end)
    # The restart point moved past the DDL: the slot carries the catalog as of there, "later" included
    assert parse_lsn(doc["restart_lsn"]) > parse_lsn(archive.start)
    assert "later" in {r["relname"] for r in doc["catalog"]["relations"]}
    # Run again: nothing more to decode, nothing doubled
    out = run(decode_cmd(archive, tmp_path / "slot", tmp_path / "out"))
    assert out.returncode == 0, out.stderr.decode()
    assert (tmp_path / "out").read_bytes() == archive.expected
    assert not list((tmp_path / "slot.spill").iterdir())


@pytest.mark.parametrize("point", ["after-output:3", "after-slot:2", "spill:1", "after-output:1"])
def test_killed_at_a_chosen_point_then_resumed(archive, tmp_path, point):
    env = dict(os.environ, WALDECODE_CRASH_AT=point)
    out = run(decode_cmd(archive, tmp_path / "slot", tmp_path / "out"), env=env)
    assert out.returncode == -signal.SIGKILL, (point, out.stderr.decode())
    # Killed again at the same point of the next run, then let finish
    out = run(decode_cmd(archive, tmp_path / "slot", tmp_path / "out"), env=env)
    assert out.returncode in (0, -signal.SIGKILL)
    out = run(decode_cmd(archive, tmp_path / "slot", tmp_path / "out"))
    assert out.returncode == 0, out.stderr.decode()
    assert (tmp_path / "out").read_bytes() == archive.expected


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(delays=st.lists(st.floats(0.1, 1.2), min_size=1, max_size=4))
def test_killed_at_random_moments_then_resumed(archive, tmp_path_factory, delays):
    d = tmp_path_factory.mktemp("kill")
    cmd = decode_cmd(archive, d / "slot", d / "out")
    for delay in delays:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    out = run(cmd)
    assert out.returncode == 0, out.stderr.decode()
    assert (d / "out").read_bytes() == archive.expected


def test_a_growing_archive_gives_the_same_output(archive, tmp_path):
    """Segments arrive one at a time; the newest one is first seen cut inside a record, then as a
    .partial, then whole.  After each arrival the same command runs; OUT ends as one run's."""
    grow = tmp_path / "archive"
    grow.mkdir()
    slot, out = tmp_path / "slot", tmp_path / "out"
    runs = 0
    for name in archive.segments:
        src = archive.wal / name
        data = src.read_bytes()
        for stage in ("cut", "partial", "whole"):
            if stage == "cut":
                (grow / name).write_bytes(data[:len(data) // 2 + 13])
            elif stage == "partial":
                (grow / name).unlink()
                (grow / (name + ".partial")).write_bytes(data[:len(data) * 3 // 4])
            else:
                (grow / (name + ".partial")).unlink()
                shutil.copy(src, grow / name)
            # (no --end-lsn: the archive ends where it ends, as an archive being filled does)
            res = run(decode_cmd(archive, slot, out, grow, end=False))
            runs += 1
            assert res.returncode == 0, (name, stage, res.stderr.decode())
            assert archive.expected.startswith(out.read_bytes())
    assert out.read_bytes() == archive.expected
    assert runs == 3 * len(archive.segments)


def test_slot_files_of_another_cluster_timeline_or_format_are_refused(archive, tmp_path):
    slot, out = tmp_path / "slot", tmp_path / "out"
    assert run(decode_cmd(archive, slot, out)).returncode == 0
    good = json.loads(slot.read_text())
    cases = [
        ({"system_identifier": "12345"}, "belongs to the cluster with system identifier 12345"),
        ({"timeline": 2}, "follows timeline 2"),
        ({"version": 99}, "has format version 99"),
        ({"options": {"include-xids": "0"}}, "OUT would mix them"),
    ]
    for change, message in cases:
        slot.write_text(json.dumps({**good, **change}))
        res = run(decode_cmd(archive, slot, out))
        err = res.stderr.decode()
        assert res.returncode != 0 and message in err, (change, err)
        assert len(err.strip().splitlines()) == 1, err
    slot.write_text(json.dumps(good))
    out.write_bytes(archive.expected[:10])
    res = run(decode_cmd(archive, slot, out))
    assert res.returncode == 2 and "it is not the output this slot wrote" in res.stderr.decode()
