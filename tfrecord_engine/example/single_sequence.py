"""The per-call path of ``ds[i]`` on a SequenceExample dataset: one record to its sample.

The exact path (``parse_single_sequence_example``, then the sample's typing) reads
every step in Python, ~7 µs a step; a one-record batch decode pays the batch
assembly's numpy set-up (~150 µs a record either way on 5-60 steps of float32[32]).
:class:`SingleSequenceDecoder` serves the records writers emit for the common specs in
three calls:

1. the compiled SequenceExample walk (:func:`~..kernels.sequences.walk_sequences`) of
   the one record, over the requested feature-list keys: it checks the canonical shape
   (one context field, one feature-lists field, every map entry key then value, every
   requested step a Feature of the expected kind) and gives each step's value span;
2. the context, which is a ``Features`` message like an Example's, through the
   Example per-call decoder (:class:`~.single.SingleDecoder`) on the record's bytes
   up to the end of that field;
3. per numeric ``FixedLenSequenceFeature``, one compiled pass over its steps
   (:func:`~..kernels.sequences.numeric_lists`), whose per-step counts must all equal
   the feature's size.

Anything else returns ``None`` and the caller takes the exact path, which returns the
same sample or raises TensorFlow's error: specs with a sequence ``VarLenFeature``,
``RaggedFeature`` or string steps, a missing or duplicated field, a step of another
size, the kernels not loaded yet. The fast path never accepts a record the exact path
rejects (tests/test_single_sequence.py compares both on generated records).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import MalformedExampleError
from ..kernels import sequences as seqk
from .records import KIND_OF
from .seqspecs import SequenceFeatures, lengths_key
from .single import SingleDecoder
from .single_steps import read_varint
from .specs import FixedLenSequenceFeature
from .varlen import varlen_array
from .wire import KIND_NONE, decode_feature, example_feature_map, feature_kind

__all__ = ["SingleSequenceDecoder"]

_NUMERIC = ("int64", "float32")


class _List:
    """One requested ``FixedLenSequenceFeature`` of numbers."""

    __slots__ = ("allow_missing", "dtype", "kind", "name", "shape", "stride")

    def __init__(self, name: str, spec: FixedLenSequenceFeature) -> None:
        self.name = name
        self.shape = tuple(spec.shape)
        self.stride = math.prod(self.shape)
        self.kind = KIND_OF[spec.dtype]
        self.dtype = np.dtype(np.int64 if spec.dtype == "int64" else np.float32)
        self.allow_missing = spec.allow_missing


class SingleSequenceDecoder:
    """The sample of one SequenceExample, or ``None`` where the exact path must decide.

    Args:
        features: the dataset's specs.

    Attributes:
        enabled: whether the specs are ones this path serves (context specs the
            Example per-call decoder plans; sequence specs numeric
            ``FixedLenSequenceFeature``s of a non-empty shape).

    Example:
        >>> from tfrecord_engine.example.encode import encode_sequence_example
        >>> from tfrecord_engine.example.specs import FixedLenSequenceFeature
        >>> dec = SingleSequenceDecoder(SequenceFeatures(
        ...     None, {"s": FixedLenSequenceFeature([2], "float32")}))
        >>> dec.enabled
        True
    """

    def __init__(self, features: SequenceFeatures) -> None:
        self.features = features
        self._lists: list[_List] = []
        self._context: SingleDecoder | None = None
        self.enabled = True
        for name, spec in features.sequence.items():
            # (Steps of no values, a 0 in the shape: the exact path counts them.)
            if (
                not isinstance(spec, FixedLenSequenceFeature)
                or spec.dtype not in _NUMERIC
                or math.prod(spec.shape) == 0
            ):
                self.enabled = False
                return
            self._lists.append(_List(name, spec))
        if features.context:
            self._context = SingleDecoder(features.context)
            if not self._context.enabled:
                self.enabled = False
                return
        self._walk = seqk.OneSequenceWalk(
            [name.encode() for name in features.sequence], [item.kind for item in self._lists]
        )

    def sample(self, record: bytes) -> dict[str, Any] | None:
        """The sample of ``record`` (as ``parse_single_sequence_example`` and the
        dataset's sample typing give it), or ``None`` for the exact path."""
        if not self.enabled or not record:
            return None
        buf = np.frombuffer(record, np.uint8)
        walk = self._walk(buf)
        if walk is None:
            return None
        firsts, step_counts, step_start, step_end = walk
        out: dict[str, Any] = {}
        if self._context is not None:
            context = self._context_sample(record)
            if context is None:
                return None
            out.update(context)
        counts: dict[str, np.int64] = {}
        for k, item in enumerate(self._lists):
            first = int(firsts[k])
            steps = int(step_counts[k])
            if first < 0:
                if not item.allow_missing:
                    return None  # a required FeatureList is missing: the exact path raises
                value = np.zeros((0, *item.shape), item.dtype)
            else:
                last = first + steps
                got = self._walk.numbers(
                    buf, step_start[first:last], step_end[first:last], item.kind
                )
                if got is None:
                    return None
                values, per_step = got
                if bool((per_step != item.stride).any()):
                    return None  # a step of another size: the exact path raises
                value = values.reshape((steps, *item.shape))
            out[item.name] = varlen_array(value)
            counts[lengths_key(item.name)] = np.int64(steps)
        out.update(counts)
        return out  # (context, sequence, then step counts: the batches' key order)

    def _context_sample(self, record: bytes) -> dict[str, Any] | None:
        """The context's sample: the record up to the end of its context field is an
        Example of that ``Features`` message (the walk found that field exactly once)."""
        assert self._context is not None
        if record[0] != 0x0A:
            return None  # context after the feature lists, or none: the exact path
        try:
            size, at = read_varint(record, 1, len(record))
        except (IndexError, MalformedExampleError):
            return None
        context = record[: at + size]
        if self._overruns(context):
            return None  # the exact path raises TensorFlow's error
        return self._context.sample(context)

    def _overruns(self, context: bytes) -> bool:
        """Whether a requested context Feature holds a list whose length runs past the
        Feature (or the context is malformed): TensorFlow's SequenceExample parser refuses
        it, while its Example parser, which the context's per-record decoder follows,
        reads such a list to the Feature's end (``decode_feature``'s ``strict``)."""
        assert self._context is not None
        try:
            found = example_feature_map(context)
            for step in self._context.steps:
                span = found.get(step.key)
                if span is None or span[0] == span[1]:
                    continue  # (missing or empty: the decoder declines or takes defaults)
                kind = feature_kind(context, span)
                if kind != KIND_NONE:
                    decode_feature(context, span, kind, strict=True)
        except MalformedExampleError:
            return True
        return False
