"""Whole-file operations on the workers (docs/scale-out.md): ``BuildIndexes``,
``VerifyShards`` (damage as data) and ``CountRecords`` (from indexes, no data read).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from ...errors import IndexFormatError, InvalidArgumentError
from ...index.placement import normalize_placement
from ...index.sidecar import Index
from ...records.compression import Compression, normalize_compression
from ...records.recovery import DamageReport, normalize_policy
from ...storage.options import StorageOptionsArg, normalize_storage_options
from ..fileops import (
    FileCount,
    IndexSummary,
    ShardReport,
    check_span,
    contiguous,
    count_file,
    index_file,
    merge_damage,
    verify_file,
)
from .pieces import DEFAULT_BUNDLE_BYTES, detect_compression, spaced
from .read import match_pattern
from .storage import Reach, reach_of

__all__ = [
    "FILES",
    "TOTAL",
    "BuildIndexes",
    "CountRecords",
    "VerifyShards",
    "check_compression",
    "check_pieces",
]


def _patterns_of(pattern_or_patterns: str | Sequence[str], who: str) -> list[str]:
    patterns = (
        [pattern_or_patterns]
        if isinstance(pattern_or_patterns, (str, os.PathLike))
        else list(pattern_or_patterns)
    )
    if not patterns:
        raise InvalidArgumentError(f"{who} needs at least one file pattern")
    return [os.fspath(p) for p in patterns]


def check_compression(compression: str | None) -> None:
    if compression != "auto":
        normalize_compression(compression)  # a bad value fails here, not on a worker


def _kind_of(path: str, compression: str | None) -> Compression:
    return detect_compression(path) if compression == "auto" else normalize_compression(compression)


def _files(pbegin: Any, patterns: Sequence[str]) -> Any:
    """The distinct files the patterns match, spread over workers."""
    return (
        pbegin
        | "Patterns" >> beam.Create(list(patterns))
        | "Match" >> beam.FlatMap(match_pattern)
        | "Distinct" >> beam.Distinct()
        | "Reshuffle" >> beam.Reshuffle()
    )


class BuildIndexes(beam.PTransform):  # type: ignore[misc]
    """Builds each matched file's index on the workers; one :class:`IndexSummary` per file.

    Indexes built for a dataset go where the library's own writer and ``tfr index`` put
    them (``placement="hidden"``, the default): the hidden ``.tfeidx/`` folder beside the
    data, which travels with the dataset, is found by every later reader on any machine,
    and is matched by no shard glob. ``placement="cache"`` writes each *worker's* user
    cache instead (useful only where the readers run on those same machines);
    ``"beside"`` the pre-0.2 ``<file>.tfeidx``, which ``train-*`` globs match. See
    docs/indexes.md.

    A valid index already at the placement (for ``"hidden"``, also an old sidecar beside
    the data) is kept unless ``force=True``: a writer's index holds a GZIP/ZLIB file's
    restart points, which a rebuild cannot recover.

    Args:
        pattern_or_patterns: file pattern(s), as :class:`ReadTFRecords` takes them.
        compression: ``"auto"`` (default), ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.
        placement: ``"hidden"`` (default), ``"cache"`` or ``"beside"``.
        on_damage: ``"raise"`` (default) fails the pipeline at damage; ``"skip"`` indexes
            the intact records (every CRC checked) and lists the damage in the summary.
        force: rebuild valid indexes too.
        storage_options: fsspec keyword arguments for URLs, as :class:`ReadTFRecords`
            takes them (default: the pipeline's ``S3Options`` for ``s3://``).

    Example (``p`` a pipeline)::

        summaries = p | BuildIndexes("gs://bucket/data/train-*")
    """

    def __init__(
        self,
        pattern_or_patterns: str | Sequence[str],
        compression: str | None = "auto",
        *,
        placement: str = "hidden",
        on_damage: str = "raise",
        force: bool = False,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        self._patterns = _patterns_of(pattern_or_patterns, "BuildIndexes")
        check_compression(compression)
        self._placement = normalize_placement(placement)
        policy = normalize_policy(on_damage)
        if policy == "stop":
            raise InvalidArgumentError('BuildIndexes takes on_damage="raise" or "skip", not "stop"')
        self._compression = compression
        self._policy = policy
        self._force = force

    def expand(self, pbegin: Any) -> Any:
        reach = reach_of(self._storage_options, pbegin)
        return _files(pbegin, self._patterns) | "Index" >> beam.Map(
            _index_one, self._compression, self._placement, self._policy, self._force, reach
        )


def _index_one(  # noqa: PLR0917 - beam.Map's extra arguments are positional
    path: str, compression: str | None, placement: str, policy: str, force: bool, reach: Reach
) -> IndexSummary:
    kind = _kind_of(path, compression)
    return index_file(
        path,
        kind,
        placement=placement,
        on_damage=policy,
        force=force,
        storage_options=reach.of(path),
    )


@dataclasses.dataclass(frozen=True)
class _CheckPiece:
    """Bytes ``[start, stop)`` of an uncompressed file, beginning with record ``first``;
    ``first == -1``: the whole file, read from start to end."""

    path: str
    compression: Compression
    size: int
    first: int = -1
    start: int = 0
    stop: int = 0


def _size_of(path: str) -> int:
    (size,) = (m.size_in_bytes for m in FileSystems.match([path])[0].metadata_list)
    return int(size)


def check_pieces(
    path: str, compression: str | None, bundle_bytes: int, reach: Reach | None = None
) -> Iterator[_CheckPiece]:
    """A file to verify, cut at record boundaries about ``bundle_bytes`` apart when a
    fresh index lays out a clean uncompressed file from start to end; else whole."""
    kind = _kind_of(path, compression)
    size = _size_of(path)
    idx = None
    if kind is Compression.NONE and size > bundle_bytes:
        options = None if reach is None else reach.of(path)
        with contextlib.suppress(FileNotFoundError, IndexFormatError):
            idx = Index.load(path, storage_options=options)
    if idx is None or not contiguous(idx):
        yield _CheckPiece(path, kind, size)
        return
    n = len(idx)
    offsets = idx.offsets.astype(np.int64)
    cuts = [0, *spaced(np.arange(n, dtype=np.int64), offsets, size, bundle_bytes), n]
    for a, b in itertools.pairwise(sorted(set(cuts))):
        yield _CheckPiece(path, kind, size, a, int(offsets[a]), size if b == n else int(offsets[b]))


def _check(
    piece: _CheckPiece, reach: Reach
) -> tuple[str, tuple[Compression, int, int, list[DamageReport]]]:
    """Verifies one piece: ``(path, (compression, size, intact records, damage))``."""
    options = reach.of(piece.path)
    if piece.first < 0:
        whole = verify_file(piece.path, piece.compression, piece.size, options)
        return piece.path, (piece.compression, piece.size, whole.records, list(whole.damage))
    with FileSystems.open(piece.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.seek(piece.start)
        buf = f.read(piece.stop - piece.start)
    index: list[Index] = []

    def resync(offset: int) -> tuple[int, int]:
        # Only where a header is damaged: the next record the index lists after it.
        if not index:
            index.append(Index.load(piece.path, storage_options=options))
        offsets = index[0].offsets.astype(np.int64)
        k = int(np.searchsorted(offsets, offset, side="right"))
        return (k, int(offsets[k])) if k < len(offsets) else (k, piece.size)

    n, damage = check_span(
        buf, path=piece.path, first=piece.first, start=piece.start, resync=resync
    )
    if len(buf) < piece.stop - piece.start:
        damage.append(
            DamageReport(
                piece.path,
                piece.first + n,
                piece.start + len(buf),
                piece.stop - piece.start - len(buf),
                "the file ends before the end its index gives: it was truncated",
            )
        )
    return piece.path, (piece.compression, piece.size, n, damage)


def _report(
    group: tuple[str, Iterable[tuple[Compression, int, int, list[DamageReport]]]],
) -> ShardReport:
    path, parts = group
    parts = list(parts)
    kind, size = parts[0][0], parts[0][1]
    damage = merge_damage([r for p in parts for r in p[3]])
    return ShardReport(path, kind, sum(p[2] for p in parts), size, damage)


class VerifyShards(beam.PTransform):  # type: ignore[misc]
    """Reads every record of every matched file on the workers, both CRCs checked; one
    :class:`ShardReport` per file.

    Damage is data here, never a pipeline failure: a report lists each damaged region
    as a :class:`~tfrecord_engine.DamageReport` (``report.ok`` is ``False``), as
    ``tfr verify`` prints them.

    A large uncompressed file whose index is fresh (size and fingerprint match) and lays
    its records out from the first byte to the last with no gap is checked in pieces
    of about ``desired_bundle_bytes``, cut at the record boundaries the index gives, on
    many workers; the index only says where pieces start, every byte is still read and
    every header and data CRC checked. There a damaged header is stepped over to the
    next record the index lists, and ``record_index`` is the damaged record's number in
    the file. Other files (compressed, no or a stale index, smaller than a piece) are
    read whole by one worker, start to end, as ``tfr verify`` reads them (the reader
    steps over each damaged region to the next intact record).

    Example (``p`` a pipeline)::

        damaged = (p | VerifyShards("data/*.tfrecord")
                     | beam.Filter(lambda r: not r.ok))

    ``storage_options``: fsspec keyword arguments for URLs, as :class:`ReadTFRecords`
    takes them (default: the pipeline's ``S3Options`` for ``s3://``).
    """

    def __init__(
        self,
        pattern_or_patterns: str | Sequence[str],
        compression: str | None = "auto",
        desired_bundle_bytes: int | None = None,
        *,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        self._patterns = _patterns_of(pattern_or_patterns, "VerifyShards")
        check_compression(compression)
        bundle = DEFAULT_BUNDLE_BYTES if desired_bundle_bytes is None else desired_bundle_bytes
        if bundle < 1:
            raise InvalidArgumentError(f"desired_bundle_bytes must be >= 1, got {bundle}")
        self._compression = compression
        self._bundle = bundle

    def expand(self, pbegin: Any) -> Any:
        reach = reach_of(self._storage_options, pbegin)
        return (
            _files(pbegin, self._patterns)
            | "Plan" >> beam.FlatMap(check_pieces, self._compression, self._bundle, reach)
            | "SpreadPieces" >> beam.Reshuffle()
            | "Check" >> beam.Map(_check, reach)
            | "ByFile" >> beam.GroupByKey()
            | "Report" >> beam.Map(_report)
        )


def _count_one(path: str, compression: str | None, reach: Reach) -> FileCount:
    return count_file(path, compression, reach.of(path))


def _records_of(count: FileCount) -> int:
    return count.records


#: The key of :class:`CountRecords`' per-file counts and of its total.
FILES: Final = "files"
TOTAL: Final = "total"


class CountRecords(beam.PTransform):  # type: ignore[misc]
    """Counts the records of every matched file on the workers.

    A fresh index (the hidden ``.tfeidx/`` folder, an old sidecar, or the worker's
    user cache; checked against the file's size and fingerprint) gives a file's count
    without reading its records (the freshness check reads the size and at most 64 KiB
    of fingerprint samples); a missing, stale or damaged one falls back to walking the
    record headers (payloads are not read, no index is written).

    Returns a dict of two PCollections: ``result["files"]`` one :class:`FileCount` per
    file (``from_index`` says which way it was counted), ``result["total"]`` one ``int``.

    Example (``p`` a pipeline)::

        total = (p | CountRecords("data/train-*"))["total"]

    ``storage_options``: fsspec keyword arguments for URLs, as :class:`ReadTFRecords`
    takes them (default: the pipeline's ``S3Options`` for ``s3://``).
    """

    def __init__(
        self,
        pattern_or_patterns: str | Sequence[str],
        compression: str | None = "auto",
        *,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        self._patterns = _patterns_of(pattern_or_patterns, "CountRecords")
        check_compression(compression)
        self._compression = compression

    def expand(self, pbegin: Any) -> dict[str, Any]:
        # "auto" goes through: it is resolved only when a walk needs it (an index knows
        # its file's compression).
        reach = reach_of(self._storage_options, pbegin)
        files = _files(pbegin, self._patterns) | "Count" >> beam.Map(
            _count_one, self._compression, reach
        )
        total = files | "Records" >> beam.Map(_records_of) | "Total" >> beam.CombineGlobally(sum)
        return {FILES: files, TOTAL: total}
