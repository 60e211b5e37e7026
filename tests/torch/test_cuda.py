"""``prefetch_to_device`` and ``RecordIterableDataset(device=...)`` on a real CUDA device.

CI has no GPU, so these skip there; they run on a GPU machine by hand (docs/frameworks.md,
"Checking the GPU path"). Each test compares what reaches the GPU with the same batches
read on the CPU, so a copy handed over before it finished, or device memory reused while
a consumer kernel still reads it, shows as a wrong value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import tfrecord_engine as tfe

from ..optional import require

torch = require("torch")
from torch.utils.data import DataLoader  # noqa: E402 - after the skip

from tfrecord_engine.torch import RecordIterableDataset, prefetch_to_device  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
]

N = 1_001  # not a multiple of any batch size used here
WIDTH = 4_096  # floats per record: 16 KiB, so a batch of 256 is a 4 MiB copy
SPEC: dict[str, Any] = {
    "i": tfe.FixedLenFeature([], "int64"),
    "x": tfe.FixedLenFeature([WIDTH], "float32"),
    "tags": tfe.VarLenFeature("int64"),
    "s": tfe.FixedLenFeature([], "string"),
}


def _x(i: int) -> np.ndarray:
    return (np.arange(WIDTH, dtype=np.float32) * 1e-3 + i).astype(np.float32)


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> tfe.RecordDataset:
    path = str(Path(tmp_path_factory.mktemp("cuda")) / "cuda.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(
            tfe.encode_example(
                {"i": [i], "x": _x(i), "tags": np.arange(i % 4, dtype=np.int64), "s": [b"s%d" % i]}
            )
            for i in range(N)
        )
    return tfe.RecordDataset(path, features=SPEC)


def _on_host(batch: Any) -> Any:
    """``batch`` with every CUDA tensor copied back to the host (structure kept)."""
    if isinstance(batch, torch.Tensor):
        assert batch.device.type == "cuda", batch.device
        return batch.cpu()
    if isinstance(batch, dict):
        return {k: _on_host(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_on_host(v) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_on_host(v) for v in batch)
    return batch


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.dtype == b.dtype
        assert torch.equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _equal(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _equal(x, y)
    elif isinstance(a, np.ndarray):  # (strings: numpy arrays of bytes)
        assert type(b) is np.ndarray
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist()
    else:
        assert a == b


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("workers", [0, 2])
def test_prefetched_batches_equal_the_host_batches(
    ds: tfe.RecordDataset, depth: int, workers: int
) -> None:
    def loader() -> DataLoader[Any]:
        it = RecordIterableDataset(ds, 256, shuffle=True, seed=3)
        return DataLoader(it, batch_size=None, num_workers=workers, pin_memory=True)

    expected = list(loader())
    got = [_on_host(b) for b in prefetch_to_device(loader(), "cuda", depth=depth)]
    _equal(got, expected)
    assert sorted(int(i) for b in got for i in b["i"]) == list(range(N))
    assert isinstance(got[0]["s"], np.ndarray)  # (left on the host, as it is)
    assert isinstance(got[0]["s"][0], bytes)


def test_unpinned_nested_batches(ds: tfe.RecordDataset) -> None:
    # Not pinned by a DataLoader: prefetch_to_device pins them itself. SparseValue named
    # tuples, lists and dicts keep their structure.
    host = [
        {"pair": [b["x"], (b["i"],)], "sparse": b["tags"], "meta": {"i": b["i"]}}
        for b in RecordIterableDataset(ds, 100)
    ]
    assert not host[0]["pair"][0].is_pinned()
    got = [_on_host(b) for b in prefetch_to_device(host, torch.device("cuda:0"))]
    _equal(got, host)


def test_device_argument_in_the_main_process(ds: tfe.RecordDataset) -> None:
    it = RecordIterableDataset(ds, 128, device="cuda", prefetch=3)
    got = [_on_host(b) for b in it]
    _equal(got, list(RecordIterableDataset(ds, 128)))


def test_consumer_kernels_see_finished_copies_and_unreused_memory(
    ds: tfe.RecordDataset,
) -> None:
    # A slow consumer step on every batch, the batch dropped right after: the side
    # stream's next copies must wait for the copy events (wait_event) and must not land
    # in memory a queued consumer kernel still reads (record_stream).
    w = torch.randn(WIDTH, WIDTH, device="cuda")
    sums = []
    for b in prefetch_to_device(RecordIterableDataset(ds, 256), "cuda", depth=2):
        x = b["x"]
        for _ in range(20):  # queued work that keeps reading x
            y = x @ w
        sums.append((x.sum(dim=1), y.shape))
        del b, x, y
    torch.cuda.synchronize()
    got = torch.cat([s for s, _ in sums]).cpu().numpy()
    expected = np.array([_x(i).sum(dtype=np.float32) for i in range(N)], dtype=np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_map_style_loader(ds: tfe.RecordDataset) -> None:
    plain = tfe.RecordDataset(ds.paths, features={"i": SPEC["i"], "x": SPEC["x"]})
    loader: DataLoader[Any] = DataLoader(
        cast(Any, plain), batch_size=64, shuffle=True, num_workers=2, pin_memory=True
    )
    seen = []
    for b in prefetch_to_device(loader, "cuda"):
        assert b["x"].device.type == "cuda"
        # Each row's values start at its record number.
        torch.testing.assert_close(b["x"][:, 0], b["i"].to(torch.float32))
        seen.extend(b["i"].tolist())
    assert sorted(seen) == list(range(N))
