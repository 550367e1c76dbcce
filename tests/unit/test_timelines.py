"""Archives holding several timelines, as after a failover: the history file joins them.

A primary wrote timeline 1; a standby was promoted at a switch point and wrote timeline
2, whose first segment repeats timeline 1's bytes up to the switch point.  Reading the
archive follows ``00000002.history`` (the newest timeline by default); ``--timeline 1``
reads what the old primary wrote after the fork, the transactions that never reached
the promoted standby.
"""

from __future__ import annotations

import pytest

import walgen
from waldecode.errors import SegmentFileError
from waldecode.wal.xlogreader import XLogReader

MB = 1 << 20


def make_archive(tmp_path):
    shared = [walgen.noop(3000 + 97 * i, fill=0x11) for i in range(600)]  # about 2 MB: into segment 3
    old = [walgen.noop(500 + i, fill=0x22) for i in range(800)]
    new = [walgen.noop(700 + i, fill=0x33) for i in range(800)]
    primary = walgen.WALWriter(seg_size=MB, start_lsn=MB, tli=1)
    primary.extend(shared)
    switch = primary.insert_lsn
    primary.extend(old)
    primary.write(tmp_path)
    standby = walgen.WALWriter(seg_size=MB, start_lsn=MB, tli=1)
    standby.extend(shared)
    standby.tli = 2  # pages from the switch point on carry the new timeline
    standby.extend(new)
    standby.write(tmp_path, segnos=range(switch // MB, standby.last_segno + 1))
    (tmp_path / "00000002.history").write_text(f"1\t{switch >> 32:X}/{switch & 0xFFFFFFFF:X}\tno recovery target "
                                               "specified\n")
    return primary, standby, switch


def test_history_file_joins_the_timelines(tmp_path):
    primary, standby, switch = make_archive(tmp_path)
    reader = XLogReader([tmp_path])
    got = [r.lsn for r in reader]
    assert reader.segments.tli == 2
    assert got == [w.lsn for w in standby.written]
    assert reader.stop.kind == "end"
    # The segment holding the switch point is read from the new timeline
    assert reader.segments.files[switch // MB].tli == 2
    assert reader.segments.files[switch // MB - 1].tli == 1


def test_old_timeline_shows_what_the_old_primary_wrote_after_the_fork(tmp_path):
    primary, standby, switch = make_archive(tmp_path)
    got = [r for r in XLogReader([tmp_path], start_lsn=switch, timeline=1)]
    assert [r.lsn for r in got] == [w.lsn for w in primary.written if w.lsn >= switch]
    assert all(r.main_data[:1] == b"\x22" for r in got)


def test_several_timelines_without_history_need_a_choice(tmp_path):
    make_archive(tmp_path)
    (tmp_path / "00000002.history").unlink()
    with pytest.raises(SegmentFileError, match="choose one with --timeline"):
        XLogReader([tmp_path])
