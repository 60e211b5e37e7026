"""Decoding in worker processes (``batches(..., workers=N)``): same batches, same errors.

Worker processes take ~0.3 s to start, so the tests share datasets (and their pools)
across Hypothesis examples where they can.
"""

from __future__ import annotations

import gc
import glob
import itertools
import os
import pickle
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tests.test_batch_decoder import assert_same
from tfrecord_bridge.layout import _rows_of_one_array
from tfrecord_engine.data import procpool
from tfrecord_engine.data.dataset import RecordBatchIterator
from tfrecord_engine.data.procpool import DecodePool
from tfrecord_engine.data.sampler import IndexBatch, IndexBatchIterator
from tfrecord_engine.errors import WorkerError
from tfrecord_engine.records import framing

FEATURES: dict[str, Any] = {
    "label": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([2], "float32"),
    "img": tfe.FixedLenFeature([], "string"),
    "tags": tfe.VarLenFeature("string"),
    "seq": tfe.RaggedFeature("int64"),
}
N = 700


def _record(i: int) -> bytes:
    return tfe.encode_example(
        {
            "label": i,
            "x": np.array([i, -i], np.float32),
            # Same-size bytes with trailing NULs, and an empty one now and then.
            "img": bytes([i % 256, 0, 0]) if i % 7 else b"",
            "tags": np.array([b"t%d" % k for k in range(i % 4)], dtype=object),
            "seq": np.arange(i % 5, dtype=np.int64),
        }
    )


@pytest.fixture(scope="module")
def data_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("pool") / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([_record(i) for i in range(N)])
    return str(path)


@pytest.fixture(scope="module")
def parsed(data_path: str) -> Iterator[tfe.RecordDataset]:
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    yield ds
    ds.close()


def _same_batches(a: list[Any], b: list[Any]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            assert_same(x, y)
        else:
            assert x == y


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batch=st.integers(1, 300),
    shuffle=st.booleans(),
    pad=st.booleans(),
    drop=st.booleans(),
    shards=st.integers(1, 3),
    workers=st.sampled_from([1, 2]),
)
def test_workers_give_the_same_batches(  # noqa: PLR0917 - Hypothesis arguments
    parsed: tfe.RecordDataset,
    batch: int,
    shuffle: bool,
    pad: bool,
    drop: bool,
    shards: int,
    workers: int,
) -> None:
    for shard in range(shards):
        kw: dict[str, Any] = {
            "shuffle": shuffle,
            "seed": 5,
            "epoch": 0,  # the two calls compared run the same epoch
            "shard_index": shard,
            "shard_count": shards,
            "drop_remainder": drop and not pad,
            "pad_remainder": pad,
        }
        want = list(parsed.batches(batch, **kw))
        got = list(parsed.batches(batch, **kw, workers=workers))
        _same_batches(got, want)


def test_raw_batches_and_variable_sized_bytes(data_path: str) -> None:
    raw = tfe.RecordDataset(data_path)
    try:
        assert list(raw.batches(64, shuffle=True, epoch=0, workers=2)) == list(
            raw.batches(64, shuffle=True, epoch=0)
        )
    finally:
        raw.close()


def test_pool_is_kept_across_epochs_and_stopped_by_close(parsed: tfe.RecordDataset) -> None:
    list(parsed.batches(100, workers=2))
    (pool,) = [p for p in parsed._pools if p.workers == 2]
    pids = [p.pid for p in pool._procs]
    # An epoch left early drains its chunks in flight and hands the pool back.
    it = parsed.batches(10, workers=2)
    next(it)
    it.close()
    list(parsed.batches(100, workers=2))
    (again,) = [p for p in parsed._pools if p.workers == 2]
    assert [p.pid for p in again._procs] == pids
    parsed.close()
    assert parsed._pools == []
    assert all(p.poll() is not None for p in pool._procs)
    # The dataset reopens (and starts workers) on next use.
    assert sum(len(b["label"]) for b in parsed.batches(256, workers=2)) == N


def test_start_queues_chunks_on_the_workers_before_the_first_next(
    parsed: tfe.RecordDataset,
) -> None:
    sampler = IndexBatchIterator(N, batch_size=100)
    it = RecordBatchIterator(parsed, sampler, chunk_records=100, workers=2)
    stream = it._work
    assert isinstance(stream, procpool.PoolStream)
    assert not stream._inflight  # lazily: nothing is queued until asked
    assert it.start() is it
    # Every slot holds a queued chunk (2 workers + read-ahead of 2).
    assert len(stream._inflight) == 4
    _same_batches(list(it), list(parsed.batches(100)))
    it.start()  # an ended iterator has nothing to start


def test_resume_from_state_with_workers(parsed: tfe.RecordDataset) -> None:
    whole = list(parsed.batches(50, shuffle=True, seed=2, epoch=0))
    it = parsed.batches(50, shuffle=True, seed=2, epoch=0, workers=2)
    head = [next(it) for _ in range(5)]
    state = it.get_state()
    it.close()
    rest = list(parsed.batches(50, shuffle=True, seed=2, state=state, workers=1))
    _same_batches(head + rest, whole)


def test_no_shared_memory_file_is_left(parsed: tfe.RecordDataset) -> None:
    before = set(glob.glob("/dev/shm/tfe-pool-*"))
    pool = DecodePool(parsed, 1, slots=2, slot_bytes=1 << 16)
    try:
        assert set(glob.glob("/dev/shm/tfe-pool-*")) == before
    finally:
        pool.close()


def test_results_larger_than_a_slot_cross_the_pipe(parsed: tfe.RecordDataset) -> None:
    batches = [IndexBatch(np.arange(k, k + 100, dtype=np.int64), None) for k in (0, 100, 200)]
    pool = DecodePool(parsed, 1, slots=1, slot_bytes=256)
    try:
        w = pool.submit(batches, 0)
        got = [r.output for r in pool.receive(w, 0)]
    finally:
        pool.close()
    _same_batches(got, [parsed[b.indices] for b in batches])


def test_an_unexpected_worker_error_is_raised_in_the_consumer(parsed: tfe.RecordDataset) -> None:
    pool = DecodePool(parsed, 1, slots=1)
    try:
        # Not a list of batches: prepare_chunk fails with a TypeError in the worker.
        w = pool.submit([IndexBatch(np.array(["x"]), None)], 0)
        with pytest.raises((TypeError, ValueError, WorkerError)):
            pool.receive(w, 0)
        # The worker is still serving.
        w = pool.submit([IndexBatch(np.arange(3, dtype=np.int64), None)], 0)
        assert pool.receive(w, 0)[0].output["label"].tolist() == [0, 1, 2]
    finally:
        pool.close()


def test_a_killed_worker_surfaces_as_worker_error(data_path: str) -> None:
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    try:
        list(ds.batches(100, workers=1))
        (pool,) = ds._pools
        os.kill(pool._procs[0].pid, signal.SIGKILL)
        pool._procs[0].wait()
        with pytest.raises(WorkerError, match="killed by signal 9"):
            list(ds.batches(100, workers=1))
        # The broken pool is dropped; the next epoch starts a new one.
        assert ds._pools == []
        assert sum(len(b["label"]) for b in ds.batches(100, workers=1)) == N
    finally:
        ds.close()


def test_a_worker_that_cannot_open_the_dataset(tmp_path: Path) -> None:
    path = tmp_path / "gone.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([_record(i) for i in range(10)])
    ds = tfe.RecordDataset(str(path), features=FEATURES)
    len(ds)
    # The parent has it mapped; a new process cannot open it any more.
    path.unlink()
    with pytest.raises(WorkerError, match="could not open the dataset"):
        next(iter(ds.batches(4, workers=1)))
    ds.close()


def test_read_time_damage_is_reported_once_in_the_parent(tmp_path: Path) -> None:
    records = [_record(i) for i in range(300)]
    path = tmp_path / "d.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    for policy in ("raise", "skip", "stop"):
        reports: list[tfe.DamageReport] = []
        ds = tfe.RecordDataset(
            str(path), features=FEATURES, on_damage=policy, on_damage_report=reports.append
        )
        len(ds)
        data = bytearray(path.read_bytes())
        start = sum(len(r) + framing.FRAME_OVERHEAD for r in records[:123])
        data[start + framing.HEADER_SIZE] ^= 0x01
        path.write_bytes(bytes(data))
        try:
            if policy == "raise":
                it = ds.batches(10, workers=2)
                got = [next(it) for _ in range(12)]
                assert got[-1]["label"].tolist() == list(range(110, 120))
                with pytest.raises(tfe.DataLossError):
                    next(it)
            else:
                labels = [x for b in ds.batches(10, workers=2) for x in b["label"].tolist()]
                want = [i for i in range(300) if i != 123] if policy == "skip" else list(range(120))
                assert labels == want
                assert [r.record_index for r in reports] == [123]
        finally:
            ds.close()
            data[start + framing.HEADER_SIZE] ^= 0x01
            path.write_bytes(bytes(data))


def test_dataset_with_pool_still_pickles(parsed: tfe.RecordDataset) -> None:
    list(parsed.batches(300, workers=1))
    clone = pickle.loads(pickle.dumps(parsed))
    assert clone._pools == []
    assert_same(clone[[1, 2]], parsed[[1, 2]])


def test_bytes_arrays_round_trip_through_the_pickler() -> None:
    rows_2x2 = np.frombuffer(b"ab\0cd\0ef\0\0\0\0", dtype="V3").reshape(2, 2)
    cases = [
        (np.array([b"ab\0", b"cd\0"], dtype=object), None),
        (np.array([b"", b"x", b"yz\0\0"], dtype=object).reshape(3, 1), None),
        (np.array([b"", b""], dtype=object), None),
        (np.array([b"a", 3], dtype=object), None),
        (np.empty(0, dtype=object), None),
        # String rows (defer_bytes) arrive as bytes objects, trailing NULs kept.
        (rows_2x2, [[b"ab\0", b"cd\0"], [b"ef\0", b"\0\0\0"]]),
        (rows_2x2[:, 1], [b"cd\0", b"\0\0\0"]),  # not contiguous
    ]
    view = np.zeros(1 << 16, np.uint8)
    for arr, as_bytes in cases:
        reply = procpool._pack([arr], view, 0, view.size)  # type: ignore[list-item]
        assert reply[0] == "ok"
        _, stream_len, spans, rows = reply
        assert rows == ({0} if as_bytes is not None else set())
        mv = memoryview(view.data)
        (back,) = pickle.loads(mv[:stream_len], buffers=[mv[o : o + n] for o, n in spans])
        assert back.dtype == object
        assert back.shape == arr.shape
        assert back.tolist() == (arr.tolist() if as_bytes is None else as_bytes)


def test_packing_a_result_keeps_no_reference_to_it() -> None:
    # A worker's decoded chunk must be freed as soon as it is in the slot, not at the
    # next garbage collection (the pickler's memo used to hold it, in a cycle).
    import weakref

    values = np.arange(1000, dtype=np.int64)
    rows = np.frombuffer(bytes(range(200)) * 5, dtype="V10")
    alive = [weakref.ref(values), weakref.ref(rows)]
    view = np.zeros(1 << 16, np.uint8)
    reply = procpool._pack([{"v": values, "s": rows}], view, 0, view.size)  # type: ignore[list-item]
    assert reply[0] == "ok"
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del values, rows
        assert [ref() for ref in alive] == [None, None]
    finally:
        if was_enabled:
            gc.enable()


def test_invalid_worker_counts(parsed: tfe.RecordDataset) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match="workers"):
        parsed.batches(4, workers=-1)
    with pytest.raises(tfe.InvalidArgumentError):
        DecodePool(parsed, 0, slots=1)


# Python >= 3.12 warns about fork() in a process with threads; this child uses none.
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_a_forked_copy_does_not_use_its_parents_workers(data_path: str) -> None:
    ds = tfe.RecordDataset(data_path, features=FEATURES)
    try:
        list(ds.batches(300, workers=1))
        (pool,) = ds._pools
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            code = 1
            try:
                it = ds.batches(300, workers=1)
                n = sum(len(b["label"]) for b in it)
                mine = ds._pools[0]
                code = 0 if n == N and mine is not pool and mine.owner == os.getpid() else 2
                ds.close()
            finally:
                os.write(write, bytes([code]))
                os._exit(0)
        os.close(write)
        assert os.read(read, 1) == b"\0"
        os.waitpid(pid, 0)
        # The parent's pool still serves the parent.
        assert sum(len(b["label"]) for b in ds.batches(300, workers=1)) == N
        assert ds._pools == [pool]
    finally:
        ds.close()


def test_fixed_size_strings_cross_as_rows_and_arrive_as_bytes(tmp_path: Path) -> None:
    # One layout for every record: the template takes whole chunks, so workers ship the
    # image as V<size> rows (defer_bytes) and the parent makes the bytes objects.
    features = {
        "label": tfe.FixedLenFeature([], "int64"),
        "image": tfe.FixedLenFeature([], "string"),
        "pair": tfe.FixedLenFeature([2], "string"),
    }
    path = tmp_path / "m.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example(
                {
                    "label": i % 10,
                    "image": bytes([i % 256]) * 5 + b"\0",
                    "pair": np.array([b"ab\0", bytes([i % 256]) * 3], dtype=object),
                }
            )
            for i in range(5000)
        )
    ds = tfe.RecordDataset(str(path), features=features)
    try:
        want = list(ds.batches(512))
        got = list(ds.batches(512, workers=1))
        _same_batches(got, want)
        for b in got:
            for key in ("image", "pair"):
                assert b[key].dtype == object
                assert {type(v) for v in b[key].reshape(-1).tolist()} == {bytes}
        assert got[3]["image"][7] == bytes([(3 * 512 + 7) % 256]) * 5 + b"\0"
        assert got[0]["pair"][5].tolist() == [b"ab\0", bytes([5]) * 3]
    finally:
        ds.close()


def test_string_rows_are_not_copied_out_of_the_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fixed-size string values become bytes objects straight from the shared slot; only
    # the pickle stream and the numeric arrays are copied into the receive buffer.
    size = 1000
    path = tmp_path / "rows.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example({"label": i, "image": bytes([i % 100]) * size}) for i in range(2000)
        )
    features = {
        "label": tfe.FixedLenFeature([], "int64"),
        "image": tfe.FixedLenFeature([], "string"),
    }
    ds = tfe.RecordDataset(str(path), features=features)
    receive_buffers: list[np.ndarray] = []
    aligned_empty = procpool._aligned_empty

    def marked(n: int) -> np.ndarray:
        buf = aligned_empty(n)
        buf.fill(0xAB)  # never an image byte
        receive_buffers.append(buf)
        return buf

    monkeypatch.setattr(procpool, "_aligned_empty", marked)
    try:
        got = list(ds.batches(500, workers=1))
        _same_batches(got, list(ds.batches(500)))
        assert got[1]["image"][3] == bytes([(500 + 3) % 100]) * size
        assert got[1]["label"].tolist() == list(range(500, 1000))
    finally:
        ds.close()
    assert receive_buffers
    # The images' place in the first chunk's buffer (one batch: prepare.ramp) was never
    # written. (Later chunks may take the walk, as the decoder's cost model chooses,
    # whose values are bytes objects.)
    assert receive_buffers[0].nbytes < 600 * size
    assert np.count_nonzero(receive_buffers[0] == 0xAB) >= 500 * size


def test_defer_bytes_leaves_rows_only_where_one_template_takes_the_chunk(
    parsed: tfe.RecordDataset,
) -> None:
    from tfrecord_engine.example.batch import BatchDecoder

    decoder = BatchDecoder(FEATURES)
    decoder.defer_bytes = True
    records = parsed.read_raw(np.arange(N))
    # Several layouts (image sizes differ): values are merged, so bytes objects.
    out = decoder.decode_records(records)
    assert out["img"].dtype == object
    assert_same(out, parsed.decoder.decode_records(records))
    # One layout: the rows stay rows until the parent's conversion.
    same = [tfe.encode_example({"s": bytes([i % 256, 0])}) for i in range(200)]
    one = BatchDecoder({"s": tfe.FixedLenFeature([], "string")})
    one.defer_bytes = True
    rows = one.decode_records(same)
    assert rows["s"].dtype == np.dtype("V2")
    want = [bytes([i % 256, 0]) for i in range(200)]
    assert procpool._void_to_objects(rows["s"]).tolist() == want


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_files_with_workers(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "c.tfrecord"
    with tfe.TFRecordWriter(path, compression, index=True) as w:
        w.write_many([_record(i) for i in range(400)])
    ds = tfe.RecordDataset(str(path), features=FEATURES, compression=compression)
    try:
        for shuffle in (False, True):
            want = list(ds.batches(64, shuffle=shuffle, seed=1, epoch=0))
            _same_batches(list(ds.batches(64, shuffle=shuffle, seed=1, epoch=0, workers=1)), want)
    finally:
        ds.close()


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=1, max_size=12),
    joined=st.lists(st.booleans(), min_size=12, max_size=12),
    order=st.randoms(use_true_random=False),
    start=st.integers(0, 200),
)
def test_buffers_are_placed_in_aligned_runs_of_neighbours(
    sizes: list[int], joined: list[bool], order: Any, start: int
) -> None:
    # Buffers cut from a few arrays: where ``joined``, a buffer follows the previous
    # one in memory (the batches of one feature); they reach _place in any order.
    blocks: list[list[int]] = []
    for size, join in zip(sizes, joined, strict=False):
        if blocks and join:
            blocks[-1].append(size)
        else:
            blocks.append([size])
    raws: list[memoryview] = []
    follows: list[tuple[int, int]] = []  # (i, j): raws[j] starts where raws[i] ends
    for block in blocks:
        whole = memoryview(bytearray(sum(block) + 1))  # + 1: no two arrays touch
        pos = 0
        previous = None  # the last non-empty buffer of this block
        for size in block:
            if size:
                if previous is not None:
                    follows.append((previous, len(raws)))
                previous = len(raws)
            raws.append(whole[pos : pos + size])
            pos += size
    shuffled = list(range(len(raws)))
    order.shuffle(shuffled)
    spans, end = procpool._place([raws[i] for i in shuffled], start)
    placed = {i: spans[k] for k, i in enumerate(shuffled)}
    assert [placed[i][1] for i in range(len(raws))] == [r.nbytes for r in raws]
    taken = sorted((o, o + n) for o, n in placed.values() if n)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(taken)), "no overlap"
    assert all(start <= o for o, _ in placed.values())
    assert end == max([start, *(o + n for o, n in placed.values())]) or not taken
    for i, j in follows:
        assert placed[j][0] == placed[i][0] + placed[i][1], "neighbours stay neighbours"
    successors = {j for _, j in follows}
    for i, (offset, _) in placed.items():
        if i not in successors:
            assert offset % procpool._ALIGN == 0, "every run starts aligned"


def test_a_features_batches_arrive_as_one_aligned_block(tmp_path: Path) -> None:
    # Dense features decoded in a worker cross back as consecutive rows of one aligned
    # buffer per feature: the bridge stacks a chunk's batches without copying, and
    # TensorFlow takes the stacked arrays without copying either.
    path = tmp_path / "dense.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            [tfe.encode_example({"x": np.full(3, i, np.float32), "y": [i, -i]}) for i in range(500)]
        )
    features = {
        "x": tfe.FixedLenFeature([3], "float32"),
        "y": tfe.FixedLenFeature([2], "int64"),
    }
    ds = tfe.RecordDataset(path, features=features)
    try:
        batches = list(ds.batches(32, workers=1))
    finally:
        ds.close()
    # The chunk of batches 7-14 (after the ramp's chunks of 1, 2 and 4 batches, see
    # prepare.ramp; the partial last batch has rows of its own size).
    full = batches[7:15]
    assert [len(b["x"]) for b in batches[7:]] == [32] * 8 + [500 - 15 * 32]
    for key in features:
        parts = tuple(b[key] for b in full)
        stacked = _rows_of_one_array(parts)
        assert stacked is not None, key
        assert stacked.ctypes.data % procpool._ALIGN == 0
        np.testing.assert_array_equal(stacked, np.stack(parts))
    np.testing.assert_array_equal(np.concatenate([b["y"][:, 0] for b in batches]), np.arange(500))
