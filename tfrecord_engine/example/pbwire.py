"""Protobuf-exact decoding of ``Example`` / ``SequenceExample`` (what ``FromString`` does).

:mod:`.wire` follows TensorFlow's parsing kernels, which accept and reject slightly
different bytes than protobuf itself. :func:`decode_example` and
:func:`decode_sequence_example` instead promise what ``tf.train.Example.FromString``
(protobuf's upb runtime) gives: unknown fields are skipped everywhere (groups too, up to
protobuf's nesting limit of 100), a repeated sub-message merges into the previous one, a
map entry may lack its key (``""``) or value (an empty Feature), a Feature's last list
kind wins, keys must be valid UTF-8, every length is checked strictly.

Nothing recurses: sub-messages here are at most five levels deep and groups are skipped
with an explicit stack, so hostile input raises
:class:`~tfrecord_engine.errors.MalformedExampleError`, never ``RecursionError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MalformedExampleError
from .varints import NUMPY_MIN_BYTES, decode_packed, varint_reader
from .wire import KIND_BYTES, KIND_FLOAT, KIND_INT64, KIND_NONE

__all__ = ["PbFeature", "example_features", "sequence_example_features"]

_MAX_DEPTH = 100  # protobuf's default recursion limit (upb and the python runtime)


class PbFeature:
    """A decoded ``Feature``: its kind and the chunks of values merged into it.

    int64 chunks are ints (unpacked values, short packed runs) or uint64 arrays (long
    packed runs, :func:`~.varints.decode_packed`); float chunks are little-endian bytes.
    """

    __slots__ = ("chunks", "kind")

    def __init__(self) -> None:
        self.kind = KIND_NONE
        self.chunks: list[object] = []

    def array(self) -> npt.NDArray[Any]:
        """The values as int64 / float32 / object(bytes) array."""
        if self.kind == KIND_BYTES:
            out = np.empty(len(self.chunks), dtype=object)
            out[:] = self.chunks
            return out
        if self.kind == KIND_INT64:
            return _int64_array(self.chunks)
        parts = [np.frombuffer(c, dtype="<f4") for c in self.chunks]  # type: ignore[call-overload]
        return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)


def _int64_array(chunks: list[object]) -> npt.NDArray[np.int64]:
    if not any(isinstance(c, np.ndarray) for c in chunks):
        return np.array(chunks, dtype=np.uint64).view(np.int64)
    parts: list[npt.NDArray[np.uint64]] = []
    ints: list[object] = []
    for c in chunks:
        if isinstance(c, np.ndarray):
            if ints:
                parts.append(np.array(ints, dtype=np.uint64))
                ints = []
            parts.append(c)
        else:
            ints.append(c)
    if ints:
        parts.append(np.array(ints, dtype=np.uint64))
    return np.concatenate(parts).view(np.int64)


def _fail(reason: str, offset: int) -> MalformedExampleError:
    return MalformedExampleError(
        f"Could not parse message: {reason} at byte {offset}", offset=offset
    )


#: One varint in ``buf[pos:end]``: ``(value, new pos)`` (the package's one reader).
_varint = varint_reader(_fail)


def _tag(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    value, new = _varint(buf, pos, end)
    if value > 0xFFFFFFFF or value >> 3 == 0:
        raise _fail(f"invalid tag {value}", pos)
    return value >> 3, value & 7, new


def _length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    n, pos = _varint(buf, pos, end)
    if n > end - pos:
        raise _fail(f"length {n} exceeds the {end - pos} bytes remaining", pos)
    return n, pos


def _skip(buf: bytes, pos: int, end: int, field: int, wire_type: int, *, depth: int) -> int:
    """Skips the value of an unknown field whose tag was just read."""
    if wire_type == 0:
        return _varint(buf, pos, end)[1]
    if wire_type == 2:
        n, pos = _length(buf, pos, end)
        return pos + n
    if wire_type in (1, 5):
        size = 8 if wire_type == 1 else 4
        if end - pos < size:
            raise _fail("truncated fixed-size field", pos)
        return pos + size
    if wire_type == 3:
        stack = [field]
        while stack:
            if depth + len(stack) > _MAX_DEPTH:
                raise _fail("groups nested beyond the recursion limit", pos)
            f, wt, pos = _tag(buf, pos, end)
            if wt == 3:
                stack.append(f)
            elif wt == 4:
                if f != stack.pop():
                    raise _fail("mismatched end-group tag", pos)
            else:
                pos = _skip(buf, pos, end, f, wt, depth=depth + len(stack))
        return pos
    raise _fail(f"unexpected wire type {wire_type}", pos)


def _read_list(
    buf: bytes, pos: int, end: int, kind: int, *, feature: PbFeature, depth: int
) -> None:
    chunks = feature.chunks
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field == 1 and wt == 2:
            n, pos = _length(buf, pos, end)
            stop = pos + n
            if kind == KIND_BYTES:
                chunks.append(buf[pos:stop])
            elif kind == KIND_FLOAT:
                if n % 4:
                    raise _fail(f"packed floats of {n} bytes", pos)
                chunks.append(buf[pos:stop])
            elif n >= NUMPY_MIN_BYTES:
                chunks.append(decode_packed(buf, pos, stop, _fail))
            else:
                while pos < stop:
                    value, pos = _varint(buf, pos, stop)
                    chunks.append(value)
            pos = stop
        elif field == 1 and wt == 0 and kind == KIND_INT64:
            value, pos = _varint(buf, pos, end)
            chunks.append(value)
        elif field == 1 and wt == 5 and kind == KIND_FLOAT:
            if end - pos < 4:
                raise _fail("truncated float", pos)
            chunks.append(buf[pos : pos + 4])
            pos += 4
        else:
            pos = _skip(buf, pos, end, field, wt, depth=depth)


def _read_feature(buf: bytes, pos: int, end: int, feature: PbFeature, depth: int) -> None:
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field in (KIND_BYTES, KIND_FLOAT, KIND_INT64) and wt == 2:
            n, pos = _length(buf, pos, end)
            if feature.kind != field:  # another oneof member replaces the current one
                feature.kind = field
                feature.chunks = []
            _read_list(buf, pos, pos + n, field, feature=feature, depth=depth + 1)
            pos += n
        else:
            pos = _skip(buf, pos, end, field, wt, depth=depth)


def _read_entry(
    buf: bytes, pos: int, end: int, depth: int, value_kind: str
) -> tuple[str, PbFeature | list[PbFeature]] | None:
    """One map entry; ``None`` when it holds unknown fields.

    upb keeps such an entry as an unknown field of the map's message instead of
    inserting it (so the map keeps its earlier value for that key).
    """
    unknown = False
    text = ""
    single = PbFeature()
    steps: list[PbFeature] = []
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field in (1, 2) and wt == 2:
            n, pos = _length(buf, pos, end)
            if field == 1:
                key = buf[pos : pos + n]
                try:  # upb checks every occurrence, even in an entry it then drops
                    text = key.decode("utf-8")
                except UnicodeDecodeError:
                    raise _fail(f"feature key {key!r} is not valid UTF-8", pos) from None
            elif value_kind == "feature":
                _read_feature(buf, pos, pos + n, single, depth + 1)
            else:
                _read_feature_list(buf, pos, pos + n, steps, depth + 1)
            pos += n
        else:
            unknown = True
            pos = _skip(buf, pos, end, field, wt, depth=depth)
    if unknown:
        return None
    return text, (single if value_kind == "feature" else steps)


def _read_feature_list(buf: bytes, pos: int, end: int, out: list[PbFeature], depth: int) -> None:
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field == 1 and wt == 2:
            n, pos = _length(buf, pos, end)
            step = PbFeature()
            _read_feature(buf, pos, pos + n, step, depth + 1)
            out.append(step)
            pos += n
        else:
            pos = _skip(buf, pos, end, field, wt, depth=depth)


def _read_map(
    buf: bytes, pos: int, end: int, out: dict[str, object], *, depth: int, value_kind: str
) -> None:
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field == 1 and wt == 2:
            n, pos = _length(buf, pos, end)
            entry = _read_entry(buf, pos, pos + n, depth + 1, value_kind)
            if entry is not None:
                out[entry[0]] = entry[1]  # a later entry replaces an earlier one
            pos += n
        else:
            pos = _skip(buf, pos, end, field, wt, depth=depth)


def example_features(buf: bytes) -> dict[str, PbFeature]:
    """Decodes an ``Example`` into ``{key: PbFeature}`` with protobuf's semantics."""
    out: dict[str, object] = {}
    pos, end = 0, len(buf)
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field == 1 and wt == 2:
            n, pos = _length(buf, pos, end)
            _read_map(buf, pos, pos + n, out, depth=1, value_kind="feature")
            pos += n
        else:
            pos = _skip(buf, pos, end, field, wt, depth=0)
    return out  # type: ignore[return-value]


def sequence_example_features(
    buf: bytes,
) -> tuple[dict[str, PbFeature], dict[str, list[PbFeature]]]:
    """Decodes a ``SequenceExample`` into ``(context, feature_lists)``."""
    context: dict[str, object] = {}
    lists: dict[str, object] = {}
    pos, end = 0, len(buf)
    while pos < end:
        field, wt, pos = _tag(buf, pos, end)
        if field in (1, 2) and wt == 2:
            n, pos = _length(buf, pos, end)
            if field == 1:
                _read_map(buf, pos, pos + n, context, depth=1, value_kind="feature")
            else:
                _read_map(buf, pos, pos + n, lists, depth=1, value_kind="list")
            pos += n
        else:
            pos = _skip(buf, pos, end, field, wt, depth=0)
    return context, lists  # type: ignore[return-value]
