"""``tfr`` on ``s3://`` URLs (globs included) against a real S3 store."""

from __future__ import annotations

import json
import os
import pathlib

import tfrecord_engine as tfe

from ..cli.helpers import invoke
from .conftest import S3


def _write(s3: S3, index: bool) -> list[str]:
    urls = []
    for s in range(2):
        url = f"{s3.url}/train-{s:05d}-of-00002.tfrecord"
        with tfe.TFRecordWriter(url, index=index) as w:
            w.write_many(tfe.encode_example({"label": 10 * s + i}) for i in range(25))
        urls.append(url)
    return urls


def test_count_verify_and_index_read_s3_globs(s3: S3) -> None:
    urls = _write(s3, index=False)
    counted = invoke("count", "--json", f"{s3.url}/train-*")
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["total"] == 50
    verified = invoke("verify", f"{s3.url}/train-*")
    assert verified.exit_code == 0, verified.output
    indexed = invoke("index", *urls)
    assert indexed.exit_code == 0, indexed.output
    for url in urls:  # published on the store, in the hidden folder beside the data
        assert len(tfe.Index.load(url)) == 25
    cat = invoke("cat", "--range", "24:26", "--json", f"{s3.url}/train-*")
    assert cat.exit_code == 0, cat.output
    rows = [json.loads(line)["features"]["label"] for line in cat.stdout.splitlines()]
    assert rows == [{"int64": [24]}, {"int64": [10]}]


def test_missing_s3_objects_are_usage_errors(s3: S3) -> None:
    result = invoke("count", f"{s3.url}/none-*")
    assert result.exit_code == 2
    assert "none-*" in result.stderr


def test_cache_flags_keep_remote_inputs_on_the_node(s3: S3, tmp_path: pathlib.Path) -> None:
    urls = []
    for s in range(2):
        urls.append(f"{s3.url}/big-{s}.tfrecord")
        with tfe.TFRecordWriter(urls[-1], index=True) as w:
            w.write_many(tfe.encode_example({"label": i, "pad": b"p" * 200}) for i in range(2000))
    total = sum(tfe.Index.load(u).data_size for u in urls)
    cache = tmp_path / "cache"
    args = ["--cache-dir", str(cache), "--cache-limit", "10M", "cat", "--range", "1990:2010"]
    received = []
    for _ in range(2):
        s3.proxy.reset()
        result = invoke(*args, "--json", f"{s3.url}/big-*")
        assert result.exit_code == 0, result.output
        assert len(result.stdout.splitlines()) == 20
        received.append(sum(q.received for q in s3.proxy.requests if "/big-" in q.path))
    assert received[0] >= total  # the first run copied both objects
    assert received[1] < total // 2  # the second read them from the cache (indexes: small)
    copies = [p for p in os.listdir(cache) if p.startswith("big-") and "tfeidx" not in p]
    assert len(copies) == 2
