"""The batch SequenceExample decoder: ``parse_sequence_example`` for whole batches.

:class:`SequenceDecoder` walks every record of a batch in one compiled pass
(:mod:`tfrecord_engine.kernels.sequences`): the spans of the requested context Features
and of every step of the requested FeatureLists. Values are then decoded per key for
the whole batch: ``FixedLenSequenceFeature`` int64/float32 steps copied by a compiled
loop straight into the padded ``[batch, max_steps, *shape]`` output, other lists by
the vectorized list decoders of :mod:`.lockstep`. Outputs are assembled by the same
code as the exact path (:mod:`.seqexact`).

A batch the walk does not take whole (any record off the canonical shape: unpacked
lists, unknown fields, a selected key twice, an empty context Feature, anything
malformed) or that would raise (a wrong kind, a wrong value count, a missing required
feature) is parsed by the exact per-record path, which gives the same outputs and
raises exactly what ``parse_sequence_example`` raises. So does every batch until the
compiled kernels are loaded, and every batch where numba is not installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import TFRecordError
from ..kernels import sequences as seqk
from . import lockstep
from .batch import join_records
from .columns import Column, empty_values, object_array
from .decode_stats import Counters
from .records import KIND_OF
from .seqexact import Result3, assemble_context, parse_records, plan, ragged_steps, sparse_steps
from .specs import FeatureSpec, FixedLenSequenceFeature, VarLenFeature, as_feature_specs
from .values import SparseValue
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64

__all__ = ["SequenceDecodeStats", "SequenceDecoder"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Flat = tuple[npt.NDArray[Any], I64, I64]
_ALL_OK = np.ones(1, np.bool_)  # "every list decoded cleanly" (for .all())


@dataclass
class SequenceDecodeStats(Counters):
    """Counters of a :class:`SequenceDecoder` (cumulative).

    Attributes:
        records: records decoded.
        exact_batches: batches parsed by the exact per-record path.
    """

    records: int = 0
    exact_batches: int = 0


class _Exact(Exception):
    """Internal: this batch goes to the exact path."""


class SequenceDecoder:
    """Decodes batches of serialized SequenceExamples against fixed specs.

    Args:
        context_features: context key -> ``FixedLenFeature``/``VarLenFeature``/
            ``RaggedFeature``/``RawFeature`` (or ``tf.io``'s own specs).
        sequence_features: feature-list key -> ``FixedLenSequenceFeature``/
            ``VarLenFeature``/``RaggedFeature``.

    Raises:
        InvalidArgumentError: the specs are invalid (both empty, an unsupported spec).

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import FixedLenSequenceFeature
        >>> dec = SequenceDecoder(None, {"s": FixedLenSequenceFeature([], "int64")})
        >>> ctx, lists, lengths = dec.decode_records(
        ...     [encode_sequence_example({}, {"s": [[1], [2]]}),
        ...      encode_sequence_example({}, {"s": [[3]]})])
        >>> lists["s"].tolist(), lengths["s"].tolist()
        ([[1, 2], [3, 0]], [2, 1])
    """

    def __init__(
        self,
        context_features: Mapping[str, FeatureSpec] | None,
        sequence_features: Mapping[str, FeatureSpec] | None,
    ) -> None:
        self.context = dict(as_feature_specs(context_features or {}))
        self.sequence = dict(as_feature_specs(sequence_features or {}))
        ctx_req, seq_req = plan(self.context, self.sequence)
        self._ctx = list(ctx_req.values())
        self._seq = list(seq_req.values())
        self._ctx_index = {r.key: k for k, r in enumerate(self._ctx)}
        self._seq_index = {r.key: k for k, r in enumerate(self._seq)}
        self._keys = [r.raw_key for r in self._ctx] + [r.raw_key for r in self._seq]
        self._ctx_kinds = [r.kind for r in self._ctx]
        self._seq_kinds = [r.kind for r in self._seq]
        self.stats = SequenceDecodeStats()

    def __reduce__(self) -> tuple[Any, ...]:
        # Decode workers get the specs, not the counters.
        return (SequenceDecoder, (self.context, self.sequence))

    def decode_records(self, records: Sequence[bytes]) -> Result3:
        """Decodes a list of serialized SequenceExamples (joined into one buffer first)."""
        buf, starts, ends = join_records(records)
        return self.decode(buf, starts, ends, records=records)

    def decode(
        self, buf: U8, starts: I64, ends: I64, records: Sequence[bytes] | None = None
    ) -> Result3:
        """Decodes the SequenceExamples at ``buf[starts[i]:ends[i]]`` (half-open spans).

        Args:
            buf: the bytes, e.g. ``np.frombuffer(mmap, np.uint8)`` (not copied).
            starts, ends: int64 spans of each serialized record within ``buf``.
            records: the same records as bytes, if the caller has them (saves copies
                when a batch goes to the exact path).

        Returns:
            ``(context, feature_lists, lengths)`` as ``parse_sequence_example``.

        Raises:
            ExampleParseError / MalformedExampleError: as ``parse_sequence_example``.
        """
        self.stats.count("records", int(starts.shape[0]))
        try:
            return self._fast(buf, starts, ends)
        except _Exact:
            pass
        self.stats.count("exact_batches", 1)
        if records is None:
            mv = buf.data
            records = [
                mv[s:e].tobytes() for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
            ]
        return self.decode_exact(records)

    def decode_exact(self, records: Sequence[bytes]) -> Result3:
        """The exact per-record path (for batches the fast path does not take)."""
        return parse_records(list(records), self.context, self.sequence, single=False)

    def _fast(self, buf: U8, starts: I64, ends: I64) -> Result3:
        walk = seqk.walk_sequences(
            buf, starts, ends, keys=self._keys, ctx_kinds=self._ctx_kinds, seq_kinds=self._seq_kinds
        )
        if walk is None or walk.bad.any():
            raise _Exact
        n = int(starts.shape[0])
        columns: dict[str, Column] = {}

        def column(key: str) -> Column:
            col = columns.get(key)
            if col is None:
                k = self._ctx_index[key]
                present = walk.ctx_kind[:, k] > 0
                recs = np.flatnonzero(present)
                values, counts, ok = _decode_lists(
                    buf, self._ctx[k].kind, walk.ctx_start[recs, k], walk.ctx_end[recs, k]
                )
                if not ok.all():
                    raise _Exact
                all_counts = np.zeros(n, np.int64)
                all_counts[recs] = counts
                col = columns[key] = Column(values, all_counts, present)
            return col

        steps: dict[str, tuple[I64, I64, I64, I64]] = {}

        def step_spans(key: str) -> tuple[I64, I64, I64, I64]:
            """A key's step list spans in record order, the first step (in them) and
            the step count of each record."""
            got = steps.get(key)
            if got is None:
                k = self._seq_index[key]
                count = walk.seq_count[:, k]
                first = np.cumsum(count) - count
                # Each record's steps are consecutive in the walk's step arrays, from
                # seq_first on: gather them in record order.
                at = np.repeat(walk.seq_first[:, k] - first, count) + np.arange(
                    int(first[-1] + count[-1]) if n else 0, dtype=np.int64
                )
                got = steps[key] = (walk.step_start[at], walk.step_end[at], first, count)
            return got

        def flat(key: str, kind: int) -> Flat:
            ls, le, _, count = step_spans(key)
            values, per_step, ok = _decode_lists(buf, kind, ls, le)
            if not ok.all():
                raise _Exact
            return values, per_step, count

        try:
            ctx_out = assemble_context(self.context, column, single=False)
            seq_out: dict[str, Any] = {}
            lengths: dict[str, Any] = {}
            for name, spec in self.sequence.items():
                if isinstance(spec, FixedLenSequenceFeature):
                    k = self._seq_index[name]
                    if not spec.allow_missing and bool((walk.seq_first[:, k] < 0).any()):
                        raise _Exact  # a required FeatureList is missing
                    seq_out[name] = self._dense(buf, name, spec, walk, k, step_spans, flat)
                    lengths[name] = walk.seq_count[:, k].copy()
                elif isinstance(spec, VarLenFeature):
                    seq_out[name] = _sparse(*flat(name, KIND_OF[spec.dtype]))
                else:
                    seq_out[name] = ragged_steps(name, spec, flat, single=False)
        except TFRecordError:
            raise _Exact from None  # the exact path raises it, with TensorFlow's text
        return ctx_out, seq_out, lengths

    @staticmethod
    def _dense(  # noqa: PLR0917 - the walk and the key's helpers, as _fast has them
        buf: U8,
        name: str,
        spec: FixedLenSequenceFeature,
        walk: Any,
        k: int,
        step_spans: Any,
        flat: Any,
    ) -> npt.NDArray[Any]:
        """The padded ``[n, max_steps, *shape]`` values of feature list ``name`` (its
        index ``k`` among the walk's lists). Numbers are copied by one compiled pass
        straight from the walk's step spans, each record's from ``seq_first`` on (the
        spans are not gathered per key first: for 10-200 steps of two lists that gather
        cost 40% as much as the walk); strings through the gathered spans."""
        count = walk.seq_count[:, k]
        n = int(count.shape[0])
        max_steps = int(count.max(initial=0))
        stride = math.prod(spec.shape)
        kind = KIND_OF[spec.dtype]
        if kind == KIND_BYTES:
            _, _, first, count = step_spans(name)
            values, per_step, _ = flat(name, kind)
            if bool((per_step != stride).any()):
                raise _Exact  # a step of another size: the exact path raises
            out = np.full((n * max_steps, stride), b"", dtype=object)
            step_in_record = np.arange(per_step.shape[0], dtype=np.int64) - np.repeat(first, count)
            rows = np.repeat(np.arange(n, dtype=np.int64) * max_steps, count) + step_in_record
            if stride:
                out[rows] = values.reshape(-1, stride)
            return out.reshape((n, max_steps, *spec.shape))
        dtype = np.float32 if kind == KIND_FLOAT else np.int64
        out = np.zeros((n, max_steps, *spec.shape), dtype)
        wrong = seqk.dense_steps(
            buf,
            walk.step_start,
            walk.step_end,
            walk.seq_first[:, k],
            count,
            stride=stride,
            max_steps=max_steps,
            kind=kind,
            out=out,
        )
        if wrong is None or wrong >= 0:
            raise _Exact
        return out


def _sparse(values: npt.NDArray[Any], per_step: I64, count: I64) -> SparseValue:
    """A sequence VarLenFeature's output, as :func:`.seqexact.sparse_steps` makes it."""
    indices = seqk.sparse_indices(per_step, count, int(values.shape[0]))
    if indices is None:
        return sparse_steps(values, per_step, count, single=False)
    shape = [count.shape[0], int(count.max(initial=0)), int(per_step.max(initial=0))]
    return SparseValue(indices, values, np.array(shape, np.int64))


def _decode_lists(buf: U8, kind: int, ls: I64, le: I64) -> tuple[npt.NDArray[Any], I64, Any]:
    """All values of the value lists ``buf[ls[j]:le[j]]``, the count of each, and
    whether each list decoded cleanly."""
    if ls.size == 0:
        return empty_values(kind), np.zeros(0, np.int64), np.ones(0, np.bool_)
    if kind != KIND_BYTES:
        done = seqk.numeric_lists(buf, np.ascontiguousarray(ls), np.ascontiguousarray(le), kind)
        if done is None:
            raise _Exact
        return done[0], done[1], _ALL_OK
    if kind == KIND_INT64:
        return lockstep.packed_varints(buf, ls, le)
    if kind == KIND_FLOAT:
        return lockstep.packed_floats(buf, ls, le)
    vs, ve, counts, ok = lockstep.bytes_values(buf, ls, le)
    view = memoryview(buf)  # type: ignore[arg-type]  # numpy arrays are buffers
    values = object_array(
        list(map(bytes, map(view.__getitem__, map(slice, vs.tolist(), ve.tolist()))))
    )
    return values, counts, ok
