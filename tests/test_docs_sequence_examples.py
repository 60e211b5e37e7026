"""docs/sequence-examples.md's example prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

from tests.snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "sequence-examples.md"


def test_example_prints_what_it_says(tmp_path: Path) -> None:
    section = DOC.read_text().split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", section, re.S)
    assert code is not None
    assert printed is not None, "docs/sequence-examples.md lost its output block"
    assert run(code.group(1), tmp_path) == printed.group(1).splitlines()
