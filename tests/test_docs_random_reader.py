"""docs/random-reader.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

from tests.snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "random-reader.md"


def test_random_reader_page_prints_what_it_says(tmp_path: Path) -> None:
    text = DOC.read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert printed is not None, "docs/random-reader.md lost its output block"
    assert run(code, tmp_path) == printed.group(1).splitlines()
