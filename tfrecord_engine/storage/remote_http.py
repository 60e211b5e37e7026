"""Byte-range reads of ``http(s)://`` URLs: retried, checked answer by answer.

fsspec's HTTP filesystem returns only a body: it cannot tell a ``206`` from a ``200``
carrying the whole file, turns every failure of a size query (a ``503`` included) into
``FileNotFoundError``, does not retry, and drops each answer's ``ETag``. So the requests
are made here, on fsspec's own aiohttp session and event loop (fsspec's configuration of
the backend, ``client_kwargs``, ``headers`` and other request options, still applies),
with each answer's status, ``Content-Range`` and version label in view:

- ``206``: the ``Content-Range`` must name the range asked for and the file's size, the
  body must be that long;
- ``200`` to a range request (a server that ignores ``Range``): the body is the whole
  file; if it has the file's size the range is cut out of it (and a
  :class:`~tfrecord_engine.errors.RangeIgnoredWarning` is issued once per file),
  otherwise the file changed;
- ``404``/``410``: :class:`~tfrecord_engine.errors.RemoteNotFoundError`
  (a ``FileNotFoundError``); ``401``/``403``:
  :class:`~tfrecord_engine.errors.RemoteAccessDeniedError`;
- ``408``, ``429``, ``5xx``, connection errors, bodies cut short and timeouts: retried
  under the :class:`~tfrecord_engine.storage.retry.RetryPolicy`;
- every answer's ``ETag`` (else ``Last-Modified``) and size go through the file's
  :class:`~tfrecord_engine.storage.remote_identity.VersionPin`.

Requests ask for ``Accept-Encoding: identity``: byte ranges of a compressed transfer
would be ranges of the compressed bytes.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Mapping, Sequence
from random import Random
from typing import Any, NamedTuple

from ..errors import (
    RangeIgnoredWarning,
    RemoteAccessDeniedError,
    RemoteChangedError,
    RemoteNotFoundError,
    RemoteReadError,
)
from .remote_identity import RemoteIdentity, VersionPin
from .retry import RetryPolicy, is_transient, is_transient_status

__all__ = ["HttpRanges", "is_http_filesystem"]

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)\s*$")


def is_http_filesystem(fs: object) -> bool:
    """Whether ``fs`` is fsspec's HTTP filesystem (reads then go through :class:`HttpRanges`)."""
    from fsspec.implementations.http import HTTPFileSystem  # noqa: PLC0415 - loads aiohttp

    return isinstance(fs, HTTPFileSystem)


class _Answer(NamedTuple):
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    attempts: int


def _content_range(value: str | None) -> tuple[int | None, int | None, int | None] | None:
    """``(first, last + 1, total)`` of a ``Content-Range`` (``None`` parts: ``*``)."""
    m = _CONTENT_RANGE.match(value or "")
    if m is None:
        return None
    first = None if m.group(1) is None else int(m.group(1))
    end = None if m.group(2) is None else int(m.group(2)) + 1
    total = None if m.group(3) == "*" else int(m.group(3))
    return first, end, total


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After", "").strip()
    return float(value) if value.isdigit() else None


class HttpRanges:
    """The requests of one :class:`~tfrecord_engine.storage.remote.RemoteFile` on an
    ``http(s)://`` URL (see the module doc).

    Args:
        fs: fsspec's HTTP filesystem (its session, loop and request options are used).
        url: the file's URL.
        policy: when to retry.
        rng: the jitter's random source (the file's own).
        pin: the file's version, checked against every answer.
    """

    def __init__(
        self,
        fs: Any,
        url: str,
        policy: RetryPolicy,
        rng: Random,
        pin: VersionPin,
    ) -> None:
        self.fs = fs
        self.url = url
        self.policy = policy
        self.rng = rng
        self.pin = pin
        # Counters, only updated on fsspec's event loop (one thread): data requests sent
        # (retries included, size queries not), the bytes they returned, the retries.
        self.sent = 0
        self.received = 0
        self.retried = 0
        self._target = fs.encode_url(url)
        options = dict(fs.kwargs)
        self._headers = dict(options.pop("headers", None) or {})
        self._headers["Accept-Encoding"] = "identity"
        self._options = options
        self._warned = False
        self._whole_answers = False

    # ---- the synchronous surface (any thread but fsspec's loop) --------------------

    def size(self) -> int:
        """The file's size: a ``HEAD`` (a one-byte range ``GET`` when that tells nothing)."""
        from fsspec.asyn import sync  # noqa: PLC0415 - fsspec is an optional extra

        return int(sync(self.fs.loop, self._size))

    def fetch_ranges(self, starts: Sequence[int], ends: Sequence[int]) -> list[bytes]:
        """The half-open ranges ``[starts[i], ends[i])``, requested concurrently."""
        from fsspec.asyn import sync  # noqa: PLC0415

        got: list[bytes | BaseException] = sync(
            self.fs.loop, self._gather, list(starts), list(ends)
        )
        self._warn_if_ignored()
        failures = [g for g in got if isinstance(g, BaseException)]
        if failures:
            # A change of version outranks any other failure of the batch (it says
            # why the others may have failed); otherwise the first in range order.
            changed = [e for e in failures if isinstance(e, RemoteChangedError)]
            raise (changed or failures)[0]
        return [g for g in got if not isinstance(g, BaseException)]

    def read_all(self) -> bytes:
        """The whole file in one ``GET``."""
        from fsspec.asyn import sync  # noqa: PLC0415

        return bytes(sync(self.fs.loop, self._whole))

    # ---- on fsspec's event loop ----------------------------------------------------

    async def _gather(self, starts: list[int], ends: list[int]) -> list[bytes | BaseException]:
        # Every range runs to its end (return_exceptions) so that no request is left
        # running unobserved when one fails.
        return await asyncio.gather(
            *(self._range(a, b) for a, b in zip(starts, ends, strict=True)),
            return_exceptions=True,
        )

    async def _once(self, method: str, start: int | None, end: int | None, data: bool) -> _Answer:
        headers = dict(self._headers)
        if start is not None and end is not None:
            headers["Range"] = f"bytes={start}-{end - 1}"
        session = await self.fs.set_session()
        self.sent += data
        async with session.request(method, self._target, headers=headers, **self._options) as r:
            ok = method == "GET" and r.status in {200, 206}
            body = await r.read() if ok else b""
            self.received += len(body) if data else 0
            return _Answer(r.status, r.reason or "", r.headers, body, 0)

    async def _request(
        self, method: str, start: int | None, end: int | None, *, data: bool = True
    ) -> _Answer:
        """One request, retried while it fails transiently; the first other answer.

        ``data=False``: a size query (not counted as a data request).
        """
        import aiohttp  # noqa: PLC0415 - present wherever fsspec's HTTP backend is

        attempt = 0
        while True:
            attempt += 1
            hint = None
            try:
                answer = await self._once(method, start, end, data)
            except (OSError, asyncio.TimeoutError, aiohttp.ClientError) as exc:
                # A connection refused, reset or closed, a body cut short, a timeout.
                if not is_transient(exc) or attempt >= self.policy.attempts:
                    raise RemoteReadError(
                        f"{type(exc).__name__}: {exc}",
                        url=self.url,
                        start=start,
                        end=end,
                        attempts=attempt,
                    ) from exc
            else:
                if not is_transient_status(answer.status):
                    return answer._replace(attempts=attempt)
                if attempt >= self.policy.attempts:
                    raise RemoteReadError(
                        f"HTTP {answer.status} {answer.reason}: the server kept failing; "
                        "try again later, or allow more attempts (RetryPolicy)",
                        url=self.url,
                        start=start,
                        end=end,
                        status=answer.status,
                        attempts=attempt,
                    )
                hint = _retry_after(answer.headers)
            self.retried += data
            await asyncio.sleep(self.policy.delay(attempt, self.rng, hint))

    def _refused(self, answer: _Answer, start: int | None, end: int | None) -> RemoteReadError:
        """The error for an answer that is neither data nor worth retrying."""
        status = answer.status
        kind: type[RemoteReadError] = RemoteReadError
        what = "unexpected answer"
        if status in {404, 410}:
            kind, what = RemoteNotFoundError, "no such file"
        elif status in {401, 403}:
            kind = RemoteAccessDeniedError
            what = "access denied; check the credentials (fsspec's http headers, client_kwargs)"
        return kind(
            f"HTTP {status} {answer.reason}: {what}",
            url=self.url,
            start=start,
            end=end,
            status=status,
            attempts=answer.attempts,
        )

    async def _size(self) -> int:
        answer = await self._request("HEAD", None, None, data=False)
        if answer.status == 200:
            encoded = answer.headers.get("Content-Encoding", "identity") not in {"identity", ""}
            length = answer.headers.get("Content-Length")
            if length is not None and length.isdigit() and not encoded:
                size = int(length)
                self.pin.note(RemoteIdentity.from_headers(answer.headers), size)
                return size
        elif answer.status not in {405, 501}:  # HEAD not allowed: ask with a GET below
            raise self._refused(answer, None, None)
        # The size from the Content-Range of the first byte (no body beyond it).
        answer = await self._request("GET", 0, 1, data=False)
        if answer.status in {206, 416}:
            parsed = _content_range(answer.headers.get("Content-Range"))
            if parsed is not None and parsed[2] is not None:
                self.pin.note(RemoteIdentity.from_headers(answer.headers), parsed[2])
                return parsed[2]
        if answer.status == 200:
            self.pin.note(RemoteIdentity.from_headers(answer.headers), len(answer.body))
            return len(answer.body)
        if answer.status in {206, 416}:
            raise RemoteReadError(
                f"the server does not report the file's size (HTTP {answer.status} without "
                "a total in Content-Range)",
                url=self.url,
                status=answer.status,
                attempts=answer.attempts,
            )
        raise self._refused(answer, None, None)

    async def _range(self, start: int, end: int) -> bytes:
        if start >= end:
            return b""
        answer = await self._request("GET", start, end)
        seen = RemoteIdentity.from_headers(answer.headers)
        body = answer.body
        if answer.status == 206:
            parsed = _content_range(answer.headers.get("Content-Range"))
            total = None if parsed is None else parsed[2]
            self.pin.note(seen, total, start, end)
            if total is not None and end > total:
                raise RemoteReadError(
                    f"the range lies past the end of the file ({total} bytes)",
                    url=self.url,
                    start=start,
                    end=end,
                    status=206,
                    attempts=answer.attempts,
                )
            if parsed is None or (parsed[0], parsed[1]) != (start, end) or len(body) != end - start:
                raise RemoteReadError(
                    f"the server answered with {len(body)} bytes, Content-Range "
                    f"{answer.headers.get('Content-Range')!r}: not the range asked for "
                    "(a proxy or server that mangles Range requests?)",
                    url=self.url,
                    start=start,
                    end=end,
                    status=206,
                    attempts=answer.attempts,
                )
            return body
        if answer.status == 200:
            # The whole file, Range ignored: its length is the file's size.
            self.pin.note(seen, None, start, end)
            if self.pin.size is not None and len(body) != self.pin.size:
                raise RemoteChangedError(
                    url=self.url,
                    start=start,
                    end=end,
                    before=f"{self.pin.size} bytes",
                    after=f"{len(body)} bytes, sent whole: the server ignored the Range header",
                )
            self.pin.note(None, len(body), start, end)
            self._whole_answers = True
            if end > len(body):
                raise RemoteReadError(
                    f"the server ignored the Range header and sent the whole file, "
                    f"{len(body)} bytes: the range lies past its end",
                    url=self.url,
                    start=start,
                    end=end,
                    status=200,
                    attempts=answer.attempts,
                )
            return body[start:end]
        if answer.status == 416:
            parsed = _content_range(answer.headers.get("Content-Range"))
            total = None if parsed is None else parsed[2]
            self.pin.note(seen, total, start, end)
            raise RemoteReadError(
                "HTTP 416: the range lies past the end of the file"
                + ("" if total is None else f" ({total} bytes)"),
                url=self.url,
                start=start,
                end=end,
                status=416,
                attempts=answer.attempts,
            )
        raise self._refused(answer, start, end)

    async def _whole(self) -> bytes:
        answer = await self._request("GET", None, None)
        if answer.status != 200:
            raise self._refused(answer, None, None)
        self.pin.note(RemoteIdentity.from_headers(answer.headers), len(answer.body))
        return answer.body

    def _warn_if_ignored(self) -> None:
        if self._whole_answers and not self._warned:
            self._warned = True
            warnings.warn(
                f"{self.url}: the server ignored the Range header and sent the whole file "
                "for a byte-range read; the range was cut out of it, but every read "
                "downloads the whole file: serve the data from a server that honours Range",
                RangeIgnoredWarning,
                stacklevel=4,
            )
