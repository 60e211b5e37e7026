"""docs/frameworks.md's Grain snippet runs as written."""

from __future__ import annotations

from pathlib import Path

from ..optional import require
from ..snippets import run, section


def test_grain_snippet(tmp_path: Path) -> None:
    require("grain")
    (code,) = section("Grain")
    assert run(code, tmp_path) == ["RecordDataset(1 files", "(32, 2) 68 True"]
