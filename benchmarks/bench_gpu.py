"""PyTorch training input onto a CUDA device: does ``prefetch_to_device`` hide the copies?

Needs a CUDA GPU (CI has none; ``make bench`` skips this file). Run by hand on a GPU
machine: ``python -m benchmarks.bench_gpu [--records 6400] [--workers 4]``.

One file of image-like Examples (``image``: 224x224x3 uint8 bytes read as a
``RawFeature``, ``y``: int64; ~150 KB each), written here by our writer, so that each
batch's host-to-device copy (9.6 MB for 64 images) is a real share of a step. One epoch
of a small convolutional network's training steps (forward, backward, SGD) per case,
best of ``--repeats``:

- **loader only**: ``DataLoader(RecordIterableDataset(ds, 64), num_workers, pin_memory)``,
  no GPU work (the input rate);
- **steps only**: the same number of steps on one batch already on the GPU (the GPU rate);
- **.to(cuda) in the loop**: the loop most tutorials show (each copy waits for its step);
- **copy only**: the host-to-device copies alone, one pinned batch copied once per step
  (the PCIe rate, GB/s);
- **prefetch_to_device**: the loader wrapped by ``prefetch_to_device(loader, "cuda")``.

Each case is also given in GB/s of image bytes. When the input keeps up, the last case
should take about the slowest of loader only, copy only and steps only; the last line
names which of the three is the bound.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfrecord_engine as tfe

BATCH = 64
SIDE = 224
#: Image bytes per record (the label's 8 bytes aside).
RECORD_BYTES = SIDE * SIDE * 3
SPEC: dict[str, Any] = {
    "image": tfe.RawFeature([SIDE * SIDE * 3], "uint8"),
    "y": tfe.FixedLenFeature([], "int64"),
}


def _write(path: str, n: int) -> None:
    rng = np.random.default_rng(0)
    with tfe.TFRecordWriter(path, index=True) as w:
        for start in range(0, n, 1_000):
            images = rng.integers(0, 256, (min(1_000, n - start), SIDE * SIDE * 3), np.uint8)
            w.write_many(
                tfe.encode_example({"image": [x.tobytes()], "y": [int(i) % 10]})
                for i, x in enumerate(images, start)
            )


def run(records: int, workers: int, hidden: int, repeats: int, device: str = "cuda") -> str:
    import torch
    from torch.utils.data import DataLoader

    from tfrecord_engine.torch import RecordIterableDataset, prefetch_to_device

    dev = torch.device(device)
    cuda = dev.type == "cuda"

    def sync() -> None:
        if cuda:
            sync()

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpu.tfrecord")
        _write(path, records)
        ds = tfe.RecordDataset(path, features=SPEC)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, hidden, 7, stride=4),
            torch.nn.ReLU(),
            torch.nn.Conv2d(hidden, hidden, 3, stride=2),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(hidden, 10),
        ).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step(b: dict[str, Any]) -> None:
            x = b["image"].view(-1, SIDE, SIDE, 3).permute(0, 3, 1, 2).float() / 255
            loss = torch.nn.functional.cross_entropy(model(x), b["y"])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()

        def loader() -> DataLoader[Any]:
            it = RecordIterableDataset(ds, BATCH, shuffle=True, seed=1)
            return DataLoader(
                it,
                batch_size=None,
                num_workers=workers,
                pin_memory=cuda,
                persistent_workers=False,
            )

        n_batches = len(RecordIterableDataset(ds, BATCH))

        def loader_only() -> int:
            return sum(len(b["y"]) for b in loader())

        def steps_only() -> int:
            b = next(iter(loader()))
            b = {k: v.to(dev) for k, v in b.items()}
            for _ in range(n_batches):
                step(b)
            return n_batches * BATCH

        first = next(iter(loader())).items()
        pinned = {k: v.pin_memory() if cuda else v for k, v in first}

        def copy_only() -> int:
            for _ in range(n_batches):
                for v in pinned.values():
                    v.to(dev, non_blocking=True)
            return n_batches * BATCH

        def naive() -> int:
            n = 0
            for b in loader():
                step({k: v.to(dev) for k, v in b.items()})
                n += len(b["y"])
            return n

        def prefetched() -> int:
            n = 0
            for b in prefetch_to_device(loader(), dev, depth=2):
                step(b)
                n += len(b["y"])
            return n

        cases: list[tuple[str, Callable[[], int]]] = [
            ("loader only (no GPU work)", loader_only),
            ("steps only (batch already on the GPU)", steps_only),
            ("copy only (pinned batch -> GPU)", copy_only),
            (".to(cuda) in the loop", naive),
            ("prefetch_to_device(loader, 'cuda')", prefetched),
        ]
        best: dict[str, float] = {}
        runs: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _name, fn in cases:  # warm-up: CUDA context, kernels, worker start
            fn()
            sync()
        for _ in range(repeats):
            for name, fn in cases:
                t0 = time.perf_counter()
                fn()
                sync()
                dt = time.perf_counter() - t0
                runs[name].append(dt)
                best[name] = min(best.get(name, dt), dt)
    lines = [
        f"device: {torch.cuda.get_device_name(dev) if cuda else device}; {records:,} records, "
        f"batches of {BATCH}, "
        f"{workers} DataLoader workers, 2 convolutions of {hidden} channels; best / median of "
        f"{repeats} epochs",
        "",
        "| case | epoch s (best) | epoch s (median) | records/s (best) | GB/s (best) |",
        "|---|---:|---:|---:|---:|",
    ]
    gigabytes = records * RECORD_BYTES / 1e9
    for name, _ in cases:
        med = float(np.median(runs[name]))
        lines.append(
            f"| {name} | {best[name]:.3f} | {med:.3f} | {records / best[name]:,.0f} | "
            f"{gigabytes / best[name]:.2f} |"
        )
    parts = {
        "the loader": best[cases[0][0]],
        "the GPU steps": best[cases[1][0]],
        "the copy": best[cases[2][0]],
    }
    bound_name = max(parts, key=lambda k: parts[k])
    bound = parts[bound_name]
    lines.append("")
    lines.append(
        f"bound: {bound_name} ({gigabytes / bound:.2f} GB/s); prefetch_to_device epoch / "
        f"that bound = {best[cases[4][0]] / bound:.2f}; .to(cuda) in the loop: "
        f"{best[cases[3][0]] / bound:.2f}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6_400)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of the script")
    args = parser.parse_args()
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("bench_gpu: no CUDA device here (this benchmark needs one)")
    print(run(args.records, args.workers, args.hidden, args.repeats, args.device))


if __name__ == "__main__":
    main()
