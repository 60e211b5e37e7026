"""Batches as tensors (:func:`to_torch`) and moved onto a device, CUDA copies
prefetched on a side stream (:func:`prefetch_to_device`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import torch

from ...data.formats import in_loader_worker, joint_torch
from ...errors import InvalidArgumentError

__all__ = ["prefetch_to_device", "to_torch"]


def to_torch(batch: Any) -> Any:
    """A batch from :meth:`RecordDataset.batches` with its numeric arrays as tensors.

    Numeric numpy arrays become tensors (sharing memory where the array is writable;
    in a ``DataLoader`` worker, views of one block of memory for the whole batch, so it
    crosses to the main process in one transfer: see
    :func:`tfrecord_engine.data.formats.joint_torch`);
    string (object) arrays stay as they are; dicts, lists and named tuples
    (``SparseValue``, ``RaggedValue``, ``PaddedBatch``) are converted item by item;
    ``bytes`` and everything else stay as they are.

    Strings stay numpy arrays (not lists of ``bytes``, as until 2026-11-29) because a
    ``DataLoader`` hands them on whole: its ``default_convert`` (``batch_size=None``)
    and ``pin_memory`` leave object arrays alone, and walk a list value by value,
    copying it (~0.7 µs a value). Measured on 2 cores, shuffled epochs of 20,000
    records in batches of 64 through ``DataLoader(it, batch_size=None)``, lists against
    arrays (best of 5, processes alternating): records of 201 features, 68 of them
    strings, 994-1002 -> 240-260 ms; images of 2-12 KiB 54-61 -> 45-54 ms.

    A batch's arrays, numbers and strings alike, may be views of the arrays of the
    chunk it was decoded in (up to ~8 MB of records): copy what you keep for long.

    >>> import numpy as np
    >>> out = to_torch({"x": np.arange(3), "s": np.array([b"a", b"b"], dtype=object)})
    >>> out["x"], out["s"].tolist()
    (tensor([0, 1, 2]), [b'a', b'b'])
    """
    if in_loader_worker():
        # (Handed to the main process: every tensor one view of one block, see
        # joint_torch: one shared-memory transfer a batch, not one a tensor.)
        return joint_torch(batch, walker=_each_array, shared=True)
    return _each_array(batch, _from_numpy)


def _from_numpy(arr: npt.NDArray[Any]) -> torch.Tensor:
    if not arr.flags.writeable:
        arr = arr.copy()  # torch refuses to share read-only memory
    return torch.from_numpy(arr)


def _each_array(batch: Any, to: Callable[[npt.NDArray[Any]], Any]) -> Any:
    """``batch`` with ``to`` applied to each numeric array, as :func:`to_torch` walks it
    (string arrays kept as they are)."""
    if isinstance(batch, np.ndarray):
        return batch if batch.dtype == object else to(batch)
    if isinstance(batch, Mapping):
        return {k: _each_array(v, to) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_each_array(v, to) for v in batch))
    if isinstance(batch, list):
        return [_each_array(v, to) for v in batch]
    return batch


class _Moved(NamedTuple):
    batch: Any
    ready: Any  # a torch.cuda.Event, None off CUDA


def _move(batch: Any, device: torch.device, *, non_blocking: bool) -> Any:
    if isinstance(batch, torch.Tensor):
        if non_blocking and not batch.is_pinned():
            batch = batch.pin_memory()  # an asynchronous copy needs page-locked memory
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        return {k: _move(v, device, non_blocking=non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_move(v, device, non_blocking=non_blocking) for v in batch))
    if isinstance(batch, (list, tuple)):
        moved = [_move(v, device, non_blocking=non_blocking) for v in batch]
        try:
            return type(batch)(moved)
        except TypeError:  # a subclass whose constructor takes other arguments
            return moved if isinstance(batch, list) else tuple(moved)
    return batch


def _record_stream(batch: Any, stream: Any) -> None:
    """Tells the caching allocator that ``stream`` uses the CUDA tensors of ``batch``."""
    if isinstance(batch, torch.Tensor):
        if batch.is_cuda:
            batch.record_stream(stream)
    elif isinstance(batch, Mapping):
        for v in batch.values():
            _record_stream(v, stream)
    elif isinstance(batch, (list, tuple)):
        for v in batch:
            _record_stream(v, stream)


def prefetch_to_device(
    batches: Iterable[Any], device: str | torch.device, *, depth: int = 2
) -> Iterator[Any]:
    """Yields ``batches`` with every tensor moved to ``device`` (``bytes`` stay on the host).

    On a CUDA device the next ``depth`` batches are copied ahead on a side stream from
    page-locked memory (``DataLoader(..., pin_memory=True)`` pins them in the loader's
    thread; otherwise they are pinned here), so the copies overlap the training step;
    each batch is handed over only after its copy finished. Other devices (``"cpu"``)
    get a plain ``.to(device)``.

    >>> import torch
    >>> [b["x"].device.type for b in prefetch_to_device([{"x": torch.zeros(2)}], "cpu")]
    ['cpu']
    """
    if depth < 1:
        raise InvalidArgumentError(f"depth must be >= 1, got {depth}")
    dev = torch.device(device)
    if dev.type != "cuda":
        for batch in batches:
            yield _move(batch, dev, non_blocking=False)
        return
    if not torch.cuda.is_available():  # pragma: no cover - CI has no GPU
        raise InvalidArgumentError(f"device {dev} requested, but CUDA is not available")
    yield from _cuda_prefetch(iter(batches), dev, depth)  # pragma: no cover


def _cuda_prefetch(
    source: Iterator[Any], dev: torch.device, depth: int
) -> Iterator[Any]:  # pragma: no cover - needs a GPU (run on one by hand, see the docs)
    side = torch.cuda.Stream(device=dev)  # type: ignore[no-untyped-call]
    ahead: collections.deque[_Moved] = collections.deque()

    def load() -> bool:
        try:
            batch = next(source)
        except StopIteration:
            return False
        with torch.cuda.stream(side):
            moved = _move(batch, dev, non_blocking=True)
            ready = torch.cuda.Event()  # type: ignore[no-untyped-call]
            ready.record(side)
        ahead.append(_Moved(moved, ready))
        return True

    while len(ahead) < depth and load():
        pass
    while ahead:
        moved, ready = ahead.popleft()
        consumer = torch.cuda.current_stream(dev)
        consumer.wait_event(ready)
        _record_stream(moved, consumer)
        load()
        yield moved
