"""The Example parsing fuzz property: hostile bytes, only our errors, both decoders agree.

``check_one(data)``: the first byte picks a feature spec, the rest is split on
``SEPARATOR`` into up to four serialized records. Checked:

- ``decode_example``, ``decode_sequence_example``, ``parse_single_example`` and
  ``parse_sequence_example`` raise nothing but :class:`~tfrecord_engine.TFRecordError`
  (no ``RecursionError``, ``MemoryError``, ``IndexError``, ...);
- the lockstep batch decoder (``BatchDecoder.decode_records``, what ``parse_example``
  uses for large batches) and the exact per-record path (``decode_exact``) agree: the
  same outputs, or the same error (type, message, key, record index).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.example.batch import BatchDecoder
from tfrecord_engine.example.specs import FeatureSpec

__all__ = ["SEPARATOR", "SPECS", "check_one"]

SEPARATOR = b"\xfe\xfe"
SPECS: list[dict[str, FeatureSpec]] = [
    {
        "i": tfe.VarLenFeature("int64"),
        "f": tfe.VarLenFeature("float32"),
        "s": tfe.VarLenFeature("string"),
    },
    {
        "i": tfe.FixedLenFeature([2], "int64", default_value=[0, 0]),
        "f": tfe.FixedLenFeature([], "float32", default_value=0.0),
        "s": tfe.FixedLenFeature([], "string", default_value=b""),
        "a_key_longer_than_8": tfe.VarLenFeature("int64"),
    },
    {
        "r": tfe.RaggedFeature("int64"),
        "sp": tfe.SparseFeature(index_key="ix", value_key="v", dtype="float32", size=[10]),
    },
]
_CONTEXT: dict[str, FeatureSpec] = {"c": tfe.VarLenFeature("int64")}
_SEQUENCE: dict[str, FeatureSpec] = {
    "q": tfe.FixedLenSequenceFeature([], "int64", allow_missing=True),
    "w": tfe.VarLenFeature("string"),
}


def _outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except tfe.TFRecordError as exc:
        return "error", (
            type(exc),
            str(exc),
            getattr(exc, "key", None),
            getattr(exc, "index", None),
        )


def same_output(a: Any, b: Any) -> None:
    """Deep equality of parse outputs (dtypes, shapes and bit patterns of floats)."""
    if isinstance(a, dict):
        assert isinstance(b, dict)
        assert list(a) == list(b)
        for k in a:
            same_output(a[k], b[k])
    elif isinstance(a, (tfe.SparseValue, tfe.RaggedValue)):
        assert type(a) is type(b)
        for x, y in zip(a, b, strict=True):
            same_output(x, y)
    else:
        assert isinstance(a, np.ndarray)
        assert isinstance(b, np.ndarray)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        if a.dtype.kind == "f":
            assert a.tobytes() == b.tobytes()
        else:
            assert a.tolist() == b.tolist()


def check_one(data: bytes) -> None:
    """Checks the properties above on one input (raises AssertionError on a violation)."""
    if not data:
        return
    spec = SPECS[data[0] % len(SPECS)]
    records = data[1:].split(SEPARATOR)[:4]
    for r in records:
        _outcome(lambda r=r: tfe.decode_example(r))
        _outcome(lambda r=r: tfe.decode_sequence_example(r))
        _outcome(lambda r=r: tfe.parse_single_example(r, spec))
    _outcome(lambda: tfe.parse_sequence_example(records, _CONTEXT, _SEQUENCE))
    decoder = BatchDecoder(spec)
    fast = _outcome(lambda: decoder.decode_records(records))
    exact = _outcome(lambda: decoder.decode_exact(records))
    assert fast[0] == exact[0], (fast, exact)
    if fast[0] == "ok":
        same_output(fast[1], exact[1])
    else:
        assert fast[1] == exact[1], (fast[1], exact[1])
