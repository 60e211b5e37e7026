"""Hypothesis strategies for indexed files and epoch arguments."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ..data.sampler import BlockShuffle

__all__ = ["epoch_args", "record_lists", "shuffle_modes"]


def record_lists(max_records: int = 40, max_size: int = 64) -> st.SearchStrategy[list[bytes]]:
    """Lists of record payloads (empty records and an empty list included)."""
    return st.lists(st.binary(max_size=max_size), max_size=max_records)


def shuffle_modes() -> st.SearchStrategy[bool | BlockShuffle]:
    """``False``, ``True`` or a small :class:`BlockShuffle`."""
    blocks = st.builds(BlockShuffle, block_size=st.integers(1, 8), window=st.integers(1, 4))
    return st.one_of(st.booleans(), blocks)


@st.composite
def epoch_args(draw: st.DrawFn, max_length: int = 60, max_shards: int = 5) -> dict[str, Any]:
    """Keyword arguments of one shard's epoch: length, batching, shuffle, layout."""
    count = draw(st.integers(1, max_shards))
    remainder = draw(st.sampled_from(["keep", "drop", "pad"]))
    return {
        "length": draw(st.integers(0, max_length)),
        "batch_size": draw(st.integers(1, 9)),
        "shuffle": draw(shuffle_modes()),
        "seed": draw(st.integers(0, 2**32)),
        "epoch": draw(st.integers(0, 3)),
        "shard_index": draw(st.integers(0, count - 1)),
        "shard_count": count,
        "drop_remainder": remainder == "drop",
        "pad_remainder": remainder == "pad",
    }
