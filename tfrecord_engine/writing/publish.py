"""Publishing a written file's index with the data: never an old index beside new data.

A writer with ``index=True`` publishes in this order (:class:`PendingIndex`):

1. the data is complete and synced in its hidden temporary file; the index is made
   from *those* bytes (the identity of :mod:`tfrecord_engine.index.identity`);
2. the index is written, synced, to a hidden temporary file beside its final place
   (``.tfeidx/.<file>.tfeidx.tmp-<random>``): a full disk fails here, and nothing is
   published (:class:`IndexPublishError` with ``published=False``);
3. the indexes of the previous version of the data are removed (the hidden and the
   old ``<file>.tfeidx`` ones, which readers look at first; the user-cache entry of
   the file as it is, best effort) and, if any was, their folders synced;
4. the data is renamed onto its path (published) and its folder synced;
5. the index is renamed onto its place and that folder synced. A failure here raises
   :class:`IndexPublishError` with ``published=True``: the data is there without an
   index, which readers build for themselves and ``tfr index PATH`` writes.

So a crash at any point leaves the previous data with its index or with none (between
3 and 4), or the new data with its index or with none (between 4 and 5): never data
beside an index of another version of it. Two writers racing on one path can still
leave one's index beside the other's data (each index is stamped with its own
writer's bytes): opening it then finds it stale and indexes the file again.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
from collections.abc import Callable

from ..errors import IndexPublishError
from ..index.placement import (
    IndexPlacement,
    cache_identity,
    cache_index_path,
    index_candidates,
    index_path_for,
    prune_cache,
)
from ..index.sidecar import Index
from ..storage import remote
from ..storage.fileops import FileOps

__all__ = ["IndexPublishError", "PendingIndex", "temp_path_for"]


def temp_path_for(path: str) -> str:
    """Returns a fresh hidden temporary name next to ``path`` (same directory).

    >>> name = temp_path_for("/data/train.tfrecord")
    >>> name.startswith("/data/.train.tfrecord.tmp-")
    True
    """
    name = f".tmp-{secrets.token_hex(8)}"
    if remote.is_url(path):  # URLs always use "/"
        head, tail = posixpath.split(path)
        return posixpath.join(head, f".{tail}{name}")
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}{name}")


def _reason(exc: OSError) -> str:
    return f"{type(exc).__name__}: {exc}"


class PendingIndex:
    """An index written next to its place, waiting for the data to be published.

    Args:
        ops: the writer's file operations (for an index in the user's cache of a
            remote writer: local ones).
        idx: the index, stamped with the identity of the written bytes.
        written: where those bytes are now (the writer's temporary file, or the data
            path itself for a file written in place).
        placement: where the index goes (see :mod:`tfrecord_engine.index.placement`).
        durable: sync what is written and renamed, as the data is.
        in_place: the data is under its path already (``atomic=False``, appends): a
            failure then leaves it without its index, and says so.

    Raises:
        IndexPublishError: the index could not be written (nothing published, unless
            ``in_place``).
    """

    def __init__(
        self,
        ops: FileOps,
        idx: Index,
        written: str,
        placement: IndexPlacement,
        *,
        durable: bool,
        in_place: bool,
    ) -> None:
        self.data_path = idx.data_path
        self.placement = placement
        self.target = (
            cache_index_path(self.data_path, _cache_key(written, idx))
            if placement == "cache"
            else index_path_for(self.data_path, placement)
        )
        on_store = remote.is_url(self.data_path)
        self._ops = ops if remote.is_url(self.target) == on_store else FileOps()
        self._durable = durable
        self._in_place = in_place
        self._temp: str | None = None
        self._stage(idx.to_bytes())

    def _error(self, exc: OSError, what: str, *, published: bool) -> IndexPublishError:
        if self._in_place:
            # The data is complete under its path already: no older index may stay.
            self._remove_older_quietly()
            return published_without_index(self.data_path, self.target, exc, what)
        if published:
            message = (
                f"{self.data_path}: the data was published without its index: {what} "
                f"({_reason(exc)}). Readers index the file themselves; `tfr index "
                f"{self.data_path}` writes its index"
            )
        else:
            message = (
                f"{self.data_path}: nothing was published (the previous version, if any, "
                f"is unchanged): {what} ({_reason(exc)}). Free space or fix the folder "
                "and write again"
            )
        return IndexPublishError(
            message,
            path=self.data_path,
            index_path=self.target,
            published=published,
            code=exc.errno,
        )

    def _stage(self, blob: bytes) -> None:
        temp = temp_path_for(self.target)
        try:
            if not remote.is_url(self.target):
                os.makedirs(os.path.dirname(self.target) or ".", exist_ok=True)
            f = self._ops.open_new(temp)
            self._temp = temp
            try:
                self._ops.write(f, blob)
                self._ops.flush(f)
                if self._durable:
                    self._ops.fsync(f)
                self._ops.close(f)
            finally:
                # Closed above unless a call failed (then the error is the one to raise).
                with contextlib.suppress(OSError):
                    f.close()
        except OSError as exc:
            self.discard()
            raise self._error(
                exc, f"writing its index {self.target} failed", published=False
            ) from exc
        except BaseException:
            self.discard()
            raise

    def _remove_older_quietly(self) -> None:
        for old in index_candidates(self.data_path):
            with contextlib.suppress(OSError):
                self._ops.remove(old)

    def clear_older(self) -> None:
        """Removes the indexes of the data's previous version (see the module
        docstring): called before the data is published.

        Raises:
            IndexPublishError: one in the data's folder could not be removed (nothing
                is published then).
        """
        folders: set[str] = set()
        for old in index_candidates(self.data_path):
            try:
                self._ops.remove(old)
            except FileNotFoundError:
                continue
            except OSError as exc:
                self.discard()
                raise self._error(
                    exc,
                    f"the index of its previous version, {old}, could not be removed",
                    published=False,
                ) from exc
            folders.add(os.path.dirname(os.path.abspath(old)))
        if not remote.is_url(self.data_path):
            # The cache entry of the file as it is now (its previous version): best
            # effort, as every cache write (an entry of another state is only tried
            # after the hidden index, and is checked like it).
            with contextlib.suppress(OSError):
                os.remove(cache_index_path(self.data_path, cache_identity(self.data_path)))
        if not self._durable or remote.is_url(self.data_path):
            return
        # Durable before the data is renamed: a power loss must not bring an older
        # index back beside the new data.
        folder = ""
        try:
            for folder in sorted(folders):
                self._ops.fsync_dir(folder)
        except OSError as exc:
            self.discard()
            raise self._error(
                exc, f"syncing {folder} after removing an older index failed", published=False
            ) from exc

    def publish(self) -> None:
        """Renames the index onto its place (after the data was published).

        Raises:
            IndexPublishError: ``published=True``: the data is there without its index.
        """
        temp, self._temp = self._temp, None
        assert temp is not None
        try:
            self._ops.replace(temp, self.target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self._ops.remove(temp)
            raise self._error(
                exc, f"renaming its index onto {self.target} failed", published=True
            ) from exc
        if self._durable and not remote.is_url(self.target):
            try:
                self._ops.fsync_dir(os.path.dirname(os.path.abspath(self.target)))
            except OSError as exc:
                raise self._error(
                    exc,
                    f"syncing the folder of its index {self.target} failed (the index is "
                    "in place but may not survive a power loss)",
                    published=True,
                ) from exc
        if self.placement == "cache":
            prune_cache(self.target, self.data_path)

    def discard(self) -> None:
        """Removes the index's temporary file (best effort: another error matters)."""
        temp, self._temp = self._temp, None
        if temp is not None:
            with contextlib.suppress(OSError):
                self._ops.remove(temp)


def _cache_key(written: str, idx: Index) -> tuple[int, int]:
    """The cache identity (:func:`~tfrecord_engine.index.placement.cache_identity`) the
    data will have under its path: a rename keeps the modification time."""
    if remote.is_url(written):
        return idx.data_size, idx.fingerprint
    st = os.stat(written)
    return st.st_size, st.st_mtime_ns


def published_without_index(
    path: str, index_path: str, exc: OSError, what: str | None = None
) -> IndexPublishError:
    """The error of an in-place writer (``append=True``, ``atomic=False``) whose data is
    complete under ``path`` but whose index could not be written to ``index_path``."""
    return IndexPublishError(
        f"{path}: the data was written without its index: "
        f"{what or f'writing {index_path} failed'} ({_reason(exc)}). Readers index the "
        f"file themselves; `tfr index {path}` writes its index",
        path=path,
        index_path=index_path,
        published=True,
        code=exc.errno,
    )


def index_in_place(
    ops: FileOps,
    path: str,
    idx_of: Callable[[], Index],
    placement: IndexPlacement,
    *,
    durable: bool,
) -> None:
    """Makes (``idx_of``) and publishes the index of ``path``, complete under its path
    (written in place: ``atomic=False``, or appended to).

    Raises:
        IndexPublishError: the data is there without its index (the previous
            version's indexes are removed, as far as they can be).
    """
    try:
        idx = idx_of()
    except OSError as exc:
        for old in index_candidates(path):
            with contextlib.suppress(OSError):
                ops.remove(old)
        where = (
            "the user's index cache" if placement == "cache" else index_path_for(path, placement)
        )
        raise published_without_index(
            path, where, exc, "reading it back to index it failed"
        ) from exc
    pending = PendingIndex(ops, idx, path, placement, durable=durable, in_place=True)
    pending.clear_older()
    pending.publish()
