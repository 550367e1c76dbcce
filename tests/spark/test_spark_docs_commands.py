"""The documents' ``spark decode`` commands (``doc_commands.LANE``), run as written in the Spark lane.

Each command is taken from the documents by ``doc_commands.lane_command``, its placeholders replaced
(``doc_commands.argv``), and must end with status 0 holding what single-process ``waldecode decode``
writes for the same arguments (``--master`` and ``--conf`` left out), which the differential lane
holds to the servers' own output:

- ``--master local[2] ... --output app.out /archive/wal/`` runs in this process on the lane's
  ``local[2]`` session (conftest.spark), in a working directory of its own, with the bundled
  fixture's paths and LSN (``doc_commands.placeholders``): ``app.out`` is ``decode``'s, byte for byte;
- ``--master spark://10.0.0.5:7077 --conf spark.executor.memory=1g ... --parquet /data/changes
  /archive/wal/`` runs as its own process against the lane's standalone cluster (conftest.standalone),
  its master's URL in place of the documents' and a fresh directory for the dataset.  It reads from the
  WAL's first record (no ``--start-lsn``), so its catalog is the snapshot of ``fixtures/pg15-off/ddl``,
  taken at the start of that fixture's segment (the interleaved fixture's is taken after its setup DDL,
  and ``decode`` rightly refuses it from the first record): the dataset's rows, one schema per table
  across the fixture's ADD, DROP, RENAME and ALTER COLUMN TYPE, are ``decode --parquet``'s.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from doc_commands import ROOT, argv, lane_command, placeholders
from test_spark_rows import dataset
from waldecode.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DDL = ROOT / "fixtures" / "pg15-off" / "ddl"


def _as_decode(args: list[str]) -> list[str]:
    """``spark decode``'s arguments as ``decode``'s: the same, less the Spark-only ``--master`` and ``--conf``."""
    assert args[:2] == ["spark", "decode"], args
    out, rest = ["decode"], iter(args[2:])
    for a in rest:
        if a in ("--master", "--conf"):
            next(rest)
        else:
            out.append(a)
    return out


def test_spark_decode_local(spark, tmp_path, monkeypatch, capfd):
    cmd = lane_command("tests/spark/test_spark_docs_commands.py::test_spark_decode_local")
    args, stdout_file = argv(cmd, placeholders())
    assert stdout_file is None and "app.out" in args
    (tmp_path / "spark").mkdir()
    (tmp_path / "decode").mkdir()
    monkeypatch.chdir(tmp_path / "decode")
    status, err = main(_as_decode(args)), capfd.readouterr().err
    assert status == 0, err
    monkeypatch.chdir(tmp_path / "spark")
    status, err = main(args), capfd.readouterr().err
    assert status == 0 and "error" not in err, err
    expected = (tmp_path / "decode" / "app.out").read_bytes()
    assert expected.startswith(b"BEGIN")
    assert (tmp_path / "spark" / "app.out").read_bytes() == expected


def test_spark_decode_standalone_parquet(standalone, tmp_path):
    cmd = lane_command("tests/spark/test_spark_docs_commands.py::test_spark_decode_standalone_parquet")
    subst = {"spark://10.0.0.5:7077": standalone.url, "/data/changes": str(tmp_path / "changes"),
             "app-catalog.json": str(DDL / "snapshot.json.gz"), "/archive/wal/": str(DDL / "wal")}
    args, _ = argv(cmd, subst)
    assert set(subst.values()) <= set(args), args  # every placeholder met
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, env=standalone.env,
                         capture_output=True, timeout=600)
    stderr = run.stderr.decode(errors="replace")
    assert run.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    single = tmp_path / "single"
    decode_args = _as_decode(args)
    decode_args[decode_args.index("--parquet") + 1] = str(single)
    assert main(decode_args) == 0
    want = dataset(single)
    # the fixture's tables, each with its rows, and the transactions
    assert "transactions" in want and len(want) > 2
    assert dataset(tmp_path / "changes") == want
