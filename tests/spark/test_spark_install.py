"""The ``pgwal`` source and ``spark decode`` as an installed package meets them, from anywhere.

A user's own SparkSession (not waldecode's) finds ``format("pgwal")`` through the installed
top-level ``pyspark_waldecode`` module, with and without ``spark.sql.python.filterPushdown.enabled``
(filters prune partitions only with it); ``spark decode`` too.  Both run from a temporary working
directory outside the repository that holds a ``waldecode/`` folder which fails on import: Spark's
Python workers put their working directory first on ``sys.path``, and must not import it.

The package is a real non-editable install: a wheel built from this checkout (pure Python, fast)
installed into a directory put first on PYTHONPATH, the checkout's built extensions copied in.
Expected lines are the server's (the fixture's test_decoding.jsonl, read from a slot).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_data import all_fixtures

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# two segments: the source's partitions are output ranges, which start at segment runs
FIXTURE = "pg15-off/checkpoint_fpi"

USER_SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession

catalog, start, wal, after, until = sys.argv[1:6]
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
out = {}
for pushdown in ("false", "true"):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown)
    df = spark.read.format("pgwal").option("catalog", catalog).option("startLsn", start).load(wal)
    rows = df.orderBy("position", "seq").collect()
    one = df.filter((df.commit_lsn >= int(after)) & (df.commit_lsn < int(until)))
    out[pushdown] = {
        "lines": [r["line"].decode() for r in rows],
        "types": {f.name: f.dataType.simpleString() for f in df.schema.fields},
        "one": [r["line"].decode() for r in one.orderBy("position", "seq").collect()],
        "one_partitions": one.rdd.getNumPartitions(),
    }
print("RESULT " + json.dumps(out))
"""


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def _fixture():
    fx = next((f for f in all_fixtures() if f.name == FIXTURE), None)
    if fx is None:
        pytest.skip(f"no {FIXTURE} fixture")
    return fx


def _install(tmp: Path) -> Path:
    """A non-editable install of this checkout: the wheel's files in ``tmp/site``."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "pyspark_waldecode.py"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "waldecode", src / "waldecode", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = {**os.environ, "WALDECODE_NO_NATIVE": "1"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "wheel"), str(src)], check=True, env=env, cwd=tmp, capture_output=True)
    site = tmp / "site"
    wheel = next((tmp / "wheel").glob("waldecode-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, cwd=tmp, capture_output=True)
    for so in (ROOT / "waldecode").glob("*.so"):  # the extensions a native wheel would hold
        shutil.copy(so, site / "waldecode" / so.name)
    return site


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("pyspark")
    fx = _fixture()
    tmp = tmp_path_factory.mktemp("install")
    site = _install(tmp)
    work = tmp / "work"
    (work / "waldecode").mkdir(parents=True)
    (work / "waldecode" / "__init__.py").write_text(
        'raise ImportError("the waldecode/ folder of the working directory was imported")\n')
    (tmp / "user.py").write_text(USER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH", "SPARK_CONF_DIR")}
    env.update(PYTHONPATH=str(site), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    server = [json.loads(ln) for ln in (fx.path / "test_decoding.jsonl").read_text().splitlines()]
    slot = next(s for s in fx.meta["slots"] if s["plugin"] == "test_decoding")
    # A transaction in the middle: its commit record starts after the previous COMMIT row's LSN (the
    # end of that commit record) and before its own COMMIT row's
    commits = [r for r in server if r[2].startswith("COMMIT")]
    commit = commits[len(commits) // 2]
    after, until = (_lsn(commits[len(commits) // 2 - 1][0]), _lsn(commit[0]))
    catalog = str(fx.path / "snapshot.json.gz")
    user = subprocess.Popen([sys.executable, str(tmp / "user.py"), catalog, slot["confirmed_flush_lsn"],
                             str(fx.wal_dir), str(after), str(until)],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # -P: the CLI's own process does not import its working directory; its workers are the test
    cli = subprocess.Popen([sys.executable, "-P", "-c", "import sys; from waldecode.cli import main; sys.exit(main())",
                            "spark", "decode", "--master", "local[2]", "--catalog", catalog,
                            "--start-lsn", slot["confirmed_flush_lsn"], str(fx.wal_dir)],
                           cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cli_out, cli_err = cli.communicate(timeout=600)
    user_out, user_err = user.communicate(timeout=600)
    return {"server": server, "commit": commit, "site": site, "user": (user.returncode, user_out, user_err),
            "cli": (cli.returncode, cli_out, cli_err.decode(errors="replace"))}


def _user(runs) -> dict:
    status, out, err = runs["user"]
    assert status == 0, err[-3000:]
    return json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULT "))[7:])


def test_installed_as_a_wheel(runs):
    """The wheel puts pyspark_waldecode next to the package: what Spark's lookup imports."""
    assert (runs["site"] / "pyspark_waldecode.py").is_file()
    assert (runs["site"] / "waldecode" / "spark" / "datasource.py").is_file()


@pytest.mark.parametrize("pushdown", ["false", "true"])
def test_user_session_reads_the_server_rows(runs, pushdown):
    """format("pgwal") in a plain SparkSession from a directory outside the repository whose
    waldecode/ folder fails on import: the rows are the server's, with or without pushdown."""
    got = _user(runs)[pushdown]
    assert got["lines"] == [r[2] for r in runs["server"]]


def test_schema_types(runs):
    """What docs/spark.md says of the columns."""
    types = _user(runs)["false"]["types"]
    assert types["commit_lsn"] == "bigint" and types["lsn"] == "bigint" and types["line"] == "binary"
    assert types["commit_time"] == "timestamp" and types["new"].startswith("array<struct<name:string")


def test_filters_pruned_only_when_pushed(runs):
    """A filter on commit_lsn around one transaction gives that transaction's rows either way; only with pushdown does
    it prune the partitions read."""
    res = _user(runs)
    commit = runs["commit"]
    server = runs["server"]
    end = server.index(commit)
    begin = max(i for i in range(end) if server[i][2].startswith("BEGIN"))
    expected = [r[2] for r in server[begin:end + 1]]
    assert res["false"]["one"] == expected and res["true"]["one"] == expected
    assert res["true"]["one_partitions"] < res["false"]["one_partitions"]


def test_spark_decode_from_that_directory(runs):
    """spark decode's executors (PYTHONSAFEPATH) do not import the working directory's waldecode/."""
    status, out, err = runs["cli"]
    assert status == 0, err[-3000:]
    assert out.decode() == "".join(r[2] + "\n" for r in runs["server"])
