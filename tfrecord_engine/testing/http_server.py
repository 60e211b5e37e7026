"""A loopback HTTP file server with ``Range`` support that counts requests and
misbehaves on request.

The standard library's ``SimpleHTTPRequestHandler`` ignores ``Range`` headers (it always
sends whole files), so remote random access cannot be tested with it. This server
answers single byte ranges with ``206 Partial Content``, serves directory listings
(which fsspec's HTTP filesystem globs over) and logs every request, so tests can count
what a reader asked for. Files carry an ``ETag`` (from inode, size and modification
time, as nginx and Apache build theirs) and a ``Last-Modified`` date, so a file replaced
in the served folder is a new version to a client.

Faults, injected for the next N requests of a file (or for all of them until
:meth:`RangeServer.heal`): an error status (:meth:`RangeServer.fail`: ``503``,
``404`` ...), a body cut half-way by closing the connection (:meth:`RangeServer.cut`),
a connection closed before any answer (:meth:`RangeServer.drop`), and the whole file
with ``200`` in place of a ``206`` (:meth:`RangeServer.ignore_range`). Each logged
request names the fault it got.

Example:
    >>> import pathlib, tempfile, urllib.request
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "a.bin").write_bytes(b"0123456789")
    >>> with serve_directory(root) as server:
    ...     req = urllib.request.Request(server.url + "/a.bin", headers={"Range": "bytes=2-4"})
    ...     with urllib.request.urlopen(req) as r:
    ...         (r.status, r.read())
    ...     [(q.method, q.range) for q in server.requests]
    (206, b'234')
    [('GET', (2, 5))]
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["LoggedRequest", "RangeServer", "serve_directory"]

FaultKind = Literal["status", "cut", "drop", "whole"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request the server answered.

    Attributes:
        method: ``"GET"``, ``"HEAD"``, ``"PUT"`` ...
        path: the URL path.
        range: the half-open byte range served for a ``Range`` request, else ``None``
            (also ``None`` for a ranged request that a fault answered otherwise).
        fault: the fault injected into the answer: ``"503"`` (a status), ``"cut"``,
            ``"drop"``, ``"whole"``; ``None`` for a normal answer.
    """

    method: str
    path: str
    range: tuple[int, int] | None
    fault: str | None = None


@dataclass(slots=True)
class _Fault:
    kind: FaultKind
    left: int | None  # answers still to spoil; None: until healed
    status: int
    methods: frozenset[str]


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real object stores
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read :attr:`RangeServer.requests` instead."""

    def _log(self, served: tuple[int, int] | None, fault: str | None = None) -> None:
        with self.server.lock:
            self.server.log.append(LoggedRequest(self.command, self.path, served, fault))

    def _faulty(self, ranged: bool) -> bool:
        """Answers with the next injected status or drop that applies (``True``), if any."""
        fault = self.server.take(self.command, ranged)
        if fault is None:
            return False
        if fault.kind == "drop":
            self._log(None, "drop")
            self.close_connection = True  # closed with nothing sent: a reset to the client
            return True
        self._log(None, str(fault.status))
        self.send_response(fault.status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def _file_headers(self, st: os.stat_result) -> None:
        self.send_header("ETag", f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"')
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))

    def _serve(self, body: bool) -> None:
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            self._log(None)
            if body:
                super().do_GET()
            else:
                super().do_HEAD()
            return
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            self._log(None)
            self.send_error(404, "File not found")
            return
        with f:
            st = os.fstat(f.fileno())
            size = st.st_size
            start, end = 0, size
            header = self.headers.get("Range")
            if self._faulty(header is not None):
                return
            fault = self.server.pending_body_fault(self.command, header is not None)
            if fault == "whole":
                header = None
            partial_content = header is not None
            if header is not None:
                m = _RANGE.match(header.strip())
                if m is None or (not m.group(1) and not m.group(2)):
                    self._log(None)
                    self.send_error(416, "Unsupported range")
                    return
                if m.group(1):
                    start = int(m.group(1))
                    end = min(size, int(m.group(2)) + 1) if m.group(2) else size
                else:  # a suffix range: the last N bytes
                    start = max(0, size - int(m.group(2)))
                if start >= size or start >= end:
                    self._log(None)
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            self._log((start, end) if partial_content else None, fault)
            self.send_response(206 if partial_content else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start))
            self._file_headers(st)
            if partial_content:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            self.end_headers()
            if body:
                f.seek(start)
                data = f.read(end - start)
                if fault == "cut":
                    # Half the body, then the connection closes: the client sees fewer
                    # bytes than Content-Length announced (a payload error).
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

    def do_GET(self) -> None:
        """Serves a file (whole or one byte range) or a directory listing."""
        self._serve(body=True)

    def do_HEAD(self) -> None:
        """Serves a file's or a listing's headers."""
        self._serve(body=False)

    def do_PUT(self) -> None:
        """Refused (405): the server is read-only, like most HTTP data hosts."""
        self._log(None)
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.send_error(405, "Read-only server")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Keep-alive connections of a client pool would block a joining close forever.
    block_on_close = False
    # socketserver listens with a backlog of 5. fsspec opens many connections at once
    # for a coalesced batch; on a loaded machine the accept queue overflowed, the
    # dropped handshakes were retried only after TCP's backoff, and a test hung for
    # minutes (or saw "Connection reset by peer").
    request_queue_size = 128

    def __init__(self, root: str) -> None:
        super().__init__(("127.0.0.1", 0), partial(_Handler, directory=root))
        self.lock = threading.Lock()
        self.log: list[LoggedRequest] = []
        self.faults: list[_Fault] = []

    def _claim(self, method: str, ranged: bool, kinds: frozenset[str]) -> _Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.kind not in kinds or method not in fault.methods:
                    continue
                if fault.kind == "whole" and not ranged:
                    continue
                if fault.left is not None:
                    fault.left -= 1
                    if fault.left == 0:
                        self.faults.remove(fault)
                return fault
        return None

    def take(self, method: str, ranged: bool) -> _Fault | None:
        """The next fault answered in place of the file (a status, a dropped connection)."""
        return self._claim(method, ranged, frozenset({"status", "drop"}))

    def pending_body_fault(self, method: str, ranged: bool) -> str | None:
        """The next fault of the body (``"cut"``, ``"whole"``), or ``None``."""
        fault = self._claim(method, ranged, frozenset({"cut", "whole"}))
        return None if fault is None else fault.kind


class RangeServer:
    """A running server; see :func:`serve_directory`.

    Attributes:
        url: ``http://127.0.0.1:<port>`` (no trailing slash).
    """

    def __init__(self, server: _Server) -> None:
        self._server = server
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request answered so far, in order."""
        with self._server.lock:
            return list(self._server.log)

    def count(self, method: str = "GET", *, ranged: bool | None = None) -> int:
        """Requests with ``method`` (only ranged ones, or only whole-file ones, if asked)."""
        return sum(
            q.method == method and (ranged is None or (q.range is not None) == ranged)
            for q in self.requests
        )

    def reset(self) -> None:
        """Forgets the requests logged so far."""
        with self._server.lock:
            self._server.log.clear()

    def _inject(
        self, kind: FaultKind, times: int | None, status: int, methods: tuple[str, ...]
    ) -> None:
        if times is not None and times < 1:
            raise ValueError(f"times must be >= 1 or None, got {times}")
        with self._server.lock:
            self._server.faults.append(_Fault(kind, times, status, frozenset(methods)))

    def fail(
        self, status: int = 503, times: int | None = 1, methods: tuple[str, ...] = ("GET", "HEAD")
    ) -> None:
        """Answers the next ``times`` file requests (``None``: all, until :meth:`heal`)
        with ``status`` and an empty body."""
        self._inject("status", times, status, methods)

    def cut(self, times: int | None = 1) -> None:
        """Closes the connection half-way through the body of the next ``times`` GETs."""
        self._inject("cut", times, 0, ("GET",))

    def drop(self, times: int | None = 1, methods: tuple[str, ...] = ("GET", "HEAD")) -> None:
        """Closes the connection without an answer to the next ``times`` file requests."""
        self._inject("drop", times, 0, methods)

    def ignore_range(self, times: int | None = 1) -> None:
        """Answers the next ``times`` ranged GETs with ``200`` and the whole file."""
        self._inject("whole", times, 0, ("GET",))

    def heal(self) -> None:
        """Removes every injected fault not used up yet."""
        with self._server.lock:
            self._server.faults.clear()


@contextlib.contextmanager
def serve_directory(root: str | os.PathLike[str]) -> Iterator[RangeServer]:
    """Serves ``root`` on a free loopback port in a background thread."""
    server = _Server(os.fspath(root))
    thread = threading.Thread(target=server.serve_forever, name="range-http", daemon=True)
    thread.start()
    try:
        yield RangeServer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
