"""Running ``tfr`` in tests: in-process (click's CliRunner) or as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner, Result

import tfrecord_engine as tfe
from tfrecord_engine.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str, env: Mapping[str, str] | None = None, color: bool = False) -> Result:
    """Runs ``tfr ARGS`` in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(cli, list(args), env=dict(env or {}), color=color)


def run(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Runs ``python -m tfrecord_engine.cli ARGS`` in a subprocess (no terminal)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tfrecord_engine.cli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def write_examples(
    path: Path | str,
    rows: Sequence[Mapping[str, Any]],
    compression: str = "",
    *,
    index: bool = False,
) -> list[bytes]:
    """Writes ``rows`` as serialized Examples; returns the records."""
    records = [tfe.encode_example(dict(r)) for r in rows]
    with tfe.TFRecordWriter(path, compression, index=index) as w:
        w.write_many(records)
    return records


def mnist_like(n: int, start: int = 0) -> list[dict[str, Any]]:
    """Small rows: a 4-byte image, a label and a printable name."""
    return [
        {"image": np.full(4, i % 256, np.uint8).tobytes(), "label": i % 10, "name": f"r{i}"}
        for i in range(start, start + n)
    ]
