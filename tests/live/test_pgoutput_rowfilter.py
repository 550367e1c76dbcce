"""Publication row filters evaluated offline against the server's own evaluation (PostgreSQL 15, 16, 18).

For each of many row filters, a publication is created on a table, its prqual read back from
pg_publication_rel, and compiled by ``pgoutput_rowfilter``.  Generated rows (edge values and
NULLs in every column) are inserted; waldecode decodes the WAL, and the evaluator's verdict on
each decoded row must be the server's ``SELECT (expr) FROM rf`` for that row: true, false, NULL,
or an ERROR (overflow, division by zero) that the evaluator must raise too.  Then
``RelationRowFilters.filter_change`` (UPDATE turned into INSERT or DELETE) is compared with what
a real pgoutput slot publishes for a workload of inserts, updates and deletes.  Filters outside
what is implemented must be refused by name.
"""

from __future__ import annotations

import random

import pytest
from live import DB, live_cluster

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.logical.session import decode_wal
from waldecode.output.base import OutputPlugin
from waldecode.output.pgoutput_dump import read_messages
from waldecode.output.pgoutput_rowfilter import (Publication, RelationRowFilters, RowFilter, RowFilterError,
                                                  parse_node_tree)
from waldecode.wal.xlogreader import parse_lsn

pytestmark = pytest.mark.slow

SCHEMA = """
CREATE TABLE rf (id int PRIMARY KEY, i2 smallint, i4 int, i8 bigint, n numeric, f8 float8, f4 real,
                 tx text, vc varchar(12), bc char(6), ok boolean, d date, ts timestamp, tz timestamptz,
                 u uuid, nm name);
ALTER TABLE rf REPLICA IDENTITY FULL;
CREATE TABLE rfu (id int PRIMARY KEY, k int, tx text);
ALTER TABLE rfu REPLICA IDENTITY FULL;
CREATE TABLE rfk (id int PRIMARY KEY, v text);
"""

FILTERS = [
    "id > 5", "i4 = 7", "i4 <> 7", "i2 < 3", "i8 >= 100", "i2 <= i4", "i4 > i8", "i8 = i2",
    "i4 + 1 > 0", "i2 * 2 < 100", "i8 - i4 > 10", "i4 / 3 = 2", "i4 % 3 = 1", "-i4 < 0", "abs(i8) > 1000",
    "abs(i2) = 3", "i4::bigint = i8", "i8::int = 7",
    "n > 1.5", "n = 2.5", "n <> 0", "n + 1 > 3", "n * 2 <= 5", "n < i4", "abs(n) >= 2", "n::float8 > 1",
    "n::int = 2", "f8 > 1.5", "f8 = 'NaN'", "f8 < i4", "f8 * 2 > 3", "f4 > 1.5", "f4 = f8", "f4 + f4 > 3",
    "f8::numeric > 1", "f4 < 0.5::real", "abs(f8) > 10", "f8 + 1e308 > 0",
    "tx = 'abc'", "tx <> 'a'", "tx < 'b'", "tx >= 'A'", "tx LIKE 'a%'", "tx LIKE '%\\%%'", "tx NOT LIKE '_b%'",
    "length(tx) > 2", "char_length(tx) = 5", "octet_length(tx) > 5", "lower(tx) = 'abc'",
    "upper(tx) LIKE 'A%'", "tx || 'z' = 'az'", "trim(tx) = 'ab'", "rtrim(tx) <> tx", "tx IN ('a', 'abc', 'Ab')",
    "tx NOT IN ('a', 'abc')", "tx = ANY('{a,b,NULL}')", "tx IS DISTINCT FROM 'a'", "tx IS NOT DISTINCT FROM vc",
    "vc = 'abc'", "vc < tx", "vc LIKE '%b%'", "bc = 'ab'", "bc < 'b'", "bc LIKE 'ab%'", "bc::text = 'ab'",
    "length(bc) = 2", "nm = 'abc'", "nm < 'b'",
    "ok", "NOT ok", "ok IS TRUE", "ok IS NOT TRUE", "ok IS FALSE", "ok IS NOT FALSE", "ok IS UNKNOWN",
    "ok IS NOT UNKNOWN", "ok = true", "ok <> (i4 > 0)",
    "d > '2020-01-01'", "d = '2000-01-01'", "d < 'infinity'", "ts >= '2021-06-01 12:00'",
    "tz < '2022-01-01 00:00+00'", "tz = '2021-01-01 00:00:00+00'", "u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
    "u < 'b0000000-0000-0000-0000-000000000000'",
    "i4 IS NULL", "i4 IS NOT NULL", "i4 > 5 AND tx LIKE 'a%'", "i4 > 5 OR tx = 'abc'", "NOT (i4 > 5 OR n > 1)",
    "i4 IN (1, 2, 7, NULL)", "i4 NOT IN (1, 2)", "i8 = ANY(ARRAY[1, 100, i4])", "i4 = ALL(ARRAY[7, 7])",
    "coalesce(i4, 0) = 0", "coalesce(tx, vc, 'none') = 'none'", "nullif(i4, 7) IS NULL", "greatest(i2, i4) > 5",
    "least(n, 2) = 2", "greatest(tx, vc) = 'abc'",
    "CASE WHEN i4 > 5 THEN tx = 'abc' WHEN i4 < 0 THEN true ELSE ok END",
    "CASE i4 WHEN 7 THEN true WHEN 1 THEN NULL ELSE false END", "(i4 > 1) = (i8 > 1)",
    "i4 > 0 AND i4 / i2 > 1", "i2 + i2 > 0", "i4 * i4 > 0", "i8 * i8 > 0",
]
UNSUPPORTED = {
    "tx ~ '^a'": "function with pg_proc OID",
    "(i4, i8) < (1, 2)": "expression node ROWCOMPAREEXPR",
    "tx ILIKE 'a%'": "function with pg_proc OID",
}

INT2 = ["0", "1", "3", "-3", "32767", "-32768", "100", "2"]
INT4 = ["0", "1", "7", "-7", "2147483647", "-2147483648", "6", "100", "3"]
INT8 = ["0", "1", "7", "100", "-100", "9223372036854775807", "-9223372036854775808", "5000000000"]
NUMS = ["0", "1.5", "2.5", "2.50", "-3.25", "1e20", "NaN", "Infinity", "-Infinity", "0.000001", "2", "1.4999"]
FLOATS = ["0", "-0", "1.5", "0.1", "NaN", "Infinity", "-Infinity", "1e308", "-1e308", "2", "1e-300", "7"]
FLOAT4 = ["0", "1.5", "0.1", "NaN", "Infinity", "3.4e38", "1e-30", "0.5", "2"]
TEXTS = ["", "a", "abc", "Ab", "ab", " ab ", "ab  ", "A%b", "a%b", "x_y", "xbz", "héllo", "ÄÖ", "a\\b", "none",
         "ABC", "zeta", "b"]
BPCHARS = ["", "ab", "ab ", "b", "abc", "zz"]
DATES = ["2000-01-01", "2020-01-01", "2020-01-02", "1999-12-31", "infinity", "-infinity", "2021-06-01"]
TSS = ["2021-06-01 12:00", "2000-01-01 00:00", "2021-06-01 11:59:59.999999", "infinity", "-infinity",
       "2020-01-01 00:00"]
TZS = ["2021-01-01 00:00+00", "2022-01-01 00:00+00", "2021-12-31 23:00-02", "infinity"]
UUIDS = ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000",
         "ffffffff-ffff-ffff-ffff-ffffffffffff", "b0000000-0000-0000-0000-000000000000"]
COLUMNS = [("i2", "smallint", INT2), ("i4", "int", INT4), ("i8", "bigint", INT8), ("n", "numeric", NUMS),
           ("f8", "float8", FLOATS), ("f4", "real", FLOAT4), ("tx", "text", TEXTS), ("vc", "varchar", TEXTS),
           ("bc", "char(6)", BPCHARS), ("ok", "boolean", ["true", "false"]), ("d", "date", DATES),
           ("ts", "timestamp", TSS), ("tz", "timestamptz", TZS), ("u", "uuid", UUIDS), ("nm", "name", TEXTS)]
NROWS = 400


def _rows(seed: int = 15):
    rnd = random.Random(seed)
    rows = []
    for i in range(1, NROWS + 1):
        rows.append([i] + [None if rnd.random() < 0.18 else rnd.choice(pool) for _name, _t, pool in COLUMNS])
    return rows


class Capture(OutputPlugin):
    """Keeps every decoded change: (action, relation, new, old)."""

    def __init__(self):
        self.changes = []

    def begin(self, txn):
        pass

    def commit(self, txn, commit_lsn):
        pass

    def change(self, txn, lsn, catalog, relation, action, new, old):
        self.changes.append((action, relation, new, old))


@pytest.fixture(scope="module", params=[15, 16, 18])
def run(request, tmp_path_factory):
    """The cluster, the publications' prquals, the server's verdicts and the decoded changes."""
    major = request.param
    tmp = tmp_path_factory.mktemp(f"rowfilter{major}")
    with live_cluster(SCHEMA, major=major) as c:
        with c.connect(DB) as conn:
            for i, expr in enumerate(FILTERS):
                conn.execute(f"CREATE PUBLICATION p{i} FOR TABLE rf WHERE ({expr})")
            for i, expr in enumerate(UNSUPPORTED):
                conn.execute(f"CREATE PUBLICATION x{i} FOR TABLE rf WHERE ({expr})")
            conn.execute("CREATE PUBLICATION pu FOR TABLE rfu WHERE (k > 10 AND tx LIKE 'a%')")
            conn.execute("CREATE PUBLICATION pk FOR TABLE rfk WHERE (id % 2 = 0)")
            conn.execute("CREATE PUBLICATION pk2 FOR TABLE rfk WHERE (id > 100) WITH (publish = 'insert, update')")
            prquals = dict(conn.execute(
                "SELECT p.pubname, r.prqual FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid"
            ).fetchall())
            lc = conn.execute("SELECT datcollate, datctype FROM pg_database "
                              "WHERE datname = current_database()").fetchone()
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            # the slot publishes the truth of the UPDATE rules and fixes where waldecode starts decoding
            conn.execute("SELECT pg_create_logical_replication_slot('rf_po', 'pgoutput')")
            confirmed, restart = conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text "
                                              "FROM pg_replication_slots WHERE slot_name = 'rf_po'").fetchone()
            cols = ", ".join(name for name, _t, _p in COLUMNS)
            params = ", ".join(f"%s::{t}" for _n, t, _p in COLUMNS)
            with conn.transaction():
                for row in _rows():
                    conn.execute(f"INSERT INTO rf (id, {cols}) VALUES (%s, {params})", row)
            _update_workload(conn)
            conn.execute("CHECKPOINT")
            end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            published = {}
            for pubs in ("pu", "pk", "pk,pk2"):
                data = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('rf_po', %s::pg_lsn, NULL, "
                                    "'proto_version', '1', 'publication_names', %s)", (end_lsn, pubs)).fetchall()
                published[pubs] = [m for (d,) in data for m in read_messages(bytes(d), framed=False)]
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (restart,)).fetchone()[0]
            conn.execute("SELECT pg_drop_replication_slot('rf_po')")
        wal = c.archive_wal(tmp / "wal", first)
        cap = Capture()
        spill = tmp / "spill"
        spill.mkdir()
        result = decode_wal([wal], catalog, cap, start_lsn=parse_lsn(confirmed), end_lsn=parse_lsn(end_lsn),
                            spill_dir=str(spill))
        assert result.not_decoded == []
        yield {"cluster": c, "prquals": prquals, "lc": lc, "catalog": catalog, "changes": cap.changes,
               "published": published}


def _update_workload(conn):
    with conn.transaction():
        for i in range(1, 31):
            conn.execute("INSERT INTO rfu VALUES (%s, %s, %s)", (i, i % 25, "a" if i % 3 else "b"))
            conn.execute("INSERT INTO rfk VALUES (%s, %s)", (i, f"v{i}"))
    with conn.transaction():
        for i in range(1, 31):
            # moves rows in and out of the filter, both ways, and within it
            conn.execute("UPDATE rfu SET k = k + 7, tx = CASE WHEN id %% 4 = 0 THEN 'b' ELSE 'ab' END WHERE id = %s",
                         (i,))
        conn.execute("UPDATE rfu SET k = NULL WHERE id IN (5, 17)")
        conn.execute("UPDATE rfu SET tx = tx WHERE id IN (12, 13)")
        conn.execute("DELETE FROM rfu WHERE id % 5 = 0")
    with conn.transaction():
        conn.execute("UPDATE rfk SET id = id + 1001 WHERE id % 3 = 0")  # key changes: the old key is logged
        conn.execute("UPDATE rfk SET v = v || '!' WHERE id < 8")  # key unchanged: no old tuple
        conn.execute("UPDATE rfk SET id = id + 100 WHERE id IN (2, 5, 11)")
        conn.execute("DELETE FROM rfk WHERE id % 4 = 0 OR id > 100")


def _server_verdicts(conn, expr: str) -> dict:
    """id -> True / False / None, or the ERROR message for rows the expression fails on."""
    try:
        return dict(conn.execute(f"SELECT id, ({expr}) FROM rf").fetchall())
    except Exception:
        pass
    out = {}
    for (rid,) in conn.execute("SELECT id FROM rf").fetchall():
        try:
            out[rid] = conn.execute(f"SELECT ({expr.replace('%', '%%')}) FROM rf WHERE id = %s", (rid,)).fetchone()[0]
        except Exception as e:  # the server's ERROR for this row
            out[rid] = ("ERROR", str(e).splitlines()[0])
    return out


def test_filters_match_server_evaluation(run):
    c = run["cluster"]
    inserts = {new[0] and int.from_bytes(new[0], "little", signed=True): new
               for action, rel, new, _old in run["changes"] if rel.relname == "rf" and action == "INSERT"}
    assert len(inserts) == NROWS
    rel = next(rel for _a, rel, _n, _o in run["changes"] if rel.relname == "rf")
    checked = errors = 0
    mismatches = []
    failed = []
    for i, expr in enumerate(FILTERS):
        try:
            RowFilter(run["prquals"][f"p{i}"], rel, *run["lc"])
        except RowFilterError as e:
            failed.append((expr, str(e)))
    assert failed == []
    with c.connect(DB) as conn:
        for i, expr in enumerate(FILTERS):
            rf = RowFilter(run["prquals"][f"p{i}"], rel, *run["lc"])
            for rid, verdict in _server_verdicts(conn, expr).items():
                row = inserts[rid]
                if isinstance(verdict, tuple):
                    with pytest.raises(RowFilterError) as ei:
                        rf.evaluate(row)
                    assert '"public"."rf"' in str(ei.value) or "public.rf" in str(ei.value)
                    errors += 1
                    continue
                got = rf.evaluate(row)
                if got != verdict:
                    mismatches.append((expr, rid, verdict, got))
                assert rf.matches(row) is (verdict is True)
                checked += 1
    print(f"{checked} verdicts compared with the server's, {errors} server errors raised alike")
    assert mismatches == []
    assert checked > len(FILTERS) * NROWS * 0.9
    assert errors > 0  # the overflow cases were met, and raised


def test_all_three_values_seen(run):
    """The generated rows give each common kind of filter true, false and NULL results."""
    c = run["cluster"]
    with c.connect(DB) as conn:
        for expr in ("i4 > 5", "tx LIKE 'a%'", "n > 1.5", "f8 = 'NaN'", "d > '2020-01-01'", "bc = 'ab'"):
            assert set(_server_verdicts(conn, expr).values()) == {True, False, None}, expr


def _published(messages):
    rels = {m.fields["relid"]: m.fields["relname"] for m in messages if m.name == "RELATION"}
    out = []
    for m in messages:
        if m.name in ("INSERT", "UPDATE", "DELETE"):
            tup = m.fields.get("new") if m.name != "DELETE" else m.fields["old"]
            out.append((m.name, rels[m.fields["relid"]], tuple(tup)))
    return out


def _ours(run, relname: str, pubs: list[str], publish: dict) -> list:
    catalog = run["catalog"]
    out = []
    filters = None
    ctx = None
    for action, rel, new, old in run["changes"]:
        if rel.relname != relname:
            continue
        if filters is None:
            filters = RelationRowFilters(rel, [Publication(p, *publish[p], run["prquals"][p]) for p in pubs],
                                         *run["lc"])
            ctx = catalog_ctx(catalog)
        if not any(publish[p][("INSERT", "UPDATE", "DELETE").index(action)] for p in pubs):
            continue
        sent, tup = filters.filter_change(action, old, new)
        if sent is None:
            continue
        values = old if sent == "DELETE" else tup
        text = tuple(None if v is None else ctx.output(a.atttypid, v) for a, v in zip(rel.attributes, values))
        if sent == "DELETE" and rel.relreplident != "f":
            # the old key: the other columns are sent as NULL
            text = tuple(t if a.attnum in rel.replica_identity_key else None for a, t in zip(rel.attributes, text))
        out.append((sent, relname, text))
    return out


def catalog_ctx(catalog):
    from waldecode.types import OutputContext

    return OutputContext(catalog)


ALL = (True, True, True)


def test_update_rules_match_pgoutput(run):
    """UPDATE -> INSERT / DELETE / UPDATE / nothing, per pgoutput_row_filter, as a real slot publishes."""
    expected = _published(run["published"]["pu"])
    got = _ours(run, "rfu", ["pu"], {"pu": ALL})
    assert got == expected
    kinds = {a for a, _r, _t in expected}
    assert kinds == {"INSERT", "UPDATE", "DELETE"}
    # an UPDATE that the filter turned into an INSERT or a DELETE is among them
    n_updates = sum(1 for a, rel, _n, _o in run["changes"] if rel.relname == "rfu" and a == "UPDATE")
    assert sum(1 for a, _r, _t in expected if a == "UPDATE") < n_updates


def test_key_filter_and_combined_publications(run):
    """Replica identity DEFAULT (the old key only), and two publications whose filters are ORed for
    INSERT and UPDATE while DELETE has only the first's."""
    assert _ours(run, "rfk", ["pk"], {"pk": ALL}) == _published(run["published"]["pk"])
    both = _ours(run, "rfk", ["pk", "pk2"], {"pk": ALL, "pk2": (True, True, False)})
    assert both == _published(run["published"]["pk,pk2"])
    assert both != _ours(run, "rfk", ["pk"], {"pk": ALL})


def test_unsupported_filters_are_refused_by_name(run):
    rel = next(rel for _a, rel, _n, _o in run["changes"] if rel.relname == "rf")
    for i, (expr, what) in enumerate(UNSUPPORTED.items()):
        with pytest.raises(RowFilterError) as ei:
            RowFilter(run["prquals"][f"x{i}"], rel, *run["lc"])
        msg = str(ei.value)
        assert msg.startswith("row filter on table public.rf: ") and what in msg, (expr, msg)
        assert "not supported" in msg
    # ordering text under a collation other than C is refused, not guessed
    text_lt = run["prquals"][f"p{FILTERS.index('tx < ' + chr(39) + 'b' + chr(39))}"]
    with pytest.raises(RowFilterError, match="lc_collate 'en_US.UTF-8'.*only C and POSIX"):
        RowFilter(text_lt, rel, "en_US.UTF-8", "en_US.UTF-8")
    assert RowFilter(text_lt, rel, "C", "C") is not None
    # a damaged node tree names what is wrong
    with pytest.raises(RowFilterError, match="row filter on table public.rf: node tree ends"):
        RowFilter(text_lt[: len(text_lt) // 2], rel, "C", "C")
    tree = parse_node_tree(text_lt)
    assert tree.tag == "OPEXPR" and tree.int("opfuncid") == 740  # text_lt


@pytest.mark.parametrize("major", [15, 16, 18])
def test_function_oids_are_the_servers(major):
    """Every pg_proc OID the evaluator knows is, on the server, an immutable internal function with
    the C implementation (prosrc) it is evaluated as."""
    from waldecode.output.pgoutput_rowfilter.functions import _PROCS
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(major)
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL {major} is not available: {e}")
    try:
        rows = c.sql("SELECT oid::int, prosrc, provolatile, prolang FROM pg_proc WHERE oid = ANY(%s::oid[])",
                     list(_PROCS))
    finally:
        c.__exit__(None, None, None)
    got = {oid: (prosrc, vol, lang) for oid, prosrc, vol, lang in rows}
    assert {oid: got.get(oid) for oid in _PROCS} == {oid: (src, "i", 12) for oid, src in _PROCS.items()}


def test_case_mapping_under_a_libc_locale():
    """lower()/upper() in a database whose lc_ctype is not C: ASCII text as the server maps it,
    other text refused; ordering text under that collation refused."""
    texts = ["abc", "ABC", "aBc", "Zeta", "", "a1_B", "ÄBC", "straße"]
    with live_cluster("") as c:
        c.sql("CREATE DATABASE u8 LOCALE 'C.UTF-8' TEMPLATE template0")
        with c.connect("u8") as conn:
            conn.execute("CREATE TABLE t (id int PRIMARY KEY, tx text)")
            conn.execute("CREATE PUBLICATION lo FOR TABLE t WHERE (lower(tx) = 'abc')")
            conn.execute("CREATE PUBLICATION up FOR TABLE t WHERE (upper(tx) LIKE 'A%')")
            conn.execute("CREATE PUBLICATION lt FOR TABLE t WHERE (tx < 'b')")
            quals = dict(conn.execute("SELECT p.pubname, r.prqual FROM pg_publication_rel r "
                                      "JOIN pg_publication p ON p.oid = r.prpubid").fetchall())
            lc = conn.execute("SELECT datcollate, datctype FROM pg_database WHERE datname = 'u8'").fetchone()
            assert lc == ("C.UTF-8", "C.UTF-8")
            catalog = snapshot_from_connection(conn)
            verdicts = {expr: [conn.execute(f"SELECT {expr} FROM (VALUES (%s)) v(tx)", (t,)).fetchone()[0]
                               for t in texts] for expr in ("lower(tx) = 'abc'", "upper(tx) LIKE 'A%%'")}
    rel = next(r for r in catalog.relations.values() if r.relname == "t" and r.nspname == "public")
    for pub, expr in (("lo", "lower(tx) = 'abc'"), ("up", "upper(tx) LIKE 'A%%'")):
        rf = RowFilter(quals[pub], rel, *lc)
        for t, verdict in zip(texts, verdicts[expr]):
            row = [(1).to_bytes(4, "little"), t.encode()]
            if t.isascii():
                assert rf.evaluate(row) is verdict, (expr, t)
            else:
                with pytest.raises(RowFilterError, match="non-ASCII text under lc_ctype 'C.UTF-8'"):
                    rf.evaluate(row)
    with pytest.raises(RowFilterError, match="lc_collate 'C.UTF-8'"):
        RowFilter(quals["lt"], rel, *lc)
