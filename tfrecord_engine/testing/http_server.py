"""A loopback HTTP file server with ``Range`` support that counts requests.

The standard library's ``SimpleHTTPRequestHandler`` ignores ``Range`` headers (it always
sends whole files), so remote random access cannot be tested with it. This server
answers single byte ranges with ``206 Partial Content``, serves directory listings
(which fsspec's HTTP filesystem globs over) and logs every request, so tests can count
what a reader asked for.

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
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoggedRequest", "RangeServer", "serve_directory"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request the server answered.

    Attributes:
        method: ``"GET"``, ``"HEAD"``, ``"PUT"`` ...
        path: the URL path.
        range: the half-open byte range served for a ``Range`` request, else ``None``.
    """

    method: str
    path: str
    range: tuple[int, int] | None


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real object stores
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read :attr:`RangeServer.requests` instead."""

    def _log(self, served: tuple[int, int] | None) -> None:
        with self.server.lock:
            self.server.log.append(LoggedRequest(self.command, self.path, served))

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
            size = os.fstat(f.fileno()).st_size
            start, end = 0, size
            header = self.headers.get("Range")
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
            self._log((start, end) if partial_content else None)
            self.send_response(206 if partial_content else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start))
            if partial_content:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            self.end_headers()
            if body:
                f.seek(start)
                self.wfile.write(f.read(end - start))

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
