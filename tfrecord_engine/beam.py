"""Apache Beam I/O for TFRecord files, split at record boundaries by the sidecar index.

``pip install 'tfrecord-engine[beam]'``. Two transforms:

- :class:`ReadTFRecords` matches file patterns, then reads each file through a
  **splittable DoFn** whose restriction is a range of record numbers. The pieces are cut
  at record boundaries taken from each file's index (the ``.tfeidx`` sidecar, built on
  the worker when missing), so one big file spreads over many bundles, and the runner may
  split a piece again while it is read (dynamic rebalancing). GZIP/ZLIB files split only
  at the restart points our writer records; compressed files without any are one piece.
  Every CRC is checked by this package's reader (no ``crcmod``); under
  ``on_damage="skip"`` the damaged regions come out as
  :class:`~tfrecord_engine.DamageReport` values on a tagged output, ``"damage"``.
- :class:`WriteTFRecords` writes shards with :class:`~tfrecord_engine.TFRecordWriter`
  (``index=True`` by default) into a hidden temporary folder beside the output, and
  publishes each shard and its index together once every bundle has finished.

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
    InvalidArgumentError,
    MissingDependencyError,
    StaleIndexError,
)
from .example import parse_example, parse_single_example
from .index.placement import index_path_for
from .index.sidecar import INDEX_SUFFIX, Index
from .records import framing
from .records.compression import Compression, normalize_compression
from .records.recovery import DamageReport, normalize_policy
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
        f"tfrecord_engine.beam needs Apache Beam ({exc}): pip install 'tfrecord-engine[beam]'"
    ) from exc

__all__ = [
    "DAMAGE",
    "DEFAULT_BUNDLE_BYTES",
    "DEFAULT_SHARD_NAME_TEMPLATE",
    "ReadTFRecords",
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
        # A restart point is a full flush at a record boundary: decompression can begin
        # there. Keep those that fall on a record start (our writer's always do).
        restart = idx.restarts.astype(np.int64)
        at = np.searchsorted(offsets, restart[:, 1])
        ok = (at < n) & (at > 0)
        ok[ok] = offsets[at[ok]] == restart[ok, 1]
        starts, where = at[ok], restart[ok, 0]
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
