"""The driver's sequential pass of the Spark path: what must be decided in LSN order, from a small subset.

Owns the event path's driver pass (docs/spark-decode.md): the control items phase 1 ships (whole
transaction, standby, message and catalog records; markers for everything else, see
``tasks``) are fed in LSN order to the single-process decoder itself, ``decode.LogicalDecoder``,
given two parts of its own: a reorder buffer that counts changes rather than keeping them (they stay
on the executors), and a replayer that records *what* it would replay instead of replaying it.  So
the snapshot builder, the transaction outcomes (subtransactions, aborts, prepares,
crashes, skips, database and origin filters) and the catalog history are the decoder's
own, unchanged.  The pass hands phase 2 a ``Plan``:

* ``events``: every plugin call the single-process run would make, in its order: a
  transaction replay (its plugin ``Transaction``, how it ends, its member xids) or a call
  made outside any replay (COMMIT/ROLLBACK PREPARED, non-transactional messages);
* ``members``: for each xid whose changes are replayed, its event's order, the LSN after
  which the snapshot builder lets its changes be collected, and its output range;
* the catalog timeline (``build_catalog_timeline``): the catalog history as each replayed
  transaction saw it, picklable for broadcast;
* the ``session.DecodeResult`` the CLI reports from, as ``decode`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog
from ..logical.decode import LogicalDecoder
from ..errors import Error
from ..output.base import OutputPlugin, OutputPluginOptions
from ..catalog.choose import check_snapshot
from ..logical.reorderbuffer import Change, ReorderBuffer
from ..logical.session import DecodeResult, start_hint
from ..logical.snapbuild import SNAPBUILD_CONSISTENT, SNAPBUILD_FULL_SNAPSHOT, xid_precedes


# -- the catalog timeline: the one place the Spark path touches the catalog history ----------------


class _NoRedo:
    nodes: dict = {}


class FrozenCatalogHistory:
    """The catalog history after the whole pass, for phase 2: ``view(lsn, xid)`` is a pure function
    of its ``CatalogTimeline`` (each transaction's own catalog changes are kept after its commit), so
    every replayed transaction sees the catalog as it did in the single-process run.  Picklable
    (broadcast to phase 2): the callbacks into the driver's decoder are dropped."""

    def __init__(self, history):
        history.set_warn(None)
        self.history = history

    @property
    def active(self) -> bool:
        return self.history.active

    @property
    def has_changes(self) -> bool:
        return self.history.has_changes

    def view(self, lsn: int, xid: int = 0):
        return self.history.view(lsn, xid)

    def explain_unmapped(self, spc: int, relfilenode: int, lsn: int, xid: int = 0) -> str:
        return self.history.explain_unmapped(spc, relfilenode, lsn, xid)

    # -- as a decoder's history (``LogicalDecoder(catalog_history=...)``: a range of the range path) ------

    #: the catalogs whose records the decoder hands to the history: none, all is known already
    redo = _NoRedo()
    problems: tuple = ()  # reported by the driver, which built the history
    position = 0  # where the decoder stands (set by ``_logical``; nothing depends on it here)

    @property
    def timeline(self):
        return self.history.timeline

    def process(self, rec) -> None:
        """Records change nothing: the timeline holds every catalog change of the WAL read."""

    def idle(self) -> bool:
        return True


class CatalogTimelineBuilder:
    """What the driver's decoder hands on of its catalog history."""

    def __init__(self, history):
        self.history = history

    def tracked_relfilenodes(self) -> frozenset:
        return frozenset(self.history.redo.nodes) if self.history is not None else frozenset()

    def freeze(self):
        return FrozenCatalogHistory(self.history) if self.history is not None else None


def build_catalog_timeline(decoder: "DriverDecoder"):
    """The catalog timeline phase 2 decodes with (None when the catalog history is off)."""
    return decoder.timeline.freeze()


def tracked_relfilenodes(catalog: Catalog) -> frozenset:
    """The catalog relfilenodes whose records the catalog history reads, as the history starts."""
    from ..catalog.history import CatalogHistory

    history = CatalogHistory(catalog)
    return frozenset(history.redo.nodes) if history.active else frozenset()


# -- recording the decoder's plugin calls ----------------------------------------------------------


class RecordingPlugin(OutputPlugin):
    """Stands for the real plugin on the driver: options, filters and two-phase support are the
    real plugin's; every other call is recorded as an event (``("call", name, args)``)."""

    def __init__(self, inner: OutputPlugin):
        self.inner = inner
        self.events: list = []
        self.captured = None  # set while a replay's end callback runs

    def startup(self, options, catalog) -> OutputPluginOptions | None:
        return self.inner.startup(options, catalog)

    def supports_two_phase(self) -> bool:  # an instance method here: the inner plugin's class decides
        return type(self.inner).supports_two_phase()

    def filter_prepare(self, xid, gid):
        return self.inner.filter_prepare(xid, gid)

    def filter_by_origin(self, origin_id):
        return self.inner.filter_by_origin(origin_id)

    def _record(self, name, *args):
        if self.captured is not None:
            self.captured.append((name, args))
        else:
            self.events.append(("call", name, args))

    def begin(self, txn):
        self._record("begin", txn)

    def change(self, txn, lsn, catalog, relation, action, new, old):  # never called: nothing is replayed
        raise AssertionError("the driver's decoder replays no change")

    def commit(self, txn, commit_lsn):
        self._record("commit", txn, commit_lsn)

    def prepare(self, txn, prepare_lsn):
        self._record("prepare", txn, prepare_lsn)

    def uncommitted(self, txn):
        self._record("uncommitted", txn)

    def commit_prepared(self, txn, commit_lsn):
        self._record("commit_prepared", txn, commit_lsn)

    def rollback_prepared(self, txn, prepare_end_lsn, prepare_time):
        self._record("rollback_prepared", txn, prepare_end_lsn, prepare_time)

    def message(self, txn, message_lsn, transactional, prefix, content):
        self._record("message", txn, message_lsn, transactional, prefix, content)

    def invalidate(self, messages):
        self._record("invalidate", messages)

    def invalidate_all(self):
        self._record("invalidate_all")

    def shutdown(self):
        pass


class CountingReorderBuffer(ReorderBuffer):
    """The driver's reorder buffer: a change is counted on its transaction (``TXN.nentries``, which the
    replay events and the output ranges' weights read), not kept: the changes stay on the executors."""

    def queue_change(self, xid: int, change: Change) -> None:
        self.count_changes(xid, change.lsn, 1)

    def count_changes(self, xid: int, lsn: int, n: int) -> None:
        """``n`` changes of ``xid`` (phase 1 counted them), its transaction made at ``lsn`` if new."""
        self.txn_by_xid(xid, True, lsn).nentries += n


class RecordingReplayer:
    """Stands for ``replay.Replayer`` on the driver (``LogicalDecoder(replayer=RecordingReplayer)``): records
    the replay (``("replay", txn, prepare, end call, member xids, changes, invalidation changes)``) where the
    single-process decoder would run it.  The invalidation changes (the transaction's own at its command
    boundaries and those distributed into it, ``ReorderBuffer.iter_changes``) are few and go with the
    event: phase 2's blobs hold the row changes only."""

    def __init__(self, decoder: "DriverDecoder"):
        self.decoder = decoder

    def replay(self, txn, changes, end, prepare: bool = False, first_lsn: int | None = None) -> None:
        d = self.decoder
        rb_txn = d.rb.txn_by_xid(txn.xid, False)
        # Each member with the LSN its reorder-buffer entry was made at: changes of an xid queued before
        # (to an entry since dropped, e.g. an aborted subtransaction assigned again later) are not its
        members = [(txn.xid, 0)]
        nchanges = 0
        invals: list = []
        if rb_txn is not None:
            members = [(rb_txn.xid, rb_txn.first_lsn)] + [(s.xid, s.first_lsn) for s in rb_txn.subtxns]
            nchanges = rb_txn.total_changes
            invals = sorted((c for p in (rb_txn, *rb_txn.subtxns) for c in p.inval_changes or ()),
                            key=lambda c: c.lsn)
        plugin = d.plugin
        plugin.captured = []
        try:
            end()
        finally:
            end_call, plugin.captured = plugin.captured, None
        d.plugin.events.append(("replay", txn, prepare, end_call[0] if end_call else None, members, nchanges,
                                 invals))


class DriverDecoder(LogicalDecoder):
    """``LogicalDecoder`` fed control items: changes are counted, not queued; replays are recorded."""

    def __init__(self, catalog: Catalog, plugin: OutputPlugin, *, segment_size: int, **kw):
        super().__init__(catalog, RecordingPlugin(plugin), segment_size=segment_size,
                         reorder_buffer=CountingReorderBuffer(segment_size=segment_size),
                         replayer=RecordingReplayer, **kw)
        self.timeline = CatalogTimelineBuilder(self.history)
        sb = self.snapbuild
        self.transitions = [(-1, sb.state, sb.next_phase_at)]

    @property
    def events(self) -> list:
        return self.plugin.events

    def item(self, lsn: int, item) -> None:
        kind = item[0]
        if kind == "r":
            self.process(item[1])
            sb = self.snapbuild
            if (sb.state, sb.next_phase_at) != self.transitions[-1][1:]:
                self.transitions.append((lsn, sb.state, sb.next_phase_at))
        elif kind == "x":
            self.txns.saw(item[1])
            self.rb.process_xid(item[1], lsn)
        elif kind == "c":
            xid, n = item[1], item[2]
            if self.snapbuild.state >= SNAPBUILD_FULL_SNAPSHOT and self._process_change(xid, lsn) and n:
                self.rb.count_changes(xid, lsn, n)
        elif kind == "a":
            self.txns.assign(item[1], item[2], lsn)  # the reorder buffer hears of it from the tracker
        else:
            raise ValueError(f"unknown control item {kind!r}")

    def collect_after(self, xid: int) -> int | None:
        """The LSN after which SnapBuildProcessChange lets ``xid``'s changes be collected (None: never)."""
        for lsn, state, npa in self.transitions:
            if state >= SNAPBUILD_FULL_SNAPSHOT and not (state < SNAPBUILD_CONSISTENT and xid_precedes(xid, npa)):
                return lsn
        return None


# -- the plan ------------------------------------------------------------------------------------


@dataclass
class Plan:
    # per order: ("replay", Transaction, prepare, end call, members, nchanges, invalidation changes) or
    # ("call", name, args)
    events: list
    members: dict  # xid -> (order, collect-after LSN, range)
    range_of: list  # order -> range
    nranges: int
    cutoff: int | None  # no record at or after this LSN was read (where reading stopped)
    timeline: object  # FrozenCatalogHistory or None
    nodes: frozenset  # the catalog relfilenodes phase 1 selected records of
    result: DecodeResult
    error: Error | None = None  # raised by the pass, after what came before it is output
    plugin_options: OutputPluginOptions = field(default_factory=OutputPluginOptions)


def run_driver_pass(items, catalog: Catalog, plugin: OutputPlugin, request, *, start_plan, read_from, segments,
                    nranges: int, nodes: frozenset, on_warning=None) -> Plan:
    """Feed ``items`` ((lsn, item) in LSN order, from phase 1) to a ``DriverDecoder`` as ``decode_wal``
    feeds records to its decoder, as ``request`` (a ``DecodeRequest``) asks, and plan phase 2."""
    check_snapshot(catalog, segments, read_from, request.start_lsn)  # done by the CLI already: a no-op there
    decoder = DriverDecoder(catalog, plugin, two_phase=request.two_phase, segment_size=segments.seg_size,
                            plugin_options=request.plugin_options, start_decoding_at=request.start_lsn or 0,
                            assume_consistent=start_plan is not None and start_plan.assume_consistent,
                            on_warning=on_warning)
    result = DecodeResult(start_plan, read_from, None, request.end_lsn, decoder=decoder)
    error = None
    cutoff = None
    try:
        for lsn, item in items:
            kind = item[0]
            if kind == "stop":
                result.stop = item[1]
                cutoff = lsn
                break
            if kind == "error":
                error = item[1]
                cutoff = lsn
                break
            decoder.item(lsn, item)
            if kind == "r":
                result.last_end_lsn = item[1].end_lsn
    except Error as e:
        error = e
        cutoff = lsn
    # as decode_wal: an error that stopped reading is reported alone
    result.open_transactions = decoder.finish(request.include_uncommitted, hint=start_hint(start_plan, segments),
                                              ended=error is None)
    result.not_decoded = decoder.not_decoded
    result.ended_early = list(decoder.finished_early.values())
    result.warnings = decoder.warnings
    if decoder.snapbuild.state == SNAPBUILD_CONSISTENT:
        result.consistent_lsn = decoder.snapbuild.consistent_lsn
    events = decoder.events
    # Output ranges: consecutive events, balanced by changes
    weights = [1 + (ev[5] if ev[0] == "replay" else 0) for ev in events]
    total = sum(weights) or 1
    nranges = max(1, min(nranges, len(events) or 1))
    range_of = []
    acc = 0
    for ev, w in zip(events, weights):
        # A call (a non-transactional message, a COMMIT/ROLLBACK PREPARED) stays in the range of the event
        # before it: a plugin may print it after what it kept of the last transaction (wal2json's format 1
        # puts a comma before such a message after a transaction of two or more changes)
        if ev[0] == "call" and range_of:
            range_of.append(range_of[-1])
        else:
            range_of.append(min(nranges - 1, acc * nranges // total))
        acc += w
    members = {}
    for order, ev in enumerate(events):
        if ev[0] != "replay":
            continue
        for xid, first_lsn in ev[4]:
            after = decoder.collect_after(xid)
            if after is not None:
                members[xid] = (order, max(after, first_lsn - 1), range_of[order])
    return Plan(events, members, range_of, nranges, cutoff, build_catalog_timeline(decoder),
                decoder.timeline.tracked_relfilenodes(), result, error)
