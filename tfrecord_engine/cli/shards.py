"""Sharded output: ``prefix-00000-of-00010.tfrecord`` files written one after another."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Final

from ..errors import InvalidArgumentError
from ..records.compression import Compression
from ..writing.writer import TFRecordWriter
from .common import is_remote, settings
from .interrupt import whole

__all__ = ["ShardedWriter", "balanced", "plan_shards", "shard_paths"]

_EXTENSIONS: Final = {Compression.NONE: "", Compression.GZIP: ".gz", Compression.ZLIB: ".zz"}


def shard_paths(prefix: str, shards: int, compression: Compression) -> list[str]:
    """Shard names as Beam and TFDS spell them (at least 5 digits), plus ``.gz``/``.zz``.

    >>> shard_paths("out/train", 2, Compression.GZIP)
    ['out/train-00000-of-00002.tfrecord.gz', 'out/train-00001-of-00002.tfrecord.gz']
    """
    width = max(5, len(str(shards)))
    ext = ".tfrecord" + _EXTENSIONS[compression]
    return [f"{prefix}-{i:0{width}d}-of-{shards:0{width}d}{ext}" for i in range(shards)]


def balanced(total: int, shards: int) -> list[int]:
    """``total`` records in ``shards`` shards whose sizes differ by at most one.

    >>> balanced(10, 3)
    [3, 3, 4]
    """
    return [(i + 1) * total // shards - i * total // shards for i in range(shards)]


def plan_shards(total: int, shards: int | None, per_shard: int | None) -> list[int]:
    """The size of each shard, from ``--shards`` or ``--records-per-shard`` (default: one).

    ``--shards N``: sizes within one record of each other. ``--records-per-shard R``:
    R records in every shard but the last, which holds the rest (one empty shard for no
    records).

    >>> plan_shards(1461, None, 500), plan_shards(10, 3, None), plan_shards(0, None, 4)
    ([500, 500, 461], [3, 3, 4], [0])
    """
    if shards is not None and per_shard is not None:
        raise InvalidArgumentError("give --shards or --records-per-shard, not both")
    if per_shard is not None:
        full, rest = divmod(total, per_shard)
        sizes = [per_shard] * full + ([rest] if rest else [])
        return sizes or [0]
    return balanced(total, 1 if shards is None else shards)


class ShardedWriter:
    """Writes ``total`` records into ``shards`` files: that many of sizes that differ by
    at most one, or one file per size given (:func:`plan_shards`).

    Each shard is a :class:`~tfrecord_engine.TFRecordWriter` (atomic, optionally with its
    sidecar index), opened when its first record arrives and published when it is full,
    so at most one file is open. Shards that receive no record (more shards than
    records) are written empty. Writing more or fewer than ``total`` records raises.
    Ctrl-C never cuts the publication of a shard: it is published, or dropped whole.
    """

    def __init__(
        self,
        prefix: str,
        total: int,
        shards: int | Sequence[int],
        compression: Compression,
        *,
        index: bool = True,
    ) -> None:
        counts = balanced(total, shards) if isinstance(shards, int) else list(shards)
        if not counts:
            raise InvalidArgumentError(f"need at least one shard, got {shards}")
        if sum(counts) != total or min(counts) < 0:
            raise InvalidArgumentError(f"shard sizes {counts} do not add up to {total} records")
        self.paths = shard_paths(prefix, len(counts), compression)
        self.total = total
        self.counts = counts
        self._compression = compression
        self._index = index
        self._shard = 0
        self._written = 0  # records in the current shard
        self._writer: TFRecordWriter | None = None
        parent = os.path.dirname(prefix)
        if parent and not is_remote(prefix):
            os.makedirs(parent, exist_ok=True)

    @property
    def published(self) -> int:
        """How many shards are complete and published (the first ones)."""
        return self._shard

    def _publish_full(self) -> None:
        # Publish the current shard once full, and every empty shard after it.
        while self._shard < len(self.paths) and self._written >= self.counts[self._shard]:
            with whole():
                writer = self._writer or self._open(self.paths[self._shard])
                self._writer = None
                writer.close()
                self._shard += 1
                self._written = 0

    def _open(self, path: str) -> TFRecordWriter:
        return TFRecordWriter(
            path,
            self._compression,
            index=self._index,
            storage_options=settings().storage_options,
        )

    def write_many(self, records: Iterable[bytes]) -> None:
        """Writes records in order, moving to the next shard when one is full."""
        for record in records:
            self._publish_full()
            if self._shard >= len(self.paths):
                raise InvalidArgumentError(f"more than the {self.total} records announced")
            if self._writer is None:
                self._writer = self._open(self.paths[self._shard])
            self._writer.write(record)
            self._written += 1

    def close(self) -> None:
        """Publishes the remaining shards; raises if fewer records came than announced."""
        self._publish_full()
        if self._shard < len(self.paths):
            written = sum(self.counts[: self._shard]) + self._written
            self.abort()
            raise InvalidArgumentError(f"{written} records written, {self.total} announced")

    def abort(self) -> None:
        """Drops the shard being written (shards already published stay)."""
        if self._writer is not None:
            with whole():
                self._writer.abort()
                self._writer = None

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
