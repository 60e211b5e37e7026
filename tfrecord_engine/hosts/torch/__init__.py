"""The PyTorch host: the machinery behind :mod:`tfrecord_engine.torch`.

Internal: :mod:`tfrecord_engine.torch` is the public front. The modules:

- :mod:`.tensors`: batches as tensors, and moved onto a device (CUDA copies prefetched
  on a side stream);
- :mod:`.sampler`: the epoch order as a map-style sampler, and the rank and world size
  of an initialized process group;
- :mod:`.iterable`: ``RecordIterableDataset``, its epochs and its states.

Needs the ``torch`` extra; importing it without PyTorch raises
:class:`~tfrecord_engine.MissingDependencyError`. The rest of the package never imports
PyTorch.
"""

from __future__ import annotations

from ...errors import MissingDependencyError, install_hint

try:
    import torch.utils.data  # noqa: F401 - the check (torch itself comes with it)
except ImportError as exc:  # pragma: no cover - exercised by tests/test_packaging.py
    raise MissingDependencyError(
        f"tfrecord_engine.torch needs PyTorch: {install_hint('torch')}; install PyTorch's "
        "CPU or CUDA build first (a bare 'pip install torch' may pull a CUDA build of "
        "several GB)"
    ) from exc
