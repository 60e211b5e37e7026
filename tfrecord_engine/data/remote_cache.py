"""``RecordDataset(..., cache_dir=, cache_limit=)``: remote shards read from local copies.

When a dataset with a cache opens its files, every URL is looked up in the node-local
:class:`~tfrecord_engine.storage.cache.ShardCache` (one size-and-version query per
object; none in a worker that got its parent's versions), and missing ones are copied
whole, several at a time, each in parallel range requests. The dataset then reads the
local copies exactly as local files (``mmap``, no requests): a second epoch, and every
later dataset on the node while the copies stay, read nothing from the store.

Each copy's index is kept beside it in the cache: the store's sidecar when it has one
that describes the object (``<folder>/.tfeidx/``, written with the data), else one built
from the local copy (one local pass, no network). Objects the cache does not take (no
version label, or no room beside the copies in use) are read from the store as without
a cache.

Errors and damage reports of a cached shard name its local copy, whose file name starts
with the object's own name.

The dataset's ``storage_options`` reach the store for every request made here (version
queries, fills, the store's sidecars); they pickle with the dataset's cache state.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Final

from ..errors import IndexFormatError, InvalidArgumentError
from ..index.placement import index_candidates
from ..index.sidecar import Index
from ..records.compression import Compression
from ..records.detect import requested
from ..records.recovery import DamageCallback, DamagePolicy
from ..storage import remote
from ..storage.cache import CachedCopy, Claim, ShardCache, version_of
from ..storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options
from ..storage.remote import RemoteFile
from ..storage.remote_identity import RemoteIdentity

__all__ = ["FILLS_AT_ONCE", "DatasetCache"]

#: Objects copied into the cache at the same time when a dataset opens.
FILLS_AT_ONCE: Final = 4
Version = tuple[int, RemoteIdentity]


class DatasetCache:
    """One dataset's use of a cache folder: the copies it pinned and their versions.

    Args:
        directory: the cache folder (shared by the node's processes).
        limit: its size limit in bytes (``None``: none but the disk).
        versions: URL -> ``(size, identity)`` already seen (a parent dataset's, handed
            to its workers): such objects are not asked for again.
        storage_options: fsspec keyword arguments for the URLs' store (see
            :mod:`tfrecord_engine.storage.options`).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        limit: int | None,
        versions: dict[str, Version] | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        if limit is not None and limit < 0:
            raise InvalidArgumentError(f"cache_limit must be >= 0 or None, got {limit}")
        self.directory = os.fspath(directory)
        self.limit = limit
        self.versions: dict[str, Version] = dict(versions or {})
        self.storage_options: StorageOptions | None = normalize_storage_options(storage_options)
        self._cache: ShardCache | None = None

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str] | None,
        limit: int | None,
        storage_options: StorageOptionsArg = None,
    ) -> DatasetCache | None:
        """The dataset's cache, or ``None`` without ``directory``.

        Raises:
            InvalidArgumentError: a ``limit`` without a ``directory``, or a negative one.
        """
        if directory is None:
            if limit is not None:
                raise InvalidArgumentError("cache_limit needs a cache_dir")
            return None
        return cls(directory, limit, storage_options=storage_options)

    @property
    def cache(self) -> ShardCache:
        """The folder's :class:`ShardCache` (opened on first use, in this process)."""
        if self._cache is None:
            self._cache = ShardCache(self.directory, self.limit)
        return self._cache

    def state(self) -> dict[str, Any]:
        """What a pickled copy needs: the folder, the limit, the versions seen, the
        storage options."""
        versions = {
            url: (size, ident.etag, ident.last_modified)
            for url, (size, ident) in self.versions.items()
        }
        return {
            "directory": self.directory,
            "limit": self.limit,
            "versions": versions,
            "storage_options": self.storage_options,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> DatasetCache | None:
        """The inverse of :meth:`state` (``None`` for a dataset without a cache)."""
        if state is None:
            return None
        versions = {
            url: (int(size), RemoteIdentity(etag, modified))
            for url, (size, etag, modified) in state["versions"].items()
        }
        return cls(
            state["directory"],
            state["limit"],
            versions,
            storage_options=state.get("storage_options"),
        )

    def close(self) -> None:
        """Unpins this dataset's copies (they stay cached; others may evict them now)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _copies(self, urls: list[str]) -> dict[str, CachedCopy | None]:
        """The copies of ``urls``: versions asked together, room claimed in file order
        (a cache too small for all keeps the first files), fills run together."""
        cache = self.cache
        options = self.storage_options
        unknown = [u for u in urls if u not in self.versions]
        cache.stats.version_queries += len(unknown)

        def version(url: str) -> tuple[int, RemoteIdentity | None]:
            return version_of(url, options)

        with ThreadPoolExecutor(FILLS_AT_ONCE * 2, thread_name_prefix="tfe-cache") as pool:
            for url, (size, ident) in zip(unknown, pool.map(version, unknown), strict=True):
                if ident is not None:
                    self.versions[url] = (size, ident)
        claims: dict[str, Claim] = {}
        try:
            for url in urls:
                known = self.versions.get(url)
                claims[url] = (
                    Claim(None)
                    if known is None
                    else cache.claim(url, size=known[0], identity=known[1], storage_options=options)
                )
            with ThreadPoolExecutor(FILLS_AT_ONCE, thread_name_prefix="tfe-cache") as pool:
                futures = {url: pool.submit(self._finish, c) for url, c in claims.items()}
                wait(futures.values())
            return {url: f.result() for url, f in futures.items()}
        finally:
            for c in claims.values():
                cache.abandon(c)  # only those never started (an error stopped the rest)

    def _finish(self, claim: Claim) -> CachedCopy | None:
        """A claim's copy, and the store's sidecar index kept beside it when the cache
        has none yet (fetched here, on a fill thread: checked by :meth:`_index`)."""
        copy = self.cache.finish(claim)
        if copy is None or os.path.exists(copy.index_path):
            return copy
        for source in index_candidates(copy.url):
            try:
                blob = RemoteFile(source, storage_options=copy.storage_options).read_all()
            except (FileNotFoundError, PermissionError):
                continue  # none there (or not ours to read): the next place, else a build
            self.cache.store_index(copy, blob)
            break
        return copy

    def open_indexes(
        self,
        paths: Sequence[str],
        open_index: Callable[[str], Index],
        *,
        compression: Compression | str,
        on_damage: DamagePolicy,
        on_damage_report: DamageCallback | None,
    ) -> list[Index]:
        """The index of every path, cached URLs' pointing at their local copies.

        ``open_index(path)`` opens what the cache does not take (local files, URLs not
        cached), as the dataset does without a cache.
        """
        urls = list(dict.fromkeys(p for p in paths if remote.is_url(p)))
        copies = self._copies(urls) if urls else {}
        out = []
        for p in paths:
            copy = copies.get(p)
            if copy is None:
                out.append(open_index(p))
            else:
                out.append(self._index(copy, compression, on_damage, on_damage_report))
        return out

    def _index(
        self,
        copy: CachedCopy,
        compression: Compression | str,
        on_damage: DamagePolicy,
        report: DamageCallback | None,
    ) -> Index:
        """The index of a cached copy: kept in the cache, else the store's sidecar,
        else built from the copy (and kept)."""
        want = requested(compression)
        try:
            # The kept index, or the store's sidecar just fetched: checked against the
            # local copy either way (size, fingerprint, content, the policy).
            idx = Index.load(
                copy.data_path, copy.index_path, on_damage=on_damage, on_damage_report=report
            )
        except (FileNotFoundError, IndexFormatError):
            idx = self._fresh_index(copy, want, on_damage, report)
            self.cache.store_index(copy, idx.to_bytes())
        self.cache.touch(copy)  # recency in file order, whatever order the fills ended in
        if want is not None and idx.compression is not want:
            raise InvalidArgumentError(
                f"{copy.url}: its index says compression {idx.compression.value!r}, the "
                f"caller says {want.value!r} (pass compression='auto' to take the file's own)"
            )
        return idx

    def _fresh_index(
        self,
        copy: CachedCopy,
        want: Compression | None,
        on_damage: DamagePolicy,
        report: DamageCallback | None,
    ) -> Index:
        """The store's sidecars, checked against the local copy (no request for the
        object's fingerprint), else an index built from the copy."""
        for source in index_candidates(copy.url)[1:]:  # the first was tried by _finish
            try:
                idx = Index.load(
                    copy.data_path,
                    source,
                    on_damage=on_damage,
                    on_damage_report=report,
                    storage_options=copy.storage_options,  # (for the store's sidecar)
                )
            except (FileNotFoundError, IndexFormatError):
                continue  # none there, or one that does not serve: look further
            if want is None or idx.compression is want:
                return idx
        return Index.build(
            copy.data_path,
            "auto" if want is None else want,
            on_damage=on_damage,
            on_damage_report=report,
        )
