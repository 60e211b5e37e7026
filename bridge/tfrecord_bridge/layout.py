"""Batches as flat numpy arrays for ``tf.numpy_function``, and back as TF values.

Batches cross the ``tf.numpy_function`` boundary as a flat list of arrays
(:class:`Layout`): one per dense feature, ``indices, values, dense_shape`` per sparse
feature (``values, row_splits`` per ``VarLenFeature`` the engine decoded as ragged, see
``varlen``), ``flat_values`` then the row splits (outermost first) per ragged feature.
Several batches travel together as a chunk (:meth:`Layout.pack`), one row per batch,
which ``unbatch`` splits again; TensorFlow composites are rebuilt after the boundary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfrecord_engine as tfe

__all__ = ["Layout", "Slot"]

# TensorFlow ships no complete type stubs: every TF object is ``Any`` at this boundary.
TF = Any


@dataclass(frozen=True, slots=True)
class Slot:
    """One output key: its kind (``dense``/``sparse``/``varlen``/``ragged``; ``varlen``:
    a 2-D sparse output crossing as ragged rows) and TF type spec."""

    key: str
    kind: str
    spec: Any
    ragged_rank: int = 0


class Layout:
    """Flattens engine batches into arrays for ``numpy_function`` and rebuilds them in TF.

    Args:
        tf: the TensorFlow module.
        specs: output key -> TF type spec (``TensorSpec``, ``SparseTensorSpec`` or
            ``RaggedTensorSpec``), e.g. from :func:`element_spec`.
        varlen: keys of ``SparseTensorSpec`` outputs (2-D: ``VarLenFeature``) that the
            engine hands over as a ``RaggedValue`` (values and row splits, decoded as a
            ``RaggedFeature``): they cross as such and TensorFlow makes the
            ``SparseTensor`` (``RaggedTensor.to_sparse``), where the engine would build
            every value's ``[row, position]`` index, the chunk copy it again and
            ``unbatch`` once more.
    """

    def __init__(
        self, tf: TF, specs: Mapping[str, Any], varlen: frozenset[str] = frozenset()
    ) -> None:
        self._tf = tf
        self.slots: list[Slot] = []
        for key, spec in specs.items():
            if isinstance(spec, tf.SparseTensorSpec) and key in varlen:
                if spec.shape.rank != 2:
                    raise ValueError(f"{key!r}: only 2-D sparse outputs cross as ragged rows")
                self.slots.append(Slot(key, "varlen", spec, 1))
            elif isinstance(spec, tf.SparseTensorSpec):
                self.slots.append(Slot(key, "sparse", spec))
            elif isinstance(spec, tf.RaggedTensorSpec):
                self.slots.append(Slot(key, "ragged", spec, spec.ragged_rank))
            else:
                self.slots.append(Slot(key, "dense", spec))
        # Fixed per layout and needed for every batch: worked out once (TF's dtype and
        # shape objects are slow to query).
        self._np_dtypes = [
            [np.dtype(object) if dt == tf.string else np.dtype(dt.as_numpy_dtype) for dt, _ in c]
            for c in map(self._components, self.slots)
        ]
        self._packing_list = self._compute_packing()

    def _components(self, slot: Slot) -> list[tuple[Any, list[int | None]]]:
        """``(tf dtype, static shape)`` of each flat component of ``slot``."""
        tf = self._tf
        spec = slot.spec
        if slot.kind == "dense":
            return [(spec.dtype, spec.shape.as_list())]
        if slot.kind == "sparse":
            rank = spec.shape.rank
            return [(tf.int64, [None, rank]), (spec.dtype, [None]), (tf.int64, [rank])]
        if slot.kind == "varlen":
            batch = spec.shape.as_list()[0]
            return [(spec.dtype, [None]), (tf.int64, [None if batch is None else batch + 1])]
        inner = spec.shape.as_list()[slot.ragged_rank + 1 :]
        batch = spec.shape.as_list()[0]
        outer = [None if batch is None else batch + 1]
        splits = [(spec.row_splits_dtype, outer)] + [
            (spec.row_splits_dtype, [None]) for _ in range(slot.ragged_rank - 1)
        ]
        return [(spec.dtype, [None, *inner]), *splits]

    @property
    def dtypes(self) -> list[Any]:
        """The TF dtype of every flat component, in order (``numpy_function``'s ``Tout``)."""
        return [dt for slot in self.slots for dt, _ in self._components(slot)]

    def flatten(self, batch: Mapping[str, Any]) -> list[np.ndarray[Any, Any]]:
        """An engine batch (numpy, ``SparseValue``, ``RaggedValue``) as flat arrays."""
        out: list[np.ndarray[Any, Any]] = []
        for slot, np_dtypes in zip(self.slots, self._np_dtypes, strict=True):
            value = batch[slot.key]
            if slot.kind == "dense":
                arrays = [value]
            elif slot.kind == "sparse":
                arrays = [value.indices, value.values, value.dense_shape]
            elif slot.kind == "varlen":
                arrays = [value.values, value.row_splits]
            else:
                splits = []
                while isinstance(value, tfe.RaggedValue):
                    splits.append(value.row_splits)
                    value = value.values
                if len(splits) != slot.ragged_rank:
                    raise tfe.InvalidArgumentError(
                        f"feature {slot.key!r}: the engine returned {len(splits)} ragged "
                        f"dimensions where TensorFlow has {slot.ragged_rank}"
                    )
                arrays = [value, *splits]
            for arr, np_dtype in zip(arrays, np_dtypes, strict=True):
                if isinstance(arr, np.ndarray) and arr.dtype == np_dtype:
                    out.append(arr)  # the usual case: as the engine returned it
                else:
                    out.append(np.asarray(arr).astype(np_dtype, copy=False))
        return out

    @property
    def _packing(self) -> list[tuple[str, list[int | None]]]:
        """How each flat component travels in a chunk, with its static shape."""
        return self._packing_list

    def _compute_packing(self) -> list[tuple[str, list[int | None]]]:
        """How each flat component travels in a chunk, with its static shape.

        ``"stack"``: a dense component whose inner shape is fixed; a chunk's batches
        (all of one size) are stacked into one array. ``"rows"``: batches differ in
        their first dimension (sparse and ragged parts): ragged rows. ``"shaped"``:
        batches also differ beyond it (``FixedLenSequenceFeature``): flattened rows
        plus each batch's shape. ``"empty"``: a dense component with no elements (a 0 in
        its shape): only each batch's size travels, and the batch is made again after
        ``unbatch`` (TensorFlow 2.21's ``unbatch`` crashes the process on a tensor with
        a zero inner dimension).
        """
        out = []
        for slot in self.slots:
            for _, shape in self._components(slot):
                if None in shape[1:]:
                    out.append(("shaped", shape))
                elif slot.kind == "dense" and 0 in shape[1:]:
                    out.append(("empty", shape))
                elif slot.kind == "dense":
                    out.append(("stack", shape))
                else:
                    out.append(("rows", shape))
        return out

    @property
    def packed_dtypes(self) -> list[Any]:
        """``Tout`` of a packed chunk (see :meth:`pack`)."""
        i64 = self._tf.int64
        out = []
        for dt, (how, _) in zip(self.dtypes, self._packing, strict=True):
            out += {"stack": [dt], "rows": [dt, i64], "shaped": [dt, i64, i64], "empty": [i64]}[how]
        return out

    def pack(self, batches: list[Mapping[str, Any]]) -> list[np.ndarray[Any, Any]]:
        """Several batches of one size as one chunk, one row per batch (see ``_packing``).

        ``"rows"`` components travel as the batches' arrays back to back (``values``)
        and where each batch starts (``row_splits``); ``"stack"`` components as one
        stacked array (cheaper for TensorFlow to split again).
        """
        flats = [self.flatten(b) for b in batches]
        out: list[np.ndarray[Any, Any]] = []
        for parts, (how, _) in zip(zip(*flats, strict=True), self._packing, strict=True):
            if how == "stack":
                whole = _rows_of_one_array(parts)
                if whole is None:
                    whole = np.stack(parts, out=_aligned((len(parts), *parts[0].shape), parts))
                out.append(whole)
                continue
            if how == "empty":
                out.append(np.array([p.shape[0] for p in parts], np.int64))
                continue
            rows = [p.reshape(-1) for p in parts] if how == "shaped" else list(parts)
            splits = np.zeros(len(rows) + 1, np.int64)
            np.cumsum([r.shape[0] for r in rows], out=splits[1:])
            if len(rows) == 1:
                values = rows[0]
            else:
                shape = (int(splits[-1]), *rows[0].shape[1:])
                values = np.concatenate(rows, out=_aligned(shape, rows))
            out += [values, splits]
            if how == "shaped":
                out.append(np.array([p.shape for p in parts], np.int64).reshape(len(parts), -1))
        return out

    @property
    def dense_only(self) -> bool:
        """Every output is a plain tensor: ``unbatch`` of :meth:`unpack_chunk` is the batch."""
        # A dense feature is one component; "shaped" ones (FixedLenSequenceFeature) need
        # their per-batch shape restored after ``unbatch``.
        return all(how == "stack" for how, _ in self._packing)

    def unpack_chunk(self, flat: list[Any]) -> Any:
        """The packed chunk as tensors with one row per batch, ready to ``unbatch``.

        With :attr:`dense_only`, a dict of ``[batches, batch, ...]`` tensors whose rows
        are the batches as they are (no rebuild step needed after ``unbatch``); otherwise
        a tuple of rows for :meth:`rebuild_packed`.
        """
        if self.dense_only:
            for tensor, (_, shape) in zip(flat, self._packing, strict=True):
                tensor.set_shape([None, *shape])
            return {slot.key: tensor for slot, tensor in zip(self.slots, flat, strict=True)}
        tf = self._tf
        out = []
        pos = 0
        for how, shape in self._packing:
            if how in ("stack", "empty"):
                flat[pos].set_shape([None, *shape] if how == "stack" else [None])
                out.append(flat[pos])
                pos += 1
                continue
            values, splits = flat[pos], flat[pos + 1]
            values.set_shape([None] if how == "shaped" else [None, *shape[1:]])
            splits.set_shape([None])
            out.append(tf.RaggedTensor.from_row_splits(values, splits, validate=False))
            pos += 2
            if how == "shaped":
                flat[pos].set_shape([None, len(shape)])
                out.append(flat[pos])
                pos += 1
        return tuple(out)

    def rebuild_packed(self, *row: Any) -> dict[str, Any]:
        """One unbatched row of :meth:`unpack_chunk` as the batch's tensors."""
        tf = self._tf
        flat = []
        pos = 0
        for (how, shape), dtype in zip(self._packing, self.dtypes, strict=True):
            if how == "shaped":
                flat.append(tf.reshape(row[pos], row[pos + 1]))
                pos += 2
            elif how == "empty":
                size = tf.reshape(row[pos], [1])
                flat.append(tf.zeros(tf.concat([size, shape[1:]], 0), dtype))
                pos += 1
            else:
                flat.append(row[pos])
                pos += 1
        return self.rebuild(flat)

    def rebuild(self, flat: list[Any]) -> dict[str, Any]:
        """TF tensors and composites from the flat components (inside a ``map``)."""
        tf = self._tf
        out: dict[str, Any] = {}
        pos = 0
        for slot in self.slots:
            comps = self._components(slot)
            parts = flat[pos : pos + len(comps)]
            pos += len(comps)
            for tensor, (_, shape) in zip(parts, comps, strict=True):
                tensor.set_shape(shape)
            if slot.kind == "dense":
                out[slot.key] = parts[0]
            elif slot.kind == "sparse":
                out[slot.key] = tf.SparseTensor(*parts)
                out[slot.key].set_shape(slot.spec.shape)
            elif slot.kind == "varlen":
                rows = tf.RaggedTensor.from_row_splits(parts[0], parts[1], validate=False)
                out[slot.key] = rows.to_sparse()
                out[slot.key].set_shape(slot.spec.shape)
            else:
                out[slot.key] = tf.RaggedTensor.from_nested_row_splits(
                    parts[0], parts[1:], validate=False
                )
        return out


#: What TensorFlow needs of a ``numpy_function`` result's address to take the array as
#: the tensor's memory: it copies any other (``EIGEN_MAX_ALIGN_BYTES``, 64 at most on x86
#: and ARM builds). Measured on TensorFlow 2.21: a 96 MB int64 result crossed in 0.4 ms
#: aligned, 8.5-13 ms not (numpy's own allocations are 16-byte aligned).
TF_ALIGN = 64


def _aligned(shape: tuple[int, ...], like: Sequence[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    """An uninitialised array of ``shape`` and ``like``'s dtype at a ``TF_ALIGN`` address
    (object arrays as numpy makes them: TensorFlow copies strings whatever their place)."""
    dtype = like[0].dtype
    if dtype.hasobject:
        return np.empty(shape, dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + TF_ALIGN, np.uint8)
    start = -raw.ctypes.data % TF_ALIGN
    out: np.ndarray[Any, Any] = raw[start : start + nbytes].view(dtype).reshape(shape)
    return out


def _rows_of_one_array(parts: tuple[np.ndarray[Any, Any], ...]) -> np.ndarray[Any, Any] | None:
    """``np.stack(parts)`` without copying, when the parts are consecutive row blocks.

    The engine slices an all-dense chunk into batches as views of one array per
    feature; stacking them again would copy the whole chunk. Only views of an array
    that owns its memory qualify (never a view of a mapped file, which may be closed
    while TensorFlow still holds the tensor). Returns ``None`` when they do not qualify.
    """
    first = parts[0]
    base = first.base
    if not (
        isinstance(base, np.ndarray)
        and base.flags.owndata
        and first.flags.c_contiguous
        and first.nbytes  # nothing to save, and empty views need not be consecutive
    ):
        return None
    shape, dtype = first.shape, first.dtype
    if any(
        part.base is not base
        or part.shape != shape
        or part.dtype != dtype
        or not part.flags.c_contiguous
        for part in parts
    ):
        return None
    # Offsets into ``base`` (``__array_interface__`` builds a dict per call: slower).
    starts = np.array([part.ctypes.data for part in parts], np.int64)
    if not (np.diff(starts) == first.nbytes).all():
        return None
    # Each part lies inside ``base``'s one allocation and they follow each other, so
    # their union does too: one read-only view over it, rows of ``first.nbytes``.
    return np.lib.stride_tricks.as_strided(
        first,
        shape=(len(parts), *shape),
        strides=(first.nbytes, *first.strides),
        writeable=False,
    )
