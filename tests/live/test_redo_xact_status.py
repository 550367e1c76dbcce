"""Transaction status and multixact members at a target, from a base backup and its WAL, against the server.

A PostgreSQL 15 primary (tests/support/pitr.py: archiving, a plain base backup) commits, aborts,
rolls back and releases subtransactions, prepares a transaction, and makes multixacts (two sessions
``FOR SHARE`` on one row; then five ``FOR KEY SHARE`` lockers, two before and three after the backup,
and an ``UPDATE`` among them), with transactions left open across the backup and at the end.  Each
transaction inserts a tagged row; the rows' ``xmin`` (pageinspect) name the xids of transactions
and subtransactions alike.

After every step the server's own answers are recorded: ``txid_status()`` of every xid so far and
``pg_get_multixact_members()`` of every multixact, with the insert LSN.  waldecode.redo.clog and
.multixact, built from the backup's files and its ``backup_label`` checkpoint (the plain base backup,
and a pgBackRest full set taken at the same moment, read in its repository), must give the answers
the server gave just before the backup with no record read, and those it gave after each step once
fed the archived records before that step's LSN.
"""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from pitr import PitrPrimary  # noqa: E402
from waldecode.errors import CatalogError  # noqa: E402
from waldecode.pg.lsn import parse_lsn  # noqa: E402
from waldecode.redo.backup_label import read_backup_label, redo_checkpoint  # noqa: E402
from waldecode.redo.clog import CommitLog, XidStatus  # noqa: E402
from waldecode.redo.multixact import MULTIXACT_STATUS_NAMES, MultiXacts, is_update  # noqa: E402
from waldecode.wal.xlogreader import XLogReader  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE EXTENSION pageinspect;
CREATE TABLE xt (tag int);
CREATE TABLE locked (id int PRIMARY KEY, v int);
INSERT INTO locked VALUES (1, 0), (2, 0);
"""

# txid_status's words (txid.c / xid8funcs.c pg_xact_status) for XidStatus
SERVER_WORDS = {XidStatus.COMMITTED: "committed", XidStatus.ABORTED: "aborted", XidStatus.IN_PROGRESS: "in progress"}


class Workload:
    """Sessions, the xids the server gave out, and its answers after each step."""

    def __init__(self, p: PitrPrimary):
        self.p = p
        self.sessions: dict[str, object] = {}
        self.tag = 0
        self.xids: set[int] = set()
        self.steps: list[tuple[int, dict, dict]] = []  # (insert LSN, {xid: status}, {multi: members})

    def session(self, name: str):
        if name not in self.sessions:
            self.sessions[name] = self.p.cluster.connect("pitr")
        return self.sessions[name]

    def run(self, name: str, *statements: str) -> None:
        conn = self.session(name)
        for s in statements:
            if s == "TAG":
                self.tag += 1
                s = f"INSERT INTO xt VALUES ({self.tag})"
            conn.execute(s)
            if s.startswith(("SELECT", "UPDATE")) and "locked" in s:
                self.xids.add(conn.execute("SELECT txid_current()").fetchone()[0] & 0xFFFFFFFF)

    def answers(self) -> tuple[int, dict, dict]:
        """The server's answers now: every tagged row's xmin and every locker's xid, every multixact."""
        conn = self.p.conn
        pages = conn.execute("SELECT pg_relation_size('xt') / 8192").fetchone()[0]
        for blk in range(pages):
            for xmin, data in conn.execute("SELECT t_xmin::text::bigint, t_data FROM "
                                           "heap_page_items(get_raw_page('xt', %s))", (blk,)):
                if data is not None:
                    self.xids.add(xmin)
        statuses = {x: conn.execute("SELECT txid_status(%s)", (x,)).fetchone()[0] for x in sorted(self.xids)}
        conn.execute("CHECKPOINT")  # pg_control_checkpoint()'s nextMulti is the last checkpoint's
        next_multi = conn.execute("SELECT next_multixact_id::text::bigint FROM pg_control_checkpoint()").fetchone()[0]
        multis = {m: [(int(x), mode) for x, mode in conn.execute(
            "SELECT xid::text, mode FROM pg_get_multixact_members(%s::text::xid)", (m,))]
            for m in range(1, next_multi)}
        lsn = self.p._insert_lsn()
        self.steps.append((lsn, statuses, multis))
        return self.steps[-1]


def before_backup(p: PitrPrimary) -> None:
    w = p.workload = Workload(p)
    w.run("a", "BEGIN", "TAG", "COMMIT")
    w.run("a", "BEGIN", "TAG", "ROLLBACK")
    w.run("a", "BEGIN", "TAG", "SAVEPOINT s1", "TAG", "ROLLBACK TO SAVEPOINT s1", "SAVEPOINT s2", "TAG",
          "RELEASE SAVEPOINT s2", "COMMIT")
    w.run("a", "BEGIN", "TAG", "SAVEPOINT s1", "TAG", "ROLLBACK")
    # open across the backup: a transaction with a released subtransaction, a prepared one
    w.run("open", "BEGIN", "TAG", "SAVEPOINT s1", "TAG", "RELEASE SAVEPOINT s1")
    w.run("a", "BEGIN", "TAG", "SAVEPOINT s1", "TAG", "PREPARE TRANSACTION 'p1'")
    # two sessions FOR SHARE on one row: a multixact; one ends, the other updates the row
    w.run("sh1", "BEGIN", "SELECT * FROM locked WHERE id = 1 FOR SHARE")
    w.run("sh2", "BEGIN", "SELECT * FROM locked WHERE id = 1 FOR SHARE")
    w.run("sh2", "COMMIT")
    w.run("sh1", "UPDATE locked SET v = v + 1 WHERE id = 1", "COMMIT")
    # lockers of row 2 that stay open across the backup
    for s in ("k1", "k2"):
        w.run(s, "BEGIN", "TAG", "SELECT * FROM locked WHERE id = 2 FOR KEY SHARE")
    w.before = w.answers()
    p.pgbackrest_set = _pgbackrest_backup(p)


def _pgbackrest_backup(p: PitrPrimary):
    """A pgBackRest full backup of the primary in the state ``before`` recorded (the archive script
    pushes to its repository too from now on), as a ``DataFiles``; None without pgBackRest."""
    import backup_tools as bt
    from waldecode.catalog.datadir.files import PgBackRestSet

    if bt.missing_tools("pgbackrest"):
        return None
    c = p.cluster
    conf_dir = p.base / "pgbackrest"
    conf_dir.mkdir()
    bt.chown_to_server(conf_dir)
    repo = p.base / "repo"
    conf = bt.pgbackrest_config(conf_dir, "main", repo, "gz", c.pgdata, c.socket_dir, c.port)
    bt.pgbackrest(conf, "main", "stanza-create")
    command = bt.archive_script(p.base / "archive-pgbackrest.sh",
                                [bt.copy_to(p.archive), bt.pgbackrest_push(conf, "main")])
    c.sql("ALTER SYSTEM SET archive_command = '%s'" % command.replace("'", "''"))
    c.sql("SELECT pg_reload_conf()")
    bt.pgbackrest(conf, "main", "backup", "--type=full")
    stanza_dir = repo / "backup" / "main"
    (label,) = [d.name for d in stanza_dir.iterdir() if d.is_dir() and d.name.endswith("F")]
    return PgBackRestSet(stanza_dir / label)


@pytest.fixture(scope="module")
def primary():
    with PitrPrimary(SCHEMA, "xt", before_backup=before_backup) as p:
        w = p.workload
        w.run("a", "COMMIT PREPARED 'p1'")
        w.answers()
        w.run("open", "SAVEPOINT s2", "TAG", "ROLLBACK TO SAVEPOINT s2", "COMMIT")
        w.answers()
        # more subtransactions than a PGPROC caches (PGPROC_MAX_CACHED_SUBXIDS 64): XLOG_XACT_ASSIGNMENT
        w.run("a", "BEGIN", "TAG", *[x for i in range(70) for x in (f"SAVEPOINT s{i}", "TAG")], "COMMIT")
        w.run("a", "BEGIN", "TAG", *[x for i in range(5) for x in (f"SAVEPOINT s{i}", "TAG")], "ROLLBACK")
        w.answers()
        # three more lockers of row 2 (five members), then an update among them, all ending
        for s in ("k3", "k4", "k5"):
            w.run(s, "BEGIN", "TAG", "SELECT * FROM locked WHERE id = 2 FOR KEY SHARE")
        w.run("upd", "BEGIN", "TAG", "UPDATE locked SET v = v + 1 WHERE id = 2")
        w.answers()
        for s in ("k1", "k2", "k3", "upd"):
            w.run(s, "COMMIT")
        for s in ("k4", "k5"):
            w.run(s, "ROLLBACK")
        w.answers()
        # left open at the end, with a subtransaction
        w.run("open", "BEGIN", "TAG", "SAVEPOINT s1", "TAG")
        w.answers()
        p.finish()
        try:
            yield p
        finally:
            for conn in w.sessions.values():
                conn.close()


def _readers(p: PitrPrimary, backup=None):
    """The readers of ``backup`` (the plain base backup unless given), and a reader of the archive from
    its redo point."""
    backup = p.backup if backup is None else backup
    label = read_backup_label(backup)
    checkpoint = redo_checkpoint(label, XLogReader([p.archive], start_lsn=label.start_lsn))
    reader = XLogReader([p.archive], start_lsn=label.start_lsn)
    return label, checkpoint, CommitLog(backup, checkpoint, 15), MultiXacts(backup, checkpoint), reader


@pytest.fixture(params=["pg_basebackup", "pgbackrest"])
def backup(request, primary):
    """The backup the readers read: the plain one, or a pgBackRest set (files compressed in a repository)."""
    if request.param == "pgbackrest":
        if primary.pgbackrest_set is None:
            pytest.skip("pgbackrest is not installed (./dev test installs it)")
        return primary.pgbackrest_set
    return primary.backup


def _differences(clog: CommitLog, multis: MultiXacts, statuses: dict, members: dict, known_multis) -> list[str]:
    out = []
    for xid, word in statuses.items():
        got = clog.status(xid)
        if SERVER_WORDS.get(got) != word:
            out.append(f"xid {xid}: {got.name}, server says {word}")
    for m in known_multis:
        got = [(x, MULTIXACT_STATUS_NAMES[s]) for x, s in multis.members(m)]
        if got != members[m]:
            out.append(f"multixact {m}: {got}, server says {members[m]}")
        updater = [x for x, s in multis.members(m) if is_update(s)]
        if multis.update_xid(m) != (updater[0] if updater else 0):
            out.append(f"multixact {m}: update xid {multis.update_xid(m)}")
    return out


def test_workload_made_what_it_should(primary):
    """The server's answers cover every status and multixacts of several members, updaters among them."""
    w = primary.workload
    final = w.steps[-1]
    assert set(final[1].values()) == {"committed", "aborted", "in progress"}
    assert set(w.before[1].values()) == {"committed", "aborted", "in progress"}
    assert len(w.before[2]) >= 2 and len(final[2]) > len(w.before[2])
    assert max(len(m) for m in final[2].values()) >= 5  # past one group of 4 members
    assert any(mode in ("nokeyupd", "upd") for ms in final[2].values() for _, mode in ms)
    assert len(final[1]) > 90


def test_redo_checkpoint_is_pg_controldata(primary):
    """The checkpoint of the backup_label, read from the WAL, has the counters pg_controldata prints for
    the backup (whose pg_control holds that same checkpoint here: nothing ran during the backup)."""
    label, checkpoint, _clog, _multis, _reader = _readers(primary)
    out = primary.cluster.run_bin("pg_controldata", "-D", primary.backup).stdout
    ctl = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    ctl = {k.strip(): v.strip() for k, v in ctl.items()}
    assert parse_lsn(ctl["Latest checkpoint location"]) == label.checkpoint_lsn == checkpoint.lsn
    assert parse_lsn(ctl["Latest checkpoint's REDO location"]) == checkpoint.redo == label.start_lsn
    epoch, xid = map(int, ctl["Latest checkpoint's NextXID"].split(":"))
    assert (epoch << 32 | xid) == checkpoint.next_xid
    assert int(ctl["Latest checkpoint's NextMultiXactId"]) == checkpoint.next_multi
    assert int(ctl["Latest checkpoint's NextMultiOffset"]) == checkpoint.next_multi_offset
    assert int(ctl["Latest checkpoint's oldestXID"]) == checkpoint.oldest_xid
    assert int(ctl["Latest checkpoint's oldestMultiXid"]) == checkpoint.oldest_multi
    assert int(ctl["Latest checkpoint's oldestActiveXID"]) == checkpoint.oldest_active_xid
    assert int(ctl["Latest checkpoint's TimeLineID"]) == checkpoint.timeline


def test_backup_files_alone(primary, backup):
    """Before any record: the backup's pg_xact and pg_multixact give the answers the server gave
    just before the backup."""
    _label, checkpoint, clog, multis, _reader = _readers(primary, backup)
    _lsn, statuses, members = primary.workload.before
    assert checkpoint.next_multi == max(members) + 1  # every multixact so far is in the files
    assert _differences(clog, multis, statuses, members, members) == []
    assert clog.files.clog_lookups > 0 and not clog.ended and not multis.created
    with pytest.raises(CatalogError, match="has not been created yet"):
        multis.members(checkpoint.next_multi)


def test_backup_and_wal_at_each_step(primary, backup):
    """Fed the records up to each step, the readers give the server's answers after that step."""
    _label, checkpoint, clog, multis, reader = _readers(primary, backup)
    records = iter(reader)
    pending = None
    checked = 0
    for lsn, statuses, members in primary.workload.steps[1:]:
        while True:
            rec = pending if pending is not None else next(records, None)
            pending = None
            if rec is None:
                break
            if rec.lsn >= lsn:
                pending = rec
                break
            clog.redo(rec)
            multis.redo(rec)
        assert _differences(clog, multis, statuses, members, members) == [], f"at {lsn:X}"
        checked += 1
    assert checked == len(primary.workload.steps) - 1
    # the later answers came from the records: ends after the redo point, multixacts created after it
    final_multis = primary.workload.steps[-1][2]
    assert len(clog.ended) > 80
    assert 1 < checkpoint.next_multi and set(multis.created) == set(range(checkpoint.next_multi, max(final_multis) + 1))


def test_bad_input_is_named(primary, tmp_path):
    """Damaged or missing inputs: one error naming the file, or the record's LSN."""
    import shutil

    from waldecode.errors import CorruptRecordError, WALError
    from waldecode.rmgr import RM_MULTIXACT_ID

    label, checkpoint, _clog, _multis, reader = _readers(primary)
    bk = tmp_path / "backup"
    bk.mkdir()
    for name in ("pg_xact", "pg_multixact"):
        shutil.copytree(primary.backup / name, bk / name)
    statuses = primary.workload.before[1]
    committed = min(x for x, w in statuses.items() if w == "committed")

    # no backup_label, one without its CHECKPOINT LOCATION
    with pytest.raises(CatalogError, match=r"no backup_label: not a base backup"):
        read_backup_label(bk)
    text = (primary.backup / "backup_label").read_text()
    (bk / "backup_label").write_text("".join(l for l in text.splitlines(True) if not l.startswith("CHECKPOINT")))
    with pytest.raises(CatalogError, match=r"invalid data in file .*backup/backup_label: no CHECKPOINT LOCATION"):
        read_backup_label(bk)
    # the checkpoint record not among the records given
    with pytest.raises(WALError, match=r"could not locate required checkpoint record at 0/[0-9A-F]+"):
        redo_checkpoint(label, XLogReader([primary.archive], start_lsn=label.checkpoint_lsn + 1))

    # a pg_xact segment gone: the file and the xid
    assert CommitLog(bk, checkpoint, 15).status(committed) == XidStatus.COMMITTED
    (bk / "pg_xact" / "0000").unlink()
    with pytest.raises(CatalogError, match=rf"pg_xact/0000 is missing: cannot read the status of transaction "
                                           rf"{committed}"):
        CommitLog(bk, checkpoint, 15).status(committed)

    # a pg_multixact/members segment gone
    assert MultiXacts(bk, checkpoint).members(1)
    (bk / "pg_multixact" / "members" / "0000").unlink()
    with pytest.raises(CatalogError, match=r"pg_multixact/members/0000: member 1 of multixact 1 is missing"):
        MultiXacts(bk, checkpoint).members(1)

    # a CREATE_ID record cut short, a commit record cut short: the record's LSN
    records = list(reader)
    create = next(r for r in records if r.xl_rmid == RM_MULTIXACT_ID and r.xl_info & 0xF0 == 0x20)
    with pytest.raises(CorruptRecordError, match=rf"CREATE_ID record of multixact \d+: \d+ members in 16 bytes "
                                                 rf"at LSN {create.lsn >> 32:X}/{create.lsn & 0xFFFFFFFF:X}"):
        MultiXacts(bk, checkpoint).redo(create._replace(main_data=create.main_data[:16]))
    commit = next(r for r in records if r.xl_rmid == 1 and r.xl_info & 0x70 == 0 and r.xl_info & 0x80)
    with pytest.raises(CorruptRecordError, match=r"transaction end record does not parse: .* at LSN 0/"):
        CommitLog(bk, checkpoint, 15).redo(commit._replace(main_data=commit.main_data[:10]))
