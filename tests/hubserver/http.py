"""The HTTP side: the request handler (faults, latency, the request log), the threading server, and a request's context
(query, body, token, rights)."""

from __future__ import annotations

import json
import socket
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode, urlsplit

from .model import (
    RequestRecord,
    _encode_cursor,
    _Fault,
    _HTTPError,
    _json_response,
    _Repo,
    _Response,
    _Token,
)

if TYPE_CHECKING:
    from .server import HubServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"

    # Never log anything (the default logs request lines to stderr; headers are never logged anyway).
    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, delayed ACKs add ~40 ms per request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self, method: str) -> None:
        hub: HubServer = self.server.hub  # type: ignore[attr-defined]
        split = urlsplit(self.path)
        raw_path, query = split.path, split.query
        path = unquote(raw_path)
        body = self._read_body()
        fault = hub._take_fault(method, raw_path, path)
        quota = hub._quota_take(path)  # None, or (past the quota?, the RateLimit headers)
        # The record is logged on arrival and completed just before the last byte of the response is written,
        # so a client that has received its response always finds it complete in `HubServer.requests`.
        rec = RequestRecord(
            method=method,
            path=path,
            query=query,
            status=0,
            sent=0,
            received=len(body),
            raw_path=raw_path,
            range=self.headers.get("Range"),
            authenticated=self.headers.get("Authorization") is not None,
            fault=fault.kind if fault is not None else None,
            time=time.monotonic(),
        )
        hub._log(rec)
        try:
            if hub.latency:
                time.sleep(hub.latency)
            if fault is not None and fault.on_fire is not None:
                try:
                    fault.on_fire()
                except Exception:
                    hub.errors.append(traceback.format_exc())
            if fault is not None and fault.kind == "slow":
                time.sleep(fault.seconds)
            if fault is not None and fault.kind == "status":
                resp = hub._fault_response(fault)
            elif quota is not None and quota[0]:
                resp = _json_response({"error": "Rate limit reached (fake hub quota)"}, 429, quota[1])
            else:
                try:
                    resp = hub._route(method, raw_path, query, self.headers, body)
                except _HTTPError as e:
                    resp = hub._error_response(e)
                except Exception:
                    hub.errors.append(traceback.format_exc())
                    resp = _json_response({"error": "Internal server error (fake hub bug)"}, 500)
                if quota is not None:
                    resp.headers = [*resp.headers, *quota[1]]
            self._send(resp, rec, head_only=method == "HEAD", fault=fault)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _send(self, resp: _Response, rec: RequestRecord, *, head_only: bool, fault: _Fault | None) -> None:
        length = resp.length
        cut = fault is not None and fault.kind == "cut"
        if cut and (head_only or length == 0):
            # nothing to truncate: drop the connection without a response
            self.close_connection = True
            self._drop()
            return
        limit = 0 if head_only else length
        if cut:
            limit = fault.after_bytes if fault.after_bytes is not None else length // 2
            limit = max(0, min(limit, length - 1))
        self.send_response(resp.status)
        for key, value in resp.headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(length))
        rec.status, rec.sent = resp.status, limit
        if limit == 0 and not cut:
            self.end_headers()
            return
        self.end_headers()
        sent = 0
        try:
            for chunk in resp.iter_body():
                chunk = chunk[: limit - sent]
                if chunk:
                    self.wfile.write(chunk)
                    sent += len(chunk)
                if sent >= limit:
                    break
            self.wfile.flush()
        except OSError:
            rec.sent = sent
            raise
        if cut:
            self.close_connection = True
            self._drop()

    def _drop(self) -> None:
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet on client disconnects
        return


class _Ctx:
    """Per-request context: auth, query, body, base URL."""

    def __init__(self, hub: HubServer, method: str, raw_path: str, query: dict, headers: Any, body: bytes):
        self.hub, self.method, self.raw_path, self.query, self.headers, self.body = (
            hub,
            method,
            raw_path,
            query,
            headers,
            body,
        )
        self.base = f"http://{headers.get('Host') or f'{hub._host}:{hub.port}'}"
        self.token: _Token | None = None
        self.bad_token = False
        auth = headers.get("Authorization")
        if auth is not None:
            scheme, _, value = auth.partition(" ")
            with hub._lock:
                tok = hub._tokens.get(value.strip()) if scheme.lower() == "bearer" else None
            if tok is None:
                self.bad_token = True
            self.token = tok

    def q(self, key: str, default: str | None = None) -> str | None:
        values = self.query.get(key)
        return values[0] if values else default

    def json(self) -> dict:
        try:
            data = json.loads(self.body or b"{}")
        except ValueError:
            raise _HTTPError(400, "Invalid JSON body") from None
        if not isinstance(data, dict):
            raise _HTTPError(400, "JSON body must be an object")
        return data

    def require_token(self) -> _Token:
        if self.token is None:
            raise _HTTPError(401, "You must be authenticated to access this resource (no token sent)")
        return self.token

    def can_read(self, namespace: str) -> bool:
        return self.token is not None and namespace in self.token.namespaces

    def can_write(self, namespace: str) -> bool:
        return self.token is not None and self.token.write and namespace in self.token.namespaces

    def require_write(self, repo: _Repo) -> None:
        self.require_token()
        if not self.can_write(repo.namespace):
            raise _HTTPError(403, f"You don't have write access to {repo.repo_type} {repo.repo_id}")

    def next_link(self, cursor: Any, raw: bool = False) -> str:
        next_q = {k: v for k, v in self.query.items() if k != "cursor"}
        next_q["cursor"] = [str(cursor) if raw else _encode_cursor(int(cursor))]
        return f'<{self.base}{self.raw_path}?{urlencode(next_q, doseq=True)}>; rel="next"'
