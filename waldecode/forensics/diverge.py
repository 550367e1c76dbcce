"""What the old primary did after a failover that the new timeline lacks: ``waldecode diverge``.

Owns the forensic workflow after an asynchronous-standby failover, from the WAL to the answer:
the switch point (the new timeline's history file, or one given), a consistent reading start
before it found by itself (``logical.startpoint`` through ``session.decode_wal``: a slot
confirmed up to the switch point), the old timeline decoded past it, and from that

* the transactions the old timeline committed at or after the switch point (``lost``): what the
  promoted standby never received;
* prepared transactions whose fate differs between the timelines, with the statement to run on
  the new primary (a transaction prepared before the fork is prepared on the new timeline too);
* transactions still open when the old primary's WAL ends (the crash);
* catalog changes the old timeline committed after the switch point (``missing_ddl``), from the
  catalog history the decoder builds;
* with the new timeline's WAL (``new_paths``) or a connection to the new primary (``newprimary``),
  the rows changed on both sides.

A transaction whose changes could not all be decoded (a relation file number no relation of the
catalog is stored in: a table rewritten between an old snapshot and the reading start) is marked
so (``DecodedTxn.undecoded``) and named in ``errors`` with what is needed, never reported as
having fewer changes than it had.  Given a directory of snapshots (``catalog.choose.CatalogSource``),
the one for the reading start is chosen as ``decode`` chooses it.

Takes paths and a catalog snapshot (or source); hands a ``Divergence`` to ``report`` (text and JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..catalog.model import Catalog
from ..catalog.pg_catalog import AttributeRelationId, IndexRelationId, RelationRelationId
from ..errors import UsageError, format_lsn
from ..logical.request import DecodeRequest
from ..logical.session import decode_wal, missing_start_message, replica_reading
from ..logical.startpoint import reading_start
from ..xact import TransactionListener, XactEvent
from ..pg.transam import FirstNormalTransactionId, xid_precedes
from ..rmgr import xact as rm_xact
from ..output.quote import quote_literal_cstr
from ..pg.quote import quote_identifier, quote_qualified_identifier
from ..wal.segments import discover, scan
from ..wal.storage import DEFAULT_OPTIONS, InputOptions
from ..wal.xlogrecord import XL_XID_OFFSET, unpack_xl_xid
from .collect import ALL_ROWS, Collector, DecodedTxn
from .timelines import Fork, Timeline, timelines

#: user relation kinds whose definition a report names (ordinary and partitioned tables)
_TABLE_KINDS = ("r", "p")


@dataclass
class Prepared:
    """A prepared transaction whose fate differs between the timelines (or may: see ``new_fate``)."""

    gid: str
    xid: int
    prepare_lsn: int | None  # None when prepared before the WAL read began (so before the fork)
    old_fate: str  # "committed", "rolled back", "prepared" (still, when the old timeline's WAL ends)
    old_lsn: int | None  # of its COMMIT/ROLLBACK PREPARED on the old timeline
    new_fate: str  # "prepared", "committed", "rolled back", "absent" (never prepared there), "unknown"
    action: str | None  # the statement to run on the new primary, if any
    note: str


@dataclass
class DDLChange:
    xid: int
    commit_lsn: int
    kind: str  # "create table", "drop table", "rename table", "add column", "drop column", ...
    relation: str
    statement: str  # what the old timeline did, as SQL (the catalog history's view of it)


@dataclass
class Conflict:
    """A row (or a whole table, key ``ALL_ROWS``) the old timeline changed after the fork and the new
    timeline changed too."""

    table: str
    key: tuple
    old: list  # [(xid, commit LSN, [operations])]
    new: list  # [(xid or None, commit LSN or None, [operations] or what the new primary shows)]


@dataclass
class Divergence:
    old_timeline: int
    new_timeline: int | None
    switch_lsn: int
    switch_source: str
    read_from: int | None
    consistent_lsn: int | None
    old_end_lsn: int | None
    lost: list = field(default_factory=list)  # DecodedTxn, committed on the old timeline after the fork
    prepared: list = field(default_factory=list)  # Prepared
    open_at_crash: list = field(default_factory=list)  # DecodedTxn (commit_lsn 0)
    open_xids: dict = field(default_factory=dict)  # xid -> reorderbuffer.OpenTransaction
    missing_ddl: list = field(default_factory=list)  # DDLChange
    conflicts: list = field(default_factory=list)  # Conflict
    conflicts_from: str | None = None  # "new timeline WAL", "new primary", or None (not checked)
    new_txns: list = field(default_factory=list)  # DecodedTxn of the new timeline after the fork (with WAL)
    xids_reused: list = field(default_factory=list)  # lost xids the new timeline used for other transactions
    next_xid_at_switch: int | None = None  # the first xid the new timeline can have assigned
    errors: list = field(default_factory=list)  # what could not be decoded: the answer is incomplete
    warnings: list = field(default_factory=list)
    plugin: str = "test_decoding"
    with_changes: bool = False
    preamble: list = field(default_factory=list)  # what the plugin printed before any transaction
    catalog_source: str | None = None  # the snapshot decoded with (its file, or the backup it came from)
    catalog_lsn: int | None = None  # where it was taken

    @property
    def complete(self) -> bool:
        return not self.errors


class _XactWatch(TransactionListener):
    """Listens to a decoder's transaction tracker: PREPARE, COMMIT/ROLLBACK PREPARED (of the decoded
    database), and the newest xid before the switch point.  Also the ``observer`` of ``decode_wal``."""

    def __init__(self, switch_lsn: int):
        self.switch_lsn = switch_lsn
        self.database = None
        self.prepares: dict[int, XactEvent] = {}  # xid -> its PREPARE
        self.finished_prepared: list[XactEvent] = []  # COMMIT/ROLLBACK PREPARED at or after the switch point
        self.max_xid_before: int | None = None

    # observer
    def begin(self, read_from, decoder) -> None:
        self.database = decoder.database
        decoder.txns.subscribe(self)

    def after_record(self, rec, decoder) -> None:
        pass

    def framed(self, records: list, start: int) -> None:
        """The newest xid of a record before the switch point, from every record's header: under Cython
        ``after_record`` sees only the records the Python decoder takes, and the others' xids (a transaction
        whose records before the switch are all row changes) would be missed."""
        newest = self.max_xid_before
        switch = self.switch_lsn
        for lsn, _end, rec in records:
            if lsn >= switch:
                break
            if lsn < start:
                continue
            xid = unpack_xl_xid(rec, XL_XID_OFFSET)[0]
            if xid and (newest is None or xid_precedes(newest, xid)):
                newest = xid
        self.max_xid_before = newest

    def finish(self, end, decoder) -> None:
        pass

    # tracker listener
    def txn_prepared(self, ev: XactEvent) -> None:
        if ev.dbId == self.database:
            self.prepares[ev.xid] = ev

    def txn_committed(self, ev: XactEvent) -> None:
        if ev.info == rm_xact.XLOG_XACT_COMMIT_PREPARED:
            self._finished(ev)

    def txn_aborted(self, ev: XactEvent) -> None:
        if ev.info == rm_xact.XLOG_XACT_ABORT_PREPARED:
            self._finished(ev)

    def _finished(self, ev: XactEvent) -> None:
        if ev.lsn >= self.switch_lsn:
            if ev.dbId == self.database or ev.xid in self.prepares:
                self.finished_prepared.append(ev)
        else:  # resolved before the fork: the same on both timelines
            self.prepares.pop(ev.xid, None)


def _add_fork(tls: list, tli: int, history: tuple, whose: str) -> None:
    """Join the fork a history file (read elsewhere than the input) tells to the timelines of the input."""
    if not history:
        return
    parent, switch = history[-1]
    tl = next((t for t in tls if t.tli == parent), None)
    if tl is None:
        tl = Timeline(parent, [], history[:-1])
        tls.append(tl)
    tl.forks.append(Fork(parent, tli, switch, f"{whose} {tli:08X}.history"))


def find_fork(tls, switch_lsn: int | None, old_timeline: int | None, old_tlis) -> tuple[int, int | None, int, str]:
    """(old timeline, new timeline or None, switch LSN, where the switch point comes from)."""
    forks: list[Fork] = [f for tl in tls for f in tl.forks]
    if old_timeline is not None:
        forks = [f for f in forks if f.parent == old_timeline]
    if switch_lsn is not None:
        match = [f for f in forks if f.switch_lsn == switch_lsn]
        fork = match[-1] if match else None
        old = old_timeline if old_timeline is not None else (fork.parent if fork else max(old_tlis))
        return old, fork.child if fork else None, switch_lsn, "--switch-lsn"
    if not forks:
        which = f" of timeline {old_timeline}" if old_timeline is not None else ""
        raise UsageError(f"no timeline history file{which} among the input (TTTTTTTT.history, in the new "
                         "primary's pg_wal or the archive): give the switch point with --switch-lsn")
    fork = max(forks, key=lambda f: (f.child, f.switch_lsn))
    return fork.parent, fork.child, fork.switch_lsn, fork.source or f"history file {fork.child:08X}.history"


def diverge(old_paths, catalog, *, new_paths=(), newprimary=None, switch_lsn: int | None = None,
            old_timeline: int | None = None, plugin: str = "test_decoding", request: DecodeRequest | None = None,
            with_changes: bool = False, warn=None, inputs: InputOptions = DEFAULT_OPTIONS, note=None,
            fit=None) -> Divergence:
    """Decode the old timeline past the switch point (and the new one, when its WAL is given) and
    compare.  ``request`` (a ``DecodeRequest``): the plugin's options and the spilling; its start is the
    switch point, its timelines the old and the new one found here.  ``catalog`` is a ``Catalog``, or a ``catalog.choose.CatalogSource`` (a directory of
    snapshots, a backup repository) from which the one for the old timeline's reading start is
    chosen (``note(line)`` hears which; ``fit(catalog)`` gives what is used of it).  ``newprimary`` is
    a ``newprimary.NewPrimary`` (read-only queries), or None; ``inputs`` what the command line says
    of the WAL input (a pgBackRest stanza, an object store's endpoint)."""
    warnings: list[str] = []

    def say(message: str) -> None:  # into the report, and to the caller as it happens
        warnings.append(message)
        if warn is not None:
            warn(message)

    found_old = scan(old_paths, inputs)
    found_all = scan(list(old_paths) + list(new_paths), inputs) if new_paths else found_old
    tls = timelines(None, found_all)
    if newprimary is not None and switch_lsn is None and not any(tl.forks for tl in tls):
        _add_fork(tls, newprimary.timeline, newprimary.history(), "the new primary's")
    old_tli, new_tli, switch, source = find_fork(tls, switch_lsn, old_timeline, found_old.by_tli)
    if old_tli not in found_old.by_tli:
        raise UsageError(f"the old timeline is {old_tli} ({source}), but the --old input holds no segment of it "
                         f"(it holds timeline(s) {', '.join(map(str, sorted(found_old.by_tli)))})")
    if newprimary is not None:
        new_tli = new_tli or newprimary.timeline
    segments = discover(old_paths, old_tli, inputs)
    # a slot confirmed up to the switch point, on each timeline; what was open on the old one at its end too
    request = replace(request or DecodeRequest(), start_lsn=switch, restart_lsn=None, end_lsn=None, timeline=None)
    old_tl = next((tl for tl in tls if tl.tli == old_tli), None)

    start_plan = replica_start = None
    if not isinstance(catalog, Catalog):
        # a directory of snapshots: the latest at or before the reading start, as decode chooses; below
        # wal_level=logical reading begins at a checkpoint's redo point, which may be before the slot's start
        start_plan, replica_start = replica_reading(segments, reading_start(segments, switch, None), switch, None)
        start = start_plan[1] if start_plan[1] is not None else segments.first_segno * segments.seg_size
        catalog = catalog.for_start(start, say=note)
        if fit is not None:
            catalog = fit(catalog)

    # The old timeline, as a slot confirmed up to the switch point decodes it, and what was open at its end
    watch = _XactWatch(switch)
    collector = Collector(old_tli, plugin, keep_changes=with_changes)

    def old_warning(message: str) -> None:
        collector.skipped(message)  # a change of the transaction being replayed skipped: kept with it
        say(message)

    result = decode_wal(segments, catalog, collector, replace(request, include_uncommitted=True),
                        on_warning=old_warning, observer=watch, start_plan=start_plan, replica_start=replica_start)
    d = Divergence(old_tli, new_tli, switch, source, result.read_from, result.consistent_lsn,
                   result.last_end_lsn if result.last_end_lsn is not None else (old_tl.end_lsn if old_tl else None),
                   plugin=plugin, with_changes=with_changes, catalog_source=catalog.source or None,
                   catalog_lsn=catalog.lsn or None)
    d.warnings = warnings  # the decoder's warnings among them (on_warning)
    for nd in result.not_decoded:
        d.errors.append(nd.describe())
    d.lost = [t for t in collector.txns if t.commit_lsn >= switch]
    # the transactions whose skipped changes are named; any other warning still leaves the report short
    incomplete = [t for t in d.lost + collector.open if t.undecoded]
    named = sum(len(t.undecoded) for t in collector.txns + collector.open)
    if incomplete:
        d.errors.append(undecoded_message(incomplete, catalog, result.read_from))
    # as decode: never let a report that lacks something pass as complete (a note lacks nothing:
    # logical.diagnostics; a plain message counts as lacking)
    lacking = sum(1 for m in result.warnings if getattr(m, "lacks", True))
    if lacking > named:
        d.errors.append(f"{lacking - named} warning(s) decoding timeline {old_tli}: the report lacks what they name")
    if result.not_decoded and result.plan is not None and not result.plan.reaches:
        d.errors.append(missing_start_message(result.plan, segments.name(segments.first_segno)))
    d.preamble = collector.preamble
    d.open_xids = {t.xid: t for t in result.open_transactions}
    # prepared ones are not lost at a crash: they are reported with the prepared transactions
    d.open_at_crash = [t for t in collector.open if t.xid not in d.open_xids or not d.open_xids[t.xid].prepared]
    # open transactions with no change to show (nothing decodable) are still open at the crash
    shown = {t.xid for t in collector.open}
    for ot in result.open_transactions:
        if ot.xid not in shown and not ot.prepared:
            d.open_at_crash.append(DecodedTxn(old_tli, ot.xid, ot.first_lsn, 0, 0, 0, ot.gid or None))
    d.open_at_crash.sort(key=lambda t: t.first_lsn)
    if watch.max_xid_before is not None:
        nxt = (watch.max_xid_before + 1) & 0xFFFFFFFF
        d.next_xid_at_switch = nxt if nxt >= FirstNormalTransactionId else FirstNormalTransactionId
    d.missing_ddl = missing_ddl(result.decoder.history, switch, {t.commit_lsn: t.xid for t in d.lost})

    # The new timeline: from its WAL when given, else from the new primary
    new_watch = None
    if not new_paths and new_tli is not None and new_tli in found_old.by_tli:
        new_paths = old_paths  # an archive holding both timelines: the new one's WAL is there too
    if new_paths:
        if new_tli is None:
            raise UsageError("--new is given but no history file names the new timeline: put the new primary's "
                             "TTTTTTTT.history among the input")
        new_segments = discover(list(dict.fromkeys(list(new_paths) + list(old_paths))), new_tli, inputs)
        new_watch = _XactWatch(switch)
        new_collector = Collector(new_tli, plugin, keep_changes=False)
        new_result = decode_wal(new_segments, catalog, new_collector, replace(request, include_uncommitted=False),
                                on_warning=say, observer=new_watch)
        for nd in new_result.not_decoded:
            d.errors.append(f"new timeline {new_tli}: {nd.describe()}")
        new_lacking = sum(1 for m in new_result.warnings if getattr(m, "lacks", True))
        if new_lacking:
            d.errors.append(f"{new_lacking} warning(s) decoding timeline {new_tli}: the conflicts found lack what "
                            "they name")
        d.new_txns = [t for t in new_collector.txns if t.commit_lsn >= switch]
        d.conflicts = conflicts_between(d.lost, d.new_txns)
        d.conflicts_from = f"timeline {new_tli} WAL"
        new_xids = {t.xid for t in d.new_txns}
        d.xids_reused = sorted(t.xid for t in d.lost if t.xid in new_xids)
    elif newprimary is not None:
        if d.next_xid_at_switch is None:
            say("no xid was assigned in the WAL read before the switch point: the new primary's rows cannot be "
                "told apart by xmin, conflicts are not checked")
        else:
            d.conflicts = newprimary.conflicts(d.lost, d.next_xid_at_switch)
            d.conflicts_from = "new primary " + newprimary.where
    d.prepared = prepared_fates(watch, switch, result.open_transactions, new_watch, newprimary)
    return d


#: transactions named one by one in the error about undecoded changes; the rest are counted
_UNDECODED_LISTED = 10


def undecoded_message(txns: list[DecodedTxn], catalog, read_from: int | None) -> str:
    """The error for transactions whose changes could not all be decoded: which, where, and what is needed."""
    parts = []
    for t in txns[:_UNDECODED_LISTED]:
        files = list(dict.fromkeys(u.filenumber for u in t.undecoded))
        parts.append(f"xid {t.xid}: {len(t.undecoded)} change(s) of relation file {', '.join(files)} from "
                     f"{t.undecoded[0].lsn}")
    more = f"; and {len(txns) - _UNDECODED_LISTED} more" if len(txns) > _UNDECODED_LISTED else ""
    text = (f"the changes of {len(txns)} transaction(s) could not all be decoded ({'; '.join(parts)}{more}), "
            "marked incomplete in the report")
    reasons = [u.reason for t in txns for u in t.undecoded]
    # the catalog history's word for a file no relation it knows of is stored in (CatalogHistory.explain_unmapped)
    if any("neither the catalog snapshot" in r or "not in the catalog snapshot" in r for r in reasons):
        source = f" {catalog.source}" if catalog.source else ""
        start = f" {format_lsn(read_from)}" if read_from is not None else ""
        text += (f": no relation of the catalog snapshot{source} (taken at {format_lsn(catalog.lsn)}) nor of the "
                 f"catalog changes decoded from the reading start{start} is stored there, a table rewritten "
                 "(VACUUM FULL, CLUSTER, ALTER TABLE ... TYPE, TRUNCATE) or created after the snapshot and before "
                 f"the reading start; give a snapshot taken after the rewrite, at or before the reading start{start} "
                 "(--catalog DIR chooses the latest at or before it)")
    else:
        text += f": {reasons[0]}"
    return text


def prepared_fates(watch: _XactWatch, switch: int, open_txns, new_watch, newprimary) -> list[Prepared]:
    """Prepared transactions of the old timeline whose fate after the switch point differs from the new
    timeline's.  A transaction prepared before the fork is prepared on the new timeline too (the
    standby replayed its PREPARE), until someone there commits or rolls it back."""
    on_new = newprimary.prepared_gids() if newprimary is not None else None

    def new_fate(xid: int, gid: str) -> str:
        if new_watch is not None:
            for ev in new_watch.finished_prepared:
                if ev.gid == gid or (not ev.gid and ev.xid == xid):
                    return "committed" if ev.info == rm_xact.XLOG_XACT_COMMIT_PREPARED else "rolled back"
            if on_new is None:
                return "prepared"
        if on_new is not None:
            return "prepared" if gid in on_new else "committed or rolled back"
        return "prepared"

    out = []
    for ev in watch.finished_prepared:
        prep = watch.prepares.get(ev.xid)
        committed = ev.info == rm_xact.XLOG_XACT_COMMIT_PREPARED
        fate = "committed" if committed else "rolled back"
        gid = ev.gid or (prep.gid if prep else "")
        if prep is not None and prep.lsn >= switch:
            out.append(Prepared(gid, ev.xid, prep.lsn, fate, ev.lsn, "absent", None,
                                f"prepared and {fate} on timeline after the fork: the new timeline never saw it"
                                + (" (its changes are among the lost transactions)" if committed else "")))
            continue
        nf = new_fate(ev.xid, gid)
        word = "COMMIT" if committed else "ROLLBACK"
        action = f"{word} PREPARED {quote_literal_cstr(gid)}" if nf == "prepared" and gid else None
        note = (f"prepared before the fork; the old primary {'committed' if committed else 'rolled back'} it at "
                f"{format_lsn(ev.lsn)}, after the fork")
        if nf == "prepared":
            note += ("; it is still prepared on the new timeline (holding its locks, and the xmin horizon: "
                     "it blocks creating a logical slot there)")
        elif nf == fate:
            note += f"; the new timeline {nf} it too"
            continue  # the same fate on both sides
        else:
            note += f"; the new timeline {nf} it"
        out.append(Prepared(gid, ev.xid, prep.lsn if prep else None, fate, ev.lsn, nf, action, note))
    for ot in open_txns:
        if not ot.prepared:
            continue
        prep = watch.prepares.get(ot.xid)
        if prep is not None and prep.lsn >= switch:
            out.append(Prepared(ot.gid, ot.xid, prep.lsn, "prepared", None, "absent", None,
                                "prepared on the old timeline after the fork and never committed there: the new "
                                "timeline never saw it (it is still prepared on the old primary)"))
            continue
        nf = new_fate(ot.xid, ot.gid)
        if nf != "prepared":
            out.append(Prepared(ot.gid, ot.xid, prep.lsn if prep else None, "prepared", None, nf, None,
                                f"prepared before the fork, still prepared when the old timeline ends; the new "
                                f"timeline {nf} it"))
    return out


def conflicts_between(lost: list[DecodedTxn], new: list[DecodedTxn]) -> list[Conflict]:
    """Rows both sides changed after the fork: same table and key (a TRUNCATE meets every row)."""
    new_by_key: dict = {}
    new_tables: dict = {}
    for t in new:
        for (table, key), ops in t.keys.items():
            new_by_key.setdefault((table, key), []).append((t.xid, t.commit_lsn, ops))
            new_tables.setdefault(table, []).append((t.xid, t.commit_lsn, ops, key))
    out: dict = {}
    for t in lost:
        for (table, key), ops in t.keys.items():
            if key == ALL_ROWS:
                hits = [(x, lsn, o) for x, lsn, o, _k in new_tables.get(table, ())]
            else:
                hits = list(new_by_key.get((table, key), ()))
                hits += [(x, lsn, o) for x, lsn, o, k in new_tables.get(table, ()) if k == ALL_ROWS]
            if hits:
                c = out.get((table, key))
                if c is None:
                    c = out[(table, key)] = Conflict(table, key, [], [])
                c.old.append((t.xid, t.commit_lsn, ops))
                for h in hits:
                    if h not in c.new:
                        c.new.append(h)
    return list(out.values())


def missing_ddl(history, switch: int, xid_by_commit: dict) -> list[DDLChange]:
    """The table definitions the old timeline changed in transactions committed at or after ``switch``:
    each such commit's catalog state compared with the one before it."""
    if history is None:
        return []
    tl = history.timeline
    out = []
    for lsn, events in zip(tl.commit_lsns, tl.commits):
        if lsn < switch:
            continue
        before, after = tl.view(lsn), tl.view(lsn + 1)
        xid = xid_by_commit.get(lsn, 0)
        out += _relation_changes(before, after, _relations_of(events), xid, lsn)
    return out


def _relations_of(events) -> list[int]:
    """The relations a commit's catalog rows are about (pg_class rows, their columns and indexes)."""
    oids = set()
    for ev in events:
        if ev.cat == RelationRelationId:
            oids.add(ev.row["oid"])
        elif ev.cat == AttributeRelationId:
            oids.add(ev.row["attrelid"])
        elif ev.cat == IndexRelationId:
            oids.add(ev.row["indrelid"])
    return sorted(oids)


def _user_table(rel) -> bool:
    return (rel is not None and rel.relkind in _TABLE_KINDS and not rel.is_catalog and rel.relpersistence != "t"
            and rel.nspname not in ("pg_catalog", "pg_toast", "information_schema") and not rel.relrewrite)


def _columns(rel) -> str:
    return ", ".join(f"{_ident(a.attname)} {a.type_name}" for a in rel.attributes if not a.attisdropped)


def _ident(name: str) -> str:
    return quote_identifier(name)


def _qualified(rel) -> str:
    return quote_qualified_identifier(rel.nspname, rel.relname)


def _relation_changes(before, after, oids, xid: int, lsn: int) -> list[DDLChange]:
    out = []
    for oid in oids:
        old, new = before.relation(oid), after.relation(oid)
        if old is None and new is None:
            continue
        if not _user_table(old) and not _user_table(new):
            continue
        if old is None or not _user_table(old):
            out.append(DDLChange(xid, lsn, "create table", _qualified(new),
                                 f"CREATE TABLE {_qualified(new)} ({_columns(new)})"))
            continue
        if new is None or not _user_table(new):
            out.append(DDLChange(xid, lsn, "drop table", _qualified(old), f"DROP TABLE {_qualified(old)}"))
            continue
        name = _qualified(old)
        if (old.nspname, old.relname) != (new.nspname, new.relname):
            if old.nspname != new.nspname:
                out.append(DDLChange(xid, lsn, "set schema", name, f"ALTER TABLE {name} SET SCHEMA "
                                                                    f"{_ident(new.nspname)}"))
            if old.relname != new.relname:
                out.append(DDLChange(xid, lsn, "rename table", name,
                                     f"ALTER TABLE {_qualified(new)} RENAME TO {_ident(new.relname)}"
                                     if old.nspname != new.nspname else
                                     f"ALTER TABLE {name} RENAME TO {_ident(new.relname)}"))
            name = _qualified(new)
        olda = {a.attnum: a for a in old.attributes}
        for a in new.attributes:
            o = olda.get(a.attnum)
            if o is None or (o.attisdropped and not a.attisdropped):
                if not a.attisdropped:
                    out.append(DDLChange(xid, lsn, "add column", name,
                                         f"ALTER TABLE {name} ADD COLUMN {_ident(a.attname)} {a.type_name}"))
            elif a.attisdropped and not o.attisdropped:
                out.append(DDLChange(xid, lsn, "drop column", name, f"ALTER TABLE {name} DROP COLUMN "
                                                                    f"{_ident(o.attname)}"))
            elif not a.attisdropped:
                if o.attname != a.attname:
                    out.append(DDLChange(xid, lsn, "rename column", name,
                                         f"ALTER TABLE {name} RENAME COLUMN {_ident(o.attname)} TO "
                                         f"{_ident(a.attname)}"))
                if (o.atttypid, o.atttypmod) != (a.atttypid, a.atttypmod):
                    out.append(DDLChange(xid, lsn, "alter column type", name,
                                         f"ALTER TABLE {name} ALTER COLUMN {_ident(a.attname)} TYPE {a.type_name}"))
                if o.attnotnull != a.attnotnull:
                    out.append(DDLChange(xid, lsn, "alter column", name,
                                         f"ALTER TABLE {name} ALTER COLUMN {_ident(a.attname)} "
                                         f"{'SET' if a.attnotnull else 'DROP'} NOT NULL"))
        if old.relreplident != new.relreplident:
            word = {"d": "DEFAULT", "f": "FULL", "n": "NOTHING", "i": "USING INDEX"}.get(new.relreplident, "?")
            out.append(DDLChange(xid, lsn, "replica identity", name, f"ALTER TABLE {name} REPLICA IDENTITY {word}"))
    return out
