"""WAL on Hadoop file systems (``hdfs://``, ``s3a://``, ``file://`` …), read through Spark's own layer.

Owns what the Spark path does with input paths that are URIs: the driver lists them and
reads the first page of each segment, the timeline history files and, when planning
needs them, whole segments through Hadoop's ``FileSystem`` in the driver's JVM (so
``spark.hadoop.*`` settings, s3a credentials and Kerberos apply as for any Spark job);
the executors get a run's segment bytes from Spark's ``binaryFile`` source, shuffled to
the run's task (``job.SparkExecutor``), and frame them as a local run
(``HadoopSegmentSet`` with the bytes in hand).  Segment discovery itself is
``wal.segments.segment_set``: the rules are the local ones.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import PurePosixPath

from ..errors import Error, SegmentFileError, UsageError
from ..wal.segments import (
    HISTORY_NAME_RE,
    SEGMENT_NAME_RE,
    XLOG_BLCKSZ,
    SegmentFile,
    SegmentSet,
    _decompress,
    identity_of,
    parse_history,
    segment_set,
)

URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path) -> bool:
    return bool(URI_RE.match(str(path)))


class HadoopPath:
    """A file's URI, with what messages and segment discovery use of a path (``name``, ``suffix``, ``parent``)."""

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/") or uri

    @property
    def name(self) -> str:
        return self.uri.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> "HadoopPath":
        return HadoopPath(self.uri.rsplit("/", 1)[0])

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"HadoopPath({self.uri!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, HadoopPath) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)


class HadoopSegmentSet(SegmentSet):
    """Segments on a Hadoop file system.  On the driver, files are read through the JVM; in a task,
    from the bytes Spark's ``binaryFile`` source brought (``with_contents``).  Pickles without either."""

    def read_file(self, f: SegmentFile) -> bytes:
        contents = getattr(self, "_contents", None)
        if contents is not None:
            data = contents.get(f.segno)
            if data is None:
                raise SegmentFileError("the file was not delivered to this task", path=str(f.path),
                                       lsn=f.segno * self.seg_size)
        else:
            fs = getattr(self, "_fs", None)
            if fs is None:
                raise SegmentFileError("a Hadoop file can be read only through Spark", path=str(f.path))
            data = fs.read(f.path.uri)
        return _decompress(f.path, data, self.seg_size)

    def map_file(self, f):
        return None  # not a local file: the bytes come from Spark or through the JVM

    def with_contents(self, contents: dict) -> "HadoopSegmentSet":
        """This set, reading segment numbers from ``contents`` ({segno: file bytes as stored})."""
        copy = _copy(self)
        copy._contents = contents
        return copy

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_fs", None)
        state.pop("_contents", None)
        return state


def _copy(base: SegmentSet) -> HadoopSegmentSet:
    return HadoopSegmentSet(**{f.name: getattr(base, f.name) for f in fields(SegmentSet)})


class HadoopFS:
    """Listing and reading through ``org.apache.hadoop.fs.FileSystem`` in the driver's JVM."""

    def __init__(self, spark):
        sc = getattr(spark, "sparkContext", spark)  # a session or its context
        self.jvm = sc._jvm
        self.conf = sc._jsc.hadoopConfiguration()

    def _call(self, uri: str, fn):
        from py4j.protocol import Py4JJavaError

        try:
            path = self.jvm.org.apache.hadoop.fs.Path(uri)
            return fn(path.getFileSystem(self.conf), path)
        except Py4JJavaError as e:
            raise _fs_error(e, uri) from None

    def list(self, uri: str) -> tuple[bool, list[tuple[str, bool]]]:
        """(is a directory, [(URI, is a directory)]): a directory's entries, else the file itself."""
        def go(fs, path):
            st = fs.getFileStatus(path)
            if not st.isDirectory():
                return False, [(st.getPath().toString(), False)]
            return True, sorted((c.getPath().toString(), c.isDirectory()) for c in fs.listStatus(path))
        return self._call(uri, go)

    def read(self, uri: str, limit: int | None = None) -> bytes:
        def go(fs, path):
            stream = fs.open(path)
            try:
                n = fs.getFileStatus(path).getLen() if limit is None else limit
                return bytes(stream.readNBytes(int(n)))
            finally:
                stream.close()
        return self._call(uri, go)


def _fs_error(e, uri: str) -> Error:
    """A Hadoop exception as waldecode's one-line error naming the path."""
    jexc = e.java_exception
    cls = jexc.getClass().getName()
    msg = str(jexc.getMessage() or "").strip().splitlines()
    msg = msg[0] if msg else cls
    if cls.endswith("UnsupportedFileSystemException") or "ClassNotFoundException" in msg:
        # No FileSystem class for the scheme, or its class (e.g. S3AFileSystem of hadoop-aws) not on the classpath
        scheme = uri.split(":", 1)[0]
        return UsageError(f"{uri}: this Spark has no Hadoop file system for {scheme}:// ({msg}); add its connector "
                          f"to the classpath (for s3a: --conf spark.jars.packages=org.apache.hadoop:hadoop-aws:"
                          f"<Spark's Hadoop version>)")
    if cls.endswith("FileNotFoundException"):
        return SegmentFileError("no such file or directory", path=uri)
    return SegmentFileError(f"could not read through Hadoop: {cls.rsplit('.', 1)[-1]}: {msg}", path=uri)


def discover_hadoop(spark, paths, timeline: int | None = None) -> HadoopSegmentSet:
    """``segments.discover`` for URIs (and plain paths, which Hadoop resolves on its default file system)."""
    fs = HadoopFS(spark)
    cands: list[HadoopPath] = []
    histories: dict = {}
    for p in paths:
        uri = str(p)
        is_dir, entries = fs.list(uri)
        if not is_dir:
            f = HadoopPath(entries[0][0])
            if HISTORY_NAME_RE.match(f.name):
                histories[int(f.name[:8], 16)] = parse_history(fs.read(f.uri).decode(errors="replace"), f.uri)
                continue
            if not SEGMENT_NAME_RE.match(f.name):
                raise SegmentFileError("file name is not a WAL segment name (24 hex digits, optionally "
                                       ".partial, .gz, .lz4 or .zst)", path=f.uri)
            cands.append(f)
            continue
        if any(HadoopPath(u).name == "pg_wal" and d for u, d in entries):
            entries = fs.list(next(u for u, d in entries if d and HadoopPath(u).name == "pg_wal"))[1]
        for u, d in entries:
            f = HadoopPath(u)
            if d:
                continue
            if SEGMENT_NAME_RE.match(f.name):
                cands.append(f)
            elif HISTORY_NAME_RE.match(f.name):
                histories[int(f.name[:8], 16)] = parse_history(fs.read(f.uri).decode(errors="replace"), f.uri)

    def read_identity(f: HadoopPath):
        compressed = SEGMENT_NAME_RE.match(f.name).group(5)
        data = fs.read(f.uri, None if compressed else XLOG_BLCKSZ)
        if compressed:
            data = _decompress(f, data, 1 << 30)
        return identity_of(data, f)

    base = segment_set(cands, histories, timeline, ", ".join(str(p) for p in paths), read_identity)
    out = _copy(base)
    out._fs = fs
    return out
