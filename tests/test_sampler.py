"""Epoch orders, exact sharding, padding and resumable state (no files involved)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecord_engine import BlockShuffle, InvalidArgumentError, merge_states
from tfrecord_engine.data.sampler import IndexBatch, IndexBatchIterator, ShardLayout, epoch_order
from tfrecord_engine.testing.epochs import epoch_args, shuffle_modes
from tfrecord_engine.testing.resume import assert_resume_exactly_once


def _real(batch: IndexBatch) -> list[int]:
    idx: list[int] = batch.indices.tolist()
    if batch.mask is None:
        return idx
    return [i for i, keep in zip(idx, batch.mask.tolist(), strict=True) if keep]


def _shard_records(length: int, count: int, **kw: Any) -> list[list[int]]:
    return [
        [
            i
            for b in IndexBatchIterator(length, 7, shard_index=s, shard_count=count, **kw)
            for i in _real(b)
        ]
        for s in range(count)
    ]


@pytest.mark.parametrize("length", [761, 100, 1])
@pytest.mark.parametrize("shuffle", [False, True, BlockShuffle(16, 3)])
def test_every_record_exactly_once_for_1_to_16_shards(length: int, shuffle: Any) -> None:
    for count in range(1, 17):
        shards = _shard_records(length, count, shuffle=shuffle, seed=5)
        assert sorted(i for s in shards for i in s) == list(range(length))
        sizes = [len(s) for s in shards]
        assert max(sizes) - min(sizes) <= 1, sizes


def test_shuffle_is_global_then_sharded() -> None:
    order = epoch_order(1000, shuffle=True, seed=3, epoch=1)
    shards = _shard_records(1000, 4, shuffle=True, seed=3, epoch=1)
    # The shards are contiguous slices of the one global permutation...
    assert [i for s in shards for i in s] == order.tolist()
    # ...so shard 0 draws from the whole dataset, not from its first quarter.
    assert max(shards[0]) > 900
    assert min(shards[0]) < 100


def test_shuffle_flag_is_read_as_a_truth_value() -> None:
    assert epoch_order(5, shuffle=0).tolist() == [0, 1, 2, 3, 4]  # type: ignore[arg-type]
    flag: Any = np.True_
    assert np.array_equal(epoch_order(50, shuffle=flag), epoch_order(50, shuffle=True))


def test_order_is_a_pure_function_of_seed_and_epoch() -> None:
    a = epoch_order(500, shuffle=True, seed=7, epoch=2)
    assert np.array_equal(a, epoch_order(500, shuffle=True, seed=7, epoch=2))
    assert not np.array_equal(a, epoch_order(500, shuffle=True, seed=7, epoch=3))
    assert not np.array_equal(a, epoch_order(500, shuffle=True, seed=8, epoch=2))
    np.random.seed(0)  # noqa: NPY002 - proves global random state plays no part
    b = epoch_order(500, shuffle=True, seed=7, epoch=2)
    np.random.seed(1)  # noqa: NPY002
    assert np.array_equal(b, epoch_order(500, shuffle=True, seed=7, epoch=2))
    assert np.array_equal(a, b)


def test_partial_last_batch_kept_dropped_or_padded() -> None:
    keep = [b.indices.tolist() for b in IndexBatchIterator(761, 100)]
    assert [len(b) for b in keep] == [100] * 7 + [61]
    drop = list(IndexBatchIterator(761, 100, drop_remainder=True))
    assert [len(b.indices) for b in drop] == [100] * 7
    pad = list(IndexBatchIterator(761, 100, pad_remainder=True))
    assert [len(b.indices) for b in pad] == [100] * 8
    assert pad[-1].mask is not None
    assert int(pad[-1].mask.sum()) == 61
    assert [i for b in pad for i in _real(b)] == list(range(761))


@pytest.mark.parametrize("count", [2, 3, 7, 16])
def test_padding_gives_every_shard_the_same_number_of_full_batches(count: int) -> None:
    # 761 records over `count` shards: shard sizes differ by one, and batch sizes that
    # split them unevenly would otherwise give one worker an extra batch (a hang).
    for batch_size in (2, 5, 48):
        its = [
            IndexBatchIterator(
                761, batch_size, shard_index=s, shard_count=count, pad_remainder=True
            )
            for s in range(count)
        ]
        lens = {len(it) for it in its}
        assert len(lens) == 1
        batches = [list(it) for it in its]
        assert {len(b) for b in batches} == lens
        assert all(len(b.indices) == batch_size for bs in batches for b in bs)
        got = sorted(i for bs in batches for b in bs for i in _real(b))
        assert got == list(range(761))


def test_padding_when_shards_outnumber_records() -> None:
    its = [
        IndexBatchIterator(1, 4, shard_index=s, shard_count=3, pad_remainder=True) for s in range(3)
    ]
    batches = [list(it) for it in its]
    assert [len(b) for b in batches] == [1, 1, 1]
    assert [int(b[0].mask.sum()) for b in batches if b[0].mask is not None] == [0, 0, 1]


def test_label_sorted_shuffle_quality() -> None:
    """70,000 label-sorted records: the order forgets the file (|rho| < 0.02)."""
    n = 70_000
    labels = np.arange(n) * 10 // n  # sorted: 7,000 records per label
    order = np.concatenate([b.indices for b in IndexBatchIterator(n, 1024, shuffle=True, seed=0)])
    rho = np.corrcoef(np.arange(n), order)[0, 1]  # ranks == values for a permutation
    assert abs(rho) < 0.02
    assert len(set(labels[order[:100]].tolist())) == 10


@pytest.mark.parametrize(("block", "window"), [(100, 8), (3, 1), (2, 3)])
def test_block_shuffle_keeps_blocks_contiguous_and_mixes_them(block: int, window: int) -> None:
    n = 10_001  # a short last block
    order = epoch_order(n, shuffle=BlockShuffle(block, window), seed=1)
    assert sorted(order.tolist()) == list(range(n))
    blocks = (order // block).tolist()
    short = n // block  # the short block's id
    first_seen = list(dict.fromkeys(blocks))
    pos = 0
    for w in range(0, len(first_seen), window):
        # The next `window` blocks to appear fill one contiguous stretch, whole.
        group = first_seen[w : w + window]
        size = sum(n % block if b == short else block for b in group)
        assert sorted(blocks[pos : pos + size]) == sorted(
            b for b in group for _ in range(n % block if b == short else block)
        )
        pos += size
    assert pos == n
    assert abs(np.corrcoef(np.arange(n), order)[0, 1]) < 0.1
    assert not np.array_equal(order, np.sort(order))


def test_resume_needs_matching_order_arguments() -> None:
    it = IndexBatchIterator(50, 4, shuffle=True, seed=1)
    next(it)
    state = it.get_state()
    with pytest.raises(InvalidArgumentError, match="seed"):
        IndexBatchIterator(50, 4, shuffle=True, seed=2, state=state)
    with pytest.raises(InvalidArgumentError, match="length"):
        IndexBatchIterator(51, 4, shuffle=True, seed=1, state=state)
    with pytest.raises(InvalidArgumentError, match="merge_states"):
        IndexBatchIterator(50, 4, shuffle=True, seed=1, shard_count=2, state=state)
    # Unpadded epochs may change the batch size on resume; padded ones may not.
    rest = IndexBatchIterator(50, 7, shuffle=True, seed=1, state=state)
    assert sum(len(b.indices) for b in rest) == 46
    padded = IndexBatchIterator(50, 4, pad_remainder=True)
    next(padded)
    with pytest.raises(InvalidArgumentError, match="padded"):
        IndexBatchIterator(50, 5, pad_remainder=True, state=padded.get_state())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"shard_index": 2, "shard_count": 2}, "shard_index"),
        ({"drop_remainder": True, "pad_remainder": True}, "exclude"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"batch_size": 3, **kwargs}
    with pytest.raises(InvalidArgumentError, match=match):
        IndexBatchIterator(10, **args)


def test_shard_layout_spans() -> None:
    assert [ShardLayout(i, 4).span(10) for i in range(4)] == [(0, 2), (2, 5), (5, 7), (7, 10)]
    with pytest.raises(InvalidArgumentError):
        ShardLayout(0, 0)
    with pytest.raises(InvalidArgumentError):
        BlockShuffle(0, 1)


def _sampler_factory(args: dict[str, Any]) -> Any:
    kw = dict(args)
    length = kw.pop("length")
    batch_size = kw.pop("batch_size")

    def make(state: Any) -> IndexBatchIterator:
        return IndexBatchIterator(length, batch_size, state=state, **kw)

    return make


@given(epoch_args())
def test_resume_at_every_batch_boundary(args: dict[str, Any]) -> None:
    full = assert_resume_exactly_once(_sampler_factory(args), _real)
    flat = [i for b in full for i in b]
    assert len(set(flat)) == len(flat)


@given(
    st.integers(0, 80),
    shuffle_modes(),
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 7),
    st.data(),
)
def test_resume_with_a_different_shard_count(  # noqa: PLR0917 - Hypothesis arguments
    length: int, shuffle: Any, old: int, new: int, batch_size: int, data: st.DataObject
) -> None:
    """Interrupt k workers anywhere, resume on k' workers: each record exactly once."""
    seen: Counter[int] = Counter()
    states = []
    for s in range(old):
        it = IndexBatchIterator(
            length, batch_size, shuffle=shuffle, seed=9, shard_index=s, shard_count=old
        )
        for _ in range(data.draw(st.integers(0, len(it)), label=f"batches of shard {s}")):
            seen.update(_real(next(it)))
        states.append(json.loads(json.dumps(it.get_state())))
    merged = merge_states(states)
    for s in range(new):
        it = IndexBatchIterator(
            length,
            batch_size,
            shuffle=shuffle,
            seed=9,
            shard_index=s,
            shard_count=new,
            state=merged,
        )
        seen.update(i for b in it for i in _real(b))
    assert seen == Counter(range(length))


def test_merge_states_needs_every_shard() -> None:
    states = [IndexBatchIterator(10, 2, shard_index=s, shard_count=3).get_state() for s in range(3)]
    with pytest.raises(InvalidArgumentError, match="one state per shard"):
        merge_states(states[:2])
    with pytest.raises(InvalidArgumentError):
        merge_states([])


@pytest.mark.slow
@settings(max_examples=1000)
@given(epoch_args(max_length=400, max_shards=17))
def test_resume_at_every_batch_boundary_long(args: dict[str, Any]) -> None:
    assert_resume_exactly_once(_sampler_factory(args), _real)
