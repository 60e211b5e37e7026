"""SequenceExample datasets: the decoder a ``RecordDataset`` uses, per-record samples.

``RecordDataset(paths, context_features=..., sequence_features=...)`` keeps its specs
in a :class:`~tfrecord_engine.example.seqspecs.SequenceFeatures` and decodes through
:class:`SequenceBatchDecoder`, which has the interface of the Example batch decoder
(``columns``, ``assemble``, ``assemble_batches``, ``decode_exact``, ``decode_records``,
``stats``), so every read path of the dataset (``ds[list]``, ``__getitems__``,
``batches`` with read-ahead or worker processes, shuffles, damage policies) serves
SequenceExamples unchanged. Its "columns" are the records' spans; each batch is decoded
from them by :class:`~tfrecord_engine.example.seqbatch.SequenceDecoder` (one compiled
walk of the batch, or the exact path, which raises TensorFlow's error for a batch that
holds one), so an error surfaces at the batch that holds it.

Batches are flat dicts (see :mod:`tfrecord_engine.example.seqspecs`). One record's
sample (``ds[i]``, ``__getitems__``) is ``parse_single_sequence_example``'s output as
one dict, typed for collate functions (:mod:`.varlen`):

==============================  ======================================================
feature                         one record's value
==============================  ======================================================
context features                as in an Example dataset's sample (:mod:`.samples`)
``FixedLenSequenceFeature``     an array ``[steps, *shape]`` (a :class:`VarLenArray`;
                                strings: a :class:`VarLenList` of nested lists)
sequence ``VarLenFeature``      a :class:`SparseValue`: indices ``[N, 2]`` (step,
                                position), ``dense_shape`` ``[steps, longest step]``
sequence ``RaggedFeature``      a :class:`RaggedValue` ``[steps, values]``
``"<name>_lengths"``            the record's step count, a numpy int64 scalar
==============================  ======================================================

so PyTorch's ``default_collate`` (once taught, see :mod:`.collate`) and
:func:`tfrecord_engine.collate` give batches with the same keys as ``batches()``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, TFRecordError
from ..example.batch import join_records
from ..example.seqbatch import SequenceDecoder, SequenceDecodeStats
from ..example.seqspecs import SequenceFeatures, flat_batch, lengths_key
from ..example.sequence import parse_single_sequence_example
from ..example.single_sequence import SingleSequenceDecoder
from ..example.specs import (
    FeatureSpec,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RawFeature,
    UniformRowLength,
    VarLenFeature,
    as_feature_specs,
)
from ..example.values import RaggedValue, SparseValue
from ..example.varlen import VarLenList, varlen_array
from .samples import per_record, sample_of, samples_of

__all__ = [
    "SequenceBatchDecoder",
    "SequenceChunk",
    "dataset_features",
    "sequence_column",
    "sequence_sample",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Sample = dict[str, Any]

#: Records read and decoded together by :func:`sequence_column`.
_READ_CHUNK = 4096


class SequenceChunk(NamedTuple):
    """The records of a chunk as spans of one buffer (the decoder's "columns")."""

    buf: U8
    starts: I64
    ends: I64


class SequenceBatchDecoder:
    """Decodes batches of SequenceExamples into flat batch dicts, behind the interface
    of the Example batch decoder (see the module docstring).

    Args:
        features: the dataset's specs.

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import FixedLenSequenceFeature
        >>> dec = SequenceBatchDecoder(SequenceFeatures(
        ...     None, {"s": FixedLenSequenceFeature([], "int64")}))
        >>> out = dec.decode_records([encode_sequence_example({}, {"s": [[1], [2]]}),
        ...                           encode_sequence_example({}, {"s": [[3]]})])
        >>> out["s"].tolist(), out["s_lengths"].tolist()
        ([[1, 2], [3, 0]], [2, 1])
    """

    #: Accepted for the Example decoder's interface (decode workers set it); strings
    #: of SequenceExamples are always ``bytes`` objects.
    defer_bytes: bool = False

    def __init__(self, features: SequenceFeatures) -> None:
        self.features = features
        self._decoder = SequenceDecoder(features.context, features.sequence)
        self._sampler: SequenceDecoder | None = None
        self._single: SingleSequenceDecoder | None = None
        specs = [*features.context.values(), *features.sequence.values()]
        self._partitioned = any(
            isinstance(s, RaggedFeature)
            and any(not isinstance(p, UniformRowLength) for p in s.partitions)
            for s in specs
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (SequenceBatchDecoder, (self.features,))

    @property
    def stats(self) -> SequenceDecodeStats:
        """Records decoded, and batches that took the exact per-record path."""
        return self._decoder.stats

    def columns(self, buf: U8, starts: I64, ends: I64) -> SequenceChunk:
        """The records ``buf[starts[j]:ends[j]]``, kept to be decoded batch by batch."""
        return SequenceChunk(buf, starts, ends)

    def assemble(self, chunk: SequenceChunk, a: int, b: int) -> dict[str, Any]:
        """The flat batch of records ``a`` to ``b`` of ``chunk``.

        Raises:
            ParseError: as ``tf.io.parse_sequence_example`` for those records.
        """
        out = self._decoder.decode(chunk.buf, chunk.starts[a:b], chunk.ends[a:b])
        return flat_batch(self.features, *out)

    def assemble_batches(
        self, chunk: SequenceChunk, bounds: Sequence[int]
    ) -> list[dict[str, Any] | TFRecordError]:
        """The batch of each ``bounds[k]:bounds[k + 1]``, or the error it holds."""
        return [self._batch_or_error(chunk, a, b) for a, b in itertools.pairwise(bounds)]

    def _batch_or_error(
        self, chunk: SequenceChunk, a: int, b: int
    ) -> dict[str, Any] | TFRecordError:
        try:
            return self.assemble(chunk, a, b)
        except TFRecordError as exc:
            return exc

    def decode_exact(self, records: Sequence[bytes]) -> dict[str, Any]:
        """The flat batch of ``records`` by the exact per-record path."""
        return flat_batch(self.features, *self._decoder.decode_exact(records))

    def decode_records(self, records: Sequence[bytes]) -> dict[str, Any]:
        """The flat batch of ``records``."""
        return flat_batch(self.features, *self._decoder.decode_records(records))

    def sample(self, record: bytes) -> Sample:
        """One record's sample (``ds[i]``): the per-call path
        (:class:`~.single_sequence.SingleSequenceDecoder`) where it serves the record,
        else :func:`sequence_sample`, which raises TensorFlow's error for a bad one."""
        single = self._single
        if single is None:
            single = self._single = SingleSequenceDecoder(self.features)
        got = single.sample(record)
        return got if got is not None else sequence_sample(self.features, record)

    def samples(self, chunk: SequenceChunk) -> list[Sample]:
        """One sample per record of ``chunk`` (see the module docstring), cut from one
        batch decode.

        A sequence ``VarLenFeature`` is decoded as a ``RaggedFeature`` of its key here:
        its steps are then known per record (a ``SparseValue`` of the batch does not
        say how many empty steps end a record), and the sample's ``SparseValue`` is made
        from them.
        """
        sampler = self._sampler
        if sampler is None:
            sequence: dict[str, FeatureSpec] = {
                k: RaggedFeature(s.dtype, value_key=k, row_splits_dtype="int64")
                if isinstance(s, VarLenFeature)
                else s
                for k, s in self.features.sequence.items()
            }
            sampler = self._sampler = SequenceDecoder(self.features.context, sequence)
            sampler.stats = self._decoder.stats  # (one count for the dataset)
        n = int(chunk.starts.shape[0])

        def one(i: int) -> Sample:
            return self.sample(chunk.buf[int(chunk.starts[i]) : int(chunk.ends[i])].tobytes())

        if self._partitioned:
            # A RaggedFeature partitioned by other keys: a record's rows in a batch are
            # its own only where its partitions agree (TensorFlow checks nothing
            # without validate), and the batch cannot tell; per record, as ds[i].
            return per_record(one, n)
        context, lists, lengths = sampler.decode(chunk.buf, chunk.starts, chunk.ends)
        out = samples_of(self.features.context, context, {}, n, one)
        for name, spec in self.features.sequence.items():
            value = lists[name]
            if isinstance(spec, FixedLenSequenceFeature):
                rows = _dense_rows(value, lengths[name])
                counts = [np.int64(c) for c in lengths[name].tolist()]
                for sample, row, count in zip(out, rows, counts, strict=True):
                    sample[name] = row
                    sample[lengths_key(name)] = count
                continue
            ragged: RaggedValue = value
            cut = (_sparse_of if isinstance(spec, VarLenFeature) else _ragged_of)(ragged)
            for sample, (a, b) in zip(out, _bounds(ragged.row_splits), strict=True):
                sample[name] = cut(a, b)
        # (Keys in the batch's order: context, sequence, then step counts.)
        keys = self.features.output_keys
        return [{k: s[k] for k in keys} for s in out]


def sequence_sample(features: SequenceFeatures, record: bytes) -> Sample:
    """One record's sample (see the module docstring), as
    ``parse_single_sequence_example`` parses it (its errors too)."""
    context, lists = parse_single_sequence_example(record, features.context, features.sequence)
    out = sample_of(features.context, context)
    for name, spec in features.sequence.items():
        value = lists[name]
        if isinstance(spec, FixedLenSequenceFeature):
            out[name] = VarLenList(value.tolist()) if value.dtype == object else varlen_array(value)
        elif isinstance(value, np.ndarray):
            out[name] = _variable(value)  # (a RaggedFeature made uniform by its partitions)
        else:
            out[name] = value
    for name in features.dense:
        out[lengths_key(name)] = np.int64(lists[name].shape[0])
    return out


def sequence_column(ds: Any, key: str) -> Any:
    """``ds[key]`` of a SequenceExample dataset: the key's value for every record, in
    order (one read): an array for a fixed-size context feature and for step counts,
    else a list of one sample value per record.

    Raises:
        InvalidArgumentError: ``key`` is not a key of the dataset's batches.
    """
    features: SequenceFeatures = ds.features
    name = key
    if key not in features:
        name = next((k for k in features.dense if lengths_key(k) == key), "")
        if not name:
            raise InvalidArgumentError(
                f"{key!r} is no key of this dataset's batches (they hold {features.output_keys})"
            )
    decoder = SequenceBatchDecoder(features.only(name))
    dense = isinstance(features[name], (FixedLenFeature, RawFeature)) or key != name
    parts: list[Any] = []
    n = len(ds)
    for a in range(0, n, _READ_CHUNK):
        records = ds.read_raw(np.arange(a, min(a + _READ_CHUNK, n), dtype=np.int64))
        chunk = SequenceChunk(*join_records(records))
        if dense:
            parts.append(decoder.assemble(chunk, 0, len(records))[key])
        else:
            parts += [s[key] for s in decoder.samples(chunk)]
    if not dense:
        return parts
    if parts:
        return np.concatenate(parts)
    return decoder.decode_records([])[key]


def _bounds(splits: npt.NDArray[Any]) -> list[tuple[int, int]]:
    return list(itertools.pairwise(splits.tolist()))


def _variable(value: npt.NDArray[Any]) -> Any:
    return VarLenList(value.tolist()) if value.dtype == object else varlen_array(value)


def _dense_rows(value: npt.NDArray[Any], lengths: I64) -> list[Any]:
    """Each record's ``[steps, *shape]`` rows of a padded ``[batch, max_steps, ...]``."""
    counts = lengths.tolist()
    if value.dtype == object:
        nested = value.tolist()
        return [VarLenList(nested[i][:c]) for i, c in enumerate(counts)]
    tagged = varlen_array(value)
    return [tagged[i, :c] for i, c in enumerate(counts)]


def _sparse_of(ragged: RaggedValue) -> Any:
    """Cuts a record's ``SparseValue`` (steps ``[a, b)`` of the batch) out of a
    ``[batch, steps, values]`` ragged value, as ``parse_single_sequence_example``
    gives a sequence ``VarLenFeature``."""
    steps = ragged.values
    assert isinstance(steps, RaggedValue)
    splits = np.asarray(steps.row_splits, np.int64)
    values = np.asarray(steps.values)

    def cut(a: int, b: int) -> SparseValue:
        mine = splits[a : b + 1]
        counts = np.diff(mine)
        step = np.repeat(np.arange(b - a, dtype=np.int64), counts)
        pos = np.arange(int(mine[-1] - mine[0]), dtype=np.int64) - (mine[:-1] - mine[0])[step]
        shape = np.array([b - a, int(counts.max(initial=0))], np.int64)
        lo, hi = int(mine[0]), int(mine[-1])
        return SparseValue(np.stack([step, pos], axis=1), values[lo:hi], shape)

    return cut


def _ragged_of(ragged: RaggedValue) -> Any:
    """Cuts a record's ``[steps, ...]`` value out of a batch's ragged value."""
    steps = ragged.values

    def cut(a: int, b: int) -> Any:
        rows = _rows(steps, a, b)
        return _variable(rows) if isinstance(rows, np.ndarray) else rows

    return cut


def _rows(rt: RaggedValue | npt.NDArray[Any], a: int, b: int) -> Any:
    """Rows ``[a, b)`` of a ragged value, re-based."""
    if not isinstance(rt, RaggedValue):
        return rt[a:b]
    splits = rt.row_splits[a : b + 1]
    lo, hi = int(splits[0]), int(splits[-1])
    return RaggedValue(_rows(rt.values, lo, hi), splits - splits[0])


def dataset_features(
    features: Mapping[str, Any] | None,
    context_features: Mapping[str, Any] | None,
    sequence_features: Mapping[str, Any] | None,
) -> Mapping[str, Any] | None:
    """A dataset's specs from its arguments: ``features`` (Examples), or a
    :class:`SequenceFeatures` of ``context_features`` and ``sequence_features``.

    Raises:
        InvalidArgumentError: both kinds given; a ``FixedLenSequenceFeature`` without
            ``allow_missing`` in ``features`` (a SequenceExample's spec: the error says
            to pass the two spec dicts instead); invalid sequence specs.
    """
    if context_features is None and sequence_features is None:
        if features is None:
            return None
        specs: Mapping[str, Any] = as_feature_specs(features)
        for name, spec in specs.items():
            if isinstance(spec, FixedLenSequenceFeature) and not spec.allow_missing:
                raise InvalidArgumentError(
                    f"features[{name!r}] is a FixedLenSequenceFeature without "
                    "allow_missing=True, which Examples require (as in TensorFlow). For a "
                    "file of SequenceExamples pass its two spec dicts instead: "
                    "RecordDataset(paths, context_features=..., sequence_features=...) "
                    "(`tfr schema FILE` prints both)"
                )
        return specs
    if features is not None:
        raise InvalidArgumentError(
            "pass features= (Examples) or context_features=/sequence_features= "
            "(SequenceExamples), not both"
        )
    return SequenceFeatures(context_features, sequence_features)
