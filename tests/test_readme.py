"""The README's example runs as written (it is a user's first five minutes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(tmp_path: Path) -> None:
    match = re.search(r"## Five minutes\n\n```python\n(.*?)```", README.read_text(), re.S)
    assert match is not None, "README lost its example"
    script = tmp_path / "example.py"
    script.write_text(match.group(1))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(README.parent)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[0] == "1272"


def test_readme_reading_example_runs(tmp_path: Path) -> None:
    """The "files you already have" block, on shards written the way TensorFlow writes them."""
    match = re.search(
        r"## Read the files you already have\n.*?```python\n(.*?)```", README.read_text(), re.S
    )
    assert match is not None, "README lost its reading example"
    import numpy as np

    import tfrecord_engine as tfe

    (tmp_path / "data").mkdir()
    for shard in range(2):
        with tfe.TFRecordWriter(tmp_path / f"data/train-{shard:05d}-of-00002.tfrecord") as w:
            for i in range(300):
                image = np.full(784, i % 256, np.uint8).tobytes()
                w.write(tfe.encode_example({"label": i % 10, "image": image}))
    script = tmp_path / "reading.py"
    script.write_text(match.group(1))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(README.parent)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("{'label': array([0])")
    assert lines[-1] == "600 7"
