"""The shell commands README.md and docs/*.md show, and how the tests check each of them.

The shell code blocks (```sh, ```bash) of the documents are read as a user would copy them:
comment lines dropped, ``\\`` continuations joined, trailing ``# ...`` comments cut.  Every command
is classified here, once: ``RUN`` (run by tests/differential/test_docs_commands.py on the bundled
fixture ``fixtures/pg15-off/interleaved``, with the exit status the README documents), ``LIVE``
(run by tests/live/test_docs_commands_live.py against a throw-away PostgreSQL 15 server), ``LANE``
(run by the named test of the lane that already builds what it needs: a Spark session and a
standalone cluster, pgBackRest and barman repositories, an S3 server; each such test takes its
command from here with ``lane_command``), or ``SKIP`` (why no test runs it: the commands that set up
the environment the tests run in, and the minutes-long bench).  Every ``waldecode`` command of
``LIVE``, ``LANE`` and ``SKIP`` is still parsed by the command line's own parser (a lane may be
skipped where its tools are missing).  The documents' placeholder paths and LSNs become the
fixture's (``placeholders``, ``argv``), or in a lane the values of what that lane built.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIXTURE = ROOT / "fixtures" / "pg15-off" / "interleaved"

_OPERATORS = {">", ">>", "|", "<", "&&"}
_BLOCK = re.compile(r"^```(sh|bash|shell|console)\n(.*?)^```", re.S | re.M)


def shell_commands(text: str) -> list[str]:
    """The commands of a document's shell blocks, one string each (continuations joined, comments cut)."""
    out = []
    for m in _BLOCK.finditer(text):
        pending = ""
        for line in m.group(2).split("\n"):
            stripped = line.strip()
            if not pending and (not stripped or stripped.startswith("#")):
                continue
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            tokens = shlex.split(pending + stripped, comments=True)
            pending = ""
            if tokens:
                out.append(" ".join(t if t in _OPERATORS else shlex.quote(t) for t in tokens))
    return out


def documented() -> dict[str, list[str]]:
    """command -> the documents that show it."""
    found: dict[str, list[str]] = {}
    for doc in DOCUMENTS:
        for cmd in shell_commands(doc.read_text(encoding="utf-8")):
            found.setdefault(cmd, []).append(doc.name)
    return found


SQL_ARGS = "--catalog app-catalog.json --start-lsn 0/1D00028 /archive/wal/"

#: command as the documents show it -> the exit status the README documents for it on the fixture
RUN = {
    "waldecode --version": 0,
    "waldecode inspect --start-lsn 0/1D00028 --end-lsn 0/1D5A5C8 /archive/wal/": 0,
    "waldecode inspect --stats /archive/wal/000000010000000000000042.gz": 0,
    "waldecode decode --catalog app-catalog.json --start-lsn 0/1D00028 /archive/wal/ "
    "-o include-timestamp -o skip-empty-xacts=on": 0,
    "waldecode decode --catalog app-catalog.json --start-lsn 0/1D00028 --slot app.slot --output app.out "
    "/archive/wal/": 0,
    "waldecode timelines /archive/wal/ --start-lsn 0/C00100": 0,
    f"waldecode decode --format sql {SQL_ARGS} > redo.sql": 0,
    "waldecode decode --format sql -o conflict=guard ...": 0,
    # README, Exit status: "decode --format sql (and --undo) exits 1 when it listed a change it could not
    # redo or undo"; the fixture's tables are not REPLICA IDENTITY FULL, so the WAL holds no old rows
    "waldecode decode --format sql --undo ... > undo.sql": 1,
}

#: command as the documents show it -> what the live test checks after running it against a server
LIVE = {
    "waldecode catalog --dsn 'host=/run/postgresql dbname=app' -o app-catalog.json":
        "the snapshot names the database's tables with the server's own relfilenodes",
    "waldecode apply --dsn 'host=newprimary dbname=app' --catalog app-catalog.json --start-lsn 0/1D00028 "
    "/archive/wal/": "the fixture's transactions applied: the tables hold what the workload left on a server",
}

#: command as the documents show it -> the test that runs it, ``tests/LANE/FILE.py::NAME``, in the lane
#: that already has what it needs (test_lane_tests_exist checks that the test is there)
LANE = {
    "waldecode spark decode --master 'local[2]' --catalog app-catalog.json --start-lsn 0/1D00028 "
    "--output app.out /archive/wal/": "tests/spark/test_spark_docs_commands.py::test_spark_decode_local",
    "waldecode spark decode --master spark://10.0.0.5:7077 --conf spark.executor.memory=1g --catalog "
    "app-catalog.json --parquet /data/changes /archive/wal/":
        "tests/spark/test_spark_docs_commands.py::test_spark_decode_standalone_parquet",
    # these two are strict xfails until decode takes a backup repository as --catalog with times (and, for
    # barman, a server directory holding identity.json): their tests say why
    "waldecode decode --catalog /var/lib/pgbackrest --start-time '2026-11-27 14:00+01' --end-time "
    "'2026-11-27 14:05+01' /var/lib/pgbackrest":
        "tests/live/test_catalog_choice.py::test_documented_pgbackrest_decode_by_times",
    "waldecode decode --catalog /var/lib/barman/pg --start-time '2026-11-27 14:00+01' /var/lib/barman/pg":
        "tests/live/test_catalog_backup.py::test_documented_barman_decode_from_a_time",
    "waldecode catalog --backup /var/lib/pgbackrest --before '2026-11-27 14:00' -o app-catalog.json":
        "tests/live/test_catalog_choice.py::test_documented_catalog_backup_before",
    "waldecode inspect --endpoint-url https://minio.internal:9000 s3://backups/pgbackrest":
        "tests/live/test_object_store.py::test_documented_inspect_of_a_bucket",
    "waldecode decode --catalog snapshots/ --end-time '2026-11-27 14:05+01' s3://backups/walg/prod":
        "tests/live/test_object_store.py::test_documented_decode_of_a_walg_prefix",
    "waldecode diverge --old /old-primary/pg_wal --new /new-primary/pg_wal --catalog app-catalog.json":
        "tests/live/test_diverge.py::test_documented_diverge_report",
    "waldecode diverge --old /archive/wal/ --catalog app-catalog.json --dsn 'host=new-primary dbname=app' "
    "--format json --changes -o include-timestamp":
        "tests/live/test_diverge.py::test_documented_diverge_json_with_the_new_primary",
    "waldecode catalog --datadir /backups/base-2026-11-20 -o app-catalog.json":
        "tests/live/test_catalog_datadir.py::test_documented_catalog_of_a_base_backup",
    "waldecode table --backup /backups/base-2026-11-20 --table public.orders --at '2026-11-27 14:02:59+01' "
    "--inclusive off /archive/wal/ > orders.copy":
        "tests/live/test_table_as_of.py::test_documented_table_command",
    "waldecode table --backup /var/lib/pgbackrest --table public.orders --at '2026-11-27 14:02:59+01' "
    "> orders.copy": "tests/live/test_table_from_repository.py::test_documented_pgbackrest_table_command",
    "waldecode table --backup /var/lib/barman/pg --backup-set 20261120T020000 --table public.orders "
    "--at 0/5A0003B8": "tests/live/test_table_from_repository.py::test_documented_barman_table_command",
}

#: command as the documents show it -> why it is not run here
SKIP = {
    "./dev demo": "sets up the environment these tests run in; test_dev_demo_module runs what it then runs",
    "./dev test": "sets up and runs the whole suite (CI's own command)",
    ". .venv/bin/activate": "the environment these tests run in",
    "waldecode bench --workloads pgbench,big_txn --scale 0.25 --runs 3 --output-dir bench-results":
        "starts PostgreSQL servers and runs for minutes (tests/live/test_bench.py)",
}


def lane_command(test: str) -> str:
    """The one command of ``LANE`` that ``test`` (``tests/LANE/FILE.py::NAME``) runs, as a document still
    shows it: the test runs the documented text, so that a changed document changes the test."""
    cmds = [cmd for cmd, t in LANE.items() if t == test]
    assert len(cmds) == 1, f"LANE names {test} for {len(cmds)} commands: {cmds}"
    assert cmds[0] in documented(), f"no document shows {cmds[0]} any more"
    return cmds[0]


def placeholders() -> dict[str, str]:
    """The documents' example paths and LSNs -> the fixture's."""
    meta = json.loads((FIXTURE / "meta.json").read_text())
    slot = next(s for s in meta["slots"] if s["name"] == "wd_test_decoding")
    first_segment = sorted((FIXTURE / "wal").iterdir())[0]
    return {
        "/archive/wal/": str(FIXTURE / "wal"),
        "/archive/wal/000000010000000000000042.gz": str(first_segment),
        "app-catalog.json": str(FIXTURE / "snapshot.json.gz"),
        "0/1D00028": slot["confirmed_flush_lsn"],      # a slot's confirmed position
        "0/1D5A5C8": meta["end_lsn"],                  # an end inside the WAL
        "0/C00100": meta["start_lsn"],                 # a position inside the WAL
    }


def argv(cmd: str, subst: dict[str, str]) -> tuple[list[str], str | None]:
    """The command's arguments after ``waldecode`` with ``subst``'s values, and the file ``>`` names."""
    tokens = shlex.split(cmd)
    assert tokens[0] == "waldecode", cmd
    stdout_file = None
    if ">" in tokens:
        i = tokens.index(">")
        stdout_file = tokens[i + 1]
        tokens = tokens[:i] + tokens[i + 2:]
    args: list[str] = []
    for tok in tokens[1:]:
        if tok == "...":   # "the rest as in the command above" (the redo example's arguments)
            args += [subst.get(t, t) for t in shlex.split(SQL_ARGS)]
        else:
            args.append(subst.get(tok, tok))
    return args, stdout_file
