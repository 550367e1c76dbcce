"""replica.heap_form_tuple: the key tuple an UPDATE or DELETE logs at wal_level=logical, built offline.

Whatever the columns kept, deforming the formed tuple gives back exactly the values kept and NULL
for the others (heaptuple.deform_tuple is the reader the replay uses), for every alignment and
length class: fixed-length by value (int2, int4, int8), fixed-length by reference (uuid, name),
varlena (text, numeric: a 4-byte header) and cstring.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from waldecode.catalog.model import Attribute
from waldecode.heap.heaptuple import deform_tuple
from waldecode.logical.replica import heap_form_tuple
from waldecode.rmgr.heap import SizeOfHeapHeader, xl_heap_header


def _att(n: int, attlen: int, attalign: str, byval: bool) -> Attribute:
    return Attribute(attnum=n, attname=f"c{n}", atttypid=23, atttypmod=-1, attlen=attlen, attbyval=byval,
                     attalign=attalign, attstorage="p", attisdropped=False)


# (attlen, attalign, byval, value strategy)
KINDS = [
    (2, "s", True, st.binary(min_size=2, max_size=2)),
    (4, "i", True, st.binary(min_size=4, max_size=4)),
    (8, "d", True, st.binary(min_size=8, max_size=8)),
    (16, "c", False, st.binary(min_size=16, max_size=16)),
    (64, "c", False, st.binary(min_size=64, max_size=64)),
    (-1, "i", False, st.binary(max_size=300)),
    (-1, "d", False, st.binary(max_size=40)),
    (-2, "c", False, st.binary(max_size=20).filter(lambda b: b"\x00" not in b)),
]


@st.composite
def rows(draw):
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
    attributes = [_att(i + 1, k[0], k[1], k[2]) for i, k in enumerate(kinds)]
    values = [draw(st.none() | k[3]) for k in kinds]
    return attributes, values


@given(rows())
def test_formed_tuple_deforms_to_its_values(row):
    attributes, values = row
    tup = heap_form_tuple(attributes, values)
    t_infomask2, t_infomask, t_hoff = xl_heap_header.unpack_from(tup)
    assert t_hoff % 8 == 0
    got = deform_tuple(memoryview(tup)[SizeOfHeapHeader:], t_infomask2, t_infomask, t_hoff, attributes)
    assert got == values


def test_key_columns_only():
    """The key tuple of ExtractReplicaIdentity: the key kept, the rest NULL."""
    attributes = [_att(1, 4, "i", True), _att(2, -1, "i", False), _att(3, 8, "d", True)]
    tup = heap_form_tuple(attributes, [b"\x07\x00\x00\x00", None, None])
    t_infomask2, t_infomask, t_hoff = xl_heap_header.unpack_from(tup)
    assert deform_tuple(tup[SizeOfHeapHeader:], t_infomask2, t_infomask, t_hoff, attributes) == \
        [b"\x07\x00\x00\x00", None, None]
