"""``logical.diagnostics``: warnings grouped by cause, counted, capped, and kept across pickling."""

from __future__ import annotations

import json
import pickle

from waldecode.logical.diagnostics import MAX_CAUSES_LISTED, Diagnostic, Diagnostics, cause_of


def test_causes_are_grouped_counted_and_capped():
    diags = Diagnostics()
    for rel in range(30):
        for i in range(3):
            first = diags.add(Diagnostic.make(f"could not map {rel} at 0/{i + 1:X}", f"could not map {rel}",
                                              lsn=i + 1, xid=700 + i))[1]
            assert first == (i == 0)
    assert diags.total == 90 and len(diags.causes) == 30
    lines = diags.summary()
    assert len(lines) == MAX_CAUSES_LISTED + 1
    assert lines[0] == "3 x could not map 0 (first at LSN 0/1, transaction 700)"
    assert lines[-1] == f"... and {30 - MAX_CAUSES_LISTED} more causes"


def test_notes_come_after_failures_and_escalate():
    diags = Diagnostics()
    note = diags.add(Diagnostic.make("catalog row at 0/10", "catalog row", lacks=False, lsn=16))[0]
    diags.add("a plain warning at 0/20 of transaction 9")
    assert [c.key for c in diags.lacking] == ["a plain warning at X/X of transaction N"]
    assert diags.summary()[1].startswith("note: 1 x catalog row")
    diags.escalate(note, "a change was decoded after it")
    assert not diags.notes and note.lacks
    doc = json.loads(diags.to_json())
    assert doc["complete"] is False and doc["causes"][0]["escalated"] == "a change was decoded after it"


def test_a_diagnostic_is_its_text_and_survives_pickling():
    d = Diagnostic.make("skipped at 0/16B3A0", "skipped", lacks=False, lsn=0x16B3A0, xid=5, concerns={1, 2})
    assert d == "skipped at 0/16B3A0" and f"{d}" == "skipped at 0/16B3A0"
    back = pickle.loads(pickle.dumps(d))
    assert isinstance(back, Diagnostic) and back == d
    assert (back.cause, back.lacks, back.lsn, back.xid, back.concerns) == ("skipped", False, 0x16B3A0, 5,
                                                                            frozenset({1, 2}))
    assert cause_of("x at 1/A0 of transaction 12") == "x at X/X of transaction N"
