"""pgoutput's binary stream, read back and printed for people (``waldecode pgoutput-dump FILE``).

Owns the logical replication protocol messages as src/backend/replication/logical/proto.c
writes them (protocol versions 1 to 4): Begin, Commit, Origin, Relation, Type, Insert, Update,
Delete, Truncate, Message, the streaming messages (Stream Start/Stop/Commit/Abort) and the
two-phase ones (Begin Prepare, Prepare, Commit Prepared, Rollback Prepared, Stream Prepare).
``read_messages`` turns a byte stream into ``Message``s, ``format_message`` into one line each.

The input is what ``pg_recvlogical -f FILE`` writes for a pgoutput slot: each message's bytes
followed by a newline (pg_recvlogical.c writes ``"\\n"`` after every XLogData payload, binary
or not), no length prefix.  Every message's length follows from its own contents, so the
stream is split by parsing; a message that runs past the end, an unknown message type, or a
byte other than the newline after a message is an error naming the file and the offset.

Integers are in network byte order (pq_sendint*); strings end with a NUL (pq_sendstring);
LSNs are printed ``X/X`` and timestamps (microseconds since 2000-01-01 UTC) in ISO form, UTC.
Stream Abort carries abort_lsn and abort_time only when the slot was started with
``streaming=parallel`` (pgoutput_stream_abort's write_abort_info; protocol version 4):
``streaming`` says so; None tells by the byte after the short form (the newline or not).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from ..errors import Error
from ..pg.lsn import format_lsn

# src/include/replication/logicalproto.h: LogicalRepMsgType
LOGICAL_REP_MSG_BEGIN = ord("B")
LOGICAL_REP_MSG_COMMIT = ord("C")
LOGICAL_REP_MSG_ORIGIN = ord("O")
LOGICAL_REP_MSG_INSERT = ord("I")
LOGICAL_REP_MSG_UPDATE = ord("U")
LOGICAL_REP_MSG_DELETE = ord("D")
LOGICAL_REP_MSG_TRUNCATE = ord("T")
LOGICAL_REP_MSG_RELATION = ord("R")
LOGICAL_REP_MSG_TYPE = ord("Y")
LOGICAL_REP_MSG_MESSAGE = ord("M")
LOGICAL_REP_MSG_BEGIN_PREPARE = ord("b")
LOGICAL_REP_MSG_PREPARE = ord("P")
LOGICAL_REP_MSG_COMMIT_PREPARED = ord("K")
LOGICAL_REP_MSG_ROLLBACK_PREPARED = ord("r")
LOGICAL_REP_MSG_STREAM_START = ord("S")
LOGICAL_REP_MSG_STREAM_STOP = ord("E")
LOGICAL_REP_MSG_STREAM_COMMIT = ord("c")
LOGICAL_REP_MSG_STREAM_ABORT = ord("A")
LOGICAL_REP_MSG_STREAM_PREPARE = ord("p")

# proto.c: TRUNCATE_CASCADE, TRUNCATE_RESTART_SEQS; MESSAGE_TRANSACTIONAL
TRUNCATE_CASCADE = 1 << 0
TRUNCATE_RESTART_SEQS = 1 << 1
MESSAGE_TRANSACTIONAL = 1 << 0
# logicalproto.h: LOGICALREP_COLUMN_NULL / UNCHANGED / TEXT / BINARY
LOGICALREP_COLUMN_NULL = ord("n")
LOGICALREP_COLUMN_UNCHANGED = ord("u")
LOGICALREP_COLUMN_TEXT = ord("t")
LOGICALREP_COLUMN_BINARY = ord("b")

NAMES = {
    LOGICAL_REP_MSG_BEGIN: "BEGIN", LOGICAL_REP_MSG_COMMIT: "COMMIT", LOGICAL_REP_MSG_ORIGIN: "ORIGIN",
    LOGICAL_REP_MSG_INSERT: "INSERT", LOGICAL_REP_MSG_UPDATE: "UPDATE", LOGICAL_REP_MSG_DELETE: "DELETE",
    LOGICAL_REP_MSG_TRUNCATE: "TRUNCATE", LOGICAL_REP_MSG_RELATION: "RELATION", LOGICAL_REP_MSG_TYPE: "TYPE",
    LOGICAL_REP_MSG_MESSAGE: "MESSAGE", LOGICAL_REP_MSG_BEGIN_PREPARE: "BEGIN PREPARE",
    LOGICAL_REP_MSG_PREPARE: "PREPARE", LOGICAL_REP_MSG_COMMIT_PREPARED: "COMMIT PREPARED",
    LOGICAL_REP_MSG_ROLLBACK_PREPARED: "ROLLBACK PREPARED", LOGICAL_REP_MSG_STREAM_START: "STREAM START",
    LOGICAL_REP_MSG_STREAM_STOP: "STREAM STOP", LOGICAL_REP_MSG_STREAM_COMMIT: "STREAM COMMIT",
    LOGICAL_REP_MSG_STREAM_ABORT: "STREAM ABORT", LOGICAL_REP_MSG_STREAM_PREPARE: "STREAM PREPARE",
}

POSTGRES_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


class PgoutputStreamError(Error):
    """A pgoutput stream that is truncated or holds something proto.c never writes."""

    def __init__(self, message: str, offset: int, path: str | None = None):
        self.offset = offset
        self.path = path
        where = f" at offset {offset}" + (f" of {path}" if path else "")
        super().__init__(message + where)


@dataclass
class Message:
    """One protocol message: where it starts in the stream, its type letter and name, its fields
    (proto.c's names), and for Insert/Update/Delete its tuples (lists of column values: None for
    NULL, ``UNCHANGED`` for an unchanged TOASTed value, ``str`` for text, ``bytes`` for binary)."""

    offset: int
    type: str
    name: str
    fields: dict = field(default_factory=dict)


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()


class _Reader:
    def __init__(self, data, path: str | None):
        self.data = memoryview(data)
        self.path = path
        self.pos = 0
        self.start = 0
        self.what = ""

    def need(self, n: int) -> int:
        p = self.pos
        if p + n > len(self.data):
            raise PgoutputStreamError(f"truncated {self.what} message (starting at offset {self.start}): "
                                      f"needs {n} bytes, only {len(self.data) - p} remain", p, self.path)
        self.pos = p + n
        return p

    def u8(self) -> int:
        return self.data[self.need(1)]

    def i16(self) -> int:
        return struct.unpack_from(">h", self.data, self.need(2))[0]

    def i32(self) -> int:
        return struct.unpack_from(">i", self.data, self.need(4))[0]

    def u32(self) -> int:
        return struct.unpack_from(">I", self.data, self.need(4))[0]

    def i64(self) -> int:
        return struct.unpack_from(">q", self.data, self.need(8))[0]

    def u64(self) -> int:
        return struct.unpack_from(">Q", self.data, self.need(8))[0]

    def string(self) -> str:
        p = self.pos
        end = bytes(self.data[p:]).find(b"\0")
        if end < 0:
            raise PgoutputStreamError(f"truncated {self.what} message (starting at offset {self.start}): "
                                      f"string without its terminating NUL", p, self.path)
        self.pos = p + end + 1
        return bytes(self.data[p:p + end]).decode("utf-8", "surrogateescape")

    def raw(self, n: int) -> bytes:
        if n < 0:
            raise PgoutputStreamError(f"{self.what} message has a negative length {n}", self.pos - 4, self.path)
        p = self.need(n)
        return bytes(self.data[p:p + n])

    def tuple(self) -> list:
        # logicalrep_write_tuple: int16 natts, then per column a kind byte and maybe a value
        natts = self.i16()
        if natts < 0:
            raise PgoutputStreamError(f"{self.what} message has a tuple of {natts} columns", self.pos - 2, self.path)
        values = []
        for _ in range(natts):
            kind_at = self.pos
            kind = self.u8()
            if kind == LOGICALREP_COLUMN_NULL:
                values.append(None)
            elif kind == LOGICALREP_COLUMN_UNCHANGED:
                values.append(UNCHANGED)
            elif kind == LOGICALREP_COLUMN_TEXT:
                values.append(self.raw(self.i32()).decode("utf-8", "surrogateescape"))
            elif kind == LOGICALREP_COLUMN_BINARY:
                values.append(self.raw(self.i32()))
            else:
                raise PgoutputStreamError(f"{self.what} message has unknown column kind {kind!r} "
                                          f"({chr(kind)!r})", kind_at, self.path)
        return values


def read_messages(data, path: str | None = None, streaming: str | None = None, framed: bool = True):
    """Yield the ``Message``s of ``data``.  ``framed``: each message is followed by the newline
    ``pg_recvlogical -f`` writes (False: messages back to back, as one per peeked row).
    ``streaming``: the slot's streaming option (off, on, parallel), or None to infer."""
    r = _Reader(data, path)
    n = len(r.data)
    in_stream = False
    while r.pos < n:
        r.start = start = r.pos
        t = r.data[r.pos]
        name = NAMES.get(t)
        if name is None:
            raise PgoutputStreamError(f"unknown pgoutput message type {t} ({chr(t)!r})", start, path)
        r.what = name
        r.pos += 1
        f: dict = {}
        if in_stream and t in (LOGICAL_REP_MSG_RELATION, LOGICAL_REP_MSG_TYPE, LOGICAL_REP_MSG_INSERT,
                               LOGICAL_REP_MSG_UPDATE, LOGICAL_REP_MSG_DELETE, LOGICAL_REP_MSG_TRUNCATE,
                               LOGICAL_REP_MSG_MESSAGE):
            # inside a streamed block, these carry the (sub)transaction's xid first
            f["xid"] = r.u32()
        if t == LOGICAL_REP_MSG_BEGIN:
            f.update(final_lsn=r.u64(), commit_time=r.i64(), xid=r.u32())
        elif t == LOGICAL_REP_MSG_COMMIT:
            f.update(flags=r.u8(), commit_lsn=r.u64(), end_lsn=r.u64(), commit_time=r.i64())
        elif t == LOGICAL_REP_MSG_ORIGIN:
            f.update(origin_lsn=r.u64(), origin=r.string())
        elif t == LOGICAL_REP_MSG_RELATION:
            f.update(relid=r.u32(), nspname=r.string(), relname=r.string(), replident=chr(r.u8()))
            natts = r.i16()
            cols = []
            for _ in range(max(natts, 0)):
                flags = r.u8()
                cols.append({"flags": flags, "name": r.string(), "typid": r.u32(), "typmod": r.i32()})
            f["columns"] = cols
        elif t == LOGICAL_REP_MSG_TYPE:
            f.update(typid=r.u32(), nspname=r.string(), typname=r.string())
        elif t == LOGICAL_REP_MSG_INSERT:
            f["relid"] = r.u32()
            _expect(r, b"N")
            f["new"] = r.tuple()
        elif t == LOGICAL_REP_MSG_UPDATE:
            f["relid"] = r.u32()
            at = r.pos
            kind = r.u8()
            if kind in (ord("K"), ord("O")):
                f["old_kind"] = chr(kind)
                f["old"] = r.tuple()
                at = r.pos
                kind = r.u8()
            if kind != ord("N"):
                raise PgoutputStreamError(f"UPDATE message has {chr(kind)!r} where 'N' was expected", at, path)
            f["new"] = r.tuple()
        elif t == LOGICAL_REP_MSG_DELETE:
            f["relid"] = r.u32()
            at = r.pos
            kind = r.u8()
            if kind not in (ord("K"), ord("O")):
                raise PgoutputStreamError(f"DELETE message has {chr(kind)!r} where 'K' or 'O' was expected", at, path)
            f["old_kind"] = chr(kind)
            f["old"] = r.tuple()
        elif t == LOGICAL_REP_MSG_TRUNCATE:
            nrelids = r.i32()
            flags = r.u8()
            f.update(cascade=bool(flags & TRUNCATE_CASCADE), restart_seqs=bool(flags & TRUNCATE_RESTART_SEQS))
            if nrelids < 0:
                raise PgoutputStreamError(f"TRUNCATE message has {nrelids} relations", start, path)
            f["relids"] = [r.u32() for _ in range(nrelids)]
        elif t == LOGICAL_REP_MSG_MESSAGE:
            flags = r.u8()
            f.update(transactional=bool(flags & MESSAGE_TRANSACTIONAL), lsn=r.u64(), prefix=r.string())
            f["content"] = r.raw(r.i32())
        elif t == LOGICAL_REP_MSG_BEGIN_PREPARE:
            f.update(prepare_lsn=r.u64(), end_lsn=r.u64(), prepare_time=r.i64(), xid=r.u32(), gid=r.string())
        elif t in (LOGICAL_REP_MSG_PREPARE, LOGICAL_REP_MSG_STREAM_PREPARE):
            f.update(flags=r.u8(), prepare_lsn=r.u64(), end_lsn=r.u64(), prepare_time=r.i64(), xid=r.u32(),
                     gid=r.string())
        elif t == LOGICAL_REP_MSG_COMMIT_PREPARED:
            f.update(flags=r.u8(), commit_lsn=r.u64(), end_lsn=r.u64(), commit_time=r.i64(), xid=r.u32(),
                     gid=r.string())
        elif t == LOGICAL_REP_MSG_ROLLBACK_PREPARED:
            f.update(flags=r.u8(), prepare_end_lsn=r.u64(), rollback_end_lsn=r.u64(), prepare_time=r.i64(),
                     rollback_time=r.i64(), xid=r.u32(), gid=r.string())
        elif t == LOGICAL_REP_MSG_STREAM_START:
            f.update(xid=r.u32(), first_segment=bool(r.u8()))
            in_stream = True
        elif t == LOGICAL_REP_MSG_STREAM_STOP:
            in_stream = False
        elif t == LOGICAL_REP_MSG_STREAM_COMMIT:
            f.update(xid=r.u32(), flags=r.u8(), commit_lsn=r.u64(), end_lsn=r.u64(), commit_time=r.i64())
        elif t == LOGICAL_REP_MSG_STREAM_ABORT:
            f.update(xid=r.u32(), subxid=r.u32())
            if _abort_info(r, streaming, framed):
                f.update(abort_lsn=r.u64(), abort_time=r.i64())
        if framed:
            _expect(r, b"\n", "the newline pg_recvlogical writes after each message")
        yield Message(start, chr(t), name, f)


def _abort_info(r: _Reader, streaming: str | None, framed: bool) -> bool:
    if streaming is not None:
        return streaming == "parallel"
    if not framed:
        return len(r.data) - r.pos >= 16
    # Without the version: the short form is followed by the newline; the long form by abort_lsn,
    # whose first (most significant) byte is 0 for any LSN below 0x0A00000000000000
    return r.pos < len(r.data) and r.data[r.pos] != 0x0A


def _expect(r: _Reader, what: bytes, desc: str | None = None) -> None:
    at = r.pos
    got = r.u8()
    if got != what[0]:
        raise PgoutputStreamError(f"{r.what} message (starting at offset {r.start}) is followed by byte "
                                  f"0x{got:02X} where {desc or repr(what.decode())} was expected", at, r.path)


# ---------------------------------------------------------------------------------------------
# Text for people
# ---------------------------------------------------------------------------------------------

def format_timestamp(ts: int) -> str:
    """A TimestampTz (microseconds since 2000-01-01 UTC) as ISO text in UTC."""
    try:
        # as timestamptz_out prints it in a session with TimeZone UTC
        return (POSTGRES_EPOCH + timedelta(microseconds=ts)).isoformat(sep=" ").replace("+00:00", "+00")
    except OverflowError:
        return f"{ts} us since 2000-01-01"


def _value(v) -> str:
    if v is None:
        return "null"
    if v is UNCHANGED:
        return "unchanged-toast"
    if isinstance(v, bytes):
        return "\\x" + v.hex()
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _tuple(values: list, rel: dict | None) -> str:
    names = [c["name"] for c in rel["columns"]] if rel else []
    parts = []
    for i, v in enumerate(values):
        label = names[i] if i < len(names) else f"#{i + 1}"
        parts.append(f"{label}={_value(v)}")
    return "(" + ", ".join(parts) + ")"


def _relname(relid: int, relations: dict) -> str:
    rel = relations.get(relid)
    if rel is None:
        return f"relation {relid}"
    return f"{rel['nspname'] or 'pg_catalog'}.{rel['relname']} ({relid})"


_LSN_FIELDS = {"final_lsn", "commit_lsn", "end_lsn", "origin_lsn", "lsn", "prepare_lsn", "prepare_end_lsn",
               "rollback_end_lsn", "abort_lsn"}
_TIME_FIELDS = {"commit_time", "prepare_time", "rollback_time", "abort_time"}


def format_message(msg: Message, relations: dict) -> str:
    """One line for ``msg``; ``relations`` (relid -> Relation message fields) is kept up to date
    from the Relation messages seen, for naming relations and columns."""
    f = msg.fields
    head = f"{msg.offset:>10}  {msg.name}"
    if msg.type == "R":
        relations[f["relid"]] = f
        cols = ", ".join(f"{c['name']} type {c['typid']}" + (f" typmod {c['typmod']}" if c["typmod"] != -1 else "")
                         + (" key" if c["flags"] & 1 else "") for c in f["columns"])
        xid = f" xid {f['xid']}" if "xid" in f else ""
        return (f"{head}{xid} relid {f['relid']} {f['nspname'] or 'pg_catalog'}.{f['relname']} "
                f"replica identity {f['replident']} columns ({cols})")
    if msg.type in ("I", "U", "D"):
        rel = relations.get(f["relid"])
        out = [head]
        if "xid" in f:
            out.append(f"xid {f['xid']}")
        out.append(_relname(f["relid"], relations))
        if "old" in f:
            out.append(("old key " if f["old_kind"] == "K" else "old ") + _tuple(f["old"], rel))
        if "new" in f:
            out.append("new " + _tuple(f["new"], rel))
        return " ".join(out)
    if msg.type == "T":
        rels = ", ".join(_relname(r, relations) for r in f["relids"])
        xid = f" xid {f['xid']}" if "xid" in f else ""
        return (f"{head}{xid} {rels}" + (" cascade" if f["cascade"] else "")
                + (" restart identity" if f["restart_seqs"] else ""))
    if msg.type == "M":
        xid = f" xid {f['xid']}" if "xid" in f else ""
        kind = "transactional" if f["transactional"] else "non-transactional"
        return (f"{head}{xid} {kind} lsn {format_lsn(f['lsn'])} prefix {f['prefix']!r} "
                f"content {f['content']!r}")
    parts = [head]
    for k, v in f.items():
        if k in _LSN_FIELDS:
            v = format_lsn(v)
        elif k in _TIME_FIELDS:
            v = format_timestamp(v)
        elif isinstance(v, str):
            v = repr(v)
        parts.append(f"{k} {v}")
    return " ".join(parts)


def dump(data, out, path: str | None = None, streaming: str | None = None) -> int:
    """Write one line per message of ``data`` to ``out``; the number of messages."""
    relations: dict = {}
    count = 0
    for msg in read_messages(data, path, streaming):
        out.write(format_message(msg, relations))
        out.write("\n")
        count += 1
    return count
