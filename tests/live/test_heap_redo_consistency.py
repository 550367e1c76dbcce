"""Heap redo checked page by page against PostgreSQL's own wal_consistency_checking images.

A throw-away server runs with ``wal_consistency_checking = 'heap,heap2'`` (and full_page_writes on):
then every heap and heap2 record carries, for each block it changes, an image of the page as it
must be after the record (an image not to be applied).  After a checkpoint, a workload runs
(inserts, COPY, HOT and non-HOT updates, deletes, TOAST, aborted transactions and
subtransactions, two sessions locking a row FOR SHARE then an update, a lock on an updated row,
INSERT ... ON CONFLICT, VACUUM, VACUUM FREEZE, a checkpoint in the middle).  waldecode reads that
WAL from the checkpoint's redo point and replays it into a page store, each page starting from its
first full-page image to apply or from a page-initializing record; after each heap record, every
block whose replayed page the store holds is masked as ``heap_mask`` masks it and must equal the
masked image, as verifyBackupPageConsistency requires during the server's own recovery.
"""

from __future__ import annotations

from collections import Counter

import pytest

from live import DB, live_cluster
from redo_workload import SCHEMA, workload
from waldecode.redo import heapam_xlog
from waldecode.redo.bufpage import item_id, page_get_max_offset_number, pd_lower, pd_upper
from waldecode.redo.pagestore import PageStore
from waldecode.redo.xlogrecovery import HeapRedo, verify_backup_page_consistency
from waldecode.rmgr import RM_HEAP2_ID, RM_HEAP_ID
from waldecode.rmgr import heap as rm_heap
from waldecode.wal.fpi import compression_method
from waldecode.wal.xlogreader import XLogReader, parse_lsn

pytestmark = [pytest.mark.server]

# Page-changing record types the workload must have produced (and checked at least one block of)
EXPECTED = {
    ("Heap", "INSERT"), ("Heap", "INSERT+INIT"), ("Heap", "UPDATE"), ("Heap", "UPDATE+INIT"),
    ("Heap", "HOT_UPDATE"), ("Heap", "DELETE"), ("Heap", "LOCK"), ("Heap", "INPLACE"), ("Heap", "HEAP_CONFIRM"),
    ("Heap2", "MULTI_INSERT"), ("Heap2", "MULTI_INSERT+INIT"), ("Heap2", "VISIBLE"), ("Heap2", "LOCK_UPDATED"),
}
# the pruning and freezing records: 14-16, and 17+ (rmgr/heap.py names them per version)
EXPECTED_PRUNE = {14: {("Heap2", "PRUNE"), ("Heap2", "VACUUM"), ("Heap2", "FREEZE_PAGE")},
                  17: {("Heap2", "PRUNE_ON_ACCESS"), ("Heap2", "PRUNE_VACUUM_SCAN"),
                       ("Heap2", "PRUNE_VACUUM_CLEANUP")}}


# 15 with each wal_compression (the images to apply and the consistency images alike), with
# wal_log_hints (hint bits WAL-logged as with data checksums: XLOG_FPI_FOR_HINT images, and
# XLOG_HEAP2_VISIBLE moves the heap page's LSN), and with wal_level replica (an update on the same
# page then logs only what differs from the old version: XLH_UPDATE_PREFIX_FROM_OLD and
# SUFFIX_FROM_OLD; logical, the test clusters' default, logs the whole tuple); the bundled 16 and 18
# servers are built without lz4 and zstd
@pytest.fixture(scope="module", params=[(15, "off", False, "logical"), (15, "pglz", False, "logical"),
                                        (15, "lz4", False, "logical"), (15, "zstd", False, "logical"),
                                        (15, "off", True, "logical"), (15, "off", False, "replica"),
                                        (16, "off", False, "logical"), (18, "off", False, "logical")],
                ids=lambda p: "%d-%s%s%s" % (p[0], p[1], "-wal_log_hints" if p[2] else "",
                                             "-replica" if p[3] == "replica" else ""))
def wal(request, tmp_path_factory):
    major, compression, hints, wal_level = request.param
    # wal_keep_size: the checkpoint in the middle must not recycle the segments to be read
    with live_cluster(SCHEMA, major=major, wal_consistency_checking="heap,heap2", wal_keep_size="1GB",
                      wal_compression=compression, wal_log_hints=hints, wal_level=wal_level) as c:
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            redo_lsn, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (redo_lsn,)).fetchone()[0]
        workload(c)
        with c.connect(DB) as conn:
            end_lsn, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
            last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (end_lsn,)).fetchone()[0]
        path = c.archive_wal(tmp_path_factory.mktemp("wal%d%s" % (major, compression)), first, last)
        yield path, parse_lsn(redo_lsn), parse_lsn(end_lsn), c.major, compression, hints, wal_level


def _describe(replay: bytes, primary: bytes) -> str:
    """Where two masked pages differ: the header pointers and the first differing line pointer or byte."""
    out = [f"pd_lower {pd_lower(replay)}/{pd_lower(primary)}, pd_upper {pd_upper(replay)}/{pd_upper(primary)}"]
    for off in range(1, min(page_get_max_offset_number(replay), page_get_max_offset_number(primary)) + 1):
        a, b = item_id(replay, off), item_id(primary, off)
        if a != b:
            out.append(f"line pointer {off}: replay {a}, primary {b}")
            break
    diff = [i for i in range(len(replay)) if replay[i] != primary[i]]
    if diff:
        out.append(f"{len(diff)} bytes differ, first at {diff[0]}: replay {replay[diff[0]:diff[0] + 24].hex()} "
                   f"primary {primary[diff[0]:diff[0] + 24].hex()}")
    return "; ".join(out)


def replay(wal_dir, start: int, end: int, major: int, store_dir, hint_bits_logged: bool,
           stop_at_mismatch: tuple | None = None) -> dict:
    """Replay the WAL into a page store and check every heap record's blocks; a summary.  With
    ``stop_at_mismatch`` (an (rmgr, type) name), it ends at the first record of that type whose block
    differs."""
    checked: Counter = Counter()  # (rmgr, type) -> blocks compared and equal
    statuses: Counter = Counter()
    mismatches = []
    all_visible_differ = []
    multixact_locks = 0
    update_flags = 0  # the xl_heap_update flags seen, or-ed
    partition_moves = 0
    images: Counter = Counter()  # how the images were stored: None (not compressed), pglz, lz4, zstd
    with PageStore(store_dir) as store:
        engine = HeapRedo(store, major, hint_bits_logged=hint_bits_logged)
        for rec in XLogReader([wal_dir], start_lsn=start, end_lsn=end):
            images.update(compression_method(b, major) for b in rec.blocks if b.has_image)
            rr = engine.redo(rec)
            if rr is None or rec.xl_rmid not in (RM_HEAP_ID, RM_HEAP2_ID):
                continue
            info = rec.xl_info & 0xF0
            name = (("Heap", rm_heap.heap_identify(info, major)) if rec.xl_rmid == RM_HEAP_ID
                    else ("Heap2", rm_heap.heap2_identify(info, major)))
            if name[1] in ("UPDATE", "HOT_UPDATE"):
                update_flags |= rm_heap.xl_heap_update.unpack_from(rec.main_data)[3]
            if name == ("Heap", "DELETE"):
                partition_moves += bool(rm_heap.xl_heap_delete.unpack_from(rec.main_data)[3]
                                        & rm_heap.XLH_DELETE_IS_PARTITION_MOVE)
            if name == ("Heap", "LOCK"):
                multixact_locks += bool(rm_heap.xl_heap_lock.unpack_from(rec.main_data)[2] & rm_heap.XLHL_XMAX_IS_MULTI)
            for check in verify_backup_page_consistency(rr):
                statuses[check.status] += 1
                if check.status == "match":
                    checked[name] += 1
                    if not check.all_visible:
                        all_visible_differ.append((rec.lsn, name, check.blkno))
                elif check.status == "mismatch":
                    mismatches.append((rec.lsn, name, check.locator, check.blkno,
                                       _describe(check.replay, check.primary)))
            if stop_at_mismatch is not None and mismatches and mismatches[-1][1] == stop_at_mismatch:
                break
    return {"checked": checked, "statuses": statuses, "mismatches": mismatches, "records": engine.records,
            "blocks": engine.blocks, "all_visible_differ": all_visible_differ, "multixact_locks": multixact_locks,
            "images": images,
            "update_flags": update_flags, "partition_moves": partition_moves}


@pytest.fixture(scope="module")
def result(wal, tmp_path_factory):
    wal_dir, start, end, major, _compression, hints, _wal_level = wal
    return replay(wal_dir, start, end, major, tmp_path_factory.mktemp("store"), hints)


def test_every_replayed_heap_page_matches_the_servers_image(result):
    from waldecode.errors import format_lsn

    shown = [f"{format_lsn(lsn)} {name} rel {loc} blk {blk}: {why}"
             for lsn, name, loc, blk, why in result["mismatches"][:10]]
    assert result["mismatches"] == [], f"{len(result['mismatches'])} pages differ:\n" + "\n".join(shown)
    total = sum(result["checked"].values())
    print(f"\nblocks compared and equal: {total}; statuses {dict(result['statuses'])}; "
          f"records replayed {sum(result['records'].values())}; block actions {dict(result['blocks'])}")
    for name, n in sorted(result["checked"].items()):
        print(f"  {name[0]}/{name[1]}: {n} blocks, {result['records'][name]} records")
    assert total > 5000
    assert result["statuses"]["match"] == total


def test_every_record_type_of_the_workload_was_checked(result, wal):
    expected = EXPECTED | EXPECTED_PRUNE[17 if wal[3] >= 17 else 14]
    missing = {name for name in expected if result["checked"][name] == 0}
    assert not missing, f"record types with no block compared: {sorted(missing)}; seen {dict(result['checked'])}"
    assert result["partition_moves"] > 0
    assert result["records"][("Storage", "TRUNCATE")] > 0
    if wal[6] == "logical":  # catalog changes log their command ids for logical decoding
        assert result["records"][("Heap2", "NEW_CID")] > 0  # no page change, but replayed
    assert result["multixact_locks"] > 0


def test_the_images_were_stored_as_configured(result, wal):
    compression = wal[4]
    # an image that does not shrink is stored as it is
    assert set(result["images"]) <= {None, None if compression == "off" else compression}, result["images"]
    assert compression == "off" or result["images"][compression] > 1000
    if wal[5]:  # hint bits were WAL-logged: pages whose hint bits changed came as images to apply
        assert result["records"][("XLOG", "FPI_FOR_HINT")] > 0


def test_updates_logged_as_a_difference_were_replayed(result, wal):
    """Under wal_level replica, updates on the same page carry only the bytes that changed."""
    if wal[6] != "replica":
        pytest.skip("wal_level logical logs whole new tuples")
    both = rm_heap.XLH_UPDATE_PREFIX_FROM_OLD | rm_heap.XLH_UPDATE_SUFFIX_FROM_OLD
    assert result["update_flags"] & both == both


def test_all_visible_bit_agrees_unmasked(result):
    """heap_mask hides PD_ALL_VISIBLE (a replay that skips a record by its LSN may leave it unset);
    replaying every record in order from images, waldecode must get it right too."""
    assert result["all_visible_differ"] == []


def test_a_broken_redo_routine_is_caught(wal, tmp_path, monkeypatch):
    """The check can fail: delete redo that forgets the deleting transaction (t_xmax) is caught."""
    wal_dir, start, end, major, _compression, hints, _wal_level = wal
    real = heapam_xlog.ht.set_xmax

    def delete_without_xmax(rr):
        monkeypatch.setattr(heapam_xlog.ht, "set_xmax", lambda page, tup, xid: None)
        try:
            original_delete(rr)
        finally:
            monkeypatch.setattr(heapam_xlog.ht, "set_xmax", real)

    original_delete = heapam_xlog.heap_xlog_delete
    monkeypatch.setitem(heapam_xlog.HEAP_REDO, rm_heap.XLOG_HEAP_DELETE, delete_without_xmax)
    # up to the first delete caught: the rest of the WAL would only repeat it
    broken = replay(wal_dir, start, end, major, tmp_path / "store", hints, stop_at_mismatch=("Heap", "DELETE"))
    assert broken["mismatches"]
    assert {name for _lsn, name, _loc, _blk, _why in broken["mismatches"]} >= {("Heap", "DELETE")}
