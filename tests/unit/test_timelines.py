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


def test_timelines_lists_forks_segments_and_where_each_timeline_ends(tmp_path):
    from waldecode.forensics.timelines import Fork, segment_runs, timelines
    from waldecode.wal.segments import scan

    primary, standby, switch = make_archive(tmp_path)
    newest = tmp_path / f"00000002{standby.last_segno >> 32:08X}{standby.last_segno & 0xFFFFFFFF:08X}"
    newest.rename(newest.with_name(newest.name + ".partial"))  # the new primary's segment still being written
    tl1, tl2 = timelines([tmp_path])
    assert tl1.tli == 1 and tl1.forks == [Fork(1, 2, switch)] and tl1.parent is None
    assert tl2.history == ((1, switch),) and tl2.begins_at == switch and tl2.forks == []
    last = XLogReader([tmp_path], timeline=1)
    records = list(last)
    assert tl1.end_lsn == records[-1].end_lsn > switch and tl1.past_switch(tl1.forks[0])
    assert tl2.end_lsn == list(XLogReader([tmp_path]))[-1].end_lsn
    assert [f.segno for f in tl2.segments] == list(range(switch // MB, standby.last_segno + 1))
    (first, last_name, count, partial), = segment_runs(tl2.segments, scan([tmp_path]).seg_size)
    assert count == len(tl2.segments) and partial == [newest.name + ".partial"]


def test_a_start_past_the_switch_point_is_warned_about(tmp_path):
    from waldecode.forensics.timelines import start_warnings, timelines
    from waldecode.pg.lsn import format_lsn

    primary, standby, switch = make_archive(tmp_path)
    tls = timelines([tmp_path])
    assert start_warnings(tls, switch - 1, 2) == [] and start_warnings(tls, switch - 1, 1) == []
    (w,) = start_warnings(tls, switch, 2)
    assert f"timeline 1's WAL from {format_lsn(switch)} to {format_lsn(tls[0].end_lsn)}" in w
    assert "--timeline 1" in w
    (w,) = start_warnings(tls, switch + 100, 1)
    assert "never reached timeline 2" in w


def test_timelines_command(tmp_path, capsys):
    from waldecode.cli import main
    from waldecode.pg.lsn import format_lsn

    primary, standby, switch = make_archive(tmp_path)
    assert main(["timelines", str(tmp_path), "--start-lsn", format_lsn(switch)]) == 0
    out = capsys.readouterr().out
    assert f"timeline 2: forked from timeline 1 at {format_lsn(switch)}" in out
    assert f"switch point {format_lsn(switch)}: timeline 2 forked here; this timeline goes on to" in out
    assert out.count("warning: the start LSN") == 1


def test_diverge_without_a_history_file_asks_for_the_switch_point(tmp_path, capsys):
    from waldecode.cli import main
    from waldecode.errors import UsageError
    from waldecode.forensics.diverge import find_fork
    from waldecode.forensics.timelines import timelines

    primary, standby, switch = make_archive(tmp_path)
    assert find_fork(timelines([tmp_path]), None, None, {1: {}, 2: {}})[:3] == (1, 2, switch)
    (tmp_path / "00000002.history").unlink()
    with pytest.raises(UsageError, match="give the switch point with --switch-lsn"):
        find_fork(timelines([tmp_path]), None, None, {1: {}, 2: {}})
    assert find_fork(timelines([tmp_path]), switch, 1, {1: {}, 2: {}}) == (1, None, switch, "--switch-lsn")
    # --format sql is another piece of work: refused clearly, before anything is read
    catalog = tmp_path / "catalog.json"
    catalog.write_text("{}")
    assert main(["diverge", "--old", str(tmp_path), "--catalog", str(catalog), "--format", "sql"]) == 2
    assert "not available yet" in capsys.readouterr().err
