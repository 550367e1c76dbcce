"""One exception tree: every error waldecode raises is a ``waldecode.Error``, the CLI maps each
kind to its exit status in one place, and the old import paths still name the same classes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import waldecode
from waldecode import cli, errors


def _library_modules():
    for info in pkgutil.walk_packages(waldecode.__path__, "waldecode."):
        if info.name.startswith("waldecode.testing"):  # the test harness, not the library
            continue
        yield importlib.import_module(info.name)


def test_every_exception_class_of_the_library_is_a_waldecode_error():
    defined = {obj for mod in _library_modules() for _name, obj in inspect.getmembers(mod, inspect.isclass)
               if issubclass(obj, Exception) and obj.__module__.startswith("waldecode")
               and not issubclass(obj, Warning)}
    assert errors.DecodeError in defined and errors.SpillError in defined
    assert [c.__qualname__ for c in defined if not issubclass(c, waldecode.Error)] == []


@pytest.mark.parametrize("module,name", [
    ("waldecode.logical.replay", "DecodeError"), ("waldecode.logical.decode", "DecodeError"),
    ("waldecode.catalog", "CatalogError"), ("waldecode.logical.reorderbuffer", "SpillError"),
    ("waldecode.types", "TypeOutputError"), ("waldecode.output", "OutputPluginError"),
    ("waldecode.cli", "UsageError"),
])
def test_the_old_import_paths_name_the_classes_of_the_tree(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


@pytest.mark.parametrize("exc,status", [
    (errors.CorruptRecordError("bad record", lsn=0x1000028), 1),
    (errors.DecodeError("cannot decode"), 1),
    (errors.SpillError("cannot spill"), 1),
    (errors.TypeOutputError("no text"), 1),
    (errors.UsageError("does not fit"), 2),
    (errors.CatalogError("bad snapshot"), 2),
    (errors.OutputPluginError('option "x" = "1" is unknown'), 2),
])
def test_the_cli_reports_each_error_on_one_line_with_its_exit_status(exc, status, monkeypatch, capsys):
    def fail(args):
        raise exc

    monkeypatch.setattr(cli.inspect, "cmd_inspect", fail)
    assert cli.main(["inspect", "nowhere"]) == status
    assert capsys.readouterr().err == f"waldecode: error: {exc}\n"
