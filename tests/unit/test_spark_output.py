"""``spark decode``'s output taken back for the event path: a FILE removed, standard output met again."""

from __future__ import annotations

import io
import sys
import types

import pytest

from waldecode.cli.spark import SparkJobError, _LazyBinaryOutput


def _stdout(monkeypatch) -> io.BytesIO:
    buf = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", types.SimpleNamespace(buffer=buf))
    return buf


def test_standard_output_rewound_writes_only_what_did_not_go_out(monkeypatch, tmp_path):
    buf = _stdout(monkeypatch)
    out = _LazyBinaryOutput(None)
    out.write(b"BEGIN 1\n")
    part = tmp_path / "part"
    part.write_bytes(b"table a\nCOMMIT 1\n")
    out.append_file(str(part))
    out.rewind()  # the event path writes it all again, and more
    out.write(b"BEGIN 1\ntable a\n")
    out.write(b"COMMIT 1\nBEGIN 2\n")
    out.close()
    assert buf.getvalue() == b"BEGIN 1\ntable a\nCOMMIT 1\nBEGIN 2\n"


def test_standard_output_rewound_refuses_another_beginning(monkeypatch):
    _stdout(monkeypatch)
    out = _LazyBinaryOutput(None)
    out.write(b"BEGIN 1\n")
    out.rewind()
    with pytest.raises(SparkJobError, match="differs"):
        out.write(b"BEGIN 2\nCOMMIT 2\n")


def test_a_file_rewound_is_removed(tmp_path):
    path = tmp_path / "out"
    out = _LazyBinaryOutput(str(path))
    out.write(b"BEGIN 1\n")
    out.rewind()
    assert not path.exists()
    out.write(b"BEGIN 1\nCOMMIT 1\n")
    out.close()
    assert path.read_bytes() == b"BEGIN 1\nCOMMIT 1\n"
