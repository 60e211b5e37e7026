"""Fault injection: fail the Nth call of every file operation a writer makes.

For every operation and every N up to the number of calls a clean run makes, the error
must surface from ``write``/``flush``/``close`` (or the constructor), the final path must
be absent (atomic mode; the previous version where there was one) and no temporary file
may be left behind. A failed directory sync comes after the rename: the file is then
complete, and the error still surfaces.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.testing.faults import OPERATIONS, FaultyOps, writer_with_ops

BIG = bytes(range(256)) * 400  # > 64 KiB: the direct (3-write) path
RECORDS = [b"a" * 10, BIG, *([b"m" * 500] * 50), b"z"]


def _scenario(path: Path, ops: FaultyOps, compression: str, mode: str) -> None:
    reports: list[tfe.DamageReport] = []
    with writer_with_ops(
        ops,
        path,
        compression,
        atomic=mode == "atomic",
        append=mode == "append",
        on_damage_report=reports.append,
    ) as w:
        w.write(RECORDS[0])
        w.write(RECORDS[1])
        w.flush()
        w.write_many(RECORDS[2:-1])
        w.flush()
        w.write(RECORDS[-1])


def _clean_counts(tmp_path: Path, compression: str, mode: str) -> dict[str, int]:
    ops = FaultyOps()
    path = tmp_path / "count.tfrecord"
    if mode == "append":
        _prepare_append(path, compression)
    _scenario(path, ops, compression, mode)
    return dict(ops.calls)


def _prepare_append(path: Path, compression: str) -> None:
    with tfe.TFRecordWriter(path, compression) as w:
        w.write(b"before")
    if not compression:  # a torn tail too, so that appending must cut it first
        with open(path, "ab") as f:
            f.write(b"torn")


def _cases(tmp_path: Path, compression: str, mode: str) -> list[tuple[str, int]]:
    counts = _clean_counts(tmp_path, compression, mode)
    assert "remove" not in counts  # only a failure removes anything
    cases = [(op, n) for op in OPERATIONS for n in range(1, counts.get(op, 0) + 1)]
    assert len(cases) >= 8
    return cases


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_atomic_writer_every_failure_surfaces_and_leaves_nothing(
    tmp_path: Path, compression: str
) -> None:
    for op, n in _cases(tmp_path, compression, "atomic"):
        d = tmp_path / f"{op}-{n}"
        d.mkdir()
        path = d / "data.tfrecord"
        ops = FaultyOps(op, n, errno.EIO if op == "fsync" else errno.ENOSPC)
        with pytest.raises(OSError, match=f"injected failure of {op} call #{n}"):
            _scenario(path, ops, compression, "atomic")
        assert ops.fired, (op, n)
        left = os.listdir(d)
        if op == "fsync_dir":
            # Renamed already: complete and valid, but the caller still hears about it.
            assert left == ["data.tfrecord"]
            assert [bytes(r) for r in tfe.read_records(path, compression)] == RECORDS
        else:
            assert left == [], (op, n, left)


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_atomic_failure_keeps_the_previous_version(tmp_path: Path, compression: str) -> None:
    for op, n in _cases(tmp_path, compression, "atomic"):
        if op == "fsync_dir":
            continue
        d = tmp_path / f"{op}-{n}"
        d.mkdir()
        path = d / "data.tfrecord"
        with tfe.TFRecordWriter(path, compression) as w:
            w.write(b"previous")
        with pytest.raises(OSError, match="injected"):
            _scenario(path, FaultyOps(op, n), compression, "atomic")
        assert [bytes(r) for r in tfe.read_records(path, compression)] == [b"previous"]
        assert os.listdir(d) == ["data.tfrecord"]


@pytest.mark.parametrize("mode", ["stream", "append"])
@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_in_place_writers_surface_every_failure(
    tmp_path: Path, compression: str, mode: str
) -> None:
    for op, n in _cases(tmp_path, compression, mode):
        d = tmp_path / f"{op}-{n}"
        d.mkdir()
        path = d / "data.tfrecord"
        if mode == "append":
            _prepare_append(path, compression)
        ops = FaultyOps(op, n)
        with pytest.raises(OSError, match=f"injected failure of {op} call #{n}"):
            _scenario(path, ops, compression, mode)
        assert ops.fired
        if mode == "append":
            # The records that were there before are never touched.
            reports: list[tfe.DamageReport] = []
            got = list(
                tfe.read_records(
                    path, compression, on_damage="stop", on_damage_report=reports.append
                )
            )
            assert got[:1] == [b"before"], (op, n)


def test_a_real_full_device_surfaces_enospc() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this platform")
    w = tfe.TFRecordWriter("/dev/full", atomic=False)
    with pytest.raises(OSError, match="No space left") as info:
        w.write_many([b"x" * 1000] * 3000)  # more than the 1 MiB buffer
    assert info.value.errno == errno.ENOSPC
    with pytest.raises(tfe.WriterFailedError):
        w.close()


def test_a_real_file_size_limit_surfaces_and_publishes_nothing(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes the kernel fail write(2) with EFBIG (SIGXFSZ ignored): a real
    # I/O error that reaches the writer through Python's buffered file.
    script = f"""
import errno, os, resource, signal
import tfrecord_engine as tfe
from tfrecord_engine.testing.faults import writer_with_ops
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
path = {str(tmp_path / "limited.tfrecord")!r}
try:
    with tfe.TFRecordWriter(path) as w:
        for _ in range(3000):
            w.write(b"y" * 1000)
except OSError as e:
    assert e.errno == errno.EFBIG, e
    assert os.listdir(os.path.dirname(path)) == [], os.listdir(os.path.dirname(path))
    print("surfaced")
"""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "surfaced"
