"""TFRecordWriter.write holds records and frames them in bulk: the bytes, the order, the
index and the error semantics are those of one framing call per record.

Sizes cross every boundary of the hot path: the first drain (64 records), the adaptive
one (up to 512 records or about 256 KiB), and the direct path of records of 64 KiB or
more; with the compiled kernels on and off, uncompressed, GZIP and ZLIB.
"""

from __future__ import annotations

import errno
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import kernels
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import make_compressor, normalize_compression
from tfrecord_engine.testing.faults import FaultyOps, writer_with_ops

_TMP = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)

# Sizes that matter: empty, tiny, MNIST-like, just under and at the direct-write size.
_SIZES = st.one_of(
    st.sampled_from([0, 1, 856, (1 << 16) - 1, 1 << 16, 100_000]),
    st.integers(0, 3000),
)


def payloads(sizes: list[int]) -> list[bytes]:
    """Distinct, deterministic payloads of the given sizes."""
    return [
        bytes([(i * 7 + k) % 256 for k in range(min(n, 64))]) * (n // 64) + bytes(n % 64)
        for i, n in enumerate(sizes)
    ]


def expected_file(records: list[bytes], compression: str) -> bytes:
    """The file TensorFlow's writer makes: every record framed, one deflate stream."""
    stream = framing.frame_many(records)
    kind = normalize_compression(compression)
    if not compression:
        return stream
    c = make_compressor(kind)
    return c.compress(stream) + c.flush(zlib.Z_FINISH)


@_TMP
@given(
    sizes=st.one_of(
        st.lists(_SIZES, max_size=40),
        # Many small records: several drains, the first at 64, then adaptive.
        st.builds(lambda n, k: [k] * n, st.integers(60, 1300), st.sampled_from([0, 3, 856])),
    ),
    compression=st.sampled_from(["", "GZIP", "ZLIB"]),
    compiled=st.booleans(),
)
def test_per_record_writes_are_the_framed_stream(
    tmp_path: Path, sizes: list[int], compression: str, compiled: bool
) -> None:
    records = payloads(sizes)
    path = tmp_path / f"w-{compression}-{compiled}.tfrecord"
    with kernels.switched(compiled), tfe.TFRecordWriter(path, compression) as w:
        for r in records:
            w.write(r)
        assert w.records_written == len(records)
    assert path.read_bytes() == expected_file(records, compression)


def test_mixed_write_write_many_and_large_records_keep_their_order(tmp_path: Path) -> None:
    small = payloads([856] * 700)
    big = payloads([200_000])[0]
    path = tmp_path / "m.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        for r in small[:100]:
            w.write(r)
        w.write(bytearray(big))  # direct path: the held records go first
        w.write_many(small[100:300])
        for r in small[300:]:
            w.write(memoryview(r))
    assert path.read_bytes() == framing.frame_many([*small[:100], big, *small[100:]])


def test_a_reused_buffer_is_copied_when_held(tmp_path: Path) -> None:
    path = tmp_path / "b.tfrecord"
    buf = bytearray(b"first")
    with tfe.TFRecordWriter(path) as w:
        w.write(buf)
        buf[:] = b"later"  # the caller reuses its buffer before the writer frames it
        w.write(buf)
    assert list(tfe.read_records(path)) == [b"first", b"later"]


@pytest.mark.parametrize("compression", ["", "GZIP"])
@pytest.mark.parametrize("index", [False, True])
def test_write_many_copies_a_buffer_the_iterable_refills(
    tmp_path: Path, compression: str, index: bool
) -> None:
    # One bytearray (or a memoryview of it) refilled for each record: every record was
    # written as the last one's bytes (CRCs and all) before write_many copied them.
    for view in (False, True):
        path = tmp_path / f"reused-{view}.tfrecord"

        def records(view: bool = view) -> Iterator[bytearray | memoryview]:
            buf = bytearray(4)
            for i in range(5):
                buf[:] = i.to_bytes(4, "little")
                yield memoryview(buf) if view else buf

        with tfe.TFRecordWriter(path, compression, index=index) as w:
            assert w.write_many(records()) == 5
        want = [i.to_bytes(4, "little") for i in range(5)]
        assert [bytes(r) for r in tfe.read_records(path, compression)] == want


def test_a_multidimensional_memoryview_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "v.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write(memoryview(b"abcdef").cast("B", (2, 3)))  # len() is 2, its bytes 6
    assert list(tfe.read_records(path)) == [b"abcdef"]


def test_flush_hands_held_records_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    w = tfe.TFRecordWriter(path, atomic=False)
    w.write(b"a")
    w.write(b"bb")
    assert w.records_written == 2  # held ones count: write() accepted them
    w.flush()
    assert path.read_bytes() == framing.frame_many([b"a", b"bb"])
    w.close()


def test_abort_drops_held_records(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    w = tfe.TFRecordWriter(path, atomic=False)
    w.write(b"kept")
    w.flush()
    w.write(b"dropped")
    w.abort()
    assert list(tfe.read_records(path)) == [b"kept"]
    with pytest.raises(tfe.WriterClosedError):
        w.write(b"x")


def test_an_in_place_writer_dropped_without_close_keeps_held_records(tmp_path: Path) -> None:
    # As before write() held records: the file object's finalizer flushes its buffer.
    path = tmp_path / "g.tfrecord"
    w = tfe.TFRecordWriter(path, atomic=False)
    w.write(b"held")
    with pytest.warns(ResourceWarning):  # the file was never closed
        del w  # the last reference: finalized at once
    assert list(tfe.read_records(path)) == [b"held"]


def test_an_exception_inside_with_publishes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "e.tfrecord"

    def write_then_fail() -> None:
        with tfe.TFRecordWriter(path) as w:
            for r in payloads([856] * 1000):  # drained and still held records both
                w.write(r)
            raise RuntimeError("mid-way")

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert os.listdir(tmp_path) == []


def test_a_failed_drain_fails_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "d.tfrecord"
    w = writer_with_ops(FaultyOps("write", 1, errno.ENOSPC), path)
    records = payloads([856] * 1000)

    def write_all() -> None:
        for r in records:  # enough records that write() itself drains
            w.write(r)

    with pytest.raises(OSError, match="injected failure of write"):
        write_all()
    with pytest.raises(tfe.WriterFailedError, match="earlier I/O error"):
        w.write(b"more")
    with pytest.raises(tfe.WriterFailedError, match="nothing was published"):
        w.close()
    assert os.listdir(tmp_path) == []


def test_write_rejects_other_types_before_holding_them(tmp_path: Path) -> None:
    path = tmp_path / "t.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write(b"ok")
        for bad in (3, None, [b"x"], 1.5):
            with pytest.raises(tfe.InvalidArgumentError, match=type(bad).__name__):
                w.write(bad)  # type: ignore[arg-type]
        assert w.records_written == 1
    assert list(tfe.read_records(path)) == [b"ok"]


@_TMP
@given(
    sizes=st.one_of(
        st.lists(_SIZES, max_size=30),
        st.builds(lambda n: [856] * n, st.integers(60, 900)),
    ),
    compression=st.sampled_from(["", "GZIP", "ZLIB"]),
    every=st.sampled_from([1, 7, 256]),
    compiled=st.booleans(),
)
def test_index_of_per_record_writes_equals_the_built_one(
    tmp_path: Path, sizes: list[int], compression: str, every: int, compiled: bool
) -> None:
    records = payloads(sizes)
    path = tmp_path / f"i-{compression}-{every}-{compiled}.tfrecord"
    with (
        kernels.switched(compiled),
        tfe.TFRecordWriter(path, compression, index=True, index_flush_every=every) as w,
    ):
        for r in records:
            w.write(r)
    assert [bytes(r) for r in tfe.read_records(path, compression)] == records
    written = tfe.Index.load(path)
    built = tfe.Index.build(path, compression)
    assert written.offsets.tolist() == built.offsets.tolist()
    assert written.lengths.tolist() == built.lengths.tolist()
    if compression:
        assert len(written.restarts) == len(records) // every
        blob, stream = path.read_bytes(), framing.frame_many(records)
        for coff, doff in written.restarts.tolist()[:3]:
            # A restart point decodes on its own, to the framed stream from there.
            tail = zlib.decompressobj(-15).decompress(blob[coff:], 4096)
            assert tail == stream[doff : doff + 4096]
    if records:
        ds = tfe.RecordDataset(path, compression=compression)
        assert ds[len(records) - 1] == records[-1]
        assert ds[0] == records[0]


def _recording_writebacks(
    monkeypatch: pytest.MonkeyPatch, every: int, result: int = 0
) -> list[int]:
    """Early writebacks every ``every`` bytes; returns the list of the file sizes each saw
    (each also makes the real call, unless ``result`` fakes a failed one)."""
    from tfrecord_engine.writing import writer

    real = writer._writeback_call()
    assert real is not None or not sys.platform.startswith("linux")
    seen: list[int] = []

    def writeback(fd: int) -> object:
        seen.append(os.fstat(fd).st_size)
        return real(fd) if real is not None and result == 0 else result

    monkeypatch.setattr(writer, "_SYNC_EVERY", every)
    monkeypatch.setattr(writer, "_writeback_call", lambda: writeback)
    return seen


@pytest.mark.parametrize("index", [False, True])
@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_a_durable_writer_queues_writeback_early_and_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: bool, compression: str
) -> None:
    # Every 20,000 bytes handed to the file (drains, write_many chunks, large records),
    # the disk writes are queued; the file is the same, and a non-durable writer
    # queues none.
    seen = _recording_writebacks(monkeypatch, 20_000)
    records = payloads([856] * 600 + [100_000, 3] + [856] * 300)
    path = tmp_path / "s.tfrecord"
    with tfe.TFRecordWriter(path, compression, index=index) as w:
        for r in records[:700]:
            w.write(r)
        w.write_many(records[700:])
    assert len(seen) >= 4
    assert seen == sorted(seen)
    if index:  # (full flushes at restart points: compare the records)
        assert [bytes(r) for r in tfe.read_records(path, compression)] == records
        assert tfe.Index.load(path).lengths.tolist() == [len(r) for r in records]
    else:
        assert path.read_bytes() == expected_file(records, compression)
    seen.clear()
    with tfe.TFRecordWriter(path, compression, durable=False) as w:
        for r in records:
            w.write(r)
    assert seen == []
    assert path.read_bytes() == expected_file(records, compression)


def test_an_injected_file_system_sees_no_early_writeback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _recording_writebacks(monkeypatch, 1000)
    path = tmp_path / "j.tfrecord"
    w = writer_with_ops(FaultyOps("write", 10**9, errno.EIO), path)
    for r in payloads([856] * 300):
        w.write(r)
    w.close()
    assert seen == []
    assert len(list(tfe.read_records(path))) == 300


def test_a_failed_early_writeback_is_only_a_lost_head_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The call's result is not the writer's: close()'s fsync reports any failed write.
    seen = _recording_writebacks(monkeypatch, 1000, result=-1)
    records = payloads([856] * 300)
    path = tmp_path / "f.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    assert seen
    assert path.read_bytes() == expected_file(records, "")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_the_writeback_call_is_linuxs_sync_file_range(tmp_path: Path) -> None:
    from tfrecord_engine.writing import writer

    call = writer._writeback_call()
    assert call is not None
    with open(tmp_path / "x", "wb") as f:
        f.write(b"x" * 10_000)
        f.flush()
        assert call(f.fileno()) == 0
        assert call(-1) == -1  # (EBADF)
