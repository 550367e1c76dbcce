"""The Python examples of README.md and docs/*.md, run in the Spark lane's session on a bundled fixture.

Each ```python block runs as a user would paste it after making ``spark``, with the documents'
placeholder paths and LSNs replaced by the fixture's (``tests/differential/test_docs_commands.py``
does the same for the shell commands).  The ``pgwal`` example's DataFrame, in the order it shows,
and the library example's ``lines`` (docs/api.md) must hold exactly the lines ``waldecode decode``
prints for the same WAL, catalog and start.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIXTURE = ROOT / "fixtures" / "pg15-off" / "interleaved"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _python_blocks() -> list[tuple[str, str]]:
    return [(doc.name, m.group(1)) for doc in DOCUMENTS for m in _BLOCK.finditer(doc.read_text(encoding="utf-8"))]


def _confirmed_lsn() -> str:
    meta = json.loads((FIXTURE / "meta.json").read_text())
    return next(s for s in meta["slots"] if s["name"] == "wd_test_decoding")["confirmed_flush_lsn"]


def _substituted(code: str) -> str:
    for placeholder, value in {'"app-catalog.json"': repr(str(FIXTURE / "snapshot.json.gz")),
                               '"0/1D00028"': repr(_confirmed_lsn()),
                               '"/archive/wal/"': repr(str(FIXTURE / "wal"))}.items():
        code = code.replace(placeholder, value)
    return code


def test_python_examples(spark):
    blocks = _python_blocks()
    assert any("format(\"pgwal\")" in code for _, code in blocks)
    decoded = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "-q", "--catalog",
                              str(FIXTURE / "snapshot.json.gz"), "--start-lsn", _confirmed_lsn(), str(FIXTURE / "wal")],
                             capture_output=True, check=True, timeout=120).stdout
    expected = decoded.split(b"\n")[:-1]
    assert expected
    for doc, code in blocks:
        namespace = {"spark": spark}
        exec(compile(_substituted(code), f"<{doc}>", "exec"), namespace)
        if "df" in namespace:
            lines = [bytes(r.line) for r in namespace["df"].orderBy("position", "seq").select("line").collect()]
            assert lines == expected, doc
        if isinstance(namespace.get("lines"), list):  # docs/api.md: decode_wal into a list of lines
            assert [line.encode("utf-8", "surrogateescape") for line in namespace["lines"]] == expected, doc
