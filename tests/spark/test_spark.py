"""``waldecode spark decode`` against single-process ``decode``, byte for byte.

The Spark path (``waldecode.spark``) must print exactly what ``decode`` prints, and so
what the server's test_decoding printed: on every PostgreSQL 15 fixture and option set,
with one segment per phase-1 task (every segment boundary between tasks) and 1, 2 and 7
output ranges (shuffle partitions), under both implementations.  The task functions are
checked in this process first (``LocalExecutor``: fast, every case); then through one
shared ``local[2]`` SparkSession.  Errors come out as ``decode``'s one line and status.
"""

from __future__ import annotations

import io
import shutil
import sys

import pytest

from fixture_data import all_fixtures
from waldecode import _impl
from waldecode.catalog import Catalog
from waldecode.cli import main
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.session import decode_wal
from waldecode.spark import tasks
from waldecode.spark.executors import LocalExecutor
from waldecode.spark.job import decode_spark
from waldecode.wal.xlogreader import parse_lsn

CASES = []
for fx in all_fixtures():
    if fx.major != 15:
        continue
    for out_file, meta in fx.meta.get("decoding_options", {}).items():
        if meta["plugin"] == "test_decoding":
            CASES.append(pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}"))

pytestmark = pytest.mark.skipif(not CASES, reason="no PostgreSQL 15 fixtures")


def _slot(fx, meta):
    return next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])


def single_process(fx, meta) -> bytes:
    slot = _slot(fx, meta)
    rows: list[str] = []
    decode_wal([fx.wal_dir], Catalog.load(fx.path / "snapshot.json.gz"), TestDecoding(rows.append),
               plugin_options=meta["options"], start_lsn=parse_lsn(slot["confirmed_flush_lsn"]),
               end_lsn=fx.end_lsn, two_phase=slot["two_phase"])
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)


def on(executor, fx, meta, per_run=1, method="auto") -> bytes:
    slot = _slot(fx, meta)
    out = io.BytesIO()
    result = decode_spark(executor, [fx.wal_dir], Catalog.load(fx.path / "snapshot.json.gz"), TestDecoding, out,
                          plugin_options=meta["options"], start_lsn=parse_lsn(slot["confirmed_flush_lsn"]),
                          end_lsn=fx.end_lsn, two_phase=slot["two_phase"], segments_per_run=per_run,
                          method=method)
    assert result.stop.kind == "limit"
    assert result.not_decoded == [] and result.warnings == []
    return out.getvalue()


@pytest.mark.parametrize("method", ["auto", "events"])
@pytest.mark.parametrize("fx,out_file,meta", CASES)
def test_tasks_in_process_equal_decode(fx, out_file, meta, impl, method):
    """The Spark task functions, without Spark: every case, both implementations, by the range path where
    it applies and by the driver's pass and its events (every case)."""
    executor = LocalExecutor()
    executor.ranges = 2
    assert on(executor, fx, meta, method=method) == single_process(fx, meta)
    # every fixture by ranges: the catalog changes of ddl, truncate, checkpoint_fpi and small_dml through the
    # driver's catalog pass, the two-phase records of prepared (the range path's refusals: test_spark_wal2json)
    assert executor.method == ("events" if method == "events" else "ranges"), executor.fallback


@pytest.mark.slow
@pytest.mark.parametrize("ranges", [1, 7])
@pytest.mark.parametrize("fx,out_file,meta", CASES)
def test_tasks_in_process_any_split(fx, out_file, meta, ranges):
    executor = LocalExecutor()
    executor.ranges = ranges
    assert on(executor, fx, meta) == single_process(fx, meta)


# -- through Spark -------------------------------------------------------------------------------


def _spark_executor(spark, ranges):
    from waldecode.spark.executors import SparkExecutor

    return SparkExecutor(spark, ranges)


PG15_OFF = [c for c in CASES if c.id.startswith("pg15-off/")]
SPLITS = [c for c in PG15_OFF if c.id.split("/")[1] in ("savepoints", "toast", "ddl", "prepared", "checkpoint_fpi",
                                                       "big_txn", "messages")
          and c.id.endswith("/test_decoding.jsonl")]


def _read_runs(fx, start, per_run: int) -> list:
    from waldecode.wal.segments import discover

    segments = discover([fx.wal_dir], None)
    first = start // segments.seg_size
    out = []
    for s in range(first, fx.end_lsn // segments.seg_size + 1, per_run):
        for rec in tasks.read_run(segments, s, s + per_run - 1, start, fx.end_lsn):
            out.append((rec[0], repr(rec[1])) if isinstance(rec, tuple) else (rec.lsn, rec.end_lsn, rec.xl_crc))
    return out


@pytest.mark.parametrize("fx", sorted({c.values[0] for c in CASES}, key=lambda f: f.name), ids=lambda f: f.name)
def test_frame_in_pieces_equals_whole(fx, impl, monkeypatch):
    """A phase-1 run frames each segment in pieces (``FRAME_PIECE``, its memory bound): the records and
    the stop are those of framing each segment whole, whatever the piece size (a few pages, odd sizes,
    pieces that end inside a record crossing pages or segments)."""
    start = fx.start_lsn
    monkeypatch.setattr(tasks, "FRAME_PIECE", 1 << 40)
    whole = {per_run: _read_runs(fx, start, per_run) for per_run in (1, 3)}
    assert whole[1]
    for piece in (3 * 8192 + 8, 65536 - 24, 1 << 20):
        monkeypatch.setattr(tasks, "FRAME_PIECE", piece)
        for per_run in (1, 3):
            assert _read_runs(fx, start, per_run) == whole[per_run], (piece, per_run)


@pytest.mark.parametrize("fx,out_file,meta", SPLITS)
def test_tasks_frame_in_small_pieces_equal_decode(fx, out_file, meta, monkeypatch):
    monkeypatch.setattr(tasks, "FRAME_PIECE", 3 * 8192 + 8)
    executor = LocalExecutor()
    executor.ranges = 2
    assert on(executor, fx, meta) == single_process(fx, meta)


@pytest.mark.slow
@pytest.mark.parametrize("fx,out_file,meta", PG15_OFF)
def test_spark_equals_decode(spark, fx, out_file, meta):
    executor = _spark_executor(spark, 2)
    assert on(executor, fx, meta) == single_process(fx, meta)
    assert executor.impl_seen == {_impl.IMPL}


@pytest.mark.slow
@pytest.mark.parametrize("ranges", [1, 7])
@pytest.mark.parametrize("fx,out_file,meta", SPLITS)
def test_spark_shuffle_partitions(spark, fx, out_file, meta, ranges):
    assert on(_spark_executor(spark, ranges), fx, meta) == single_process(fx, meta)


@pytest.mark.slow
@pytest.mark.parametrize("fx,out_file,meta", SPLITS[:3])
def test_spark_pure_python(spark, fx, out_file, meta):
    """The executors follow the driver's implementation (the ``impl`` the tests switch to)."""
    previous = _impl.IMPL
    _impl.use("python")
    try:
        executor = _spark_executor(spark, 2)
        got = on(executor, fx, meta)
    finally:
        _impl.use(previous)
    assert got == single_process(fx, meta)
    assert executor.impl_seen == {"python"}


# -- the command line: same bytes, same messages, same status ---------------------------------------


def _cli(argv, capfd):
    status = main(argv)
    err = capfd.readouterr().err
    return status, [ln for ln in err.split("\n") if ln.startswith("waldecode:") and "note:" not in ln]


def _fixture(name):
    return next(f for f in all_fixtures() if f.name == name)


@pytest.mark.slow
def test_cli_same_output(spark, tmp_path, capfd):
    fx = _fixture("pg15-off/toast")
    meta = fx.meta["decoding_options"]["test_decoding-ts.jsonl"]
    slot = _slot(fx, meta)
    common = ["--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
              "--end-lsn", fx.meta["end_lsn"], "-o", "include-timestamp", "-o", "skip-empty-xacts=1"]
    a, b = tmp_path / "single.out", tmp_path / "spark.out"
    s1, e1 = _cli(["decode", *common, "--output", str(a), str(fx.wal_dir)], capfd)
    s2, e2 = _cli(["spark", "decode", "--master", "local[2]", *common, "--output", str(b), str(fx.wal_dir)], capfd)
    assert (s1, e1) == (s2, e2) == (0, [])
    assert a.read_bytes() == b.read_bytes() and a.stat().st_size > 0


def _damaged_copies(tmp_path):
    """A two-segment fixture with (a) its first segment's CRC broken in a record, (b) a missing middle
    segment, (c) its second segment gone (the last record continues into it)."""
    fx = _fixture("pg15-off/checkpoint_fpi")
    segs = sorted(p for p in fx.wal_dir.iterdir())
    assert len(segs) >= 2
    out = {}
    crc = tmp_path / "crc"
    shutil.copytree(fx.wal_dir, crc)
    data = bytearray((crc / segs[0].name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (crc / segs[0].name).write_bytes(bytes(data))
    out["crc"] = crc
    page = tmp_path / "page"
    shutil.copytree(fx.wal_dir, page)
    data = bytearray((page / segs[0].name).read_bytes())
    at = (len(data) // 2) & ~8191  # a page header in the middle of the segment: its magic broken
    data[at] ^= 0xFF
    (page / segs[0].name).write_bytes(bytes(data))
    out["page"] = page
    cut = tmp_path / "cut"
    shutil.copytree(fx.wal_dir, cut)
    (cut / segs[-1].name).unlink()
    out["cut"] = cut
    return fx, out


def _dated_back(fx, tmp_path) -> str:
    """The fixture's snapshot (taken after its setup DDL) dated back to the start of its first segment, where
    decoding without --start-lsn reads from: it passes the check of a snapshot later than the start
    (catalog.choose), so that the damage is what these runs meet."""
    import gzip
    import json

    doc = json.loads(gzip.decompress((fx.path / "snapshot.json.gz").read_bytes()))
    first = sorted(fx.wal_dir.iterdir())[0].name
    doc["lsn"] = f"{int(first[8:16], 16):X}/{int(first[16:24], 16) * fx.meta['wal_segment_size']:X}"
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _damaged(tmp_path, damage):
    fx, dirs = _damaged_copies(tmp_path)
    if damage == "missing":
        # a gap: the first segment and the one after its successor
        segs = sorted(fx.wal_dir.iterdir())
        gap = tmp_path / "gap"
        gap.mkdir()
        shutil.copy(segs[0], gap / segs[0].name)
        name = segs[-1].name
        later = name[:16] + format(int(name[16:24], 16) + 1, "08X") + name[24:]
        shutil.copy(segs[-1], gap / later)
        paths = [str(gap)]
    else:
        paths = [str(dirs[damage])]
    return fx, paths


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["crc", "page", "cut", "missing"])
def test_cli_errors_as_decode(spark, tmp_path, capfd, damage):
    fx, paths = _damaged(tmp_path, damage)
    args = ["--catalog", _dated_back(fx, tmp_path)]
    a, b = tmp_path / "single.out", tmp_path / "spark.out"
    s1, e1 = _cli(["decode", *args, "--output", str(a), *paths], capfd)
    s2, e2 = _cli(["spark", "decode", "--master", "local[2]", *args, "--output", str(b), *paths], capfd)
    assert s1 != 0 or damage == "cut"
    assert (s2, e2) == (s1, e1)
    assert (a.read_bytes() if a.exists() else None) == (b.read_bytes() if b.exists() else None)
    assert not any("Traceback" in ln or "at org.apache" in ln for ln in e2)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["crc", "page", "missing"])
def test_cli_parquet_errors_as_decode(spark, tmp_path, capfd, damage):
    """--parquet: the error decode prints, with its status, though it was raised in a Python worker."""
    fx, paths = _damaged(tmp_path, damage)
    args = ["--catalog", _dated_back(fx, tmp_path)]
    s1, e1 = _cli(["decode", *args, "--output", str(tmp_path / "single.out"), *paths], capfd)
    s2, e2 = _cli(["spark", "decode", "--master", "local[2]", *args, "--parquet", str(tmp_path / "pq"), *paths], capfd)
    assert s1 != 0 and e1
    assert (s2, e2) == (s1, e1)


@pytest.mark.slow
def test_cli_hadoop_scheme_missing(spark, tmp_path, capfd):
    """A Hadoop scheme this Spark has no file system for: one line naming it, a usage status."""
    fx = _fixture("pg15-off/savepoints")
    status, errors = _cli(["spark", "decode", "--master", "local[2]", "--catalog", str(fx.path / "snapshot.json.gz"),
                           "s3a://no-such-bucket/wal/"], capfd)
    assert status == 2
    assert len(errors) == 1 and "s3a://no-such-bucket/wal/" in errors[0] and "no Hadoop file system" in errors[0]


# -- the DataFrame source ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name,out_file", [("pg15-off/toast", "test_decoding.jsonl"),
                                           ("pg15-off/ddl", "test_decoding-ts.jsonl"),
                                           ("pg15-off/messages", "test_decoding.jsonl")])
def test_dataframe_parquet_round_trip(spark, tmp_path, name, out_file):
    """format("pgwal") (registered statically: the package is installed) to Parquet partitioned by table
    and back: the rows, in (position, seq) order, are the lines decode prints; the change rows carry their
    relation and values."""
    fx = _fixture(name)
    meta = fx.meta["decoding_options"][out_file]
    slot = _slot(fx, meta)
    reader = (spark.read.format("pgwal").option("catalog", str(fx.path / "snapshot.json.gz"))
              .option("startLsn", slot["confirmed_flush_lsn"]).option("endLsn", fx.meta["end_lsn"]))
    for k, v in meta["options"].items():
        reader = reader.option(k, v)
    df = reader.load(str(fx.wal_dir))
    df.write.partitionBy("table").parquet(str(tmp_path / "pq"))
    back = spark.read.parquet(str(tmp_path / "pq"))
    got = back.orderBy("position", "seq").select("commit_lsn", "op", "schema", "table", "new", "line").collect()
    lines = b"".join(r["line"] + b"\n" for r in got)
    assert lines == single_process(fx, meta)
    changes = [r for r in got if r["op"] in ("INSERT", "UPDATE", "DELETE")]
    assert changes and all(r["table"] and r["schema"] for r in changes)
    for r in changes:
        if r["op"] == "INSERT":
            assert r["new"] and all(c["name"] and c["type"] for c in r["new"])
            assert r["line"].startswith(b"table ")


# -- a standalone cluster ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.spark
def test_standalone_cluster(standalone, tmp_path):
    """Decode through spark:// (the lane's master and worker on 127.0.0.1: conftest.standalone), the
    executors on the Cython implementation."""
    import subprocess

    if _impl.IMPL != "cython":
        pytest.skip("the Cython extension is not built")
    fx = _fixture("pg15-off/savepoints")
    meta = fx.meta["decoding_options"]["test_decoding.jsonl"]
    slot = _slot(fx, meta)
    out = tmp_path / "spark.out"
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "decode", "--master",
                          standalone.url, "--conf", "spark.executor.memory=512m",
                          "--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn",
                          slot["confirmed_flush_lsn"], "--end-lsn", fx.meta["end_lsn"], "--segments-per-task", "1",
                          "--output", str(out), str(fx.wal_dir)],
                         env=dict(standalone.env, WALDECODE_IMPL="cython"), capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    assert out.read_bytes() == single_process(fx, meta)
    assert b"waldecode: note: the executors ran the cython implementation" in run.stderr


PGOUTPUT_CASES = [pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}")
                  for fx in all_fixtures() if fx.major in (16, 18) and fx.path.name in ("ddl", "checkpoint_fpi",
                                                                                           "prepared", "types")
                  for out_file, meta in fx.meta.get("decoding_options", {}).items() if meta["plugin"] == "pgoutput"]


@pytest.mark.parametrize("method", ["auto", "events"])
@pytest.mark.parametrize("fx,out_file,meta", PGOUTPUT_CASES)
def test_pgoutput_tasks_in_process_equal_server(fx, out_file, meta, method):
    """pgoutput through the Spark task functions (one output range: what it sends depends on what it
    sent before) gives the server's messages, each followed by a newline as pg_recvlogical writes them;
    by the event path too (its fallback), whose replays carry their invalidation changes."""
    import json

    from waldecode.output.pgoutput import PgOutput

    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    if catalog.publications is None:
        pytest.skip("snapshot without publications")
    slot = _slot(fx, meta)
    executor = LocalExecutor()
    executor.ranges = 1
    out = io.BytesIO()
    result = decode_spark(executor, [fx.wal_dir], catalog, PgOutput, out, plugin_options=meta["options"],
                          start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn,
                          two_phase=slot["two_phase"], segments_per_run=1, method=method)
    assert result.not_decoded == [] and result.warnings == []
    with open(fx.path / out_file, encoding="ascii") as f:
        expected = b"".join(bytes.fromhex(json.loads(line)[2]) + b"\n" for line in f)
    assert out.getvalue() == expected


@pytest.mark.slow
def test_cli_pgoutput_equals_server(spark, tmp_path, capfd):
    """``spark decode --format pgoutput`` writes the server's messages as pg_recvlogical -f writes them;
    more than one output range is refused (pgoutput's messages depend on what it sent before)."""
    import json

    fx = _fixture("pg18-off/ddl")
    meta = fx.meta["decoding_options"]["pgoutput-binary.jsonl"]
    slot = _slot(fx, meta)
    opts = [x for k, v in meta["options"].items() for x in ("-o", f"{k}={v}")]
    common = ["spark", "decode", "--master", "local[2]", "--format", "pgoutput", "--catalog",
              str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"], "--end-lsn",
              fx.meta["end_lsn"], *opts]
    out = tmp_path / "spark.out"
    assert _cli([*common, "--output", str(out), str(fx.wal_dir)], capfd) == (0, [])
    with open(fx.path / "pgoutput-binary.jsonl", encoding="ascii") as f:
        expected = b"".join(bytes.fromhex(json.loads(line)[2]) + b"\n" for line in f)
    assert out.read_bytes() == expected
    status, err = _cli([*common, "--ranges", "2", "--output", str(tmp_path / "x.out"), str(fx.wal_dir)], capfd)
    assert status != 0 and "--format pgoutput decodes as one output range" in err[0]


def test_partition_keys_match_spark(spark):
    """The keys phase 2 sends each output range with land in that range's partition (Spark's own hash)."""
    from waldecode.spark.executors import _spark_hash_long, partition_keys

    values = [0, 1, 2, -1, 42, 2**40 + 7, -(2**50)]
    got = spark.createDataFrame([(v,) for v in values], "id long").selectExpr("hash(id)").collect()
    assert [r[0] for r in got] == [_spark_hash_long(v) for v in values]
    for n in (1, 2, 7, 16):
        keys = partition_keys(n)
        placed = spark.createDataFrame([(k,) for k in keys], "key long").repartition(n, "key") \
            .rdd.mapPartitionsWithIndex(lambda i, rows: [(r[0], i) for r in rows]).collect()
        assert dict(placed) == {k: i for i, k in enumerate(keys)}


def _layouts(tmp_path, wal_dir):
    """The fixture's segments as pgBackRest (zstd, SHA-1 names, archive.info), barman (bzip2, bare names)
    and WAL-G (brotli) keep them."""
    import bz2
    import hashlib

    import brotli
    import zstandard

    from waldecode.wal.segments import identity_of, read_segment_file

    segs = {p.name.split(".")[0]: read_segment_file(p) for p in sorted(wal_dir.iterdir())}
    sysid = identity_of(next(iter(segs.values())), "first").xlp_sysid
    repo, barman, walg = tmp_path / "repo", tmp_path / "barman", tmp_path / "walg"
    for name, data in segs.items():
        leaf = repo / "archive" / "main" / "15-1" / name[:16]
        leaf.mkdir(parents=True, exist_ok=True)
        (leaf / f"{name}-{hashlib.sha1(data).hexdigest()}.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
        (barman / "wals" / name[:16]).mkdir(parents=True, exist_ok=True)
        (barman / "wals" / name[:16] / name).write_bytes(bz2.compress(data))
        (walg / "wal_005").mkdir(parents=True, exist_ok=True)
        (walg / "wal_005" / f"{name}.br").write_bytes(brotli.compress(data))
    (repo / "backup" / "main").mkdir(parents=True)
    (repo / "archive" / "main" / "archive.info").write_text(
        f"[db]\ndb-id=1\ndb-system-id={sysid}\ndb-version=\"15\"\n\n"
        f"[db:history]\n1={{\"db-id\":{sysid},\"db-version\":\"15\"}}\n")
    (barman / "base").mkdir()
    return {"pgbackrest": repo, "barman": barman, "walg": walg}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["local", "file-uri"])
def test_cli_archive_layouts_as_decode(spark, tmp_path, capfd, how):
    """spark decode reads the backup tools' layouts as decode does, locally and through Hadoop's file systems."""
    fx = _fixture("pg15-off/checkpoint_fpi")
    slot = _slot(fx, fx.meta["decoding_options"]["test_decoding.jsonl"])
    common = ["--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
              "--end-lsn", fx.meta["end_lsn"]]
    plain = tmp_path / "plain.out"
    assert _cli(["decode", *common, "--output", str(plain), str(fx.wal_dir)], capfd) == (0, [])
    assert plain.stat().st_size > 0
    for tool, path in _layouts(tmp_path, fx.wal_dir).items():
        out = tmp_path / f"{tool}.out"
        where = str(path) if how == "local" else path.resolve().as_uri()
        status, errors = _cli(["spark", "decode", "--master", "local[2]", *common, "--output", str(out), where], capfd)
        assert (tool, status, errors) == (tool, 0, [])
        assert out.read_bytes() == plain.read_bytes(), tool
