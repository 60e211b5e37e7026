"""``tfr count/verify/head/cat`` read pipes and ``-``; the other commands refuse them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import ROOT, mnist_like, run, write_examples


@pytest.fixture
def data(tmp_path: Path) -> Path:
    write_examples(tmp_path / "a.tfrecord", mnist_like(5))
    write_examples(tmp_path / "a.tfrecord.gz", mnist_like(5), "GZIP")
    return tmp_path


def _stdin(data: Path, name: str = "a.tfrecord") -> bytes:
    return (data / name).read_bytes()


def test_count_reads_stdin(data: Path) -> None:
    done = run("count", "-", "a.tfrecord", cwd=data, stdin=_stdin(data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        "       5  /dev/stdin",
        "       5  a.tfrecord",
        "      10  total",
    ]
    gz = run("count", "-c", "gzip", "--json", "-", cwd=data, stdin=_stdin(data, "a.tfrecord.gz"))
    assert json.loads(gz.stdout)["total"] == 5


def test_verify_reads_stdin_and_reports_damage(data: Path) -> None:
    blob = bytearray(_stdin(data))
    size = len(blob) // 5
    blob[size + 20] ^= 1  # data of record 1
    done = run("verify", "-", cwd=data, stdin=bytes(blob))
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert lines[0].startswith(f"/dev/stdin: record 1 at offset {size}: data CRC mismatch")
    assert lines[1] == "1 file, 4 records read, 1 damaged region in 1 file"
    ok = run("--progress", "verify", "-", cwd=data, stdin=_stdin(data))
    assert ok.returncode == 0, ok.stderr


def test_head_and_cat_read_stdin(data: Path) -> None:
    head = run("head", "-n", "2", "--json", "-", cwd=data, stdin=_stdin(data))
    assert head.returncode == 0, head.stderr
    labels = [json.loads(x)["features"]["label"]["int64"] for x in head.stdout.splitlines()]
    assert labels == [[0], [1]]
    raw = run("cat", "--raw", "--range", "1:4", "-", cwd=data, stdin=_stdin(data))
    assert raw.returncode == 0, raw.stderr
    (data / "cut.tfrecord").write_bytes(raw.stdout)
    expected = list(tfe.read_records(data / "a.tfrecord"))[1:4]
    assert list(tfe.read_records(data / "cut.tfrecord")) == expected


def test_cat_of_a_fifo_guesses_compression_from_its_name(data: Path) -> None:
    fifo = data / "piped.tfrecord.gz"
    os.mkfifo(fifo)
    # A shell writes into the FIFO while tfr reads it (as `tfr cat <(...)` would).
    feeder = subprocess.Popen(["sh", "-c", f"cat a.tfrecord.gz > {fifo.name}"], cwd=data)
    try:
        done = run("cat", "--json", fifo.name, cwd=data)
    finally:
        feeder.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("cat", "--range", "-2:", "-"), "negative indices count the records first"),
        (("count", "-", "-"), "'-' (standard input) can be read once"),
        (("index", "/dev/stdin"), "not a regular file (a pipe (FIFO)): /dev/stdin"),
        (("index", "-"), "no such file: -"),
    ],
)
def test_what_cannot_read_a_pipe_exits_2(data: Path, args: tuple[str, ...], message: str) -> None:
    # stdin is a pipe for all of them (the subprocess gets its input through one).
    done = run(*args, cwd=data, stdin=_stdin(data))
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("Error: "), err
    assert message in err
    assert "Traceback" not in err


def test_dev_stdin_from_a_file_is_still_a_file(data: Path) -> None:
    # `tfr index /dev/stdin < file` maps the file, as before.
    with (data / "a.tfrecord").open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "tfrecord_engine.cli", "count", "/dev/stdin"],
            cwd=data,
            stdin=stdin,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == b"5"


def test_stdin_compression_is_recognised_from_its_bytes(data: Path) -> None:
    for name in ("a.tfrecord.gz", "a.tfrecord"):
        done = run("count", "--json", "-", cwd=data, stdin=_stdin(data, name))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["total"] == 5
    cat = run("cat", "--json", "-", cwd=data, stdin=_stdin(data, "a.tfrecord.gz"))
    assert len(cat.stdout.splitlines()) == 5
