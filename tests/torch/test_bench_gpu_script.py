"""``benchmarks/bench_gpu.py`` runs end to end (on the CPU here: CI has no GPU), so the
script a GPU session runs by hand has not rotted: every case, GB/s, and the bound line."""

from __future__ import annotations

import re

from ..optional import require


def test_the_gpu_benchmark_runs_on_the_cpu() -> None:
    require("torch")
    from benchmarks.bench_gpu import run

    out = run(records=64, workers=0, hidden=2, repeats=1, device="cpu")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    names = [row.split("|")[1].strip() for row in rows[1:]]
    assert names == [
        "loader only (no GPU work)",
        "steps only (batch already on the GPU)",
        "copy only (pinned batch -> GPU)",
        ".to(cuda) in the loop",
        "prefetch_to_device(loader, 'cuda')",
    ]
    assert all(float(row.split("|")[5]) > 0 for row in rows[1:])  # GB/s
    assert re.search(r"^bound: the (loader|GPU steps|copy) \(\d+\.\d+ GB/s\)", out, re.M)
