"""Spark's JVM start-up: the driver's Java options, and a class-data archive that makes it faster.

A ``spark decode`` on one machine pays the driver JVM's start every run: loading and linking
Spark's classes is most of the 2.8 s its context took here.  HotSpot can map classes it
loaded once from an archive instead (application class-data sharing, JDK 13+ "dynamic
archive": ``-XX:ArchiveClassesAtExit`` writes it as a JVM exits, ``-XX:SharedArchiveFile``
maps it).  ``waldecode spark prepare`` writes one for this Java and this pyspark (a JVM run
through a small job, as ``spark decode`` runs it); the contexts ``context.spark_context`` starts with
a local master map it when it is there.

The archive binds the JVM to a class path without non-empty directories (HotSpot refuses
them: a directory's classes could change under the archive), so the driver's log4j settings
come as a file named by ``-Dlog4j2.configurationFile`` and ``SPARK_CONF_DIR`` is an empty
directory of ours.  HotSpot checks the archive itself (its JDK build, the class path's jars
with their sizes and times) and runs without it when it does not match; its warnings go to
stderr like every JVM message here: its default is stdout, which is the decoded output's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from ..errors import Error

#: the local driver JVM's options: it runs the tasks and lives for one run, so its JIT's top tier
#: and parallel GC threads cost more CPU than they save (measured: about half the JVM's CPU on 187 MB
#: of WAL)
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: every JVM message to stderr, warnings and up (unified logging's default is stdout: -Xlog)
STDERR_JVM_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr -XX:+DisplayVMOutputToStderr"

# Spark's console logging down to errors, one line each (its default profile prints warnings and
# stack traces): the driver's log4j2 configuration
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex{0}
"""

#: how long ``prepare`` waits for its JVM to write the archive and exit
PREPARE_TIMEOUT = 300


def _home() -> str:
    """This user's directory of Spark start-up files (log4j settings, the empty conf directory)."""
    d = os.path.join(tempfile.gettempdir(), f"waldecode-spark-{os.getuid()}")
    os.makedirs(os.path.join(d, "conf"), exist_ok=True)
    return d


def conf_dir() -> str:
    """An empty directory for ``SPARK_CONF_DIR``: on the class path, and empty as the archive needs."""
    return os.path.join(_home(), "conf")


def log4j_file() -> str:
    path = os.path.join(_home(), "log4j2.properties")
    if not os.path.exists(path):
        with open(path + f".{os.getpid()}", "w") as f:
            f.write(_LOG4J)
        os.replace(path + f".{os.getpid()}", path)
    return path


def driver_options(master: str, confs: dict) -> str:
    """``spark.driver.extraJavaOptions`` for a context: messages to stderr and log4j's file, then the
    user's options when given, else (local masters) ours and the archive when one fits."""
    opts = [STDERR_JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j_file()}"]
    given = confs.get("spark.driver.extraJavaOptions")
    if given is not None:
        return " ".join(opts + [given])  # the user's last: a later option wins
    if master.startswith("local"):
        opts.append(LOCAL_JVM_OPTIONS)
        archive = archive_path()
        if archive is not None and os.path.exists(archive) and _archive_fits(confs):
            opts.append(f"-XX:SharedArchiveFile={archive}")
    return " ".join(opts)


def _archive_fits(confs: dict) -> bool:
    """Whether the JVM's class path is the one the archive was written with: only Spark's jars and our
    empty conf directory (other entries come from these settings and variables)."""
    if os.environ.get("SPARK_CONF_DIR") != conf_dir():
        return False
    if any(os.environ.get(v) for v in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH", "SPARK_CLASSPATH")):
        return False
    return not any(k in confs for k in ("spark.driver.extraClassPath", "spark.jars", "spark.jars.packages"))


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def archive_path() -> str | None:
    """Where the archive of this Java and this pyspark is kept (None: no Java or no pyspark).  Its name
    carries a digest of both, so that another JDK or Spark gets its own."""
    java = _java()
    try:
        import pyspark  # lazy: 0.15 s and the optional [spark] extra; --help imports this module
    except ImportError:
        return None
    if java is None:
        return None
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    h = hashlib.sha256()
    st = os.stat(java)
    h.update(f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{pyspark.__version__}\0{LOCAL_JVM_OPTIONS}\0".encode())
    try:
        for name in sorted(os.listdir(jars)):
            h.update(f"{name}\0{os.path.getsize(os.path.join(jars, name))}\0".encode())
    except OSError:
        return None
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "waldecode", f"spark-classes-{h.hexdigest()[:16]}.jsa")


def prepare(quiet: bool = False) -> str:
    """Write the archive (``waldecode spark prepare``): a child process starts a local context as
    ``spark decode`` does, runs a job through a Python worker and stops; its JVM writes the classes
    it loaded as it exits, which is waited for; then the file is put in place whole.  Returns its path."""
    path = archive_path()
    if path is None:
        raise Error("no Java or no pyspark: install Java 17 and 'waldecode[spark]'")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    started = time.monotonic()
    child = subprocess.run([sys.executable, "-m", "waldecode.spark.classdump", tmp], capture_output=True,
                           text=True, timeout=PREPARE_TIMEOUT)
    if child.returncode != 0 or not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
        if os.path.exists(tmp):
            os.unlink(tmp)
        last = (child.stderr.strip().splitlines() or ["no message"])[-1]
        raise Error(f"the JVM did not write its class-data archive (exit status {child.returncode}): {last}")
    os.replace(tmp, path)
    if not quiet:
        print(f"waldecode: wrote {path} ({os.path.getsize(path) >> 20} MB, {time.monotonic() - started:.0f} s): "
              "contexts with a local master now map Spark's classes from it", file=sys.stderr)
    return path
