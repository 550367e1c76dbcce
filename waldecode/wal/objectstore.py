"""WAL in object storage: ``s3://bucket/prefix`` locations as a ``storage.Store``, fetched ahead.

Owns talking to S3 and S3-compatible stores (MinIO, Ceph, moto...): which client, credentials and
endpoint, what a "directory" is (a key prefix: ``s3://b/p`` is a directory when a key starts with
``p/``), listing and reading objects, and fetching segments ahead of the reader on a thread pool so
that decoding is not bound by the store's latency.  Errors are one line naming the location
(``s3://bucket/prefix: access denied ...``).  Hands ``archive`` and ``segments`` what any ``Store``
hands them: kinds, listings with sizes, and bytes; and the catalog's backup readers streams of a
file's bytes, fetched by ranged requests as they are read (``open``).

The client is obstore (Rust's ``object_store`` crate), chosen by measuring it against boto3 and
s3fs on the test server of tests/support/s3server.py (moto over TLS on 127.0.0.1, a 2-core machine,
two runs): listing 3,000 keys 0.9-1.2 s (client CPU 0.06 s) against boto3's 1.6-1.9 s (0.4-0.5 s)
and s3fs's 1.7 s (0.4-0.7 s); 16 objects of 16 MiB one after another 305-559 MiB/s against 188-331
(boto3) and 111-170 (s3fs); 8 at a time 452-541 MiB/s against 277-318 and 114-159, with the least
client CPU each time (the server, in Python, is the bound).  It releases the interpreter lock while
it waits, so the fetch-ahead threads cost the decoder nothing; it has no dependency to pin (s3fs
pins botocore against boto3's); it pickles nothing waldecode needs; and it speaks GCS and Azure too.

Credentials the usual way: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``)
in the environment; else the profile ``AWS_PROFILE`` names (or ``default``) in ``~/.aws/credentials``
and ``~/.aws/config`` (``AWS_SHARED_CREDENTIALS_FILE``, ``AWS_CONFIG_FILE``): its static keys, or
boto3's resolution of the rest (roles, SSO) when boto3 is installed; else web identity, the
container's or the instance's role, as object_store finds them.  The endpoint is
``--endpoint-url``, else ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``, else the profile's
``endpoint_url``, else AWS; an endpoint is addressed path-style (``https://host/bucket/key``).
"""

from __future__ import annotations

import configparser
import errno
import io
import os
import re
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from typing import BinaryIO

try:  # the optional [s3] extra; this module is imported only for s3:// locations, S3Store says what to install
    import obstore
    import obstore.store
except ImportError:
    obstore = None

from ..errors import Error, SegmentFileError, UsageError
from .storage import InputOptions, RangeReader, Store

# A retry after a dropped connection or a 503 is worth it; minutes of them are not
_RETRY = {"max_retries": 4, "retry_timeout": timedelta(seconds=60)}
_CONNECT_TIMEOUT = "10s"
_TIMEOUT = "120s"  # one request: 16 MiB must arrive within it (the default, 30 s, is 0.5 MiB/s)
# Files read whole that are kept: finding where reading starts reads the segments before the start,
# which the reader then reads again (local files stay in the page cache; these would be fetched again)
_KEEP = 4
# Bytes one ranged GET fetches when a file is read as a stream (a backup's files, Store.open)
_RANGE = 8 << 20


def _split(location: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ("bucket", "a/b")."""
    rest = location.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


class S3Store(Store):
    """Objects of S3 buckets, by ``s3://bucket/key`` locations (any number of buckets)."""

    scheme = "s3"

    def __init__(self, options: InputOptions):
        self.options = options
        if obstore is None:
            raise UsageError("reading s3:// URLs needs the obstore package: pip install 'waldecode[s3]'") from None
        self._reset()

    def _reset(self) -> None:
        # Everything starting with "_" stays behind when the store travels to a Spark task
        self._lock = threading.Lock()
        self._clients: dict = {}
        self._listings: dict = {}  # (bucket, dir key) -> ({file name: size}, {subdirectory names})
        self._pool: ThreadPoolExecutor | None = None
        self._fetched: dict[str, Future] = {}  # location -> its whole bytes, on their way
        self._recent: OrderedDict[str, bytes] = OrderedDict()  # the last _KEEP files read whole
        self._order: list[str] = []  # what prefetch was told will be read, in order
        self._index: dict[str, int] = {}
        self._next = 0  # the first of _order not yet submitted

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._reset()

    # -- the client ---------------------------------------------------------------------------------

    def _client(self, bucket: str, location: str):
        with self._lock:
            client = self._clients.get(bucket)
            if client is None:
                client = self._clients[bucket] = self._make_client(bucket, location)
            return client

    def _make_client(self, bucket: str, location: str):
        config, provider = _aws_settings(location)
        endpoint = (self.options.endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3")
                    or os.environ.get("AWS_ENDPOINT_URL") or config.pop("endpoint", None))
        client_options = {"connect_timeout": _CONNECT_TIMEOUT, "timeout": _TIMEOUT}
        if endpoint:
            if not re.match(r"^https?://", endpoint):
                raise UsageError(f"the endpoint URL {endpoint!r} is not an http:// or https:// URL")
            config["endpoint"] = endpoint
            # an endpoint named http:// is meant: a store on a private network, or a test
            client_options["allow_http"] = endpoint.startswith("http://")
        if not self.options.verify_tls:
            client_options["allow_invalid_certificates"] = True
        try:
            return obstore.store.S3Store(bucket, config=config, client_options=client_options,
                                         retry_config=_RETRY, credential_provider=provider)
        except Exception as e:  # obstore's configuration errors
            raise UsageError(f"{location}: {_reason(e, bucket, endpoint or 'AWS')}") from None

    def _endpoint(self) -> str:
        return (self.options.endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3")
                or os.environ.get("AWS_ENDPOINT_URL") or "AWS")

    def _call(self, location: str, what, *args, **kwargs):
        """Run an obstore call, its errors as one line naming ``location``."""
        try:
            return what(*args, **kwargs)
        except Error:
            raise
        except Exception as e:
            raise _error(location, e, self._endpoint()) from None

    # -- Store --------------------------------------------------------------------------------------

    def _listing(self, bucket: str, key: str, location: str):
        """({file name: size}, {subdirectory names}) directly under the prefix ``key/`` (cached)."""
        cached = self._listings.get((bucket, key))
        if cached is not None:
            return cached

        got = self._call(location, obstore.list_with_delimiter, self._client(bucket, location), key or None)
        files = {_name(o["path"]): o["size"] for o in got["objects"]}
        dirs = {_name(p) for p in got["common_prefixes"]}
        self._listings[(bucket, key)] = files, dirs
        return files, dirs

    def kind(self, location: str) -> str | None:
        bucket, key = _split(location)
        if not bucket:
            raise UsageError(f"{location}: no bucket in the URL (s3://bucket/prefix)")
        if not key:
            self._listing(bucket, "", location)  # the bucket exists (else an error says it does not)
            return "dir"
        parent, _, name = key.rpartition("/")
        # one listing of the parent answers for its siblings too: the layouts are recognised by them
        files, dirs = self._listing(bucket, parent, location)
        if name in dirs:
            return "dir"
        if name in files:
            return "file"
        return None

    def listdir(self, location: str) -> list[str]:
        bucket, key = _split(location)
        files, dirs = self._listing(bucket, key, location)
        return sorted({*files, *dirs})

    def walk(self, location: str) -> list[tuple[str, int]]:
        bucket, key = _split(location)
        client = self._client(bucket, location)
        out = []
        for chunk in self._call(location, lambda: list(obstore.list(client, key or None, chunk_size=1000))):
            out += [(f"s3://{bucket}/{o['path']}", o["size"]) for o in chunk]
        out.sort()
        return out

    def read(self, location: str, limit: int | None = None) -> bytes:
        with self._lock:
            i = self._index.get(location) if limit is None else None
            if i is not None:
                self._fill(i)  # the window moves on: this one is read
            data = self._recent.get(location)
            if data is not None:
                self._recent.move_to_end(location)
                return data if limit is None else data[:limit]
            fut = self._fetched.pop(location, None) if limit is None else None
        if limit is None:
            data = fut.result() if fut is not None else self._get(location)
            with self._lock:
                self._recent[location] = data
                while len(self._recent) > _KEEP:
                    self._recent.popitem(last=False)
            return data

        bucket, key = _split(location)
        try:
            return bytes(obstore.get_range(self._client(bucket, location), key, start=0, length=limit))
        except Error:
            raise
        except Exception as e:
            if "416" in str(e):  # a range of an empty object
                return b""
            raise _error(location, e, self._endpoint()) from None

    def _get(self, location: str) -> bytes:
        bucket, key = _split(location)
        client = self._client(bucket, location)
        return self._call(location, lambda: bytes(obstore.get(client, key).bytes()))

    def open(self, location: str, offset: int = 0, length: int | None = None) -> BinaryIO:
        """The object's bytes from ``offset`` as a stream fetching ``_RANGE`` bytes per request (a backup's
        files: a 1 GB relation segment is never fetched whole).  A key the listing of its prefix does not
        hold is ``FileNotFoundError``, as for a local file."""
        bucket, key = _split(location)
        parent, _, name = key.rpartition("/")
        files, _dirs = self._listing(bucket, parent, location)
        if name not in files:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), location)
        size = files[name]
        end = size if length is None else min(size, offset + length)
        raw = _Range(self, location, offset, max(0, end - offset))
        return io.BufferedReader(raw, buffer_size=max(1, min(_RANGE, raw.length)))

    def _get_range(self, location: str, start: int, length: int) -> bytes:
        bucket, key = _split(location)
        client = self._client(bucket, location)
        return self._call(location, lambda: bytes(obstore.get_range(client, key, start=start, length=length)))

    def prefetch(self, locations: list[str]) -> None:
        """Fetch these files concurrently, at most ``options.prefetch`` ahead of the last one read."""
        if self.options.prefetch <= 0:
            return
        with self._lock:
            keep = set(locations)
            for loc in [loc for loc in self._fetched if loc not in keep]:
                self._fetched.pop(loc).cancel()
            self._order = list(locations)
            self._index = {loc: i for i, loc in enumerate(self._order)}
            self._next = 0
            self._fill(-1)

    def _fill(self, last_read: int) -> None:
        """Submit the files of the window after ``last_read`` (an index of ``_order``); under _lock."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.options.prefetch, thread_name_prefix="waldecode-fetch")
            # files not yet being fetched are dropped when the store goes (an error, the end of a run)
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        self._next = max(self._next, last_read + 1)
        while self._next < len(self._order) and self._next <= last_read + self.options.prefetch:
            loc = self._order[self._next]
            self._next += 1
            if loc not in self._fetched and loc not in self._recent:
                self._fetched[loc] = self._pool.submit(self._get, loc)

    @staticmethod
    def parent(location: str) -> str:
        bucket, key = _split(location)
        return f"s3://{bucket}/{key.rpartition('/')[0]}".rstrip("/")

    def describe(self, location: str) -> str:
        what = {"dir": "directory", "file": "file"}.get(self.kind(location), "location")
        return f"{what} {location}"


class _Range(RangeReader):
    """``length`` bytes of an object from ``offset``, fetched by ranged GETs as they are read."""

    def __init__(self, store: S3Store, location: str, offset: int, length: int):
        super().__init__(offset, length)
        self._store = store
        self._location = location

    def _read_at(self, offset: int, n: int) -> bytes:
        data = self._store._get_range(self._location, offset, n)
        if not data:  # the object shrank since it was listed
            raise SegmentFileError(f"{self._location}: the object ends at {offset} bytes, its listing said "
                                   f"{self._offset + self.length}")
        return data


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


# -- credentials ----------------------------------------------------------------------------------

def _aws_settings(location: str) -> tuple[dict, object]:
    """obstore's S3 configuration from the profile, when the environment holds no keys: (config,
    credential provider or None).  Keys in the environment are obstore's own to read."""
    env = os.environ
    config: dict = {}
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE")
    creds = _ini(env.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"))
    conf = _ini(env.get("AWS_CONFIG_FILE", "~/.aws/config"))
    name = profile or "default"
    section = dict(conf.get(name if name == "default" else f"profile {name}", {}))
    section.update(creds.get(name, {}))
    if profile and not section:
        raise UsageError(f"{location}: AWS_PROFILE names the profile {profile!r}, which neither "
                         f"{env.get('AWS_SHARED_CREDENTIALS_FILE', '~/.aws/credentials')} nor "
                         f"{env.get('AWS_CONFIG_FILE', '~/.aws/config')} has")
    if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")) and section.get("region"):
        config["region"] = section["region"]
    if section.get("endpoint_url"):
        config["endpoint"] = section["endpoint_url"]
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return config, None
    if section.get("aws_access_key_id") and section.get("aws_secret_access_key"):
        config["access_key_id"] = section["aws_access_key_id"]
        config["secret_access_key"] = section["aws_secret_access_key"]
        if section.get("aws_session_token"):
            config["token"] = section["aws_session_token"]
        return config, None
    if section and any(k in section for k in ("role_arn", "sso_session", "sso_start_url", "credential_process",
                                              "web_identity_token_file")):
        try:  # lazy: boto3 costs 0.2 s, optional; only profiles with a role, SSO or a process need it
            import boto3
            from obstore.auth.boto3 import Boto3CredentialProvider
        except ImportError:
            raise UsageError(f"{location}: the AWS profile {name!r} gets its credentials from a role, SSO or a "
                             "process, which waldecode reads through boto3: pip install boto3 (or export "
                             "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)") from None
        return config, Boto3CredentialProvider(boto3.Session(profile_name=name))
    return config, None


def _ini(path: str) -> dict:
    p = configparser.RawConfigParser()
    try:
        p.read(os.path.expanduser(path))
    except configparser.Error:
        return {}
    return {s: dict(p.items(s)) for s in p.sections()}


# -- errors ---------------------------------------------------------------------------------------

_S3_CODES = {
    "InvalidAccessKeyId": "access denied: the access key is not known to the store (check AWS_ACCESS_KEY_ID or "
                          "the profile)",
    "SignatureDoesNotMatch": "access denied: the request signature does not match (check the secret key)",
    "AccessDenied": "access denied",
    "ExpiredToken": "access denied: the session token has expired",
    "InvalidToken": "access denied: the session token is not valid",
    "PermanentRedirect": "the bucket is in another region: set AWS_REGION",
    "AuthorizationHeaderMalformed": "the bucket is in another region: set AWS_REGION",
}


def _reason(e: Exception, bucket: str = "", endpoint: str = "AWS") -> str:
    """What went wrong, in one line, from obstore's message (which carries the S3 error and a debug dump)."""
    text = str(e)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    if code:
        if code.group(1) == "NoSuchBucket":
            return f"no such bucket {bucket!r} at {endpoint}"
        message = re.search(r"<Message>([^<]+)</Message>", text)
        known = _S3_CODES.get(code.group(1))
        if known:
            return f"{known} ({code.group(1)})"
        return f"{code.group(1)}: {message.group(1) if message else 'the store refused the request'}"
    # no keys anywhere: object_store asked the instance metadata service (or the container's) last
    if "/latest/api/token" in text or "/latest/meta-data/" in text or "169.254.170.2" in text:
        return ("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile "
                "in ~/.aws/credentials), or run where an instance or container role applies")
    cert = re.search(r"InvalidCertificate\(\s*(?:\w+\(\s*)*(\w+)", text)
    if cert:
        return (f"the TLS certificate of {endpoint} is not trusted ({cert.group(1)}); --no-verify-tls reads "
                "from a store with a self-signed certificate")
    os_error = re.search(r'message: "([^"]+)"', text)
    status = re.search(r"Server returned non-2xx status code: (\d{3} [^:]+)", text)
    if "error sending request" in text or "tcp connect error" in text or "dns error" in text:
        detail = os_error.group(1) if os_error else ("name not resolved" if "dns error" in text else "no answer")
        return f"cannot reach {endpoint}: {detail}"
    if status:
        return f"{endpoint} answered {status.group(1)}"
    if "timed out" in text.lower():
        return f"{endpoint} did not answer in time"
    return text.split("\n", 1)[0][:300]


def _error(location: str, e: Exception, endpoint: str) -> Error:
    if isinstance(e, FileNotFoundError):
        return SegmentFileError(f"{location}: no such object at {endpoint}")
    return SegmentFileError(f"{location}: {_reason(e, _split(location)[0], endpoint)}")
