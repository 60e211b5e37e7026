"""A new process's start: imports, then the first parsed batch, with and without numba.

What a spawned DataLoader worker or a ``tfr`` call pays before its first batch. Each
figure is the best and the median of several fresh interpreters (``python -c``), on the
MNIST-like file, numba's on-disk cache warm (a first run per machine compiles):

- ``kernels (background load)``: the default. The first batch is decoded by the numpy
  paths while numba loads in a background thread.
- ``kernels (waited for)``: the kernels loaded before the first batch (``kernels.wait()``),
  i.e. what a start costs when the load is in the way.
- ``TFE_KERNELS=0``: numpy paths only, numba never imported.

Also the size on disk of numba and llvmlite (what the default dependency adds to a plain
install), the time from the first batch until the kernels are in use, and a new
install's first script: the wall time of a whole short script (import, first batch, exit)
with numba's cache empty (a fresh ``NUMBA_CACHE_DIR`` per run; a builder process then
compiles in the background, and the script must not wait for it) against the same with
the cache warm and with ``TFE_KERNELS=0``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib import metadata
from pathlib import Path

from benchmarks.common import repeats
from benchmarks.data import mnist_like

_CHILD = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    import tfrecord_engine as tfe
    from tfrecord_engine import kernels
    t1 = time.perf_counter()
    if sys.argv[2] == "wait":
        kernels.wait()
    t2 = time.perf_counter()
    spec = {"image": tfe.FixedLenFeature([], "string"), "label": tfe.FixedLenFeature([], "int64")}
    batch = next(iter(tfe.RecordDataset(sys.argv[1], features=spec).batches(256)))
    assert len(batch["label"]) == 256
    t3 = time.perf_counter()
    kernels.wait()
    t4 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "first": t3 - t1, "ready_after": t4 - t3}))
    """
)


def _run(path: str, mode: str) -> dict[str, float]:
    env = dict(os.environ)
    if mode == "off":
        env["TFE_KERNELS"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, path, mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


_SCRIPT = textwrap.dedent(
    """
    import sys
    import tfrecord_engine as tfe
    spec = {"image": tfe.FixedLenFeature([], "string"), "label": tfe.FixedLenFeature([], "int64")}
    batch = next(iter(tfe.RecordDataset(sys.argv[1], features=spec).batches(256)))
    assert len(batch["label"]) == 256
    """
)


def _script_wall(path: str, mode: str) -> float:
    """Seconds from starting a whole short script to its end (its exit included)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if mode == "cold":
            env["NUMBA_CACHE_DIR"] = cache
        elif mode == "off":
            env["TFE_KERNELS"] = "0"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", _SCRIPT, path], check=True, env=env)
        wall = time.perf_counter() - start
        # Let the builder the cold run started finish before the next run is timed.
        deadline = time.monotonic() + 600
        while mode == "cold" and time.monotonic() < deadline:
            found = list(Path(cache).rglob("tfe-kernels-*"))
            if any(f.suffix == ".ok" for f in found) and not any(
                f.name.endswith(".lock") for f in found
            ):
                break
            time.sleep(0.2)
    return wall


def _dist_mib(name: str) -> float:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return 0.0
    total = 0
    for file in dist.files or ():
        located = Path(str(dist.locate_file(file)))
        if located.is_file():
            total += located.stat().st_size
    return total / 2**20


def main() -> None:
    """Prints the cold-start table."""
    path = mnist_like()
    _run(path, "wait")  # numba's cache warm (compiles on a machine's first run)
    runs = repeats(7)
    modes = [
        ("kernels (background load, the default)", "background"),
        ("kernels (waited for before the first batch)", "wait"),
        ("`TFE_KERNELS=0` (numpy paths only)", "off"),
    ]
    results: dict[str, list[dict[str, float]]] = {mode: [] for _, mode in modes}
    for _ in range(runs):  # alternating, so that load drifts hit every mode alike
        for _, mode in modes:
            results[mode].append(_run(path, mode))
    print(f"Fresh interpreters, {runs} runs each; seconds, best / median.\n")
    print("| start | import tfrecord_engine | first batch of 256 after the import |")
    print("|---|---:|---:|")
    for label, mode in modes:
        imports = [r["import"] for r in results[mode]]
        firsts = [r["first"] for r in results[mode]]
        print(
            f"| {label} | {min(imports):.3f} / {statistics.median(imports):.3f} "
            f"| {min(firsts):.3f} / {statistics.median(firsts):.3f} |"
        )
    walls: dict[str, list[float]] = {"cold": [], "warm": [], "off": []}
    for _ in range(max(3, runs // 2)):
        for mode, times in walls.items():
            times.append(_script_wall(path, mode))
    print("\nA whole short script (import, first batch of 256, exit), seconds, best / median:\n")
    print("| numba's cache | script wall time |")
    print("|---|---:|")
    for label, mode in (
        ("empty (a new install: a builder process compiles in the background)", "cold"),
        ("warm", "warm"),
        ("`TFE_KERNELS=0` (numba never imported)", "off"),
    ):
        print(f"| {label} | {min(walls[mode]):.3f} / {statistics.median(walls[mode]):.3f} |")
    ready = [r["ready_after"] for r in results["background"]]
    print(
        f"\nKernels in use {statistics.median(ready):.2f} s (median) after the first batch "
        "under the default background load."
    )
    sizes = {name: _dist_mib(name) for name in ("numba", "llvmlite")}
    print(
        "numba's share of a plain install: "
        + ", ".join(f"{name} {mib:.0f} MiB" for name, mib in sizes.items())
        + " on disk."
    )


if __name__ == "__main__":
    main()
