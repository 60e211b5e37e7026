"""String values as *rows*: a structured array instead of one ``bytes`` object each.

A row holds one value: its size (``"size"``, int64) and its bytes, zero-padded to the
array's width (``"data"``, ``V<width>``). An array of rows slices, stacks and pickles as
any numpy array, and crosses into another runtime as one buffer (each value at
``8 + i * itemsize``, ``size`` bytes long), with no Python object per value: wide records
hold hundreds of short strings each, and making (then freeing) their ``bytes`` objects
costs more than decoding the records (2026-11-29, 200-feature records with 68 short
string columns: 85-97 ms of a 155 ms epoch).

:class:`~tfrecord_engine.example.batch.BatchDecoder` leaves the string values of its
compiled dense plan as rows where asked (``string_rows``; the tf.data bridge asks, and
TensorFlow then cuts its string tensor out of the rows' buffer). Other decode paths and
values that would pad too much stay ``bytes`` objects: a consumer of rows takes both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..kernels import examples as kernel_examples
from .lists import PAD_MAX_WIDTH, pads_within

__all__ = ["ROW_HEADER", "is_rows", "rows_to_objects", "string_rows"]

I64 = npt.NDArray[np.int64]

#: Bytes before a row's value (its ``"size"``).
ROW_HEADER = 8
#: Widest value kept as a row; wider ones make ``bytes`` objects (few a batch, copied once).
MAX_WIDTH = PAD_MAX_WIDTH


def _dtype(width: int) -> np.dtype[Any]:
    return np.dtype([("size", "<i8"), ("data", f"V{width}")])


def is_rows(values: npt.NDArray[Any]) -> bool:
    """Whether ``values`` holds string rows (else ``bytes`` objects)."""
    return values.dtype.names == ("size", "data")


def string_rows(buf: npt.NDArray[np.uint8], spans: I64) -> npt.NDArray[Any] | None:
    """``buf[spans[j, 0]:spans[j, 1]]`` (``spans``: int64 ``[n, 2]``) as rows, or None:
    no compiled kernels, a value wider than :data:`MAX_WIDTH`, or padding that would
    take over 4x the values' bytes plus 32 a value and 64 KiB (:func:`~.lists.pads_within`,
    as :func:`~.lists.bytes_objects` pads its own rows)."""
    n = int(spans.shape[0])
    sizes = spans[:, 1] - spans[:, 0]
    total = int(sizes.sum())
    width = max(8, -(-int(sizes.max(initial=0)) // 8) * 8)
    if width > MAX_WIDTH or not pads_within(n, width, total):
        return None
    words = kernel_examples.sized_rows(buf, spans, width)
    if words is None:
        return None
    return words.view(_dtype(width)).reshape(n)


def rows_to_objects(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Rows as an object array of ``bytes`` of the same shape (exact: trailing zero
    bytes are kept)."""
    flat = rows.reshape(-1)
    data = flat["data"].tobytes()
    step = flat.dtype["data"].itemsize
    sizes = flat["size"].tolist()
    out = np.empty(flat.shape[0], object)
    out[:] = [data[i * step : i * step + m] for i, m in enumerate(sizes)]
    return out.reshape(rows.shape)
