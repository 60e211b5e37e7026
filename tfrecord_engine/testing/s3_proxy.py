"""A loopback HTTP proxy in front of a real store: counts requests, adds latency, injects
faults.

A test or benchmark points its client at :attr:`FaultProxy.url` instead of the store's
endpoint. Every request is forwarded unchanged (headers included: an S3 client signs the
``Host`` it talks to, and the proxy passes that ``Host`` on, so a store checking
signatures accepts them), and logged with its method, path, byte range, status and
bytes returned: tests count what a reader asked the store for. On request it spoils the
next answers, with the fault ideas of :mod:`tfrecord_engine.testing.http_server`:

- :meth:`FaultProxy.fail`: an error status in place of the answer (503 with S3's
  ``SlowDown`` error body by default), without asking the store;
- :meth:`FaultProxy.cut`: the store's answer with its body cut half-way (the connection
  closed): a truncated body the client must not take for data;
- :meth:`FaultProxy.drop`: the connection closed before any answer;
- :attr:`FaultProxy.latency`: seconds added before each request is forwarded (a cloud
  store's time to first byte on a loopback one).

Faults apply to requests whose path contains ``match`` (an object key, say), so a
bucket listing or an index read can be left alone.

Example (not run here: it needs a store to forward to)::

    with proxy_to("http://127.0.0.1:8333") as proxy:
        proxy.fail(503, times=2, match="train-0")
        ...  # a reader pointed at proxy.url retries, then succeeds
        assert proxy.count("GET", ranged=True) == ...
"""

from __future__ import annotations

import contextlib
import http.client
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

__all__ = ["FaultProxy", "ProxiedRequest", "proxy_to"]

ProxyFault = Literal["status", "cut", "drop"]
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
# Headers of one hop, not of the request (RFC 9110 7.6.1), and Expect: the proxy answered
# the client's 100-continue itself and sends the body at once.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)
_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ProxiedRequest:
    """One request the proxy answered.

    Attributes:
        method: ``"GET"``, ``"HEAD"``, ``"PUT"`` ...
        path: the URL path and query.
        range: the half-open byte range asked for (``Range: bytes=a-b``), else ``None``.
        status: the status sent to the client (``0``: none, the connection was dropped).
        received: body bytes sent to the client.
        fault: the fault injected (``"503"``, ``"cut"``, ``"drop"``), else ``None``.
    """

    method: str
    path: str
    range: tuple[int, int] | None
    status: int
    received: int
    fault: str | None = None


@dataclass(slots=True)
class _Fault:
    kind: ProxyFault
    left: int | None
    status: int
    methods: frozenset[str]
    match: str


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    _upstream: http.client.HTTPConnection | None = None
    _answering = False

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the log is :attr:`FaultProxy.requests`."""

    def _log(self, status: int, received: int, fault: str | None) -> None:
        rng = None
        m = _RANGE.match(self.headers.get("Range", ""))
        if m is not None:
            end = int(m.group(2)) + 1 if m.group(2) else -1
            rng = (int(m.group(1)), end)
        entry = ProxiedRequest(self.command, self.path, rng, status, received, fault)
        with self.server.lock:
            self.server.log.append(entry)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

    def _send(self, body: bytes) -> http.client.HTTPResponse:
        for attempt in range(2):
            if self._upstream is None:
                self._upstream = http.client.HTTPConnection(*self.server.upstream, timeout=120)
            conn = self._upstream
            try:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in _HOP and name.lower() != "content-length":
                        conn.putheader(name, value)
                if body or self.command in {"PUT", "POST"}:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body or None)
                return conn.getresponse()
            except (ConnectionError, http.client.HTTPException):
                # The store closed an idle kept-alive connection: one fresh try.
                conn.close()
                self._upstream = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _forward(self) -> None:
        with self.server.lock:
            self.server.in_flight += 1
            self.server.most_in_flight = max(self.server.most_in_flight, self.server.in_flight)
        self._answering = False
        try:
            self._answer()
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
                if self._answering:
                    self.server.answering -= 1
                    self.server.answered.notify_all()

    def _start_answer(self, status: int, reason: str | None = None) -> None:
        """Sends the status line, marking the request as being answered until it is
        logged: the client may hold the whole body before this thread logs it."""
        with self.server.lock:
            self.server.answering += 1
        self._answering = True
        self.send_response_only(status, reason)

    def _answer(self) -> None:
        body = self._body()
        fault = self.server.take(self.command, self.path)
        if self.server.latency > 0:
            time.sleep(self.server.latency)
        if fault is not None and fault.kind == "drop":
            self._log(0, 0, "drop")
            self.close_connection = True
            return
        if fault is not None and fault.kind == "status":
            payload = _SLOWDOWN if fault.status == 503 and self.command != "HEAD" else b""
            self._start_answer(fault.status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self._log(fault.status, len(payload), str(fault.status))
            return
        resp = self._send(body)
        headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP]
        length = resp.getheader("Content-Length")
        whole: bytes | None = None
        if length is None and self.command != "HEAD":
            whole = resp.read()
            headers.append(("Content-Length", str(len(whole))))
        self._start_answer(resp.status, resp.reason)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        sent = 0
        if self.command == "HEAD":
            resp.read()
        elif whole is not None:
            self.wfile.write(whole)
            sent = len(whole)
        else:
            total = int(length or 0)
            stop = total // 2 if fault is not None and fault.kind == "cut" else total
            while sent < stop:
                chunk = resp.read(min(_CHUNK, stop - sent))
                if not chunk:
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
            if sent < total:
                # A cut body: the rest is never sent and the connection closes under it.
                self.close_connection = True
                if self._upstream is not None:
                    self._upstream.close()
                    self._upstream = None
        self._log(resp.status, sent, None if fault is None else fault.kind)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

    def finish(self) -> None:
        super().finish()
        if self._upstream is not None:
            self._upstream.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # clients open many connections at once (see http_server)

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.lock = threading.Lock()
        self.log: list[ProxiedRequest] = []
        self.faults: list[_Fault] = []
        self.latency = 0.0
        self.in_flight = 0
        self.most_in_flight = 0
        self.answering = 0  # requests whose answer began and is not logged yet
        self.answered = threading.Condition(self.lock)

    def settled(self) -> None:
        """Waits (the lock held) until every answer begun is logged, or 10 s have gone
        (a client that stopped reading a body must not hang the caller)."""
        self.answered.wait_for(lambda: self.answering == 0, timeout=10.0)

    def take(self, method: str, path: str) -> _Fault | None:
        with self.lock:
            for fault in self.faults:
                if method not in fault.methods or fault.match not in path:
                    continue
                if fault.left is not None:
                    fault.left -= 1
                    if fault.left == 0:
                        self.faults.remove(fault)
                return fault
        return None


class FaultProxy:
    """A running proxy; see :func:`proxy_to`.

    Attributes:
        url: ``http://127.0.0.1:<port>`` (no trailing slash).
    """

    def __init__(self, server: _Server) -> None:
        self._server = server
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"

    @property
    def latency(self) -> float:
        """Seconds slept before forwarding each request (default 0)."""
        return self._server.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._server.latency = float(seconds)

    @property
    def requests(self) -> list[ProxiedRequest]:
        """Every request answered so far, in order (an answer under way when this is
        asked, whose body the client may already hold, is waited for)."""
        with self._server.lock:
            self._server.settled()
            return list(self._server.log)

    def count(self, method: str = "GET", *, ranged: bool | None = None, match: str = "") -> int:
        """Requests with ``method`` whose path contains ``match`` (only ranged ones, or only
        whole-object ones, if asked)."""
        return sum(
            q.method == method
            and match in q.path
            and (ranged is None or (q.range is not None) == ranged)
            for q in self.requests
        )

    def received(self, match: str = "") -> int:
        """Body bytes sent to the client for requests whose path contains ``match``."""
        return sum(q.received for q in self.requests if match in q.path)

    @property
    def most_in_flight(self) -> int:
        """The most requests that were being answered at once since :meth:`reset`."""
        with self._server.lock:
            return self._server.most_in_flight

    def reset(self) -> None:
        """Forgets the requests answered so far (and :attr:`most_in_flight`); answers
        under way are waited for first, so that none is logged after the reset."""
        with self._server.lock:
            self._server.settled()
            self._server.log.clear()
            self._server.most_in_flight = self._server.in_flight

    def _inject(
        self, kind: ProxyFault, times: int | None, status: int, methods: tuple[str, ...], match: str
    ) -> None:
        if times is not None and times < 1:
            raise ValueError(f"times must be >= 1 or None, got {times}")
        with self._server.lock:
            self._server.faults.append(_Fault(kind, times, status, frozenset(methods), match))

    def fail(
        self,
        status: int = 503,
        times: int | None = 1,
        *,
        methods: tuple[str, ...] = ("GET", "HEAD"),
        match: str = "",
    ) -> None:
        """Answers the next ``times`` matching requests (``None``: all, until :meth:`heal`)
        with ``status`` (503: S3's ``SlowDown`` error) without asking the store."""
        self._inject("status", times, status, methods, match)

    def cut(self, times: int | None = 1, *, match: str = "") -> None:
        """Sends only the first half of the body of the next ``times`` matching GETs."""
        self._inject("cut", times, 0, ("GET",), match)

    def drop(
        self, times: int | None = 1, *, methods: tuple[str, ...] = ("GET", "HEAD"), match: str = ""
    ) -> None:
        """Closes the connection without an answer to the next ``times`` matching requests."""
        self._inject("drop", times, 0, methods, match)

    def heal(self) -> None:
        """Removes every injected fault not used up yet, and the latency."""
        with self._server.lock:
            self._server.faults.clear()
        self._server.latency = 0.0


@contextlib.contextmanager
def proxy_to(upstream_url: str) -> Iterator[FaultProxy]:
    """Runs a proxy to the plain-HTTP ``upstream_url`` on a free loopback port.

    Raises:
        ValueError: ``upstream_url`` is not ``http://host:port`` (TLS is not proxied).
    """
    parts = urllib.parse.urlsplit(upstream_url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"can only proxy a plain http:// endpoint, got {upstream_url!r}")
    server = _Server((parts.hostname, parts.port or 80))
    thread = threading.Thread(target=server.serve_forever, name="s3-proxy", daemon=True)
    thread.start()
    try:
        yield FaultProxy(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
