"""Retrying remote reads: a bounded policy of exponential backoff with jitter.

Object stores and HTTP servers fail transiently as a matter of course: a ``503 Slow
Down`` under load, a connection reset or cut mid-body, a timeout. Such a request is
sent again after a pause that doubles each time (``initial``, ``2 * initial``, ... at
most ``maximum`` seconds), each pause drawn at random between half and all of that value
so that many readers hit by one outage do not come back in lockstep. A request is sent
at most ``attempts`` times; then the last failure is raised as a
:class:`~tfrecord_engine.errors.RemoteReadError` naming the URL, the byte range, the
status and the number of attempts.

What is retried: HTTP 408, 429 and every 5xx; connection errors (refused, reset, closed
before or during the body); a body cut short (aiohttp's ``ClientPayloadError``);
timeouts; an error whose text says ``SlowDown`` (S3's throttling). What is not: 404/410
(the file is missing: ``FileNotFoundError``), 401/403 (``PermissionError``), any other
4xx, TLS certificate failures, and an answer of the wrong length or for another range
(retrying would get the same answer).

The policy is per :class:`~tfrecord_engine.storage.remote.RemoteFile` (``retry=``) and
otherwise the process-wide default, :func:`default_retry_policy`, which
:func:`set_default_retry_policy` replaces (decode workers started afterwards inherit it
when forked; spawned ones start from :class:`RetryPolicy`'s defaults).
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import sys
import threading
from random import Random

from ..errors import InvalidArgumentError

__all__ = [
    "RetryPolicy",
    "default_retry_policy",
    "is_transient",
    "is_transient_status",
    "set_default_retry_policy",
]


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failed remote request is sent again.

    Attributes:
        attempts: the most times one request is sent (``1``: never retried).
        initial: the pause before the first retry, in seconds (before jitter).
        maximum: the longest pause, in seconds.
        multiplier: how much the pause grows from one retry to the next.

    Example:
        >>> p = RetryPolicy(attempts=4, initial=0.5, maximum=1.5)
        >>> rng = Random(0)
        >>> [0.25 <= p.delay(1, rng) <= 0.5, 0.5 <= p.delay(2, rng) <= 1.0,
        ...  0.75 <= p.delay(3, rng) <= 1.5]
        [True, True, True]
    """

    attempts: int = 5
    initial: float = 0.1
    maximum: float = 5.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise InvalidArgumentError(f"attempts must be >= 1, got {self.attempts}")
        if not 0 <= self.initial <= self.maximum:
            raise InvalidArgumentError(
                f"need 0 <= initial <= maximum, got initial={self.initial}, maximum={self.maximum}"
            )
        if self.multiplier < 1:
            raise InvalidArgumentError(f"multiplier must be >= 1, got {self.multiplier}")

    def delay(self, retry: int, rng: Random, hint: float | None = None) -> float:
        """The pause in seconds before retry number ``retry`` (``1``: the first).

        Drawn from ``[cap / 2, cap]`` with ``cap = min(maximum, initial *
        multiplier ** (retry - 1))``; a server's ``Retry-After`` (``hint``) lengthens
        it, never past ``maximum``. ``rng`` is the caller's own generator (never the
        global one).
        """
        cap = min(self.maximum, self.initial * self.multiplier ** max(0, retry - 1))
        pause = rng.uniform(cap / 2, cap)
        if hint is not None and hint > pause:
            pause = min(hint, self.maximum)
        return pause


_DEFAULT_LOCK = threading.Lock()
_default = RetryPolicy()


def default_retry_policy() -> RetryPolicy:
    """The policy of remote files opened without ``retry=`` (initially ``RetryPolicy()``:
    5 attempts, pauses of 0.1 s doubling up to 5 s)."""
    return _default


def set_default_retry_policy(policy: RetryPolicy) -> RetryPolicy:
    """Makes ``policy`` the process-wide default for remote files opened from now on;
    returns the previous one (to restore it)."""
    global _default  # the one process-wide setting, guarded by a lock
    if not isinstance(policy, RetryPolicy):
        raise InvalidArgumentError(f"expected a RetryPolicy, got {type(policy).__name__}")
    with _DEFAULT_LOCK:
        previous, _default = _default, policy
    return previous


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: 408, 429 and every 5xx.

    >>> [is_transient_status(s) for s in (200, 403, 404, 429, 500, 503)]
    [False, False, False, True, True, True]
    """
    return status in {408, 429} or 500 <= status <= 599


_TRANSIENT_ERRNOS = frozenset({errno.EBUSY, getattr(errno, "EREMOTEIO", 121)})


def is_transient(exc: BaseException) -> bool:
    """Whether an exception from a remote read is worth retrying (see the module doc).

    >>> is_transient(ConnectionResetError()), is_transient(FileNotFoundError("x"))
    (True, False)
    >>> import errno
    >>> is_transient(OSError(errno.EBUSY, "SlowDown")), is_transient(OSError(errno.EACCES, "no"))
    (True, False)
    """
    if isinstance(exc, FileNotFoundError | PermissionError):
        return False
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return True
    # s3fs turns S3's 503 (SlowDown, ServiceUnavailable) into OSError(EBUSY) and its 500
    # (InternalError) into OSError(EREMOTEIO), dropping the status.
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
        return True
    aiohttp = sys.modules.get("aiohttp")  # only loaded where an HTTP(S) backend is in use
    if aiohttp is not None:
        # A certificate that does not verify fails the same way every time.
        if isinstance(exc, aiohttp.ClientSSLError | aiohttp.ServerFingerprintMismatch):
            return False
        if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ClientConnectionError):
            return True
    botocore = sys.modules.get("botocore.exceptions")  # s3fs's client, where it is in use
    # A refused or dropped connection to an S3 endpoint (EndpointConnectionError,
    # ConnectionClosedError ...): botocore's own classes, none of them an OSError.
    if botocore is not None and isinstance(
        exc, botocore.ConnectionError | botocore.HTTPClientError
    ):
        return True
    # aiohttp's ClientResponseError has .status, gcsfs's HttpError .code.
    for attr in ("status", "code"):
        status = getattr(exc, attr, None)
        if isinstance(status, int) and is_transient_status(status):
            return True
    return "SlowDown" in str(exc)
