"""docs/pytorch-first-hour.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

from ..optional import require
from ..snippets import run

DOC = Path(__file__).resolve().parents[2] / "docs" / "pytorch-first-hour.md"


def test_first_hour_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    require("torch")
    require("PIL")
    text = DOC.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert len(code) == 1
    assert printed is not None, "docs/pytorch-first-hour.md lost its output block"
    assert run(code[0], tmp_path) == printed.group(1).splitlines()
