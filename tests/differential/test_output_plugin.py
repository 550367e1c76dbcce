"""The output-plugin contract (``output.base``) against what the server's test_decoding printed.

``Recorder`` is a plugin written against ``waldecode.output.base`` alone: it records what
each callback is given, values as their type's output text, and imports nothing else of
waldecode.  Decoding a PG15 fixture through it must give what the server's test_decoding
slot returned for the same WAL (the fixture's ``test_decoding*.jsonl``): the same
transactions, changes, truncates and messages in the same order, the column values as
text, and the ``lsn``/``xid`` columns of pg_logical_slot_peek_changes, which PostgreSQL
takes from the same ReorderBufferTXN fields and LSNs the contract hands the plugin
(first_lsn at BEGIN, the change's LSN, end_lsn at COMMIT and PREPARE).  The server's
rows are parsed back into the same shape; commit times are checked against
``include-timestamp``'s output.  Under both implementations of the hot path: a plugin without
a native row writer takes the reorder buffer's and the replay's own path under each.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.output import UNCHANGED_TOAST
from waldecode.output.base import OutputPlugin, OutputPluginError
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

UNCHANGED = "<unchanged-toast-datum>"
POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)

FIXTURES = [fx for fx in all_fixtures() if fx.path.parent.name == "pg15-off"]
pytestmark = pytest.mark.skipif(not FIXTURES, reason="no PostgreSQL 15 fixtures")


class Recorder(OutputPlugin):
    """Rows (lsn, xid, event) as pg_logical_slot_peek_changes gives them, the event as data."""

    def __init__(self):
        self.rows: list[tuple] = []
        self.commit_times: dict[int, int] = {}

    def begin(self, txn):
        self.rows.append((txn.first_lsn, txn.xid, ("BEGIN",)))

    def change(self, txn, lsn, catalog, relation, action, new, old):
        ctx = catalog.output_context()

        def texts(values):
            if values is None:
                return None
            return tuple((att.attname, None if v is None else UNCHANGED if v is UNCHANGED_TOAST
                          else ctx.output(att.atttypid, v))
                         for att, v in zip(relation.attributes, values) if not att.attisdropped)

        self.rows.append((lsn, txn.xid, (action, (relation.nspname, relation.relname), texts(new), texts(old))))

    def truncate(self, txn, lsn, catalog, relations, restart_seqs, cascade):
        self.rows.append((lsn, txn.xid, ("TRUNCATE", tuple((r.nspname, r.relname) for r in relations),
                                         restart_seqs, cascade)))

    def message(self, txn, message_lsn, transactional, prefix, content):
        self.rows.append((message_lsn, txn.xid if txn is not None else 0,
                          ("MESSAGE", transactional, prefix, content.decode("utf-8", "surrogateescape"))))

    def commit(self, txn, commit_lsn):
        assert commit_lsn == txn.final_lsn < txn.end_lsn
        self.commit_times[txn.xid] = txn.xact_time
        self.rows.append((txn.end_lsn, txn.xid, ("COMMIT",)))


class TwoPhaseRecorder(Recorder):
    """The same, decoding prepared transactions at PREPARE."""

    def begin_prepare(self, txn):
        assert txn.gid
        self.begin(txn)

    def prepare(self, txn, prepare_lsn):
        assert prepare_lsn == txn.final_lsn < txn.end_lsn
        self.rows.append((txn.end_lsn, txn.xid, ("PREPARE", txn.gid)))

    def commit_prepared(self, txn, commit_lsn):
        assert commit_lsn == txn.final_lsn
        self.rows.append((txn.end_lsn, txn.xid, ("COMMIT PREPARED", txn.gid)))

    def rollback_prepared(self, txn, prepare_end_lsn, prepare_time):
        assert prepare_end_lsn < txn.final_lsn and 0 < prepare_time <= txn.xact_time
        self.rows.append((txn.end_lsn, txn.xid, ("ROLLBACK PREPARED", txn.gid)))


# -- test_decoding's text, read back ---------------------------------------------------------------

def _identifier(s: str, i: int) -> tuple[str, int]:
    """A possibly quoted identifier at s[i:], and where it ends."""
    if s[i] != '"':
        m = re.compile(r'[^.:,\[ ]+').match(s, i)
        return m.group(), m.end()
    out = []
    i += 1
    while True:
        j = s.index('"', i)
        out.append(s[i:j])
        if s.startswith('""', j):
            out.append('"')
            i = j + 2
        else:
            return "".join(out), j + 1


def _value(s: str, i: int) -> tuple[str | None, int]:
    """print_literal's output at s[i:] as the text it quoted (None for null), and where it ends."""
    if s[i] == "'" or s.startswith("B'", i):
        i += 1 if s[i] == "'" else 2
        out = []
        while True:
            j = s.index("'", i)
            out.append(s[i:j])
            if s.startswith("''", j):
                out.append("'")
                i = j + 2
            else:
                return "".join(out), j + 1
    m = re.compile(r"\S+").match(s, i)
    word = m.group()
    return {"null": None, "true": "t", "false": "f", "unchanged-toast-datum": UNCHANGED}.get(word, word), m.end()


def _columns(s: str, i: int) -> tuple[tuple | None, int]:
    """tuple_to_stringinfo's ' name[type]:value' list at s[i:], and where it ends."""
    if s.startswith(" (no-tuple-data)", i):
        return None, i + len(" (no-tuple-data)")
    cols = []
    while i < len(s) and not s.startswith(" new-tuple:", i):
        assert s[i] == " ", s[i:]
        name, i = _identifier(s, i + 1)
        i = s.index("]:", i) + 2  # the type name may hold brackets itself: integer[]
        value, i = _value(s, i)
        cols.append((name, value))
    return tuple(cols), i


def _without_nulls(cols):
    return None if cols is None else tuple((n, v) for n, v in cols if v is not None)


def parse_row(text: str) -> tuple:
    """One test_decoding row (default options) as the event ``Recorder`` records for it."""
    if m := re.fullmatch(r"(BEGIN|COMMIT) \d+( \(at .*\))?", text):
        return (m[1],)
    if m := re.fullmatch(r"(PREPARE TRANSACTION|COMMIT PREPARED|ROLLBACK PREPARED) ('.*'), txid \d+", text):
        return (m[1].replace(" TRANSACTION", ""), _value(m[2], 0)[0])
    if m := re.fullmatch(r"message: transactional: ([01]) prefix: (.*?), sz: \d+ content:(.*)", text, re.S):
        return ("MESSAGE", m[1] == "1", m[2], m[3])
    assert text.startswith("table "), text
    rels, i = [], len("table ")
    while True:
        nsp, i = _identifier(text, i)
        rel, i = _identifier(text, i + 1)
        rels.append((nsp, rel))
        if not text.startswith(", ", i):
            break
        i += 2
    action, _, rest = text[i + 2:].partition(":")
    if action == "TRUNCATE":
        flags = rest.split()
        return ("TRUNCATE", tuple(rels), "restart_seqs" in flags, "cascade" in flags)
    new = old = None
    if action == "INSERT":
        new, i = _columns(rest, 0)
    elif action == "UPDATE" and rest.startswith(" old-key:"):
        old, i = _columns(rest, len(" old-key:"))
        new, i = _columns(rest, i + len(" new-tuple:"))
    elif action == "UPDATE":
        new, i = _columns(rest, 0)
    else:
        old, i = _columns(rest, 0)
    assert i == len(rest), rest[i:]
    return (action, rels[0], new, old)


def server_rows(fx, out_file) -> list[tuple]:
    rows = []
    for line in (fx.path / out_file).read_text(encoding="ascii").splitlines():
        lsn, xid, text = json.loads(line)
        rows.append((parse_lsn(lsn), xid, parse_row(text)))
    return rows


def recorded(rows: list[tuple]) -> list[tuple]:
    """What test_decoding prints of them: old tuples without their NULL columns."""
    return [(lsn, xid, ev[:3] + (_without_nulls(ev[3]),)) if ev[0] in ("INSERT", "UPDATE", "DELETE")
            else (lsn, xid, ev) for lsn, xid, ev in rows]


def decode(fx, out_file, plugin, **kw):
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    meta = fx.meta["decoding_options"][out_file]
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    kw.setdefault("two_phase", slot["two_phase"])
    result = decode_wal([fx.wal_dir], catalog, plugin, start_lsn=parse_lsn(slot["confirmed_flush_lsn"]),
                        end_lsn=fx.end_lsn, **kw)
    assert result.complete and result.not_decoded == []
    return result


# -- the tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fx", FIXTURES, ids=lambda fx: fx.name)
def test_a_plugin_written_to_the_contract_sees_what_test_decoding_prints(fx, impl):
    plugin = Recorder()
    decode(fx, "test_decoding.jsonl", plugin)
    expected = server_rows(fx, "test_decoding.jsonl")
    got = recorded(plugin.rows)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"row {i}"
    assert len(got) == len(expected)
    # The decoder hands the plugin everything through the calls and sets nothing on it
    assert set(vars(plugin)) == {"rows", "commit_times"}


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda fx: fx.name)
def test_the_transaction_carries_the_commit_time_test_decoding_prints(fx, impl):
    plugin = Recorder()
    decode(fx, "test_decoding.jsonl", plugin)
    printed = {}
    for line in (fx.path / "test_decoding-ts.jsonl").read_text(encoding="ascii").splitlines():
        _lsn, xid, text = json.loads(line)
        if m := re.fullmatch(r"COMMIT \d+ \(at (.*)\+00\)", text):
            printed[xid] = datetime.fromisoformat(m[1] + "+00:00")
    assert printed or fx.path.name == "aborted"
    for xid, when in printed.items():
        assert POSTGRES_EPOCH + timedelta(microseconds=plugin.commit_times[xid]) == when, xid


def test_a_two_phase_plugin_sees_prepared_transactions_as_test_decoding_does():
    fx = next(fx for fx in FIXTURES if fx.path.name == "prepared")
    plugin = TwoPhaseRecorder()
    decode(fx, "test_decoding-2pc.jsonl", plugin)
    assert recorded(plugin.rows) == server_rows(fx, "test_decoding-2pc.jsonl")
    assert any(ev[0] == "ROLLBACK PREPARED" for _lsn, _xid, ev in plugin.rows)


def test_a_plugin_without_two_phase_callbacks_sees_prepared_transactions_at_commit_prepared():
    """As StartupDecodingContext: two-phase decoding needs the plugin's callbacks; without any, a
    two-phase slot decodes as one without (test_decoding's output from its other slot)."""
    fx = next(fx for fx in FIXTURES if fx.path.name == "prepared")
    plugin = Recorder()
    decode(fx, "test_decoding.jsonl", plugin, two_phase=True)
    assert recorded(plugin.rows) == server_rows(fx, "test_decoding.jsonl")


def test_a_plugin_with_some_two_phase_callbacks_is_told_which_one_it_lacks():
    class PrepareOnly(Recorder):
        def prepare(self, txn, prepare_lsn):
            pass

    fx = next(fx for fx in FIXTURES if fx.path.name == "prepared")
    with pytest.raises(OutputPluginError, match="^logical replication at prepare time requires a begin_prepare "
                                                "callback$"):
        decode(fx, "test_decoding-2pc.jsonl", PrepareOnly())


def test_startup_rejects_options_the_plugin_does_not_know():
    fx = FIXTURES[0]
    plugin = Recorder()
    with pytest.raises(OutputPluginError, match=re.escape('option "include-xids" = "(null)" is unknown')):
        decode(fx, "test_decoding.jsonl", plugin, plugin_options={"include-xids": None})
    assert plugin.rows == []


def test_spark_refuses_a_plugin_whose_output_spans_the_run():
    """spark decode runs ranges in separate plugin instances: the sql plugin (DDL written once, undo
    reversed over the whole run) is refused before any Spark work, with the command that serves it."""
    from waldecode.errors import UsageError
    from waldecode.output.sql import SqlOutput
    from waldecode.spark.job import decode_spark

    fx = next(f for f in all_fixtures() if f.path.parent.name == "pg15-off")
    with pytest.raises(UsageError, match="spans the whole run .*waldecode decode"):
        decode_spark(None, [fx.wal_dir], Catalog.load(fx.path / "snapshot.json.gz"), SqlOutput, None)
