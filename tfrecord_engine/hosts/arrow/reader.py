"""TFRecord files, or any epoch of a ``RecordDataset``, as Arrow record batches.

:class:`ArrowBatches` runs one epoch (file order by default; shuffled, sharded and
resumable exactly as :meth:`tfrecord_engine.RecordDataset.batches`, with the same state
dicts) and yields one ``pyarrow.RecordBatch`` per batch. Records are read as spans of
one buffer where they lie in one uncompressed local file (no ``bytes`` per record),
CRC-checked, and decoded in chunks of at least :data:`CHUNK_RECORDS` records (then cut
into batches: decoding pays per chunk, not per batch). A chunk that fails to decode is
decoded batch by batch, so an error surfaces at the batch that holds it, after the
batches before it; it names the file, the record and its offset.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...data.dataset import RecordDataset
from ...data.sampler import IndexBatch, IndexBatchIterator, Shuffle
from ...errors import DataLossError, InvalidArgumentError, ParseError
from ...example.batch import join_records
from ...index.damage import reporter
from ...records.recovery import DamageCallback
from .decode import RAW_COLUMN, ExampleBatches, raw_batch
from .infer import DEFAULT_SAMPLE, infer_schema
from .plan import is_schema, plan_of
from .sequence import SequenceBatches, sequence_plans

__all__ = [
    "CHUNK_RECORDS",
    "DEFAULT_BATCH_SIZE",
    "ArrowBatches",
    "Order",
    "RangeOrder",
    "RecordType",
    "epoch_order",
    "make_decoder",
    "record_type_of",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
#: Rows per record batch by default.
DEFAULT_BATCH_SIZE: Final = 4096
#: Records decoded together at least (batches are cut from the chunk).
CHUNK_RECORDS: Final = 4096

RecordType = Literal["Example", "SequenceExample", "ByteArray"]
_TYPES: Final[dict[str, RecordType]] = {
    "example": "Example",
    "sequenceexample": "SequenceExample",
    "sequence_example": "SequenceExample",
    "bytearray": "ByteArray",
    "bytes": "ByteArray",
    "raw": "ByteArray",
}


def record_type_of(value: object) -> RecordType | None:
    """``"Example"``, ``"SequenceExample"``, ``"ByteArray"`` (spark-tfrecord's names, any
    case; ``"raw"``/``"bytes"`` too) or ``None`` (Example, or as inferred).

    Raises:
        InvalidArgumentError: another value.
    """
    if value is None:
        return None
    got = _TYPES.get(str(value).lower()) if isinstance(value, str) else None
    if got is None:
        raise InvalidArgumentError(
            f"record type {value!r}: use 'Example', 'SequenceExample' or 'ByteArray'"
        )
    return got


class Decoder(Protocol):
    """Turns a chunk of records into one record batch of :attr:`schema`."""

    @property
    def schema(self) -> Any:
        """The Arrow schema of every batch."""

    def decode(self, buf: U8, starts: I64, ends: I64) -> pa.RecordBatch:
        """The batch of the records ``buf[starts[i]:ends[i]]``."""


class _Raw:
    """One binary column of the records' bytes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.schema = pa.schema([pa.field(name, pa.binary(), nullable=False)])

    def decode(self, buf: U8, starts: I64, ends: I64) -> pa.RecordBatch:
        batch = raw_batch(buf, starts, ends, self.name)
        return batch.cast(self.schema) if batch.schema != self.schema else batch


def make_decoder(
    ds: RecordDataset,
    features: Any,
    *,
    sequence_features: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    record_type: RecordType | None = None,
    sample: int = DEFAULT_SAMPLE,
    record_column: str = RAW_COLUMN,
) -> Decoder:
    """The decoder of ``ds``'s records for the asked columns (see
    :func:`tfrecord_engine.arrow.reader`); infers a schema from the first ``sample``
    records when neither ``features`` nor ``sequence_features`` is given."""
    cols = None if columns is None else list(columns)
    if record_type == "ByteArray":
        if cols not in (None, [record_column]):
            raise InvalidArgumentError(
                f"raw records have one column, {record_column!r}; columns={cols} asks for others"
            )
        return _Raw(record_column)
    if features is None and sequence_features is None:
        if sample < 1:
            raise InvalidArgumentError(f"sample must be >= 1, got {sample}")
        if len(ds) == 0:
            raise InvalidArgumentError(
                f"{ds.paths} hold no record to infer the columns from: pass features= "
                "(feature specs or a pyarrow.Schema)"
            )
        head = ds.read_raw(np.arange(min(sample, len(ds)), dtype=np.int64))
        kind = {"Example": "example", "SequenceExample": "sequence"}.get(record_type or "", "auto")
        inferred = infer_schema(head, kind, where=ds.paths[0] if ds.paths else "sample")
        schema = inferred.select(cols)
        if inferred.sequence or record_type == "SequenceExample":
            return SequenceBatches(*sequence_plans(schema, None, None), fields=_fields(schema))
        return ExampleBatches(plan_of(schema), _fields(schema))
    if is_schema(features):
        if sequence_features is not None:
            raise InvalidArgumentError(
                "an Arrow schema holds the feature lists too (list<list<...>> fields): "
                "pass no sequence_features with it"
            )
        if record_type == "SequenceExample":
            return SequenceBatches(*sequence_plans(features, None, cols), fields=_fields(features))
        return ExampleBatches(plan_of(features, cols), _fields(features))
    if not isinstance(features, Mapping) and features is not None:
        raise InvalidArgumentError(
            f"features must be a mapping of feature specs or a pyarrow.Schema, not {features!r}"
        )
    if sequence_features is not None or record_type == "SequenceExample":
        return SequenceBatches(*sequence_plans(features or {}, sequence_features, cols))
    return ExampleBatches(plan_of(features, cols))


def _fields(schema: Any) -> dict[str, Any]:
    return {f.name: f for f in schema}


def _place(ds: RecordDataset) -> Callable[[int], tuple[str, int, int]]:
    """Dataset index -> (file, record index in it, byte offset)."""
    indexes = ds.indexes
    starts = np.cumsum([0] + [len(i) for i in indexes])

    def place(i: int) -> tuple[str, int, int]:
        f = int(np.searchsorted(starts, i, "right")) - 1
        local = i - int(starts[f])
        return ds.paths[f], local, int(indexes[f].offsets[local])

    return place


def locate_error(exc: ParseError, ds: RecordDataset, index: int) -> None:
    """Names the file, record and offset of the dataset record ``index`` in ``exc``."""
    path, record, offset = _place(ds)(index)
    locate = getattr(exc, "locate", None)
    if callable(locate):
        locate(path, record, offset, dataset_index=index)
    else:  # an errors module without ParseError.locate
        exc.args = (f"{path}: record {record} at offset {offset}: {exc}",)


class Order(Protocol):
    """Batches of dataset indices, resumable (an ``IndexBatchIterator``'s interface)."""

    def __next__(self) -> IndexBatch:
        """The next batch (``StopIteration`` at the end)."""

    def __len__(self) -> int:
        """Batches still to come."""

    def get_state(self) -> dict[str, Any]:
        """A small dict to resume from."""


def epoch_order(
    length: int,
    batch_size: int,
    *,
    shuffle: Shuffle = False,
    seed: int = 0,
    epoch: int = 0,
    shard_index: int = 0,
    shard_count: int = 1,
    drop_remainder: bool = False,
    state: Mapping[str, Any] | None = None,
) -> Order:
    """One epoch's batches, exactly as :meth:`tfrecord_engine.RecordDataset.batches`
    orders them (the same state dicts)."""
    return IndexBatchIterator(
        length,
        batch_size,
        shuffle=shuffle,
        seed=seed,
        epoch=epoch,
        shard_index=shard_index,
        shard_count=shard_count,
        drop_remainder=drop_remainder,
        state=state,
    )


class RangeOrder:
    """The records ``[start, stop)`` (half-open) in order, ``batch_size`` at a time."""

    def __init__(self, start: int, stop: int, batch_size: int) -> None:
        self._next = start
        self._stop = stop
        self._size = batch_size

    def __next__(self) -> IndexBatch:
        if self._next >= self._stop:
            raise StopIteration
        end = min(self._stop, self._next + self._size)
        batch = IndexBatch(np.arange(self._next, end, dtype=np.int64), None)
        self._next = end
        return batch

    def __len__(self) -> int:
        left = max(0, self._stop - self._next)
        return (left + self._size - 1) // self._size

    def get_state(self) -> dict[str, Any]:
        """The next record to read and the end."""
        return {"next": self._next, "stop": self._stop}


class ArrowBatches(Iterator[pa.RecordBatch]):
    """One epoch of a dataset as Arrow record batches, resumable (see the module).

    Use :func:`tfrecord_engine.arrow.batches` to make one.

    Attributes:
        schema: the schema of every batch.
    """

    def __init__(
        self,
        ds: RecordDataset,
        decoder: Decoder,
        order: Order,
        *,
        on_damage_report: DamageCallback | None = None,
    ) -> None:
        """``order``: the batches of dataset indices to read (:func:`epoch_order` or
        :class:`RangeOrder`), with their states."""
        self.ds = ds
        self.decoder = decoder
        self.schema = decoder.schema
        self._order = order
        self._state = self._order.get_state()
        self._ready: collections.deque[tuple[pa.RecordBatch, dict[str, Any]]] = collections.deque()
        self._failure: BaseException | None = None
        self._done = False
        # The next chunk's batches and its read, on a thread (see _fill).
        self._ahead: tuple[list[tuple[IndexBatch, dict[str, Any]]], Any] | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._report = reporter(on_damage_report)

    def __iter__(self) -> ArrowBatches:
        return self

    def __len__(self) -> int:
        """Batches still to come (fewer where damaged records are dropped)."""
        ahead = 0 if self._ahead is None else len(self._ahead[0])
        return len(self._ready) + ahead + len(self._order)

    def get_state(self) -> dict[str, Any]:
        """The state after the last batch yielded (``RecordDataset.batches``' format)."""
        return dict(self._state)

    def reader(self) -> pa.RecordBatchReader:
        """The rest of the epoch as a ``pyarrow.RecordBatchReader``."""
        return pa.RecordBatchReader.from_batches(self.schema, self)

    def __next__(self) -> pa.RecordBatch:
        while not self._ready:
            if self._failure is not None:
                failure, self._failure = self._failure, None
                self._done = True
                raise failure
            if self._done or not self._fill():
                self.close()
                raise StopIteration
        batch, self._state = self._ready.popleft()
        return batch

    # ---- reading a chunk --------------------------------------------------------------

    def _take(self) -> list[tuple[IndexBatch, dict[str, Any]]]:
        """The next batches of indices (about a chunk), each with the state after it."""
        taken: list[tuple[IndexBatch, dict[str, Any]]] = []
        records = 0
        while records < CHUNK_RECORDS:
            try:
                batch = next(self._order)
            except StopIteration:
                break
            taken.append((batch, self._order.get_state()))
            records += len(batch.indices)
        return taken

    def _fill(self) -> bool:
        if self._ahead is not None:
            (taken, pending), self._ahead = self._ahead, None
        else:
            taken, pending = self._take(), None
        if not taken:
            return False
        indices = np.concatenate([b.indices for b, _ in taken])
        try:
            spans = pending.result() if pending is not None else self._read(indices)
        except DataLossError:
            return self._fill_salvaged(taken)
        # Read the next chunk (preadv, CRCs: no GIL held) while this one is decoded.
        self._read_ahead()
        bounds = np.cumsum([0] + [len(b.indices) for b, _ in taken])
        self._decode_chunk(spans, indices, bounds, [s for _, s in taken])
        return True

    def _read_ahead(self) -> None:
        taken = self._take()
        if not taken:
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(1, "tfe-arrow-read")
        indices = np.concatenate([b.indices for b, _ in taken])
        self._ahead = (taken, self._pool.submit(self._read, indices))

    def close(self) -> None:
        """Ends the epoch: the chunk read ahead is dropped, the reading thread stops."""
        self._done = True
        self._ahead = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _read(self, indices: I64) -> tuple[U8, I64, I64]:
        spans = self.ds.read_spans(indices)
        if spans is not None:
            return spans
        return join_records(self.ds.read_raw(indices))

    def _fill_salvaged(self, taken: list[tuple[IndexBatch, dict[str, Any]]]) -> bool:
        """Batch by batch after a damaged read: ``raise`` fails at the damaged batch,
        ``stop`` ends the epoch before it, ``skip`` drops the damaged records."""
        for batch, state in taken:
            try:
                spans = self._read(batch.indices)
                kept = batch.indices
            except DataLossError as exc:
                if self.ds.on_damage == "raise":
                    self._failure = exc
                    return True
                records, reports = self.ds.read_salvaged(batch.indices)
                for r in reports:
                    self._report(r)
                if self.ds.on_damage == "stop":
                    self._done = True
                    return True
                keep = [j for j, r in enumerate(records) if r is not None]
                kept = batch.indices[keep]
                spans = join_records([r for r in records if r is not None])
            self._decode_chunk(spans, kept, np.array([0, len(kept)]), [state])
            if self._failure is not None:
                return True
        return True

    def _decode_chunk(
        self, spans: tuple[U8, I64, I64], indices: I64, bounds: I64, states: list[dict[str, Any]]
    ) -> None:
        buf, starts, ends = spans
        try:
            whole = self.decoder.decode(buf, starts, ends)
        except ParseError:
            whole = None
        if whole is not None:
            for (a, b), state in zip(itertools.pairwise(bounds), states, strict=True):
                self._ready.append((whole.slice(int(a), int(b - a)), state))
            return
        # Batch by batch: the error surfaces at its batch, after the ones before it.
        for (a, b), state in zip(itertools.pairwise(bounds), states, strict=True):
            try:
                batch = self.decoder.decode(buf, starts[a:b], ends[a:b])
            except ParseError as exc:
                index = getattr(exc, "index", None)
                if isinstance(index, int) and 0 <= index < b - a:
                    locate_error(exc, self.ds, int(indices[a + index]))
                self._failure = exc
                return
            self._ready.append((batch, state))


def check_batch_size(batch_size: object) -> int:
    """``batch_size`` as an int >= 1.

    Raises:
        InvalidArgumentError: anything else.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise InvalidArgumentError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if batch_size < 1:
        raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
    return int(batch_size)
