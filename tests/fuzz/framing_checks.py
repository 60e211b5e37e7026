"""The framing fuzz property: any bytes, every reader path, only our errors, exact books.

``check_one(data)`` reads ``data`` through the mmap reader (uncompressed) and the stream
reader under every damage policy and checks:

- only :class:`~tfrecord_engine.DataLossError` escapes (``"raise"``), nothing escapes
  ``"stop"``/``"skip"``; both paths agree on records and damage offsets;
- ``"raise"``/``"stop"`` return a prefix: the records re-framed are the file's first bytes;
- ``"skip"`` accounts for every byte: re-framed records plus ``bytes_skipped`` of every
  report add up to the file size, and each record's frame occurs in the file in order.

The first input byte picks the mode: 0 plain, 1 raw bytes read as GZIP, 2 raw bytes read
as ZLIB, 3 the rest GZIP-compressed by us (damage inside a valid deflate stream).
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tempfile

import tfrecord_engine as tfe
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import Compression, make_compressor
from tfrecord_engine.records.recovery import DamagePolicy

__all__ = ["check_one"]


def _scratch() -> tuple[str, int | None]:
    """A path to write each input to, RAM-backed where there is /dev/shm (opening files on
    a disk costs more than checking an input). On Linux the file is unlinked at once and
    reached through /proc/self/fd, so nothing is left behind even when the process is
    killed; elsewhere a temporary folder removed at exit."""
    if os.path.isdir("/dev/shm") and os.path.isdir("/proc/self/fd"):
        fd, name = tempfile.mkstemp(prefix="tfe-fuzz-", suffix=".tfrecord", dir="/dev/shm")
        os.unlink(name)
        return f"/proc/self/fd/{fd}", fd
    folder = tempfile.mkdtemp(prefix="tfe-fuzz-")
    atexit.register(shutil.rmtree, folder, True)
    return os.path.join(folder, "input.tfrecord"), None


_PATH, _FD = _scratch()


def _write_input(data: bytes) -> None:
    if _FD is None:
        with open(_PATH, "wb") as f:
            f.write(data)
    else:
        os.ftruncate(_FD, 0)
        os.pwrite(_FD, data, 0)


_POLICIES: tuple[DamagePolicy, ...] = ("raise", "stop", "skip")
_Result = tuple[list[bytes], tfe.DataLossError | None, list[tfe.DamageReport]]


def _run(source: str | io.BytesIO, compression: str, policy: DamagePolicy) -> _Result:
    reports: list[tfe.DamageReport] = []
    out: list[bytes] = []
    err = None
    try:
        for r in tfe.read_records(
            source, compression, on_damage=policy, on_damage_report=reports.append
        ):
            out.append(bytes(r))
    except tfe.DataLossError as e:
        if policy != "raise":
            raise AssertionError(f"{policy!r} raised {e!r}") from e
        err = e
    return out, err, reports


def _check_framing(blob: bytes, results: dict[DamagePolicy, _Result]) -> None:
    out, err, _ = results["raise"]
    joined = framing.frame_many(out)
    assert blob.startswith(joined)
    assert (err is None) == (len(joined) == len(blob))
    stop_out, _, stop_reports = results["stop"]
    assert stop_out == out
    assert len(stop_reports) == (err is not None)
    if stop_reports:
        assert stop_reports[0].offset == len(joined)
    skip_out, _, skip_reports = results["skip"]
    assert skip_out[: len(out)] == out
    skipped = sum(r.bytes_skipped or 0 for r in skip_reports)
    assert len(framing.frame_many(skip_out)) + skipped == len(blob)
    pos = 0
    for r in skip_out:
        found = blob.find(framing.frame(r), pos)
        assert found >= 0
        pos = found + 1


def check_one(data: bytes) -> None:
    """Checks the properties above on one input (raises AssertionError on a violation)."""
    if not data:
        return
    mode, blob = data[0] % 4, data[1:]
    compression = ("", "GZIP", "ZLIB", "GZIP")[mode]
    file_bytes = blob
    if mode == 3:
        co = make_compressor(Compression.GZIP)
        file_bytes = co.compress(blob) + co.flush()
    by_stream = {p: _run(io.BytesIO(file_bytes), compression, p) for p in _POLICIES}
    if compression:
        # A compressed path is read through the same stream code: nothing new to check.
        by_path = by_stream
    else:
        _write_input(file_bytes)
        by_path = {p: _run(_PATH, compression, p) for p in _POLICIES}
    for p in _POLICIES:
        assert by_path[p][0] == by_stream[p][0], p
        assert [(r.record_index, r.offset) for r in by_path[p][2]] == [
            (r.record_index, r.offset) for r in by_stream[p][2]
        ], p
    if mode in (0, 3):
        _check_framing(blob, by_path)
        _check_framing(blob, by_stream)
