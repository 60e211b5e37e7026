"""``tfe.sample_from_datasets`` against ``tf.data.Dataset.sample_from_datasets``.

TensorFlow draws at random, so records and order can be compared only where its choice
is forced: one dataset, or weights ``[1.0, 0.0]`` (it drops zero weights). Elsewhere the
tests compare what TensorFlow guarantees too: with ``stop_on_empty_dataset=False`` every
record of every dataset once, each dataset in its own order; with ``True`` a prefix of
each dataset, ending when one is used up. The bridge reads a mix as it reads a dataset.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tfrecord_engine as tfe
from tfrecord_bridge import to_tf_dataset


def write(root: Path, name: str, n: int) -> str:
    path = str(root / f"{name}.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([b"%s:%d" % (name.encode(), i) for i in range(n)])
    return path


def tf_mix(tf: ModuleType, paths: list[str], **kwargs: Any) -> list[bytes]:
    sources = [tf.data.TFRecordDataset(p) for p in paths]
    mixed = tf.data.Dataset.sample_from_datasets(sources, **kwargs)
    return [bytes(r) for r in mixed.as_numpy_iterator()]


def our_mix(paths: list[str], **kwargs: Any) -> list[bytes]:
    mix = tfe.sample_from_datasets([tfe.RecordDataset(p) for p in paths], **kwargs)
    got = [r for b in mix.batches(7) for r in b]
    assert len(got) == len(mix)
    return got


def per_source(records: list[bytes]) -> dict[bytes, list[bytes]]:
    out: dict[bytes, list[bytes]] = {}
    for r in records:
        out.setdefault(r.split(b":")[0], []).append(r)
    return out


@pytest.mark.parametrize("stop", [False, True])
def test_one_dataset_gives_tensorflows_records_in_its_order(
    tf: ModuleType, tmp_path: Path, stop: bool
) -> None:
    paths = [write(tmp_path, "a", 23)]
    want = tf_mix(tf, paths, seed=3, stop_on_empty_dataset=stop)
    assert our_mix(paths, seed=3, stop_on_empty_dataset=stop) == want
    assert len(want) == 23


@pytest.mark.parametrize("stop", [False, True])
@pytest.mark.parametrize("sizes", [(17, 5), (4, 30), (0, 6), (9, 0)])
def test_weights_one_and_zero_give_tensorflows_records_in_its_order(
    tf: ModuleType, tmp_path: Path, stop: bool, sizes: tuple[int, int]
) -> None:
    paths = [write(tmp_path, "a", sizes[0]), write(tmp_path, "b", sizes[1])]
    kwargs: dict[str, Any] = {"weights": [1.0, 0.0], "stop_on_empty_dataset": stop}
    want = tf_mix(tf, paths, seed=1, **kwargs)
    assert our_mix(paths, seed=1, **kwargs) == want
    assert len(want) == sizes[0]  # the weight-0 dataset is dropped, in both


@pytest.mark.parametrize(
    ("sizes", "weights"),
    [
        ((30, 10, 5), [0.5, 0.3, 0.2]),
        ((3, 40), [0.9, 0.1]),
        ((12, 0, 7), None),
        ((8, 8), [1.0, 3.0]),
    ],
)
def test_going_on_after_an_empty_dataset_gives_every_record_as_tensorflow(
    tf: ModuleType, tmp_path: Path, sizes: tuple[int, ...], weights: list[float] | None
) -> None:
    paths = [write(tmp_path, "abcd"[j], n) for j, n in enumerate(sizes)]
    ours = our_mix(paths, weights=weights, stop_on_empty_dataset=False)
    for seed in (0, 1, 2):
        want = tf_mix(tf, paths, weights=weights, seed=seed, stop_on_empty_dataset=False)
        # The same records, as many, each dataset in its own order (only TF's draws differ).
        assert Counter(ours) == Counter(want)
        assert per_source(ours) == per_source(want)
    assert len(ours) == sum(sizes)


def _ends_when_one_is_used_up(records: list[bytes], sizes: dict[bytes, int]) -> bool:
    got = per_source(records)
    prefixes = all(rs == [b"%s:%d" % (name, i) for i in range(len(rs))] for name, rs in got.items())
    used_up = any(len(got.get(name, [])) == n for name, n in sizes.items())
    return prefixes and used_up and len(records) <= sum(sizes.values())


@pytest.mark.parametrize(
    ("sizes", "weights"),
    [((20, 20), None), ((30, 10, 15), [0.5, 0.25, 0.25]), ((5, 50), [3.0, 1.0])],
)
def test_stopping_on_an_empty_dataset_ends_the_pass_as_tensorflow(
    tf: ModuleType, tmp_path: Path, sizes: tuple[int, ...], weights: list[float] | None
) -> None:
    paths = [write(tmp_path, "abc"[j], n) for j, n in enumerate(sizes)]
    named = {b"abc"[j : j + 1]: n for j, n in enumerate(sizes)}
    totals = []
    for seed in range(5):
        want = tf_mix(tf, paths, weights=weights, seed=seed, stop_on_empty_dataset=True)
        assert _ends_when_one_is_used_up(want, named)
        totals.append(len(want))
    ours = our_mix(paths, weights=weights, stop_on_empty_dataset=True)
    assert _ends_when_one_is_used_up(ours, named)
    # TensorFlow stops at a random draw; the exact mix where source j's (n_j + 1)-th turn
    # comes first: by the prefix bound, at N with n_j / w_j - 1 <= N < (n_j + 1) / w_j.
    shares = [1.0] * len(sizes) if weights is None else weights
    w = [x / sum(shares) for x in shares]
    assert min(n / x for n, x in zip(sizes, w, strict=True)) - 1 <= len(ours)
    assert len(ours) < min((n + 1) / x for n, x in zip(sizes, w, strict=True))
    assert max(totals) <= sum(sizes)


def test_the_bridge_reads_a_mix_and_resumes_it_from_a_checkpoint(
    tf: ModuleType, tmp_path: Path
) -> None:
    spec = {"src": tfe.FixedLenFeature([], "int64"), "i": tfe.FixedLenFeature([], "int64")}
    datasets = []
    for j, n in enumerate((40, 16)):
        path = str(tmp_path / f"p{j}.tfrecord")
        with tfe.TFRecordWriter(path, index=True) as w:
            w.write_many(tfe.encode_example({"src": [j], "i": [i]}) for i in range(n))
        datasets.append(tfe.RecordDataset(path, features=spec))
    mix = tfe.sample_from_datasets(datasets, [0.75, 0.25], seed=2)

    def engine(epoch: int) -> list[list[tuple[int, int]]]:
        return [
            list(zip(b["src"].tolist(), b["i"].tolist(), strict=True))
            for b in mix.batches(6, shuffle=True, seed=9, epoch=epoch)
        ]

    def pairs(batch: Any) -> list[tuple[int, int]]:
        return list(zip(batch["src"].numpy().tolist(), batch["i"].numpy().tolist(), strict=True))

    data = to_tf_dataset(mix, 6, shuffle=True, seed=9)
    assert int(data.cardinality()) == len(engine(0))
    assert [pairs(b) for b in data] == engine(0)
    it = iter(data)  # epoch 1
    head = [pairs(next(it)) for _ in range(4)]
    checkpoint = tf.train.Checkpoint(iterator=it)
    saved = checkpoint.save(os.path.join(tmp_path, "ckpt"))
    restored = iter(to_tf_dataset(mix, 6, shuffle=True, seed=9))
    tf.train.Checkpoint(iterator=restored).restore(saved)
    assert head + [pairs(b) for b in restored] == engine(1)
