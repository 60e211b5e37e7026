"""``make bench``: every benchmark, ours vs TensorFlow (and peers), each in its own process.

Each module runs both sides in one process on the same files, alternating, best of
several runs, and prints a Markdown table with ratios. A separate process per module
keeps peak-RSS figures and TensorFlow's thread pools from leaking between them.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

MODULES = [
    "benchmarks.bench_framing",
    "benchmarks.bench_pipeline",
    "benchmarks.bench_parse",
    "benchmarks.bench_wide",
    "benchmarks.bench_index",
    "benchmarks.bench_bridge",
    "benchmarks.bench_percall",
    "benchmarks.bench_coldstart",
    "benchmarks.bench_peers",
    "benchmarks.bench_frameworks",
    "benchmarks.bench_scale",
    "benchmarks.bench_arrow",
    "benchmarks.bench_shapes",
]


def main() -> int:
    """Runs every benchmark module; returns non-zero if one failed."""
    print(f"# tfrecord-engine benchmarks ({platform.machine()}, {os.cpu_count()} cores)\n")
    failed = []
    for module in MODULES:
        print(f"## {module}\n", flush=True)
        done = subprocess.run([sys.executable, "-m", module], check=False)
        if done.returncode:
            failed.append(module)
        print(flush=True)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
