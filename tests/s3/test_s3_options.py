"""``storage_options=`` on every entry point, against a real S3 store, with fsspec's global
configuration pointing at a decoy (see ``s3_explicit`` in conftest.py): each test passes
only if its options reached the store."""

from __future__ import annotations

import json
import pathlib
import pickle

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.records.random_reader import RandomRecordReader
from tfrecord_engine.storage import remote
from tfrecord_engine.storage.cache import ShardCache
from tfrecord_engine.storage.retry import RetryPolicy

from ..cli.helpers import invoke
from .conftest import S3Explicit

RECORDS = [bytes([i % 256]) * (i * 37 % 700) for i in range(300)]


def _write(s3: S3Explicit, name: str, records: list[bytes], **kwargs: object) -> str:
    url = f"{s3.url}/{name}"
    with tfe.TFRecordWriter(url, storage_options=s3.options, **kwargs) as w:  # type: ignore[arg-type]
        w.write_many(records)
    return url


def test_the_global_configuration_is_a_decoy(s3_explicit: S3Explicit) -> None:
    # The other tests here can fail: without options the decoy is asked, and refuses.
    url = _write(s3_explicit, "a.tfrecord", RECORDS[:3])
    with pytest.raises(OSError, match=r"s3://"):
        _ = remote.RemoteFile(url, retry=RetryPolicy(attempts=1)).size


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_write_read_and_index_with_storage_options(
    s3_explicit: S3Explicit, compression: str
) -> None:
    s3, options = s3_explicit, s3_explicit.options
    url = _write(s3, "a.tfrecord", RECORDS, compression=compression, index=True)
    assert list(tfe.read_records(url, storage_options=options)) == RECORDS
    built = tfe.Index.build(url, storage_options=options)
    loaded = tfe.Index.load(url, storage_options=options)  # the writer's, in .tfeidx/
    assert loaded.offsets.tolist() == built.offsets.tolist()
    assert loaded.data_verified  # the writer's own index, not the one just built
    assert len(built) == len(loaded) == len(RECORDS)
    assert dict(loaded.storage_options or {}) == options
    loaded.validate()  # with the index's own options
    opened = tfe.Index.open(url, save=False, storage_options=options)
    assert opened.offsets.tolist() == built.offsets.tolist()


def test_index_save_with_columns_and_damage_policies(s3_explicit: S3Explicit) -> None:
    s3, options = s3_explicit, s3_explicit.options
    url = _write(s3, "e.tfrecord", [tfe.encode_example({"label": i % 3}) for i in range(50)])
    idx = tfe.Index.build(url, on_damage="skip", storage_options=options)
    assert idx.data_verified
    assert len(idx) == 50
    with_label = idx.with_columns(["label"])
    assert with_label.columns["label"].values.tolist() == [i % 3 for i in range(50)]
    target = with_label.save(placement="hidden")
    assert target.startswith(s3.url)
    again = tfe.Index.load(url, storage_options=options)
    assert again.columns["label"].values.tolist() == with_label.columns["label"].values.tolist()
    # An index travels with its options (workers, tasks) and never shows them.
    back = pickle.loads(pickle.dumps(again))
    assert dict(back.storage_options or {}) == options
    back.validate()
    assert s3.endpoint.secret not in repr(again)


def test_random_reader_glob_detect_and_cache_with_storage_options(
    s3_explicit: S3Explicit, tmp_path: pathlib.Path
) -> None:
    s3, options = s3_explicit, s3_explicit.options
    urls = [_write(s3, f"train-{i}.tfrecord", RECORDS[:10]) for i in range(2)]
    _write(s3, "train-2.tfrecord.gz", RECORDS[:10], compression="GZIP")
    assert remote.glob(f"{s3.url}/train-*.tfrecord", options) == urls
    from tfrecord_engine.records.detect import detect_file

    assert detect_file(f"{s3.url}/train-2.tfrecord.gz", options) is tfe.Compression.GZIP
    with RandomRecordReader(urls[0], storage_options=options) as r:
        assert r.read(0)[0] == RECORDS[0]
    cache = ShardCache(tmp_path / "cache")
    try:
        copy = cache.get(urls[1], storage_options=options)
        assert copy is not None
        assert dict(copy.storage_options or {}) == options
        assert list(tfe.read_records(copy.data_path)) == RECORDS[:10]
        assert s3.endpoint.secret not in repr(copy)
    finally:
        cache.close()


def test_secrets_stay_out_of_reprs_and_errors(s3_explicit: S3Explicit) -> None:
    s3 = s3_explicit
    url = _write(s3, "a.tfrecord", RECORDS[:3])
    wrong = {**s3.options, "secret": "not-the-s3cr3t-value"}
    with pytest.raises(PermissionError, match="access denied") as caught:
        list(tfe.read_records(url, storage_options=wrong))
    shown = f"{caught.value!r} {caught.value}"
    assert url in shown
    assert "not-the-s3cr3t-value" not in shown
    assert s3.endpoint.secret not in shown
    idx = tfe.Index.build(url, storage_options=s3.options)
    assert s3.endpoint.key not in repr(idx)
    assert s3.endpoint.secret not in repr(idx)
    assert s3.endpoint.secret not in repr(idx.storage_options)


def _flags(s3: S3Explicit) -> list[str]:
    flags = [f"--storage-option={k}={json.dumps(v)}" for k, v in s3.options.items()]
    # Plain strings pass as they are; JSON values (client_kwargs={...}) are parsed.
    flags[0:1] = ["--storage-option", f"key={s3.options['key']}"]
    return flags


def _labelled(s3: S3Explicit) -> list[str]:
    return [
        _write(s3, f"t-{i}.tfrecord", [tfe.encode_example({"label": 10 * i + j}) for j in range(5)])
        for i in range(2)
    ]


def test_tfr_storage_option_flags(s3_explicit: S3Explicit) -> None:
    s3, flags = s3_explicit, _flags(s3_explicit)
    urls = _labelled(s3)
    counted = invoke(*flags, "count", "--json", *urls)
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["total"] == 10
    verified = invoke(*flags, "verify", *urls)
    assert verified.exit_code == 0, verified.output
    head = invoke(*flags, "head", "-n", "2", "--json", urls[1])  # no index: read in order
    assert head.exit_code == 0, head.output
    labels = [json.loads(line)["features"]["label"] for line in head.stdout.splitlines()]
    assert labels == [{"int64": [10]}, {"int64": [11]}]
    indexed = invoke(*flags, "index", *urls)
    assert indexed.exit_code == 0, indexed.output
    assert len(tfe.Index.load(urls[0], storage_options=s3.options)) == 5
    out = f"{s3.url}/resharded"
    resharded = invoke(*flags, "reshard", "--shards", "2", "-o", out, *urls)
    assert resharded.exit_code == 0, resharded.output
    got = [
        r
        for u in remote.glob(f"{out}*", s3.options)
        for r in tfe.read_records(u, storage_options=s3.options)
    ]
    assert len(got) == 10
    # Without the flags the decoy is asked: the command fails, naming no secret.
    failed = invoke("count", urls[0])
    assert failed.exit_code != 0
    assert s3.endpoint.secret not in failed.output


def test_tfr_storage_option_flags_with_globs_and_indexed_reads(s3_explicit: S3Explicit) -> None:
    s3, flags = s3_explicit, _flags(s3_explicit)
    _labelled(s3)
    indexed = invoke(*flags, "index", f"{s3.url}/t-*")
    assert indexed.exit_code == 0, indexed.output
    cat = invoke(*flags, "cat", "--range", "4:6", "--json", f"{s3.url}/t-*")
    assert cat.exit_code == 0, cat.output
    rows = [json.loads(line)["features"]["label"] for line in cat.stdout.splitlines()]
    assert rows == [{"int64": [4]}, {"int64": [10]}]


def test_tfr_storage_option_needs_key_equals_value() -> None:
    result = invoke("--storage-option", "s3cr3t", "count", "x.tfrecord")
    assert result.exit_code == 2
    assert "key=value" in result.output
    assert "s3cr3t" not in result.output


def test_explicit_options_win_over_the_global_configuration(s3_explicit: S3Explicit) -> None:
    # The decoy's key/secret/endpoint are in fsspec.config.conf["s3"]; explicit ones win
    # key by key, and the decoy stays as it was (checked by the fixture).
    url = _write(s3_explicit, "a.tfrecord", RECORDS[:5])
    f = remote.RemoteFile(url, storage_options=s3_explicit.options)
    assert f.fs.key == s3_explicit.endpoint.key
    assert f.size == sum(len(r) + 16 for r in RECORDS[:5])
    assert np.array_equal(
        tfe.Index.build(url, storage_options=s3_explicit.options).lengths,
        [len(r) for r in RECORDS[:5]],
    )
