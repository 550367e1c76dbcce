"""Which backup of a repository answers a target: ``catalog.backups.fitting_backups`` and
``Backup.stopped_by``, on backups described as the tools record them (no files read).

pgBackRest records a set's stop time in whole seconds (``backup-timestamp-stop``, an epoch integer:
``catalog.backups._utc``), so a set stamped 10:00:00 may have stopped at 10:00:00.9: ``table``'s choice
(``surely``) counts it as stopped by 10:00:01, while ``catalog --before`` takes the stamp as it is.
barman's ``end_time`` keeps microseconds and is taken as it is.  tests/live/test_table_from_repository.py
checks the choice against real repositories and PostgreSQL's recovery.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from waldecode.catalog.backups import Backup, fitting_backups

T0 = datetime(2026, 11, 27, 10, 0, 0, tzinfo=timezone.utc)


def _backup(tool: str, label: str, stop_lsn: int, stop_time: datetime) -> Backup:
    return Backup(tool, label, "full", stop_lsn - 0x100, stop_lsn, stop_time - timedelta(seconds=5), stop_time,
                  1, "15", f"/repo/{label}", "main")


def test_a_whole_second_stop_counts_to_the_end_of_its_second():
    full = _backup("pgBackRest", "F", 0x2000000, T0 - timedelta(minutes=1))
    incr = _backup("pgBackRest", "I", 0x3000000, T0)
    half = T0 + timedelta(milliseconds=500)
    assert incr.stopped_by == T0 + timedelta(seconds=1)
    assert [b.label for b in fitting_backups([full, incr], before_time=half)] == ["I", "F"]
    assert [b.label for b in fitting_backups([full, incr], before_time=half, surely=True)] == ["F"]
    assert [b.label for b in fitting_backups([full, incr], before_time=T0 + timedelta(seconds=1),
                                             surely=True)] == ["I", "F"]


def test_barman_end_time_is_taken_as_it_is():
    first = _backup("barman", "20261127T095900", 0x2000000, T0 - timedelta(minutes=1))
    second = _backup("barman", "20261127T100000", 0x3000000, T0 + timedelta(milliseconds=200))
    assert second.stopped_by == second.stop_time
    assert [b.label for b in fitting_backups([first, second], before_time=T0 + timedelta(milliseconds=500),
                                             surely=True)] == ["20261127T100000", "20261127T095900"]


def test_stop_lsn_orders_and_bounds():
    a = _backup("pgBackRest", "A", 0x2000000, T0)
    b = _backup("pgBackRest", "B", 0x3000000, T0 + timedelta(minutes=1))
    assert [x.label for x in fitting_backups([a, b], before_lsn=0x3000000)] == ["B", "A"]
    assert [x.label for x in fitting_backups([a, b], before_lsn=0x2FFFFFF)] == ["A"]
    assert fitting_backups([a, b], before_lsn=0x1FFFFFF) == []


def test_backup_archive_is_beside_the_backup():
    pgbr = Backup("pgBackRest", "F", "full", 1, 2, T0, T0, 1, "15", "/var/lib/pgbackrest/backup/main/F", "main")
    barman = Backup("barman", "B", "full", 1, 2, T0, T0, 1, "15", "/var/lib/barman/pg/base/B", "pg")
    assert pgbr.archive == "/var/lib/pgbackrest/archive/main"
    assert barman.archive == "/var/lib/barman/pg"
