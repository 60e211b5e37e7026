"""Int64List/FloatList bodies that mix packed and unpacked elements, and what TF makes of them.

Writers emit one packed run per list, but the wire format allows any sequence of packed
runs and unpacked elements, and protobuf itself concatenates them all. TensorFlow's
parsers do not (verified against TF 2.21, see ``tests/tf/test_list_encodings_tf.py``):

- Example features and SequenceExample context features are read from the first
  element's tag. A packed first element is read alone, whatever follows it is ignored
  without being parsed (more runs, unpacked values, garbage); an unpacked first element
  requires every element to be unpacked, or the list fails.
- SequenceExample ``feature_lists``: after a step whose list starts with a packed run,
  TensorFlow reads the FeatureList on from the end of that run, so what followed the
  run in its list is read as further steps: an empty packed run (``0a 00``) is an extra
  empty step, an unpacked value or garbage fails, a non-empty packed run is a "Feature"
  made of its payload bytes (modelled here only as :data:`UNMODELED`).
- A BytesList has no packed form: anything but a bytes element in it fails everywhere.

:func:`encode_list` writes each :data:`Encoding`, :func:`tf_values` and
:func:`tf_steps` model what TensorFlow returns for it, and :func:`mixed_lists` draws them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from hypothesis import strategies as st

from .wirebytes import field as _ld
from .wirebytes import varint as _varint

__all__ = [
    "ENCODINGS",
    "GARBAGE",
    "UNMODELED",
    "Encoding",
    "MixedList",
    "encode_list",
    "mixed_lists",
    "tf_steps",
    "tf_values",
]

Encoding = Literal[
    "packed",  # one packed run (what writers emit)
    "unpacked",  # every value with its own tag
    "split",  # two packed runs: values[:cut] and values[cut:]
    "packed+unpacked",  # a packed run of values[:cut], then values[cut:] unpacked
    "unpacked+packed",  # values[:cut] unpacked, then a packed run of values[cut:]
    "packed+garbage",  # one packed run, then a field no list may hold
]
ENCODINGS: tuple[Encoding, ...] = (
    "packed",
    "unpacked",
    "split",
    "packed+unpacked",
    "unpacked+packed",
    "packed+garbage",
)
#: An unknown varint field (number 2): valid protobuf, never a list element.
GARBAGE = b"\x10\x05"
#: :func:`tf_steps` for a case whose outcome depends on TensorFlow re-reading value bytes
#: as a Feature (compare with TensorFlow itself there).
UNMODELED: Final = "unmodeled"


def _packed(dtype: str, values: Sequence[Any]) -> bytes:
    if dtype == "int64":
        return _ld(0x0A, b"".join(_varint(v) for v in values))
    return _ld(0x0A, b"".join(struct.pack("<f", v) for v in values))


def _unpacked(dtype: str, values: Sequence[Any]) -> bytes:
    if dtype == "int64":
        return b"".join(b"\x08" + _varint(v) for v in values)
    return b"".join(b"\x0d" + struct.pack("<f", v) for v in values)


def encode_list(dtype: str, values: Sequence[Any], encoding: Encoding, cut: int) -> bytes:
    """The body of an Int64List (``dtype="int64"``) or FloatList in ``encoding``.

    Args:
        dtype: ``"int64"`` or ``"float32"``.
        values: the values, in order.
        encoding: how to write them; ``cut`` (``0 <= cut <= len(values)``) is where the
            mixed encodings switch. Runs are written even when empty.
        cut: see ``encoding``.

    Example:
        >>> encode_list("int64", [1, 2, 3], "packed+unpacked", 2).hex(" ")
        '0a 02 01 02 08 03'
    """
    if encoding == "packed":
        return _packed(dtype, values)
    if encoding == "unpacked":
        return _unpacked(dtype, values)
    head, tail = values[:cut], values[cut:]
    if encoding == "split":
        return _packed(dtype, head) + _packed(dtype, tail)
    if encoding == "packed+unpacked":
        return _packed(dtype, head) + _unpacked(dtype, tail)
    if encoding == "unpacked+packed":
        return _unpacked(dtype, head) + _packed(dtype, tail)
    return _packed(dtype, values) + GARBAGE


def tf_values(values: Sequence[Any], encoding: Encoding, cut: int) -> list[Any] | None:
    """TensorFlow's values for :func:`encode_list`'s bytes in an Example or context.

    Returns ``None`` where TensorFlow fails.

    Example:
        >>> tf_values([1, 2, 3], "packed+unpacked", 2)
        [1, 2]
        >>> print(tf_values([1, 2, 3], "unpacked+packed", 2))
        None
    """
    head, tail = list(values[:cut]), list(values[cut:])
    if encoding in ("packed", "unpacked", "packed+garbage"):
        return list(values)
    if encoding == "unpacked+packed":
        # With nothing unpacked first, the list is one packed run.
        return None if head else tail
    return head  # split, packed+unpacked: the first run alone


def tf_steps(
    values: Sequence[Any], encoding: Encoding, cut: int
) -> list[list[Any]] | Literal["unmodeled"] | None:
    """TensorFlow's steps for one ``feature_lists`` step holding :func:`encode_list`'s bytes.

    Returns ``None`` where TensorFlow fails.

    Example:
        >>> tf_steps([1, 2], "split", 2)  # the empty second run reads as a step
        [[1, 2], []]
        >>> print(tf_steps([1, 2, 3], "packed+unpacked", 2))
        None
    """
    head, tail = list(values[:cut]), list(values[cut:])
    if encoding in ("packed", "unpacked"):
        return [list(values)]
    if encoding == "unpacked+packed":
        return None if head else [tail]
    if encoding == "packed+unpacked":
        return None if tail else [head]
    if encoding == "split":
        return [head, []] if not tail else UNMODELED
    return None  # garbage after the run


@dataclass(frozen=True)
class MixedList:
    """One drawn list: its values, how they are written and where the encoding switches."""

    dtype: str
    values: list[Any]
    encoding: Encoding
    cut: int

    def body(self) -> bytes:
        """The list's serialized body (see :func:`encode_list`)."""
        return encode_list(self.dtype, self.values, self.encoding, self.cut)

    def expected(self) -> list[Any] | None:
        """TensorFlow's values for :meth:`body` in an Example (:func:`tf_values`)."""
        return tf_values(self.values, self.encoding, self.cut)

    def expected_steps(self) -> list[list[Any]] | Literal["unmodeled"] | None:
        """TensorFlow's steps for :meth:`body` in a feature_list (:func:`tf_steps`)."""
        return tf_steps(self.values, self.encoding, self.cut)


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


@st.composite
def mixed_lists(draw: st.DrawFn, dtype: str, values: Sequence[Any] | None = None) -> MixedList:
    """A :class:`MixedList` of ``dtype`` (``values`` drawn when not given)."""
    if values is None:
        element: st.SearchStrategy[Any] = (
            st.integers(-(1 << 63), (1 << 63) - 1) | st.integers(0, 300)
            if dtype == "int64"
            else st.floats(width=32, allow_nan=False).map(_f32)
        )
        values = draw(st.lists(element, max_size=5))
    encoding = draw(st.sampled_from(ENCODINGS))
    cut = draw(st.integers(0, len(values)))
    return MixedList(dtype, list(values), encoding, cut)
