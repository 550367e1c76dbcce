"""An S3-compatible server on 127.0.0.1 for the tests: moto's S3 behind werkzeug, with TLS and real keys.

Owns starting and stopping the server the object-store tests read from and pgBackRest writes to
(``S3Server``, a context manager).  It runs in a child process (``python s3server.py ...``) so that
the test process's decoding and the server do not share one interpreter lock, and serves moto's WSGI
application (``moto.server.create_backend_app`` behind ``DomainDispatcherApplication``) with werkzeug
over TLS (a self-signed certificate made by ``openssl req -x509``).  Two things moto's own server
does not do, the wrapper ``S3App`` does:

* every response is framed (``Content-Length``), and every TLS connection ends with a close_notify,
  as pgBackRest's HTTP client requires;
* requests are authenticated as S3 does: AWS Signature Version 4 over the headers, with one access
  key and its secret (``InvalidAccessKeyId``, ``SignatureDoesNotMatch``, ``AccessDenied`` otherwise),
  so that wrong credentials fail as they do against a real store.

Hands the tests an endpoint URL, the keys, the region, and the buckets it was asked to create.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, unquote

ACCESS_KEY = "WALDECODETESTKEY0001"
SECRET_KEY = "waldecode/test/secret/key/0000000000000"
REGION = "us-east-1"


def missing_modules() -> list[str]:
    """What the server needs that is not installed (the ``test`` extra installs it)."""
    import importlib.util

    return [m for m in ("moto", "werkzeug", "flask") if importlib.util.find_spec(m) is None]


class S3Server:
    """``with S3Server(buckets=["wal"]) as s3:`` an S3 endpoint at ``s3.endpoint_url`` (https, self-signed).

    ``s3.env()`` is the environment a client needs (keys, region; not the endpoint, which the tests
    give with ``--endpoint-url`` or pgBackRest's options).  ``s3.port``, ``s3.cert`` (PEM);
    ``s3.upload(bucket, {key: bytes})``; with ``log_requests``, ``s3.requests()`` lists what was asked;
    ``delay`` (seconds) holds every answer back, as a remote store's latency would.
    """

    def __init__(self, buckets=(), access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY,
                 region: str = REGION, log_requests: bool = False, delay: float = 0.0):
        self.buckets = list(buckets)
        self.log_requests, self.delay = log_requests, delay
        self.access_key, self.secret_key, self.region = access_key, secret_key, region
        self.port: int | None = None
        self._dir: Path | None = None
        self._proc: subprocess.Popen | None = None

    @property
    def endpoint_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_DEFAULT_REGION": self.region, "AWS_REGION": self.region, **extra}

    def __enter__(self) -> "S3Server":
        self._dir = Path(tempfile.mkdtemp(prefix="waldecode-s3"))
        self.cert, key = self._dir / "cert.pem", self._dir / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(self.cert)], check=True, capture_output=True)
        argv = [sys.executable, __file__, "--cert", str(self.cert), "--key", str(key),
                "--access-key", self.access_key, "--secret-key", self.secret_key, "--region", self.region]
        for b in self.buckets:
            argv += ["--bucket", b]
        if self.log_requests:
            argv.append("--log-requests")
        if self.delay:
            argv += ["--delay", str(self.delay)]
        # moto reads its settings from the environment at import: no AWS credentials of the caller's
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.log = self._dir / "server.log"
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        line = self._proc.stdout.readline()
        if not line.startswith("PORT "):
            self._proc.kill()
            self._proc.wait()
            raise RuntimeError(f"the S3 server did not start: {line}{self.log.read_text()[-2000:]}")
        self.port = int(line.split()[1])
        return self

    def requests(self) -> list[tuple[str, str, str]]:
        """(method, path, Range header or "-") of every request so far (``log_requests``)."""
        lines = self.log.read_text(errors="replace").splitlines()
        return [tuple(ln.split(" ", 2)) for ln in lines if ln.split(" ", 1)[0] in ("GET", "HEAD", "PUT", "POST",
                                                                                 "DELETE")]

    def upload(self, bucket: str, files: dict) -> None:
        """Put objects (key -> bytes) into a bucket, with the server's keys."""
        import obstore
        from obstore.store import S3Store

        store = S3Store(bucket, endpoint=self.endpoint_url, access_key_id=self.access_key,
                        secret_access_key=self.secret_key, region=self.region,
                        client_options={"allow_invalid_certificates": True})
        for key, data in files.items():
            obstore.put(store, key, data)

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


# -- the server process ---------------------------------------------------------------------------

def _error(start_response, status: str, code: str, message: str):
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()
    start_response(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def _uri_encode(s: str) -> str:
    return quote(s, safe="-_.~")


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3App:
    """moto's WSGI application, with S3's Signature V4 checked first and every response framed."""

    def __init__(self, app, access_key: str, secret_key: str, log_requests: bool = False, delay: float = 0.0):
        self.app, self.access_key, self.secret_key = app, access_key, secret_key
        self.log_requests, self.delay = log_requests, delay

    def __call__(self, environ, start_response):
        if self.delay:  # a remote store's latency, for throughput measurements
            time.sleep(self.delay)
        if self.log_requests:  # "METHOD PATH RANGE" per request, for tests that count what was read
            print(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("HTTP_RANGE", "-"),
                  file=sys.stderr, flush=True)
        denied = self._authenticate(environ)
        if denied is not None:
            return _error(start_response, "403 Forbidden", *denied)
        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers
            return lambda data: captured.setdefault("written", []).append(data)

        result = self.app(environ, capture)
        try:
            body = b"".join([*captured.get("written", []), *result])
        finally:
            getattr(result, "close", lambda: None)()
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "transfer-encoding"]
        # HEAD answers keep the object's length, which moto sets; everything else is framed by its body
        if environ["REQUEST_METHOD"] != "HEAD":
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body))))
        elif not any(k.lower() == "content-length" for k, _ in headers):
            headers.append(("Content-Length", "0"))
        start_response(captured["status"], headers)
        return [] if environ["REQUEST_METHOD"] == "HEAD" else [body]

    def _authenticate(self, environ):
        """None when the request is signed with our key (AWS4-HMAC-SHA256 in the Authorization header),
        else (error code, message) as S3 answers."""
        auth = environ.get("HTTP_AUTHORIZATION", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return "AccessDenied", "Access Denied"
        fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
        credential = fields.get("Credential", "").split("/")
        if credential[0] != self.access_key:
            return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
        date, region, service = credential[1:4]
        signed = fields.get("SignedHeaders", "").split(";")

        def header(name):
            if name == "content-type":
                return environ.get("CONTENT_TYPE", "")
            if name == "content-length":
                return environ.get("CONTENT_LENGTH", "")
            return environ.get("HTTP_" + name.upper().replace("-", "_"), "")

        raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or environ.get("PATH_INFO", "/")
        path, _, _ = raw.partition("?")
        query = environ.get("QUERY_STRING", "")
        params = []
        for item in query.split("&") if query else []:
            k, _, v = item.partition("=")
            params.append((_uri_encode(unquote(k)), _uri_encode(unquote(v))))
        canonical = "\n".join([
            environ["REQUEST_METHOD"], path, "&".join(f"{k}={v}" for k, v in sorted(params)),
            "".join(f"{h}:{' '.join(header(h).split())}\n" for h in signed), ";".join(signed),
            header("x-amz-content-sha256") or "UNSIGNED-PAYLOAD"])
        scope = "/".join(credential[1:])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", header("x-amz-date"), scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        key = _sign(_sign(_sign(_sign(("AWS4" + self.secret_key).encode(), date), region), service), "aws4_request")
        if not hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(),
                                   fields.get("Signature", "")):
            return ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
                    "you provided. Check your key and signing method.")
        return None


def serve(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--access-key", default=ACCESS_KEY)
    p.add_argument("--secret-key", default=SECRET_KEY)
    p.add_argument("--region", default=REGION)
    p.add_argument("--bucket", action="append", default=[])
    p.add_argument("--log-requests", action="store_true")
    p.add_argument("--delay", type=float, default=0.0, help="seconds every answer waits (a remote store's latency)")
    args = p.parse_args(argv)

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request (see --log-requests)

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for b in args.bucket:
        backend.create_bucket(b, args.region)
    app = S3App(DomainDispatcherApplication(create_backend_app), args.access_key, args.secret_key,
                args.log_requests, args.delay)
    server = make_server("127.0.0.1", args.port, app, threaded=True, ssl_context=(args.cert, args.key),
                         request_handler=MotoRequestHandler)
    plain_shutdown = server.shutdown_request

    def shutdown_request(request):
        # TLS close_notify before the TCP close: pgBackRest takes a connection closed without it for an
        # error (werkzeug closes after every PUT), where it would open a new one
        try:
            request.settimeout(1)
            request.unwrap()
        except (OSError, ValueError):
            pass
        plain_shutdown(request)

    server.shutdown_request = shutdown_request
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"PORT {server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    serve()
