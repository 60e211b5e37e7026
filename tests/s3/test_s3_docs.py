"""docs/remote.md's S3 and cache examples run as written (the bucket swapped for the
test's prefix), in fresh interpreters that reach the store through ``FSSPEC_S3``."""

from __future__ import annotations

from pathlib import Path

from ..snippets import run, section
from .conftest import S3, S3Explicit

DOC = Path(__file__).resolve().parents[2] / "docs" / "remote.md"


def test_the_settings_example_runs(tmp_path: Path) -> None:
    (settings,) = section("S3 \\(tested against SeaweedFS\\)", DOC)
    assert run(settings, tmp_path) == []


def test_the_cache_example_runs_against_the_store(s3: S3, tmp_path: Path) -> None:
    (example,) = section("A node-local cache of remote shards", DOC)
    code = example.replace("s3://my-bucket/demo", s3.url)
    assert code != example
    assert run(code, tmp_path) == ["20 [0, 1, 2]"]


def test_the_storage_options_example_runs_without_global_configuration(
    s3_explicit: S3Explicit, tmp_path: Path
) -> None:
    (example,) = section("Per-call settings: `storage_options`", DOC)
    code = example.replace("s3://my-bucket/options", s3_explicit.url)
    start = code.index("options = {")
    end = code.index("}\n", code.index('"config_kwargs"')) + 2
    code = code[:start] + f"options = {s3_explicit.options!r}\n" + code[end:]
    assert run(code, tmp_path) == ["20", "20 [0, 19] 2"]
