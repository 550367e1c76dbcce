"""Every shell command README.md and docs/*.md show, run on the bundled fixtures.

The shell code blocks (```sh, ```bash) of the documents are read as a user would copy them:
comment lines dropped, ``\\`` continuations joined, trailing ``# ...`` comments cut.  Each
command must be classified here: either in ``RUN`` (with the exit status the README documents
for it, 0 unless said otherwise), run against one fixture (``fixtures/pg15-off/interleaved``:
its ``wal/``, ``snapshot.json.gz``, ``meta.json``) with the documents' placeholder paths and
LSNs replaced by the fixture's; or in ``SKIP`` with the reason it cannot run here (a live
server, a base backup, S3, Spark).  A command added to a document and classified nowhere fails
``test_every_command_is_classified``; an example whose options or behaviour drift from the tool
fails ``test_documented_command`` (wrong exit status, or a Python traceback).  Every ``--option`` the
documents name, in prose too, must be an option of some waldecode command
(``test_documented_options_exist``), and every repository path they name must exist
(``test_documented_paths_exist``).  The Python examples run in the Spark lane
(``tests/spark/test_docs_python.py``).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

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


_SQL_ARGS = "--catalog app-catalog.json --start-lsn 0/1D00028 /archive/wal/"

#: command as the documents show it -> the exit status the README documents for it on the fixture
RUN = {
    "waldecode inspect --start-lsn 0/1D00028 --end-lsn 0/1D5A5C8 /archive/wal/": 0,
    "waldecode inspect --stats /archive/wal/000000010000000000000042.gz": 0,
    "waldecode decode --catalog app-catalog.json --start-lsn 0/1D00028 /archive/wal/ "
    "-o include-timestamp -o skip-empty-xacts=on": 0,
    "waldecode decode --catalog app-catalog.json --start-lsn 0/1D00028 --slot app.slot --output app.out "
    "/archive/wal/": 0,
    "waldecode timelines /archive/wal/ --start-lsn 0/C00100": 0,
    f"waldecode decode --format sql {_SQL_ARGS} > redo.sql": 0,
    "waldecode decode --format sql -o conflict=guard ...": 0,
    # README, Exit status: "decode --format sql (and --undo) exits 1 when it listed a change it could not
    # redo or undo"; the fixture's tables are not REPLICA IDENTITY FULL, so the WAL holds no old rows
    "waldecode decode --format sql --undo ... > undo.sql": 1,
}

_SERVER = "needs a live PostgreSQL server (a DSN)"
_BACKUP = "needs a base backup or backup set (the fixtures hold WAL and snapshots, no data directory)"
#: command as the documents show it -> why it is not run here
SKIP = {
    "./dev demo": "sets up the environment these tests run in; test_dev_demo_module runs what it then runs",
    "./dev test": "sets up and runs the whole suite (CI's own command)",
    ". .venv/bin/activate": "the environment these tests run in",
    "waldecode decode --catalog /var/lib/pgbackrest --start-time '2026-11-27 14:00' --end-time "
    "'2026-11-27 14:05' /var/lib/pgbackrest": _BACKUP + " (pgBackRest's; tests/live/test_catalog_choice.py)",
    "waldecode decode --catalog /var/lib/barman/pg --start-time '2026-11-27 14:00' /var/lib/barman/pg":
        _BACKUP + " (barman's; tests/live/test_catalog_choice.py)",
    "waldecode decode --catalog snapshots/ --end-time '2026-11-27 14:05+01' s3://backups/walg/prod":
        "needs S3 and a snapshot taken at or before the archive's first segment (the fixtures' snapshots "
        "are taken inside it, after their tables were created)",
    "waldecode inspect --endpoint-url https://minio.internal:9000 s3://backups/pgbackrest":
        "needs an S3-compatible store (tests/live/test_object_store.py)",
    "waldecode catalog --backup /var/lib/pgbackrest --before '2026-11-27 14:00' -o app-catalog.json":
        _BACKUP + " (tests/live/test_catalog_backup.py)",
    "waldecode catalog --dsn 'host=/run/postgresql dbname=app' -o app-catalog.json": _SERVER,
    "waldecode catalog --datadir /backups/base-2026-11-20 -o app-catalog.json":
        _BACKUP + " (tests/live/test_catalog_datadir.py)",
    "waldecode bench --workloads pgbench,big_txn --scale 0.25 --runs 3 --output-dir bench-results":
        "starts PostgreSQL servers and runs for minutes (tests/live/test_bench.py)",
    "waldecode spark decode --master 'local[2]' --catalog app-catalog.json --start-lsn 0/1D00028 "
    "--output app.out /archive/wal/": "needs Spark (the spark lane: tests/spark/)",
    "waldecode spark decode --master spark://10.0.0.5:7077 --conf spark.executor.memory=1g --catalog "
    "app-catalog.json --parquet /data/changes /archive/wal/": "needs a Spark cluster",
    "waldecode diverge --old /old-primary/pg_wal --new /new-primary/pg_wal --catalog app-catalog.json":
        "needs the WAL of a failover, two timelines (tests/live/test_diverge.py); the fixtures have one",
    "waldecode diverge --old /archive/wal/ --catalog app-catalog.json --dsn 'host=new-primary dbname=app' "
    "--format json --changes -o include-timestamp": _SERVER + " and a failover (tests/live/test_diverge.py)",
    "waldecode apply --dsn 'host=newprimary dbname=app' --catalog app-catalog.json --start-lsn 0/1D00028 "
    "/archive/wal/": _SERVER + " to apply to (tests/live/test_apply.py)",
}


def _placeholders() -> dict[str, str]:
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


def _argv(cmd: str, subst: dict[str, str]) -> tuple[list[str], str | None]:
    """The command's arguments after ``waldecode`` with the fixture's values, and the file ``>`` names."""
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
            args += [subst.get(t, t) for t in shlex.split(_SQL_ARGS)]
        else:
            args.append(subst.get(tok, tok))
    return args, stdout_file


def test_every_command_is_classified():
    found = documented()
    assert found, "no shell blocks found in README.md and docs/"
    unclassified = [f"{cmd}  ({', '.join(docs)})" for cmd, docs in found.items() if cmd not in RUN and cmd not in SKIP]
    assert not unclassified, "commands shown in the documents that this test neither runs nor skips:\n" + \
        "\n".join(unclassified)
    stale = [cmd for cmd in (*RUN, *SKIP) if cmd not in found]
    assert not stale, "classified commands no document shows any more:\n" + "\n".join(stale)
    assert not set(RUN) & set(SKIP)


@pytest.mark.parametrize("cmd", list(RUN), ids=[c[10:60] for c in RUN])
def test_documented_command(cmd, tmp_path):
    args, stdout_file = _argv(cmd, _placeholders())
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, capture_output=True,
                          timeout=120)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, f"{cmd}:\n{stderr}"
    assert proc.returncode == RUN[cmd], f"{cmd}: exit {proc.returncode}, the README says {RUN[cmd]}\n{stderr}"
    if stdout_file:
        (tmp_path / stdout_file).write_bytes(proc.stdout)
    if RUN[cmd] == 0:
        assert proc.stdout or any(tmp_path.iterdir()), f"{cmd}: exit 0 but no output"


def test_slot_example_resumes(tmp_path):
    """The offline-slot example run twice: the second run resumes and leaves the same output."""
    cmd = "waldecode decode --catalog app-catalog.json --start-lsn 0/1D00028 --slot app.slot --output app.out " \
          "/archive/wal/"
    args, _ = _argv(cmd, _placeholders())
    run = lambda: subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path,
                                 capture_output=True, timeout=120)
    first = run()
    assert first.returncode == 0, first.stderr
    out = (tmp_path / "app.out").read_bytes()
    assert out.startswith(b"BEGIN")
    second = run()
    assert second.returncode == 0, second.stderr
    assert b"Traceback" not in second.stderr
    assert (tmp_path / "app.out").read_bytes() == out


def test_dev_demo_module():
    """What ``./dev demo`` runs once the environment is set up: every fixture equal to the servers' output,
    every fixture's decoding compared."""
    proc = subprocess.run([sys.executable, "-m", "waldecode.demo"], cwd=ROOT, capture_output=True, timeout=300)
    text = proc.stdout.decode()
    assert proc.returncode == 0, text + proc.stderr.decode()
    assert "all equal" in text
    rows = [ln for ln in text.splitlines() if re.match(r"pg\d+-\w+/\w+ ", ln)]
    assert rows
    # every fixture's decoding is compared with its server's slot: test_decoding's rows, or pgoutput's
    # messages where the server was built without test_decoding (16, 18); none left out as "-"
    assert all(ln.endswith((" rows", " pgoutput msgs")) for ln in rows), "\n".join(rows)
    assert any(ln.startswith(("pg16", "pg18")) and ln.endswith("pgoutput msgs") for ln in rows)
    assert "Traceback" not in proc.stderr.decode()


#: options the documents name that belong to other tools
FOREIGN_OPTIONS = {
    "--py-files": "spark-submit's",
}


def _help(*command: str) -> str:
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *command, "--help"], capture_output=True,
                          text=True, timeout=60, check=True).stdout


def test_documented_options_exist():
    """Every ``--option`` README.md and docs/ name (in prose too) is an option of a waldecode command."""
    known = set(re.findall(r"--[a-z][a-z0-9-]+", _help()))
    commands = re.search(r"\{([a-z,-]+)\}", _help()).group(1).split(",")
    for command in commands:
        text = _help(command)
        known |= set(re.findall(r"--[a-z][a-z0-9-]+", text))
        sub = re.search(r"\{([a-z,-]+)\}", text.split("\n\n")[0])
        for subcommand in sub.group(1).split(",") if sub else ():
            known |= set(re.findall(r"--[a-z][a-z0-9-]+", _help(command, subcommand)))
    named = {}
    for doc in DOCUMENTS:
        for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", doc.read_text(encoding="utf-8")):
            named.setdefault(option, doc.name)
    unknown = sorted(f"{option} ({doc})" for option, doc in named.items()
                     if option not in known and option not in FOREIGN_OPTIONS)
    assert not unknown, "options the documents name that no waldecode command has:\n" + "\n".join(unknown)
    assert "--start-lsn" in known and "--catalog" in known


def test_exit_status_of_unfit_snapshots(tmp_path):
    """README's Exit status: a snapshot that cannot be read or is of another major version is usage (2);
    one taken after the reading start with catalog changes in between cannot decode the WAL (1)."""
    wal = FIXTURE / "wal"
    last_stderr = [b""]

    def status(catalog):
        proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(catalog), str(wal)],
                              capture_output=True, timeout=120)
        last_stderr[0] = proc.stderr
        assert b"Traceback" not in proc.stderr
        assert proc.stderr.count(b"waldecode: error: ") == 1, proc.stderr
        return proc.returncode

    (tmp_path / "not-a-snapshot.json").write_text("{}")
    assert status(tmp_path / "not-a-snapshot.json") == 2
    assert status(tmp_path / "missing.json") == 2
    assert status(ROOT / "fixtures" / "pg16-off" / FIXTURE.name / "snapshot.json.gz") == 2
    # the fixture's snapshot is taken inside its first segment, after its tables were created: read from
    # the input's first record (no --start-lsn), the catalog changed in between
    assert status(FIXTURE / "snapshot.json.gz") == 1
    assert b"after the reading start" in last_stderr[0]


def test_documented_paths_exist():
    """Every repository path README.md and docs/ name (tests, modules, docs, benchmarks) exists."""
    missing = []
    for doc in DOCUMENTS:
        for path in re.findall(r"(?<![\w/.-])(?:tests|waldecode|docs|benchmarks|fixtures|native)/[\w./*-]*[\w*]",
                               doc.read_text(encoding="utf-8")):
            if not any(ROOT.glob(path)):
                missing.append(f"{path} ({doc.name})")
    assert not missing, "paths the documents name that do not exist:\n" + "\n".join(missing)
