"""docs/tensors.md's example runs as written and prints what the page says it prints."""

from __future__ import annotations

import re
from pathlib import Path

from tests.snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "tensors.md"


def test_tensors_page_example_prints_what_it_says(tmp_path: Path) -> None:
    text = DOC.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert len(code) == 1
    assert printed is not None, "docs/tensors.md lost its output block"
    assert run(code[0], tmp_path) == printed.group(1).splitlines()
