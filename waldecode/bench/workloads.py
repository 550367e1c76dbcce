"""The benchmark's workloads: what each one writes to the WAL, and how its size follows ``--scale``.

A ``Workload`` has a ``setup`` (schema and data written before the catalog snapshot and
the slots, so not decoded) and a ``run`` (the WAL that is measured).  Sizes are given
for ``--scale 1``, the size of the full benchmark (pgbench 80,000 transactions, one
1,000,000-row transaction); ``size(scale)`` scales them, never below a small floor so
that a tiny test run still writes every kind of change.  ``WORKLOADS`` lists them in
the order they run; ``runner`` builds the cluster around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

DB = "bench"


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str  # one line, with {n} for the scaled size
    base_size: int  # at --scale 1
    min_size: int
    setup: Callable  # (cluster, conn, n)
    run: Callable  # (cluster, conn, n)

    def size(self, scale: float) -> int:
        return max(self.min_size, round(self.base_size * scale))

    def describe(self, scale: float) -> str:
        return self.summary.format(n=self.size(scale))


def _pgbench(cluster, *args: str) -> None:
    cluster.run_bin("pgbench", "-h", str(cluster.socket_dir), "-p", str(cluster.port), "-U", "postgres",
                    *args, DB, timeout=None)


# -- pgbench: TPC-B-like transactions (3 updates and an insert each) from two clients ----------

def _pgbench_setup(cluster, conn, n: int) -> None:
    # Scale factor 10 (1M accounts) at full size; the initial load is not measured
    _pgbench(cluster, "-i", "-q", "-s", str(max(1, round(n / 8000))))


def _pgbench_run(cluster, conn, n: int) -> None:
    _pgbench(cluster, "-n", "-c", "2", "-j", "2", "-t", str(n // 2))


# -- pgbench_ddl: pgbench in sixteen parts, each followed by a DDL statement and a prepared transaction --

# What a deployment's migrations do to a table being written: each forces the decoder to follow the
# catalog (a new column, a renamed one, a type change that rewrites the table, a new table, VACUUM FULL,
# TRUNCATE); the prepared transaction is decoded at COMMIT PREPARED, as pg_recvlogical does without
# --two-phase
_DDL = [
    "ALTER TABLE pgbench_history ADD COLUMN note{k} text DEFAULT 'm{k}'",
    "ALTER TABLE pgbench_history RENAME COLUMN {filler} TO filler{k}",
    "ALTER TABLE pgbench_history ALTER COLUMN delta TYPE bigint",
    "CREATE TABLE ddl_{k} (id int PRIMARY KEY, v text); INSERT INTO ddl_{k} VALUES ({k}, 'created')",
    "VACUUM FULL pgbench_branches",
    "TRUNCATE pgbench_history",
]
DDL_PARTS = 16


def _pgbench_ddl_setup(cluster, conn, n: int) -> None:
    _pgbench_setup(cluster, conn, n)
    conn.execute("CREATE TABLE ddl_log (part int PRIMARY KEY, statement text)")


def _pgbench_ddl_run(cluster, conn, n: int) -> None:
    per_client = max(1, n // (2 * DDL_PARTS))
    for k in range(DDL_PARTS):
        _pgbench(cluster, "-n", "-c", "2", "-j", "2", "-t", str(per_client))
        statement = _DDL[k % len(_DDL)]
        if k % len(_DDL) == 2:  # alternate the type, so that every ALTER TYPE rewrites
            statement = statement.replace("bigint", "bigint" if (k // len(_DDL)) % 2 == 0 else "int")
        filler = "filler" if k < len(_DDL) else f"filler{k - len(_DDL)}"  # as the last rename left it
        for part in statement.format(k=k, filler=filler).split("; "):
            conn.execute(part)
        with cluster.connect(DB, autocommit=False) as two_phase:
            two_phase.execute("INSERT INTO ddl_log VALUES (%s, %s)", (k, statement))
            two_phase.execute(f"PREPARE TRANSACTION 'ddl_{k}'")
            two_phase.commit()  # psycopg ends its transaction; the prepared one stays
        conn.execute(f"COMMIT PREPARED 'ddl_{k}'")


# -- big_txn: one transaction inserting n rows (spills to disk in waldecode and in the server) ---

def _big_setup(cluster, conn, n: int) -> None:
    conn.execute("CREATE TABLE big (id int PRIMARY KEY, v text, n numeric, ts timestamptz)")


def _big_run(cluster, conn, n: int) -> None:
    conn.execute("INSERT INTO big SELECT g, md5(g::text), g / 7.0, "
                 "'2026-01-01'::timestamptz + g * interval '1 second' FROM generate_series(1, %s::int) g", (n,))


# -- updates: n single-row updates (HOT and not) in transactions of 10, from a server-side loop ---

_UPDATE_ROWS = 100_000  # rows updated in turn; fewer at small sizes


def _updates_setup(cluster, conn, n: int) -> None:
    rows = min(_UPDATE_ROWS, n)
    conn.execute("CREATE TABLE upd (id int PRIMARY KEY, k int NOT NULL, n int NOT NULL, v text, ts timestamptz)")
    conn.execute("CREATE INDEX upd_k ON upd (k)")
    conn.execute("INSERT INTO upd SELECT g, g, 0, md5(g::text), '2026-01-01' FROM generate_series(1, %s::int) g",
                 (rows,))
    conn.execute("VACUUM ANALYZE upd")
    # A procedure commits inside its loop: thousands of short transactions without a round trip each
    conn.execute("""
        CREATE PROCEDURE bench_updates(p_count int, p_per_txn int, p_rows int) LANGUAGE plpgsql AS $$
        BEGIN
            FOR i IN 1..p_count LOOP
                -- every 5th update changes an indexed column: not HOT
                UPDATE upd SET n = n + 1, v = md5(v), ts = ts + interval '1 second',
                               k = CASE WHEN i % 5 = 0 THEN k + 1 ELSE k END
                 WHERE id = 1 + (i::int8 * 7919) % p_rows;
                IF i % p_per_txn = 0 THEN COMMIT; END IF;
            END LOOP;
        END $$""")


def _updates_run(cluster, conn, n: int) -> None:
    conn.execute("CALL bench_updates(%s, 10, %s)", (n, min(_UPDATE_ROWS, n)))


# -- toast: wide rows whose values are TOASTed (compressed, incompressible, external) ------------

# 128-character blocks (an md5 four times) compress ~4:1 and stay > 2 kB compressed: out of line
_COMPRESSIBLE = "(SELECT string_agg(repeat(md5(g::text || i), 4), '') FROM generate_series(1, 100) i)"
# pseudo-random bytes, stored without compression (STORAGE EXTERNAL)
_RANDOM = "(SELECT decode(string_agg(md5(i || '-' || g), ''), 'hex') FROM generate_series(1, 200) i)"
_JSON = "jsonb_build_object('id', g, 'tags', (SELECT jsonb_agg(md5(g::text || i)) FROM generate_series(1, 60) i))"


def _toast_setup(cluster, conn, n: int) -> None:
    conn.execute("CREATE TABLE wide (id int PRIMARY KEY, note text, doc text, js jsonb, blob bytea)")
    conn.execute("ALTER TABLE wide ALTER COLUMN blob SET STORAGE EXTERNAL")


def _toast_run(cluster, conn, n: int) -> None:
    batch = 250
    for lo in range(1, n + 1, batch):
        hi = min(n, lo + batch - 1)
        conn.execute(f"INSERT INTO wide SELECT g, 'row ' || g, {_COMPRESSIBLE}, {_JSON}, {_RANDOM} "
                     f"FROM generate_series(%s::int, %s::int) g", (lo, hi))
    # toasted columns unchanged (printed as unchanged-toast-datum), then replaced, then deleted
    conn.execute("UPDATE wide SET note = 'updated ' || id WHERE id % 2 = 0")
    conn.execute(f"UPDATE wide SET doc = (SELECT string_agg(repeat(md5(id::text || 'u' || i), 4), '') "
                 f"FROM generate_series(1, 100) i) WHERE id % 4 = 1")
    conn.execute("DELETE FROM wide WHERE id % 10 = 3")


# -- types: a table with a column of each common type, inserted, updated, deleted ---------------

_TYPE_COLUMNS = [
    ("c_int2", "int2", "(g % 32000)::int2"),
    ("c_int8", "int8", "g::int8 * 1000003"),
    ("c_num", "numeric(14,4)", "g / 7.0"),
    ("c_float4", "float4", "g / 3.0"),
    ("c_float8", "float8", "sqrt(g)"),
    ("c_bool", "bool", "g % 2 = 0"),
    ("c_text", "text", "'row ' || g || ' ''quoted'''"),
    ("c_varchar", "varchar(40)", "md5(g::text)"),
    ("c_char", "char(8)", "to_hex(g)"),
    ("c_bytea", "bytea", "decode(md5(g::text), 'hex')"),
    ("c_date", "date", "date '2020-01-01' + g % 3000"),
    ("c_time", "time", "time '00:00' + (g % 86400) * interval '1 second'"),
    ("c_timetz", "timetz", "(time '00:00' + (g % 86400) * interval '1 second')::timetz"),
    ("c_ts", "timestamp", "timestamp '2020-01-01' + g * interval '1 minute'"),
    ("c_tstz", "timestamptz", "timestamptz '2020-01-01 00:00+00' + g * interval '61 seconds'"),
    ("c_interval", "interval", "g * interval '1 minute 1.5 seconds'"),
    ("c_uuid", "uuid", "md5(g::text)::uuid"),
    ("c_json", "json", "json_build_object('g', g, 's', 'x' || g)"),
    ("c_jsonb", "jsonb", "jsonb_build_object('g', g, 'a', jsonb_build_array(g, g * 2.5, 'z', null))"),
    ("c_inet", "inet", "('10.' || g % 256 || '.' || (g / 256) % 256 || '.1/24')::inet"),
    ("c_int_arr", "int[]", "ARRAY[g, g + 1, NULL]"),
    ("c_text_arr", "text[]", "ARRAY['a' || g, 'b c', '']"),
    ("c_range", "int4range", "int4range(g, g + 10)"),
    ("c_point", "point", "point(g, g / 2.0)"),
    ("c_enum", "bench_mood", "(ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::bench_mood"),
    ("c_comp", "bench_pair", "ROW(g, 'p' || g)::bench_pair"),
    ("c_money", "money", "(g * 1.25)::numeric::money"),
    ("c_bit", "bit(8)", "(g % 256)::bit(8)"),
    ("c_tsvector", "tsvector", "to_tsvector('simple', 'word' || g || ' other words')"),
]


def _types_setup(cluster, conn, n: int) -> None:
    conn.execute("CREATE TYPE bench_mood AS ENUM ('sad', 'ok', 'happy')")
    conn.execute("CREATE TYPE bench_pair AS (x int, label text)")
    conn.execute("CREATE TABLE typed (id int PRIMARY KEY, "
                 + ", ".join(f"{name} {typ}" for name, typ, _ in _TYPE_COLUMNS) + ")")


def _types_run(cluster, conn, n: int) -> None:
    names = ", ".join(name for name, _, _ in _TYPE_COLUMNS)
    values = ", ".join(expr for _, _, expr in _TYPE_COLUMNS).replace("%", "%%")  # modulo, not a placeholder
    batch = 10_000
    for lo in range(1, n + 1, batch):
        conn.execute(f"INSERT INTO typed (id, {names}) SELECT g, {values} FROM generate_series(%s::int, %s::int) g",
                     (lo, min(n, lo + batch - 1)))
    conn.execute("UPDATE typed SET c_text = 'updated', c_num = c_num + 1 WHERE id % 10 = 0")
    conn.execute("DELETE FROM typed WHERE id % 20 = 1")


WORKLOADS = [
    Workload("pgbench", "pgbench, {n:,} TPC-B-like transactions from 2 clients", 80_000, 200,
             _pgbench_setup, _pgbench_run),
    Workload("pgbench_ddl", "pgbench, {n:,} TPC-B-like transactions from 2 clients in 16 parts, each followed by "
             "a DDL statement and a prepared transaction", 80_000, 320, _pgbench_ddl_setup, _pgbench_ddl_run),
    Workload("big_txn", "one transaction inserting {n:,} rows", 1_000_000, 1000, _big_setup, _big_run),
    Workload("updates", "{n:,} single-row updates in transactions of 10", 400_000, 500,
             _updates_setup, _updates_run),
    Workload("toast", "{n:,} wide rows with TOASTed text, jsonb and bytea; updates and deletes", 4_000, 20,
             _toast_setup, _toast_run),
    Workload("types", "{n:,} rows of a table with 29 column types; updates and deletes", 100_000, 100,
             _types_setup, _types_run),
]
BY_NAME = {w.name: w for w in WORKLOADS}
