"""The Beam transforms over ``s3://`` on the DirectRunner, with fsspec's global
configuration pointing at a decoy (``s3_explicit``): Beam's ``FileSystems`` match and
rename through the pipeline's ``S3Options``; the records, shards and indexes go through
the transforms' ``storage_options=`` or, when none are given, s3fs options derived from
those ``S3Options``."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.storage import remote
from tfrecord_engine.testing.s3_server import S3Endpoint

from ..optional import require
from ..snippets import run, section
from .conftest import S3Explicit

RECORDS = [b"r%03d" % i + b"x" * (i % 13) for i in range(90)]
FEATURES = {"label": tfe.FixedLenFeature([], "int64")}
DOC = Path(__file__).resolve().parents[2] / "docs" / "remote.md"


@pytest.fixture(scope="module")
def beam() -> ModuleType:
    require("boto3")  # Beam's S3 file system (apache-beam[aws])
    return require("apache_beam")


def _beam_options(endpoint: S3Endpoint) -> Any:
    """Pipeline options whose ``S3Options`` reach ``endpoint``."""
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions(
        runner="DirectRunner",
        s3_endpoint_url=endpoint.url,
        s3_access_key_id=endpoint.key,
        s3_secret_access_key=endpoint.secret,
        s3_region_name=endpoint.region,
    )


def _listing(s3: S3Explicit, folder: str) -> list[str]:
    """Every object under ``folder``, relative to it, read with the test's options."""
    fs, inner = remote.filesystem(folder, s3.options)
    return sorted(p[len(inner) + 1 :] for p in fs.find(inner))


def test_beam_writes_and_reads_s3_with_storage_options(
    beam: ModuleType, s3_explicit: S3Explicit, s3_endpoint: S3Endpoint
) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import CountRecords, ReadTFRecords, WriteTFRecords

    s3 = s3_explicit
    if s3.proxy_or_none is None:
        pytest.skip("needs the loopback proxy (an http:// endpoint)")
    proxy = s3.proxy_or_none
    # Beam's file system goes to the store directly, the transforms' own reads and
    # writes through the counting proxy (``s3.options``): both reach it, by two ways.
    options = _beam_options(s3_endpoint)
    out = f"{s3.url}/out"
    with beam.Pipeline(options=options) as p:
        names = (
            p
            | beam.Create(RECORDS)
            | WriteTFRecords(
                f"{out}/train",
                num_shards=3,
                file_name_suffix=".tfrecord",
                storage_options=s3.options,
            )
        )
        assert_that(names, equal_to([f"{out}/train-0000{i}-of-00003.tfrecord" for i in range(3)]))
    shards = [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]
    # Published with their indexes; the temporary folder is gone.
    assert _listing(s3, out) == sorted(shards + [f".tfeidx/{n}.tfeidx" for n in shards])
    assert proxy.count("PUT", match="/.tfe-temp-") + proxy.count("POST", match="/.tfe-temp-")
    proxy.reset()

    with beam.Pipeline(options=options) as p:
        got = p | ReadTFRecords(f"{out}/train-*", storage_options=s3.options)
        assert_that(got, equal_to(RECORDS))
        total = (p | CountRecords(f"{out}/train-*", storage_options=s3.options))["total"]
        assert_that(total, equal_to([len(RECORDS)]), label="total")
    # The indexes and the records were read through the transforms' options.
    assert proxy.count("GET", match="/.tfeidx/") >= 3
    assert proxy.count("GET", match="/train-") >= 3
    # What a worker gets: the options, never shown.
    read = ReadTFRecords(f"{out}/train-*", storage_options=s3.options)
    assert s3.endpoint.secret.encode() in pickle.dumps(read)
    assert s3.endpoint.secret not in repr(vars(read))


def test_beam_derives_storage_options_from_the_pipelines_s3_options(
    beam: ModuleType, s3_explicit: S3Explicit
) -> None:
    from apache_beam.testing.util import assert_that, equal_to

    from tfrecord_engine.beam import (
        BuildIndexes,
        ReadTFRecords,
        Reshard,
        VerifyShards,
        WriteTFRecords,
    )

    s3 = s3_explicit
    options = _beam_options(s3.endpoint)  # the only settings given: no storage_options
    out = f"{s3.url}/derived"
    for s in range(2):  # shards without indexes: BuildIndexes makes them
        with tfe.TFRecordWriter(f"{out}/in-{s}.tfrecord", storage_options=s3.options) as w:
            w.write_many(tfe.encode_example({"label": 45 * s + i}) for i in range(45))
    with beam.Pipeline(options=options) as p:
        built = p | BuildIndexes(f"{out}/in-*") | beam.Map(lambda r: (r.records, r.built))
        assert_that(built, equal_to([(45, True), (45, True)]))
    assert _listing(s3, out) == [
        ".tfeidx/in-0.tfrecord.tfeidx",
        ".tfeidx/in-1.tfrecord.tfeidx",
        "in-0.tfrecord",
        "in-1.tfrecord",
    ]
    with beam.Pipeline(options=options) as p:
        labels = (
            p
            | ReadTFRecords(f"{out}/in-*", features=FEATURES, desired_bundle_bytes=256)
            | beam.Map(lambda r: int(r["label"]))
        )
        assert_that(labels, equal_to(list(range(90))))
        reports = p | VerifyShards(f"{out}/in-*") | beam.Map(lambda r: (r.records, r.ok))
        assert_that(reports, equal_to([(45, True), (45, True)]), label="verified")
        written = (
            p | beam.Create(RECORDS[:10]) | "Write" >> WriteTFRecords(f"{out}/w/part", num_shards=2)
        )
        assert_that(written | beam.combiners.Count.Globally(), equal_to([2]), label="written")
    with beam.Pipeline(options=options) as p:
        _ = (
            p
            | beam.Create([f"{out}/in-*"])
            | Reshard(f"{out}/re/shard", 3, seed=7, file_name_suffix=".tfrecord")
        )
    ds = tfe.RecordDataset(f"{out}/re/shard-*", features=FEATURES, storage_options=s3.options)
    assert len(ds.paths) == 3
    assert sorted(ds[list(range(len(ds)))]["label"].tolist()) == list(range(90))
    assert sorted(tfe.RecordDataset(f"{out}/w/part-*", storage_options=s3.options)[:]) == sorted(
        RECORDS[:10]
    )


def test_the_docs_beam_example_runs_against_the_store(
    beam: ModuleType, s3_explicit: S3Explicit, tmp_path: Path
) -> None:
    s3 = s3_explicit
    (example,) = section("Beam pipelines on S3", DOC)
    settings = 'endpoint, key, secret = "http://127.0.0.1:8333", "AKIA...", "..."\n'
    ep = s3.endpoint
    code = example.replace(
        settings, f"endpoint, key, secret = {ep.url!r}, {ep.key!r}, {ep.secret!r}\n"
    )
    code = code.replace("s3://my-bucket", s3.url)
    assert code.count(s3.url) == 3
    assert ep.secret in code
    for s in range(3):
        with tfe.TFRecordWriter(f"{s3.url}/raw/train-{s}", storage_options=s3.options) as w:
            w.write_many(RECORDS[30 * s : 30 * (s + 1)])
    # A fresh interpreter: FSSPEC_S3 names the decoy there.
    assert run(code, tmp_path) == [f"2 {len(RECORDS)}"]
