"""``waldecode spark decode s3://...``: the range path's tasks read the segments through the pickled store.

A throw-away PostgreSQL 15 (1 MB segments) runs a workload without DDL, so ``spark decode`` takes its
range path: committed batches, a transaction open across segments while others commit, one that rolls
back.  The server's test_decoding slot gives the expected rows.  The archived segments go into a
bucket of the test S3 server (tests/support/s3server.py); ``spark decode`` on ``local[2]`` from the
bucket must write the slot's rows, by the range path, and the segments must have been fetched by the
executors' Python workers (the store travels to them pickled, without its client, and they fetch
through obstore themselves): the server saw each segment fetched more often than the driver fetched it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from live import SlotRun, live_cluster
from waldecode.cli import main
from waldecode.wal.segments import segment_name
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.spark]

BUCKET = "wal"
SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int, delta numeric, note text);
INSERT INTO acct SELECT g, 'owner ' || g, 100 FROM generate_series(1, 200) g;
"""


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """(the S3 server, the catalog file, the segment names, the server's rows)."""
    from s3server import S3Server, missing_modules

    if missing_modules():
        pytest.skip(f"missing Python packages: {', '.join(missing_modules())} (pip install -e '.[test]')")
    pytest.importorskip("obstore")
    tmp = tmp_path_factory.mktemp("spark-s3")
    with live_cluster(SCHEMA) as c, S3Server(buckets=[BUCKET], log_requests=True) as s3:
        run = SlotRun(c)
        with c.connect("live") as long_, c.connect("live") as other:
            long_.execute("BEGIN")
            long_.execute("UPDATE acct SET balance = balance - 1 WHERE id = 1")
            for i in range(0, 9000, 500):  # about 3 MB of WAL in committed batches
                other.execute("INSERT INTO hist (acct, delta, note) SELECT g % 200 + 1, g, repeat('f', 200) "
                              f"FROM generate_series({i}, {i + 499}) g")
                if i == 3000:
                    long_.execute("INSERT INTO hist (acct, delta, note) VALUES (1, -1, 'across segments')")
            long_.execute("COMMIT")
            other.execute("BEGIN")
            other.execute("DELETE FROM hist WHERE id % 7 = 0")
            other.execute("ROLLBACK")
            other.execute("UPDATE acct SET owner = 'last' WHERE id = 2")
        got, expected = run.finish(tmp)
        assert got == expected
        catalog = tmp / "catalog.json"
        catalog.write_text(run.catalog.to_json())
        segments = sorted(p.name for p in run.wal.iterdir())
        s3.upload(BUCKET, {f"archive/{name}": (run.wal / name).read_bytes() for name in segments})
        rows = "".join(line + "\n" for line in expected).encode("utf-8", "surrogateescape")
        yield s3, catalog, run, segments, rows


def test_spark_decode_from_s3_by_ranges(spark, archive, tmp_path, capfd, monkeypatch):
    from waldecode.wal import objectstore

    s3, catalog, run, segments, expected = archive
    assert len(segments) >= 3
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    # The executors' Python workers take the context's environment (as a cluster's take spark.executorEnv.*):
    # the lane's session started before this test set the credentials
    env = spark.sparkContext.environment
    saved = dict(env)
    env.update(s3.env())
    driver = Counter()
    real_get = objectstore.S3Store._get

    def get(self, location):
        driver[location.rsplit("/", 1)[1]] += 1
        return real_get(self, location)

    monkeypatch.setattr(objectstore.S3Store, "_get", get)
    before = Counter(p.rsplit("/", 1)[1] for m, p, r in s3.requests() if m == "GET" and r == "-")
    out = tmp_path / "s3.out"
    try:
        status = main(["spark", "decode", "--master", "local[2]", "--catalog", str(catalog), "--start-lsn",
                       run.confirmed_lsn, "--end-lsn", run.end_lsn, "--segments-per-task", "1", "--output", str(out),
                       "--endpoint-url", s3.endpoint_url, "--no-verify-tls", f"s3://{BUCKET}/archive"])
    finally:
        env.clear()
        env.update(saved)
    err = capfd.readouterr().err
    assert status == 0, err
    assert [ln for ln in err.splitlines() if ln.startswith("waldecode:") and "note:" not in ln] == [], err
    assert "event path" not in err, err  # the range path
    assert out.read_bytes() == expected
    server = Counter(p.rsplit("/", 1)[1] for m, p, r in s3.requests() if m == "GET" and r == "-") - before
    executors = server - driver
    size = 1024 * 1024  # live_cluster's segments
    last = segment_name(1, (parse_lsn(run.end_lsn) - 1) // size, size)
    assert {n for n in executors if n in segments} == {n for n in segments if n <= last}, (server, driver)
