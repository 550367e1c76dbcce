"""``./dev``'s set-up stamp: a rerun with nothing changed does no pip work and compiles nothing.

The dev script's functions are called (the script sourced) in a copy of the checkout's build inputs, with
a stand-in venv whose ``python`` logs pip and ``setup.py`` calls instead of running them and runs
everything else (the extensions' import check) with the interpreter running these tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = ("_native", "_waldump", "_typeout", "_logical")
TEST_EXTRAS = "test,bench,spark"

pytestmark = pytest.mark.skipif(
    not all(list((ROOT / "waldecode").glob(f"{name}.*.so")) for name in EXTENSIONS),
    reason="the Cython extensions are not built in the checkout")

_PYTHON = """#!/bin/bash
# pip and setup.py logged, not run; everything else by the real interpreter
if [ "$1" = setup.py ] || { [ "$1" = -m ] && [ "$2" = pip ]; }; then
    echo "WALDECODE_NO_NATIVE=${WALDECODE_NO_NATIVE:-} $*" >>"$DEV_LOG"
    exit 0
fi
exec @PYTHON@ "$@"
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """What the set-up is built from, copied once: the packaging files, native/ and the package."""
    src = tmp_path_factory.mktemp("pristine")
    for name in ("dev", "pyproject.toml", "setup.py"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "native", src / "native", ignore=shutil.ignore_patterns("*.c", "*.html", "pgconsts.pxd",
                                                                           "pgconsts.h"))
    shutil.copytree(ROOT / "waldecode", src / "waldecode", ignore=shutil.ignore_patterns("__pycache__"))
    return src


@pytest.fixture
def checkout(pristine, tmp_path) -> Path:
    copy = tmp_path / "checkout"
    shutil.copytree(pristine, copy, symlinks=True)
    python = copy / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(_PYTHON.replace("@PYTHON@", sys.executable))
    python.chmod(0o755)
    return copy


def dev(checkout: Path, script: str) -> str:
    """Runs ``script`` with the dev script's functions; its output"""
    env = {**os.environ, "WALDECODE_VENV": "venv", "DEV_LOG": str(checkout / "calls.log")}
    env.pop("WALDECODE_NO_NATIVE", None)
    done = subprocess.run(["bash", "-c", f"source ./dev && {script}"], cwd=checkout, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def current(checkout: Path, extras: str = "") -> bool:
    return dev(checkout, f'if setup_current "{extras}"; then echo current; else echo stale; fi') == "current"


def calls(checkout: Path) -> list[str]:
    log = checkout / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# changed\n")


def test_no_stamp_is_not_current(checkout):
    assert not current(checkout)


def test_a_finished_set_up_is_current_for_its_extras_and_fewer(checkout):
    dev(checkout, 'write_stamp ""')
    assert current(checkout)
    assert not current(checkout, TEST_EXTRAS)
    dev(checkout, f'write_stamp "{TEST_EXTRAS}"')
    assert current(checkout, TEST_EXTRAS)
    assert current(checkout, "")  # demo after test: nothing to do, nothing removed
    assert current(checkout, "spark")


@pytest.mark.parametrize("path, changes", [
    ("native/_native.pyx", True),
    ("native/pgdefs.pxd", True),
    ("native/wd_shortest.h", True),
    ("native/typeout/float.pxi", True),  # a section _typeout.pyx includes
    ("native/waldecode/_typeout.pxd", True),  # a .pxd below native/ (what _logical cimports of _typeout)
    ("native/pgconsts.py", True),
    ("waldecode/rmgr/xlog.py", True),  # its constants are declared for Cython (pgconsts.SOURCES)
    ("pyproject.toml", True),
    ("setup.py", True),
    ("waldecode/cli.py", False),  # the editable install runs the checkout's modules
    ("README.md", False),
])
def test_what_makes_the_set_up_stale(checkout, path, changes):
    dev(checkout, f'write_stamp "{TEST_EXTRAS}"')
    target = checkout / path
    if target.exists():
        edit(target)
    else:
        target.write_text("new\n")
    assert current(checkout, TEST_EXTRAS) is not changes


def test_timestamps_alone_change_nothing(checkout):
    dev(checkout, 'write_stamp ""')
    for path in (checkout / "native").iterdir():
        os.utime(path)
    assert current(checkout)


def test_an_extension_that_does_not_import_is_not_current(checkout):
    dev(checkout, 'write_stamp ""')
    # a cut file, not a missing one: the import would find the checkout's own through its editable install
    next((checkout / "waldecode").glob("_typeout.*.so")).write_bytes(b"\x7fELF")
    assert not current(checkout)


@pytest.mark.slow
def test_what_setup_python_runs(checkout):
    def setup(extras=""):
        dev(checkout, f'setup_python "{extras}"')
        assert current(checkout, extras)
        return calls(checkout)

    # no stamp: the build requirements, the package without its extensions, every extension compiled
    first = setup()
    assert [c.split()[:4] for c in first[:2]] == [["WALDECODE_NO_NATIVE=", "-m", "pip", "install"],
                                                  ["WALDECODE_NO_NATIVE=1", "-m", "pip", "install"]]
    assert first[1].endswith(" -e .")
    assert first[2].startswith("WALDECODE_NO_NATIVE= setup.py -q build_ext --inplace") and "--force" in first[2]
    assert len(first) == 3
    assert setup() == []  # rerun: nothing
    edit(checkout / "native" / "_logical.pyx")
    rebuilt = setup()  # only build_ext, which compiles what is newer than its build
    assert len(rebuilt) == 1 and "build_ext" in rebuilt[0] and "--force" not in rebuilt[0]
    edit(checkout / "pyproject.toml")
    assert [c.split()[1:3] for c in setup()] == [["-m", "pip"], ["-m", "pip"]]
    edit(checkout / "setup.py")
    again = setup()
    assert len(again) == 3 and "--force" in again[2]
    with_extras = setup(TEST_EXTRAS)
    assert len(with_extras) == 2 and with_extras[1].endswith(f" -e .[{TEST_EXTRAS}]")
    assert setup("") == []
