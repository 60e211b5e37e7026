"""docs/tables.md's recipes (DuckDB, Polars, Hugging Face datasets) run as written, each
in a fresh interpreter over the page's sample data, and print what the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.snippets import run, section

from ..optional import require

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"


def printed(title: str) -> list[str]:
    """The lines the page says a section's code prints."""
    match = re.search(rf"\n## {title}\n.*?It prints:\n\n```\n(.*?)```", DOC.read_text(), re.S)
    assert match is not None, f"docs/tables.md's {title} section lost its output"
    return match.group(1).splitlines()


@pytest.mark.parametrize(
    ("title", "module"),
    [("DuckDB", "duckdb"), ("Polars", "polars"), ("Hugging Face datasets", "datasets")],
)
def test_recipe_prints_what_the_page_says(tmp_path: Path, title: str, module: str) -> None:
    require(module)
    (setup,) = section("Sample data", DOC)
    (code,) = section(title, DOC)
    assert run(setup + "\n" + code, tmp_path) == printed(title)
