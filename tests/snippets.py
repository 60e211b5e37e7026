"""Running docs/frameworks.md's snippets as written, each in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "frameworks.md"


def section(title: str) -> list[str]:
    """The python blocks of one ``## title`` section."""
    match = re.search(rf"\n## {title}\n(.*?)(?=\n## |\Z)", DOC.read_text(), re.S)
    assert match is not None, f"docs/frameworks.md lost its {title} section"
    return re.findall(r"```python\n(.*?)```", match.group(1), re.S)


def run(code: str, cwd: Path) -> list[str]:
    script = cwd / "snippet.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(DOC.parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
