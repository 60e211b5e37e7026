"""docs/frameworks.md's Apache Beam snippet runs as written."""

from __future__ import annotations

from pathlib import Path

from ..optional import require
from ..snippets import run, section


def test_beam_snippet(tmp_path: Path) -> None:
    require("apache_beam")
    (code,) = section("Apache Beam")
    assert run(code, tmp_path)[-1] == "1000"
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == sorted(
        f"train-{i:05d}-of-00004.tfrecord.gz{idx}" for i in range(4) for idx in ("", ".tfeidx")
    )
