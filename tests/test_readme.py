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
