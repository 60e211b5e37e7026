"""Pipes, FIFOs and /dev/stdin: read as streams, refused where random access is needed."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.errors import DataLossError, InvalidArgumentError
from tfrecord_engine.index.placement import index_path_for
from tfrecord_engine.records.recovery import DamageReport
from tfrecord_engine.testing.damage import Damage, damages
from tfrecord_engine.testing.records import compressions, record_lists, write_file

_REPO = str(Path(__file__).resolve().parents[1])


def _feed(fifo: str, blob: bytes, deadline: float) -> None:
    """Writes ``blob`` into ``fifo`` once a reader has it open (gives up at ``deadline``)."""
    while True:
        try:
            # Non-blocking open: fails (ENXIO) while no reader is there, never hangs.
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as err:
            if err.errno != errno.ENXIO or time.monotonic() > deadline:
                return
            time.sleep(0.002)
    os.set_blocking(fd, True)
    try:
        with contextlib.suppress(BrokenPipeError):  # the reader may stop early
            _write_all(fd, blob)
    finally:
        os.close(fd)


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def _fifo(blob: bytes) -> Iterator[str]:
    """A FIFO that a thread fills with ``blob`` for the first reader to open it."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "records.fifo")
        os.mkfifo(path)
        writer = threading.Thread(target=_feed, args=(path, blob, time.monotonic() + 30))
        writer.start()
        try:
            yield path
        finally:
            # A reader that stopped early leaves the writer blocked: drain the pipe.
            if writer.is_alive():
                with contextlib.suppress(OSError):
                    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                    while writer.is_alive():
                        with contextlib.suppress(BlockingIOError):
                            if not os.read(fd, 1 << 16):
                                break
                    os.close(fd)
            writer.join()


def _framed(records: list[bytes], compression: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.tfrecord")
        write_file(path, records, compression)
        return Path(path).read_bytes()


@dataclasses.dataclass
class _Outcome:
    records: list[bytes]
    reports: list[tuple[Any, ...]]
    error: tuple[Any, ...] | None


def _read_all(source: Any, compression: str, policy: Any) -> _Outcome:
    reports: list[DamageReport] = []
    out: list[bytes] = []
    error = None
    try:
        for r in tfe.read_records(
            source, compression, on_damage=policy, on_damage_report=reports.append
        ):
            out.append(bytes(r))
    except DataLossError as err:
        error = (type(err), err.reason, err.record_index, err.offset)
    # The path differs (FIFO vs anonymous stream); everything else must not.
    return _Outcome(
        out,
        [(r.record_index, r.offset, r.bytes_skipped, r.reason) for r in reports],
        error,
    )


@given(record_lists(max_records=12), compressions())
def test_a_fifo_yields_every_record(records: list[bytes], compression: str) -> None:
    blob = _framed(records, compression)
    with _fifo(blob) as path:
        got = [bytes(r) for r in tfe.read_records(path, compression)]
    assert got == records


@given(record_lists(max_records=8, max_size=512), compressions(), st.data())
def test_damage_policies_on_a_fifo_match_the_stream_reader(
    records: list[bytes], compression: str, data: st.DataObject
) -> None:
    blob = _framed(records or [b"x"], compression)
    damage: Damage = data.draw(damages(len(blob)))
    bad = damage.apply(blob)
    policy = data.draw(st.sampled_from(["raise", "stop", "skip"]))
    want = _read_all(io.BytesIO(bad), compression, policy)
    with _fifo(bad) as path:
        got = _read_all(path, compression, policy)
    assert got == want


def test_a_fifo_of_a_damaged_file_raises_naming_it() -> None:
    blob = bytearray(_framed([b"a" * 10, b"b" * 10], ""))
    blob[30] ^= 1  # second record's length field
    with _fifo(bytes(blob)) as path:
        it = tfe.read_records(path)
        assert next(it) == b"a" * 10
        with pytest.raises(tfe.CorruptedRecordError, match="record 1 at offset 26") as got:
            next(it)
    assert got.value.path == path


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_dev_stdin_on_a_pipe_yields_every_record(compression: str) -> None:
    records = [f"record {i}".encode() * (i + 1) for i in range(300)]
    code = (
        "import sys, tfrecord_engine as tfe\n"
        f"n = [len(r) for r in tfe.read_records('/dev/stdin', {compression!r})]\n"
        "print(len(n), sum(n))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=_framed(records, compression),
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": _REPO},
        timeout=60,
    )
    assert done.stdout.split() == [b"300", str(sum(map(len, records))).encode()]


def test_dev_stdin_redirected_from_a_file_is_still_mapped(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    write_file(path, [b"one", b"two"])
    code = "import tfrecord_engine as tfe; print(list(tfe.read_records('/dev/stdin')))"
    with path.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdin=stdin,
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONPATH": _REPO},
            timeout=60,
        )
    assert done.stdout.strip() == b"[b'one', b'two']"


def _unblock(path: str, done: threading.Event) -> None:
    """After a grace period, ends every blocked open of ``path`` (writes EOF) until done."""
    if done.wait(5):
        return
    while not done.is_set():
        _feed(path, b"", time.monotonic() + 0.1)


def _refuses(fn: Callable[[str], object]) -> InvalidArgumentError:
    """Runs ``fn`` on a FIFO nobody writes to; it must raise without opening it."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data.tfrecord")
        os.mkfifo(path)
        # Opening the FIFO for reading would block: a watchdog unblocks it, so a
        # regression fails the test instead of hanging it.
        done = threading.Event()
        watchdog = threading.Thread(target=_unblock, args=(path, done))
        watchdog.start()
        try:
            with pytest.raises(InvalidArgumentError) as got:
                fn(path)
        finally:
            done.set()
            watchdog.join()
        assert not os.path.exists(path + ".tfeidx")
        assert not os.path.exists(index_path_for(path))
    message = str(got.value)
    assert path in message
    assert "regular file" in message
    assert "a pipe (FIFO)" in message
    return got.value


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_index_build_refuses_a_fifo(compression: str) -> None:
    err = _refuses(lambda p: tfe.Index.build(p, compression))
    assert "indexing" in str(err)


def test_index_open_and_load_refuse_a_fifo() -> None:
    _refuses(tfe.Index.open)
    _refuses(tfe.Index.load)


def test_record_dataset_refuses_a_fifo_on_first_use() -> None:
    _refuses(lambda p: len(tfe.RecordDataset(p)))


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_appending_to_a_fifo_is_refused(compression: str) -> None:
    err = _refuses(lambda p: tfe.TFRecordWriter(p, compression, append=True))
    assert "appending" in str(err)


def test_a_character_device_is_refused_by_indexing_and_read_as_a_stream() -> None:
    with pytest.raises(InvalidArgumentError, match="a character device"):
        tfe.Index.build(os.devnull)
    assert list(tfe.read_records(os.devnull)) == []  # really empty, not mapped as empty


def test_missing_files_and_directories_keep_their_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        tfe.Index.build(tmp_path / "missing.tfrecord")
    with pytest.raises(IsADirectoryError):
        tfe.Index.build(tmp_path)
    with pytest.raises(FileNotFoundError):
        list(tfe.read_records(tmp_path / "missing.tfrecord"))
