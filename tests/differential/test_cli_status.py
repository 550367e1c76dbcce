"""The exit-status contract and the one-line reports of ``decode``, on the bundled fixtures.

0: the output is complete and faithful; 1: something could not be decoded, undone or read (the output
says where); 2: usage.  ``--format sql`` that could not redo or undo a change exits 1; a resumed
``--slot`` run says where it resumed; ``-q`` leaves out the lines of a successful run; ``--format
pgoutput`` without the subscriber's options names them; ``--version``.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

from fixture_data import FIXTURES as FIXTURE_ROOT
from fixture_data import Fixture
from waldecode import _impl, cli

pytestmark = pytest.mark.skipif(not (FIXTURE_ROOT / "pg15-off" / "small_dml").is_dir(), reason="no fixtures")


def fixture(name: str) -> Fixture:
    return Fixture(FIXTURE_ROOT / name)


def decode(capfdbinary, fx: Fixture, *extra, to_end: bool = False) -> tuple[int, bytes, list[str]]:
    """``waldecode decode`` of a fixture's range, as its slot saw it (``to_end``: to the end of its WAL):
    (status, stdout, stderr lines)."""
    slot = fx.meta["slots"][0]
    capfdbinary.readouterr()
    end = [] if to_end else ["--end-lsn", fx.meta["end_lsn"]]
    status = cli.main(["decode", "--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["restart_lsn"],
                       *end, *map(str, extra), str(fx.wal_dir)])
    out, err = capfdbinary.readouterr()
    return status, out, err.decode().splitlines()


def test_sql_that_cannot_undo_or_redo_everything_exits_1(capfdbinary):
    # small_dml has tables without a key (redo cannot find their rows) and without REPLICA IDENTITY FULL
    # (the WAL holds no old row to undo an UPDATE or DELETE with)
    fx = fixture("pg15-off/small_dml")
    for extra, verb in ((["--format", "sql"], "redo"), (["--format", "sql", "--undo"], "undo")):
        status, out, err = decode(capfdbinary, fx, *extra)
        listed = [line for line in err if line.startswith(f"waldecode: cannot {verb} ")]
        assert listed, err
        commented = [line for line in out.decode().splitlines() if line.startswith(f"-- cannot {verb} ")]
        # each at its place in the output (undo: newest first), each listed on stderr
        assert sorted(line[3:] for line in commented) == sorted(line[len("waldecode: "):] for line in listed)
        assert err[-1] == (f"waldecode: error: {len(listed)} change(s) listed above could not be "
                           f"{'undone' if verb == 'undo' else 'redone'}: the output leaves them out (a comment "
                           "stands at each one's place)")
        assert status == 1
    # everything redone: a complete output, status 0, and nothing said under -q
    status, out, err = decode(capfdbinary, fixture("pg15-off/truncate"), "--format", "sql", "-q")
    assert status == 0 and err == [] and out.count(b"COMMIT;") >= 3
    status, _, err = decode(capfdbinary, fixture("pg15-off/truncate"), "--format", "sql", "--undo", "-q")
    assert status == 1 and "could not be undone" in err[-1]


def test_pgoutput_without_options_names_them(capfdbinary):
    fx = fixture("pg15-off/small_dml")
    status, out, err = decode(capfdbinary, fx, "--format", "pgoutput")
    assert status == 2 and out == b""
    assert err == ["waldecode: error: --format pgoutput needs -o proto_version and -o publication_names, the options "
                   "a subscriber sends: e.g. -o proto_version=3 -o publication_names=PUB[,PUB...]"]
    status, _, err = decode(capfdbinary, fx, "--format", "pgoutput", "-o", "proto_version=1")
    assert status == 2 and err[0].startswith("waldecode: error: --format pgoutput needs -o publication_names,")
    # the server's own words stay for a value it refuses
    status, _, err = decode(capfdbinary, fx, "--format", "pgoutput", "-o", "proto_version=0",
                            "-o", "publication_names=waldecode_pub")
    assert status == 2 and err == ["waldecode: error: client sent proto_version=0 but we only support protocol 1 or "
                                   "higher"]


def test_a_resumed_slot_says_where_and_quiet_says_nothing(capfdbinary, tmp_path):
    fx = fixture("pg15-off/small_dml")
    slot, out = tmp_path / "app.slot", tmp_path / "app.out"
    status, _, err = decode(capfdbinary, fx, "--slot", slot, "--output", out)
    assert status == 0 and err == []  # the end LSN reached: nothing to say
    written = out.stat().st_size
    assert written > 0
    from waldecode.logical.slot import SlotState

    state = SlotState.load(str(slot))
    status, _, err = decode(capfdbinary, fx, "--slot", slot, "--output", out)
    assert status == 0
    assert err[0] == (f"waldecode: slot {slot} resumed at {_lsn(state.confirmed_lsn)} "
                      f"(confirmed), restart {_lsn(state.restart_lsn)}, output continued after {written} bytes")
    status, _, err = decode(capfdbinary, fx, "--slot", slot, "--output", out, "-q")
    assert status == 0 and err == []


def test_quiet_leaves_out_the_normal_end_of_wal(capfdbinary):
    fx = fixture("pg15-off/small_dml")
    status, out, err = decode(capfdbinary, fx, to_end=True)
    assert status == 0 and out and len(err) == 1 and err[0].startswith("waldecode: end of WAL at 0/C00000")
    status, quiet_out, err = decode(capfdbinary, fx, "--quiet", to_end=True)
    assert status == 0 and quiet_out == out and err == []


def _lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == (f"waldecode {version('waldecode')} (reads WAL of PostgreSQL 13 to 18; hot path: "
                                       f"{_impl.IMPL}, available: {', '.join(_impl.available())})\n")
