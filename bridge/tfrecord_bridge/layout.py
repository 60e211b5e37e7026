"""Batches as flat numpy arrays for ``tf.numpy_function``, and back as TF values.

Batches cross the ``tf.numpy_function`` boundary as a flat list of arrays
(:class:`Layout`): one per dense feature, ``indices, values, dense_shape`` per sparse
feature (``values, row_splits`` per ``VarLenFeature`` the engine decoded as ragged, see
``varlen``), ``flat_values`` then the row splits (outermost first) per ragged feature.
Several batches travel together as a chunk (:meth:`Layout.pack`), one row per batch,
which ``unbatch`` splits again; TensorFlow composites are rebuilt after the boundary.

Dense features of one dtype and one fixed shape, :data:`BLOCK_MIN` or more of them
(the scalar columns of wide records), cross as one *block* ``[batch, features, *shape]``
that TensorFlow unstacks after the boundary: every array a ``numpy_function`` returns
and every component ``unbatch`` splits has a cost of its own, ~30 µs measured, so 200
columns crossing one by one cost more than decoding them.

With ``string_rows``, string features cross as a *blob*: the engine leaves their values
as rows (:mod:`tfrecord_engine.example.string_rows`, no ``bytes`` object per value),
one buffer crosses with each value's position and size, and ``tf.strings.substr`` cuts
the string tensor out of it (values that arrive as ``bytes`` objects are joined first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfrecord_engine as tfe
from tfrecord_engine.example.string_rows import ROW_HEADER, is_rows

__all__ = ["BLOCK_MIN", "Layout", "Slot"]

#: Dense features of one dtype and shape that cross together as one block, at least.
#: Measured (2026-11-29, 133 int64/float32 scalar columns, 20,000 records in batches of
#: 256, chunks of 8 batches, a Python loop touching every tensor): one array per column
#: 91 ms an epoch, two blocks unstacked after ``unbatch`` 58 ms.
BLOCK_MIN = 4

# TensorFlow ships no complete type stubs: every TF object is ``Any`` at this boundary.
TF = Any


@dataclass(frozen=True, slots=True)
class Slot:
    """One output key: its kind (``dense``/``sparse``/``varlen``/``ragged``; ``varlen``:
    a 2-D sparse output crossing as ragged rows; ``block``: the dense features
    ``members``, crossing as one ``[batch, len(members), *shape]`` array) and TF type
    spec (of a block: the block's)."""

    key: str
    kind: str
    spec: Any
    ragged_rank: int = 0
    members: tuple[str, ...] = ()
    blob: bool = False  # (a block of strings crossing as one buffer, see the module)


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
        string_rows: every dense string feature crosses as a blob (see the module):
            for batches of a decoder with ``string_rows`` set.
    """

    def __init__(
        self,
        tf: TF,
        specs: Mapping[str, Any],
        varlen: frozenset[str] = frozenset(),
        *,
        string_rows: bool = False,
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
        #: The output keys in the order of ``specs`` (blocks gather theirs in one slot).
        self.keys = list(specs)
        self.slots = _blocks(tf, self.slots, string_rows)
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
        if slot.blob:  # the buffer, then each value's position and size in it
            return [
                (tf.string, []),
                (tf.int64, spec.shape.as_list()),
                (tf.int64, spec.shape.as_list()),
            ]
        if slot.kind in ("dense", "block"):
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
            out += self._slot_arrays(slot, np_dtypes, [batch])
        return out

    def _slot_arrays(
        self, slot: Slot, np_dtypes: list[np.dtype[Any]], batches: Sequence[Mapping[str, Any]]
    ) -> list[np.ndarray[Any, Any]]:
        """The flat components of ``slot`` in one batch (a block: ``[batch, members, ...]``;
        of several batches, for :meth:`pack`: ``[batches, batch, members, ...]``)."""
        if slot.blob:
            blob, positions, sizes = _blob_of(slot, batches)
            return [blob, positions, sizes] if len(batches) > 1 else [blob, positions[0], sizes[0]]
        if slot.kind == "block":
            block = _block_of(slot, np_dtypes[0], batches)
            return [block if len(batches) > 1 else block[0]]
        (batch,) = batches
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
        out = []
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

        ``"blob"``: a blob's buffer (one for the chunk; its positions and sizes are
        ``"stack"`` components). ``"stack"``: a dense component whose inner shape is
        fixed; a chunk's batches (all of one size) are stacked into one array.
        ``"rows"``: batches differ in their first dimension (sparse and ragged parts):
        ragged rows. ``"shaped"``: batches also differ beyond it
        (``FixedLenSequenceFeature``): flattened rows plus each batch's shape.
        ``"empty"``: a dense component with no elements (a 0 in its shape): only each
        batch's size travels, and the batch is made again after ``unbatch``
        (TensorFlow 2.21's ``unbatch`` crashes the process on a tensor with
        a zero inner dimension).
        """
        out = []
        for slot in self.slots:
            for c, (_, shape) in enumerate(self._components(slot)):
                if slot.blob and c == 0:
                    out.append(("blob", shape))
                elif slot.kind == "block":
                    out.append(("stack", shape))  # (blocks group fixed, non-empty shapes)
                elif None in shape[1:]:
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
            out += {
                "blob": [dt],
                "stack": [dt],
                "rows": [dt, i64],
                "shaped": [dt, i64, i64],
                "empty": [i64],
            }[how]
        return out

    def pack(self, batches: list[Mapping[str, Any]]) -> list[np.ndarray[Any, Any]]:
        """Several batches of one size as one chunk, one row per batch (see ``_packing``).

        ``"rows"`` components travel as the batches' arrays back to back (``values``)
        and where each batch starts (``row_splits``); ``"stack"`` components as one
        stacked array (cheaper for TensorFlow to split again).
        """
        out: list[np.ndarray[Any, Any]] = []
        packing = iter(self._packing)
        for slot, np_dtypes in zip(self.slots, self._np_dtypes, strict=True):
            if slot.kind == "block":  # made straight from the batches, stacked already
                for _ in np_dtypes:
                    next(packing)
                if slot.blob:
                    out += _blob_of(slot, batches)
                else:
                    out.append(_block_of(slot, np_dtypes[0], batches))
                continue
            per_batch = [self._slot_arrays(slot, np_dtypes, [b]) for b in batches]
            for parts in zip(*per_batch, strict=True):
                out += _packed(parts, next(packing)[0])
        return out

    @property
    def dense_only(self) -> bool:
        """Every output is a plain tensor: ``unbatch`` of :meth:`unpack_chunk` is the batch."""
        # A dense feature is one component; "shaped" ones (FixedLenSequenceFeature) need
        # their per-batch shape restored after ``unbatch``.
        return all(how == "stack" for how, _ in self._packing) and not any(
            slot.kind == "block" for slot in self.slots
        )

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
        packing = iter(self._packing)
        for how, shape in packing:
            if how == "blob":  # the chunk's strings cut out of its buffer
                _, inner = next(packing)
                next(packing)
                blob, positions, sizes = flat[pos : pos + 3]
                blob.set_shape([])
                positions.set_shape([None, *inner])
                sizes.set_shape([None, *inner])
                out.append(_cut(tf, blob, positions, sizes))
                pos += 3
                continue
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
        packing = zip(self._packing, self.dtypes, strict=True)
        for (how, shape), dtype in packing:
            if how == "blob":  # cut already (see unpack_chunk): one component for three
                next(packing)
                next(packing)
                flat.append(row[pos])
                pos += 1
            elif how == "shaped":
                flat.append(tf.reshape(row[pos], row[pos + 1]))
                pos += 2
            elif how == "empty":
                size = tf.reshape(row[pos], [1])
                flat.append(tf.zeros(tf.concat([size, shape[1:]], 0), dtype))
                pos += 1
            else:
                flat.append(row[pos])
                pos += 1
        return self.rebuild(flat, cut=True)

    def rebuild(self, flat: list[Any], *, cut: bool = False) -> dict[str, Any]:
        """TF tensors and composites from the flat components (inside a ``map``).

        ``cut``: each blob is one component already, its string tensor (a chunk's, cut
        before ``unbatch``); else its three components are cut here.
        """
        tf = self._tf
        out: dict[str, Any] = {}
        pos = 0
        for slot in self.slots:
            comps = self._components(slot)
            if slot.blob:
                if cut:
                    comps = [(slot.spec.dtype, slot.spec.shape.as_list())]
                else:
                    blob, positions, sizes = flat[pos : pos + 3]
                    for tensor, (_, shape) in zip(flat[pos : pos + 3], comps, strict=True):
                        tensor.set_shape(shape)
                    flat = [*flat[:pos], _cut(tf, blob, positions, sizes), *flat[pos + 3 :]]
                    comps = [(slot.spec.dtype, slot.spec.shape.as_list())]
            parts = flat[pos : pos + len(comps)]
            pos += len(comps)
            for tensor, (_, shape) in zip(parts, comps, strict=True):
                tensor.set_shape(shape)
            if slot.kind == "dense":
                out[slot.key] = parts[0]
            elif slot.kind == "block":
                columns = tf.unstack(parts[0], num=len(slot.members), axis=1)
                out.update(zip(slot.members, columns, strict=True))
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
        return {key: out[key] for key in self.keys}


def _packed(parts: tuple[np.ndarray[Any, Any], ...], how: str) -> list[np.ndarray[Any, Any]]:
    """One flat component of a chunk's batches, packed as ``how`` (see ``Layout._packing``)."""
    if how == "stack":
        whole = _rows_of_one_array(parts)
        if whole is None:
            whole = np.stack(parts, out=_aligned((len(parts), *parts[0].shape), parts))
        return [whole]
    if how == "empty":
        return [np.array([p.shape[0] for p in parts], np.int64)]
    rows = [p.reshape(-1) for p in parts] if how == "shaped" else list(parts)
    splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([r.shape[0] for r in rows], out=splits[1:])
    if len(rows) == 1:
        values = rows[0]
    else:
        shape = (int(splits[-1]), *rows[0].shape[1:])
        values = np.concatenate(rows, out=_aligned(shape, rows))
    out = [values, splits]
    if how == "shaped":
        out.append(np.array([p.shape for p in parts], np.int64).reshape(len(parts), -1))
    return out


def _blocks(tf: TF, slots: list[Slot], string_rows: bool = False) -> list[Slot]:
    """``slots`` with each group of :data:`BLOCK_MIN` or more dense numeric slots of one
    dtype and one fixed, non-empty shape replaced by one ``block`` slot, where its
    first member was; with ``string_rows``, every group of strings, as a blob."""
    groups: dict[tuple[Any, tuple[int, ...]], list[Slot]] = {}
    for slot in slots:
        if slot.kind != "dense":
            continue
        _, *inner = slot.spec.shape.as_list()
        if None in inner or 0 in inner:
            continue
        groups.setdefault((slot.spec.dtype, tuple(inner)), []).append(slot)
    blocks: dict[int, Slot | None] = {}
    for (dtype, inner), members in groups.items():
        blob = string_rows and dtype == tf.string
        if not blob and (dtype == tf.string or len(members) < BLOCK_MIN):
            # (Strings of objects stay apart: unstacking a block would copy each value
            # once more, and large ones are copied once as they are.)
            continue
        batch = members[0].spec.shape.as_list()[0]
        keys = tuple(m.key for m in members)
        spec = tf.TensorSpec([batch, len(keys), *inner], dtype)
        block = Slot("/".join(keys), "block", spec, members=keys, blob=blob)
        blocks[id(members[0])] = block
        blocks.update({id(m): None for m in members[1:]})
    out = []
    for slot in slots:
        if id(slot) not in blocks:
            out.append(slot)
        elif (first := blocks[id(slot)]) is not None:
            out.append(first)
    return out


def _block_of(
    slot: Slot, dtype: np.dtype[Any], batches: Sequence[Mapping[str, Any]]
) -> np.ndarray[Any, Any]:
    """The members of block ``slot`` in ``batches`` (all of one size) as one array
    ``[batches, batch, members, *shape]``, at a ``TF_ALIGN`` address:
    one assignment a batch where the members lie in one buffer at equal steps (see
    :func:`_as_block`), else one a member."""
    first = batches[0][slot.members[0]]
    rows = first.shape[0]
    inner = slot.spec.shape.as_list()[2:]
    shape = (len(batches), rows, len(slot.members), *inner)
    block = _aligned(shape, [np.empty(0, dtype)])
    for i, batch in enumerate(batches):
        values = _members(slot, batch, rows)
        view = _as_block(values)
        if view is not None:
            block[i] = view
            continue
        for j, value in enumerate(values):
            block[i, :, j] = value
    return block


def _blob_of(
    slot: Slot, batches: Sequence[Mapping[str, Any]]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Blob ``slot``'s values in ``batches`` (all of one size): one buffer (a 0-d object
    array holding ``bytes``) and each value's position and size in it, both
    ``[batches, batch, members, *shape]``. A batch whose members' rows are one table
    (see :func:`_as_block`) is one piece of the buffer, else each member is one."""
    first = batches[0][slot.members[0]]
    shape = (len(batches), first.shape[0], len(slot.members), *first.shape[1:])
    positions = np.empty(shape, np.int64)
    sizes = np.empty(shape, np.int64)
    pieces: list[bytes] = []
    offset = 0
    for i, batch in enumerate(batches):
        values = _members(slot, batch, shape[1])
        view = _as_block(values)
        for j, part in [(slice(None), view)] if view is not None else enumerate(values):
            data, at, size = _values_buffer(part)
            positions[i, :, j] = at + offset
            sizes[i, :, j] = size
            pieces.append(data)
            offset += len(data)
    blob = np.empty((), object)
    blob[()] = b"".join(pieces)
    return blob, positions, sizes


def _members(slot: Slot, batch: Mapping[str, Any], rows: int) -> list[np.ndarray[Any, Any]]:
    """The values of block ``slot``'s members in ``batch``, each of ``rows`` records.

    Raises:
        InvalidArgumentError: a batch of another size in the chunk (only
            ``on_damage="skip"`` makes batches smaller: pass ``chunk_batches=1``).
    """
    values = [np.asarray(batch[key]) for key in slot.members]
    for key, value in zip(slot.members, values, strict=True):
        if value.shape[:1] != (rows,):
            raise tfe.InvalidArgumentError(
                f"feature {key!r}: a batch of {value.shape[:1]} records in a chunk of "
                f"batches of {rows}: the batches of one numpy_function call must be of "
                "one size (on_damage='skip' drops damaged records from their batch): "
                "pass chunk_batches=1"
            )
    return values


def _cut(tf: TF, blob: Any, positions: Any, sizes: Any) -> Any:
    """The string tensor of ``positions``' shape whose values are ``blob``'s bytes at
    ``positions`` and ``sizes`` (``substr`` broadcasts a scalar over one dimension)."""
    flat = tf.strings.substr(blob, tf.reshape(positions, [-1]), tf.reshape(sizes, [-1]))
    return tf.reshape(flat, tf.shape(positions))


def _values_buffer(
    values: np.ndarray[Any, Any],
) -> tuple[bytes, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """String ``values`` (rows or ``bytes`` objects) as one buffer, each value's
    position in it and its size (both of ``values``' shape)."""
    if is_rows(values):
        step = values.dtype.itemsize
        at = ROW_HEADER + np.arange(0, values.size * step, step, dtype=np.int64)
        # (tobytes: the values in C order, a view's too; ``at`` follows that order.)
        return values.tobytes(), at.reshape(values.shape), values["size"]
    objects = values.reshape(-1).tolist()
    size = np.fromiter(map(len, objects), np.int64, len(objects))
    at = np.cumsum(size) - size
    return b"".join(objects), at.reshape(values.shape), size.reshape(values.shape)


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


def _as_block(values: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any] | None:
    """``np.stack(values, axis=1)`` as a view, no copy, where the arrays (of one shape
    and dtype) lie in one buffer at equal steps: the engine's dense decode keeps every
    feature of one dtype in one buffer, a feature's rows after another's, and the string
    rows of all features in one table. None otherwise."""
    if not all(isinstance(v, np.ndarray) for v in values):
        return None
    first = values[0]
    base = first.base
    if not isinstance(base, np.ndarray) or first.ndim == 0 or first.size == 0:
        return None
    shape, dtype, strides = first.shape, first.dtype, first.strides
    if any(
        v.base is not base or v.shape != shape or v.dtype != dtype or v.strides != strides
        for v in values
    ):
        return None
    at = np.array([v.ctypes.data for v in values], np.int64)
    step = int(at[1] - at[0]) if len(values) > 1 else 0
    if len(values) > 1 and not (np.diff(at) == step).all():
        return None
    return np.lib.stride_tricks.as_strided(
        first,
        shape=(shape[0], len(values), *shape[1:]),
        strides=(strides[0], step, *strides[1:]),
        writeable=False,
    )


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
