"""``tfr --cache-dir/--cache-limit``: sizes, and remote inputs copied to the node."""

from __future__ import annotations

import os
import pathlib

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.cli.sizes import parse_size
from tfrecord_engine.testing.http_server import serve_directory

from .helpers import invoke


@pytest.mark.parametrize(
    ("text", "size"),
    [("0", 0), ("1000", 1000), ("64K", 64 << 10), ("20g", 20 << 30), ("1.5GiB", 3 << 29)],
)
def test_sizes_parse(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "-1", "G", "12Q", "1e9"])
def test_bad_sizes_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


def test_a_limit_without_a_folder_is_a_usage_error() -> None:
    result = invoke("--cache-limit", "1G", "count", "x.tfrecord")
    assert result.exit_code == 2
    assert "--cache-limit needs --cache-dir" in result.stderr
    bad = invoke("--cache-dir", "c", "--cache-limit", "lots", "count", "x.tfrecord")
    assert bad.exit_code == 2
    assert "is not a size" in bad.stderr


def test_cat_reads_http_inputs_through_the_cache(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("aiohttp")
    served = tmp_path / "served"
    served.mkdir()
    with tfe.TFRecordWriter(served / "a.tfrecord", index=True) as w:
        w.write_many(b"r%04d" % i + b"." * 200 for i in range(5000))
    cache = tmp_path / "cache"
    with serve_directory(served) as server:
        url = f"{server.url}/a.tfrecord"
        for _ in range(2):
            result = invoke("--cache-dir", str(cache), "cat", "--payload", "--range", "4998:", url)
            assert result.exit_code == 0, result.output
            assert result.stdout == "r4998" + "." * 200 + "r4999" + "." * 200
        whole = [
            q for q in server.requests if q.range == (0, (served / "a.tfrecord").stat().st_size)
        ]
    assert len(whole) == 1  # copied once, by the first run (the rest: small index checks)
    assert [p for p in os.listdir(cache) if p.startswith("a.tfrecord.")]
