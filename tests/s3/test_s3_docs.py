"""docs/remote.md's S3 and cache examples run as written (the bucket swapped for the
test's prefix), in fresh interpreters that reach the store through ``FSSPEC_S3``."""

from __future__ import annotations

from pathlib import Path

from ..snippets import run, section
from .conftest import S3

DOC = Path(__file__).resolve().parents[2] / "docs" / "remote.md"


def test_the_settings_example_runs(tmp_path: Path) -> None:
    (settings,) = section("S3 \\(tested against SeaweedFS\\)", DOC)
    assert run(settings, tmp_path) == []


def test_the_cache_example_runs_against_the_store(s3: S3, tmp_path: Path) -> None:
    (example,) = section("A node-local cache of remote shards", DOC)
    code = example.replace("s3://my-bucket/demo", s3.url)
    assert code != example
    assert run(code, tmp_path) == ["20 [0, 1, 2]"]
