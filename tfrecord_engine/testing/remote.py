"""Strategies and helpers for testing remote storage (fsspec URLs).

``memory_dir()`` gives a fresh ``memory://`` folder and removes it afterwards (fsspec's
memory filesystem is one process-wide store); the strategies draw byte-range sets for
the coalescing planner, batches of record indices, and read sizes for streams.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

__all__ = [
    "index_batches",
    "max_gaps",
    "max_requests",
    "memory_dir",
    "range_sets",
    "read_sizes",
]

IntArray = npt.NDArray[np.int64]


@contextlib.contextmanager
def memory_dir() -> Iterator[str]:
    """Yields a fresh ``memory://<random>`` URL prefix (no trailing slash); removed after."""
    import fsspec  # noqa: PLC0415 - optional: only remote tests need it

    fs = fsspec.filesystem("memory")
    root = f"/tfe-{secrets.token_hex(6)}"
    fs.mkdir(root)
    try:
        yield f"memory://{root}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            fs.rm(root, recursive=True)


def range_sets(
    max_ranges: int = 64, span: int = 10_000
) -> st.SearchStrategy[tuple[IntArray, IntArray]]:
    """Half-open ranges ``(starts, ends)`` in any order: overlapping, touching, empty, repeated."""
    one = st.tuples(st.integers(0, span), st.integers(0, 200)).map(lambda t: (t[0], t[0] + t[1]))
    return st.lists(one, max_size=max_ranges).map(
        lambda rs: (
            np.array([a for a, _ in rs], dtype=np.int64),
            np.array([b for _, b in rs], dtype=np.int64),
        )
    )


def max_gaps() -> st.SearchStrategy[int | None]:
    """``max_gap`` settings: no coalescing, touching only, small and large gaps."""
    return st.one_of(st.none(), st.just(0), st.integers(1, 300), st.just(1 << 20))


def max_requests() -> st.SearchStrategy[int | None]:
    """``max_request`` settings: unbounded, tiny (smaller than most ranges) and moderate."""
    return st.one_of(st.none(), st.integers(1, 50), st.integers(50, 2000))


def index_batches(n: int, max_size: int = 64) -> st.SearchStrategy[list[int]]:
    """Batches of record indices in ``[-n, n)``: runs, scattered picks and repeats."""
    run = st.tuples(st.integers(0, n - 1), st.integers(1, 16)).map(
        lambda t: list(range(t[0], min(n, t[0] + t[1])))
    )
    picks = st.lists(st.integers(-n, n - 1), max_size=max_size)
    return st.one_of(
        picks, run, st.lists(run, max_size=4).map(lambda rs: [i for r in rs for i in r])
    )


def read_sizes() -> st.SearchStrategy[list[int]]:
    """Sizes for successive ``read(n)`` calls on a stream (``-1``: read everything)."""
    return st.lists(st.one_of(st.integers(1, 64), st.integers(64, 5000), st.just(-1)), max_size=30)
