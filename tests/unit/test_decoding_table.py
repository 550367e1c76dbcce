"""The table of what each heap and heap2 record type is to logical decoding (``rmgr.heap``): one kind
per type, the decoder's extractors exactly its row-change types, and what decoding and Spark's
phase 1 ignore read from it."""

from __future__ import annotations

import pytest

from waldecode.logical import decode
from waldecode.rmgr import heap as rm_heap
from waldecode.spark import tasks

ALL_TYPES = frozenset(range(0, rm_heap.XLOG_HEAP_OPMASK + 1, 0x10))

KINDS = {
    "heap": (rm_heap.HEAP_CHANGE_TYPES, rm_heap.HEAP_CATALOG_TYPES, rm_heap.HEAP_IGNORED_TYPES),
    "heap2": (rm_heap.HEAP2_CHANGE_TYPES, rm_heap.HEAP2_CATALOG_TYPES, rm_heap.HEAP2_IGNORED_TYPES),
}


@pytest.mark.parametrize("rmgr", sorted(KINDS))
def test_every_record_type_has_exactly_one_kind(rmgr):
    kinds = [rm_heap.record_types(k) for k in KINDS[rmgr]]
    assert sum(len(k) for k in kinds) == len(ALL_TYPES)
    assert frozenset().union(*kinds) == ALL_TYPES


def test_the_decoder_extracts_exactly_the_change_types():
    assert frozenset(decode.HEAP_EXTRACTORS) == rm_heap.record_types(rm_heap.HEAP_CHANGE_TYPES)
    assert frozenset(decode.HEAP2_EXTRACTORS) == rm_heap.record_types(rm_heap.HEAP2_CHANGE_TYPES)
    assert rm_heap.record_types(rm_heap.HEAP_CATALOG_TYPES) == {rm_heap.XLOG_HEAP_INPLACE}
    assert rm_heap.record_types(rm_heap.HEAP2_CATALOG_TYPES) == {rm_heap.XLOG_HEAP2_NEW_CID}


def test_decoding_and_spark_read_the_ignored_types_from_the_table():
    assert decode.HEAP_IGNORED == rm_heap.record_types(rm_heap.HEAP_IGNORED_TYPES) == {rm_heap.XLOG_HEAP_LOCK}
    assert decode.HEAP2_IGNORED == rm_heap.record_types(rm_heap.HEAP2_IGNORED_TYPES)
    assert tasks.HEAP_IGNORED is decode.HEAP_IGNORED and tasks.HEAP2_IGNORED is decode.HEAP2_IGNORED
