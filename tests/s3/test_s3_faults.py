"""Faults between the reader and a real S3 store, injected by the loopback proxy: every
record exactly once through transient ones, a located error after persistent ones."""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.storage.retry import RetryPolicy, set_default_retry_policy

from .conftest import S3

RECORDS = [b"%06d" % i * (1 + i % 50) for i in range(3000)]
# s3fs turns S3's 503 (SlowDown, ServiceUnavailable) into OSError(EBUSY, "Please reduce
# your request rate.") and 500 into OSError(EREMOTEIO), dropping the status: retried all
# the same (storage/retry.is_transient).


@pytest.fixture(autouse=True)
def fast_retries() -> Iterator[None]:
    previous = set_default_retry_policy(RetryPolicy(attempts=4, initial=0.01, maximum=0.05))
    yield
    set_default_retry_policy(previous)


def _write(s3: S3) -> str:
    url = f"{s3.url}/train-0.tfrecord"
    with tfe.TFRecordWriter(url, index=True) as w:
        w.write_many(RECORDS)
    return url


def _faults(s3: S3) -> list[str]:
    return [q.fault for q in s3.proxy.requests if q.fault is not None]


@pytest.mark.parametrize("fault", ["503", "cut", "drop"])
def test_transient_faults_cost_retries_never_records(
    s3: S3, tmp_path: pathlib.Path, fault: str
) -> None:
    url = _write(s3)
    ds = tfe.RecordDataset(url)
    assert len(ds) == len(RECORDS)
    injectors: dict[str, Callable[..., None]] = {
        "503": s3.proxy.fail,
        "cut": s3.proxy.cut,
        "drop": s3.proxy.drop,
    }
    inject = injectors[fault]
    inject(times=3, match="train-0.tfrecord")
    epoch = [r for b in ds.batches(256, shuffle=True, seed=4) for r in b]
    assert sorted(epoch) == sorted(RECORDS)
    assert _faults(s3) == [fault] * 3
    ds.close()
    # A cache fill through the same faults: a whole, exact copy.
    s3.proxy.reset()
    inject(times=2, match="train-0.tfrecord")
    with tfe.RecordDataset(url, cache_dir=tmp_path) as cached:
        assert [r for b in cached.batches(500) for r in b] == RECORDS
    assert _faults(s3) == [fault] * 2


def test_a_persistent_slowdown_ends_in_a_located_error(s3: S3) -> None:
    url = _write(s3)
    set_default_retry_policy(RetryPolicy(attempts=2, initial=0.01, maximum=0.05))
    ds = tfe.RecordDataset(url)
    assert len(ds) == len(RECORDS)
    s3.proxy.reset()
    s3.proxy.fail(503, times=None, methods=("GET",), match="train-0.tfrecord")
    with pytest.raises(tfe.RemoteReadError) as caught:
        ds[5]
    assert caught.value.url == url
    assert caught.value.start is not None
    assert caught.value.attempts == 2
    # Bounded: each of our attempts is s3fs's five tries of the one request (botocore's
    # own retries are off in this configuration, as docs/remote.md recommends).
    assert s3.proxy.count("GET", match="train-0") == 2 * 5
    ds.close()
