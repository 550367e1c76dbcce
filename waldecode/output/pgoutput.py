"""pgoutput, message for message as src/backend/replication/pgoutput/pgoutput.c sends them.

Owns the options (``proto_version``, ``publication_names``, ``binary``, ``messages``,
``streaming``, ``two_phase``, ``origin``: parsed and rejected with the server's own wording,
per major version), the choice of what is sent (the publications of the catalog in force for
each change: FOR ALL TABLES, table lists, FOR TABLES IN SCHEMA, the ``publish`` operations,
column lists, ``publish_via_partition_root``; pgoutput.c's RelationSyncEntry and when it is
rebuilt: after the invalidations logical decoding executes, which the decoder hands to ``invalidate``
where PostgreSQL executes them), and the logical replication protocol's messages
(src/backend/replication/logical/proto.c): Begin, Commit, Origin, Relation, Type, Insert,
Update, Delete, Truncate, Message, and Begin Prepare, Prepare, Commit Prepared, Rollback
Prepared.  Column values are the type's output text, or with ``binary`` its send function
(``types.send``).  Each message is written as ``pg_recvlogical -f`` writes it: its bytes, then
a newline.

Row filters (pg_publication_rel.prqual) are evaluated by ``output.pgoutput_rowfilter``
(``RelationRowFilters``: pgoutput_row_filter_init and pgoutput_row_filter); a filter it cannot
evaluate raises ``RowFilterError``, never a change sent unfiltered.  Streaming of in-progress transactions is not reproduced: ``streaming`` on
(or parallel) is refused.
"""

from __future__ import annotations

import struct

from ..catalog import Relation
from ..catalog.pg_catalog import (
    RELKIND_PARTITIONED_TABLE,
    RELKIND_RELATION,
    RELPERSISTENCE_PERMANENT,
    REPLICA_IDENTITY_FULL,
)
from ..pg.quote import split_identifier_string
from . import UNCHANGED_TOAST, OutputPluginError
from .base import DELETE, INSERT, UPDATE, CatalogView, OutputPlugin, OutputPluginOptions, OutputWriter, Transaction

# src/include/replication/logicalproto.h: LogicalRepMsgType
LOGICAL_REP_MSG_BEGIN = b"B"
LOGICAL_REP_MSG_COMMIT = b"C"
LOGICAL_REP_MSG_ORIGIN = b"O"
LOGICAL_REP_MSG_INSERT = b"I"
LOGICAL_REP_MSG_UPDATE = b"U"
LOGICAL_REP_MSG_DELETE = b"D"
LOGICAL_REP_MSG_TRUNCATE = b"T"
LOGICAL_REP_MSG_RELATION = b"R"
LOGICAL_REP_MSG_TYPE = b"Y"
LOGICAL_REP_MSG_MESSAGE = b"M"
LOGICAL_REP_MSG_BEGIN_PREPARE = b"b"
LOGICAL_REP_MSG_PREPARE = b"P"
LOGICAL_REP_MSG_COMMIT_PREPARED = b"K"
LOGICAL_REP_MSG_ROLLBACK_PREPARED = b"r"

# src/include/replication/logicalproto.h: protocol versions
LOGICALREP_PROTO_MIN_VERSION_NUM = 1
LOGICALREP_PROTO_VERSION_NUM = 1
LOGICALREP_PROTO_STREAM_VERSION_NUM = 2
LOGICALREP_PROTO_TWOPHASE_VERSION_NUM = 3  # 15+
LOGICALREP_PROTO_STREAM_PARALLEL_VERSION_NUM = 4  # 16+

# src/include/replication/logicalproto.h: tuple column kinds
LOGICALREP_COLUMN_NULL = b"n"
LOGICALREP_COLUMN_UNCHANGED = b"u"
LOGICALREP_COLUMN_TEXT = b"t"
LOGICALREP_COLUMN_BINARY = b"b"

# proto.c: flags
LOGICALREP_IS_REPLICA_IDENTITY = 1
TRUNCATE_CASCADE = 1 << 0
TRUNCATE_RESTART_SEQS = 1 << 1
MESSAGE_TRANSACTIONAL = 1 << 0

# src/include/access/transam.h
FirstGenbkiObjectId = 10000
FirstNormalObjectId = 16384

# src/include/catalog/pg_publication.h: pubgencols (18+)
PUBLISH_GENCOLS_NONE = "n"
PUBLISH_GENCOLS_STORED = "s"
# src/include/catalog/pg_attribute.h
ATTRIBUTE_GENERATED_STORED = "s"

# src/include/storage/sinval.h: SharedInvalidationMessage ids below 0 (catcache ids are >= 0)
SHAREDINVALRELCACHE_ID = -2
SizeOfSharedInvalidationMessage = 16
#: syscache ids (src/include/utils/syscache.h SysCacheIdentifier, generated from 17 on) of the caches
#: whose invalidation flushes pgoutput's whole relation cache, per major version: the two caches on
#: each of pg_namespace, pg_publication, pg_publication_namespace, pg_publication_rel (a row change
#: invalidates every cache on its catalog).  Read off pg_waldump's "inval msgs" of real commits.
FLUSH_ALL_CACHE_IDS = {
    15: frozenset((35, 36, 46, 49, 47, 48, 50, 51)),
    16: frozenset((35, 36, 46, 49, 47, 48, 50, 51)),
    18: frozenset((37, 38, 48, 51, 49, 50, 52, 53)),
}
#: of these, the caches on pg_publication (publication_invalidation_cb: the publications are reloaded)
PUBLICATION_CACHE_IDS = {15: frozenset((46, 49)), 16: frozenset((46, 49)), 18: frozenset((48, 51))}

# src/include/catalog/pg_subscription.h
LOGICALREP_ORIGIN_NONE = "none"
LOGICALREP_ORIGIN_ANY = "any"

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_u32 = struct.Struct(">I")
_i64 = struct.Struct(">q")
_u64 = struct.Struct(">Q")


def max_proto_version(major: int) -> int:
    """LOGICALREP_PROTO_MAX_VERSION_NUM of a major version."""
    if major >= 16:
        return LOGICALREP_PROTO_STREAM_PARALLEL_VERSION_NUM
    if major >= 15:
        return LOGICALREP_PROTO_TWOPHASE_VERSION_NUM
    return LOGICALREP_PROTO_STREAM_VERSION_NUM


def _cstring(text: str) -> bytes:
    """pq_sendstring: the text and its NUL."""
    return text.encode("utf-8", "surrogateescape") + b"\x00"


def def_get_boolean(name: str, value: str | None) -> bool:
    """src/backend/commands/define.c defGetBoolean over a String (or absent) argument."""
    if value is None:
        return True
    v = value.lower()
    if v in ("true", "on"):
        return True
    if v in ("false", "off"):
        return False
    raise OutputPluginError(f"{name} requires a Boolean value")


def _def_get_string(name: str, value: str | None) -> str:
    if value is None:
        raise OutputPluginError(f"{name} requires a parameter")
    return value


STREAM_OFF, STREAM_ON, STREAM_PARALLEL = "off", "on", "parallel"


def def_get_streaming_mode(name: str, value: str | None, major: int) -> str:
    """defGetStreamingMode (16+: off, on, parallel); 14 and 15 take a boolean."""
    if major < 16:
        return STREAM_ON if def_get_boolean(name, value) else STREAM_OFF
    if value is None:
        return STREAM_ON
    v = value.lower()
    if v in ("false", "off"):
        return STREAM_OFF
    if v in ("true", "on"):
        return STREAM_ON
    if v == "parallel":
        return STREAM_PARALLEL
    raise OutputPluginError(f'{name} requires a Boolean value or "parallel"')


class PGOutputData:
    """PGOutputData: the parsed options."""

    __slots__ = ("protocol_version", "publication_names", "binary", "messages", "streaming", "two_phase",
                 "publish_no_origin")

    def __init__(self):
        self.protocol_version = 0
        self.publication_names: list[str] | None = None
        self.binary = False
        self.messages = False
        self.streaming = STREAM_OFF
        self.two_phase = False
        self.publish_no_origin = False


def parse_output_parameters(options: dict, major: int) -> PGOutputData:
    """parse_output_parameters, then pgoutput_startup's checks, for server major version ``major``."""
    data = PGOutputData()
    known = {"proto_version", "publication_names", "binary", "messages", "streaming"}
    if major >= 15:
        known.add("two_phase")
    if major >= 16:
        known.add("origin")
    for name, value in options.items():
        if name not in known:
            raise OutputPluginError(f"unrecognized pgoutput option: {name}")
        if name == "proto_version":
            data.protocol_version = _parse_proto_version(_def_get_string(name, value))
        elif name == "publication_names":
            names = split_identifier_string(_def_get_string(name, value), ",")
            if names is None:
                raise OutputPluginError("invalid publication_names syntax")
            data.publication_names = names
        elif name == "binary":
            data.binary = def_get_boolean(name, value)
        elif name == "messages":
            data.messages = def_get_boolean(name, value)
        elif name == "streaming":
            data.streaming = def_get_streaming_mode(name, value, major)
        elif name == "two_phase":
            data.two_phase = def_get_boolean(name, value)
        elif name == "origin":
            origin = _def_get_string(name, value)
            if origin.lower() == LOGICALREP_ORIGIN_NONE:
                data.publish_no_origin = True
            elif origin.lower() == LOGICALREP_ORIGIN_ANY:
                data.publish_no_origin = False
            else:
                raise OutputPluginError(f'unrecognized origin value: "{origin}"')
    # pgoutput_startup
    pv = data.protocol_version
    who = "server only supports" if major >= 16 else "we only support"  # reworded in 16
    if pv > max_proto_version(major):
        raise OutputPluginError(f"client sent proto_version={_as_int(pv)} but {who} protocol "
                                f"{max_proto_version(major)} or lower")
    if pv < LOGICALREP_PROTO_MIN_VERSION_NUM:
        raise OutputPluginError(f"client sent proto_version={_as_int(pv)} but {who} protocol "
                                f"{LOGICALREP_PROTO_MIN_VERSION_NUM} or higher")
    if not data.publication_names:
        raise OutputPluginError("publication_names parameter missing")
    if data.streaming != STREAM_OFF:
        if data.streaming == STREAM_ON and pv < LOGICALREP_PROTO_STREAM_VERSION_NUM:
            raise OutputPluginError(f"requested proto_version={pv} does not support streaming, need "
                                    f"{LOGICALREP_PROTO_STREAM_VERSION_NUM} or higher")
        if data.streaming == STREAM_PARALLEL and pv < LOGICALREP_PROTO_STREAM_PARALLEL_VERSION_NUM:
            raise OutputPluginError(f"requested proto_version={pv} does not support parallel streaming, need "
                                    f"{LOGICALREP_PROTO_STREAM_PARALLEL_VERSION_NUM} or higher")
        # The server streams a transaction once its changes pass logical_decoding_work_mem: what
        # it then sends depends on its memory accounting, which offline decoding does not reproduce
        raise OutputPluginError("pgoutput streaming of in-progress transactions is not supported by waldecode "
                                "(use streaming=off)")
    if data.two_phase and pv < LOGICALREP_PROTO_TWOPHASE_VERSION_NUM:
        raise OutputPluginError(f"requested proto_version={pv} does not support two-phase commit, need "
                                f"{LOGICALREP_PROTO_TWOPHASE_VERSION_NUM} or higher")
    return data


def _parse_proto_version(text: str) -> int:
    """strtoul(text, &endptr, 10) that must end at the string's end, then the uint32 range check."""
    t = text.lstrip(" \t\n\r\f\v")
    sign = t[:1] if t[:1] in ("+", "-") else ""
    digits = t[len(sign):]
    if not text:
        return 0  # no digits: endptr stays at the (empty) string's end
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise OutputPluginError("invalid proto_version")
    parsed = int(digits)
    if parsed > 0xFFFFFFFFFFFFFFFF:
        raise OutputPluginError("invalid proto_version")  # ERANGE
    if sign == "-":
        parsed = (-parsed) & 0xFFFFFFFFFFFFFFFF
    if parsed > 0xFFFFFFFF:
        raise OutputPluginError(f'proto_version "{text}" out of range')
    return parsed


def _as_int(v: int) -> int:
    """A uint32 printed with %d."""
    return v - (1 << 32) if v >= 1 << 31 else v


def is_publishable_relation(rel: Relation) -> bool:
    """src/backend/catalog/pg_publication.c is_publishable_class."""
    return (rel.relkind in (RELKIND_RELATION, RELKIND_PARTITIONED_TABLE) and not rel.is_catalog
            and rel.relpersistence == RELPERSISTENCE_PERMANENT and rel.oid >= FirstNormalObjectId)


class _PublicationIndex:
    """The publication catalogs of one catalog view, indexed as the syscaches pgoutput asks:
    publications by name, a relation's publications (PUBLICATIONRELMAP), a schema's
    (PUBLICATIONNAMESPACEMAP), partition ancestors (pg_inherits)."""

    def __init__(self, view: CatalogView):
        cat = view.catalog
        pubs = getattr(cat, "publications", None)
        if pubs is None:
            raise OutputPluginError("the catalog snapshot carries no publications (it was written by an older "
                                    "waldecode): take a new one with 'waldecode catalog' for pgoutput")
        self.catalog = cat
        self.by_name = {p.pubname: p for p in pubs.values()}
        self.rel_pubs: dict = {}  # prrelid -> {pubid: PublicationRel}
        for pr in cat.publication_rels.values():
            self.rel_pubs.setdefault(pr.prrelid, {})[pr.prpubid] = pr
        self.schema_pubs: dict = {}  # pnnspid -> {pubid}
        for pn in cat.publication_namespaces.values():
            self.schema_pubs.setdefault(pn.pnnspid, set()).add(pn.pnpubid)
        self.inherits = cat.inherits
        self._nsp_oids: dict | None = None

    def namespace_oid(self, nspname: str) -> int | None:
        """get_rel_namespace: the relation's schema OID (relations carry its name)."""
        if self._nsp_oids is None:
            self._nsp_oids = {}
            for oid in {pn.pnnspid for pn in self.catalog.publication_namespaces.values()}:
                name = self.catalog.namespace_name(oid)
                if name is not None:
                    self._nsp_oids[name] = oid
        return self._nsp_oids.get(nspname)

    def schema_publications(self, nspname: str) -> set:
        oid = self.namespace_oid(nspname)
        return self.schema_pubs.get(oid, set()) if oid is not None else set()

    def ancestors(self, relid: int) -> list[int]:
        """get_partition_ancestors: parent first, root last."""
        out = []
        seen = {relid}
        while True:
            parents = self.inherits.get(relid)
            if not parents or parents[0] in seen:
                return out
            relid = parents[0]
            seen.add(relid)
            out.append(relid)

    def top_most_ancestor_in_publication(self, puboid: int, ancestors: list[int], relation) -> tuple:
        """GetTopMostAncestorInPublication: (ancestor OID or 0, its level)."""
        top, level_of_top, level = 0, 0, 0
        for anc in ancestors:
            level += 1
            if puboid in self.rel_pubs.get(anc, {}):
                top, level_of_top = anc, level
            else:
                rel = relation(anc)
                if rel is not None and puboid in self.schema_publications(rel.nspname):
                    top, level_of_top = anc, level
        return top, level_of_top


class RelationSyncEntry:
    """pgoutput.c RelationSyncEntry: what is published of one relation, built from one catalog view."""

    __slots__ = ("relid", "replicate_valid", "schema_sent", "pubinsert", "pubupdate", "pubdelete", "pubtruncate",
                 "publish_as_relid", "columns", "row_filters", "relation", "gencols", "writers")

    def __init__(self, relid: int):
        self.relid = relid
        self.replicate_valid = False
        self.schema_sent = False
        self.pubinsert = self.pubupdate = self.pubdelete = self.pubtruncate = False
        self.publish_as_relid = relid
        self.columns: frozenset | None = None
        self.row_filters = None  # pgoutput_rowfilter.RelationRowFilters, when a row filter applies
        self.relation: Relation | None = None  # the relation as the entry was built for it
        self.gencols = PUBLISH_GENCOLS_NONE
        self.writers: dict = {}  # (relation object, view) -> tuple writer


class PgOutput(OutputPlugin):
    """The plugin; ``write(text)`` receives each message (decoded with surrogateescape, so that
    encoding it back gives its bytes) or, given ``output`` (a ``base.OutputWriter``), the messages
    go there as bytes, each followed by a newline."""

    # What it sends depends on what it sent before (schema_sent): Spark decodes it as one range
    ranges_apart = False
    in_one_range = True

    def __init__(self, write=None, *, output: OutputWriter | None = None):
        if (write is None) == (output is None):
            raise TypeError("PgOutput takes write (a message callback) or output (an OutputWriter)")
        self.output = output
        self.write = write
        self.changes_written = 0
        self._entries: dict[int, RelationSyncEntry] = {}
        self._index: _PublicationIndex | None = None
        self._index_view = None
        self._publications: list | None = None  # data->publications (publications_valid when not None)
        self._sent_begin = False

    # -- life cycle ------------------------------------------------------------------------------

    def startup(self, options: dict, catalog: CatalogView) -> OutputPluginOptions:
        self.major = catalog.major
        self.data = parse_output_parameters(options, catalog.major)
        if getattr(catalog.catalog, "publications", None) is None:
            raise OutputPluginError("the catalog snapshot carries no publications (it was written by an older "
                                    "waldecode): take a new one with 'waldecode catalog' for pgoutput")
        if catalog.major not in FLUSH_ALL_CACHE_IDS:
            raise OutputPluginError(f"pgoutput for PostgreSQL {catalog.major} WAL is not supported: which catalog "
                                    "cache invalidations reset its relation cache is known for 15, 16 and 18")
        self.database_oid = catalog.catalog.database_oid
        # pg_replication_origin is shared: the snapshot's names serve the whole range
        self._origins = getattr(catalog.catalog, "replication_origins", None)
        self.flush_all_ids = FLUSH_ALL_CACHE_IDS[catalog.major]
        self.publication_ids = PUBLICATION_CACHE_IDS[catalog.major]
        return OutputPluginOptions(two_phase=self.data.two_phase)

    def shutdown(self) -> None:
        if self.output is not None:
            self.output.flush()

    def _send(self, msg: bytes) -> None:
        """OutputPluginWrite: one message, as pg_recvlogical -f writes it (its bytes and a newline)."""
        out = self.output
        if out is None:
            self.write(msg.decode("utf-8", "surrogateescape"))
        else:
            out.write_bytes_line(msg)

    # -- transactions ------------------------------------------------------------------------------
    # The invalidations logical decoding executes in and after each transaction come through
    # ``invalidate`` (the decoder's, as ReorderBufferProcessTXN and ReorderBufferFinishPrepared execute them)

    def begin(self, txn: Transaction) -> None:
        """pgoutput_begin_txn: BEGIN waits for the first change sent."""
        self._sent_begin = False

    def _send_begin(self, txn: Transaction) -> None:
        """pgoutput_send_begin: Begin (and Origin)."""
        self._sent_begin = True
        self._send(LOGICAL_REP_MSG_BEGIN + _u64.pack(txn.final_lsn) + _i64.pack(txn.xact_time)
                   + _u32.pack(txn.xid))
        self._send_origin(txn)

    def _send_origin(self, txn: Transaction) -> None:
        """send_repl_origin: an Origin message (the origin's LSN and name) when the transaction came from
        a replication origin whose name pg_replication_origin holds (none when it holds none)."""
        if not txn.origin_id:
            return
        name = (self._origins or {}).get(txn.origin_id)
        if name is None:
            # the snapshot does not know it (taken before it was made, or without origins): whether the
            # server found a name, and which, cannot be told
            raise OutputPluginError(f"transaction {txn.xid} was replayed from replication origin {txn.origin_id}, "
                                    "which the catalog snapshot does not name (pg_replication_origin): the Origin "
                                    "message pgoutput sends cannot be written (origin=none leaves such "
                                    "transactions out; a snapshot taken after the origin was created names it)")
        self._send(LOGICAL_REP_MSG_ORIGIN + _u64.pack(txn.origin_lsn) + _cstring(name))

    def commit(self, txn: Transaction, commit_lsn: int) -> None:
        if self._sent_begin:  # pgoutput skips empty transactions
            self._sent_begin = False
            self._send(LOGICAL_REP_MSG_COMMIT + b"\x00" + _u64.pack(commit_lsn) + _u64.pack(txn.end_lsn)
                       + _i64.pack(txn.xact_time))

    def uncommitted(self, txn: Transaction) -> None:
        raise OutputPluginError("pgoutput has no message for a transaction without a commit "
                                "(--include-uncommitted does not go with --format pgoutput)")

    def begin_prepare(self, txn: Transaction) -> None:
        # A prepared transaction's BEGIN PREPARE is sent even when it turns out empty
        self._sent_begin = None  # None: no lazy BEGIN in this transaction (txndata is NULL)
        self._send(LOGICAL_REP_MSG_BEGIN_PREPARE + _u64.pack(txn.final_lsn) + _u64.pack(txn.end_lsn)
                   + _i64.pack(txn.xact_time) + _u32.pack(txn.xid) + _cstring(txn.gid or ""))
        self._send_origin(txn)

    def prepare(self, txn: Transaction, prepare_lsn: int) -> None:
        self._send(LOGICAL_REP_MSG_PREPARE + b"\x00" + _u64.pack(prepare_lsn) + _u64.pack(txn.end_lsn)
                   + _i64.pack(txn.xact_time) + _u32.pack(txn.xid) + _cstring(txn.gid or ""))

    def commit_prepared(self, txn: Transaction, commit_lsn: int) -> None:
        self._send(LOGICAL_REP_MSG_COMMIT_PREPARED + b"\x00" + _u64.pack(commit_lsn) + _u64.pack(txn.end_lsn)
                   + _i64.pack(txn.xact_time) + _u32.pack(txn.xid) + _cstring(txn.gid or ""))

    def rollback_prepared(self, txn: Transaction, prepare_end_lsn: int, prepare_time: int) -> None:
        self._send(LOGICAL_REP_MSG_ROLLBACK_PREPARED + b"\x00" + _u64.pack(prepare_end_lsn)
                   + _u64.pack(txn.end_lsn) + _i64.pack(prepare_time) + _i64.pack(txn.xact_time)
                   + _u32.pack(txn.xid) + _cstring(txn.gid or ""))

    def filter_by_origin(self, origin_id: int) -> bool:
        """pgoutput_origin_filter."""
        return self.data.publish_no_origin and origin_id != 0

    def _maybe_begin(self, txn: Transaction) -> None:
        if self._sent_begin is False:
            self._send_begin(txn)

    # -- the relation sync cache ---------------------------------------------------------------

    def _publication_index(self, view: CatalogView) -> _PublicationIndex:
        if self._index_view is not view:
            self._index = _PublicationIndex(view)
            self._index_view = view
        return self._index

    def invalidate(self, messages: bytes) -> None:
        self.execute_invalidations(messages)

    def invalidate_all(self) -> None:
        """InvalidateSystemCaches, as pgoutput's callbacks hear it: every relcache entry
        (rel_sync_cache_relation_cb with InvalidOid) and every syscache (rel_sync_cache_publication_cb,
        publication_invalidation_cb)."""
        self._publications = None
        for e in self._entries.values():
            e.replicate_valid = False

    def execute_invalidations(self, msgs: bytes) -> None:
        """LocalExecuteInvalidationMessage of each message, as far as pgoutput's callbacks hear it: a
        relcache message (rel_sync_cache_relation_cb) marks its relation's entry invalid (every entry for
        relation 0); a catcache message of pg_publication, pg_publication_rel, pg_publication_namespace
        or pg_namespace (rel_sync_cache_publication_cb, publication_invalidation_cb) every entry."""
        db = self.database_oid
        for off in range(0, len(msgs) - SizeOfSharedInvalidationMessage + 1, SizeOfSharedInvalidationMessage):
            msg_id = struct.unpack_from("<b", msgs, off)[0]
            if msg_id >= 0:
                msg_db = struct.unpack_from("<I", msgs, off + 4)[0]
                if msg_id in self.flush_all_ids and msg_db in (0, db):
                    if msg_id in self.publication_ids:
                        self._publications = None
                    for e in self._entries.values():
                        e.replicate_valid = False
            elif msg_id == SHAREDINVALRELCACHE_ID:
                msg_db, relid = struct.unpack_from("<II", msgs, off + 4)
                if msg_db not in (0, db):
                    continue
                if relid == 0:
                    for e in self._entries.values():
                        e.replicate_valid = False
                else:
                    e = self._entries.get(relid)
                    if e is not None:
                        e.replicate_valid = False

    def _load_publications(self, index: _PublicationIndex) -> list:
        """LoadPublications: the publications named, by name, in the catalog in force."""
        if self._publications is None:
            pubs = []
            for name in self.data.publication_names:
                pub = index.by_name.get(name)
                if pub is None:
                    if self.major >= 18:
                        continue  # 18 skips it (WARNING "skipped loading publication") until a publication changes
                    raise OutputPluginError(f'publication "{name}" does not exist')
                pubs.append(pub)
            self._publications = pubs
        return self._publications

    def _entry(self, view: CatalogView, rel: Relation) -> RelationSyncEntry:
        """get_rel_sync_entry."""
        entry = self._entries.get(rel.oid)
        if entry is None:
            entry = self._entries[rel.oid] = RelationSyncEntry(rel.oid)
        if not entry.replicate_valid:
            self._build_entry(view, rel, entry)
        return entry

    def _build_entry(self, view: CatalogView, rel: Relation, entry: RelationSyncEntry) -> None:
        index = self._publication_index(view)
        publications = self._load_publications(index)
        relid = rel.oid
        pubids = index.rel_pubs.get(relid, {})
        schema_pubids = index.schema_publications(rel.nspname)
        am_partition = rel.relispartition
        entry.schema_sent = False
        entry.columns = None
        entry.pubinsert = entry.pubupdate = entry.pubdelete = entry.pubtruncate = False
        entry.row_filters = None
        entry.writers = {}
        entry.gencols = PUBLISH_GENCOLS_NONE
        publish_as_relid = relid
        publish_ancestor_level = 0
        rel_publications = []
        for pub in publications:
            publish = False
            pub_relid = relid
            ancestor_level = 0
            if pub.puballtables:
                publish = True
                if pub.pubviaroot and am_partition:
                    ancestors = index.ancestors(relid)
                    if ancestors:
                        pub_relid = ancestors[-1]
                        ancestor_level = len(ancestors)
            if not publish:
                ancestor_published = False
                if am_partition:
                    ancestor, level = index.top_most_ancestor_in_publication(pub.oid, index.ancestors(relid),
                                                                             view.relation)
                    if ancestor:
                        ancestor_published = True
                        if pub.pubviaroot:
                            pub_relid = ancestor
                            ancestor_level = level
                if pub.oid in pubids or pub.oid in schema_pubids or ancestor_published:
                    publish = True
            if publish and (rel.relkind != RELKIND_PARTITIONED_TABLE or pub.pubviaroot):
                entry.pubinsert |= pub.pubinsert
                entry.pubupdate |= pub.pubupdate
                entry.pubdelete |= pub.pubdelete
                entry.pubtruncate |= pub.pubtruncate
                if publish_ancestor_level > ancestor_level:
                    continue
                if publish_ancestor_level < ancestor_level:
                    publish_as_relid = pub_relid
                    publish_ancestor_level = ancestor_level
                    rel_publications = []
                rel_publications.append(pub)
        entry.publish_as_relid = publish_as_relid
        entry.relation = rel
        if entry.pubinsert or entry.pubupdate or entry.pubdelete:
            target = rel if publish_as_relid == relid else view.relation(publish_as_relid)
            if target is None:
                raise OutputPluginError(f"relation {publish_as_relid}, the ancestor relation {rel.nspname}."
                                        f"{rel.relname} is published as, is not in the catalog")
            self._row_filter_init(view, index, rel_publications, entry, target)
            self._column_list_init(index, rel_publications, entry, target)
        entry.replicate_valid = True

    def _row_filter_init(self, view, index, publications, entry, target: Relation) -> None:
        """pgoutput_row_filter_init: per action, the row filters of the publications that have one
        (FOR ALL TABLES and FOR TABLES IN SCHEMA mean no filter, and take precedence), evaluated by
        ``output.pgoutput_rowfilter``."""
        schema_pubids = index.schema_publications(target.nspname)
        pubs = []
        for pub in publications:
            qual = None
            if not pub.puballtables and pub.oid not in schema_pubids:
                pr = index.rel_pubs.get(entry.publish_as_relid, {}).get(pub.oid)
                if pr is not None:
                    qual = pr.prqual
            pubs.append((pub.pubname, pub.pubinsert, pub.pubupdate, pub.pubdelete, qual))
        if all(q is None for *_rest, q in pubs):
            entry.row_filters = None
            return
        from . import pgoutput_rowfilter as rowfilter  # lazy: 6 ms, only publications with row filters

        settings = view.catalog.settings
        filters = rowfilter.RelationRowFilters(target, [rowfilter.Publication(*p) for p in pubs],
                                               settings.get("lc_collate"), settings.get("lc_ctype"))
        entry.row_filters = filters if any(f is not None for f in filters.filters.values()) else None

    def _column_list_init(self, index, publications, entry, target: Relation) -> None:
        """pgoutput_column_list_init: the column list (None: every column); publications that differ
        are refused as the server refuses them."""
        first = True
        live = [a for a in target.attributes if not a.attisdropped and not a.attgenerated]
        for pub in publications:
            cols = None
            if not pub.puballtables:
                pr = index.rel_pubs.get(entry.publish_as_relid, {}).get(pub.oid)
                if pr is not None and pr.prattrs is not None:
                    cols = frozenset(pr.prattrs)
                    if self.major < 18 and len(cols) == len(live):
                        cols = None
                    elif self.major >= 18 and len(cols) == len([a for a in target.attributes
                                                                if not a.attisdropped]):
                        cols = None
            if first:
                entry.columns = cols
                entry.gencols = pub.pubgencols or PUBLISH_GENCOLS_NONE
                first = False
            elif entry.columns != cols:
                raise OutputPluginError(f'cannot use different column lists for table "{target.nspname}.'
                                        f'{target.relname}" in different publications')

    # -- what a message says about a relation ---------------------------------------------------

    def _publishes(self, att, columns, gencols) -> bool:
        """Is column ``att`` sent (logicalrep_should_publish_column, 18; the loops' test before)."""
        if att.attisdropped:
            return False
        if self.major < 18:
            if att.attgenerated:
                return False
            return columns is None or att.attnum in columns
        if columns is not None:
            return att.attnum in columns
        if not att.attgenerated:
            return True
        return att.attgenerated == ATTRIBUTE_GENERATED_STORED and gencols == PUBLISH_GENCOLS_STORED

    def _maybe_send_schema(self, view: CatalogView, rel: Relation, entry: RelationSyncEntry) -> None:
        """maybe_send_schema: the ancestor's Relation (when published as it), then the relation's own."""
        if entry.schema_sent:
            return
        if entry.publish_as_relid != rel.oid:
            ancestor = view.relation(entry.publish_as_relid)
            if ancestor is None:
                raise OutputPluginError(f"ancestor relation {entry.publish_as_relid} of {rel.nspname}.{rel.relname} "
                                        "is not in the catalog")
            self._send_relation_and_attrs(view, ancestor, entry)
        self._send_relation_and_attrs(view, rel, entry)
        entry.schema_sent = True

    def _send_relation_and_attrs(self, view: CatalogView, rel: Relation, entry: RelationSyncEntry) -> None:
        """send_relation_and_attrs: a Type message per column of a type not built in, then Relation."""
        for att in rel.attributes:
            if not self._publishes(att, entry.columns, entry.gencols) or att.atttypid < FirstGenbkiObjectId:
                continue
            self._send(self._type_message(view, att.atttypid))
        self._send(self._relation_message(rel, entry))

    def _type_message(self, view: CatalogView, typoid: int) -> bytes:
        """logicalrep_write_typ: the type's OID, its base type's schema and name."""
        typ = view.type(typoid)
        seen = set()
        while typ is not None and typ.typtype == "d" and typ.typbasetype and typ.oid not in seen:
            seen.add(typ.oid)
            typ = view.type(typ.typbasetype)
        if typ is None:
            raise OutputPluginError(f"cache lookup failed for type {typoid}")
        return LOGICAL_REP_MSG_TYPE + _u32.pack(typoid) + _namespace(typ.nspname) + _cstring(typ.typname)

    def _relation_message(self, rel: Relation, entry: RelationSyncEntry) -> bytes:
        """logicalrep_write_rel and logicalrep_write_attrs."""
        atts = [a for a in rel.attributes if self._publishes(a, entry.columns, entry.gencols)]
        full = rel.relreplident == REPLICA_IDENTITY_FULL
        key = set(rel.replica_identity_key)
        parts = [LOGICAL_REP_MSG_RELATION, _u32.pack(rel.oid), _namespace(rel.nspname), _cstring(rel.relname),
                 rel.relreplident.encode("ascii"), _i16.pack(len(atts))]
        for a in atts:
            flags = LOGICALREP_IS_REPLICA_IDENTITY if full or a.attnum in key else 0
            parts.append(bytes((flags,)) + _cstring(a.attname) + _u32.pack(a.atttypid) + _i32.pack(a.atttypmod))
        return b"".join(parts)

    def _tuple_writer(self, view: CatalogView, target: Relation, entry: RelationSyncEntry):
        """logicalrep_write_tuple for ``target`` under ``view``: values -> bytes."""
        key = (target, view)
        w = entry.writers.get(key)
        if w is not None:
            return w
        ctx = view.output_context()
        cols = []
        for i, a in enumerate(target.attributes):
            if not self._publishes(a, entry.columns, entry.gencols):
                continue
            cols.append((i, self._column_writer(ctx, a.atttypid)))
        head = _i16.pack(len(cols))

        def write(values) -> bytes:
            parts = [head]
            n = len(values)
            for i, fn in cols:
                v = values[i] if i < n else None
                if v is None:
                    parts.append(LOGICALREP_COLUMN_NULL)
                elif v is UNCHANGED_TOAST:
                    parts.append(LOGICALREP_COLUMN_UNCHANGED)
                else:
                    parts.append(fn(v))
            return b"".join(parts)
        if len(entry.writers) > 16:
            entry.writers.clear()  # writers of catalog views gone by
        entry.writers[key] = write
        return write

    def _column_writer(self, ctx, typeoid: int):
        """One non-NULL value -> its kind byte, length and bytes: binary (the type's send function) when
        asked for and the type has one, else its output text."""
        if self.data.binary:
            from ..types.send import NO_SEND_FUNCTION, send_function  # lazy: 5 ms, only binary mode

            typ = ctx.type(typeoid)
            if typ.typoutput not in NO_SEND_FUNCTION:
                send = send_function(ctx, typeoid)

                def binary(v) -> bytes:
                    data = send(v)
                    return LOGICALREP_COLUMN_BINARY + _i32.pack(len(data)) + data
                return binary
        output = ctx.output

        def text(v) -> bytes:
            data = output(typeoid, v).encode("utf-8", "surrogateescape")
            return LOGICALREP_COLUMN_TEXT + _i32.pack(len(data)) + data
        return text

    # -- changes -------------------------------------------------------------------------------

    def change(self, txn: Transaction, lsn: int, catalog: CatalogView, relation: Relation, action: str,
               new, old) -> None:
        """pgoutput_change."""
        if not is_publishable_relation(relation):
            return
        entry = self._entry(catalog, relation)
        if action == INSERT:
            if not entry.pubinsert:
                return
        elif action == UPDATE:
            if not entry.pubupdate:
                return
        elif action == DELETE:
            if not entry.pubdelete or old is None:
                return
        target = relation
        if entry.publish_as_relid != relation.oid:
            target = catalog.relation(entry.publish_as_relid)
            if target is None:
                raise OutputPluginError(f"ancestor relation {entry.publish_as_relid} of {relation.nspname}."
                                        f"{relation.relname} is not in the catalog")
            if old is not None:
                old = _convert(relation, target, old)
            if new is not None:
                new = _convert(relation, target, new)
        if entry.row_filters is not None:
            action, new = entry.row_filters.filter_change(action, old, new)
            if action is None:
                return
        self._maybe_begin(txn)
        self._maybe_send_schema(catalog, relation, entry)
        write = self._tuple_writer(catalog, target, entry)
        relid = _u32.pack(target.oid)
        if action == INSERT:
            if new is None:
                raise OutputPluginError(f"INSERT into {relation.nspname}.{relation.relname} without a new tuple")
            msg = LOGICAL_REP_MSG_INSERT + relid + b"N" + write(new)
        elif action == UPDATE:
            parts = [LOGICAL_REP_MSG_UPDATE, relid]
            if old is not None:
                parts.append(b"O" if target.relreplident == REPLICA_IDENTITY_FULL else b"K")
                parts.append(write(old))
            parts.append(b"N")
            parts.append(write(new))
            msg = b"".join(parts)
        else:
            msg = (LOGICAL_REP_MSG_DELETE + relid + (b"O" if target.relreplident == REPLICA_IDENTITY_FULL else b"K")
                   + write(old))
        self._send(msg)
        self.changes_written += 1

    def truncate(self, txn: Transaction, lsn: int, catalog: CatalogView, relations: list, restart_seqs: bool,
                 cascade: bool) -> None:
        """pgoutput_truncate."""
        relids = []
        for rel in relations:
            if not is_publishable_relation(rel):
                continue
            entry = self._entry(catalog, rel)
            if not entry.pubtruncate:
                continue
            if rel.relispartition and entry.publish_as_relid != rel.oid:
                continue
            relids.append(rel.oid)
            self._maybe_begin(txn)
            self._maybe_send_schema(catalog, rel, entry)
        if relids:
            flags = (TRUNCATE_CASCADE if cascade else 0) | (TRUNCATE_RESTART_SEQS if restart_seqs else 0)
            self._send(LOGICAL_REP_MSG_TRUNCATE + _u32.pack(len(relids)) + bytes((flags,))
                       + b"".join(_u32.pack(r) for r in relids))
            self.changes_written += 1

    def message(self, txn: Transaction | None, message_lsn: int, transactional: bool, prefix: str,
                content: bytes) -> None:
        """pgoutput_message."""
        if not self.data.messages:
            return
        if transactional:
            self._maybe_begin(txn)
        self._send(LOGICAL_REP_MSG_MESSAGE + bytes((MESSAGE_TRANSACTIONAL if transactional else 0,))
                   + _u64.pack(message_lsn) + _cstring(prefix) + _i32.pack(len(content)) + bytes(content))
        self.changes_written += 1


def _namespace(nspname: str) -> bytes:
    """logicalrep_write_namespace: pg_catalog as the empty string."""
    return b"\x00" if nspname == "pg_catalog" else _cstring(nspname)


def _convert(rel: Relation, target: Relation, values: list) -> list:
    """execute_attr_map_slot with build_attrmap_by_name: a partition's row as its ancestor's (columns
    matched by name; the ancestor's dropped columns NULL)."""
    by_name = {a.attname: i for i, a in enumerate(rel.attributes) if not a.attisdropped}
    out = []
    n = len(values)
    for a in target.attributes:
        i = None if a.attisdropped else by_name.get(a.attname)
        out.append(values[i] if i is not None and i < n else None)
    return out
