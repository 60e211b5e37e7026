"""``WriteTFRecords``: shards written into a hidden temporary folder beside the output,
each shard and its index published together once every bundle has finished.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import re
import secrets
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from ...errors import InvalidArgumentError
from ...index.placement import index_path_for
from ...records.compression import Compression, normalize_compression
from ...storage.options import StorageOptionsArg, normalize_storage_options
from ...writing.writer import TFRecordWriter
from .storage import Reach, reach_of

__all__ = [
    "DEFAULT_SHARD_NAME_TEMPLATE",
    "Finalize",
    "ShardFiles",
    "TempShard",
    "WriteOptions",
    "WriteTFRecords",
    "publish",
    "shard_format",
]

#: Beam's own default: ``prefix-00003-of-00010suffix``.
DEFAULT_SHARD_NAME_TEMPLATE: Final = "-SSSSS-of-NNNNN"


@dataclasses.dataclass(frozen=True)
class WriteOptions:
    prefix: str
    suffix: str
    template: str
    num_shards: int
    compression: Compression
    index: bool
    max_records: int | None
    temp_dir: str
    #: How URLs are written (set when the transform is applied: see :mod:`.storage`).
    reach: Reach = dataclasses.field(default_factory=Reach)


@dataclasses.dataclass(frozen=True, order=True)
class TempShard:
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


class ShardFiles:
    """Writes one stream of records into temporary shards, a new one every
    ``max_records`` records."""

    def __init__(self, options: WriteOptions, key: int) -> None:
        self._o = options
        self._key = key
        self._name = uuid.uuid4().hex
        self._done: list[TempShard] = []
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
            path = FileSystems.join(o.temp_dir, order)
            w = TFRecordWriter(path, o.compression, index=o.index, storage_options=o.reach.of(path))
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
            self._done.append(TempShard(self._key, order, w.path, w.records_written))

    def close(self) -> list[TempShard]:
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

    def __init__(self, options: WriteOptions) -> None:
        self._o = options
        self._files: ShardFiles | None = None

    def start_bundle(self) -> None:
        self._files = None

    def process(self, record: bytes) -> None:
        if self._files is None:
            self._files = ShardFiles(self._o, -1)
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

    def __init__(self, options: WriteOptions) -> None:
        self._o = options

    def process(self, group: tuple[int, Iterable[bytes]]) -> Iterator[TempShard]:
        key, records = group
        files = ShardFiles(self._o, key)
        for record in records:
            files.write(record)
        yield from files.close()


def shard_format(template: str) -> str:
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


def _plan_publish(o: WriteOptions, shards: Sequence[TempShard]) -> list[tuple[str | None, str]]:
    """``(temporary path or None for an empty shard, final path)`` of every output file,
    the same for the same shards (so a finalize that runs again plans the same names)."""
    files: list[str | None] = []
    if o.num_shards > 0:
        by_key: dict[int, list[TempShard]] = collections.defaultdict(list)
        for s in shards:
            by_key[s.key].append(s)
        for key in range(o.num_shards):  # a key with no records still gets its shard
            files += [s.path for s in sorted(by_key[key])] or [None]
    else:
        files = [s.path for s in sorted(shards)] or [None]
    fmt = shard_format(o.template)
    if not fmt and len(files) != 1:
        raise InvalidArgumentError(
            f"shard_name_template='' names one file, but the write produced {len(files)} "
            "shards (max_records_per_shard?)"
        )
    total = len(files)
    return [(t, o.prefix + fmt.format(i, total) + o.suffix) for i, t in enumerate(files)]


def publish(o: WriteOptions, shards: Sequence[TempShard]) -> list[str]:
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
                TFRecordWriter(
                    temp, o.compression, index=o.index, storage_options=o.reach.of(temp)
                ).close()
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


class Finalize(beam.DoFn):  # type: ignore[misc]
    def __init__(self, options: WriteOptions) -> None:
        self._o = options

    def process(self, shards: list[TempShard]) -> Iterator[str]:
        yield from publish(self._o, shards)


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
        storage_options: fsspec keyword arguments with which the workers write shards
            and indexes to URLs (see docs/remote.md). Default: for ``s3://``, the
            pipeline's ``S3Options`` as s3fs's arguments when any is set, else fsspec's
            configuration. Folders are made and shards published (renamed) by Beam's
            ``FileSystems``, with the pipeline's options.

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
        *,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        super().__init__()
        self._storage_options = normalize_storage_options(storage_options)
        template = (
            DEFAULT_SHARD_NAME_TEMPLATE if shard_name_template is None else shard_name_template
        )
        shard_format(template)  # a bad template fails here
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
        self._options = WriteOptions(
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
        o = dataclasses.replace(self._options, reach=reach_of(self._storage_options, pcoll))
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
            | "Publish" >> beam.ParDo(Finalize(o))
        )
