"""How the Beam transforms pick the storage options of a URL: the transform's own
``storage_options``, else s3fs options derived from the pipeline's ``S3Options`` (for
``s3://`` only), else none (fsspec's configuration). Over a real store: tests/s3/."""

from __future__ import annotations

import pickle
from types import ModuleType

import pytest

from tfrecord_engine.errors import InvalidArgumentTypeError


def test_s3_options_become_s3fs_arguments(beam: ModuleType) -> None:
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfrecord_engine.hosts.beam.storage import s3fs_options_of

    got = s3fs_options_of(
        PipelineOptions(
            [
                "--s3_access_key_id=AK",
                "--s3_secret_access_key=SK",
                "--s3_session_token=T",
                "--s3_endpoint_url=http://127.0.0.1:1",
                "--s3_region_name=eu-west-1",
                "--s3_verify=false",
                "--s3_disable_ssl",
            ]
        )
    )
    assert dict(got or {}) == {
        "key": "AK",
        "secret": "SK",
        "token": "T",
        "client_kwargs": {
            "endpoint_url": "http://127.0.0.1:1",
            "region_name": "eu-west-1",
            "verify": False,
        },
        "use_ssl": False,
    }
    assert "SK" not in repr(got)
    assert "AK" not in repr(got)
    assert s3fs_options_of(PipelineOptions([])) is None
    assert s3fs_options_of(None) is None


def test_given_options_win_and_derived_ones_reach_s3_only(beam: ModuleType) -> None:
    from apache_beam.options.pipeline_options import PipelineOptions

    from tfrecord_engine.hosts.beam.storage import reach_of

    with beam.Pipeline(options=PipelineOptions(["--s3_endpoint_url=http://x:1"])) as p:
        begin = p | beam.Create([1])
        derived = reach_of(None, begin)
        given = reach_of({"anon": True}, begin)
    s3 = {"client_kwargs": {"endpoint_url": "http://x:1"}}
    assert dict(derived.of("s3://b/a") or {}) == s3
    assert derived.of("gs://b/a") is None  # s3fs arguments are no gcsfs arguments
    assert derived.of("/local/a") is None
    assert dict(given.of("s3://b/a") or {}) == {"anon": True}
    assert dict(given.of("gs://b/a") or {}) == {"anon": True}
    assert given.of("/local/a") is None
    assert pickle.loads(pickle.dumps(derived)) == derived


def test_transforms_check_and_keep_their_options(beam: ModuleType) -> None:
    from tfrecord_engine.beam import (
        BuildIndexes,
        CountRecords,
        ReadTFRecords,
        Reshard,
        VerifyShards,
        WriteTFRecords,
    )

    options = {"key": "AKIA-SECRET-VALUE", "endpoint_url": "http://127.0.0.1:1"}
    for make in (ReadTFRecords, WriteTFRecords, BuildIndexes, CountRecords, VerifyShards):
        t = make("s3://b/x", storage_options=options)
        assert dict(t._storage_options or {}) == options
        assert "AKIA-SECRET-VALUE" not in repr(t._storage_options)
        with pytest.raises(InvalidArgumentTypeError):
            make("s3://b/x", storage_options="key=AKIA")  # type: ignore[arg-type]
    r = Reshard("s3://b/out", 2, storage_options=options)
    assert dict(r._storage_options or {}) == options
