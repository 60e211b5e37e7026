"""``make bench``: every benchmark, ours vs TensorFlow in one process, printed as tables."""

from __future__ import annotations

import os
import platform

from benchmarks import bench_framing


def main() -> None:
    print(f"# tfrecord-engine benchmarks ({platform.machine()}, {os.cpu_count()} cores)\n")
    for module in (bench_framing,):
        print(module.run())
        print()


if __name__ == "__main__":
    main()
