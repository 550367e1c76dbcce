"""Heap redo from a base backup taken while the cluster runs, to the end of the WAL.

The path issue 23 takes: a plain ``pg_basebackup`` is taken while a session keeps updating, inserting
and deleting (its pages are copied at different moments, some after changes the backup's redo
point precedes); then the redo workload runs.  waldecode copies the backup's relation files into a
page store (``redo.md.load_base_backup``) and replays the WAL from the backup label's START WAL
LOCATION.  The server runs with ``wal_consistency_checking = 'heap,heap2'``, so after every heap
record the replayed pages, masked by ``heap_mask``, must equal the server's images, as in
``test_heap_redo_consistency.py`` but now starting from the backup's pages, which the page-LSN rule
has to handle.  At the end, every page of the workload's tables (and their TOAST tables) in the
server's own files, after a checkpoint, must equal the replayed page, both masked.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from live import DB, live_cluster
from redo_workload import SCHEMA, TABLES, workload
from waldecode.catalog.datadir.files import PlainDirectory
from waldecode.errors import format_lsn
from waldecode.redo.backup_label import read_backup_label
from waldecode.redo.heapam_xlog import heap_mask
from waldecode.redo.md import load_base_backup
from waldecode.redo.pagestore import PageStore
from waldecode.redo.visibilitymap import VISIBILITYMAP_FORKNUM
from waldecode.redo.xlogrecovery import HeapRedo, verify_backup_page_consistency
from waldecode.wal.xlogreader import XLogReader, parse_lsn
from waldecode.wal.xlogrecord import BLCKSZ

pytestmark = [pytest.mark.server]


def _busy(c, stop: threading.Event, counts: list) -> None:
    """Changes to ``acct`` while the backup copies files."""
    with c.connect(DB) as conn:
        i = 0
        while not stop.is_set():
            conn.execute("UPDATE acct SET balance = balance + 1 WHERE id %% 50 = %s AND id < 3000", (i % 50,))
            conn.execute("INSERT INTO acct VALUES (%s, 'during backup', 0, NULL)", (60000 + i,))
            conn.execute("DELETE FROM acct WHERE id = %s", (2000 + i % 900,))
            i += 1
            stop.wait(0.02)  # enough changes to overlap the copy, not a flood of WAL
        counts.append(i)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with live_cluster(SCHEMA, wal_consistency_checking="heap,heap2", wal_keep_size="1GB") as c:
        with c.connect(DB) as conn:
            first = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]
        stop, counts = threading.Event(), []
        busy = threading.Thread(target=_busy, args=(c, stop, counts))
        busy.start()
        try:
            backup = c.base / "backup"
            # --max-rate slows the copy down so that the busy session changes pages meanwhile
            c.run_bin("pg_basebackup", "-D", backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                      "-Fp", "-X", "none", "-c", "fast", "--no-sync", "--max-rate=8M")
        finally:
            stop.set()
            busy.join()
        workload(c)
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")  # the server's files hold every page as the WAL left it
            end_lsn, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end_lsn,)).fetchone()[0]
            conn.execute("SELECT pg_switch_wal()")
            rels = conn.execute(
                "SELECT c.relname, pg_relation_filepath(c.oid), d.oid, c.relfilenode FROM pg_class c, pg_database d "
                "WHERE d.datname = current_database() AND (c.relname = ANY(%s) OR c.oid IN "
                "(SELECT reltoastrelid FROM pg_class WHERE relname = ANY(%s)))",
                (list(TABLES), list(TABLES))).fetchall()
        wal = c.archive_wal(tmp_path_factory.mktemp("wal"), first, last)
        server_pages, server_maps = {}, {}
        for name, path, db, relfilenode in rels:
            data = (c.pgdata / path).read_bytes()
            server_pages[name] = ((1663, db, relfilenode), [data[i:i + BLCKSZ] for i in range(0, len(data), BLCKSZ)])
            vm = c.pgdata / (path + "_vm")
            data = vm.read_bytes() if vm.exists() else b""
            server_maps[name] = [data[i:i + BLCKSZ] for i in range(0, len(data), BLCKSZ)]
        label = read_backup_label(backup)
        store_dir = tmp_path_factory.mktemp("store")
        with PageStore(store_dir) as store:
            copied = load_base_backup(store, PlainDirectory(backup), c.major)
            engine = HeapRedo(store, c.major)
            statuses: Counter = Counter()
            mismatches = []
            for rec in XLogReader([wal], start_lsn=label.start_lsn, end_lsn=parse_lsn(end_lsn)):
                rr = engine.redo(rec)
                if rr is None:
                    continue
                for check in verify_backup_page_consistency(rr):
                    statuses[check.status] += 1
                    if check.status == "mismatch":
                        mismatches.append((rec.lsn, check.locator, check.blkno))
            final = {name: (loc, [store.read(loc, 0, b) for b in range(len(pages))], list(store.blocks(loc, 0)))
                     for name, (loc, pages) in server_pages.items()}
            final_maps = {name: {b: store.read(loc, VISIBILITYMAP_FORKNUM, b)
                                 for b in store.blocks(loc, VISIBILITYMAP_FORKNUM)}
                          for name, (loc, _pages) in server_pages.items()}
        yield {"copied": copied, "statuses": statuses, "mismatches": mismatches, "blocks": engine.blocks,
               "server_pages": server_pages, "final": final, "busy": counts[0], "server_maps": server_maps,
               "final_maps": final_maps}


def test_replay_from_the_backup_matches_every_image(run):
    assert run["busy"] > 0 and run["copied"] > 1000
    assert run["mismatches"] == [], [(format_lsn(lsn), loc, blk) for lsn, loc, blk in run["mismatches"][:10]]
    print(f"\nblocks copied from the backup {run['copied']}; checks {dict(run['statuses'])}; "
          f"block actions {dict(run['blocks'])}")
    assert run["statuses"]["match"] > 5000
    # every page redo needed was in the backup or came from an image or an initializing record
    assert run["statuses"]["notfound"] == 0
    assert run["blocks"]["notfound"] == 0


def test_the_replayed_tables_equal_the_servers_files(run):
    compared = 0
    for name, (loc, server) in run["server_pages"].items():
        _loc, replayed, present = run["final"][name]
        assert present == list(range(len(server))), f"{name}: blocks {present} replayed, {len(server)} in the file"
        for blkno, (mine, theirs) in enumerate(zip(replayed, server)):
            a, b = bytearray(mine), bytearray(theirs)
            heap_mask(a, blkno)
            heap_mask(b, blkno)
            assert a == b, f"{name} block {blkno} differs from the server's file"
            compared += 1
    assert compared > 100


def test_the_replayed_visibility_maps_equal_the_servers(run):
    """The map pages, byte for byte but the checksum; a page the server extended the fork with and
    never wrote (zeros) counts as one the store does not hold."""
    bits = 0
    for name, server in run["server_maps"].items():
        mine = run["final_maps"][name]
        for blkno in sorted(set(range(len(server))) | set(mine)):
            theirs = bytearray(server[blkno]) if blkno < len(server) else bytearray(BLCKSZ)
            ours = bytearray(mine.get(blkno) or bytes(BLCKSZ))
            ours[8:10] = theirs[8:10] = bytes(2)  # pd_checksum
            assert ours == theirs, f"{name}: visibility map page {blkno} differs"
            bits += sum(bin(b).count("1") for b in theirs[24:])
    assert bits > 20  # VACUUM FREEZE left all-visible and all-frozen pages to compare
