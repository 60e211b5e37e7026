"""Apache Beam I/O for TFRecord files, split at record boundaries by the sidecar index.

The ``beam`` extra (``pip install -e '.[beam]'`` in a clone). Reading and writing:

- :class:`ReadTFRecords` matches file patterns, then reads each file through a
  **splittable DoFn** whose restriction is a range of record numbers. The pieces are cut
  at record boundaries taken from each file's index (the ``.tfeidx`` sidecar, built on
  the worker when missing), so one big file spreads over many bundles, and the runner may
  split a piece again while it is read (dynamic rebalancing). GZIP/ZLIB files split only
  at their restart points (our writer's full flushes, the member starts of bgzip,
  concatenated or appended GZIP files); a single stream without any is one piece.
  Every CRC is checked by this package's reader (no ``crcmod``); under
  ``on_damage="skip"`` the damaged regions come out as
  :class:`~tfrecord_engine.DamageReport` values on a tagged output, ``"damage"``.
- :class:`WriteTFRecords` writes shards with :class:`~tfrecord_engine.TFRecordWriter`
  (``index=True`` by default) into a hidden temporary folder beside the output, and
  publishes each shard and its index together once every bundle has finished.

Whole-file operations on the workers (docs/scale-out.md): :class:`BuildIndexes`,
:class:`VerifyShards` (damage as data), :class:`CountRecords` (from indexes, no data
read) and :class:`Reshard` (a seeded global permutation into shards of even sizes).

How a read is cut (one file of ``n`` records)::

    match patterns -> Reshuffle -> index each file -> restriction [0, n + 1)
      positions 0 .. n-1: the records; position n: the file's damage reports (if any)
      initial split: at record boundaries about ``desired_bundle_bytes`` apart
      try_split: any record (plain files) or the next restart point (GZIP/ZLIB)

This module imports ``apache_beam``; the rest of the package never does.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import dataclasses
import itertools
import os
import re
import secrets
import struct
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

import numpy as np

from .data.dataset import RecordDataset
from .data.samples import sample_of
from .errors import (
    DataLossError,
    IndexFormatError,
    InvalidArgumentError,
    MissingDependencyError,
    StaleIndexError,
    install_hint,
)
from .example import parse_example, parse_single_example
from .hosts.fileops import (
    DEFAULT_SORT_MEMORY,
    FileCount,
    IndexSummary,
    PositionTable,
    ReshardLayout,
    ShardReport,
    SortedSpill,
    check_span,
    contiguous,
    count_file,
    index_file,
    merge_damage,
    verify_file,
)
from .index.placement import index_path_for, normalize_placement
from .index.sidecar import INDEX_SUFFIX, Index
from .records import framing
from .records.compression import Compression, normalize_compression
from .records.recovery import DamageReport, normalize_policy
from .storage import remote
from .writing.writer import TFRecordWriter

try:
    import apache_beam as beam
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
    from apache_beam.metrics import Metrics
    from apache_beam.transforms.core import RestrictionProvider
    from apache_beam.transforms.window import GlobalWindows
except ImportError as exc:
    raise MissingDependencyError(
        f"tfrecord_engine.beam needs Apache Beam ({exc}): {install_hint('beam')}"
    ) from exc

__all__ = [
    "DAMAGE",
    "DEFAULT_BUNDLE_BYTES",
    "DEFAULT_SHARD_NAME_TEMPLATE",
    "FILES",
    "TOTAL",
    "BuildIndexes",
    "CountRecords",
    "FileCount",
    "IndexSummary",
    "ReadTFRecords",
    "Reshard",
    "ShardReport",
    "VerifyShards",
    "WriteTFRecords",
    "detect_compression",
]

#: The tag of the damage output of ``ReadTFRecords(..., on_damage="skip")``.
DAMAGE: Final = "damage"
#: The tag of the records output (``result.records``) under ``on_damage="skip"``.
RECORDS: Final = "records"
#: The default size of the pieces a file is first cut into (Beam's file sources use 64 MiB).
DEFAULT_BUNDLE_BYTES: Final = 64 << 20
#: Beam's own default: ``prefix-00003-of-00010suffix``.
DEFAULT_SHARD_NAME_TEMPLATE: Final = "-SSSSS-of-NNNNN"
#: Records read from a file per read call (claims stay per record).
_CHUNK: Final = 1024
#: Datasets (open indexes) a reading DoFn keeps open.
_OPEN_FILES: Final = 16
_SIDECARS: Final = (INDEX_SUFFIX, ".tfindex")
#: Beam metric: pieces (restrictions) the reading DoFn processed, split residuals included.
_PIECES = Metrics.counter("tfrecord_engine.beam", "pieces")
_LENGTH_HEADER = struct.Struct("<QI")


# ---- reading ---------------------------------------------------------------------------


def detect_compression(path: str) -> Compression:
    """The compression of a TFRecord file, recognised from its first bytes.

    A valid uncompressed record header (length and its masked CRC32C) wins; then the GZIP
    magic, then a ZLIB header. An empty file is uncompressed; anything else is read as
    uncompressed, so the reader reports the damage with its offset.
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        head = f.read(framing.HEADER_SIZE)
    if len(head) == framing.HEADER_SIZE:
        _, crc = _LENGTH_HEADER.unpack(head)
        if framing.mask_crc(framing.crc32c(head[:8])) == crc:
            return Compression.NONE
    if head[:2] == b"\x1f\x8b":
        return Compression.GZIP
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return Compression.ZLIB
    return Compression.NONE


@dataclasses.dataclass(frozen=True)
class _FileTask:
    """One file to read: what the splittable DoFn gets as its element.

    ``pieces`` are the record numbers where the initial split cuts (about
    ``desired_bundle_bytes`` apart); ``cuts`` the record numbers a dynamic split may cut
    at, ``None`` meaning any record. The restriction is ``[0, count + 1)``: position
    ``count`` stands for the file's damage reports.
    """

    path: str
    compression: Compression
    count: int
    size: int
    pieces: tuple[int, ...]
    cuts: tuple[int, ...] | None
    damage: tuple[DamageReport, ...]


def _plan(path: str, compression: Compression, policy: str, bundle_bytes: int) -> _FileTask:
    """Indexes ``path`` (sidecar, or built here and saved) and plans its pieces."""
    reports: list[DamageReport] = []
    idx = Index.open(
        path, compression, on_damage=normalize_policy(policy), on_damage_report=reports.append
    )
    n = len(idx)
    offsets = idx.offsets.astype(np.int64)
    if compression is Compression.NONE:
        starts, where = np.arange(n, dtype=np.int64), offsets
        cuts: tuple[int, ...] | None = None
    else:
        # Decompression can begin at a restart point (our writer's full flushes, at
        # record starts; any tool's member starts, usually inside a record): a piece
        # starts at the first record beginning at or after one.
        restart = idx.restarts.astype(np.int64)
        at = np.searchsorted(offsets, restart[:, 1])
        ok = (at < n) & (at > 0)
        starts, first = np.unique(at[ok], return_index=True)
        where = restart[ok, 0][first]
        cuts = tuple(int(s) for s in starts)
    chosen = _spaced(starts, where, idx.data_size, bundle_bytes)
    pieces = tuple(int(p) for p in chosen if 0 < p < n)
    return _FileTask(path, compression, n, idx.data_size, pieces, cuts, tuple(reports))


def _spaced(
    starts: np.ndarray[Any, Any], where: np.ndarray[Any, Any], size: int, step: int
) -> list[int]:
    """The first of ``starts`` (record numbers, at byte positions ``where``, both
    increasing) at or after each multiple of ``step`` bytes below ``size``."""
    if len(starts) == 0:
        return []
    goals = np.arange(step, size, step, dtype=np.int64)
    at = np.minimum(np.searchsorted(where, goals), len(starts) - 1)
    return sorted({int(s) for s in starts[at]})


class _Piece(OffsetRange):  # type: ignore[misc]
    """A range ``[start, stop)`` of record positions of one file, and where it may be cut.

    ``cuts`` are the record numbers a split may cut at, ``None`` meaning any record (a
    plain file). The halves of a split keep them.
    """

    def __init__(self, start: int, stop: int, cuts: tuple[int, ...] | None) -> None:
        super().__init__(start, stop)
        self.cuts = cuts

    def split_at(self, split_pos: int) -> tuple[_Piece, _Piece]:
        return _Piece(self.start, split_pos, self.cuts), _Piece(split_pos, self.stop, self.cuts)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Piece, (self.start, self.stop, self.cuts))


class _Claim(NamedTuple):
    """A claim of the records ``[start, end)`` in one call of ``try_claim``.

    Claiming record by record costs two Python calls and a lock per record; a claim of a
    whole chunk costs them once. The tracker claims ``[start, min(end, stop))``, or
    nothing when ``start`` is already past the range's end. Either way the reader learns
    what it got from ``current_restriction().stop`` afterwards: a split after a claim
    cuts only after the last claimed record, so ``min(end, stop)`` is the claimed end.
    """

    start: int
    end: int


class _RecordTracker(OffsetRestrictionTracker):  # type: ignore[misc]
    """Beam's offset tracker over record numbers, splitting only where a piece may start.

    For a plain file every record is such a place (Beam's own split). For a GZIP/ZLIB
    file the split point is moved up to the next restart point, the only places a reader
    can start decompressing; without one after the split point there is no split.
    """

    def __init__(self, restriction: _Piece) -> None:
        super().__init__(restriction)
        self._cuts = restriction.cuts
        self._tried: int | None = None

    def try_claim(self, position: int | _Claim) -> bool:
        if isinstance(position, _Claim):
            # Under the runner's tracker lock: claim as much of [start, end) as the
            # range still holds, in one step (claiming a position claims all below it).
            stop = self.current_restriction().stop
            at = max(position.start, min(position.end, stop) - 1)
        else:
            at = position
        self._tried = at
        claimed: bool = super().try_claim(at)
        return claimed

    def try_split(self, fraction_of_remainder: float) -> Any:
        if self._cuts is None:
            return super().try_split(fraction_of_remainder)
        rng = self.current_restriction()
        cur = rng.start - 1 if self._tried is None else self._tried
        want = cur + int(max(1, (rng.stop - cur) * fraction_of_remainder))
        i = bisect.bisect_left(self._cuts, max(want, cur + 1))
        if i == len(self._cuts) or self._cuts[i] >= rng.stop:
            return None
        at = self._cuts[i]
        # Beam computes exactly this split point from this fraction (+0.5 of a record
        # keeps float rounding from landing one record short).
        return super().try_split((at - cur + 0.5) / (rng.stop - cur))


class _PieceProvider(RestrictionProvider):  # type: ignore[misc]
    """Restrictions over one :class:`_FileTask`: record ranges cut at its pieces."""

    def initial_restriction(self, element: _FileTask) -> _Piece:
        return _Piece(0, element.count + 1, element.cuts)

    def create_tracker(self, restriction: _Piece) -> _RecordTracker:
        return _RecordTracker(restriction)

    def split(self, element: _FileTask, restriction: _Piece) -> Iterator[_Piece]:
        bounds = [restriction.start]
        bounds += [p for p in element.pieces if restriction.start < p < restriction.stop]
        bounds.append(restriction.stop)
        for a, b in itertools.pairwise(bounds):
            yield _Piece(a, b, restriction.cuts)

    def restriction_size(self, element: _FileTask, restriction: _Piece) -> float:
        per = element.size / max(1, element.count)
        return float(max(1, restriction.stop - restriction.start) * per)


def _match(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted, index sidecars left out."""
    (result,) = FileSystems.match([pattern])
    paths = sorted(m.path for m in result.metadata_list if not m.path.endswith(_SIDECARS))
    if not paths:
        raise FileNotFoundError(f"no TFRecord file matches {pattern!r}")
    return paths


def _match_all(patterns: Sequence[str]) -> list[str]:
    """The distinct files ``patterns`` match, sorted; each pattern must match one."""
    return sorted({path for pattern in patterns for path in _match(pattern)})


@dataclasses.dataclass(frozen=True)
class _ReadOptions:
    compression: str | None
    features: Mapping[str, Any] | None
    on_damage: str
    batch_size: int | None
    with_filename: bool
    bundle_bytes: int


class _IndexFiles(beam.DoFn):  # type: ignore[misc]
    """path -> :class:`_FileTask` (indexes the file on the worker when it has no index)."""

    def __init__(self, options: _ReadOptions) -> None:
        self._o = options

    def process(self, path: str) -> Iterator[_FileTask]:
        o = self._o
        kind = (
            detect_compression(path)
            if o.compression == "auto"
            else normalize_compression(o.compression)
        )
        yield _plan(path, kind, o.on_damage, o.bundle_bytes)


def _ignore(_report: DamageReport) -> None:
    """Damage is reported once, by the piece that holds the file's last position."""


class _ReadPieces(beam.DoFn):  # type: ignore[misc]
    """The splittable DoFn: reads the records of one piece of one file."""

    def __init__(self, options: _ReadOptions) -> None:
        self._o = options
        self._open: collections.OrderedDict[str, RecordDataset] = collections.OrderedDict()

    def setup(self) -> None:
        self._open = collections.OrderedDict()

    def _dataset(self, task: _FileTask) -> RecordDataset:
        ds = self._open.pop(task.path, None)
        if ds is None:
            ds = RecordDataset(
                task.path,
                features=self._o.features,
                compression=task.compression,
                on_damage=normalize_policy(self._o.on_damage),
                on_damage_report=_ignore,
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
        task: _FileTask,
        tracker: Any = beam.DoFn.RestrictionParam(_PieceProvider()),  # noqa: B008
    ) -> Iterator[Any]:
        o = self._o
        _PIECES.inc()
        pos = tracker.current_restriction().start
        step = _CHUNK if o.batch_size is None else max(o.batch_size, 1)
        while pos < tracker.current_restriction().stop:
            if pos == task.count:  # the file's last position: its damage reports
                if tracker.try_claim(pos):
                    for report in task.damage:
                        yield beam.pvalue.TaggedOutput(DAMAGE, report)
                return
            end = min(pos + step, task.count)
            # Claim before reading: a split may land anywhere after the last claimed
            # record, and what it hands away must not be read here. One claim per chunk.
            if not tracker.try_claim(_Claim(pos, end)):
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
        self, task: _FileTask, indices: np.ndarray[Any, Any]
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
    ) -> None:
        super().__init__()
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
        self._options = _ReadOptions(
            compression, features, policy, batch_size, with_filename, bundle
        )

    def expand(self, pbegin: Any) -> Any:
        o = self._options
        read = (
            pbegin
            # All patterns matched in one step: the distinct files without a Distinct
            # (a shuffle of its own, a fixed cost that dominated reads of a few files).
            | "Patterns" >> beam.Create([tuple(self._patterns)])
            | "Match" >> beam.FlatMap(_match_all)
            | "Reshuffle" >> beam.Reshuffle()
            | "Index" >> beam.ParDo(_IndexFiles(o))
            | "Read" >> beam.ParDo(_ReadPieces(o)).with_outputs(DAMAGE, main=RECORDS)
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


# ---- writing ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _WriteOptions:
    prefix: str
    suffix: str
    template: str
    num_shards: int
    compression: Compression
    index: bool
    max_records: int | None
    temp_dir: str


@dataclasses.dataclass(frozen=True, order=True)
class _TempShard:
    """A complete shard in the temporary folder, waiting to be published.

    ``key`` is its shard key (``num_shards > 0``; -1 for a bundle's shard), ``order``
    sorts the files of one key.
    """

    key: int
    order: str
    path: str
    records: int


def _make_dirs(path: str) -> None:
    try:
        FileSystems.mkdirs(path)
    except OSError:  # it exists (another bundle made it), or the error is real
        if not FileSystems.exists(path):
            raise


class _ShardFiles:
    """Writes one stream of records into temporary shards, a new one every
    ``max_records`` records."""

    def __init__(self, options: _WriteOptions, key: int) -> None:
        self._o = options
        self._key = key
        self._name = uuid.uuid4().hex
        self._done: list[_TempShard] = []
        self._writer: TFRecordWriter | None = None

    def write(self, record: bytes) -> None:
        o = self._o
        w = self._writer
        if w is not None and o.max_records is not None and w.records_written >= o.max_records:
            self._finish()
            w = None
        if w is None:
            _make_dirs(o.temp_dir)
            order = f"{self._name}-{len(self._done):06d}"
            w = TFRecordWriter(FileSystems.join(o.temp_dir, order), o.compression, index=o.index)
            self._writer = w
        try:
            w.write(record)
        except BaseException:
            self.abort()
            raise

    def _finish(self) -> None:
        w, self._writer = self._writer, None
        if w is not None:
            w.close()
            order = os.path.basename(w.path)
            self._done.append(_TempShard(self._key, order, w.path, w.records_written))

    def close(self) -> list[_TempShard]:
        """Publishes the last shard into the temporary folder; returns them all."""
        try:
            self._finish()
        except BaseException:
            self.abort()
            raise
        return self._done

    def abort(self) -> None:
        """Drops the shard being written (nothing of it stays behind)."""
        w, self._writer = self._writer, None
        if w is not None:
            w.abort()


class _WriteBundles(beam.DoFn):  # type: ignore[misc]
    """``num_shards=0``: each bundle writes its own shard(s)."""

    def __init__(self, options: _WriteOptions) -> None:
        self._o = options
        self._files: _ShardFiles | None = None

    def start_bundle(self) -> None:
        self._files = None

    def process(self, record: bytes) -> None:
        if self._files is None:
            self._files = _ShardFiles(self._o, -1)
        self._files.write(record)

    def finish_bundle(self) -> Iterator[Any]:
        files, self._files = self._files, None
        if files is not None:
            for shard in files.close():
                yield GlobalWindows.windowed_value(shard)


class _AssignShards(beam.DoFn):  # type: ignore[misc]
    """Keys records round robin over ``num_shards`` keys from a random start per bundle
    (Beam's own scheme: shard sizes stay within a record per bundle)."""

    def __init__(self, num_shards: int) -> None:
        self._n = num_shards
        self._next = 0

    def start_bundle(self) -> None:
        self._next = secrets.randbelow(self._n)

    def process(self, record: bytes) -> Iterator[tuple[int, bytes]]:
        yield self._next, record
        self._next = (self._next + 1) % self._n


class _WriteGroups(beam.DoFn):  # type: ignore[misc]
    """``num_shards > 0``: the records of one shard key, written together."""

    def __init__(self, options: _WriteOptions) -> None:
        self._o = options

    def process(self, group: tuple[int, Iterable[bytes]]) -> Iterator[_TempShard]:
        key, records = group
        files = _ShardFiles(self._o, key)
        for record in records:
            files.write(record)
        yield from files.close()


def _shard_format(template: str) -> str:
    """Beam's shard template as a format string: S..S -> shard, N..N -> count."""
    if not template:
        return ""
    runs_s = re.findall("S+", template)
    runs_n = re.findall("N+", template)
    if len(runs_s) != 1 or len(runs_n) > 1:
        raise InvalidArgumentError(
            f"shard_name_template must hold one run of S (and at most one of N), got {template!r}"
        )
    out = template.replace("{", "{{").replace("}", "}}")
    out = out.replace(runs_s[0], f"{{0:0{len(runs_s[0])}d}}")
    if runs_n:
        out = out.replace(runs_n[0], f"{{1:0{len(runs_n[0])}d}}")
    return out


def _plan_publish(o: _WriteOptions, shards: Sequence[_TempShard]) -> list[tuple[str | None, str]]:
    """``(temporary path or None for an empty shard, final path)`` of every output file,
    the same for the same shards (so a finalize that runs again plans the same names)."""
    files: list[str | None] = []
    if o.num_shards > 0:
        by_key: dict[int, list[_TempShard]] = collections.defaultdict(list)
        for s in shards:
            by_key[s.key].append(s)
        for key in range(o.num_shards):  # a key with no records still gets its shard
            files += [s.path for s in sorted(by_key[key])] or [None]
    else:
        files = [s.path for s in sorted(shards)] or [None]
    fmt = _shard_format(o.template)
    if not fmt and len(files) != 1:
        raise InvalidArgumentError(
            f"shard_name_template='' names one file, but the write produced {len(files)} "
            "shards (max_records_per_shard?)"
        )
    total = len(files)
    return [(t, o.prefix + fmt.format(i, total) + o.suffix) for i, t in enumerate(files)]


def _publish(o: _WriteOptions, shards: Sequence[_TempShard]) -> list[str]:
    """Moves every temporary shard and its index under its final name, then removes the
    temporary folder. Running it again after a failure finishes the job: a shard whose
    temporary file is gone and whose final file exists was published before."""
    plan = _plan_publish(o, shards)
    for i, (planned, final) in enumerate(plan):
        temp = planned
        if temp is None:
            # An empty shard: written here, then published like the rest. Written again
            # by a finalize that runs again (the same bytes), so that a file left under
            # its name by an earlier pipeline is never taken for it.
            temp = FileSystems.join(o.temp_dir, f"empty-{i:06d}")
            if not FileSystems.exists(temp):
                _make_dirs(o.temp_dir)
                TFRecordWriter(temp, o.compression, index=o.index).close()
        moves = [(temp, final)]
        if o.index:
            # The index goes where the writer keeps it: the hidden .tfeidx/ folder.
            index = index_path_for(final)
            _make_dirs(index.rsplit("/", 1)[0] if "/" in index else ".")
            moves.append((index_path_for(temp), index))
        for src, dst in moves:  # data first: an index never names a missing file
            if FileSystems.exists(src):
                FileSystems.rename([src], [dst])
            elif not FileSystems.exists(dst):
                raise FileNotFoundError(
                    f"{src}: a written shard is missing from the temporary folder and "
                    f"{dst} does not exist"
                )
    with contextlib.suppress(OSError):  # gone already: an earlier finalize removed it
        FileSystems.delete([o.temp_dir])
    return [final for _, final in plan]


class _Finalize(beam.DoFn):  # type: ignore[misc]
    def __init__(self, options: _WriteOptions) -> None:
        self._o = options

    def process(self, shards: list[_TempShard]) -> Iterator[str]:
        yield from _publish(self._o, shards)


class WriteTFRecords(beam.PTransform):  # type: ignore[misc]
    """Writes a PCollection of ``bytes`` as TFRecord shards, each with its index.

    Shards are written with :class:`~tfrecord_engine.TFRecordWriter` (records byte for
    byte as TensorFlow writes them) into a hidden temporary folder beside the output
    (``.tfe-temp-<prefix>-<id>``, which no shard glob matches). Once every bundle has
    finished, each shard and its index (in the hidden ``.tfeidx/`` folder beside the shards,
    which no shard glob matches) are renamed under their final names
    (``prefix`` + the shard name + ``suffix``) and the folder is removed. A bundle that
    fails publishes nothing (its retry writes new files), and the publish step can run
    again after a failure.

    Args:
        file_path_prefix: where the shards go, e.g. ``"out/train"``.
        num_shards: the number of shards; records are spread round robin and a shard
            with no records is written empty. ``0`` (default): one shard per bundle, as
            the runner cuts them.
        shard_name_template: Beam's template: the run of ``S`` becomes the zero-padded
            shard number, the run of ``N`` the count (default ``"-SSSSS-of-NNNNN"``);
            ``""`` names one file (``num_shards`` 1).
        file_name_suffix: appended to every name, e.g. ``".tfrecord"``.
        compression: ``None``, ``"GZIP"`` or ``"ZLIB"``.
        index: write each shard's sidecar index (GZIP/ZLIB shards get restart points, so
            :class:`ReadTFRecords` splits them).
        max_records_per_shard: start a new shard after this many records (a shard key
            of ``num_shards`` may then give several files; all are numbered together).

    The transform returns the published file names (a PCollection of ``str``).
    """

    def __init__(  # noqa: PLR0917 - positional, as Beam's own WriteToTFRecord
        self,
        file_path_prefix: str,
        num_shards: int = 0,
        shard_name_template: str | None = None,
        file_name_suffix: str = "",
        compression: str | None = None,
        index: bool = True,
        max_records_per_shard: int | None = None,
    ) -> None:
        super().__init__()
        template = (
            DEFAULT_SHARD_NAME_TEMPLATE if shard_name_template is None else shard_name_template
        )
        _shard_format(template)  # a bad template fails here
        if num_shards < 0:
            raise InvalidArgumentError(f"num_shards must be >= 0, got {num_shards}")
        if not template:
            if num_shards > 1:
                raise InvalidArgumentError(
                    f"shard_name_template='' names one file; num_shards={num_shards}"
                )
            num_shards = 1
        if max_records_per_shard is not None and max_records_per_shard < 1:
            raise InvalidArgumentError(
                f"max_records_per_shard must be >= 1, got {max_records_per_shard}"
            )
        prefix = os.fspath(file_path_prefix)
        head, tail = FileSystems.split(prefix)
        temp_dir = FileSystems.join(head, f".tfe-temp-{tail}-{uuid.uuid4().hex}")
        self._options = _WriteOptions(
            prefix,
            file_name_suffix,
            template,
            num_shards,
            normalize_compression(compression),
            index,
            max_records_per_shard,
            temp_dir,
        )

    def expand(self, pcoll: Any) -> Any:
        o = self._options
        if o.num_shards > 0:
            shards = (
                pcoll
                | "AssignShards" >> beam.ParDo(_AssignShards(o.num_shards))
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShards" >> beam.ParDo(_WriteGroups(o))
            )
        else:
            shards = pcoll | "WriteBundles" >> beam.ParDo(_WriteBundles(o))
        return (
            shards
            | "CollectShards" >> beam.combiners.ToList()
            | "Publish" >> beam.ParDo(_Finalize(o))
        )


# ---- whole-file operations at scale -----------------------------------------------------


def _patterns_of(pattern_or_patterns: str | Sequence[str], who: str) -> list[str]:
    patterns = (
        [pattern_or_patterns]
        if isinstance(pattern_or_patterns, (str, os.PathLike))
        else list(pattern_or_patterns)
    )
    if not patterns:
        raise InvalidArgumentError(f"{who} needs at least one file pattern")
    return [os.fspath(p) for p in patterns]


def _check_compression(compression: str | None) -> None:
    if compression != "auto":
        normalize_compression(compression)  # a bad value fails here, not on a worker


def _kind_of(path: str, compression: str | None) -> Compression:
    return detect_compression(path) if compression == "auto" else normalize_compression(compression)


def _files(pbegin: Any, patterns: Sequence[str]) -> Any:
    """The distinct files the patterns match, spread over workers."""
    return (
        pbegin
        | "Patterns" >> beam.Create(list(patterns))
        | "Match" >> beam.FlatMap(_match)
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
    ) -> None:
        super().__init__()
        self._patterns = _patterns_of(pattern_or_patterns, "BuildIndexes")
        _check_compression(compression)
        self._placement = normalize_placement(placement)
        policy = normalize_policy(on_damage)
        if policy == "stop":
            raise InvalidArgumentError('BuildIndexes takes on_damage="raise" or "skip", not "stop"')
        self._compression = compression
        self._policy = policy
        self._force = force

    def expand(self, pbegin: Any) -> Any:
        return _files(pbegin, self._patterns) | "Index" >> beam.Map(
            _index_one, self._compression, self._placement, self._policy, self._force
        )


def _index_one(
    path: str, compression: str | None, placement: str, policy: str, force: bool
) -> IndexSummary:
    kind = _kind_of(path, compression)
    return index_file(path, kind, placement=placement, on_damage=policy, force=force)


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


def _check_pieces(path: str, compression: str | None, bundle_bytes: int) -> Iterator[_CheckPiece]:
    """A file to verify, cut at record boundaries about ``bundle_bytes`` apart when a
    fresh index lays out a clean uncompressed file from start to end; else whole."""
    kind = _kind_of(path, compression)
    size = _size_of(path)
    idx = None
    if kind is Compression.NONE and size > bundle_bytes:
        with contextlib.suppress(FileNotFoundError, IndexFormatError):
            idx = Index.load(path)
    if idx is None or not contiguous(idx):
        yield _CheckPiece(path, kind, size)
        return
    n = len(idx)
    offsets = idx.offsets.astype(np.int64)
    cuts = [0, *_spaced(np.arange(n, dtype=np.int64), offsets, size, bundle_bytes), n]
    for a, b in itertools.pairwise(sorted(set(cuts))):
        yield _CheckPiece(path, kind, size, a, int(offsets[a]), size if b == n else int(offsets[b]))


def _check(piece: _CheckPiece) -> tuple[str, tuple[Compression, int, int, list[DamageReport]]]:
    """Verifies one piece: ``(path, (compression, size, intact records, damage))``."""
    if piece.first < 0:
        whole = verify_file(piece.path, piece.compression, piece.size)
        return piece.path, (piece.compression, piece.size, whole.records, list(whole.damage))
    with FileSystems.open(piece.path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.seek(piece.start)
        buf = f.read(piece.stop - piece.start)
    index: list[Index] = []

    def resync(offset: int) -> tuple[int, int]:
        # Only where a header is damaged: the next record the index lists after it.
        if not index:
            index.append(Index.load(piece.path))
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
    """

    def __init__(
        self,
        pattern_or_patterns: str | Sequence[str],
        compression: str | None = "auto",
        desired_bundle_bytes: int | None = None,
    ) -> None:
        super().__init__()
        self._patterns = _patterns_of(pattern_or_patterns, "VerifyShards")
        _check_compression(compression)
        bundle = DEFAULT_BUNDLE_BYTES if desired_bundle_bytes is None else desired_bundle_bytes
        if bundle < 1:
            raise InvalidArgumentError(f"desired_bundle_bytes must be >= 1, got {bundle}")
        self._compression = compression
        self._bundle = bundle

    def expand(self, pbegin: Any) -> Any:
        return (
            _files(pbegin, self._patterns)
            | "Plan" >> beam.FlatMap(_check_pieces, self._compression, self._bundle)
            | "SpreadPieces" >> beam.Reshuffle()
            | "Check" >> beam.Map(_check)
            | "ByFile" >> beam.GroupByKey()
            | "Report" >> beam.Map(_report)
        )


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
    """

    def __init__(
        self, pattern_or_patterns: str | Sequence[str], compression: str | None = "auto"
    ) -> None:
        super().__init__()
        self._patterns = _patterns_of(pattern_or_patterns, "CountRecords")
        _check_compression(compression)
        self._compression = compression

    def expand(self, pbegin: Any) -> dict[str, Any]:
        # "auto" goes through: it is resolved only when a walk needs it (an index knows
        # its file's compression).
        files = _files(pbegin, self._patterns) | "Count" >> beam.Map(count_file, self._compression)
        total = files | "Records" >> beam.Map(_records_of) | "Total" >> beam.CombineGlobally(sum)
        return {FILES: files, TOTAL: total}


@dataclasses.dataclass(frozen=True)
class _Range:
    """Records ``[first, stop)`` of one input of a reshard."""

    path: str
    compression: Compression
    first: int
    stop: int


def _ranges(task: _FileTask) -> Iterator[_Range]:
    """A planned file cut at its pieces (record boundaries about a bundle apart)."""
    bounds = [0, *task.pieces, task.count]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            yield _Range(task.path, task.compression, a, b)


def _count_of(task: _FileTask) -> tuple[str, int]:
    return task.path, task.count


def _layout(
    counts: Iterable[tuple[str, int]],
    shards: int,
    shuffle: bool,
    seed: int,
    options: _WriteOptions | None = None,
) -> ReshardLayout:
    ordered = sorted(counts)  # by path: the layout is the same whatever the bundles did
    if options is not None:
        # Publishing would replace an input that other workers may still be reading.
        fmt = _shard_format(options.template)
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

    def __init__(self) -> None:
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
        ds = RecordDataset(rng.path, compression=rng.compression)
        try:
            if len(ds) != layout.counts[layout.paths.index(rng.path)]:
                raise StaleIndexError(
                    f"{rng.path}: the file changed while the pipeline ran ({len(ds)} records now)"
                )
            for a in range(rng.first, rng.stop, _CHUNK):
                b = min(a + _CHUNK, rng.stop)
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

    def __init__(self, options: _WriteOptions, sort_memory: int) -> None:
        self._o = options
        self._memory = sort_memory

    def process(
        self, group: tuple[int, Iterable[tuple[list[int], list[bytes]]]]
    ) -> Iterator[_TempShard]:
        key, parts = group
        with SortedSpill(self._memory) as ordered:
            for positions, records in parts:
                ordered.add(positions, records)
            files = _ShardFiles(self._o, key)
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
    ) -> None:
        super().__init__()
        if sort_memory_bytes < 0:
            raise InvalidArgumentError(f"sort_memory_bytes must be >= 0, got {sort_memory_bytes}")
        self._sort_memory = sort_memory_bytes
        if num_shards < 1:
            raise InvalidArgumentError(f"Reshard needs num_shards >= 1, got {num_shards}")
        if seed < 0:
            raise InvalidArgumentError(f"seed must be >= 0, got {seed}")
        _check_compression(input_compression)
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
        self._read = _ReadOptions(input_compression, None, "raise", None, False, bundle)
        self._shuffle = shuffle
        self._seed = seed

    def expand(self, patterns: Any) -> Any:
        o, shards, shuffle, seed = self._write, self._write.num_shards, self._shuffle, self._seed
        tasks = (
            patterns
            | "Match" >> beam.FlatMap(_match)
            | "Distinct" >> beam.Distinct()
            | "Reshuffle" >> beam.Reshuffle()
            | "Index" >> beam.ParDo(_IndexFiles(self._read))
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
            | "Locate" >> beam.ParDo(_Locate(), beam.pvalue.AsSingleton(layout))
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteOrdered(o, self._sort_memory))
            | "CollectShards" >> beam.combiners.ToList()
            | "Publish" >> beam.ParDo(_Finalize(o))
        )
