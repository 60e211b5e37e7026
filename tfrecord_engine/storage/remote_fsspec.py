"""Byte-range reads through an fsspec filesystem's own calls (every backend but HTTP).

``fs.cat_ranges``, ``fs.cat_file`` and ``fs.info`` wrapped in the
:class:`~tfrecord_engine.storage.retry.RetryPolicy`: a range that fails transiently is
requested again (only the failed ones of a batch), and every failure that ends the read
names the URL and byte range (:class:`~tfrecord_engine.errors.RemoteReadError`; the
backend's ``FileNotFoundError`` becomes a
:class:`~tfrecord_engine.errors.RemoteNotFoundError`, its ``PermissionError`` a
:class:`~tfrecord_engine.errors.RemoteAccessDeniedError`).

These calls return bodies only, so the version label is seen once, by the size query
(``fs.info``: S3's ETag, GCS's generation, ...), and later answers are checked only by
their length; per-answer checks need the backend's conditional requests (S3's
``IfMatch``, GCS's generation in the path), which are not wired in here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from random import Random
from typing import Any, TypeVar

from ..errors import (
    RemoteAccessDeniedError,
    RemoteChangedError,
    RemoteNotFoundError,
    RemoteReadError,
)
from .remote_identity import RemoteIdentity, VersionPin
from .retry import RetryPolicy, is_transient

__all__ = ["FsspecRanges"]

T = TypeVar("T")


class FsspecRanges:
    """The requests of one :class:`~tfrecord_engine.storage.remote.RemoteFile` through
    fsspec's generic calls (see the module doc).

    Args:
        fs, path: the filesystem and the file's path within it.
        url: the file's URL (for messages).
        policy: when to retry.
        rng: the jitter's random source (the file's own).
        pin: the file's version (its size is checked against every answer's length).
    """

    def __init__(  # noqa: PLR0917 - one file's fixed context
        self,
        fs: Any,
        path: str,
        url: str,
        policy: RetryPolicy,
        rng: Random,
        pin: VersionPin,
    ) -> None:
        self.fs = fs
        self.path = path
        self.url = url
        self.policy = policy
        self.rng = rng
        self.pin = pin
        self.sent = 0
        self.received = 0
        self.retried = 0
        self._lock = threading.Lock()  # counters are updated from loader threads

    def _count(self, sent: int, received: int, retried: int) -> None:
        with self._lock:
            self.sent += sent
            self.received += received
            self.retried += retried

    def _located(
        self, exc: BaseException, start: int | None, end: int | None, attempts: int
    ) -> BaseException:
        """The error that ends a read: ``exc`` with the URL and range, when it is an I/O
        failure; anything else (a bug, a bad argument) unchanged."""
        where: dict[str, Any] = {"url": self.url, "start": start, "end": end}
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, RemoteReadError | RemoteChangedError):
            return exc
        if isinstance(exc, FileNotFoundError):
            return RemoteNotFoundError(f"no such file ({text})", **where, attempts=attempts)
        if isinstance(exc, PermissionError):
            return RemoteAccessDeniedError(
                f"access denied ({text}); check the backend's credentials",
                **where,
                attempts=attempts,
            )
        if isinstance(exc, OSError) or is_transient(exc):
            return RemoteReadError(text, **where, attempts=attempts)
        return exc

    def _retrying(self, call: Callable[[], T], *, data: bool) -> T:
        """``call()`` (a size query, or a whole-file read when ``data``), retried."""
        attempt = 0
        while True:
            attempt += 1
            self._count(int(data), 0, int(data and attempt > 1))
            try:
                return call()
            except Exception as exc:  # backends raise their own types (gcsfs: HttpError)
                if not is_transient(exc) or attempt >= self.policy.attempts:
                    located = self._located(exc, None, None, attempt)
                    if located is exc:
                        raise
                    raise located from exc
            time.sleep(self.policy.delay(attempt, self.rng))

    def size(self) -> int:
        """The file's size (one ``fs.info``), its version label pinned on the way."""
        info = self._retrying(lambda: self.fs.info(self.path), data=False)
        size = info.get("size")
        if size is None:
            raise RemoteReadError("the backend does not report the file's size", url=self.url)
        self.pin.note(RemoteIdentity.from_info(info), int(size))
        return int(size)

    def fetch_ranges(self, starts: Sequence[int], ends: Sequence[int]) -> list[bytes]:
        """The half-open ranges ``[starts[i], ends[i])``; failed ones asked again."""
        out: list[bytes | None] = [None] * len(starts)
        pending = list(range(len(starts)))
        attempt = 0
        while True:
            attempt += 1
            failed = self._round(pending, starts, ends, out)
            if not failed:
                break
            i, exc = failed[0]
            fatal = next(((j, e) for j, e in failed if not is_transient(e)), None)
            if fatal is not None or attempt >= self.policy.attempts:
                j, e = fatal or (i, exc)
                located = self._located(e, starts[j], ends[j], attempt)
                if located is e:
                    raise e
                raise located from e
            self._count(0, 0, len(failed))
            time.sleep(self.policy.delay(attempt, self.rng))
            pending = [j for j, _ in failed]
        data = [d for d in out if d is not None]
        for d, a, b in zip(data, starts, ends, strict=True):
            self._check_length(d, a, b)
        return data

    def _round(
        self,
        pending: list[int],
        starts: Sequence[int],
        ends: Sequence[int],
        out: list[bytes | None],
    ) -> list[tuple[int, BaseException]]:
        """Requests the ``pending`` ranges once; fills ``out``, returns the failures."""
        try:
            got: list[Any] = self.fs.cat_ranges(
                [self.path] * len(pending),
                [starts[i] for i in pending],
                [ends[i] for i in pending],
                on_error="return",
            )
        except Exception as exc:  # noqa: BLE001 - a failure of the whole call fails each range
            got = [exc] * len(pending)
        failed: list[tuple[int, BaseException]] = []
        received = 0
        for i, g in zip(pending, got, strict=True):
            if isinstance(g, BaseException):
                failed.append((i, g))
            else:
                out[i] = bytes(g)
                received += len(g)
        self._count(len(pending), received, 0)
        return failed

    def _check_length(self, data: bytes, start: int, end: int) -> None:
        if len(data) == end - start:
            return
        size = self.pin.size
        if size is not None and end <= size and len(data) < end - start:
            raise RemoteChangedError(
                url=self.url,
                start=start,
                end=end,
                before=f"{size} bytes",
                after=f"at most {start + len(data)} bytes",
            )
        raise RemoteReadError(
            f"got {len(data)} bytes for a range of {end - start}"
            + ("" if size is None else f" of a file of {size} bytes"),
            url=self.url,
            start=start,
            end=end,
        )

    def read_all(self) -> bytes:
        """The whole file in one request."""
        data = bytes(self._retrying(lambda: self.fs.cat_file(self.path), data=True))
        self._count(0, len(data), 0)
        if self.pin.size is not None and len(data) != self.pin.size:
            raise RemoteChangedError(
                url=self.url,
                start=None,
                end=None,
                before=f"{self.pin.size} bytes",
                after=f"{len(data)} bytes",
            )
        return data
