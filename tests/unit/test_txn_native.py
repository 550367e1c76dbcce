"""``reorderbuffer.new_txn``: under the Cython implementation a transaction is ``_logical.TXN``, a class
owning its fields in C (the record loop reads and writes them without Python attribute lookups); it must be
the reference ``reorderbuffer.TXN`` to every Python reader: the same attributes with the same values as
made, the same properties and method, the same assignments accepted."""

from __future__ import annotations

import pytest

from waldecode import _impl
from waldecode.logical.reorderbuffer import TXN, ChangeList, new_txn

ATTRIBUTES = TXN.__slots__
PROPERTIES = ("nentries_mem", "size", "total_changes")


def test_new_txn_is_the_implementations(impl):
    txn = new_txn(7, 100)
    if impl == "cython":
        assert type(txn) is _impl.logical().TXN and type(txn.changes).__name__ == "ChangeBuffer"
    else:
        assert type(txn) is TXN and type(txn.changes) is ChangeList


def test_the_native_txn_is_the_reference_to_python_code():
    native_cls = pytest.importorskip("waldecode._logical").TXN
    ref, native = TXN(7, 100), native_cls(7, 100)
    for name in ATTRIBUTES:
        if name == "changes":
            continue
        assert getattr(native, name) == getattr(ref, name), name
    # what the reorder buffer and the decoder assign, accepted alike
    for t in (ref, native):
        sub = type(t)(8, 90)
        sub.toptxn, sub.is_known_as_subxact, sub.nentries = t, True, 3
        t.subtxns.append(sub)
        t.nentries += 2
        t.final_lsn, t.end_lsn, t.gid, t.xact_time, t.origin = 500, 520, "g", 123456789, 3
        t.prepared = t.has_base_snapshot = t.has_catalog_changes = True
        t.invalidations, t.inval_changes, t.spill_files = b"\x01", [], {1: "p"}
    for name in ATTRIBUTES + PROPERTIES:
        if name in ("changes", "subtxns", "toptxn"):
            continue
        assert getattr(native, name) == getattr(ref, name), name
    assert native.total_changes == ref.total_changes == 5
    assert native.first_change_lsn() == ref.first_change_lsn() == 90
    with pytest.raises(AttributeError):
        native.not_an_attribute = 1  # as the reference's __slots__ refuse it
