"""WAL on Hadoop file systems (``hdfs://``, ``s3a://``, ``file://`` …), read through Spark's own layer.

Owns what the Spark path does with input paths that are URIs: the driver lists them and
reads the first page of each segment, the timeline history files and, when planning
needs them, whole segments through Hadoop's ``FileSystem`` in the driver's JVM (so
``spark.hadoop.*`` settings, s3a credentials and Kerberos apply as for any Spark job);
the executors get a run's segment bytes from Spark's ``binaryFile`` source, shuffled to
the run's task (``executors.SparkExecutor``), and frame them as a local run
(``HadoopSegmentSet`` with the bytes in hand).  ``HadoopFS`` is the ``storage.Store`` of such
URIs: segment discovery is ``wal.segments.discover`` through it, the layouts and rules the local ones.
"""

from __future__ import annotations

import io
import re
from dataclasses import fields

from ..errors import Error, SegmentFileError, UsageError
from ..wal.compression import decompress
from ..wal.segments import SegmentFile, SegmentSet, discover
from ..wal.storage import DEFAULT_OPTIONS, InputOptions, Store

URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path) -> bool:
    return bool(URI_RE.match(str(path)))


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
            if getattr(self.store, "_fs", None) is None:
                raise SegmentFileError("a Hadoop file can be read only through Spark", path=str(f.path))
            data = self.store.read(str(f.path))
        return decompress(data, str(f.path), self.seg_size, f.hint)

    def map_file(self, f):
        return None  # not a local file: the bytes come from Spark or through the JVM

    def with_contents(self, contents: dict) -> "HadoopSegmentSet":
        """This set, reading segment numbers from ``contents`` ({segno: file bytes as stored})."""
        copy = _copy(self)
        copy._contents = contents
        return copy

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_contents", None)
        return state


def _copy(base: SegmentSet) -> HadoopSegmentSet:
    return HadoopSegmentSet(**{f.name: getattr(base, f.name) for f in fields(SegmentSet)})


class HadoopFS(Store):
    """Listing and reading through ``org.apache.hadoop.fs.FileSystem`` in the driver's JVM: the
    ``storage.Store`` of Hadoop URIs (and of plain paths, on Hadoop's default file system)."""

    def __init__(self, spark):
        sc = getattr(spark, "sparkContext", spark)  # a session or its context
        self._fs = self  # the JVM's handles stay on the driver (Store.__getstate__ drops "_" names)
        self._jvm = sc._jvm
        self._conf = sc._jsc.hadoopConfiguration()

    def _call(self, uri: str, fn):
        from py4j.protocol import Py4JJavaError  # lazy: pyspark's, the optional [spark] extra (Spark calls only)

        try:
            path = self._jvm.org.apache.hadoop.fs.Path(uri)
            return fn(path.getFileSystem(self._conf), path)
        except Py4JJavaError as e:
            raise _fs_error(e, uri) from None

    def kind(self, location: str) -> str | None:
        def go(fs, path):
            if not fs.exists(path):
                return None
            return "dir" if fs.getFileStatus(path).isDirectory() else "file"
        return self._call(location, go)

    def listdir(self, location: str) -> list[str]:
        return self._call(location, lambda fs, path: sorted(c.getPath().getName() for c in fs.listStatus(path)))

    def walk(self, location: str) -> list[tuple[str, int]]:
        def go(fs, path):
            out = []
            it = fs.listFiles(path, True)
            while it.hasNext():
                st = it.next()
                out.append((st.getPath().toString(), int(st.getLen())))
            return sorted(out)
        return self._call(location, go)

    def read(self, location: str, limit: int | None = None) -> bytes:
        def go(fs, path):
            stream = fs.open(path)
            try:
                n = fs.getFileStatus(path).getLen() if limit is None else min(limit, fs.getFileStatus(path).getLen())
                return bytes(stream.readNBytes(int(n)))
            finally:
                stream.close()
        return self._call(location, go)

    def open(self, location: str, offset: int = 0, length: int | None = None):
        """The file's bytes from ``offset``, read whole: backup sets are read by the driver through
        waldecode's own stores (local paths, s3://), never through Hadoop."""
        if self.kind(location) != "file":
            raise FileNotFoundError(location)
        data = self.read(location)
        return io.BytesIO(data[offset:] if length is None else data[offset:offset + length])


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
        return SegmentFileError(f"no such file or directory: {uri}")
    return SegmentFileError(f"could not read {uri} through Hadoop: {cls.rsplit('.', 1)[-1]}: {msg}")


def discover_hadoop(spark, paths, timeline: int | None = None,
                    options: InputOptions = DEFAULT_OPTIONS) -> HadoopSegmentSet:
    """``segments.discover`` for URIs (and plain paths, which Hadoop resolves on its default file system):
    the same layouts and rules, through Hadoop's file systems."""
    return _copy(discover(paths, timeline, options, store=HadoopFS(spark)))
