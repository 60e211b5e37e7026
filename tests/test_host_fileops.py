"""The Beam-free parts of the scale-out transforms (tfrecord_engine/hosts/fileops.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tfrecord_engine as tfe
from tfrecord_engine.data.sampler import epoch_order
from tfrecord_engine.hosts.fileops import (
    PositionTable,
    ReshardLayout,
    SortedSpill,
    merge_damage,
)


@pytest.mark.parametrize("memory", [0, 50, 1 << 20])
def test_sorted_spill_gives_records_back_in_position_order(memory: int) -> None:
    rng = np.random.default_rng(0)
    positions = rng.permutation(300).tolist()
    records = [b"%05d" % p + b"." * (p % 7) for p in positions]
    with SortedSpill(memory) as spill:
        for a in range(0, 300, 37):
            spill.add(positions[a : a + 37], records[a : a + 37])
        assert spill.spilled is (memory < 1 << 20)
        folder = spill._folder
        assert list(spill) == sorted(records)
    assert folder is None or not os.path.exists(folder)  # the spill folder is gone


def test_sorted_spill_refuses_mismatched_lengths() -> None:
    with SortedSpill() as spill, pytest.raises(tfe.InvalidArgumentError):
        spill.add([1, 2], [b"a"])


def test_position_table_is_the_inverse_of_the_engine_permutation() -> None:
    layout = ReshardLayout(("a", "b"), (7, 0), 3, True, 5)
    table = PositionTable(layout)
    order = epoch_order(7, shuffle=True, seed=5)
    positions = table.positions(0, 7)
    assert order[positions].tolist() == list(range(7))  # record g sits at positions[g]
    assert table.shards_of(np.arange(7)).tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert layout.shard_sizes() == [2, 2, 3]
    # More shards than records: the empty shards get no position.
    assert PositionTable(ReshardLayout(("a",), (2,), 4, False, 0)).shards_of([0, 1]).tolist() == [
        1,
        3,
    ]
    with pytest.raises(tfe.InvalidArgumentError):
        ReshardLayout(("a", "a"), (1, 1), 1, True, 0)


def test_merge_damage_joins_adjacent_regions_only() -> None:
    r = [
        tfe.DamageReport("f", 5, 100, 20, "x"),
        tfe.DamageReport("f", 1, 10, 5, "y"),
        tfe.DamageReport("f", 6, 120, 30, "z"),
        tfe.DamageReport("f", 9, 400, None, "w"),
    ]
    got = merge_damage(r)
    assert [(d.record_index, d.offset, d.bytes_skipped, d.reason) for d in got] == [
        (1, 10, 5, "y"),
        (5, 100, 50, "x"),
        (9, 400, None, "w"),
    ]
