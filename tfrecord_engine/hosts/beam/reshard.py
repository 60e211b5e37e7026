"""``Reshard``: TFRecord files rewritten as shards of even sizes, by default a seeded
global permutation of all their records (the distributed ``tfr reshard --shuffle``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import numpy as np

from ...data.dataset import RecordDataset
from ...errors import InvalidArgumentError, StaleIndexError
from ...records.compression import Compression
from ...storage import remote
from ...storage.options import StorageOptionsArg, normalize_storage_options
from ..fileops import (
    DEFAULT_SORT_MEMORY,
    PositionTable,
    ReshardLayout,
    SortedSpill,
)
from .pieces import DEFAULT_BUNDLE_BYTES, FileTask
from .read import CHUNK, IndexFiles, ReadOptions, match_pattern
from .storage import Reach, reach_of
from .tools import check_compression
from .write import Finalize, ShardFiles, TempShard, WriteOptions, WriteTFRecords, shard_format

__all__ = ["Reshard"]


@dataclasses.dataclass(frozen=True)
class _Range:
    """Records ``[first, stop)`` of one input of a reshard."""

    path: str
    compression: Compression
    first: int
    stop: int


def _ranges(task: FileTask) -> Iterator[_Range]:
    """A planned file cut at its pieces (record boundaries about a bundle apart)."""
    bounds = [0, *task.pieces, task.count]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            yield _Range(task.path, task.compression, a, b)


def _count_of(task: FileTask) -> tuple[str, int]:
    return task.path, task.count


def _layout(
    counts: Iterable[tuple[str, int]],
    shards: int,
    shuffle: bool,
    seed: int,
    options: WriteOptions | None = None,
) -> ReshardLayout:
    ordered = sorted(counts)  # by path: the layout is the same whatever the bundles did
    if options is not None:
        # Publishing would replace an input that other workers may still be reading.
        fmt = shard_format(options.template)
        for i in range(shards):
            final = options.prefix + fmt.format(i, shards) + options.suffix
            if any(remote.same_file(final, path) for path, _ in ordered):
                raise InvalidArgumentError(
                    f"an output shard of Reshard would replace an input: {final}"
                )
    return ReshardLayout(
        tuple(p for p, _ in ordered), tuple(n for _, n in ordered), shards, shuffle, seed
    )


class _Locate(beam.DoFn):  # type: ignore[misc]
    """Reads one range; emits, per output shard, the records it holds of each chunk of
    the range with their output positions (one element per chunk and shard, not per
    record: Beam's cost is per element)."""

    def __init__(self, reach: Reach) -> None:
        self._reach = reach
        self._table: tuple[ReshardLayout, PositionTable, dict[str, int]] | None = None

    def _positions(self, layout: ReshardLayout) -> tuple[PositionTable, dict[str, int]]:
        # Built once per worker (and layout): every range of the pipeline shares it.
        if self._table is None or self._table[0] != layout:
            starts = dict(
                zip(layout.paths, itertools.accumulate((0, *layout.counts)), strict=False)
            )
            self._table = (layout, PositionTable(layout), starts)
        return self._table[1], self._table[2]

    def process(
        self, rng: _Range, layout: ReshardLayout
    ) -> Iterator[tuple[int, tuple[list[int], list[bytes]]]]:
        table, starts = self._positions(layout)
        start = starts[rng.path]
        ds = RecordDataset(
            rng.path, compression=rng.compression, storage_options=self._reach.of(rng.path)
        )
        try:
            if len(ds) != layout.counts[layout.paths.index(rng.path)]:
                raise StaleIndexError(
                    f"{rng.path}: the file changed while the pipeline ran ({len(ds)} records now)"
                )
            for a in range(rng.first, rng.stop, CHUNK):
                b = min(a + CHUNK, rng.stop)
                records = ds.__getitems__(np.arange(a, b, dtype=np.int64))
                positions = table.positions(start + a, b - a)
                shards = table.shards_of(positions)
                order = np.argsort(shards, kind="stable")
                cuts = np.flatnonzero(np.diff(shards[order])) + 1
                for group in np.split(order, cuts):
                    yield (
                        int(shards[group[0]]),
                        (positions[group].tolist(), [records[i] for i in group.tolist()]),
                    )
        finally:
            ds.close()


class _WriteOrdered(beam.DoFn):  # type: ignore[misc]
    """The records of one output shard, written in the order of their positions (sorted
    in memory up to ``sort_memory`` bytes, else through a local spill file)."""

    def __init__(self, options: WriteOptions, sort_memory: int) -> None:
        self._o = options
        self._memory = sort_memory

    def process(
        self, group: tuple[int, Iterable[tuple[list[int], list[bytes]]]]
    ) -> Iterator[TempShard]:
        key, parts = group
        with SortedSpill(self._memory) as ordered:
            for positions, records in parts:
                ordered.add(positions, records)
            files = ShardFiles(self._o, key)
            for record in ordered:
                files.write(record)
            yield from files.close()


class Reshard(beam.PTransform):  # type: ignore[misc]
    """Rewrites TFRecord files as ``num_shards`` shards, by default a seeded **global**
    permutation of all records of all inputs: the distributed ``tfr reshard --shuffle``.

    Applied to a PCollection of file patterns (``str``: ``beam.Create(["raw/*"])``, or
    the file names another write returned); their matches are the inputs. Why patterns
    and not records: a global permutation that is the same on every run needs a stable
    name for each record, and ``(file, record number)`` is one, which an element of an
    arbitrary PCollection lacks (and shard sizes within one record need the total first).

    How (every step on the workers; nothing but counts on one of them)::

        patterns -> match -> index each file (counts; pieces about a bundle apart)
          -> counts of all files (sorted by path): the layout, a side input
          -> read each piece; record r of file f gets the global number start(f) + r
             and the output position that number has in the seeded permutation
          -> group by output shard -> sort by position -> write -> publish all shards

    The permutation is the engine's own (``epoch_order(total, shuffle=True, seed=seed)``,
    what ``RecordDataset.batches(shuffle=True, seed=seed)`` and ``tfr reshard --shuffle
    --seed`` use), so for the same inputs and seed the shards hold the same records in
    the same order as the CLI's; output shard ``i`` takes positions ``[i * total // n,
    (i + 1) * total // n)``, so sizes differ by at most one. The result depends on the
    matched files, their records and the seed only: not on the runner, the bundles, the
    order of the patterns or of their matches. Shards are published through
    :class:`WriteTFRecords`' atomic step (each with its index by default).

    Costs: every reading worker holds the inverse permutation (8 bytes per input record,
    built once per worker). A shard's writer sorts its records by position in memory up
    to ``sort_memory_bytes``; a larger shard spills them to a file in the worker's
    temporary folder and reads them back in order (8 bytes per record in memory, and
    the shard's size on local disk). On a cluster,
    run :class:`BuildIndexes` over inputs that have no index first, or each worker
    indexes again the files it reads.

    Args:
        file_path_prefix, shard_name_template, file_name_suffix, compression, index: as
            :class:`WriteTFRecords` (e.g. ``file_name_suffix=".tfrecord"`` names the
            shards as ``tfr reshard`` does).
        num_shards: output shards (``>= 1``; more than records writes some empty).
        shuffle: ``False`` keeps the records in input order (files sorted by path).
        seed: the permutation's seed (``>= 0``).
        input_compression: the inputs' compression, ``"auto"`` (each file's own).
        desired_bundle_bytes: about how many bytes of an input one read covers.
        sort_memory_bytes: bytes of one shard sorted in memory before spilling to local
            disk (default 256 MiB).
        storage_options: fsspec keyword arguments with which inputs are read and shards
            written at URLs (one store; see :class:`ReadTFRecords`: default, the
            pipeline's ``S3Options`` for ``s3://``).

    The transform returns the published file names.
    """

    def __init__(
        self,
        file_path_prefix: str,
        num_shards: int,
        shuffle: bool = True,
        seed: int = 0,
        *,
        shard_name_template: str | None = None,
        file_name_suffix: str = "",
        compression: str | None = None,
        index: bool = True,
        input_compression: str | None = "auto",
        desired_bundle_bytes: int | None = None,
        sort_memory_bytes: int = DEFAULT_SORT_MEMORY,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        if sort_memory_bytes < 0:
            raise InvalidArgumentError(f"sort_memory_bytes must be >= 0, got {sort_memory_bytes}")
        self._sort_memory = sort_memory_bytes
        if num_shards < 1:
            raise InvalidArgumentError(f"Reshard needs num_shards >= 1, got {num_shards}")
        if seed < 0:
            raise InvalidArgumentError(f"seed must be >= 0, got {seed}")
        check_compression(input_compression)
        bundle = DEFAULT_BUNDLE_BYTES if desired_bundle_bytes is None else desired_bundle_bytes
        if bundle < 1:
            raise InvalidArgumentError(f"desired_bundle_bytes must be >= 1, got {bundle}")
        writer = WriteTFRecords(
            file_path_prefix,
            num_shards,
            shard_name_template,
            file_name_suffix,
            compression,
            index,
        )
        self._write = writer._options
        self._read = ReadOptions(input_compression, None, "raise", None, False, bundle)
        self._shuffle = shuffle
        self._seed = seed

    def expand(self, patterns: Any) -> Any:
        reach = reach_of(self._storage_options, patterns)
        o = dataclasses.replace(self._write, reach=reach)
        shards, shuffle, seed = o.num_shards, self._shuffle, self._seed
        tasks = (
            patterns
            | "Match" >> beam.FlatMap(match_pattern)
            | "Distinct" >> beam.Distinct()
            | "Reshuffle" >> beam.Reshuffle()
            | "Index" >> beam.ParDo(IndexFiles(dataclasses.replace(self._read, reach=reach)))
        )
        layout = (
            tasks
            | "Counts" >> beam.Map(_count_of)
            | "AllCounts" >> beam.combiners.ToList()
            | "Layout" >> beam.Map(_layout, shards, shuffle, seed, o)
        )
        return (
            tasks
            | "Ranges" >> beam.FlatMap(_ranges)
            | "SpreadRanges" >> beam.Reshuffle()
            | "Locate" >> beam.ParDo(_Locate(reach), beam.pvalue.AsSingleton(layout))
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteOrdered(o, self._sort_memory))
            | "CollectShards" >> beam.combiners.ToList()
            | "Publish" >> beam.ParDo(Finalize(o))
        )
