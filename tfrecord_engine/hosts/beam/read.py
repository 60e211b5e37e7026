"""``ReadTFRecords``: TFRecord files read in pieces by a splittable DoFn (see
:mod:`.pieces` for how a file is cut), every CRC checked, damage as a tagged output.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from ...data.dataset import RecordDataset
from ...data.samples import sample_of
from ...errors import DataLossError, InvalidArgumentError, StaleIndexError
from ...example import parse_example, parse_single_example
from ...index.sidecar import INDEX_SUFFIX
from ...records.compression import normalize_compression
from ...records.recovery import DamageReport, normalize_policy
from ...storage.options import StorageOptionsArg, normalize_storage_options
from .pieces import (
    DEFAULT_BUNDLE_BYTES,
    Claim,
    FileTask,
    PieceProvider,
    detect_compression,
    plan_file,
)
from .storage import Reach, reach_of

__all__ = [
    "CHUNK",
    "DAMAGE",
    "RECORDS",
    "IndexFiles",
    "ReadOptions",
    "ReadPieces",
    "ReadTFRecords",
    "match_pattern",
]

#: The tag of the damage output of ``ReadTFRecords(..., on_damage="skip")``.
DAMAGE: Final = "damage"
#: The tag of the records output (``result.records``) under ``on_damage="skip"``.
RECORDS: Final = "records"

#: Records read from a file per read call (claims stay per record).
CHUNK: Final = 1024
#: Datasets (open indexes) a reading DoFn keeps open.
_OPEN_FILES: Final = 16
_SIDECARS: Final = (INDEX_SUFFIX, ".tfindex")
#: Beam metric: pieces (restrictions) the reading DoFn processed, split residuals included.
_PIECES = Metrics.counter("tfrecord_engine.beam", "pieces")


def match_pattern(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted, index sidecars left out."""
    (result,) = FileSystems.match([pattern])
    paths = sorted(m.path for m in result.metadata_list if not m.path.endswith(_SIDECARS))
    if not paths:
        raise FileNotFoundError(f"no TFRecord file matches {pattern!r}")
    return paths


def _match_patterns(patterns: Sequence[str]) -> list[str]:
    """The distinct files ``patterns`` match, sorted; each pattern must match one."""
    return sorted({path for pattern in patterns for path in match_pattern(pattern)})


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    compression: str | None
    features: Mapping[str, Any] | None
    on_damage: str
    batch_size: int | None
    with_filename: bool
    bundle_bytes: int
    #: How URLs are reached (set when the transform is applied: see :mod:`.storage`).
    reach: Reach = dataclasses.field(default_factory=Reach)


class IndexFiles(beam.DoFn):  # type: ignore[misc]
    """path -> :class:`FileTask` (indexes the file on the worker when it has no index)."""

    def __init__(self, options: ReadOptions) -> None:
        self._o = options

    def process(self, path: str) -> Iterator[FileTask]:
        o = self._o
        kind = (
            detect_compression(path)
            if o.compression == "auto"
            else normalize_compression(o.compression)
        )
        yield plan_file(path, kind, o.on_damage, o.bundle_bytes, o.reach.of(path))


def _ignore(_report: DamageReport) -> None:
    """Damage is reported once, by the piece that holds the file's last position."""


class ReadPieces(beam.DoFn):  # type: ignore[misc]
    """The splittable DoFn: reads the records of one piece of one file."""

    def __init__(self, options: ReadOptions) -> None:
        self._o = options
        self._open: collections.OrderedDict[str, RecordDataset] = collections.OrderedDict()

    def setup(self) -> None:
        self._open = collections.OrderedDict()

    def _dataset(self, task: FileTask) -> RecordDataset:
        ds = self._open.pop(task.path, None)
        if ds is None:
            ds = RecordDataset(
                task.path,
                features=self._o.features,
                compression=task.compression,
                on_damage=normalize_policy(self._o.on_damage),
                on_damage_report=_ignore,
                storage_options=self._o.reach.of(task.path),
            )
            if len(ds) != task.count:
                raise StaleIndexError(
                    f"{task.path}: the file changed while the pipeline ran: it had "
                    f"{task.count} records when its pieces were planned, it has {len(ds)} now"
                )
            while len(self._open) >= _OPEN_FILES:
                self._open.popitem(last=False)
        self._open[task.path] = ds
        return ds

    def process(
        self,
        task: FileTask,
        tracker: Any = beam.DoFn.RestrictionParam(PieceProvider()),  # noqa: B008
    ) -> Iterator[Any]:
        o = self._o
        _PIECES.inc()
        pos = tracker.current_restriction().start
        step = CHUNK if o.batch_size is None else max(o.batch_size, 1)
        while pos < tracker.current_restriction().stop:
            if pos == task.count:  # the file's last position: its damage reports
                if tracker.try_claim(pos):
                    for report in task.damage:
                        yield beam.pvalue.TaggedOutput(DAMAGE, report)
                return
            end = min(pos + step, task.count)
            # Claim before reading: a split may land anywhere after the last claimed
            # record, and what it hands away must not be read here. One claim per chunk.
            if not tracker.try_claim(Claim(pos, end)):
                return
            end = min(end, tracker.current_restriction().stop)
            values, damage = self._read(task, np.arange(pos, end, dtype=np.int64))
            for report in damage:
                yield beam.pvalue.TaggedOutput(DAMAGE, report)
            if values:
                # One element per chunk, flattened by the next (fused) step: an element
                # that leaves a splittable DoFn costs a watermark observation and a
                # timestamp object each, one that leaves a plain DoFn does not.
                yield [(task.path, v) for v in values] if o.with_filename else values
            pos = end

    def _read(
        self, task: FileTask, indices: np.ndarray[Any, Any]
    ) -> tuple[list[Any], list[DamageReport]]:
        """The values to emit for ``indices`` (records, samples or one batch) and the
        damage found while reading them."""
        o = self._o
        ds = self._dataset(task)
        try:
            if o.batch_size is not None:
                return [ds[indices]], []
            return list(ds.__getitems__(indices)), []
        except DataLossError:
            if o.on_damage == "raise":
                raise
        # A record damaged after its index was written: read one by one, keep the rest.
        got, damage = ds.read_salvaged(indices)
        intact = [r for r in got if r is not None]
        if not intact:
            return [], damage
        if o.features is None:
            return ([intact] if o.batch_size is not None else intact), damage
        if o.batch_size is not None:
            return [parse_example(intact, o.features)], damage
        return [sample_of(o.features, parse_single_example(r, o.features)) for r in intact], damage


class ReadTFRecords(beam.PTransform):  # type: ignore[misc]
    """Reads TFRecord files in pieces cut at record boundaries (a splittable DoFn).

    Args:
        pattern_or_patterns: a file pattern (``FileSystems.match`` syntax: local paths,
            ``gs://``, ...) or a list of them. Index sidecars (``*.tfeidx``) are left
            out of the matches; a pattern that matches no file fails the pipeline.
        compression: ``"auto"`` (default: recognised from each file's first bytes),
            ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.
        features: a feature spec (as :func:`tfrecord_engine.parse_example` takes) to
            yield parsed records: one dict per record (a sample, as
            ``RecordDataset(..., features=...)[i]`` returns it), or with ``batch_size``
            one dict of numpy columns per batch. ``None`` yields the raw ``bytes``.
        on_damage: ``"raise"`` fails the pipeline at the first damage, naming the file,
            record and offset. ``"skip"`` reads every intact record and puts a
            :class:`~tfrecord_engine.DamageReport` for each damaged region on the
            ``"damage"`` output: the transform then returns both outputs
            (``result.records``, ``result.damage``, or ``records, damage = result``).
        batch_size: yield lists of up to ``batch_size`` records (or column batches with
            ``features``). A batch never spans two pieces, so some are shorter.
        with_filename: yield ``(path, record_or_batch)`` pairs.
        desired_bundle_bytes: about how many bytes of a file one initial piece covers
            (default :data:`DEFAULT_BUNDLE_BYTES`). Plain files cut at any record,
            GZIP/ZLIB files at restart points only.
        storage_options: fsspec keyword arguments with which the workers read and index
            URLs (see docs/remote.md). Default: for ``s3://``, the pipeline's
            ``S3Options`` (``--s3_endpoint_url``, ``--s3_access_key_id`` ...) as s3fs's
            arguments when any is set, else fsspec's configuration. Patterns are matched
            by Beam's ``FileSystems``, with the pipeline's options.

    Example (``p`` a pipeline)::

        counts = p | ReadTFRecords("data/train-*.tfrecord") | beam.combiners.Count.Globally()
    """

    def __init__(  # noqa: PLR0917 - positional, as Beam's own ReadFromTFRecord
        self,
        pattern_or_patterns: str | Sequence[str],
        compression: str | None = "auto",
        features: Mapping[str, Any] | None = None,
        on_damage: str = "raise",
        batch_size: int | None = None,
        with_filename: bool = False,
        desired_bundle_bytes: int | None = None,
        *,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        patterns = (
            [pattern_or_patterns]
            if isinstance(pattern_or_patterns, (str, os.PathLike))
            else list(pattern_or_patterns)
        )
        if not patterns:
            raise InvalidArgumentError("ReadTFRecords needs at least one file pattern")
        policy = normalize_policy(on_damage)
        if policy == "stop":
            raise InvalidArgumentError(
                'on_damage="stop" has no meaning when pieces of a file are read apart: '
                'use "raise" or "skip"'
            )
        if compression != "auto":
            normalize_compression(compression)  # a bad value fails here, not on a worker
        if batch_size is not None and batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
        bundle = DEFAULT_BUNDLE_BYTES if desired_bundle_bytes is None else desired_bundle_bytes
        if bundle < 1:
            raise InvalidArgumentError(f"desired_bundle_bytes must be >= 1, got {bundle}")
        self._patterns = [os.fspath(p) for p in patterns]
        self._options = ReadOptions(
            compression, features, policy, batch_size, with_filename, bundle
        )

    def expand(self, pbegin: Any) -> Any:
        o = dataclasses.replace(self._options, reach=reach_of(self._storage_options, pbegin))
        read = (
            pbegin
            # All patterns matched in one step: the distinct files without a Distinct
            # (a shuffle of its own, a fixed cost that dominated reads of a few files).
            | "Patterns" >> beam.Create([tuple(self._patterns)])
            | "Match" >> beam.FlatMap(_match_patterns)
            | "Reshuffle" >> beam.Reshuffle()
            | "Index" >> beam.ParDo(IndexFiles(o))
            | "Read" >> beam.ParDo(ReadPieces(o)).with_outputs(DAMAGE, main=RECORDS)
        )
        records = read[RECORDS] | "Unchunk" >> beam.FlatMap(_unchunk)
        return _ReadOutputs(records, read[DAMAGE]) if o.on_damage == "skip" else records


def _unchunk(chunk: list[Any]) -> list[Any]:
    """The values of one chunk of the reading DoFn, as separate elements."""
    return chunk


class _ReadOutputs(NamedTuple):
    """Both outputs of ``ReadTFRecords(..., on_damage="skip")``: ``records, damage =
    result``, ``result.records``, ``result.damage`` or ``result["damage"]``."""

    records: Any
    damage: Any

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return getattr(self, key)
        return tuple.__getitem__(self, key)
