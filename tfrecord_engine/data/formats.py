"""Output formats: the numpy values the decoders make, PyTorch tensors or JAX arrays.

:func:`convert` walks an output (a sample, a batch dict, lists, tuples, named tuples
such as :class:`~tfrecord_engine.SparseValue` or :class:`~tfrecord_engine.PaddedValue`)
and turns every numeric numpy array and numpy number into the framework's array;
string values (object arrays of ``bytes``) become lists of ``bytes``, which no
framework array holds; everything else is left as it is. PyTorch and JAX are imported
on first use only, and a missing one raises
:class:`~tfrecord_engine.MissingDependencyError` naming the extra to install.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, MissingDependencyError, install_hint
from ..kernels.threads import in_loader_worker

__all__ = [
    "FORMATS",
    "Format",
    "auto_format",
    "convert",
    "framework",
    "in_loader_worker",
    "joint_torch",
    "normalize_format",
    "walk",
]

Format = Literal["numpy", "torch", "jax"]
#: The output formats, as ``with_format`` and ``collate(format=...)`` name them.
FORMATS: tuple[Format, ...] = ("numpy", "torch", "jax")
_EXTRA = {"torch": "torch", "jax": "jax"}
_INT32 = np.iinfo(np.int32)


def normalize_format(fmt: object) -> Format:
    """``fmt`` checked: ``"numpy"`` (also ``None``), ``"torch"`` or ``"jax"``.

    >>> normalize_format(None), normalize_format("torch")
    ('numpy', 'torch')
    """
    if fmt is None:
        return "numpy"
    if isinstance(fmt, str) and fmt in FORMATS:
        return fmt
    raise InvalidArgumentError(
        f"format must be 'numpy', 'torch', 'jax' or None, got {fmt!r} (for other "
        "frameworks, convert the numpy values in a transform)"
    )


def framework(fmt: Format) -> Any:
    """The framework module of ``fmt`` (``torch`` or ``jax.numpy``), imported now."""
    name = "torch" if fmt == "torch" else "jax.numpy"
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"format={fmt!r} needs {fmt}: {install_hint(_EXTRA[fmt])}"
        ) from exc


def auto_format() -> Format:
    """``"torch"`` when PyTorch is imported or importable, else ``"numpy"``."""
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        return "torch"
    return "numpy"


def convert(value: Any, fmt: Format, *, keep: tuple[type, ...] = ()) -> Any:
    """``value`` with its numeric numpy arrays and numbers in format ``fmt``.

    Args:
        value: a sample, a batch, or any nesting of dicts, lists and tuples of them.
        fmt: the format; ``"numpy"`` returns ``value`` as it is.
        keep: types left as they are, contents included.

    >>> import numpy as np
    >>> convert({"x": np.arange(2), "s": np.array([b"a"], dtype=object)}, "torch")
    {'x': tensor([0, 1]), 's': [b'a']}
    """
    if fmt == "numpy":
        return value
    if fmt == "torch":
        torch = framework("torch")
        if in_loader_worker():
            return joint_torch(value, keep)
        return walk(value, _to_torch(torch), keep)
    return walk(value, _to_jax(framework("jax")), keep)


#: Where each array starts in :func:`joint_torch`'s block (every dtype's alignment).
_ALIGN = 64


#: ``walker(value, to)``: ``value`` with ``to`` applied to each array to convert.
Walker = Callable[[Any, Callable[[npt.NDArray[Any]], Any]], Any]


def joint_torch(
    value: Any, keep: tuple[type, ...] = (), walker: Walker | None = None, *, shared: bool = False
) -> Any:
    """:func:`convert` to PyTorch with every numeric array's tensor cut from one block
    of memory: what a ``DataLoader`` worker hands over.

    A worker sends each tensor's memory to the main process as a shared-memory block of
    its own, ~0.2 ms a block whatever its size (measured on 2 cores: a batch of 20
    small tensors 3.6 ms, of 200 tensors 44 ms; cut from one block, 0.5 and 1.9 ms),
    far more than decoding a batch. So a batch of many features crosses as one block.
    ``walker`` walks ``value`` as the caller's own conversion does (default: :func:`walk`
    with ``keep``). ``shared``: the block is made in shared memory (see
    :func:`_shared_block`), for what the worker hands over itself (a collated batch);
    not for values that stay in the worker (one sample each: a segment apiece, each
    holding a file descriptor while it lives, and slower to make).
    The tensors are views of that block: one kept alive keeps the batch's block (clone
    what you keep for long; ``torch.save`` of one saves the block).

    >>> import numpy as np
    >>> got = joint_torch({"x": np.arange(3), "y": np.ones((2, 2), np.float32)})
    >>> got["x"].tolist(), got["y"].dtype, got["x"].untyped_storage() is not None
    ([0, 1, 2], torch.float32, True)
    >>> got["x"].untyped_storage().data_ptr() == got["y"].untyped_storage().data_ptr()
    True
    """
    torch = framework("torch")
    arrays: list[npt.NDArray[Any]] = []

    def collect(arr: npt.NDArray[Any]) -> None:
        arrays.append(arr)

    each: Walker = walker or (lambda v, to: walk(v, to, keep))
    each(value, collect)
    starts = []
    total = 0
    for arr in arrays:
        total = -(-total // _ALIGN) * _ALIGN
        starts.append(total)
        total += arr.nbytes
    block = _shared_block(torch, total) if shared else torch.empty(total, dtype=torch.uint8)
    flat = block.numpy()
    places = iter(starts)

    def to(arr: npt.NDArray[Any]) -> Any:
        at = next(places)
        end = at + arr.nbytes
        dtype = _torch_dtype(torch, arr.dtype)
        if type(arr) is Contents:
            arr.write_into(flat, at)
        else:
            flat[at:end].view(arr.dtype).reshape(arr.shape)[...] = arr
        return block[at:end].view(dtype).view(arr.shape)

    return each(value, to)


#: Joined size up to which :class:`Contents` are joined first, then copied in one piece
#: (many short values: one C loop); above it each value is copied into the block where
#: it goes (no joined copy of megabytes, which cost fresh pages every batch).
JOIN_MAX_BYTES = 1 << 16


class Contents(np.ndarray):  # (uint8, 1-D)
    """``bytes`` values laid out back to back, as :func:`joint_torch` takes them: a
    placeholder of their joined size holding no memory (a broadcast zero), whose values
    :func:`joint_torch` writes straight into its block. Made by :func:`contents`."""

    values: list[bytes]

    def write_into(self, flat: npt.NDArray[np.uint8], at: int) -> None:
        """Writes the values back to back into ``flat`` (writable, C-contiguous uint8)
        from ``at`` on."""
        if self.nbytes <= JOIN_MAX_BYTES:
            flat[at : at + self.nbytes] = np.frombuffer(b"".join(self.values), np.uint8)
            return
        move = ctypes.memmove
        address = flat.ctypes.data + at
        for value in self.values:
            size = len(value)
            move(address, value, size)
            address += size


def contents(values: list[bytes]) -> Contents:
    """A :class:`Contents` of ``values`` (``bytes`` each)."""
    total = sum(map(len, values))
    placeholder = np.broadcast_to(np.zeros(1, np.uint8), (total,)).view(Contents)
    placeholder.values = values
    return placeholder


def bytes_at(data: npt.NDArray[np.uint8], stops: list[int]) -> list[bytes]:
    """The ``bytes`` values laid out back to back in ``data``, ending at ``stops``: each
    copied once (from one ``bytes`` copy of ``data`` where it is small, see
    :data:`JOIN_MAX_BYTES`; straight from ``data`` where it is large)."""
    starts = [0, *stops[:-1]]
    if data.nbytes <= JOIN_MAX_BYTES:
        raw = data.tobytes()
        return list(map(raw.__getitem__, map(slice, starts, stops)))
    view = memoryview(data)  # type: ignore[arg-type]  # numpy arrays are buffers
    return list(map(bytes, map(view.__getitem__, map(slice, starts, stops))))


def _shared_block(torch: Any, size: int) -> Any:
    """``size`` bytes (a uint8 tensor) made in shared memory, as the worker's hand-over
    would otherwise copy them there (by PyTorch's sharing strategy): filled in place,
    the batch crosses with no copy of its own (a detection batch of 256 records, ~4 MB:
    made and pickled in 2.3 ms against 3.2-3.9 ms). Private memory where the PyTorch
    at hand makes no shared storage this way (its hand-over then copies it, as before).
    """
    new_shared = getattr(torch.UntypedStorage, "_new_shared", None)
    if size and new_shared is not None:
        try:
            storage = new_shared(size)
        except (RuntimeError, OSError):
            storage = None  # (e.g. no room in /dev/shm: the hand-over says so itself)
        if storage is not None:
            return torch.empty(0, dtype=torch.uint8).set_(storage)
    return torch.empty(size, dtype=torch.uint8)


_TORCH_DTYPES: dict[np.dtype[Any], Any] = {}


def _torch_dtype(torch: Any, dtype: np.dtype[Any]) -> Any:
    got = _TORCH_DTYPES.get(dtype)
    if got is None:
        got = _TORCH_DTYPES[dtype] = torch.from_numpy(np.empty(0, dtype)).dtype
    return got


def walk(value: Any, to: Callable[[npt.NDArray[Any]], Any], keep: tuple[type, ...] = ()) -> Any:
    """``value`` with ``to`` applied to every numeric numpy array (and number) in it;
    string arrays become lists of ``bytes``; ``keep`` types stay as they are."""
    if keep and isinstance(value, keep):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist() if value.dtype == object else to(value)
    if isinstance(value, np.generic):
        return to(np.asarray(value)) if value.dtype.kind in "biufc" else value
    if isinstance(value, Mapping):
        return {k: walk(v, to, keep) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [walk(v, to, keep) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        plain = _plain_copy(value)
        if plain is not None:
            return plain
        return [walk(v, to, keep) for v in value]
    return value


#: Types :func:`walk` returns as they are.
_PLAIN = frozenset({bytes, str, int, float, bool, type(None)})


def _plain_copy(value: list[Any]) -> list[Any] | None:
    """A copy of ``value`` (its nested lists copied too) where it holds only values
    :func:`walk` returns as they are, or lists of them; else ``None``. The string lists
    of a batch (a ragged string feature: a list of bytes a record) are copied in one
    pass a list, with no call per value (~0.25 µs each)."""
    kinds = set(map(type, value))
    if kinds <= _PLAIN:
        return list(value)
    if kinds != {list}:
        return None
    out = []
    for inner in value:
        got = _plain_copy(inner)
        if got is None:
            return None
        out.append(got)
    return out


def _to_torch(torch: Any) -> Callable[[npt.NDArray[Any]], Any]:
    def to(arr: npt.NDArray[Any]) -> Any:
        if not arr.flags.writeable or any(s < 0 for s in arr.strides):
            arr = arr.copy()  # torch shares writable memory only, with positive strides
        return torch.from_numpy(np.asarray(arr))

    return to


def _to_jax(jnp: Any) -> Callable[[npt.NDArray[Any]], Any]:
    x64 = bool(importlib.import_module("jax").config.jax_enable_x64)

    def to(arr: npt.NDArray[Any]) -> Any:
        arr = np.asarray(arr)
        if not x64 and arr.dtype.itemsize == 8 and arr.dtype.kind in "iuf":
            # JAX keeps 32-bit values unless x64 is on; say so rather than wrap silently.
            if (
                arr.dtype.kind in "iu"
                and arr.size
                and (int(arr.min()) < _INT32.min or int(arr.max()) > _INT32.max)
            ):
                raise InvalidArgumentError(
                    f"an {arr.dtype} value beyond int32 cannot become a JAX array without "
                    "64-bit mode: jax.config.update('jax_enable_x64', True)"
                )
            arr = arr.astype(np.float32 if arr.dtype.kind == "f" else np.int32)
        return jnp.asarray(arr)

    return to
