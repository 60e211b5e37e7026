"""The per-call path of ``ds[i]`` with ``features``: one record straight to its sample.

``parse_single_example`` followed by :func:`~.samples.sample_of` is exact for every spec
and every malformed input, but costs a feature plan and per-feature numpy assembly on
each call (~50 µs a record). :class:`SingleDecoder` builds its plan once per spec and
handles the records writers emit for the common kinds (``FixedLenFeature``,
``RawFeature``, ``VarLenFeature``) with a few Python operations per feature. Anything
else, a missing or empty feature (defaults), a duplicate key with an unreadable earlier
entry, a count or kind mismatch, a malformed Example, makes :meth:`SingleDecoder.sample`
return ``None``, and the caller takes the exact path, which returns the same sample or
raises TensorFlow's error. The fast path never accepts a record the exact path rejects,
and returns the same values, types and shapes (tests/test_single.py checks both on
generated specs and records).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import MalformedExampleError
from ..example.records import KIND_OF
from ..example.specs import FeatureSpec, FixedLenFeature, RawFeature, VarLenFeature
from ..example.wire import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    Duplicates,
    RawValues,
    decode_feature,
    example_feature_map,
)

__all__ = ["SingleDecoder"]

#: A feature's sample from its decoded values, or ``None`` for the exact path.
Convert = Callable[[RawValues], Any]
_TAG_OF = {KIND_BYTES: 0x0A, KIND_FLOAT: 0x12, KIND_INT64: 0x1A}
_NUMPY = {"int64": np.int64, "float32": np.float32}


def _fixed(spec: FixedLenFeature) -> Convert | None:
    count = math.prod(spec.shape)
    if count == 0:
        return None
    shape = spec.shape
    if spec.dtype == "string":
        if not shape:
            return lambda v: v[0] if len(v) == 1 else None

        def strings(v: RawValues) -> Any:
            if len(v) != count:
                return None
            out = np.empty(count, dtype=object)
            out[:] = v
            return out.reshape(shape).tolist()

        return strings
    scalar = _NUMPY[spec.dtype]
    if not shape:
        return lambda v: scalar(v[0]) if len(v) == 1 else None
    dtype = np.dtype(scalar)
    return lambda v: np.array(v, dtype).reshape(shape) if len(v) == count else None


def _raw(spec: RawFeature) -> Convert | None:
    nbytes = spec.nbytes
    if nbytes == 0:
        return None
    dtype = np.dtype(spec.dtype)
    little = dtype.newbyteorder("<")  # as tf.io.decode_raw
    shape = spec.shape

    def raw(v: RawValues) -> Any:
        if len(v) != 1:
            return None
        data: bytes = v[0]  # type: ignore[assignment]  # a bytes list (KIND_BYTES)
        if len(data) != nbytes:
            return None
        # astype copies: the sample owns writable memory (torch.from_numpy wants it).
        out = np.frombuffer(data, little).astype(dtype)
        return out.reshape(shape) if shape else out[0]  # shape []: a numpy scalar

    return raw


def _varlen(spec: VarLenFeature) -> Convert:
    if spec.dtype == "string":
        return list
    dtype = np.dtype(_NUMPY[spec.dtype])
    return lambda v: np.array(v, dtype)


def _step(name: str, spec: FeatureSpec) -> tuple[str, bytes, int, int, Convert] | None:
    convert: Convert | None
    if isinstance(spec, FixedLenFeature):
        convert = _fixed(spec)
    elif isinstance(spec, RawFeature):
        convert = _raw(spec)
    elif isinstance(spec, VarLenFeature):
        convert = _varlen(spec)
    else:
        return None
    if convert is None:
        return None
    kind = KIND_BYTES if isinstance(spec, RawFeature) else KIND_OF[spec.dtype]
    return name, name.encode("utf-8"), kind, _TAG_OF[kind], convert


class SingleDecoder:
    """One record to its sample for the common specs, planned once per spec.

    >>> from tfrecord_engine.example.encode import encode_example
    >>> d = SingleDecoder({"x": FixedLenFeature([2], "int64")})
    >>> d.sample(encode_example({"x": [3, 4]}))["x"].tolist()
    [3, 4]
    >>> d.sample(encode_example({"y": [1]})) is None   # missing: the exact path decides
    True
    """

    def __init__(self, features: Mapping[str, FeatureSpec]) -> None:
        steps = [_step(name, spec) for name, spec in features.items()]
        self.steps = [s for s in steps if s is not None]
        #: False when some spec always takes the exact path.
        self.enabled = bool(steps) and len(self.steps) == len(steps)

    def sample(self, record: bytes) -> dict[str, Any] | None:
        """The sample of ``record``, or ``None`` where the exact path must decide."""
        if not self.enabled:
            return None
        dups = Duplicates()
        out: dict[str, Any] = {}
        try:
            fmap = example_feature_map(record, dups)
            if dups.unsupported:
                return None  # an earlier entry with an invalid kind: TensorFlow's rules
            for name, key, kind, tag, convert in self.steps:
                span = fmap.get(key)
                if span is None or span[0] == span[1] or record[span[0]] != tag:
                    return None  # missing, empty (defaults, shadowed entries), another kind
                value = convert(decode_feature(record, span, kind))
                if value is None:
                    return None
                out[name] = value
        except MalformedExampleError:
            return None
        return out
