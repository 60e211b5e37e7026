"""docs/remote.md's example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "remote.md"


def test_remote_doc_example_runs(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    match = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert match is not None, "docs/remote.md lost its example"
    script = tmp_path / "example.py"
    script.write_text(match.group(1))
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(DOC.parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["10", "20 [3, 17]"]
