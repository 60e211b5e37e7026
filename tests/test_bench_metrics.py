"""The benchmarks' shuffle-quality column and the ``bench`` extra's contents."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_peers import labels_in_first, spearman

ROOT = Path(__file__).resolve().parents[1]


def test_spearman_is_one_for_a_sequential_read_and_minus_one_reversed() -> None:
    order = np.arange(1_000)
    assert spearman(order) == pytest.approx(1.0)
    assert spearman(order[::-1]) == pytest.approx(-1.0)


def test_spearman_is_near_zero_for_a_global_shuffle() -> None:
    order = np.random.default_rng(0).permutation(70_000)
    assert abs(spearman(order)) < 0.02


def test_spearman_stays_high_for_a_shuffle_buffer() -> None:
    """A buffer of 1,000 over 70,000 records barely moves records: rank correlation ~1."""
    rng = np.random.default_rng(0)
    buffer: list[int] = []
    out = []
    for i in range(70_000):
        buffer.append(i)
        if len(buffer) == 1_000:
            out.append(buffer.pop(int(rng.integers(len(buffer)))))
    rng.shuffle(buffer)
    order = np.asarray(out + buffer)
    assert sorted(order.tolist()) == list(range(70_000))
    assert spearman(order) > 0.99


def test_labels_in_first_counts_the_labels_of_the_first_records_output() -> None:
    labels = np.repeat(np.arange(10), 100)  # label-sorted: 100 records of each label
    assert labels_in_first(np.arange(1_000), labels) == 1
    assert labels_in_first(np.arange(50, 1_000), labels) == 2
    assert labels_in_first(np.random.default_rng(0).permutation(1_000), labels) == 10


def test_the_bench_extra_adds_only_peers() -> None:
    """``bench`` installs the readers compared with ours, never our own speed-ups (numba)."""
    found = re.search(r"^bench = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    assert found is not None
    bench = found.group(1).lower()
    assert '"tfrecord-engine[tf,torch,grain,beam,ray,arrow,spark]"' in bench
    for peer in ("tfrecord>=", "array-record>=", "nvidia-dali-cuda120>=", "google-crc32c>="):
        assert peer in bench
    assert "fast" not in bench
    assert "numba" not in bench
    assert "platform_machine == 'x86_64'" in bench
