"""Arrow record batches encoded into serialized SequenceExamples, row by row.

A ``list<list<T>>`` (or ``list<fixed_size_list<T>>``) column is a feature list, one
step per inner list; every other column is a context feature, as in an Example. A null
row leaves the feature (or the feature list) out; a null step has no place in a
SequenceExample and is an error. The values are converted and checked a column at a
time (:mod:`.flatten`); the messages are then built per row by
:func:`tfrecord_engine.encode_sequence_example` (SequenceExamples are written far less
often than Examples; their bytes are TensorFlow's for the same values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import InvalidArgumentError
from ...example.encode import encode_sequence_example
from ...example.wire import KIND_INT64
from .flatten import Flat, flatten_column
from .spans import Spans

__all__ = ["encode_sequence_batch", "is_feature_list"]

I64 = npt.NDArray[np.int64]


def is_feature_list(t: Any) -> bool:
    """Whether a column of type ``t`` is a feature list (a list of lists)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    inner = t.value_type
    return bool(
        pa.types.is_list(inner)
        or pa.types.is_large_list(inner)
        or pa.types.is_fixed_size_list(inner)
    )


class _Values:
    """Per item (a row, or a step), its values out of one flattened column."""

    def __init__(self, flat: Flat) -> None:
        self.flat = flat
        self.offsets = np.zeros(flat.counts.shape[0] + 1, np.int64)
        np.cumsum(flat.counts, out=self.offsets[1:])

    def item(self, j: int) -> Any:
        a, b = int(self.offsets[j]), int(self.offsets[j + 1])
        values = self.flat.values
        if isinstance(values, Spans):
            out = np.empty(b - a, dtype=object)
            data = values.buf
            out[:] = [
                data[s:e].tobytes()
                for s, e in zip(values.starts[a:b].tolist(), values.ends[a:b].tolist(), strict=True)
            ]
            return out
        dtype = np.int64 if self.flat.kind == KIND_INT64 else np.float32
        return np.asarray(values[a:b], dtype)


def encode_sequence_batch(batch: pa.RecordBatch) -> list[bytes]:
    """The serialized SequenceExamples of a batch's rows (see the module).

    Raises:
        InvalidArgumentError: a type a SequenceExample cannot hold, or a null step.
    """
    n = batch.num_rows
    context: dict[str, tuple[Flat, _Values]] = {}
    lists: dict[str, tuple[npt.NDArray[np.bool_], I64, _Values]] = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        where = f"column {name!r}"
        if not is_feature_list(column.type):
            flat = flatten_column(column, where)
            context[name] = (flat, _Values(flat))
            continue
        present = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), np.bool_)
        offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        steps = flatten_column(column.values, where)
        if not steps.present[offsets[0] : offsets[-1]].all():
            raise InvalidArgumentError(
                f"{where}: a null step inside a feature list: a SequenceExample step is a "
                "list (empty is fine); fill it or drop the row first"
            )
        lists[name] = (present, offsets, _Values(steps))
    out = []
    for r in range(n):
        ctx = {k: v.item(r) for k, (flat, v) in context.items() if flat.present[r]}
        fl = {
            k: [v.item(s) for s in range(int(o[r]), int(o[r + 1]))]
            for k, (present, o, v) in lists.items()
            if present[r]
        }
        out.append(encode_sequence_example(ctx, fl))
    return out
