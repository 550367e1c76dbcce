"""Page layout operations of ``waldecode.redo.bufpage`` (bufpage.c), by their invariants.

Which bytes a real server's pages hold after redo is the live test's business
(``tests/live/test_heap_redo_consistency.py``, against wal_consistency_checking images); here the
rules bufpage.c keeps whatever the items are: PageAddItemExtended places an item below pd_upper and
refuses what does not fit, PageRepairFragmentation packs the items with storage from pd_special down
in line-pointer order without changing a byte of them and drops trailing unused line pointers,
PageTruncateLinePointerArray never drops the first one, and the PD_HAS_FREE_LINES hint says whether
an unused line pointer remains.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from waldecode.redo import bufpage as bp
from waldecode.wal.xlogrecord import BLCKSZ


def _page() -> bytearray:
    page = bytearray(BLCKSZ)
    bp.page_init(page, BLCKSZ, 0)
    return page


def _item(i: int, size: int) -> bytes:
    return bytes((i * 31 + k) & 0xFF for k in range(size))


def _storage_items(page):
    """(offnum, lp_off, lp_len) of the line pointers with storage."""
    out = []
    for off in range(1, bp.page_get_max_offset_number(page) + 1):
        lp_off, _flags, lp_len = bp.item_id(page, off)
        if lp_len:
            out.append((off, lp_off, lp_len))
    return out


def test_page_init_is_an_empty_page():
    page = _page()
    assert not bp.page_is_new(page)
    assert bp.page_get_max_offset_number(page) == 0
    assert (bp.pd_lower(page), bp.pd_upper(page), bp.pd_special(page)) == (
        bp.SizeOfPageHeaderData, BLCKSZ, BLCKSZ)
    assert bp.page_is_new(bytearray(BLCKSZ))


def test_add_item_places_items_below_upper_and_refuses_what_does_not_fit():
    page = _page()
    n = 0
    while True:
        upper = bp.pd_upper(page)
        off = bp.page_add_item(page, _item(n, 100), 100, bp.InvalidOffsetNumber, False, True)
        if off == bp.InvalidOffsetNumber:
            break
        n += 1
        assert off == n
        lp_off, flags, lp_len = bp.item_id(page, off)
        assert (flags, lp_len, lp_off) == (bp.LP_NORMAL, 100, upper - bp.MAXALIGN(100))
        assert page[lp_off:lp_off + 100] == _item(n - 1, 100)
    # the page was full: no room for another 100 bytes and its line pointer
    assert bp.pd_upper(page) - bp.pd_lower(page) < bp.MAXALIGN(100) + bp.SizeOfItemIdData
    assert n == (BLCKSZ - bp.SizeOfPageHeaderData) // (bp.MAXALIGN(100) + bp.SizeOfItemIdData)


def test_add_item_overwrite_refuses_a_used_slot_and_a_gap():
    page = _page()
    assert bp.page_add_item(page, b"a" * 30, 30, 1, True, True) == 1
    assert bp.page_add_item(page, b"b" * 30, 30, 1, True, True) == bp.InvalidOffsetNumber
    assert bp.page_add_item(page, b"b" * 30, 30, 3, True, True) == bp.InvalidOffsetNumber
    bp.item_id_set_unused(page, 1)
    assert bp.page_add_item(page, b"c" * 30, 30, 1, True, True) == 1
    assert bp.page_get_max_offset_number(page) == 1


def test_add_item_without_overwrite_shuffles_the_line_pointers_up():
    page = _page()
    for i in range(3):
        bp.page_add_item(page, _item(i, 40), 40, bp.InvalidOffsetNumber, False, False)
    before = [bp.item_id(page, off) for off in (1, 2, 3)]
    assert bp.page_add_item(page, _item(9, 40), 40, 2, False, False) == 2
    assert [bp.item_id(page, off) for off in (1, 3, 4)] == before


def test_a_heap_page_holds_at_most_max_heap_tuples_per_page_line_pointers():
    page = _page()
    for off in range(1, bp.MaxHeapTuplesPerPage + 1):
        assert bp.page_add_item(page, b"", 0, off, True, True) == off
    assert bp.page_add_item(page, b"", 0, bp.MaxHeapTuplesPerPage + 1, True, True) == bp.InvalidOffsetNumber


_ops = st.lists(st.tuples(st.integers(1, 600), st.sampled_from(["keep", "unused", "dead", "redirect"])),
                min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(_ops, st.randoms(use_true_random=False))
def test_repair_fragmentation_packs_items_in_line_pointer_order(ops, rnd):
    page = _page()
    order = []  # item numbers in line-pointer order
    fates = {}
    for i, (size, fate) in enumerate(ops):
        # an item put in front of the others (the line pointers shuffle up) lies lower on the page
        # than items after it in line-pointer order: not presorted, compactify_tuples' other path
        front = rnd.random() < 0.3
        off = bp.page_add_item(page, _item(i, size), size, 1 if front and order else bp.InvalidOffsetNumber,
                               False, False)
        if off == bp.InvalidOffsetNumber:
            break
        order.insert(off - 1, i)
        fates[i] = (size, fate)
    placed = [(off, i, fates[i][0], fates[i][1]) for off, i in enumerate(order, 1)]
    for off, _i, _size, fate in placed:
        if fate == "unused":
            bp.item_id_set_unused(page, off)
        elif fate == "dead":
            bp.item_id_set_dead(page, off)
        elif fate == "redirect":
            bp.item_id_set_redirect(page, off, 1)
    bp.page_repair_fragmentation(page)
    kept = {off: (i, size) for off, i, size, fate in placed if fate == "keep"}
    items = _storage_items(page)
    assert [off for off, _o, _l in items] == sorted(kept)
    upper = bp.pd_special(page)
    for off, lp_off, lp_len in items:
        i, size = kept[off]
        upper -= bp.MAXALIGN(size)
        assert (lp_off, lp_len) == (upper, size)
        assert page[lp_off:lp_off + lp_len] == _item(i, size)
    assert bp.pd_upper(page) == upper
    used = [off for off, _i, _s, fate in placed if fate != "unused"]
    assert bp.page_get_max_offset_number(page) == (max(used) if used else 0)
    has_unused = any(bp.item_id(page, off)[1] == bp.LP_UNUSED
                     for off in range(1, bp.page_get_max_offset_number(page) + 1))
    assert bool(bp.pd_flags(page) & bp.PD_HAS_FREE_LINES) == has_unused
    again = bytearray(page)
    bp.page_repair_fragmentation(again)
    assert again == page


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=80))
def test_truncate_line_pointer_array_keeps_the_first_and_the_last_used(unused):
    page = _page()
    for off in range(1, len(unused) + 1):
        bp.page_add_item(page, b"", 0, off, True, True)
        bp.item_id_set_dead(page, off)
    for off, u in enumerate(unused, 1):
        if u:
            bp.item_id_set_unused(page, off)
    bp.page_truncate_line_pointer_array(page)
    used = [off for off, u in enumerate(unused, 1) if not u]
    assert bp.page_get_max_offset_number(page) == max(used + [1])
    remaining_unused = any(u for u in unused[:bp.page_get_max_offset_number(page)])
    assert bool(bp.pd_flags(page) & bp.PD_HAS_FREE_LINES) == remaining_unused


def test_lsn_and_flags():
    page = _page()
    bp.page_set_lsn(page, 0x1_2345_6789)
    assert bp.page_get_lsn(page) == 0x1_2345_6789
    bp.page_set_all_visible(page)
    assert bp.page_is_all_visible(page)
    bp.page_clear_all_visible(page)
    assert not bp.page_is_all_visible(page)
    bp.page_set_prunable(page, 1000)
    bp.page_set_prunable(page, 900)
    bp.page_set_prunable(page, 950)
    assert bp.pd_prune_xid(page) == 900  # the oldest xid that may leave something to prune
