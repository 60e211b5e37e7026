"""Following a file that another process is still writing: RecordFollower and
read_records(..., follow=True)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from collections.abc import Generator
from pathlib import Path
from typing import cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.testing.records import compressions, record_lists

_TMP_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

# A writer in a process of its own, driven line by line over stdin: each command is
# done (and flushed to the file) before it answers "ok", so the test needs no sleeps.
_WRITER = textwrap.dedent(
    """
    import sys
    import tfrecord_engine as tfe
    from tfrecord_engine.records import framing

    path, compression = sys.argv[1], sys.argv[2]
    w = tfe.TFRecordWriter(path, compression or None, atomic=False)
    raw = None
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "write":  # write N records b"record-<i>" and flush
            for i in range(*map(int, arg.split(","))):
                w.write(b"record-%d" % i)
            w.flush()
        elif cmd == "close":
            w.close()
        elif cmd == "raw":  # append bytes (hex) to the file outside the writer
            raw = raw or open(path, "ab", buffering=0)
            raw.write(bytes.fromhex(arg))
        print("ok", flush=True)
    """
)


class _Writer:
    def __init__(self, path: Path, compression: str = "") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), compression],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def do(self, command: str) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def end(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _names(a: int, b: int) -> list[bytes]:
    return [b"record-%d" % i for i in range(a, b)]


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_follower_sees_records_another_process_appends(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "live.tfrecord"
    writer = _Writer(path, compression)
    try:
        writer.do("write 0,0")  # the file exists, empty (or a bare deflate start)
        with tfe.RecordFollower(path) as follower:
            assert follower.poll() == []
            writer.do("write 0,3")
            assert follower.poll() == _names(0, 3)
            assert follower.poll() == []
            writer.do("write 3,1000")
            assert follower.poll(max_records=10) == _names(3, 13)
            assert follower.poll() == _names(13, 1000)
            writer.do("close")
            assert follower.poll() == []
            follower.finish()  # no torn tail
            assert follower.records_read == 1000
            assert follower.compression is tfe.Compression(compression)
    finally:
        writer.end()
    assert list(tfe.read_records(path)) == _names(0, 1000)


def test_follower_resumes_a_torn_tail_once_completed(tmp_path: Path) -> None:
    path = tmp_path / "torn.tfrecord"
    record = framing.frame(b"x" * 100)
    writer = _Writer(path)
    try:
        writer.do("write 0,2")
        with tfe.RecordFollower(path) as follower:
            assert follower.poll() == _names(0, 2)
            # a part of a header, then half the record: the follower waits, not damage
            writer.do(f"raw {record[:5].hex()}")
            assert follower.poll() == []
            assert follower.pending_bytes == 5
            writer.do(f"raw {record[5:60].hex()}")
            assert follower.poll() == []
            assert follower.pending_bytes == 60
            with pytest.raises(tfe.TruncatedRecordError, match="truncated record"):
                follower.finish()  # were the writer done now, the tail would be torn
            writer.do(f"raw {record[60:].hex()}")
            assert follower.poll() == [b"x" * 100]
            assert follower.pending_bytes == 0
            follower.finish()
    finally:
        writer.end()


def test_iterator_follows_a_concurrent_writer_and_stops_when_idle(tmp_path: Path) -> None:
    path = tmp_path / "it.tfrecord"
    writer = _Writer(path)
    seen: list[bytes] = []
    try:
        writer.do("write 0,1")
        records = cast(
            "Generator[bytes, None, None]",
            tfe.read_records(path, follow=True, poll_interval=0.02, idle_timeout=30),
        )
        seen.append(next(records))
        done = threading.Event()

        def feed() -> None:
            for start in range(1, 200, 20):
                writer.do(f"write {start},{start + 20}")
            done.set()

        thread = threading.Thread(target=feed)
        thread.start()
        for record in records:
            seen.append(record)
            if len(seen) == 201:
                break
        thread.join()
        records.close()  # ends quietly; the follower's file is closed
    finally:
        writer.end()
    assert seen == _names(0, 201)


def test_torn_tail_past_the_idle_timeout_is_the_usual_truncation_error(tmp_path: Path) -> None:
    path = tmp_path / "stuck.tfrecord"
    data = framing.frame(b"a") + framing.frame(b"b" * 50)[:30]
    path.write_bytes(data)
    got: list[bytes] = []
    with pytest.raises(tfe.TruncatedRecordError, match="truncated record") as info:
        got.extend(tfe.read_records(path, follow=True, poll_interval=0.01, idle_timeout=0.1))
    assert got == [b"a"]
    assert (info.value.record_index, info.value.offset) == (1, 17)
    # read without follow, the same file gives the same error
    with pytest.raises(tfe.TruncatedRecordError) as plain:
        list(tfe.read_records(path))
    assert (plain.value.record_index, plain.value.offset) == (1, 17)


def test_a_torn_header_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "stuck.tfrecord"
    path.write_bytes(framing.frame(b"a") + framing.frame(b"b")[:7])
    with pytest.raises(tfe.TruncatedRecordError, match="7 byte"):
        list(tfe.read_records(path, follow=True, poll_interval=0.01, timeout=0.05))


def test_stop_wakes_a_waiting_iterator_and_it_does_not_busy_loop(tmp_path: Path) -> None:
    path = tmp_path / "quiet.tfrecord"
    path.write_bytes(framing.frame(b"only"))
    follower = tfe.RecordFollower(path)
    polls = 0
    poll = follower.poll

    def counting(max_records: int | None = None) -> list[bytes]:
        nonlocal polls
        polls += 1
        return poll(max_records)

    follower.poll = counting  # type: ignore[method-assign]
    got: list[bytes] = []
    thread = threading.Thread(target=lambda: got.extend(follower.records(poll_interval=0.1)))
    began = time.monotonic()
    thread.start()
    time.sleep(0.5)
    follower.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert got == [b"only"]
    # about one look every 0.1 s while waiting (a busy loop makes thousands)
    assert polls <= 12, polls
    # stop() wakes it at once, not after a long poll_interval
    follower2 = tfe.RecordFollower(path)
    t0 = time.monotonic()
    timer = threading.Timer(0.2, follower2.stop)
    timer.start()
    assert list(follower2.records(poll_interval=60)) == [b"only"]
    assert time.monotonic() - t0 < 10
    follower.close()
    follower2.close()
    assert time.monotonic() - began < 30


def test_timeout_ends_a_stream_that_keeps_growing(tmp_path: Path) -> None:
    path = tmp_path / "busy.tfrecord"
    path.write_bytes(b"")
    stop = threading.Event()

    def grow() -> None:
        with open(path, "ab", buffering=0) as f:
            while not stop.is_set():
                f.write(framing.frame(b"r"))
                time.sleep(0.001)

    thread = threading.Thread(target=grow)
    thread.start()
    try:
        t0 = time.monotonic()
        n = sum(1 for _ in tfe.read_records(path, follow=True, poll_interval=0.01, timeout=0.3))
        assert time.monotonic() - t0 < 10
        assert n > 0
    finally:
        stop.set()
        thread.join()


def test_complete_records_are_still_crc_checked(tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    bad = bytearray(framing.frame(b"hello"))
    bad[13] ^= 1
    path.write_bytes(framing.frame(b"ok") + bytes(bad))
    with tfe.RecordFollower(path) as follower:
        assert follower.poll() == [b"ok"]  # the records before the damage come first
        for _ in range(2):  # then the damage, at every later poll
            with pytest.raises(tfe.CorruptedRecordError, match="data CRC") as info:
                follower.poll()
            assert (info.value.record_index, info.value.offset) == (1, 18)
        assert follower.records_read == 1
    with tfe.RecordFollower(path, verify=False) as follower:
        assert follower.poll() == [b"ok", bytes(bad[12:17])]
    path.write_bytes(b"\0" * 12 + framing.frame(b"ok"))
    with (
        tfe.RecordFollower(path) as follower,
        pytest.raises(tfe.CorruptedRecordError, match=r"length CRC.*no valid record header"),
    ):
        follower.poll()


def test_max_record_bytes_refuses_a_huge_header_instead_of_waiting(tmp_path: Path) -> None:
    path = tmp_path / "big.tfrecord"
    path.write_bytes(framing.header(1 << 40))
    with (
        tfe.RecordFollower(path, max_record_bytes=1 << 20) as follower,
        pytest.raises(tfe.RecordTooLargeError),
    ):
        follower.poll()


def test_a_file_that_shrinks_or_is_replaced_raises(tmp_path: Path) -> None:
    path = tmp_path / "moving.tfrecord"
    path.write_bytes(framing.frame(b"a") + framing.frame(b"b"))
    with tfe.RecordFollower(path) as follower:
        assert follower.poll() == [b"a", b"b"]
        with open(path, "r+b") as f:
            f.truncate(17)
        with pytest.raises(tfe.TruncatedRecordError, match="shrank"):
            follower.poll()
    with tfe.RecordFollower(path) as follower:
        assert follower.poll() == [b"a"]
        other = tmp_path / "other.tfrecord"
        other.write_bytes(framing.frame(b"new"))
        os.replace(other, path)
        with pytest.raises(tfe.TFRecordError, match="replaced"):
            follower.poll()
    with tfe.RecordFollower(path) as follower:
        assert follower.poll() == [b"new"]
        path.unlink()
        with pytest.raises(tfe.TFRecordError, match="deleted"):
            follower.poll()


def test_auto_detection_waits_for_enough_bytes(tmp_path: Path) -> None:
    path = tmp_path / "later"  # no extension: the bytes decide
    path.write_bytes(b"")
    payload = gzip.compress(framing.frame(b"zipped"))
    with tfe.RecordFollower(path) as follower:
        assert follower.poll() == []
        assert follower.compression is None
        with open(path, "ab") as f:
            f.write(payload[:3])
        assert follower.poll() == []
        assert follower.compression is None
        with open(path, "ab") as f:
            f.write(payload[3:])
        assert follower.poll() == [b"zipped"]
        assert follower.compression is tfe.Compression.GZIP


def test_damaged_deflate_stream_raises_after_the_records_before_it(tmp_path: Path) -> None:
    path = tmp_path / "dmg.tfrecord.gz"
    # (Records of random bytes: the damage lies past the first 256 KiB read, whose
    # records come back; what the damaged read inflated does not.)
    rng = np.random.default_rng(3)
    written = [b"%06d" % i + rng.bytes(114) for i in range(8000)]
    frames = b"".join(framing.frame(r) for r in written)
    data = bytearray(gzip.compress(frames))
    data[len(data) // 2 : len(data) // 2 + 3] = b"\0\0\0"
    path.write_bytes(bytes(data))
    got: list[bytes] = []

    def drain(follower: tfe.RecordFollower) -> None:
        while batch := follower.poll(max_records=100):
            got.extend(batch)

    with tfe.RecordFollower(path) as follower, pytest.raises(tfe.CorruptedRecordError):
        drain(follower)
    assert 0 < len(got) < len(written)
    assert got == written[: len(got)]


def test_gzip_members_and_zlib_streams_are_followed_one_after_another(tmp_path: Path) -> None:
    for compression, pack in (("GZIP", gzip.compress), ("ZLIB", zlib.compress)):
        path = tmp_path / f"multi-{compression}"
        path.write_bytes(pack(framing.frame(b"one")))
        with tfe.RecordFollower(path, compression) as follower:
            assert follower.poll() == [b"one"]
            with open(path, "ab") as f:
                f.write(pack(framing.frame(b"two") + framing.frame(b"three")))
            assert follower.poll() == [b"two", b"three"]


@_TMP_OK
@given(
    records=record_lists(max_records=12, max_size=300),
    compression=compressions(),
    cuts=st.lists(st.integers(0, 1 << 16), max_size=8),
)
def test_any_split_of_the_bytes_gives_every_record_once(
    tmp_path: Path, records: list[bytes], compression: str, cuts: list[int]
) -> None:
    frames = framing.frame_many(records)
    data = {
        "": frames,
        "GZIP": gzip.compress(frames),
        "ZLIB": zlib.compress(frames),
    }[compression.upper()]
    points = sorted({c % (len(data) + 1) for c in cuts} | {len(data)})
    path = tmp_path / "split.tfrecord"
    path.write_bytes(b"")
    got: list[bytes] = []
    with tfe.RecordFollower(path, compression) as follower:
        start = 0
        for point in points:
            with open(path, "ab") as f:
                f.write(data[start:point])
            start = point
            got.extend(follower.poll())
        follower.finish()
    assert got == records


def test_bad_arguments(tmp_path: Path) -> None:
    path = tmp_path / "a.tfrecord"
    path.write_bytes(framing.frame(b"a"))
    with pytest.raises(tfe.InvalidArgumentError, match="on_damage"):
        tfe.read_records(path, follow=True, on_damage="skip")
    with open(path, "rb") as f, pytest.raises(tfe.InvalidArgumentError, match="path"):
        tfe.read_records(f, follow=True)
    with pytest.raises(tfe.InvalidArgumentError, match="poll_interval"):
        tfe.read_records(path, follow=True, poll_interval=0)
    with pytest.raises(tfe.InvalidArgumentError, match="idle_timeout"):
        tfe.read_records(path, follow=True, idle_timeout=-1)
    with pytest.raises(tfe.InvalidArgumentError, match="URL"):
        tfe.RecordFollower("memory://x.tfrecord")
    with pytest.raises(FileNotFoundError):
        tfe.RecordFollower(tmp_path / "missing.tfrecord")
    with pytest.raises(IsADirectoryError):
        tfe.RecordFollower(tmp_path)
    follower = tfe.RecordFollower(path)
    with pytest.raises(tfe.InvalidArgumentError, match="max_records"):
        follower.poll(max_records=0)
    follower.close()
    follower.close()
    with pytest.raises(tfe.InvalidArgumentError, match="closed"):
        follower.poll()


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_a_large_record_written_in_pieces_is_waited_for(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "large.tfrecord"
    big = bytes(range(256)) * (12 << 10)  # 3 MiB, written over several flushes
    with tfe.TFRecordWriter(path, compression or None, atomic=False) as w:
        w.write(b"small")
        w.flush()
    data = framing.frame(big)
    compressor = zlib.compressobj(wbits=31) if compression else None
    with tfe.RecordFollower(path, compression) as follower:
        assert follower.poll() == [b"small"]
        # a second gzip member, flushed piece by piece like a writer's flush()
        with open(path, "ab", buffering=0) as f:
            for k in range(0, len(data), 700_000):
                piece = data[k : k + 700_000]
                f.write(
                    compressor.compress(piece) + compressor.flush(zlib.Z_SYNC_FLUSH)
                    if compressor
                    else piece
                )
                got = follower.poll()
                if k + 700_000 < len(data):
                    assert got == []
                    assert follower.pending_bytes == k + len(piece)
                else:
                    assert got == [big]
            if compressor:
                f.write(compressor.flush())
        assert follower.poll() == []
        follower.finish()


def test_a_waiting_iterator_yields_a_torn_record_once_the_writer_completes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "halves.tfrecord"
    record = framing.frame(b"y" * 1000)
    writer = _Writer(path)
    got: list[bytes] = []
    try:
        writer.do("write 0,1")
        follower = tfe.RecordFollower(path)
        thread = threading.Thread(
            target=lambda: got.extend(follower.records(poll_interval=0.01, idle_timeout=60))
        )
        thread.start()
        writer.do(f"raw {record[:500].hex()}")  # half a record, flushed
        deadline = time.monotonic() + 30
        while follower.pending_bytes != 500:  # the follower has seen the torn tail
            assert time.monotonic() < deadline, "the follower never saw the torn tail"
            time.sleep(0.01)
        assert got == _names(0, 1)  # and waits on it: no error, no record
        writer.do(f"raw {record[500:].hex()}")
        while len(got) < 2:
            assert time.monotonic() < deadline, "the completed record never came"
            time.sleep(0.01)
        follower.stop()
        thread.join(timeout=30)
        assert not thread.is_alive()
        follower.close()
    finally:
        writer.end()
    assert got == [*_names(0, 1), b"y" * 1000]
