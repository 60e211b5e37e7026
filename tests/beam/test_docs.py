"""docs/frameworks.md's Apache Beam snippet runs as written."""

from __future__ import annotations

from pathlib import Path

from ..optional import require
from ..snippets import DOC, run, section


def test_beam_snippet(tmp_path: Path) -> None:
    require("apache_beam")
    (code,) = section("Apache Beam")
    assert run(code, tmp_path)[-1] == "1000"
    # The shards only; their indexes in the hidden .tfeidx/ folder beside them.
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [".tfeidx"] + [f"train-{i:05d}-of-00004.tfrecord.gz" for i in range(4)]
    indexes = sorted(p.name for p in (tmp_path / "out" / ".tfeidx").iterdir())
    assert indexes == [f"train-{i:05d}-of-00004.tfrecord.gz.tfeidx" for i in range(4)]


def test_scale_out_snippet(tmp_path: Path) -> None:
    """docs/scale-out.md's DirectRunner pipeline runs as written."""
    require("apache_beam")
    (code,) = section("The pipeline \\(DirectRunner\\)", DOC.parent / "scale-out.md")
    lines = run(code, tmp_path)
    assert lines == ["records: 300", "shards: 4 records: 300"]
    assert sorted(p.name for p in (tmp_path / "raw" / ".tfeidx").iterdir()) == [
        f"part-{i}.tfrecord.tfeidx" for i in range(3)
    ]
    assert sorted(p.name for p in (tmp_path / "train").iterdir()) == [".tfeidx"] + [
        f"train-{i:05d}-of-00004.tfrecord" for i in range(4)
    ]
