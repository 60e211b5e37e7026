"""docs/frameworks.md's Ray Data snippet runs as written (its own Ray instance)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..optional import require
from ..snippets import DOC, section


def test_ray_snippet(tmp_path: Path) -> None:
    require("ray")
    (code,) = section("Ray Data")
    (tmp_path / "snippet.py").write_text(code)
    # Not -W error (tests/snippets.run): Ray warns about its own deprecated settings.
    done = subprocess.run(
        [sys.executable, "snippet.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(DOC.parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "2000",
        "int64 (4, 2) float32 1999000",
        "part-00000-of- 600",
        "2000 True",
    ]
