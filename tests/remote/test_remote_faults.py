"""Remote reads through a misbehaving server: retried when transient, located when not,
and never a silent mix of two versions of a file (issue 29, item 6)."""

from __future__ import annotations

import os
import pathlib
import pickle
import random
import secrets
from collections.abc import Iterator

import pytest

import tfrecord_engine as tfe
from tfrecord_engine.errors import (
    RangeIgnoredWarning,
    RemoteAccessDeniedError,
    RemoteChangedError,
    RemoteNotFoundError,
    RemoteReadError,
)
from tfrecord_engine.storage.remote import RemoteFile
from tfrecord_engine.storage.retry import RetryPolicy, set_default_retry_policy
from tfrecord_engine.testing.http_server import RangeServer

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")
Served = tuple[pathlib.Path, RangeServer]
FAST = RetryPolicy(attempts=4, initial=0.001, maximum=0.004)


@pytest.fixture(autouse=True)
def fast_retries() -> Iterator[None]:
    """Tiny pauses for every file opened by a test (datasets open theirs internally)."""
    previous = set_default_retry_policy(FAST)
    yield
    set_default_retry_policy(previous)


@pytest.fixture
def server(served: Served) -> Iterator[RangeServer]:
    """The module's server, with its log cleared and no fault left over after the test."""
    served[1].reset()
    yield served[1]
    served[1].heal()
    served[1].reset()


def _blob(served: Served, size: int = 200_000) -> tuple[str, bytes]:
    name = f"{secrets.token_hex(6)}.bin"
    data = random.Random(size).randbytes(size)
    (served[0] / name).write_bytes(data)
    return f"{served[1].url}/{name}", data


def _faults(server: RangeServer) -> list[str | None]:
    return [q.fault for q in server.requests if q.fault is not None]


def _records(tag: bytes, n: int) -> list[bytes]:
    return [tag + b"-%06d" % i for i in range(n)]


def test_bodies_cut_mid_way_are_requested_again(served: Served, server: RangeServer) -> None:
    url, data = _blob(served)
    f = RemoteFile(url)
    assert f.size == len(data)
    server.cut(2)
    assert f.fetch(1000, 100_000) == data[1000:101_000]
    assert _faults(server) == ["cut", "cut"]
    assert (f.requests, f.retries) == (3, 2)
    # A batch of ranges: only the cut ones are sent again.
    server.reset()
    server.cut(3)
    starts, ends = [0, 50_000, 120_000, 190_000], [10_000, 90_000, 150_000, 200_000]
    assert f.fetch_ranges(starts, ends) == [data[a:b] for a, b in zip(starts, ends, strict=True)]
    assert server.count("GET") == 4 + 3


def test_a_503_on_the_size_query_is_retried_not_a_missing_file(
    served: Served, server: RangeServer
) -> None:
    url, _ = _blob(served, 1000)
    server.fail(503, times=3)
    assert RemoteFile(url).size == 1000
    assert [(q.method, q.fault) for q in server.requests] == [("HEAD", "503")] * 3 + [
        ("HEAD", None)
    ]


def test_a_dropped_connection_is_retried(served: Served, server: RangeServer) -> None:
    url, data = _blob(served, 5000)
    f = RemoteFile(url)
    server.drop(times=3)  # aiohttp itself resends once on a reused connection
    assert f.read_all() == data
    assert _faults(server) == ["drop"] * 3


@pytest.mark.parametrize("fault", ["cut", "503", "drop"])
def test_a_dataset_reads_exactly_its_records_through_transient_faults(
    served: Served, server: RangeServer, fault: str
) -> None:
    root = served[0]
    name = f"{secrets.token_hex(6)}.tfrecord"
    records = _records(b"r", 3000)
    with tfe.TFRecordWriter(root / name, index=True) as w:
        w.write_many(records)

    def inject() -> None:
        if fault == "cut":
            server.cut(3)
        elif fault == "503":
            server.fail(503, times=3)
        else:
            server.drop(times=3)

    inject()  # while the dataset opens: sidecar, size query, fingerprint
    ds = tfe.RecordDataset(f"{server.url}/{name}")
    assert len(ds) == len(records)
    inject()  # while an epoch reads its coalesced ranges
    epoch = [r for b in ds.batches(100, shuffle=True, seed=3, readahead=0) for r in b]
    assert sorted(epoch) == records
    assert ds[[5, 2999, 17]] == [records[5], records[2999], records[17]]
    assert len(_faults(server)) == 6
    ds.close()


def test_a_permanent_503_ends_after_the_attempts_naming_url_and_range(
    served: Served, server: RangeServer
) -> None:
    url, _ = _blob(served, 1000)
    f = RemoteFile(url)
    assert f.size == 1000
    server.fail(503, times=None)
    with pytest.raises(RemoteReadError) as caught:
        f.fetch(100, 50)
    exc = caught.value
    assert not isinstance(exc, FileNotFoundError)
    assert (exc.url, exc.start, exc.end, exc.status, exc.attempts) == (url, 100, 150, 503, 4)
    assert f"{url}: bytes [100, 150): HTTP 503" in str(exc)
    assert "after 4 attempts" in str(exc)
    assert _faults(server) == ["503"] * FAST.attempts
    # The size query of a new reader, and a dataset's open: the same, never "not found".
    with pytest.raises(RemoteReadError, match="503") as caught:
        _ = RemoteFile(url).size
    assert not isinstance(caught.value, FileNotFoundError)
    with pytest.raises(RemoteReadError, match="503") as caught:
        tfe.RecordDataset(url, compression="")[0]
    assert not isinstance(caught.value, FileNotFoundError)


@pytest.mark.parametrize(
    ("status", "kind", "builtin"),
    [
        (404, RemoteNotFoundError, FileNotFoundError),
        (403, RemoteAccessDeniedError, PermissionError),
    ],
)
def test_404_and_403_are_not_retried_and_name_url_and_range(
    served: Served,
    server: RangeServer,
    status: int,
    kind: type[RemoteReadError],
    builtin: type[OSError],
) -> None:
    url, _ = _blob(served, 1000)
    f = RemoteFile(url)
    assert f.size == 1000
    server.fail(status, times=None)
    with pytest.raises(kind) as caught:
        f.fetch(10, 20)
    assert isinstance(caught.value, builtin)
    assert isinstance(caught.value, tfe.TFRecordError)
    assert f"{url}: bytes [10, 30): HTTP {status}" in str(caught.value)
    assert _faults(server) == [str(status)]  # sent once
    with pytest.raises(kind, match=f"{url}: HTTP {status}"):
        _ = RemoteFile(url).size


def test_a_missing_file_is_a_file_not_found_error_naming_the_url(
    served: Served, server: RangeServer
) -> None:
    url = f"{server.url}/{secrets.token_hex(6)}.tfrecord"
    with pytest.raises(RemoteNotFoundError, match=f"^{url}: HTTP 404"):
        _ = RemoteFile(url).size
    with pytest.raises(FileNotFoundError, match="no such file"):
        RemoteFile(url).read_all()
    assert server.count("HEAD") + server.count("GET") == 2  # nothing retried


def test_a_whole_file_in_place_of_a_range_is_cut_to_the_range(
    served: Served, server: RangeServer
) -> None:
    url, data = _blob(served, 10_000)
    f = RemoteFile(url)
    assert f.size == len(data)
    server.ignore_range(times=None)
    with pytest.warns(RangeIgnoredWarning, match="ignored the Range header"):
        got = f.fetch_ranges([0, 4000, 9990], [10, 5000, 10_000])
    assert got == [data[:10], data[4000:5000], data[9990:]]
    assert _faults(server) == ["whole"] * 3
    assert f.fetch(5, 5) == data[5:10]  # warned once per file


def test_a_replaced_file_is_a_located_error_not_a_mix(served: Served, server: RangeServer) -> None:
    url, data = _blob(served, 10_000)
    f = RemoteFile(url)
    assert f.fetch(0, 100) == data[:100]
    path = served[0] / url.rsplit("/", 1)[1]
    new = path.with_name(path.name + ".new")
    new.write_bytes(bytes(reversed(data)))  # same size, other content
    os.replace(new, path)
    with pytest.raises(RemoteChangedError) as caught:
        f.fetch(100, 100)
    exc = caught.value
    assert isinstance(exc, tfe.StaleIndexError)
    assert (exc.url, exc.start, exc.end) == (url, 100, 200)
    assert exc.before.startswith("ETag")
    assert exc.after.startswith("ETag")
    assert f"{url}: changed while in use (ETag" in str(exc)
    assert "bytes [100, 200)" in str(exc)
    assert "reopen the dataset" in str(exc)
    # A new reader takes the new version.
    assert RemoteFile(url).fetch(0, 100) == bytes(reversed(data))[:100]


def test_a_file_replaced_mid_epoch_stops_the_epoch_never_mixing_versions(
    served: Served, server: RangeServer
) -> None:
    root = served[0]
    name = f"{secrets.token_hex(6)}.tfrecord"
    n = 3 * 4096  # three read-ahead chunks
    with tfe.TFRecordWriter(root / name, index=True) as w:
        w.write_many(_records(b"old", n))
    ds = tfe.RecordDataset(f"{server.url}/{name}")
    seen: list[bytes] = []
    batches = ds.batches(512, shuffle=True, seed=0, readahead=0)
    seen += next(batches)
    # The same layout, other records: written aside and moved over the served file.
    tmp = root / f".{name}.new"
    with tfe.TFRecordWriter(tmp, index=False) as w:
        w.write_many(_records(b"new", n))
    os.replace(tmp, root / name)

    def rest() -> None:
        for batch in batches:
            seen.extend(batch)

    with pytest.raises(RemoteChangedError, match="changed while in use"):
        rest()
    assert len(seen) < n  # the epoch stopped at the first read of the new version
    assert all(r.startswith(b"old-") for r in seen)
    ds.close()


def test_other_backends_retry_the_failed_ranges_and_locate_the_rest(
    mem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{mem}/a.bin"
    data = bytes(range(256)) * 40
    tfe.storage.remote.write_bytes(url, data)
    f = RemoteFile(url)
    real = f.fs.cat_ranges
    calls: list[list[int]] = []

    def flaky(paths: list[str], starts: list[int], ends: list[int], **kw: object) -> list[object]:
        calls.append(list(starts))
        got: list[object] = real(paths, starts, ends, **kw)
        if len(calls) == 1:  # the first try of the second range is reset
            got[1] = ConnectionResetError("connection reset by peer")
        if starts == [9000]:
            got[0] = FileNotFoundError(paths[0])
        return got

    monkeypatch.setattr(f.fs, "cat_ranges", flaky)
    assert f.fetch_ranges([0, 100, 200], [10, 150, 300]) == [
        data[:10],
        data[100:150],
        data[200:300],
    ]
    assert calls == [[0, 100, 200], [100]]
    assert (f.requests, f.retries) == (4, 1)
    with pytest.raises(RemoteNotFoundError, match=r"a\.bin: bytes \[9000, 9010\): no such file"):
        f.fetch(9000, 10)
    assert calls[-1] == [9000]  # not retried


def test_remote_errors_survive_pickling() -> None:
    # Decode workers send their errors to the parent pickled.
    errors: list[Exception] = [
        RemoteReadError("HTTP 503", url="http://h/a", start=1, end=9, status=503, attempts=5),
        RemoteNotFoundError("HTTP 404: no such file", url="http://h/a", status=404),
        RemoteChangedError(url="http://h/a", start=0, end=4, before="ETag 1", after="ETag 2"),
    ]
    for exc in errors:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc)
        assert str(back) == str(exc)
        assert vars(back) == vars(exc)


def test_retry_policy_backs_off_within_bounds() -> None:
    p = RetryPolicy(attempts=6, initial=0.1, maximum=0.5)
    rng = random.Random(1)
    caps = [0.1, 0.2, 0.4, 0.5, 0.5]
    for retry, cap in enumerate(caps, 1):
        assert cap / 2 <= p.delay(retry, rng) <= cap
    assert p.delay(1, rng, hint=0.3) == 0.3  # a server's Retry-After lengthens a pause
    assert p.delay(1, rng, hint=60) == 0.5  # ... never past the maximum
    for bad in ({"attempts": 0}, {"initial": 2.0, "maximum": 1.0}, {"multiplier": 0.5}):
        with pytest.raises(tfe.InvalidArgumentError):
            RetryPolicy(**bad)
    previous = set_default_retry_policy(p)
    try:
        assert RemoteFile("memory://x/y").retry is p
    finally:
        set_default_retry_policy(previous)


def test_an_object_replaced_between_opening_and_reading_is_refused(
    served: Served, server: RangeServer
) -> None:
    """The version is pinned when the dataset opens (right after its index was checked),
    not at its first read: a replacement in between is a located error, never the new
    object's bytes read under the old index, ``verify=False`` and decode workers included."""
    root = served[0]
    name = f"{secrets.token_hex(6)}.tfrecord"
    with tfe.TFRecordWriter(root / name, index=True) as w:
        w.write_many(_records(b"old", 2000))
    for workers in (0, 2):
        ds = tfe.RecordDataset(f"{server.url}/{name}", verify=False)
        assert len(ds) == 2000  # opened: index checked, version pinned
        tmp = root / f".{name}.new"
        with tfe.TFRecordWriter(tmp, index=False) as w:
            w.write_many(_records(b"new", 2000))  # the same layout, other records
        os.replace(tmp, root / name)
        with pytest.raises(RemoteChangedError):
            ds[5]
        with pytest.raises(RemoteChangedError):
            for _ in ds.batches(256, workers=workers):
                pass
        ds.close()
        # Back to the old records for the next round (the pinned version was "old").
        with tfe.TFRecordWriter(tmp, index=False) as w:
            w.write_many(_records(b"old", 2000))
        os.replace(tmp, root / name)
