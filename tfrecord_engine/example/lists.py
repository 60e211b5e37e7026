"""Value lists located by a walk of Examples, decoded for a whole batch at once.

A walk (the compiled one of :mod:`tfrecord_engine.kernels.examples`, or the lockstep
one of :mod:`.lockstep`) finds, per record and key, the span of the key's values. Here
the spans of one key are decoded together: packed int64 varints by one compiled pass,
packed float32 payloads by one gather and a view, BytesList values as ``bytes`` objects
(or, for a :class:`~.specs.RawFeature`, as ``uint8`` rows of its byte size).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import kernels
from ..kernels import examples as kernel_examples
from ..kernels.words import read_rows
from . import lockstep
from .columns import empty_values, object_array
from .lockstep import KIND_FLOAT, KIND_INT64
from .raw import empty_rows

__all__ = ["bytes_objects", "decode_spans", "raw_rows"]

I64 = npt.NDArray[np.int64]
Bool = npt.NDArray[np.bool_]


def decode_spans(
    buf: npt.NDArray[np.uint8], kind: int, ps: I64, pe: I64, width: int | None
) -> tuple[npt.NDArray[Any], I64, Bool]:
    """The values of one key's lists, found by the compiled walk: ``(values, counts, ok)``.

    ``ps``/``pe`` span each list's values: a numeric list's packed payload (float32: a
    multiple of 4 bytes), a BytesList's payload. ``width``: a RawFeature's byte size
    (its values become ``uint8`` rows). A list not ``ok`` (a torn varint, a malformed
    BytesList, a raw value of another size) is left to the exact per-record path.
    """
    m = int(ps.shape[0])
    if m == 0:
        empty = empty_values(kind) if width is None else empty_rows(width)
        return empty, np.zeros(0, np.int64), np.ones(0, np.bool_)
    if kind == KIND_INT64:
        return lockstep.varint_runs(buf, ps, pe)
    if kind == KIND_FLOAT:
        raw = kernels.gather_spans(buf, ps, pe)
        if raw is None:
            raw = lockstep.gather_spans(buf, ps, pe)[0]
        values = raw.view("<f4").astype(np.float32, copy=False)
        return values, (pe - ps) // 4, np.ones(m, np.bool_)
    lists = kernel_examples.bytes_lists(buf, ps, pe)
    if lists is None:
        lists = lockstep.bytes_values(buf, ps, pe)
    if width is not None:
        return raw_rows(buf, lists, width)
    vs, ve, counts, ok = lists
    return bytes_objects(buf, vs, ve), counts, ok


#: Values at most this long are made through a zero-padded ``S<width>`` array.
PAD_MAX_WIDTH = 512


def pads_within(n: int, padded_width: int, total: int) -> bool:
    """Whether ``n`` values of ``total`` bytes, each padded to ``padded_width``, take at
    most 4x the values' bytes plus 32 a value and 64 KiB: the padding every padded
    string table of the decoders may cost (here, and :mod:`.string_rows`)."""
    return n * padded_width <= 4 * total + 32 * n + 65536


#: Mean value sizes up to this are sliced from one ``bytes`` copy of their range.
SLICE_MAX_MEAN = 512


def bytes_objects(buf: npt.NDArray[np.uint8], vs: I64, ve: I64) -> npt.NDArray[Any]:
    """``buf[vs[j]:ve[j]]`` as an object array of ``bytes``, made in C (no Python
    bytecode per value).

    Short values (ids, captions, the string columns of wide records) are copied into a
    zero-padded ``uint8 [n, width]`` array whose ``S<width>`` view numpy turns into
    ``bytes`` objects in one C loop (~4x faster than slicing); numpy drops trailing NUL
    bytes there, so the few values that end in one are made again from the buffer.
    Other small values are sliced from one ``bytes`` copy of the range that holds them;
    large ones (images) straight from the buffer, so that their bytes are copied once.
    """
    n = int(vs.shape[0])
    if n == 0:
        return np.empty(0, dtype=object)
    sizes = ve - vs
    total = int(sizes.sum())
    if n > 16:
        width = int(sizes.max())
        if width == 0:
            return object_array([b""] * n)
        # (Padding costs little next to making each object: up to 4x the values' bytes
        # plus 32 a value.)
        if width <= PAD_MAX_WIDTH and pads_within(n, width + 7, total):
            rows = kernel_examples.padded_rows(buf, vs, ve, width)
            if rows is not None:
                out: npt.NDArray[Any] = rows.view(f"S{rows.shape[1]}").reshape(n).astype(object)
                nul = np.flatnonzero((sizes > 0) & (buf[np.maximum(ve - 1, 0)] == 0))
                for j in nul.tolist():
                    out[j] = buf[int(vs[j]) : int(ve[j])].tobytes()
                return out
    if n > 64 and total <= SLICE_MAX_MEAN * n:
        lo, hi = int(vs.min()), int(ve.max())
        if hi - lo <= 4 * total + 65536:
            data = buf[lo:hi].tobytes()
            starts, stops = (vs - lo).tolist(), (ve - lo).tolist()
            return object_array(list(map(data.__getitem__, map(slice, starts, stops))))
    view = memoryview(buf)  # type: ignore[arg-type]  # numpy arrays are buffers
    return object_array(
        list(map(bytes, map(view.__getitem__, map(slice, vs.tolist(), ve.tolist()))))
    )


def raw_rows(
    buf: npt.NDArray[np.uint8], lists: tuple[I64, I64, I64, Bool], width: int
) -> tuple[npt.NDArray[np.uint8], I64, Bool]:
    """A RawFeature key's values as uint8 rows ``[values, width]`` (one strided gather).

    ``lists`` is what :func:`lockstep.bytes_values` returns for the key's lists.

    A list holding a value of another size is flagged not ok: its record goes to the
    exact per-record path, and from there (it cannot be a row) to the exact batch path,
    which raises the error.
    """
    vs, ve, counts, ok = lists
    sized = (ve - vs) == width
    if sized.all():
        return read_rows(buf, vs, width), counts, ok
    owner = np.repeat(np.arange(counts.shape[0]), counts)
    ok = ok.copy()
    ok[owner[~sized]] = False
    rows = np.zeros((vs.shape[0], width), np.uint8)
    if sized.any():
        rows[sized] = read_rows(buf, vs[sized], width)
    return rows, counts, ok
