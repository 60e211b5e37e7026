"""The ``storageOptions`` option of the Spark data source (a JSON object of fsspec
keyword arguments); its use over a real S3 store: tests/s3/test_s3_spark.py."""

from __future__ import annotations

import json

import pytest

from tfrecord_engine.errors import InvalidArgumentError

from ..optional import require


def test_storage_options_parse_as_a_json_object() -> None:
    require("pyspark")
    from tfrecord_engine.hosts.spark.options import parse_options

    given = {"key": "AKIA-SECRET", "client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}
    for name in ("storageOptions", "storage_options", "STORAGEOPTIONS"):
        got = parse_options({"path": "s3://b/x", name: json.dumps(given)})
        assert dict(got.storage_options or {}) == given
        assert "AKIA-SECRET" not in repr(got)
    assert parse_options({"path": "s3://b/x"}).storage_options is None
    assert parse_options({"path": "x", "storageOptions": "{}"}).storage_options is None
    for bad in ('["key"]', "key=AKIA-SECRET", '"AKIA-SECRET"'):
        with pytest.raises(InvalidArgumentError, match="JSON object") as info:
            parse_options({"path": "x", "storageOptions": bad})
        assert "AKIA-SECRET" not in str(info.value)
    with pytest.raises(InvalidArgumentError, match="once"):
        parse_options({"path": "x", "storageOptions": "{}", "storage_options": "{}"})
