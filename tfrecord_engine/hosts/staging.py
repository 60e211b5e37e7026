"""Writes published all at once: shards staged in a hidden folder, then renamed.

A write (one process, or the tasks of a distributed job) writes every shard and its
index under ``<folder>/.tfe-staging-<id>/`` (hidden: no glob of TensorFlow, Beam, Ray,
Spark or a shell picks a staged shard up). Publishing renames each shard to its final
name, then its index to the final name's hidden ``.tfeidx/`` folder (the index holds
no path, so it stays valid; data first, so an index never names a missing file), syncs
the folder and removes the staging folder. Aborting removes the staging folder: a
failed write publishes nothing. Local folders and writable fsspec URLs (``s3://``,
``gs://``, ``memory://`` ...: one ``fs.mv`` per object) both work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Sequence

from ..index.placement import index_path_for
from ..storage import remote
from ..storage.options import StorageOptions, StorageOptionsArg, normalize_storage_options

__all__ = ["Staging", "fsync_dir"]

STAGING_PREFIX = ".tfe-staging-"


def fsync_dir(path: str) -> None:
    """Syncs a folder's entries (where the file system can)."""
    with contextlib.suppress(OSError):  # not every file system syncs folders
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Staging:
    """The staging folder of one write into ``folder`` (see the module).

    It pickles (a distributed job's tasks write into the same one, with its storage
    options); nothing is created until :meth:`create`.

    Attributes:
        folder: the destination folder (absolute, or a URL).
        path: the staging folder inside it.
        storage_options: for a URL, fsspec keyword arguments for its filesystem (see
            :mod:`tfrecord_engine.storage.options`): every move, listing and removal
            here, and the shards' writers, use them.
    """

    def __init__(
        self, folder: str, token: str | None = None, storage_options: StorageOptionsArg = None
    ) -> None:
        self.storage_options: StorageOptions | None = normalize_storage_options(storage_options)
        self.url = remote.is_url(folder)
        if self.url:
            remote.check_writable(folder)
            self.folder = folder.rstrip("/")
        else:
            self.folder = os.path.abspath(remote.local_path(folder))
        self.path = self.join(self.folder, STAGING_PREFIX + (token or uuid.uuid4().hex))

    def join(self, folder: str, name: str) -> str:
        """``folder/name`` for this kind of storage."""
        return f"{folder}/{name}" if self.url else os.path.join(folder, name)

    def staged(self, name: str) -> str:
        """Where a shard named ``name`` is staged."""
        return self.join(self.path, name)

    def create(self) -> None:
        """Creates the destination and staging folders (a no-op on object stores)."""
        if self.url:
            fs, inner = remote.filesystem(self.path, self.storage_options)
            fs.makedirs(inner, exist_ok=True)
        else:
            os.makedirs(self.path, exist_ok=True)

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a file, a link or a folder)."""
        if self.url:
            fs, inner = remote.filesystem(path, self.storage_options)
            return bool(fs.exists(inner))
        return os.path.lexists(path)

    def remove(self, path: str) -> None:
        """Removes a published shard and its index (a missing one is fine)."""
        for p in (path, index_path_for(path)):
            if self.url:
                fs, inner = remote.filesystem(p, self.storage_options)
                with contextlib.suppress(FileNotFoundError):
                    fs.rm(inner)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)

    def _move(self, src: str, dst: str) -> None:
        if self.url:
            fs, inner = remote.filesystem(src, self.storage_options)
            fs.mv(inner, remote.filesystem(dst, self.storage_options)[1])
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)

    def publish(self, moves: Sequence[tuple[str, str]], *, index: bool) -> list[str]:
        """Renames each staged ``(name, final path)`` shard (and its index), then removes
        the staging folder; returns the final paths.

        A shard already at a final path is replaced (as a writer replaces a file).
        """
        try:
            for name, final in moves:
                src = self.staged(name)
                self._move(src, final)
                if index:
                    self._move(index_path_for(src), index_path_for(final))
            if not self.url:
                for folder in sorted({os.path.dirname(f) for _, f in moves}):
                    fsync_dir(folder)
        finally:
            self.abort()
        return [final for _, final in moves]

    def abort(self) -> None:
        """Removes the staging folder and everything in it."""
        if self.url:
            fs, inner = remote.filesystem(self.path, self.storage_options)
            with contextlib.suppress(FileNotFoundError):
                fs.rm(inner, recursive=True)
        else:
            shutil.rmtree(self.path, ignore_errors=True)
