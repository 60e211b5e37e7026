"""docs/frameworks.md's PyTorch snippets run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..optional import require
from ..snippets import DOC, run, section


@pytest.fixture(scope="module")
def pytorch() -> list[str]:
    require("torch")
    return section("PyTorch")


def test_dataloader_snippet(pytorch: list[str], tmp_path: Path) -> None:
    assert run(pytorch[0], tmp_path) == ["torch.uint8 (64, 28, 28) torch.int64 b'img'", "320"]


def test_collate_snippet(pytorch: list[str], tmp_path: Path) -> None:
    assert run(pytorch[1], tmp_path) == [
        "[[0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 2, 0], [0, 1, 2, 3]] [1, 2, 3, 4]",
        "[[0, -1], [0, 1]]",
    ]


def test_iterable_snippet(tmp_path: Path) -> None:
    require("torch")
    require("torchdata")
    (code,) = section("PyTorch iterable")
    # torchdata 0.11 calls torch.set_vital, which torch 2.13 deprecated.
    assert run(code, tmp_path, ignore=("'set_vital' is deprecated",)) == ["8 500", "10"]


def test_readme_snippet(tmp_path: Path) -> None:
    """README's PyTorch block, run after its "Five minutes" block (which writes the files)."""
    require("torch")
    readme = (DOC.parents[1] / "README.md").read_text()
    setup = re.search(r"## Five minutes\n\n```python\n(.*?)```", readme, re.S)
    block = re.search(r"## PyTorch: .*?```python\n(.*?)```", readme, re.S)
    assert setup is not None
    assert block is not None, "README lost its PyTorch example"
    code = setup.group(1) + block.group(1)
    code += 'print(len(batch["label"]), batch["label"].dtype, type(batch["image"][0]).__name__)\n'
    assert run(code, tmp_path)[-1] == "56 torch.int64 bytes"
