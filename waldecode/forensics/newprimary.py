"""The new primary after a failover, asked in read-only queries what a forensic report needs.

Owns the questions ``diverge`` puts to the promoted server when the new timeline's WAL is not
given: its timeline, its prepared transactions (``pg_prepared_xacts``), and for each row the old
timeline changed after the fork, whether the new timeline changed it too.  A row version created
on the new timeline after the fork has an ``xmin`` at or after the first xid the new timeline could
assign (the one after the newest xid of the WAL before the switch point): ``age(xmin)`` tells it
without reading any WAL.  A row the old timeline updated or deleted (so it existed at the fork)
that is gone was deleted on the new timeline.  The session is read-only
(``default_transaction_read_only``).  Hands ``Conflict``s to ``diverge``.
"""

from __future__ import annotations

from ..errors import UsageError
from ..pg.quote import quote_identifier
from ..wal.segments import parse_history
from .collect import ALL_ROWS, INSERT
from .diverge import Conflict


class NewPrimary:
    def __init__(self, dsn: str):
        try:  # lazy: psycopg (0.24 s) and catalog.dsn (50 ms: the data-directory readers), only with --dsn
            import psycopg
        except ImportError:
            raise UsageError("--dsn needs psycopg 3 (pip install 'psycopg[binary]')") from None
        from ..catalog.dsn import _one_line, redact_dsn  # lazy: see above

        self.where = redact_dsn(dsn)
        try:
            self.conn = psycopg.connect(dsn, autocommit=True, application_name="waldecode diverge")
            self.conn.execute("SET default_transaction_read_only = on")
            # the timeline WAL is written on now (pg_control's may lag behind a promotion until its checkpoint)
            self.timeline = int(self.conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0][:8],
                                16)
        except psycopg.Error as e:
            raise UsageError(f"cannot query the new primary at {self.where}: {_one_line(e)}") from None
        self._columns: dict = {}

    def close(self) -> None:
        self.conn.close()

    def history(self) -> tuple:
        """The new primary's timeline history file, parsed (``pg_read_file``: superuser or
        pg_read_server_files); () on timeline 1."""
        import psycopg  # lazy: only with --dsn, see __init__

        if self.timeline == 1:
            return ()
        name = f"pg_wal/{self.timeline:08X}.history"
        try:
            text = self.conn.execute("SELECT pg_read_file(%s)", (name,)).fetchone()[0]
        except psycopg.Error as e:
            from ..catalog.dsn import _one_line  # lazy: only with --dsn, see __init__

            raise UsageError(f"no history file among the input, and the new primary at {self.where} does not let "
                             f"{name} be read ({_one_line(e)}): give --new with its pg_wal, or --switch-lsn") from None
        return parse_history(text, f"{name} of the new primary at {self.where}")

    def prepared_gids(self) -> set:
        rows = self.conn.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").fetchall()
        return {r[0] for r in rows}

    def _table(self, table: str):
        """(columns {name: type}, primary-key column names) of ``table`` on the new primary, or None when it
        has no such table (created on the old timeline after the fork)."""
        if table not in self._columns:
            oid = self.conn.execute("SELECT to_regclass(%s)::oid", (table,)).fetchone()[0]
            if oid is None:
                self._columns[table] = None
            else:
                cols = dict(self.conn.execute(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s "
                    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (oid,)).fetchall())
                pk = [r[0] for r in self.conn.execute(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                    "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = %s AND i.indisprimary ORDER BY a.attnum",
                    (oid,)).fetchall()]
                self._columns[table] = (cols, pk)
        return self._columns[table]

    def lookup_key(self, table: str, key: tuple) -> tuple | None:
        """The columns and values to find the row ``key`` by on the new primary: its primary key when the
        key holds it (a table logging whole rows, REPLICA IDENTITY FULL, has the whole row as key)."""
        info = self._table(table)
        if info is None:
            return None
        cols, pk = info
        values = dict(key)
        if pk and all(c in values for c in pk):
            values = {c: values[c] for c in pk}
        values = tuple((c, v) for c, v in values.items() if c in cols)
        return values or None

    def _changed_since(self, table: str, key: tuple, next_xid: int):
        """(found, changed after the fork, xmin) for the row found by ``key`` (``lookup_key``) in ``table``."""
        cols, _pk = self._table(table)
        values = dict(key)
        where = " AND ".join(f"{_ident(c)} IS NULL" if v is None else f"{_ident(c)} = %s::{cols[c]}"
                             for c, v in values.items())
        row = self.conn.execute(
            f"SELECT xmin::text, age(xmin) <= age(%s::text::xid) FROM ONLY {table} WHERE {where} LIMIT 1",
            (str(next_xid), *[v for v in values.values() if v is not None])).fetchone()
        if row is None:
            return (False, False, None)
        return (True, row[1], row[0])

    def conflicts(self, lost: list, next_xid: int) -> list:
        """The rows of ``lost`` transactions the new timeline changed too; ``next_xid``: the first xid it
        could assign (after the newest of the WAL before the switch point)."""
        per_key: dict = {}
        for t in lost:  # in commit order
            for (table, key), ops in t.keys.items():
                per_key.setdefault((table, key), []).append((t.xid, t.commit_lsn, ops))
        out = []
        rows: dict = {}  # (table, lookup key) -> the old timeline's changes to that row
        for (table, key), old in per_key.items():
            if key == ALL_ROWS:
                if self._table(table) is None:
                    continue
                n = self.conn.execute(f"SELECT count(*) FROM ONLY {table} WHERE age(xmin) <= age(%s::text::xid)",
                                      (str(next_xid),)).fetchone()[0]
                if n:
                    out.append(Conflict(table, key, old, [(None, None, [f"{n} row(s) inserted or updated after "
                                                                         "the fork"])]))
                continue
            lookup = self.lookup_key(table, key)
            if lookup is not None:
                rows.setdefault((table, lookup), []).extend(old)
        for (table, lookup), old in rows.items():
            old.sort(key=lambda o: o[1])
            found, changed, xmin = self._changed_since(table, lookup, next_xid)
            existed_at_fork = old[0][2][0] != INSERT
            if found and changed:
                what = "updated" if existed_at_fork else "inserted"
                out.append(Conflict(table, lookup, old, [(None, None, [f"{what} after the fork (row xmin {xmin})"])]))
            elif not found and existed_at_fork:
                out.append(Conflict(table, lookup, old, [(None, None, ["deleted after the fork (the row is gone)"])]))
        return out


def _ident(name: str) -> str:
    return quote_identifier(name)
