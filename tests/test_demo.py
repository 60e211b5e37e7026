"""`make demo`'s job runs end to end and its checks pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfrecord_engine import demo


def test_demo_runs_and_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--out", str(tmp_path / "out"), "--records", "800", "--shards", "2"]) == 0
    out = capsys.readouterr().out
    assert "every record exactly once: yes" in out
    assert "10 of 10 labels" in out
    assert out.strip().endswith("demo: OK")
