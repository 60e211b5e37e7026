"""docs/raw-features.md's decode_raw options example prints what the page says."""

from __future__ import annotations

import re
from pathlib import Path

from tests.snippets import run

DOC = Path(__file__).resolve().parents[1] / "docs" / "raw-features.md"


def test_decode_raw_options_example_prints_what_it_says(tmp_path: Path) -> None:
    section = DOC.read_text().split("## `decode_raw`'s options", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    printed = re.search(r"It prints:\n\n```\n(.*?)```", section, re.S)
    assert code is not None
    assert printed is not None, "docs/raw-features.md lost its output block"
    assert run(code.group(1), tmp_path) == printed.group(1).splitlines()
