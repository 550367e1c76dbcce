"""WAL in object storage: pgBackRest archives to an S3 server, and waldecode reads ``s3://`` as the server printed.

An S3-compatible server on 127.0.0.1 (tests/support/s3server.py: moto over TLS, Signature V4 checked)
holds a pgBackRest repository that a throw-away PostgreSQL 15 cluster's ``archive_command``
(``pgbackrest archive-push``, lz4) fills; the same push writes a local copy of the repository (repo2).
A catalog snapshot and a test_decoding slot come first, then a workload over several 1 MB segments (a
transaction across two of them, DDL, a logical message).  Expected outputs are the server's: the
slot's rows (peeked) and ``pg_waldump`` over a copy of ``pg_wal``.

Before the slot, pgBackRest backs the cluster up into the bucket: a full set (in bundles), then after
DDL an incremental one (its own files plain, the rest referenced in the full set).  ``catalog --backup
s3://...`` must write, for each set, the snapshot ``catalog --backup`` takes from a local copy of the
same repository, field for field; ``decode --catalog s3://bucket/repo s3://bucket/repo`` the slot's bytes;
a set whose manifest lists a file the bucket does not hold, one error line naming it.  ``table --backup
s3://...`` the rows the same set downloaded gives.

``waldecode decode`` from the repository root and from ``archive/<stanza>`` in the bucket must write the
slot's bytes, and ``inspect`` print pg_waldump's (the README's ``inspect --endpoint-url`` example, run
as written over the whole repository, holds pg_waldump's lines as one block).  The slot's segments are
also in the bucket in WAL-G's layout: the README's ``decode --catalog snapshots/ --end-time`` example on
that prefix prints the slot's rows up to the commit at that time.  Segments are fetched ahead on the
store's threads, each once, within the window ``--prefetch`` sets; the store travels pickled (as to
Spark tasks) without its client; credentials come from a profile as well as the environment.  Wrong keys, a missing bucket
and an endpoint that does not answer are one line on stderr and a non-zero exit, with no output file.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

import backup_tools as bt
from waldecode.cli import main

pytestmark = [pytest.mark.server, pytest.mark.slow]

DB = "objstore"
STANZA = "main"
BUCKET = "wal"
REPO = "/pgbackrest"  # repo1-path: the keys' prefix in the bucket
WALG = "/walg/prod"  # WAL-G's prefix in the same bucket: the slot's segments as wal-g wal-push stores them

SCHEMA = bt.WORKLOAD_SCHEMA
# between the full and the incremental backup: decoding the workload with the full set's catalog would
# miss the column
DDL_INCR = """
ALTER TABLE events ADD COLUMN extra int DEFAULT 7;
CREATE TABLE side (k int PRIMARY KEY, v text);
"""

# A pg_switch_wal() after each part
WORKLOAD = [
    *bt.WORKLOAD_PARTS,
    ["ALTER TABLE acct ADD COLUMN note text",
     "UPDATE acct SET note = 'noted ' || id WHERE id % 4 = 0",
     "BEGIN", "INSERT INTO acct VALUES (102, 'last', 2, 'x')",
     "SELECT pg_logical_emit_message(true, 'objstore', 'the end')", "COMMIT"],
]


@dataclass
class Archive:
    s3: object                # s3server.S3Server
    base: Path
    catalog: Path
    local_repo: Path          # repo2: the same archive on local disk
    restart_lsn: str
    confirmed_lsn: str
    end: str
    expected: bytes           # the slot's rows, as pg_recvlogical -f writes them
    timed: list               # the same rows peeked with include-timestamp (the commit times)
    waldump: bytes            # pg_waldump from restart_lsn to end
    segments: list
    sets: dict                # "full", "incr" -> the set's label
    local_copy: Path          # the bucket's backup/ keys, downloaded: the same sets on local disk

    @property
    def url(self) -> str:
        return f"s3://{BUCKET}{REPO}"

    @property
    def walg_url(self) -> str:
        return f"s3://{BUCKET}{WALG}"

    def store_args(self) -> list[str]:
        return ["--endpoint-url", self.s3.endpoint_url, "--no-verify-tls"]


@pytest.fixture(scope="module")
def archive():
    from s3server import S3Server, missing_modules

    if bt.missing_tools("pgbackrest", "openssl"):
        pytest.skip("pgbackrest or openssl missing (./dev test installs them)")
    if missing_modules():
        pytest.skip(f"missing Python packages: {', '.join(missing_modules())} (pip install -e '.[test]')")
    pytest.importorskip("obstore")
    from waldecode.testing.cluster import Cluster, ClusterError

    base = bt.server_tempdir("waldecode-objstore")
    try:
        with S3Server(buckets=[BUCKET]) as s3:
            try:
                c = Cluster(15, settings={"archive_mode": "on", "archive_command": "", "wal_keep_size": "64MB"})
                c.__enter__()
            except ClusterError as e:
                pytest.skip(f"PostgreSQL 15 is not available: {e}")
            try:
                yield _build(c, s3, base)
            finally:
                c.__exit__(None, None, None)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _build(c, s3, base: Path) -> Archive:
    conf = base / "conf"
    conf.mkdir()
    bt.chown_to_server(conf)
    cfg = bt.pgbackrest_s3_config(conf, STANZA, s3, BUCKET, REPO, base / "local-repo", "lz4", c.pgdata,
                                  c.socket_dir, c.port)
    bt.pgbackrest(cfg, STANZA, "stanza-create")
    # pgBackRest's backup checks that archive_command holds "pgbackrest": it is in the script's name
    command = bt.archive_script(base / "pgbackrest-archive.sh", [bt.pgbackrest_push(cfg, STANZA)])
    c.sql("ALTER SYSTEM SET archive_command = '%s'" % command.replace("'", "''"))
    c.sql("SELECT pg_reload_conf()")
    c.sql(f"CREATE DATABASE {DB}")
    with c.connect(DB) as conn:
        conn.execute(SCHEMA)
    bt.pgbackrest(cfg, STANZA, "backup", "--repo=1", "--type=full", "--repo1-bundle")
    with c.connect(DB) as conn:
        conn.execute(DDL_INCR)
    bt.pgbackrest(cfg, STANZA, "backup", "--repo=1", "--type=incr")
    info = json.loads(bt.pgbackrest(cfg, STANZA, "info", "--repo=1", "--output=json").stdout)
    sets = {b["type"]: b["label"] for b in info[0]["backup"]}
    local_copy = _download(s3, f"{REPO.strip('/')}/backup/", base / "s3-copy")
    catalog = base / "catalog.json"
    assert main(["catalog", "--dsn", f"host={c.socket_dir} port={c.port} user=postgres dbname={DB}",
                 "-o", str(catalog)]) == 0
    with c.connect(DB) as conn:
        conn.execute("CHECKPOINT")
        conn.execute("SELECT pg_create_logical_replication_slot('objstore', 'test_decoding')")
        restart, confirmed = conn.execute("SELECT restart_lsn::text, confirmed_flush_lsn::text "
                                          "FROM pg_replication_slots WHERE slot_name = 'objstore'").fetchone()
        for part in WORKLOAD:
            for s in part:
                conn.execute(s)
            conn.execute("SELECT pg_switch_wal()")
        conn.execute("INSERT INTO acct VALUES (103, 'after the last switch', 3)")
        end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('objstore', %s::pg_lsn, NULL)",
                            (end,)).fetchall()
        timed = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('objstore', %s::pg_lsn, NULL, "
                             "'include-timestamp', '1')", (end,)).fetchall()
        first, last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn), pg_walfile_name(%s::pg_lsn)",
                                   (restart, end)).fetchone()
        conn.execute("SELECT pg_switch_wal()")
    bt.wait_archived(c)
    segments = [f.name for f in sorted(c.waldir.iterdir()) if len(f.name) == 24 and first <= f.name <= last]
    pg_wal_copy = c.archive_wal(base / "pg_wal-copy", first, last)
    bt.chown_to_server(pg_wal_copy)
    waldump = c.run_bin("pg_waldump", "--path", pg_wal_copy, "--start", restart, "--end", end, text=False).stdout
    # the same segments in WAL-G's layout (lz4), under another prefix of the bucket
    import obstore

    walg = bt.walg_layout(base / "walg", pg_wal_copy, "lz4")
    for f in sorted(p for p in walg.rglob("*") if p.is_file()):
        obstore.put(_bucket(s3), f"{WALG.strip('/')}/{f.relative_to(walg)}", f.read_bytes())
    return Archive(s3=s3, base=base, catalog=catalog, local_repo=base / "local-repo", restart_lsn=restart,
                   confirmed_lsn=confirmed, end=end, expected=b"".join(bytes(r[0]) + b"\n" for r in rows),
                   timed=[bytes(r[0]).decode() for r in timed],
                   waldump=waldump, segments=segments, sets=sets, local_copy=local_copy)


def _bucket(s3):
    from obstore.store import S3Store

    return S3Store(BUCKET, endpoint=s3.endpoint_url, region=s3.region, access_key_id=s3.access_key,
                   secret_access_key=s3.secret_key, client_options={"allow_invalid_certificates": True})


def _download(s3, prefix: str, dest: Path) -> Path:
    """The keys under ``prefix`` written below ``dest`` (a local repository holding the same files); returns
    ``dest``/``REPO``."""
    import obstore

    store = _bucket(s3)
    for chunk in obstore.list(store, prefix):
        for o in chunk:
            path = dest / o["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(bytes(obstore.get(store, o["path"]).bytes()))
    return dest / REPO.strip("/")


@pytest.fixture
def aws(archive, monkeypatch, tmp_path):
    """The environment a user of the store has: its keys and region, no profile, no endpoint variable."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
                 "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws of the machine's
    for name, value in archive.s3.env().items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def _cli(argv, capfdbinary) -> tuple[int, bytes, list[str]]:
    status = main([str(x) for x in argv])
    sys.stdout.flush()
    out, err = capfdbinary.readouterr()
    return status, out, err.decode("utf-8", "replace").splitlines()


def _decode(a: Archive, url: str, out: Path, tmp_path: Path, capfdbinary, *extra):
    return _cli(["decode", "--catalog", a.catalog, "--start-lsn", a.confirmed_lsn, "--end-lsn", a.end,
                 "--output", out, "--quiet", "--spill-dir", tmp_path, *a.store_args(), *extra, url], capfdbinary)


# -- the harness ----------------------------------------------------------------------------------

def test_repository_is_in_the_bucket(archive, aws):
    """pgBackRest wrote its repository into the bucket (and the same files to the local repo2)."""
    import obstore
    from obstore.store import S3Store

    a = archive
    assert len(a.segments) >= 4 and a.expected.count(b"table public.events: INSERT:") == 6000
    store = S3Store(BUCKET, endpoint=a.s3.endpoint_url, client_options={"allow_invalid_certificates": True})
    keys = {o["path"] for chunk in obstore.list(store, REPO.strip("/")) for o in chunk}
    local = {str(p.relative_to(a.local_repo)) for p in a.local_repo.rglob("*") if p.is_file()}
    archived = {k.split("/archive/", 1)[1] for k in keys if "/archive/" in k}
    assert f"{STANZA}/archive.info" in archived
    for seg in a.segments:
        assert any(k.rsplit("/", 1)[1].startswith(seg + "-") and k.endswith(".lz4") for k in keys), seg
    assert archived <= {k.split("archive/", 1)[1] for k in local if k.startswith("archive/")}


# -- s3:// decodes as the slot and inspects as pg_waldump ------------------------------------------

@pytest.mark.parametrize("form", ["repository", "archive/<stanza>"])
def test_decode_equals_slot(archive, aws, form, tmp_path, capfdbinary):
    a = archive
    url = a.url if form == "repository" else f"{a.url}/archive/{STANZA}"
    out = tmp_path / "out"
    status, _, err = _decode(a, url, out, tmp_path, capfdbinary)
    assert (status, [ln for ln in err if "note:" not in ln]) == (0, []), err
    assert out.read_bytes() == a.expected


def test_decode_local_copy_equals_slot(archive, aws, tmp_path, capfdbinary):
    """The same archive on local disk (repo2) decodes the same: the throughput comparison's baseline."""
    a = archive
    out = tmp_path / "out"
    status, _, err = _decode(a, str(a.local_repo), out, tmp_path, capfdbinary)
    assert (status, [ln for ln in err if "note:" not in ln]) == (0, []), err
    assert out.read_bytes() == a.expected


@pytest.mark.parametrize("prefetch", ["8", "0"])
def test_inspect_equals_pg_waldump(archive, aws, prefetch, capfdbinary):
    a = archive
    status, out, err = _cli(["inspect", "--quiet", "--start-lsn", a.restart_lsn, "--end-lsn", a.end,
                             *a.store_args(), "--prefetch", prefetch, a.url], capfdbinary)
    assert (status, err) == (0, []), err
    assert out == a.waldump


def test_documented_inspect_of_a_bucket(archive, aws, capfdbinary):
    """``inspect --endpoint-url URL s3://BUCKET/REPO`` as the README shows it, the module's S3 server for its
    endpoint and the repository in the bucket for its URL, the certificate not checked as in every run here
    (``--no-verify-tls``): the whole archive, in which pg_waldump's lines from the slot's restart to the
    end stand as one block."""
    from doc_commands import argv, lane_command

    a = archive
    cmd = lane_command("tests/live/test_object_store.py::test_documented_inspect_of_a_bucket")
    args, _ = argv(cmd, {"https://minio.internal:9000": a.s3.endpoint_url, "s3://backups/pgbackrest": a.url})
    assert a.url in args and a.s3.endpoint_url in args, args
    status, out, err = _cli([*args, "--no-verify-tls"], capfdbinary)
    assert status == 0 and len(err) == 1 and err[0].startswith("waldecode: end of WAL at "), err
    assert a.waldump and a.waldump in out
    assert out.startswith(b"rmgr: ") and out.index(a.waldump) > 0  # from the archive's first segment on


def test_documented_decode_of_a_walg_prefix(archive, aws, tmp_path, capfdbinary):
    """``decode --catalog snapshots/ --end-time T s3://BUCKET/PREFIX`` as the README shows it, run where
    ``snapshots/`` holds the module's snapshot (taken before the slot, inside the first segment the WAL-G
    prefix holds), the WAL-G prefix in the bucket for its URL, the module's endpoint added (the documents'
    bucket is AWS's), and for its time the commit time the slot printed of the 6,000-row transaction: read
    from the prefix's first segment, the slot's rows up to that commit."""
    from doc_commands import argv, lane_command
    from td_rows import timed_transactions

    a = archive
    cmd = lane_command("tests/live/test_object_store.py::test_documented_decode_of_a_walg_prefix")
    txns, current = timed_transactions(a.timed)
    assert "".join(row + "\n" for _t, rows in txns for row in rows + current).encode() == a.expected
    (bulk,) = [i for i, (_t, rows) in enumerate(txns) if any(r.startswith("table public.events: INSERT:") for r in rows)]
    args, _ = argv(cmd, {"s3://backups/walg/prod": a.walg_url, "2026-11-27 14:05+01": txns[bulk][0]})
    assert a.walg_url in args and "snapshots/" in args, args
    (tmp_path / "snapshots").mkdir()
    shutil.copy(a.catalog, tmp_path / "snapshots" / "catalog.json")
    aws.chdir(tmp_path)
    status, out, err = _cli([*args, *a.store_args()], capfdbinary)
    assert status == 0, err
    # the one snapshot is taken after the first segment's start, with no catalog change in between; and the
    # next transaction's first record was read before its commit, past the end time (as recovery leaves it)
    said = [ln for ln in err if "is still open at the end of the WAL read" not in ln]
    assert len(said) == 1 and re.match(r"waldecode: catalog snapshot snapshots/catalog\.json taken at \S+ \(the "
                                       r"earliest; every one is after the start \S+\)$", said[0]), err
    assert out.decode() == "".join(row + "\n" for _t, rows in txns[:bulk + 1] for row in rows)


# -- fetching ahead -------------------------------------------------------------------------------

def _record_gets(monkeypatch) -> list:
    """Every whole-object GET of the S3 store: (object name, thread name)."""
    from waldecode.wal import objectstore

    gets = []
    real = objectstore.S3Store._get

    def get(self, location):
        gets.append((location.rsplit("/", 1)[1], threading.current_thread().name))
        return real(self, location)

    monkeypatch.setattr(objectstore.S3Store, "_get", get)
    return gets


@pytest.mark.parametrize("prefetch", [8, 0])
def test_segments_fetched_ahead_once_each(archive, aws, prefetch, capfdbinary):
    a = archive
    gets = _record_gets(aws)
    status, out, err = _cli(["inspect", "--quiet", "--start-lsn", a.restart_lsn, "--end-lsn", a.end,
                             *a.store_args(), "--prefetch", prefetch, a.url], capfdbinary)
    assert (status, out == a.waldump) == (0, True), err
    segment_gets = [(name[:24], thread) for name, thread in gets if name[:24] in a.segments]
    assert sorted(name for name, _ in segment_gets) == a.segments  # every segment of the range, once
    threads = {thread for _, thread in segment_gets}
    if prefetch:
        assert all(t.startswith("waldecode-fetch") for t in threads), threads
        assert len(threads) > 1  # concurrently
    else:  # fetched when they are read (by the reader, or the thread decompressing ahead of it)
        assert not any(t.startswith("waldecode-fetch") for t in threads), threads


def test_prefetch_window_is_bounded(archive, aws):
    """At most ``prefetch`` files are on their way ahead of the last one read."""
    from waldecode.wal.segments import discover
    from waldecode.wal.storage import InputOptions

    a = archive
    segs = discover([a.url], options=InputOptions(endpoint_url=a.s3.endpoint_url, verify_tls=False, prefetch=2))
    first = segs.first_segno
    paths = [str(segs.files[n].path) for n in range(first, segs.last_segno + 1)]
    assert len(paths) >= 4
    # the store alone (SegmentSet.prefetch also starts a thread that reads ahead through it)
    store = segs.store
    store.prefetch(paths)
    # the first file may be there already (its first page told the cluster; compressed, it was read whole)
    assert set(store._fetched) <= set(paths[:2]) and paths[1] in store._fetched
    assert store.read(paths[0])
    assert set(store._fetched) <= set(paths[1:3]) and paths[2] in store._fetched


def test_store_travels_pickled_without_its_client(archive, aws):
    """As to a Spark task: the SegmentSet and its store pickle without connections or fetched bytes, and
    the copy reads the same segment."""
    from waldecode.wal.segments import discover
    from waldecode.wal.storage import InputOptions

    a = archive
    segs = discover([a.url], options=InputOptions(endpoint_url=a.s3.endpoint_url, verify_tls=False))
    segs.prefetch(segs.first_segno, segs.last_segno)
    blob = pickle.dumps(segs)
    assert len(blob) < 64 * 1024  # no segment bytes in it
    copy = pickle.loads(blob)
    assert not copy.store._clients and not copy.store._fetched
    n = segs.first_segno + 1
    assert copy.load(n)[0] == segs.load(n)[0]


def test_credentials_from_a_profile(archive, aws, tmp_path, capfdbinary):
    a = archive
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = WRONGKEY\naws_secret_access_key = wrong\n\n"
                     f"[waldecode-ci]\naws_access_key_id = {a.s3.access_key}\n"
                     f"aws_secret_access_key = {a.s3.secret_key}\n")
    aws.delenv("AWS_ACCESS_KEY_ID")
    aws.delenv("AWS_SECRET_ACCESS_KEY")
    aws.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    aws.setenv("AWS_PROFILE", "waldecode-ci")
    argv = ["inspect", "--quiet", "--start-lsn", a.restart_lsn, "--end-lsn", a.end, *a.store_args(), a.url]
    status, out, err = _cli(argv, capfdbinary)
    assert (status, err, out == a.waldump) == (0, [], True)
    aws.delenv("AWS_PROFILE")  # the default profile's keys are wrong
    status, out, err = _cli(argv, capfdbinary)
    assert (status, out) == (1, b"") and len(err) == 1 and "InvalidAccessKeyId" in err[0], err


# -- bad input: one line, a non-zero exit, nothing written -------------------------------------------

def _bad(a: Archive, aws, case: str) -> tuple[str, list[str], str]:
    """The URL, options and the words the one error line must hold."""
    if case == "wrong secret":
        aws.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        return a.url, a.store_args(), "access denied: the request signature does not match"
    if case == "unknown key":
        aws.setenv("AWS_ACCESS_KEY_ID", "AKIANOTKNOWN")
        return a.url, a.store_args(), "access denied: the access key is not known"
    if case == "no credentials":
        aws.delenv("AWS_ACCESS_KEY_ID")
        aws.delenv("AWS_SECRET_ACCESS_KEY")
        # where the instance role would be asked last: a port that refuses at once, on any machine
        aws.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")
        return a.url, a.store_args(), "no credentials"
    if case == "missing bucket":
        return f"s3://no-such-bucket{REPO}", a.store_args(), "no such bucket 'no-such-bucket'"
    if case == "missing prefix":
        return f"s3://{BUCKET}/no/such/prefix", a.store_args(), "no such file or directory"
    if case == "certificate checked":
        return a.url, ["--endpoint-url", a.s3.endpoint_url], "TLS certificate"
    if case == "endpoint down":
        return a.url, ["--endpoint-url", "https://127.0.0.1:9", "--no-verify-tls"], "cannot reach https://127.0.0.1:9"
    raise AssertionError(case)


BAD = ["wrong secret", "unknown key", "no credentials", "missing bucket", "missing prefix", "certificate checked",
       "endpoint down"]


@pytest.mark.parametrize("case", BAD)
def test_bad_store_input_is_one_line(archive, aws, case, tmp_path, capfdbinary):
    a = archive
    url, opts, words = _bad(a, aws, case)
    out = tmp_path / "out"
    status, stdout, err = _cli(["decode", "--catalog", a.catalog, "--start-lsn", a.confirmed_lsn, "--output", out,
                                "--quiet", *opts, url], capfdbinary)
    assert status != 0 and stdout == b"" and not out.exists(), err
    assert len(err) == 1 and err[0].startswith("waldecode: error: ") and words in err[0] and url in err[0], err


# -- backup sets in the bucket as catalog sources ---------------------------------------------------

def _snapshot(argv, out: Path, capfdbinary) -> tuple[int, list[str], dict | None]:
    status, _, err = _cli(["catalog", *argv, "-o", out], capfdbinary)
    return status, err, json.loads(out.read_text()) if out.exists() else None


@pytest.mark.parametrize("kind", ["full", "incr"])
def test_backup_set_snapshot_equals_local_copy(archive, aws, kind, tmp_path, capfdbinary):
    """``catalog --backup s3://...`` reads the set (bundles, references into the full set, lz4) as the same
    files on local disk read: the same snapshot, field for field."""
    a = archive
    label = a.sets[kind]
    status, err, remote = _snapshot(["--backup", a.url, "--backup-set", label, *a.store_args()],
                                    tmp_path / "s3.json", capfdbinary)
    assert status == 0 and remote is not None, err
    assert any(f"pgBackRest backup {label} ({kind})" in ln for ln in err), err
    status, err, local = _snapshot(["--backup", a.local_copy, "--backup-set", label], tmp_path / "local.json",
                                   capfdbinary)
    assert status == 0, err
    assert remote == local
    # the set's own catalog: the column added between the sets is there in the incremental one only
    text = json.dumps(remote)
    assert ('"extra"' in text) == (kind == "incr")


def test_backup_sets_listed_from_the_bucket(archive, aws):
    from waldecode.catalog.backups import find_backup, list_backups
    from waldecode.wal.storage import InputOptions

    a = archive
    options = InputOptions(endpoint_url=a.s3.endpoint_url, verify_tls=False)
    remote = list_backups(a.url, options=options)
    local = list_backups(a.local_copy)
    assert [(b.label, b.type) for b in remote] == [(a.sets["full"], "full"), (a.sets["incr"], "incr")]
    assert [(b.label, b.stop_lsn, b.stop_time, b.sysid) for b in remote] == \
        [(b.label, b.stop_lsn, b.stop_time, b.sysid) for b in local]
    incr = remote[1]
    assert find_backup(a.url, before_lsn=incr.stop_lsn - 1, options=options).label == a.sets["full"]
    assert find_backup(f"{a.url}/backup/{STANZA}/{incr.label}", options=options).label == incr.label


def test_decode_with_catalog_from_bucket_equals_slot(archive, aws, tmp_path, capfdbinary):
    """``decode --catalog s3://bucket/repo s3://bucket/repo``: the incremental set (the latest stopped before
    the start) is the catalog, and the output is the slot's."""
    a = archive
    out = tmp_path / "out"
    status, _, err = _cli(["decode", "--catalog", a.url, "--start-lsn", a.confirmed_lsn, "--end-lsn", a.end,
                           "--output", out, "--quiet", "--spill-dir", tmp_path, *a.store_args(), a.url], capfdbinary)
    said = [ln for ln in err if "note:" not in ln]
    assert status == 0 and len(said) == 1, err
    assert said[0].startswith(f"waldecode: catalog from pgBackRest backup {a.sets['incr']} (incr), stopped at "), err
    assert out.read_bytes() == a.expected


def test_set_with_missing_file_is_one_line(archive, aws, tmp_path, capfdbinary):
    """A set whose manifest lists files the bucket does not hold: one line naming the missing object."""
    import obstore

    a = archive
    label = a.sets["full"]  # its files in bundles, none referenced elsewhere
    manifest = (a.local_copy / "backup" / STANZA / label / "backup.manifest").read_bytes()
    broken = f"broken/backup/{STANZA}/{label}"
    obstore.put(_bucket(a.s3), f"{broken}/backup.manifest", manifest)
    url = f"s3://{BUCKET}/{broken}"
    out = tmp_path / "snap.json"
    status, stdout, err = _cli(["catalog", "--backup", url, *a.store_args(), "-o", out], capfdbinary)
    assert (status, stdout, out.exists()) == (1, b"", False), err
    assert len(err) == 2 and err[0].startswith("waldecode: catalog from"), err
    assert err[1].startswith(f"waldecode: error: s3://{BUCKET}/broken/backup/{STANZA}/") and \
        " is missing: the manifest " in err[1] and f"{url}/backup.manifest" in err[1], err


def test_table_from_the_bucket_equals_local_copy(archive, aws, tmp_path, capfdbinary):
    """``table --backup s3://...`` without a WAL path: the set chosen for the target (the incremental one,
    read from the bucket through its references into the bundled full set) and the WAL from the bucket's
    archive give the rows that the same set downloaded, with the local repo2's archive, gives."""
    a = archive
    at = ["--table", "acct", "--at", a.end, "--database", DB]
    status, remote, err = _cli(["table", "--backup", a.url, *at, *a.store_args()], capfdbinary)
    assert status == 0 and any(f"pgBackRest backup {a.sets['incr']} (incr)" in ln for ln in err), err
    status, local, err = _cli(["table", "--backup", a.local_copy, "--backup-set", a.sets["incr"], *at,
                               a.local_repo], capfdbinary)
    assert status == 0, err
    # the workload's last rows (the column added after the sets, the row after the last switch) are there
    assert remote == local and b"102\tlast\t2.00\tx\n" in remote and b"103\tafter the last switch" in remote
