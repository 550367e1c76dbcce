"""The command line builds only the arguments of the command it runs (start-up time of inspect/decode)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from waldecode import cli

_PROBE = """
import sys
from waldecode import cli
cli._build_parser({command!r})
heavy = sorted(m for m in ("waldecode.cli.bench", "waldecode.cli.spark", "waldecode.cli.forensics",
                           "waldecode.cli.pgoutput_dump") if m in sys.modules)
print(",".join(heavy))
"""


@pytest.mark.parametrize("command", ["inspect", "decode", "catalog"])
def test_the_own_commands_import_no_other_commands_arguments(command):
    out = subprocess.run([sys.executable, "-c", _PROBE.format(command=command)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_a_group_command_imports_only_its_group():
    out = subprocess.run([sys.executable, "-c", _PROBE.format(command="diverge")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "waldecode.cli.forensics"


@pytest.mark.parametrize("argv", [["--help"], ["nope"], []])
def test_help_and_unknown_commands_list_every_command(argv, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    text = capsys.readouterr()
    shown = text.out + text.err
    for command in (*cli._OWN_COMMANDS, *cli._COMMAND_GROUPS):
        assert command in shown


@pytest.mark.parametrize("argv,command", [(["--traceback", "inspect", "x"], "inspect"), (["spark", "decode"], "spark"),
                                          (["-h"], None)])
def test_the_command_is_the_first_argument_not_an_option(argv, command):
    assert cli._command_of(argv) == command
