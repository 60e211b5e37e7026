"""Hypothesis strategies for the node-local shard cache (``RecordDataset(cache_dir=)``)."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["cache_plans"]


def cache_plans(
    files: int, users: int = 3, max_limit: int = 12_000
) -> st.SearchStrategy[tuple[int, list[tuple[int, int]]]]:
    """``(limit, steps)``: a cache limit in bytes, and steps ``(user, action)`` where
    ``action`` is a file to open (``0 .. files - 1``) or ``-1``: the user closes (its
    copies are no longer in use)."""
    step = st.tuples(st.integers(0, users - 1), st.integers(-1, files - 1))
    return st.tuples(st.integers(0, max_limit), st.lists(step, max_size=25))
