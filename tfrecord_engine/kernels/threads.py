"""A per-thread switch, set for the length of a ``with`` block, and whether this process
is a PyTorch ``DataLoader`` worker (where the decode keeps to the calling thread)."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

__all__ = ["EPOCH_CHUNK", "ThreadFlag", "in_loader_worker"]


def in_loader_worker() -> bool:
    """Whether this is a PyTorch ``DataLoader`` worker process (torch not imported: no)."""
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


class ThreadFlag:
    """A boolean of each thread: ``False`` until a ``with flag.set():`` block on that
    thread, and back to what it was when the block ends (blocks nest).

    Example:
        >>> flag = ThreadFlag()
        >>> with flag.set():
        ...     flag.on
        True
        >>> flag.on
        False
    """

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def on(self) -> bool:
        """Whether this thread is inside a :meth:`set` block."""
        return bool(getattr(self._local, "on", False))

    @contextlib.contextmanager
    def set(self) -> Iterator[None]:
        """Sets the flag on this thread for the block."""
        before = self.on
        self._local.on = True
        try:
            yield
        finally:
            self._local.on = before


#: Set while this thread prepares a chunk of an epoch (``data.prepare.prepare_chunk``):
#: the dense decode keeps its thread pool there for specs with strings, whatever their
#: kernel costs (see ``example.dense.DensePlan._pool_for``).
EPOCH_CHUNK = ThreadFlag()
