"""Micro-benchmark: type output and test_decoding column lists, native (waldecode._typeout) vs Python.

Per value: ``OutputContext.output(typeoid, value)`` (then UTF-8, as the output file gets it)
against ``TypeOut.append_value(out, typeoid, value)`` for typical values of the common types.
Per tuple: a WAL tuple (xl_heap_header + body) to test_decoding's column list, the way
replay.py and output/test_decoding.py do it (``heaptuple.deform_tuple``,
``TestDecoding._tuple``, encode) against ``RelDesc.append_wal_tuple``, for a pgbench-like
row (int4, int4, int4, char(84)) and a row of many types.  Catalog: the built-in types of
fixtures/pg15-off/types; no server needed.  Every native result is checked equal to the
Python one before it is timed.

Run: ``.venv/bin/python benchmarks/bench_typeout.py [--seconds S] [--timezone Europe/Berlin]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

from waldecode import _typeout
from waldecode.catalog import DEFAULT_SETTINGS, Attribute, Catalog, Relation
from waldecode.heap.heaptuple import deform_tuple
from waldecode.output.test_decoding import TestDecoding
from waldecode.testing import datums
from waldecode.types import OutputContext

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "pg15-off" / "types" / "snapshot.json.gz"
TS_2026 = (1767225600 - 946684800) * 10**6  # 2026-01-01 00:00:00 UTC in PostgreSQL microseconds


def best_rate(fn, n: int, seconds: float) -> float:
    """Nanoseconds per item of ``fn()`` (which handles ``n`` items): the best of repeated runs."""
    best = float("inf")
    deadline = time.perf_counter() + seconds
    while True:
        t = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t) / n)
        if time.perf_counter() > deadline:
            return best * 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=0.6, help="time spent per measurement (best run kept)")
    ap.add_argument("--timezone", default="UTC")
    args = ap.parse_args()

    catalog = Catalog.load(FIXTURE)
    settings = dict(DEFAULT_SETTINGS, TimeZone=args.timezone)
    catalog = dataclasses.replace(catalog, settings=settings)
    ctx = OutputContext(catalog, settings)
    typeout = _typeout.TypeOut(ctx)
    oid = {t.typname: t.oid for t in catalog.types.values() if t.nspname == "pg_catalog"}
    int4 = catalog.types[oid["int4"]]

    N = 2000
    values = {
        "int4": [datums.int4(i * 7919 - 5_000_000) for i in range(N)],
        "int8": [datums.int8(i * 1_000_003_001) for i in range(N)],
        "float8": [datums.float8(i / 7.0 + 0.1) for i in range(N)],
        "numeric": [datums.numeric(Decimal(i) / 7) for i in range(N)],
        "bpchar(84)": [datums.text(f"{i:<84}") for i in range(N)],
        "text": [datums.text(f"md5-{uuid.UUID(int=i * 2654435761).hex}") for i in range(N)],
        "timestamptz": [datums.int8(TS_2026 + i * 1_000_003) for i in range(N)],
        "date": [datums.int4(9000 + i) for i in range(N)],
        "bool": [bytes((i & 1,)) for i in range(N)],
        "uuid": [uuid.UUID(int=i * 2654435761).bytes for i in range(N)],
        "interval": [datums.interval(i * 61_000_000, i % 40, i % 14) for i in range(N)],
        "jsonb": [datums.jsonb({"id": i, "name": f"n{i}", "tags": ["a", "b"], "ok": True}) for i in range(N)],
        "inet": [datums.inet(2, 24, bytes((10, i >> 8 & 255, i & 255, 0))) for i in range(N)],
        "int4[]": [datums.array(int4.oid, 4, "i", [datums.int4(i + k) for k in range(5)]) for i in range(N)],
    }
    typnames = {"bpchar(84)": "bpchar", "int4[]": "_int4"}

    print(f"per value (ns, best of repeated runs of {N} values; TimeZone={args.timezone}):")
    print(f"  {'type':<12} {'python':>9} {'native':>9} {'speedup':>8}")
    out = _typeout.OutBuf(1 << 20)
    for name, vals in values.items():
        toid = oid[typnames.get(name, name)]
        for v in vals[:50]:
            assert typeout.value_text(toid, v) == ctx.output(toid, v).encode("utf-8", "surrogateescape"), name
        fn = ctx.output

        def py():
            for v in vals:
                fn(toid, v).encode("utf-8", "surrogateescape")

        append = typeout.append_value

        def nat():
            out.clear()
            for v in vals:
                append(out, toid, v)

        p = best_rate(py, N, args.seconds)
        c = best_rate(nat, N, args.seconds)
        print(f"  {name:<12} {p:9.0f} {c:9.0f} {p / c:7.1f}x")

    def att(num, name, typname, dropped=False):
        typ = catalog.types[oid[typname]]
        return Attribute(attnum=num, attname=name, atttypid=0 if dropped else typ.oid, atttypmod=-1,
                         attlen=typ.typlen, attbyval=typ.typbyval, attalign=typ.typalign, attstorage=typ.typstorage,
                         attisdropped=dropped, type_name=typ.format_type if typname != "bpchar" else "character")

    pgbench = (att(1, "aid", "int4"), att(2, "bid", "int4"), att(3, "abalance", "int4"), att(4, "filler", "bpchar"))
    pgbench_rows = [[datums.int4(i), datums.int4(i // 100000 + 1), datums.int4((i * 37) % 10000 - 5000),
                     datums.varlena(datums.text(" " * 84), "1b")] for i in range(N)]
    many = (att(1, "id", "int8"), att(2, "amount", "numeric"), att(3, "ratio", "float8"), att(4, "name", "text"),
            att(5, "created", "timestamptz"), att(6, "day", "date"), att(7, "active", "bool"), att(8, "key", "uuid"),
            att(9, "doc", "jsonb"), att(10, "span", "interval"), att(11, "addr", "inet"), att(12, "nums", "_int4"),
            att(13, "code", "varchar"), att(14, "blob", "bytea"), att(15, "note", "text"), att(16, "small", "int2"))
    many_rows = []
    for i in range(N):
        vals = [values["int8"][i], datums.varlena(values["numeric"][i], "1b"), values["float8"][i],
                datums.varlena(values["text"][i], "1b"), values["timestamptz"][i], values["date"][i],
                values["bool"][i], values["uuid"][i], datums.varlena(values["jsonb"][i], "4b"),
                values["interval"][i], datums.varlena(values["inet"][i], "1b"),
                datums.varlena(values["int4[]"][i], "4b"), datums.varlena(datums.text(f"C-{i}"), "1b"),
                datums.varlena(bytes(range(i % 16)), "1b"), None, datums.int2(i % 100)]
        many_rows.append(vals)

    print(f"per tuple, WAL tuple -> test_decoding column list (ns per row, {N} rows):")
    print(f"  {'row':<22} {'python':>9} {'native':>9} {'speedup':>8}")
    for label, atts, rows in (("pgbench_accounts", pgbench, pgbench_rows), ("16 mixed types", many, many_rows)):
        rel = Relation(oid=424242, relname="t", nspname="public", relkind="r", relpersistence="p", relfilenode=1,
                       reltablespace=0, relreplident="d", attributes=atts)
        tups = [datums.wal_tuple(atts, r) for r in rows]
        plugin = TestDecoding(catalog, lambda line: None)
        desc = typeout.relation(atts)

        def python_row(tup):
            # replay.tuple_values + _toast_replace (no pointers here) + TestDecoding._tuple + the file's encode
            body = memoryview(tup)[5:]
            vals = deform_tuple(body, tup[0] | tup[1] << 8, tup[2] | tup[3] << 8, tup[4], atts)
            vals = list(vals)
            return plugin._tuple(rel, vals, False).encode("utf-8", "surrogateescape")

        for tup in tups[:50]:
            out.clear()
            desc.append_wal_tuple(out, tup)
            assert out.getvalue() == python_row(tup), label

        def py():
            for tup in tups:
                python_row(tup)

        append = desc.append_wal_tuple

        def nat():
            out.clear()
            for tup in tups:
                append(out, tup)

        p = best_rate(py, N, args.seconds)
        c = best_rate(nat, N, args.seconds)
        print(f"  {label:<22} {p:9.0f} {c:9.0f} {p / c:7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
