"""docs/index-columns.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

from tests.snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "index-columns.md"


def test_index_columns_page_example_prints_what_it_says(tmp_path: Path) -> None:
    text = DOC.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert len(code) == 1
    assert printed is not None, "docs/index-columns.md lost its output block"
    assert run(code[0], tmp_path) == printed.group(1).splitlines()
