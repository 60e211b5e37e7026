"""Running docs/frameworks.md's snippets as written, each in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "frameworks.md"


def section(title: str, doc: Path = DOC) -> list[str]:
    """The python blocks of one ``## title`` section of ``doc`` (docs/frameworks.md)."""
    match = re.search(rf"\n## {title}\n(.*?)(?=\n## |\Z)", doc.read_text(), re.S)
    assert match is not None, f"docs/{doc.name} lost its {title} section"
    return re.findall(r"```python\n(.*?)```", match.group(1), re.S)


def run(code: str, cwd: Path, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """Runs ``code`` with warnings as errors, except those starting with ``ignore``."""
    script = cwd / "snippet.py"
    script.write_text(code)
    # A later -W option takes precedence over the ones before it.
    ignored = [f"-Wignore:{message}" for message in ignore]
    done = subprocess.run(
        [sys.executable, "-W", "error", *ignored, str(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(DOC.parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
