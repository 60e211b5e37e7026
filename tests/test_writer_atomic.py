"""Crash-safe writing: atomic publish, cleanup on errors, append with torn-tail repair."""

from __future__ import annotations

import gc
import glob
import os
import traceback
import zlib
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.storage.fileops import FileOps, naming_final
from tfrecord_engine.testing.faults import FaultyOps, writer_with_ops
from tfrecord_engine.writing.writer import temp_path_for


class _Boom(Exception):
    pass


def _write_then_fail(path: Path, compression: str = "", atomic: bool = True) -> None:
    with tfe.TFRecordWriter(path, compression, atomic=atomic) as w:
        w.write_many([b"new"] * 100)
        # Meanwhile an atomic rewrite leaves the previous version (if any) in place.
        assert not atomic or not path.exists() or _read(path) == [b"old"]
        raise _Boom


def _temps(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if ".tmp-" in n)


def _read(path: Path, compression: str = "") -> list[bytes]:
    return [bytes(r) for r in tfe.read_records(path, compression)]


def test_atomic_writer_publishes_only_on_close(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    w = tfe.TFRecordWriter(path)
    w.write(b"one")
    w.flush()
    assert not path.exists()
    [temp] = _temps(tmp_path)
    assert temp.startswith(".a.tfrecord.tmp-")
    assert os.path.getsize(tmp_path / temp) == len(framing.frame(b"one"))
    assert glob.glob(str(tmp_path / "*.tfrecord")) == []  # hidden from shard globs
    w.close()
    assert _read(path) == [b"one"]
    assert _temps(tmp_path) == []
    w.close()  # idempotent


def test_temp_names_are_unique_and_next_to_the_target() -> None:
    names = {temp_path_for("/d/x.tfrecord") for _ in range(100)}
    assert len(names) == 100
    assert all(os.path.dirname(n) == "/d" for n in names)


def _message(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def test_errors_name_the_final_path_not_the_temporary_file(tmp_path: Path) -> None:
    # Opening: the folder does not exist.
    missing = tmp_path / "nodir" / "x.tfrecord"
    with pytest.raises(FileNotFoundError) as opened:
        tfe.TFRecordWriter(missing)
    assert opened.value.filename == str(missing)
    assert ".tmp-" not in _message(opened.value)
    # Publishing: the rename onto the final path fails (a folder is in the way).
    blocked = tmp_path / "y.tfrecord"
    (blocked / "sub").mkdir(parents=True)
    for index in (False, True):
        w = tfe.TFRecordWriter(blocked, index=index)
        w.write(b"a")
        with pytest.raises(IsADirectoryError) as published:
            w.close()
        assert published.value.filename == str(blocked)
        assert str(published.value).endswith(f"Is a directory: {str(blocked)!r}")
        assert ".tmp-" not in _message(published.value)
        assert _temps(tmp_path) == []
    # An index saved where a folder is in the way: the same.
    data = tmp_path / "z.tfrecord"
    with tfe.TFRecordWriter(data) as w:
        w.write(b"a")
    (tmp_path / "z.idx" / "sub").mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as saved:
        tfe.Index.build(data).save(tmp_path / "z.idx")
    assert saved.value.filename == str(tmp_path / "z.idx")
    assert ".tmp-" not in _message(saved.value)
    # An error about another file is left as it was.
    other = FileNotFoundError(2, "No such file or directory", "elsewhere")
    assert naming_final(other, "t", "f") is other


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_exception_inside_with_publishes_nothing(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "e.tfrecord"
    with pytest.raises(_Boom):
        _write_then_fail(path, compression)
    assert not path.exists()
    assert os.listdir(tmp_path) == []


def test_failed_rewrite_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "old.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write(b"old")
    with pytest.raises(_Boom):
        _write_then_fail(path)
    assert _read(path) == [b"old"]
    assert _temps(tmp_path) == []
    with tfe.TFRecordWriter(path) as w:
        w.write(b"new")
    assert _read(path) == [b"new"]


def test_abort_and_garbage_collection_remove_the_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "ab.tfrecord"
    w = tfe.TFRecordWriter(path)
    w.write(b"x")
    w.abort()
    w.abort()
    w.close()
    assert os.listdir(tmp_path) == []
    with pytest.raises(tfe.WriterClosedError):
        w.write(b"y")
    w2 = tfe.TFRecordWriter(path)
    w2.write(b"x")
    del w2
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_non_atomic_writer_streams_into_the_final_path(tmp_path: Path) -> None:
    path = tmp_path / "s.tfrecord"
    w = tfe.TFRecordWriter(path, atomic=False)
    w.write(b"a")
    w.flush()
    assert path.read_bytes() == framing.frame(b"a")
    w.close()
    with pytest.raises(_Boom):
        _write_then_fail(path, atomic=False)
    # Not atomic: what was written before the exception is in the (complete) file.
    assert _read(path) == [b"new"] * 100
    assert _temps(tmp_path) == []


def test_write_and_close_after_an_io_error(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    ops = FaultyOps("write", 2)
    w = writer_with_ops(ops, path)
    w.write(b"ok")
    w.flush()  # the file's write #1
    w.write(b"held")  # write() holds small records: the file sees them on flush
    with pytest.raises(OSError, match="injected"):
        w.flush()
    for call in (lambda: w.write(b"more"), lambda: w.write_many([b"m"]), w.flush):
        with pytest.raises(tfe.WriterFailedError, match="earlier I/O error"):
            call()
    with pytest.raises(tfe.WriterFailedError, match="nothing was published") as info:
        w.close()
    assert isinstance(info.value, OSError)
    assert isinstance(info.value.__cause__, OSError)
    assert os.listdir(tmp_path) == []
    w.close()  # closed now: a second close is a no-op


def test_close_after_io_error_in_non_atomic_mode_says_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "g.tfrecord"
    w = writer_with_ops(FaultyOps("write", 1), path, "GZIP", atomic=False)
    with pytest.raises(OSError, match="injected"):
        w.write_many([b"x" * 100_000] * 20)  # enough to make deflate emit bytes
    with pytest.raises(tfe.WriterFailedError, match="incomplete"):
        w.close()


def test_large_records_take_the_direct_write_path(tmp_path: Path) -> None:
    big = os.urandom(200_000)
    path = tmp_path / "big.tfrecord"
    ops = FaultyOps()
    with writer_with_ops(ops, path) as w:
        w.write(big)
        w.write("text")
    assert ops.calls["write"] == 4  # header, data, footer; then one framed small record
    assert _read(path) == [big, b"text"]


# --- append ---------------------------------------------------------------------------


def test_append_creates_then_extends(tmp_path: Path) -> None:
    path = tmp_path / "ap.tfrecord"
    with tfe.TFRecordWriter(path, append=True) as w:
        w.write(b"1")
    with tfe.TFRecordWriter(path, append=True) as w:
        w.write_many([b"2", b"3"])
    assert _read(path) == [b"1", b"2", b"3"]


@pytest.mark.parametrize(
    "tail",
    [
        framing.frame(b"torn record")[:5],  # partial header
        framing.frame(b"torn record")[:-2],  # partial data/footer
        bytes(40),  # zeros where a record never reached the disk
        framing.frame(b"bad crc")[:-1] + b"\x00",  # complete-looking, bad data CRC
    ],
)
def test_append_cuts_a_torn_tail_and_reports_it(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "torn.tfrecord"
    intact = framing.frame_many([b"a", b"b"])
    path.write_bytes(intact + tail)
    reports: list[tfe.DamageReport] = []
    with tfe.TFRecordWriter(path, append=True, on_damage_report=reports.append) as w:
        w.write(b"c")
    assert _read(path) == [b"a", b"b", b"c"]
    [r] = reports
    assert (r.record_index, r.offset, r.bytes_skipped) == (2, len(intact), len(tail))
    assert "torn tail cut" in r.reason
    assert r.path == str(path)


def test_append_torn_tail_without_callback_warns(tmp_path: Path) -> None:
    path = tmp_path / "warn.tfrecord"
    path.write_bytes(framing.frame(b"a") + b"xyz")
    with (
        pytest.warns(tfe.DamageWarning, match="torn tail"),
        tfe.TFRecordWriter(path, append=True) as w,
    ):
        w.write(b"b")
    assert _read(path) == [b"a", b"b"]


def test_append_refuses_damage_followed_by_intact_records(tmp_path: Path) -> None:
    path = tmp_path / "mid.tfrecord"
    bad = bytearray(framing.frame_many([b"a", b"b", b"c"]))
    bad[len(framing.frame(b"a")) + 12] ^= 1  # record 1's data
    path.write_bytes(bytes(bad))
    with pytest.raises(tfe.DataLossError, match="intact records follow") as info:
        tfe.TFRecordWriter(path, append=True)
    assert (info.value.record_index, info.value.offset) == (1, 17)
    assert path.read_bytes() == bytes(bad)


def test_append_gzip_adds_a_member(tmp_path: Path) -> None:
    path = tmp_path / "ap.tfrecord.gz"
    with tfe.TFRecordWriter(path, "GZIP") as w:
        w.write(b"1")
    with tfe.TFRecordWriter(path, "gzip", append=True) as w:
        w.write_many([b"2", b"3"])
    assert _read(path, "GZIP") == [b"1", b"2", b"3"]
    d = zlib.decompressobj(31)
    d.decompress(path.read_bytes())
    assert d.eof
    assert d.unused_data  # a second member follows the first
    empty = tmp_path / "empty.gz"
    empty.write_bytes(b"")
    with tfe.TFRecordWriter(empty, "GZIP", append=True) as w:
        w.write(b"e")
    assert _read(empty, "GZIP") == [b"e"]


def test_append_refuses_a_damaged_gzip_file_and_zlib(tmp_path: Path) -> None:
    path = tmp_path / "bad.gz"
    with tfe.TFRecordWriter(path, "GZIP") as w:
        w.write_many([b"x" * 1000] * 10)
    data = path.read_bytes()
    path.write_bytes(data[:-30])
    with pytest.raises(tfe.DataLossError, match="refusing to append"):
        tfe.TFRecordWriter(path, "GZIP", append=True)
    assert path.read_bytes() == data[:-30]
    with pytest.raises(tfe.InvalidArgumentError, match="cannot append to ZLIB"):
        tfe.TFRecordWriter(tmp_path / "z", "ZLIB", append=True)


def test_append_cleanup_when_cutting_fails(tmp_path: Path) -> None:
    path = tmp_path / "cut.tfrecord"
    path.write_bytes(framing.frame(b"a") + b"torn")
    reports: list[tfe.DamageReport] = []
    with pytest.raises(OSError, match="injected"):
        writer_with_ops(FaultyOps("truncate"), path, append=True, on_damage_report=reports.append)
    assert path.read_bytes() == framing.frame(b"a") + b"torn"
    assert len(reports) == 1


def test_fileops_directory_sync_and_exclusive_create(tmp_path: Path) -> None:
    ops = FileOps()
    ops.fsync_dir(str(tmp_path))
    f = ops.open_new(str(tmp_path / "x"))
    ops.close(f)
    with pytest.raises(FileExistsError):
        ops.open_new(str(tmp_path / "x"))


def test_write_many_in_chunks_and_properties(tmp_path: Path) -> None:
    path = tmp_path / "chunks.tfrecord.gz"
    records = [bytes([i % 256]) * 5000 for i in range(600)]  # 3 MB: several 1 MiB chunks
    with tfe.TFRecordWriter(path, "gzip") as w:
        assert w.compression is tfe.Compression.GZIP
        assert w.write_many(iter(records)) == 600
        assert w.records_written == 600
        assert "open" in repr(w)
    assert "closed" in repr(w)
    assert _read(path, "GZIP") == records


def test_fileops_open_new_closes_the_descriptor_if_wrapping_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[int] = []
    real_close = os.close

    def failing_fdopen(fd: int, *args: object, **kwargs: object) -> object:
        raise MemoryError

    def tracking_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    monkeypatch.setattr(os, "close", tracking_close)
    with pytest.raises(MemoryError):
        FileOps().open_new(str(tmp_path / "x"))
    assert len(closed) == 1


@pytest.mark.parametrize("atomic", [True, False])
def test_durable_false_skips_fsync_but_publishes_the_same_file(
    tmp_path: Path, atomic: bool
) -> None:
    records = [b"a" * 10, b"", b"bc"]
    files = {}
    for durable in (True, False):
        ops = FaultyOps()
        path = os.fspath(tmp_path / f"{durable}.tfrecord")
        with writer_with_ops(ops, path, atomic=atomic, durable=durable) as w:
            w.write_many(records)
        files[durable] = Path(path).read_bytes()
        synced = ops.calls["fsync"] + ops.calls["fsync_dir"]
        assert (synced > 0) is durable, ops.calls
        assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    assert files[True] == files[False]
    assert list(tfe.read_records(os.fspath(tmp_path / "False.tfrecord"))) == records
