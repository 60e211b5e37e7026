"""kill -9 a writing process over and over: the final path is absent or fully valid.

A forked child rewrites the same file again and again (each version distinguishable);
the parent kills it with SIGKILL at a random moment (seeded), then checks that the final
name holds nothing or one complete version, and that leftovers are only hidden
temporary files a ``*.tfrecord`` glob does not match.
"""

from __future__ import annotations

import glob
import hashlib
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import tfrecord_engine as tfe

N_RECORDS = 120


def _payload(version: int, i: int) -> bytes:
    digest = hashlib.sha256(f"{version}:{i}".encode()).digest()
    return digest * (1 + (version + i) % 40)


def _child(path: Path, compression: str, start: int) -> None:  # pragma: no cover - child
    version = start
    while True:
        with tfe.TFRecordWriter(path, compression) as w:
            w.write(f"version={version}".encode())
            for i in range(N_RECORDS):
                w.write(_payload(version, i))
        version += 1


def _check(path: Path, compression: str) -> str:
    if not path.exists():
        return "absent"
    records = [bytes(r) for r in tfe.read_records(path, compression)]  # raises if torn
    version = int(records[0].split(b"=")[1])
    assert records[1:] == [_payload(version, i) for i in range(N_RECORDS)]
    return "valid"


def _kill_loop(tmp_path: Path, kills: int, seed: int) -> dict[str, int]:
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    rng = np.random.default_rng(seed)
    outcomes = {"absent": 0, "valid": 0, "mid_write": 0}
    for k in range(kills):
        compression = ("", "GZIP")[k % 2]
        path = tmp_path / f"data-{compression or 'none'}.tfrecord"
        if k % 4 < 2 and path.exists():
            path.unlink()  # also kill children that have not published anything yet
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                _child(path, compression, start=k * 1000)
            finally:
                os._exit(0)
        time.sleep(float(rng.uniform(0.0, 0.03 if k % 4 >= 2 else 0.003)))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status)
        assert os.WTERMSIG(status) == signal.SIGKILL
        outcomes[_check(path, compression)] += 1
        # Only hidden temporaries can be left behind; globs never see them.
        assert sorted(glob.glob(str(tmp_path / "*.tfrecord"))) == sorted(
            str(p) for p in tmp_path.glob("data-*.tfrecord")
        )
        leftovers = list(tmp_path.glob(".*.tmp-*"))
        outcomes["mid_write"] += bool(leftovers)  # the kill landed inside a write
        for leftover in leftovers:
            leftover.unlink()
    assert outcomes["absent"] + outcomes["valid"] == kills
    return outcomes


def test_kill_9_loop(tmp_path: Path) -> None:
    outcomes = _kill_loop(tmp_path, kills=100, seed=9)
    assert outcomes["mid_write"] > 20
    assert outcomes["absent"] > 0


@pytest.mark.slow
def test_kill_9_loop_long(tmp_path: Path) -> None:
    outcomes = _kill_loop(tmp_path, kills=500, seed=99)
    print(f"500 kills: {outcomes}")
