"""Ctrl-C: every ``tfr`` command exits 130 with a partial summary, and stdout stays whole.

Real SIGINTs go to real ``tfr`` processes blocked on a FIFO that never ends (so when the
signal arrives is known, not guessed from timing); the commands that need regular files
are interrupted in-process at a chosen record, by a ``KeyboardInterrupt`` raised where
the signal would have raised it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import ROOT, invoke, mnist_like, write_examples
from tfrecord_engine.cli import files, repair, reshard, schema
from tfrecord_engine.cli.shards import ShardedWriter
from tfrecord_engine.cli.show import iter_range as real_iter_range
from tfrecord_engine.records import framing

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- real signals, real processes -------------------------------------------------------


def _group_members(pgid: int) -> list[int]:
    """Live processes of the process group ``pgid`` (zombies excluded)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry))
    return out


def _waits_on_pipe(pid: int) -> bool:
    """Whether the process's main thread sleeps in a read of a pipe (or FIFO)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        if wchan not in ("", "0"):
            return wchan in ("pipe_read", "anon_pipe_read", "pipe_wait", "pipe_wait_readable")
        # A kernel that hides wait channels: the system call it is in (read: x86-64, arm64).
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return bool(call) and call[0] in ("0", "63")


def _open_for_writing(fifo: Path) -> int:
    """The FIFO's write end, or -1 while no reader has it open (ENXIO)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return -1


class Tfr:
    """``tfr ARGS`` in a session of its own, reading the FIFO ``fifo`` fed by the test."""

    def __init__(self, cwd: Path, fifo: Path, *args: str) -> None:
        os.mkfifo(fifo)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tfrecord_engine.cli", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: survivors can be found
        )
        deadline = time.monotonic() + 60
        # The FIFO opens for writing once tfr has opened it for reading.
        while (fd := _open_for_writing(fifo)) < 0:
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "tfr never opened its input"
            time.sleep(0.01)
        self.fd = fd

    def feed(self, data: bytes) -> None:
        """Writes ``data`` and waits until tfr has read all of it and waits for more."""
        os.write(self.fd, data)
        deadline = time.monotonic() + 60
        while True:
            left = struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0" * 4))[0]
            if left == 0 and _waits_on_pipe(self.proc.pid):
                return
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "tfr did not read its input"
            time.sleep(0.01)

    def interrupt(self) -> tuple[int, str, str]:
        """Ctrl-C: the exit status, stdout and stderr; no process of it may be left."""
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=60)
        os.close(self.fd)
        assert _group_members(self.proc.pid) == []
        return self.proc.returncode, out.decode(), err.decode()


def _framed(records: list[bytes]) -> bytes:
    return b"".join(framing.frame(r) for r in records)


def test_verify_json_on_a_pipe_exits_130_with_the_records_read(cwd: Path) -> None:
    tfr = Tfr(cwd, cwd / "in.fifo", "verify", "--json", "in.fifo")
    records = [tfe.encode_example(r) for r in mnist_like(50)]
    tfr.feed(_framed(records))
    code, out, err = tfr.interrupt()
    assert code == 130
    assert json.loads(out) == {
        "ok": False,
        "files": [],
        "interrupted": True,
        "unfinished": {"path": "in.fifo", "records": 50, "damages": []},
    }
    assert err == (
        "Interrupted: checked 0 of 1 file, 50 records read, 0 damaged regions found "
        "so far; in.fifo was not finished (50 records read)\n"
    )
    assert "Aborted" not in err


def test_count_of_a_pipe_says_how_far_it_got(cwd: Path) -> None:
    write_examples("a.tfrecord", mnist_like(7))
    tfr = Tfr(cwd, cwd / "in.fifo", "count", "a.tfrecord", "in.fifo")
    tfr.feed(_framed([b"x" * 10] * 12))
    code, out, err = tfr.interrupt()
    assert code == 130
    assert out == "       7  a.tfrecord\n"  # the finished file; no total: it would be wrong
    assert err == (
        "Interrupted: counted 1 of 2 files (7 records); in.fifo was not finished "
        "(12 records read)\n"
    )


def test_cat_of_a_pipe_ends_with_130_after_whole_lines(cwd: Path) -> None:
    tfr = Tfr(cwd, cwd / "in.fifo", "cat", "--json", "in.fifo")
    tfr.feed(_framed([tfe.encode_example(r) for r in mnist_like(5)]))
    code, out, err = tfr.interrupt()
    assert code == 130
    lines = out.splitlines()
    assert [json.loads(line)["index"] for line in lines] == [0, 1, 2, 3, 4]
    assert err == "Interrupted: wrote 5 records (the last: in.fifo record 4)\n"


def test_cat_follow_ends_with_130(cwd: Path) -> None:
    # Ctrl-C is how `tfr cat --follow` is meant to end, like `tail -f`.
    write_examples("log.tfrecord", mnist_like(3))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfrecord_engine.cli", "cat", "-f", "--json", "log.tfrecord"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    # All there is: after these it can only wait for the writer.
    lines = [proc.stdout.readline() for _ in range(3)]
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert rest == b""
    assert [json.loads(line)["index"] for line in lines] == [0, 1, 2]
    assert err.decode() == "Interrupted: wrote 3 records (the last: log.tfrecord record 2)\n"
    assert _group_members(proc.pid) == []


# --- in-process: a KeyboardInterrupt where the signal would raise it ---------------------


def _interrupt_after(
    real: Callable[..., Iterator[bytes]], path_part: str, after: int
) -> Callable[..., Iterator[bytes]]:
    """``read_records`` that raises KeyboardInterrupt after ``after`` records of a file
    whose path holds ``path_part`` (as Ctrl-C during the next read would)."""

    def fake(path: Any, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        for i, record in enumerate(real(path, *args, **kwargs)):
            if path_part in str(path) and i == after:
                raise KeyboardInterrupt
            yield record

    return fake


def test_verify_text_keeps_the_damage_found_before_the_interrupt(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("a.tfrecord", mnist_like(4))
    write_examples("b.tfrecord", mnist_like(9))
    blob = bytearray(Path("b.tfrecord").read_bytes())
    blob[30] ^= 1  # in record 0's data
    Path("b.tfrecord").write_bytes(bytes(blob))
    monkeypatch.setattr(files, "read_records", _interrupt_after(tfe.read_records, "b.", 5))
    result = invoke("verify", "a.tfrecord", "b.tfrecord")
    assert result.exit_code == 130
    (line,) = result.stdout.splitlines()  # the damage; no summary claiming the whole
    assert line.startswith("b.tfrecord: record 0 at offset 0: data CRC mismatch")
    assert result.stderr == (
        "Interrupted: checked 1 of 2 files, 9 records read, 1 damaged region found so far; "
        "b.tfrecord was not finished (5 records read)\n"
    )


def test_reshard_keeps_the_shards_published_and_drops_the_one_being_written(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("in.tfrecord", mnist_like(1461))
    monkeypatch.setattr(reshard, "_CHUNK", 100)  # records are read 100 at a time
    monkeypatch.setattr(reshard, "read_records", _interrupt_after(tfe.read_records, "in.", 700))
    result = invoke("reshard", "in.tfrecord", "-o", "out/r", "--records-per-shard", "500")
    assert result.exit_code == 130
    assert result.stdout == "out/r-00000-of-00003.tfrecord: 500 records\n"
    assert result.stderr == (
        "Interrupted: 1 of 3 shards written (500 of 1461 records); the shard being "
        "written was dropped: run the command again for all\n"
    )
    assert sorted(os.listdir("out")) == [".tfeidx", "r-00000-of-00003.tfrecord"]
    assert len(tfe.RecordDataset("out/r-00000-of-00003.tfrecord")) == 500


def test_reshard_shuffle_stops_its_read_ahead_thread(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("in.tfrecord", mnist_like(9000))
    real = ShardedWriter.write_many
    calls: list[int] = []

    def write_many(self: Any, records: Any) -> None:
        calls.append(1)
        if len(calls) == 2:  # the read-ahead thread is preparing the next chunk
            raise KeyboardInterrupt
        real(self, records)

    monkeypatch.setattr(ShardedWriter, "write_many", write_many)
    result = invoke("reshard", "in.tfrecord", "-o", "s", "--shards", "2", "--shuffle")
    assert result.exit_code == 130, result.output
    assert result.stderr.startswith("Interrupted: 0 of 2 shards written (0 of 9000 records)")
    assert [t.name for t in threading.enumerate() if t.name.startswith("tfe-readahead")] == []
    assert [p.name for p in cwd.iterdir() if p.name.startswith(("s-", ".s-"))] == []


def test_schema_json_from_the_batches_read_before_the_interrupt(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("a.tfrecord", mnist_like(1500))

    def iter_range(*args: Any) -> Iterator[Any]:
        for i, located in enumerate(real_iter_range(*args)):
            if i == 1200:  # in the second batch (1024 records each)
                raise KeyboardInterrupt
            yield located

    monkeypatch.setattr(schema, "iter_range", iter_range)
    result = invoke("schema", "--all", "--json", "a.tfrecord")
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    assert doc["interrupted"] is True
    assert doc["records"] == 1024
    assert doc["source"] == "the first 1024 records of 1 file (interrupted)"
    assert doc["features"]["label"]["suggested"] == 'tfe.FixedLenFeature([], "int64")'
    assert result.stderr == "Interrupted: inferred from the first 1024 records read\n"


def test_repair_json_names_the_unfinished_file_and_writes_no_part_of_it(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("a.tfrecord", mnist_like(3))
    write_examples("b.tfrecord", mnist_like(2000))
    monkeypatch.setattr(repair, "read_records", _interrupt_after(tfe.read_records, "b.", 1500))
    result = invoke("repair", "--json", "a.tfrecord", "b.tfrecord")
    assert result.exit_code == 130
    doc = json.loads(result.stdout)
    assert [f["output"] for f in doc["files"]] == ["a.repaired.tfrecord"]
    assert doc["interrupted"] is True
    assert doc["unfinished"] == {"input": "b.tfrecord", "records_read": 1500, "damages": []}
    assert Path("a.repaired.tfrecord").exists()
    assert sorted(p.name for p in cwd.iterdir() if p.name.startswith(("b.", ".b."))) == [
        "b.tfrecord"
    ]
    assert "b.repaired.tfrecord was not written" in result.stderr


def test_a_signal_inside_a_json_line_is_held_until_the_line_is_whole(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_examples("a.tfrecord", mnist_like(6))
    real_echo = click.echo
    lines: list[int] = []

    def echo(message: Any = None, *args: Any, **kwargs: Any) -> None:
        lines.append(1)
        if len(lines) == 3 and isinstance(message, str):
            # Ctrl-C arrives while the third line is half written.
            half = len(message) // 2
            real_echo(message[:half], *args, **{**kwargs, "nl": False})
            os.kill(os.getpid(), signal.SIGINT)
            real_echo(message[half:], *args, **kwargs)
            return
        real_echo(message, *args, **kwargs)

    monkeypatch.setattr(click, "echo", echo)
    result = invoke("cat", "--json", "a.tfrecord")
    assert result.exit_code == 130
    assert [json.loads(line)["index"] for line in result.stdout.splitlines()] == [0, 1, 2]
    assert result.stderr == "Interrupted: wrote 3 records (the last: a.tfrecord record 2)\n"
