"""EpochBatches (the bridge's TF-free core): batch k of epoch e is a pure function."""

from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile
from typing import Any

import numpy as np
import pytest

if importlib.util.find_spec("tensorflow") is None:  # tfrecord_bridge refuses to import
    pytest.skip("the bridge needs TensorFlow", allow_module_level=True)
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_bridge import EpochBatches
from tfrecord_engine.data.procpool import DecodePool, PoolStream
from tfrecord_engine.testing.bridge import layouts


def _dataset(directory: str, n: int) -> tfe.RecordDataset:
    path = os.path.join(directory, "x.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([tfe.encode_example({"index": [i]}) for i in range(n)])
    return tfe.RecordDataset(path, features={"index": tfe.FixedLenFeature([], "int64")})


def _ids(batch: dict[str, Any]) -> list[int]:
    idx = batch["index"]
    return [int(i) for i in (idx[batch["mask"]] if "mask" in batch else idx)]


@given(st.integers(1, 60), layouts(), st.randoms(use_true_random=False), st.integers(1, 3))
def test_any_request_order_gives_the_engine_epochs(
    n: int, layout: dict[str, Any], rnd: Any, multiple: int
) -> None:
    count = layout["num_pipelines"]
    args = {
        "shuffle": layout["shuffle"],
        "seed": layout["seed"],
        "drop_remainder": layout["drop_remainder"],
        "pad_remainder": layout["pad_remainder"],
    }
    with tempfile.TemporaryDirectory() as d:
        ds = _dataset(d, n)
        for shard in range(count):
            src = EpochBatches(
                ds,
                layout["batch_size"],
                shard_index=shard,
                shard_count=count,
                batch_multiple=multiple,
                **args,
            )
            requests = [(e, k) for e in range(2) for k in range(src.num_batches)]
            rnd.shuffle(requests)  # restores, parallel calls, interleaved epochs
            got = {req: _ids(src.get(*req)) for req in requests}
            for e in range(2):
                want = [
                    _ids(b)
                    for b in ds.batches(
                        layout["batch_size"], epoch=e, shard_index=shard, shard_count=count, **args
                    )
                ]
                extra = src.num_batches - len(want)
                assert extra == 0 or (layout["pad_remainder"] and extra < multiple)
                assert [got[e, k] for k in range(src.num_batches)] == want + [[]] * extra
            src.close()
        ds.close()


def test_epochs_advance_per_iteration_and_after_served_batches(tmp_path: Any) -> None:
    src = EpochBatches(_dataset(str(tmp_path), 10), 4, shuffle=True, first_epoch=3)
    assert src.next_epoch() == 3
    assert src.next_epoch() == 4
    src.get(7, 0)  # a restored iterator of epoch 7 is served: later iterations follow it
    assert src.next_epoch() == 8
    with pytest.raises(tfe.InvalidArgumentError, match="out of range"):
        src.get(0, src.num_batches)
    with pytest.raises(tfe.InvalidArgumentError, match="features"):
        EpochBatches(tfe.RecordDataset(src.dataset.paths), 2)
    assert np.array_equal(src.get(3, 0)["index"], src.get(3, 0)["index"])


@given(st.integers(0, 40), layouts(), st.integers(1, 5))
def test_chunks_hold_batches_of_one_size(n: int, layout: dict[str, Any], per_chunk: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        ds = _dataset(d, n)
        src = EpochBatches(
            ds,
            layout["batch_size"],
            shard_index=layout["num_pipelines"] - 1,
            shard_count=layout["num_pipelines"],
            drop_remainder=layout["drop_remainder"],
            pad_remainder=layout["pad_remainder"],
        )
        bounds = src.chunks(per_chunk)
        assert bounds[0] == 0
        assert bounds[-1] == src.num_batches
        for a, b in itertools.pairwise(bounds):
            assert 0 < b - a <= per_chunk
            assert len({len(src.get(0, k)["index"]) for k in range(a, b)}) == 1
        ds.close()


def test_chunk_bounds_stay_whole_chunks(tmp_path: Any) -> None:
    # A tf.data checkpoint saves the index of its chunk: bounds are whole chunks from the
    # first (no ramp, unlike the engine's epochs), as iterators saved before had them;
    # the last, partial batch on its own.
    ds = _dataset(str(tmp_path), 99)
    src = EpochBatches(ds, 4)
    assert src.chunks(4) == [0, 4, 8, 12, 16, 20, 24, 25]
    assert src.chunks(1) == list(range(26))
    ds.close()


def _stream(cursor: Any) -> PoolStream:
    stream = cursor.iterator._work
    assert isinstance(stream, PoolStream)
    return stream


def _pool(cursor: Any) -> DecodePool:
    pool = _stream(cursor)._pool
    assert pool is not None
    return pool


def test_the_next_epoch_starts_decoding_when_one_ends(tmp_path: Any) -> None:
    ds = _dataset(str(tmp_path), 50)
    src = EpochBatches(ds, 8, shuffle=True, seed=1, workers=1)
    try:
        e = src.next_epoch()
        assert [_ids(src.get(e, k)) for k in range(src.num_batches)] == [
            _ids(b) for b in ds.batches(8, shuffle=True, seed=1, epoch=e)
        ]
        # The last batch of epoch e opened epoch e + 1 and queued its first chunk on
        # the workers, before anything asked for it.
        early = src._cursors[e + 1]
        assert early.next_batch == 0
        assert _stream(early)._inflight
        pids = [p.pid for p in _pool(early)._procs]
        assert src.next_epoch() == e + 1
        assert [_ids(src.get(e + 1, k)) for k in range(src.num_batches)] == [
            _ids(b) for b in ds.batches(8, shuffle=True, seed=1, epoch=e + 1)
        ]
        # An iteration that takes another epoch (a restored checkpoint) closes the one
        # opened ahead (e + 2) first, and is served by the same worker processes.
        assert (e + 2) in src._cursors
        assert _ids(src.get(e + 7, 1)) == _ids(
            list(ds.batches(8, shuffle=True, seed=1, epoch=e + 7))[1]
        )
        assert list(src._cursors) == [e + 7]
        assert [p.pid for p in _pool(src._cursors[e + 7])._procs] == pids
    finally:
        src.close()
        ds.close()
    # Decoding in this process: nothing runs ahead, so nothing is opened early.
    src = EpochBatches(_dataset(str(tmp_path), 50), 8)
    for k in range(src.num_batches):
        src.get(0, k)
    assert not src._cursors
