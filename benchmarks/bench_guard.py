"""What reading without SIGBUS costs: this checkout against a baseline revision, one run.

python -m benchmarks.bench_guard [--base REV] [--rounds N]

The baseline (default: the revision before the guard, which read through ``mmap``) is
checked out into a temporary ``git worktree`` outside the repository. Each round runs
both sides in fresh processes, alternating, on the same files; each side keeps the best
of its runs per row, and the table gives best-of-rounds and median-of-rounds ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tfrecord_engine as tfe
from benchmarks.common import DATA_DIR, repeats

ROOT = Path(__file__).resolve().parent.parent
#: The last revision whose readers touched records through ``mmap``.
BASE = "ccc42ea"


def make_data(data: Path) -> None:
    """Raw 856-byte and 100 KB records, ~856-byte Examples, and 20 small shards."""
    if (data / "done").exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    with tfe.TFRecordWriter(data / "small.tfrecord", durable=False) as w:
        w.write_many([rng.bytes(856) for _ in range(70_000)])
    with tfe.TFRecordWriter(data / "large.tfrecord", durable=False) as w:
        w.write_many([rng.bytes(100_000) for _ in range(2_000)])
    with tfe.TFRecordWriter(data / "examples.tfrecord", durable=False) as w:
        w.write_many(tfe.encode_example({"x": [i], "b": [rng.bytes(820)]}) for i in range(70_000))
    for s in range(20):
        with tfe.TFRecordWriter(data / f"shard-{s:02d}.tfrecord", durable=False) as w:
            w.write_many([rng.bytes(856) for _ in range(2_000)])
    (data / "done").touch()


def side(code: Path, data: Path, runs: int) -> dict[str, float]:
    """One round of every row in a fresh process importing the package from ``code``."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "guard_child.py"), str(data), str(runs)],
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=data,  # not the repository: ``import tfrecord_engine`` must find ``code``'s
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help=f"baseline revision (default {BASE})")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = (DATA_DIR / "guard").resolve()
    make_data(data)
    runs = repeats(3)
    with tempfile.TemporaryDirectory(prefix="tfe-bench-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base],
            check=True,
        )
        try:
            rounds = [(side(base, data, runs), side(ROOT, data, runs)) for _ in range(args.rounds)]
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True
            )
    print(f"Baseline {args.base} (mmap) vs this checkout, {args.rounds} rounds, records/s\n")
    print("| row | baseline | guarded | ratio best | ratio median |")
    print("|---|---:|---:|---:|---:|")
    for row in rounds[0][0]:
        old = [r[0][row] for r in rounds]
        new = [r[1][row] for r in rounds]
        print(
            f"| {row} | {max(old):,.0f} | {max(new):,.0f} | {max(new) / max(old):.2f} | "
            f"{statistics.median(new) / statistics.median(old):.2f} |"
        )


if __name__ == "__main__":
    main()
