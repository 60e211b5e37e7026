"""Which version of a remote file an answer came from: its ETag, else its Last-Modified.

Object stores and HTTP servers label every answer with the version of the object it
came from: S3 and most HTTP servers with an ``ETag`` (S3's is the content's MD5 for a
single-part upload), GCS with a ``generation`` number (and an ETag), a static file
server with an ETag built from inode, size and modification time plus a
``Last-Modified`` date. A reader that notes the label of the first answer and compares
every later one can tell a file replaced under it (same name, same layout, other
records) from the file it started with: see
:class:`~tfrecord_engine.storage.remote.RemoteFile`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import RemoteChangedError

__all__ = ["RemoteIdentity", "VersionPin"]

# fsspec's info() dictionaries spell the same things differently per backend:
# HTTP "ETag"/"Last-Modified" (from the headers), s3fs "ETag"/"LastModified", gcsfs
# "generation"/"etag"/"updated", adlfs "etag"/"last_modified".
_TAG_KEYS = ("generation", "ETag", "etag", "Etag")
_TIME_KEYS = ("Last-Modified", "LastModified", "last_modified", "updated")


@dataclasses.dataclass(frozen=True, slots=True)
class RemoteIdentity:
    """The version label of a remote file: an ETag (or generation) and/or a
    Last-Modified date, as strings.

    Example:
        >>> a = RemoteIdentity.from_headers({"ETag": '"v1"', "Last-Modified": "Mon"})
        >>> b = RemoteIdentity.from_headers({"ETag": 'W/"v1"'})
        >>> c = RemoteIdentity.from_headers({"ETag": '"v2"'})
        >>> a.mismatch(b), a.mismatch(c)
        (None, ('ETag "v1"', 'ETag "v2"'))
    """

    etag: str | None = None
    last_modified: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RemoteIdentity | None:
        """The identity an HTTP answer carries (``None``: neither header)."""
        etag = headers.get("ETag") or None
        modified = headers.get("Last-Modified") or None
        return None if etag is None and modified is None else cls(etag, modified)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> RemoteIdentity | None:
        """The identity in an fsspec ``info()`` dictionary (``None``: none reported)."""
        etag = next((str(info[k]) for k in _TAG_KEYS if info.get(k) not in (None, "")), None)
        modified = next((str(info[k]) for k in _TIME_KEYS if info.get(k) not in (None, "")), None)
        return None if etag is None and modified is None else cls(etag, modified)

    def mismatch(self, other: RemoteIdentity) -> tuple[str, str] | None:
        """``(this, other)`` described, when the two name different versions; ``None``
        when they agree or cannot be compared (no label in common).

        ETags are compared weakly (``W/"x"`` matches ``"x"``: some servers weaken a tag
        on some answers only); a date only when neither side has an ETag to compare.
        """
        if self.etag is not None and other.etag is not None:
            if _opaque(self.etag) != _opaque(other.etag):
                return f"ETag {self.etag}", f"ETag {other.etag}"
            return None
        a, b = self.last_modified, other.last_modified
        if a is not None and b is not None and a != b:
            return f"Last-Modified {a}", f"Last-Modified {b}"
        return None


def _opaque(etag: str) -> str:
    return etag[2:] if etag.startswith(("W/", "w/")) else etag


class VersionPin:
    """The version of one remote file a reader started with, and the check of every
    later answer against it.

    The first identity and the first size seen are kept (or the ones given); each later
    answer's are compared, and a difference raises
    :class:`~tfrecord_engine.errors.RemoteChangedError` naming the URL, the byte range
    of that answer and both versions. Thread-safe: answers arrive on loader threads and
    on fsspec's event loop.

    Example:
        >>> pin = VersionPin("http://h/a")
        >>> pin.note(RemoteIdentity('"v1"'), 10, 0, 4)
        >>> try:
        ...     pin.note(RemoteIdentity('"v2"'), 10, 4, 8)
        ... except RemoteChangedError as exc:
        ...     print(exc.before, "->", exc.after, "at", exc.start, exc.end)
        ETag "v1" -> ETag "v2" at 4 8
    """

    def __init__(
        self, url: str, identity: RemoteIdentity | None = None, size: int | None = None
    ) -> None:
        self.url = url
        self.identity = identity
        self.size = size
        self._lock = threading.Lock()

    def note(
        self,
        identity: RemoteIdentity | None,
        size: int | None,
        start: int | None = None,
        end: int | None = None,
    ) -> None:
        """Checks one answer's identity and total size (``None``: not reported) against
        the pinned ones, pinning whichever is not pinned yet.

        Raises:
            RemoteChangedError: either differs.
        """
        with self._lock:
            if identity is not None:
                if self.identity is None:
                    self.identity = identity
                elif (diff := self.identity.mismatch(identity)) is not None:
                    raise RemoteChangedError(
                        url=self.url, start=start, end=end, before=diff[0], after=diff[1]
                    )
            if size is not None:
                if self.size is None:
                    self.size = size
                elif size != self.size:
                    raise RemoteChangedError(
                        url=self.url,
                        start=start,
                        end=end,
                        before=f"{self.size} bytes",
                        after=f"{size} bytes",
                    )
