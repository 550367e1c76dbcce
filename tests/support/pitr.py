"""PostgreSQL's own point-in-time recovery as the oracle of "a table as it was at any moment" (issue 23).

Owns the truth the redo of a table is compared with: a PostgreSQL primary (15, or the ``major`` given:
16 and 18 are the bundled servers of ``waldecode.testing.cluster``) archiving every WAL
segment (``archive_command`` copying into a directory), a plain base backup of it taken before the
workload (``pg_basebackup -Fp -X none``: the WAL comes from the archive, as a DBA restores), a
workload recorder (``PitrPrimary.transaction``) that notes after each transaction what recovery can
be told to stop at: the xid (``txid_current()``), the commit record's LSN (read back from the WAL with
``pg_waldump``, the server's own reader), the insert LSN after it, the commit timestamp
(``pg_xact_commit_timestamp``: the ``xact_time`` of the commit record, which is what
``recovery_target_time`` compares) and a clock reading between it and the next commit, and the
table's ``COPY ... TO STDOUT`` bytes as the primary holds them after that transaction.

``PitrPrimary.recover(target)`` is one point-in-time recovery: the backup copied (``cp -a
--reflink=auto``) into a throw-away directory, ``recovery.signal`` and ``restore_command``,
``recovery_target_{lsn,time,xid}``, ``recovery_target_inclusive`` and ``recovery_target_action =
'promote'`` written into its ``postgresql.auto.conf`` (read last, so it wins over the primary's
settings the backup carries), started with ``hot_standby = off`` (``pg_ctl start -w`` then returns
once the recovery ended and the server promoted), the table copied out, the server stopped and the
directory removed.  A target recovery cannot reach raises ``RecoveryFailed`` with PostgreSQL's own
FATAL line (xlogrecovery.c: "recovery ended before configured recovery target was reached",
"requested recovery stop point is before consistent recovery point").

``PitrPrimary.targets()`` turns what the workload recorded into targets of each kind with the index
of the last transaction PostgreSQL's recovery must include (xlogrecovery.c recoveryStopsBefore and
recoveryStopsAfter):

* ``lsn`` at a commit record's start: inclusive on applies it (the stop is after the first record
  at or past the target), off stops before it; at the insert LSN right after a commit, both keep it;
* ``time`` at a commit timestamp: inclusive on stops before the first commit later than the target,
  off before the first at or after it; a clock reading between two commits keeps the first either way;
  recovery stops only at a transaction's end record, so a time at or after the last one is not reached;
* ``xid`` of a committed transaction: inclusive on stops after its commit, off before it.

Throw-away clusters run with ``fsync = off``, small ``shared_buffers``, no archiving (a promoted
copy must not write timeline 2 into the archive the next recoveries read) and
``recovery_target_timeline = 'current'``.  Everything runs as the server's unprivileged user when
this process is root (tests/support/backup_tools.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import backup_tools as bt
from waldecode.pg.lsn import format_lsn, parse_lsn

__all__ = ["PitrPrimary", "Recovered", "RecoveryFailed", "Target", "TxnRecord", "copy_digest", "copy_lines"]

DB = "pitr"

#: settings of every throw-away recovery cluster (postgresql.auto.conf, after the primary's own)
RECOVERY_SETTINGS = {
    "listen_addresses": "",
    "archive_mode": "off",  # a promoted copy must leave the shared archive alone
    "hot_standby": "off",  # pg_ctl start -w returns when recovery has ended and the server promoted
    "fsync": "off",
    "full_page_writes": "on",
    "shared_buffers": "16MB",
    "max_wal_size": "1GB",
    "checkpoint_timeout": "1h",
    "log_min_messages": "log",  # the "recovery stopping ..." line says where it stopped
    "log_checkpoints": "off",
    "recovery_target_action": "promote",
    "recovery_target_timeline": "current",
}

# xlogrecovery.c recoveryStopsBefore/After: "recovery stopping before commit of transaction 745, time ..."
_STOPPING_RE = re.compile(r"LOG:\s+(recovery stopping .*)$", re.M)
_FATAL_RE = re.compile(r"(FATAL:\s+.*)$", re.M)
# pg_waldump.c XLogDumpDisplayRecord: "rmgr: Transaction len (rec/tot): ..., tx: 745, lsn: 0/0301A2B8, prev
# 0/0301A280, desc: COMMIT 2026-..." (xactdesc.c names the record COMMIT or ABORT)
_WALDUMP_XACT_END_RE = re.compile(r"\btx:\s+(\d+), lsn: ([0-9A-F]+/[0-9A-F]+), prev [0-9A-F]+/[0-9A-F]+, "
                                  r"desc: (COMMIT|ABORT)\b")


def copy_table(conn, table: str, digest: bool = False) -> bytes | None:
    """``COPY ... TO STDOUT`` of ``table`` on an autocommit connection; a partitioned table's rows are
    its partitions' (``COPY`` refuses a partitioned table: ``SELECT *`` is what a DBA copies); None when
    there is no such table.  With ``digest``, ``copy_digest``'s text of it instead of the bytes."""
    kind = conn.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", (table,)).fetchone()
    if kind is None:
        return None
    source = f"(SELECT * FROM {table})" if kind[0] == "p" else table
    with conn.cursor() as cur:
        with cur.copy(f"COPY {source} TO STDOUT") as cp:
            if digest:
                return copy_digest(cp).encode()
            return b"".join(bytes(b) for b in cp)


def copy_lines(data: bytes) -> list[bytes]:
    """The rows of ``COPY ... TO STDOUT`` text output, sorted: the table as a multiset of rows."""
    return sorted(data.splitlines())


def copy_digest(blocks) -> str:
    """The table as a multiset of rows, in constant memory, from ``COPY ... TO STDOUT`` text output
    given in blocks of any size (a row's line break escaped, so a line is a row): the number of rows
    and the sum, modulo 2**256, of each row's SHA-256 (a sum, so that the order of the rows does not
    matter)."""
    import hashlib

    n = total = 0
    rest = b""
    for block in blocks:
        lines = (rest + bytes(block)).split(b"\n")
        rest = lines.pop()
        for line in lines:
            total += int.from_bytes(hashlib.sha256(line).digest(), "big")
            n += 1
    if rest:
        total += int.from_bytes(hashlib.sha256(rest).digest(), "big")
        n += 1
    return f"{n} rows, sha256 sum {total % 2 ** 256:064x}"


@dataclass(frozen=True)
class TxnRecord:
    """One transaction of the workload, as the primary told it."""

    index: int  # position among the workload's transactions (0 is the first after the backup)
    xid: int
    committed: bool
    lsn: int  # start of its commit (or abort) record, read back with pg_walinspect
    end_lsn: int  # pg_current_wal_insert_lsn() right after it
    time: str  # commit timestamp (pg_xact_commit_timestamp; '' for an abort)
    after: str  # clock_timestamp() after it ended, before the next transaction began
    rows: bytes | None  # the table's COPY TO STDOUT on the primary after it (None: not recorded)


@dataclass(frozen=True)
class Target:
    """A recovery target and the last committed transaction the recovery must include (-1: none)."""

    kind: str  # lsn | time | xid
    value: str  # as written into recovery_target_<kind>
    inclusive: bool
    last_included: int  # TxnRecord.index of the last transaction whose rows it shows, -1: as backed up

    def __str__(self) -> str:
        return f"{self.kind}={self.value} inclusive={'on' if self.inclusive else 'off'}"


@dataclass
class Recovered:
    """A recovered and promoted cluster's copy of the table."""

    target: Target
    copy: bytes | None  # COPY table TO STDOUT (None: no such table there)
    lines: list[bytes] | None  # its rows, sorted
    stopping: str  # the server's "recovery stopping ..." log line ('' when it printed none)
    seconds: float  # copy of the backup to removal of the throw-away directory


class RecoveryFailed(RuntimeError):
    """Recovery to a target failed; ``fatal`` is PostgreSQL's own FATAL line."""

    def __init__(self, target, fatal: str, log: str):
        self.target, self.fatal, self.log = target, fatal, log
        super().__init__(f"recovery to {target} failed: {fatal}")


@dataclass
class PitrPrimary:
    """A PostgreSQL primary (``major``, 15 by default) archiving its WAL, a base backup of it, and the
    workload's record.

    ``with PitrPrimary(schema, table) as p:`` starts the primary, creates ``schema`` in database
    ``pitr``, calls ``before_backup(p)`` if given (work that must be in the backup's files: open
    transactions, another backup tool's set) and takes the base backup (``p.backup``; ``p.archive``
    is the archive); then ``p.transaction(...)`` per transaction (``p.outside(...)`` for statements
    that are no target, such as VACUUM), ``p.finish()`` once (switches and archives the last segment,
    reads back the commit LSNs), ``p.targets()`` and ``p.recover(target)``, whose rows compare with
    ``p.rows_after(target.last_included)``.
    """

    schema: str
    table: str  # the table compared; it may be created by the workload (its rows are None until then)
    settings: dict = field(default_factory=dict)
    major: int = 15  # the server's major version (waldecode.testing.cluster.find_bindir finds it)
    # a table too large to hold: every ``rows`` and ``Recovered.copy`` is ``copy_digest``'s text instead
    # of the COPY bytes (and ``Recovered.lines`` that one line)
    digest: bool = False
    before_backup: Callable | None = None  # called with the primary after ``schema``, before the backup
    # more archive_command steps after the copy into ``archive`` (shell lines, ``$1`` = %p, ``$2`` = %f),
    # made from the temporary directory before the server starts: a backup tool's archive beside it
    archive_also: Callable | None = None
    archive_script_name: str = "archive.sh"  # pgBackRest's backup wants "pgbackrest" in archive_command
    txns: list = field(default_factory=list)
    # target -> its Recovered: the backup and the archive only ever grow before ``finish`` and are read
    # after it, so a target's recovery is the same each time and is done once (each costs seconds)
    _recovered: dict = field(default_factory=dict, repr=False)

    def __enter__(self) -> "PitrPrimary":
        from waldecode.testing.cluster import Cluster, ClusterError

        self.base = bt.server_tempdir("waldecode-pitr")
        try:
            self.archive = self.base / "archive"
            self.archive.mkdir()
            bt.chown_to_server(self.archive)
            also = self.archive_also(self.base) if self.archive_also is not None else []
            command = bt.archive_script(self.base / self.archive_script_name, [bt.copy_to(self.archive), *also])
            settings = {"archive_mode": "on", "archive_command": command, "track_commit_timestamp": "on",
                        **self.settings}
            try:
                self.cluster = Cluster(self.major, settings=settings, base_dir=self.base)
                self.cluster.__enter__()
            except ClusterError as e:
                import pytest
                pytest.skip(f"PostgreSQL {self.major} is not available: {e}")
            c = self.cluster
            c.sql(f"CREATE DATABASE {DB}")
            self.conn = c.connect(DB)
            self.conn.execute(self.schema)
            if self.before_backup is not None:
                self.before_backup(self)
            self.backup = self.base / "backup"
            c.run_bin("pg_basebackup", "-D", self.backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                      "-Fp", "-X", "none", "-c", "fast", "--no-sync")
            # pg_backup_stop wrote XLOG_BACKUP_END before this insert LSN: every transaction from here on
            # is after the point where recovery of the backup becomes consistent
            self.backup_rows = self._copy()
            self.backup_end_lsn = self._insert_lsn()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if getattr(self, "conn", None) is not None:
                self.conn.close()
            if getattr(self, "cluster", None) is not None:
                self.cluster.__exit__(None, None, None)
        finally:
            if os.environ.get("WALDECODE_KEEP_CLUSTER", "") in ("", "0"):
                shutil.rmtree(self.base, ignore_errors=True)

    # -- the workload ---------------------------------------------------------------------------

    def _copy(self, conn=None) -> bytes | None:
        """``copy_table`` of the table through ``conn`` (the primary's by default), with ``digest``."""
        return copy_table(conn or self.conn, self.table, self.digest)

    def _insert_lsn(self) -> int:
        return parse_lsn(self.conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])

    def transaction(self, *statements: str, commit: bool = True, rows: bool = True) -> TxnRecord:
        """Run ``statements`` in one transaction that is given an xid, commit it (or roll it back) and
        record what recovery targets need; returns the record (its ``lsn`` is filled by ``finish``).
        ``rows=False`` leaves its ``rows`` None, for a table too large to copy out after every
        transaction when no target is compared there."""
        conn = self.conn
        conn.execute("BEGIN")
        for s in statements:
            conn.execute(s)
        xid = conn.execute("SELECT txid_current()").fetchone()[0] & 0xFFFFFFFF
        conn.execute("COMMIT" if commit else "ROLLBACK")
        end_lsn = self._insert_lsn()
        ts = ""
        if commit:
            ts = conn.execute("SELECT pg_xact_commit_timestamp(%s::text::xid)::text", (xid,)).fetchone()[0]
        after = conn.execute("SELECT clock_timestamp()::text").fetchone()[0]
        rec = TxnRecord(len(self.txns), xid, commit, 0, end_lsn, ts, after, self._copy() if rows else None)
        self.txns.append(rec)
        return rec

    def outside(self, *statements: str) -> None:
        """Run ``statements`` outside any recorded transaction (``VACUUM``, ``CHECKPOINT``): no target is
        taken from them; a commit record they write ends no transaction of ``txns``.  The rows must be
        those of the last transaction, unless it recorded none (``rows=False``)."""
        for s in statements:
            self.conn.execute(s)
        if self.txns and self.txns[-1].rows is None:
            return
        rows = self._copy()
        if rows != self.rows_after(len(self.txns) - 1):
            raise RuntimeError(f"{statements} changed the rows of {self.table}: run it as a transaction")

    def finish(self) -> None:
        """The end of the workload: the last segment switched out and archived, and the start LSN of
        every transaction's commit or abort record read back from the archived WAL by the server's
        own ``pg_waldump`` (every version has it; pg_walinspect is a contrib module the bundled 16
        and 18 servers lack)."""
        end = self._insert_lsn()
        self.conn.execute("SELECT pg_switch_wal()")
        bt.wait_archived(self.cluster)
        out = self.cluster.run_bin("pg_waldump", "--path", self.archive, "--rmgr", "Transaction",
                                   "--start", format_lsn(self.backup_end_lsn), "--end", format_lsn(end)).stdout
        ends = {(int(xid), kind): parse_lsn(lsn) for xid, lsn, kind in _WALDUMP_XACT_END_RE.findall(out)}
        done = []
        for t in self.txns:
            key = (t.xid, "COMMIT" if t.committed else "ABORT")
            if key not in ends:
                raise RuntimeError(f"no {key[1]} record of transaction {t.xid} between "
                                   f"{format_lsn(self.backup_end_lsn)} and {format_lsn(end)}")
            done.append(TxnRecord(t.index, t.xid, t.committed, ends[key], t.end_lsn, t.time, t.after, t.rows))
        self.txns = done
        self.end_lsn = end

    # -- targets --------------------------------------------------------------------------------

    def rows_after(self, last_included: int) -> bytes:
        """The table as the primary held it once transaction ``last_included`` ended (-1: as backed up)."""
        return self.backup_rows if last_included < 0 else self.txns[last_included].rows

    def targets(self, every: int = 1) -> list[Target]:
        """Targets of the three kinds at the committed transactions (every ``every``-th one), with the
        transaction recovery must stop after (see the module's docstring for the rules)."""
        committed = [t for t in self.txns if t.committed]
        return [target for t in committed[::every] for target in self.targets_at(t)]

    def targets_at(self, t: TxnRecord) -> list[Target]:
        """The targets at committed transaction ``t``: those that include it, then those that stop
        before it (``last_included`` tells which)."""
        before = t.index - 1  # a rolled-back transaction there leaves the rows of the one before it
        out = [
            Target("lsn", format_lsn(t.lsn), True, t.index),
            Target("lsn", format_lsn(t.lsn), False, before),
            Target("lsn", format_lsn(t.end_lsn), True, t.index),
            Target("time", t.time, False, before),
            Target("xid", str(t.xid), True, t.index),
            Target("xid", str(t.xid), False, before),
        ]
        # A time target is reached only at a later transaction's end record (recoveryStopsBefore):
        # at or after the last one recovery runs out of WAL first (RecoveryFailed)
        if t.index < len(self.txns) - 1:
            out += [Target("time", t.time, True, t.index), Target("time", t.after, False, t.index)]
        return out

    def spread_targets(self, exclude_every: int = 3) -> list[Target]:
        """Targets that reach every state of the table the workload made and every kind of target at
        several points of it, without near-duplicates (each target costs a whole recovery): at each
        committed transaction one target that includes it, the kinds taking turns (the commit record's
        LSN inclusive on, the insert LSN after it, the xid inclusive on, the commit time inclusive on, a
        clock reading after it inclusive off); and at every ``exclude_every``-th one, from the first
        on (the backup's rows), one that stops just before it, in turn by LSN, time and xid (inclusive
        off)."""
        out = []
        committed = [t for t in self.txns if t.committed]
        for k, t in enumerate(committed):
            at = self.targets_at(t)
            including = [x for x in at if x.last_included == t.index]
            excluding = [x for x in at if x.last_included != t.index]
            out.append(including[k % len(including)])
            if k % exclude_every == 0:
                out.append(excluding[(k // exclude_every) % len(excluding)])
        return out

    # -- one recovery ---------------------------------------------------------------------------

    def recover(self, target: Target) -> Recovered:
        """Restore the backup into a throw-away cluster, recover it to ``target``, promote it and copy
        the table out; ``RecoveryFailed`` with PostgreSQL's FATAL line when the recovery cannot end there.
        A target recovered before gives that recovery's result again."""
        import psycopg

        if target in self._recovered:
            return self._recovered[target]
        started = time.monotonic()
        work = Path(bt.server_tempdir("waldecode-pitr-target"))
        try:
            data = work / "data"
            proc = subprocess.run(["cp", "-a", "--reflink=auto", str(self.backup), str(data)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"cannot copy the base backup: {proc.stderr.strip()}")
            conf = dict(RECOVERY_SETTINGS)
            conf.update({
                "port": "5432",  # names the socket file in a directory of its own
                "unix_socket_directories": str(work),
                "restore_command": f'cp "{self.archive}/%f" "%p"',
                f"recovery_target_{target.kind}": target.value,
                "recovery_target_inclusive": "on" if target.inclusive else "off",
            })
            with open(data / "postgresql.auto.conf", "a", encoding="utf-8") as f:
                f.write("\n# tests/support/pitr.py: one point-in-time recovery\n")
                f.writelines(f"{k} = '{v}'\n" for k, v in conf.items())
            (data / "recovery.signal").write_bytes(b"")
            bt.chown_to_server(work)
            log = work / "server.log"
            pg_ctl = [str(self.cluster.bindir / "pg_ctl"), "-D", str(data), "-l", str(log)]
            proc = bt.run_as_server([*pg_ctl, "-w", "-t", "300", "start"], check=False, timeout=330)
            try:
                text = _wait_promoted(data, log, target, proc.returncode)
                with psycopg.connect(host=str(work), port=5432, user="postgres", dbname=DB,
                                     autocommit=True) as conn:
                    if conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                        raise RuntimeError(f"recovery to {target}: the server did not promote")
                    copy = self._copy(conn)
            finally:
                bt.run_as_server([*pg_ctl, "-m", "immediate", "-w", "stop"], check=False)
            stopping = _STOPPING_RE.findall(text)
            got = self._recovered[target] = Recovered(target, copy, None if copy is None else copy_lines(copy),
                                                      stopping[-1] if stopping else "", time.monotonic() - started)
            return got
        finally:
            shutil.rmtree(work, ignore_errors=True)


# src/include/utils/pidfile.h: LOCK_FILE_LINE_PM_STATUS (1-based), PM_STATUS_READY
LOCK_FILE_LINE_PM_STATUS = 8
PM_STATUS_READY = "ready"


def _wait_promoted(data: Path, log: Path, target, pg_ctl_status: int, timeout: float = 300) -> str:
    """Wait until the recovering server promoted and accepts connections; its log so far.

    With hot_standby off, ``pg_ctl start -w`` already returns once the postmaster reports "standby"
    (recovery running, no connections); the postmaster.pid status line turns "ready" after the
    promotion.  When the server exits instead (postmaster.pid gone), its log's FATAL line is the
    answer: ``RecoveryFailed``."""
    deadline = time.monotonic() + timeout
    pidfile = data / "postmaster.pid"
    while True:
        try:
            lines = pidfile.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            lines = None
        if lines is not None and len(lines) >= LOCK_FILE_LINE_PM_STATUS \
                and lines[LOCK_FILE_LINE_PM_STATUS - 1].strip() == PM_STATUS_READY:
            return log.read_text(encoding="utf-8", errors="replace")
        if lines is None or pg_ctl_status != 0:
            time.sleep(0.2)  # let the postmaster finish writing its log
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            fatal = _FATAL_RE.findall(text)
            if not fatal:
                raise RuntimeError(f"recovery to {target}: the server stopped (pg_ctl start exit {pg_ctl_status}) "
                                   f"without a FATAL line in its log:\n{text[-3000:]}")
            raise RecoveryFailed(target, fatal[0].strip(), text)
        if time.monotonic() > deadline:
            raise RuntimeError(f"recovery to {target} did not end within {timeout:.0f} s")
        time.sleep(0.02)
