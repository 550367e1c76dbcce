"""The PostgreSQL basics in ``waldecode.pg`` every stage shares: LSN text and xid comparison.

The edge cases are transam.c's and multixact.c's: permanent transaction IDs (0, 1, 2)
compare as plain numbers and precede every normal one, normal IDs compare modulo 2^32
(an ID up to 2^31 - 1 ahead is newer, even across the wraparound), multixact IDs have
no permanent values.  Two IDs exactly 2^31 apart each precede the other, as in C.
"""

from __future__ import annotations

import pytest

from waldecode.errors import format_lsn as errors_format_lsn
from waldecode.pg.lsn import format_lsn, parse_lsn
from waldecode.pg.transam import multixact_precedes, xid_precedes
from waldecode.wal.xlogreader import parse_lsn as xlogreader_parse_lsn


@pytest.mark.parametrize("a,b,expected", [
    (3, 4, True), (4, 3, False), (5, 5, False),
    (0, 3, True), (3, 0, False), (1, 2, True), (2, 1, False), (2, 3, True), (3, 2, False),
    # permanent IDs precede even a normal ID that is "behind" them modulo 2^32
    (2, 0xFFFFFFFF, True), (0xFFFFFFFF, 2, False), (0, 0x80000003, True),
    # across the wraparound: 2^32 - 1 is older than 3, a normal ID 2^31 ahead is older
    (0xFFFFFFFF, 3, True), (3, 0xFFFFFFFF, False),
    (3, 3 + 0x7FFFFFFF, True), (3 + 0x7FFFFFFF, 3, False),
    # exactly 2^31 apart, (int32) (id1 - id2) is -2^31 both ways: each precedes the other
    (3, 3 + 0x80000000, True), (3 + 0x80000000, 3, True),
])
def test_xid_precedes_as_transam_c(a, b, expected):
    assert xid_precedes(a, b) is expected


@pytest.mark.parametrize("a,b,expected", [
    (1, 2, True), (2, 1, False), (7, 7, False),
    # no permanent multixact IDs: 0xFFFFFFFF is older than 1, 0 than 1, 1 is newer than 0xFFFFFFFF
    (0xFFFFFFFF, 1, True), (1, 0xFFFFFFFF, False), (0, 1, True), (2, 0x80000002, True), (0x80000002, 2, True),
])
def test_multixact_precedes_as_multixact_c(a, b, expected):
    assert multixact_precedes(a, b) is expected


def test_lsn_text_round_trip_and_errors():
    for lsn in (0, 0x16B3748, 0x1_0000_0000, 0xFFFFFFFF_FFFFFFFF, 0xA_0000_00C8):
        assert parse_lsn(format_lsn(lsn)) == lsn
    assert format_lsn(0x1_0000_00C8) == "1/C8" and format_lsn(0) == "0/0"
    assert parse_lsn(" 0/16b3748\n") == 0x16B3748
    for bad, why in (("16B3748", "expected X/X"), ("0/x", "expected X/X"), ("1/2/3", "expected X/X"),
                     ("100000000/0", "32 bits"), ("0/-1", "32 bits")):
        with pytest.raises(ValueError, match=why):
            parse_lsn(bad)
    # the old places still export the one copy
    assert errors_format_lsn is format_lsn and xlogreader_parse_lsn is parse_lsn
