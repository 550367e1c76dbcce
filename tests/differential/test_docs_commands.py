"""Every shell command README.md and docs/*.md show, run on the bundled fixtures or at least parsed.

``doc_commands`` (tests/support) reads the documents' shell blocks as a user would copy them and
classifies every command: ``RUN`` commands are run here against one fixture
(``fixtures/pg15-off/interleaved``: its ``wal/``, ``snapshot.json.gz``, ``meta.json``) with the
documents' placeholder paths and LSNs replaced by the fixture's, and must end with the exit status
the README documents (0 unless said otherwise); ``LIVE`` ones need a server and run in the live lane
(tests/live/test_docs_commands_live.py); ``LANE`` ones run in the test of another lane that
``LANE`` names, where what they need is built anyway (Spark, a backup repository, an S3 server), and
that test must exist (``test_lane_tests_exist``); ``SKIP`` ones are the environment's own set-up and
the minutes-long bench.  A command added to a document and classified nowhere fails
``test_every_command_is_classified``; an example whose options or behaviour drift from the tool
fails ``test_documented_command`` (wrong exit status, or a Python traceback), and a ``waldecode``
command that is not run here fails ``test_documented_command_parses`` once the command line's own
parser rejects it.  Every ``--option`` the documents name, in prose too, must be an option of some
waldecode command (``test_documented_options_exist``), and every repository path they name must
exist (``test_documented_paths_exist``).  The Python examples run in the Spark lane
(``tests/spark/test_docs_python.py``).
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys

import pytest

from doc_commands import DOCUMENTS, FIXTURE, LANE, LIVE, ROOT, RUN, SKIP, argv, documented, placeholders
from waldecode import cli


def test_every_command_is_classified():
    found = documented()
    assert found, "no shell blocks found in README.md and docs/"
    classified = {**RUN, **LIVE, **LANE, **SKIP}
    unclassified = [f"{cmd}  ({', '.join(docs)})" for cmd, docs in found.items() if cmd not in classified]
    assert not unclassified, "commands shown in the documents that the tests neither run nor skip:\n" + \
        "\n".join(unclassified)
    stale = [cmd for cmd in classified if cmd not in found]
    assert not stale, "classified commands no document shows any more:\n" + "\n".join(stale)
    assert len(classified) == len(RUN) + len(LIVE) + len(LANE) + len(SKIP), "a command is classified twice"


def test_lane_tests_exist():
    """Each test ``LANE`` names is defined where it says, and takes its command from ``LANE`` by that name
    (``lane_command("tests/...::NAME")``): the command it runs is the documented one."""
    missing = []
    for cmd, test in LANE.items():
        path, _, name = test.partition("::")
        file = ROOT / path
        text = file.read_text() if file.is_file() else ""
        if not re.search(rf"^def {re.escape(name)}\(", text, re.M) or f'lane_command("{test}")' not in text:
            missing.append(f"{test}  (for {cmd})")
    assert not missing, "LANE names tests that do not exist or do not run its command:\n" + "\n".join(missing)


#: the waldecode commands not run here: parsed instead (a lane's, too: that lane may be skipped)
_NOT_RUN = [cmd for cmd in (*LIVE, *LANE, *SKIP) if cmd.startswith("waldecode ")]


@pytest.mark.parametrize("cmd", _NOT_RUN, ids=[c[10:60] for c in _NOT_RUN])
def test_documented_command_parses(cmd):
    """A command no lane here can run is still one the command line accepts, as written: ``cli.main``'s
    own parser (``cli.parse_args``) takes its arguments, or exits 2 with argparse's usage error."""
    args, _ = argv(cmd, {})
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parsed = cli.parse_args(args)
    except SystemExit as e:
        pytest.fail(f"{cmd}\nis rejected by waldecode's parser (exit {e.code}):\n{err.getvalue()}")
    assert callable(parsed.func), cmd


@pytest.mark.parametrize("cmd", list(RUN), ids=[c[10:60] for c in RUN])
def test_documented_command(cmd, tmp_path):
    args, stdout_file = argv(cmd, placeholders())
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
    args, _ = argv(cmd, placeholders())
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
