"""The record-shape matrix (``benchmarks.bench_shapes``): its data, its baseline, its rows."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from benchmarks import bench_shapes, shapes
from benchmarks.bench_shapes import Row
from benchmarks.shape_baselines import ProtobufDataset
from benchmarks.survey_shapes import ALL_SHAPES, SURVEY_SHAPES
from tests.optional import require

RECORDS = 96


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The benchmark data in a folder of this test's own (here and in child processes)."""
    monkeypatch.setattr(shapes, "DATA_DIR", tmp_path)
    monkeypatch.setenv("TFE_BENCH_DATA", str(tmp_path))
    return tmp_path


def test_files_differ_in_counts_orders_and_sizes(data_dir: Path) -> None:
    paths = shapes.write_shape(shapes.SHAPES["detection"], 400)
    counts = [len(tfe.RecordDataset(p)) for p in paths]
    assert sum(counts) == 400
    assert len(set(counts)) > 1
    # The first record of each file has its file's order: the files differ in it.
    firsts = {tuple(shapes.example_key_order(next(tfe.read_records(p)))) for p in paths}
    assert len(firsts) > 1
    assert shapes.check_orders(paths) > len(paths)  # records of their own order too
    mean_sizes = [np.mean([len(r) for r in tfe.read_records(p)]) for p in paths]
    assert max(mean_sizes) > 1.1 * min(mean_sizes)


@pytest.mark.parametrize("name", [n for n, s in ALL_SHAPES.items() if not s.is_sequence])
def test_protobuf_baseline_reads_what_the_engine_reads(data_dir: Path, name: str) -> None:
    """The anchor decodes the same values (else its speed would mean nothing), on the
    matrix's shapes and the survey's."""
    shape = ALL_SHAPES[name]
    paths = shapes.write_shape(shape, RECORDS)
    ours = tfe.RecordDataset(paths, features=shape.features)
    base = ProtobufDataset(paths, shape)
    for i in (0, len(base) // 2, len(base) - 1):
        mine, theirs = ours[i], base[i]
        for key, got in mine.items():
            value = np.asarray(got.values) if isinstance(got, tfe.RaggedValue) else got
            expected = theirs[key]
            if isinstance(value, bytes | list):
                assert value == expected, (name, i, key)
            else:
                np.testing.assert_array_equal(
                    np.asarray(value).reshape(-1), np.asarray(expected).reshape(-1)
                )


def test_sequence_baseline_reads_what_the_engine_reads(data_dir: Path) -> None:
    shape = shapes.SHAPES["sequence"]
    paths = shapes.write_shape(shape, RECORDS)
    raw = tfe.RecordDataset(paths)
    base = ProtobufDataset(paths, shape)
    ctx, lists = tfe.parse_single_sequence_example(raw[5], shape.features, shape.sequence_features)
    assert int(ctx["label"]) == int(base[5]["label"])
    np.testing.assert_array_equal(lists["frames"], base[5]["frames"])
    assert 5 <= len(base[5]["frames"]) <= 60


def test_the_survey_sequence_baseline_reads_what_the_engine_reads(data_dir: Path) -> None:
    shape = SURVEY_SHAPES["steps"]
    paths = shapes.write_shape(shape, RECORDS)
    ours = tfe.RecordDataset(
        paths, context_features=shape.features, sequence_features=shape.sequence_features
    )
    base = ProtobufDataset(paths, shape)
    for i in (0, len(base) - 1):
        mine, theirs = ours[i], base[i]
        assert int(mine["length"]) == int(theirs["length"]) == len(theirs["pos"])
        assert mine["doc"] == theirs["doc"]
        for key in ("pos", "vel"):
            np.testing.assert_array_equal(mine[key], theirs[key])


def test_survey_shapes_run_in_the_child_by_name(data_dir: Path) -> None:
    """``--shapes`` takes the survey's shapes: the child process finds them by name."""
    require("torch")
    shape = SURVEY_SHAPES["pose"]
    shapes.write_shape(shape, RECORDS)
    rows = bench_shapes.run_shape(shape, "torch", RECORDS, quick=True)
    _check_rows(rows)
    assert {r.shape for r in rows} == {"pose"}
    assert not set(SURVEY_SHAPES) & set(shapes.SHAPES)  # (no name taken twice)


def _row(shape: str, access: str, ratio: float, target: float | None) -> Row:
    return Row(shape, access, "k", "o", "a", 10.0, 5.0, ratio, ratio, 1.0, 1.0, target)


def test_matrix_marks_misses_and_missing_cells() -> None:
    rows = [
        _row("image", "parsed", 3.5, 3.0),
        _row("detection", "parsed", 2.0, 2.5),
        _row("image", "bridge", 1.6, 1.5),
    ]
    text = bench_shapes.matrix(rows, ["image", "detection"])
    lines = text.splitlines()
    assert lines[2] == "| parsed | - | 3.50 / 3.50 | 2.00 / 2.00 ✗ |"
    assert lines[3] == "| bridge | - | 1.60 / 1.60 | n/a |"


def _check_rows(rows: list[Row]) -> None:
    assert rows
    for r in rows:
        for value in (r.ours_rps, r.anchor_rps, r.ratio, r.ratio_median):
            assert math.isfinite(value), r
            assert value > 0, r
        assert min(r.ours_peak_mb, r.anchor_peak_mb) >= 0, r


def test_rows_without_tensorflow_give_a_number_each(data_dir: Path) -> None:
    """The random-access and PyTorch rows of one shape, in their child process."""
    require("torch")
    shapes.write_shape(shapes.SHAPES["tokens"], RECORDS)
    rows = bench_shapes.run_shape(shapes.SHAPES["tokens"], "torch", RECORDS, quick=True)
    _check_rows(rows)
    accesses = {r.access for r in rows}
    assert len(accesses) == len(rows) == 8
    assert any("workers=2" in a for a in accesses)


@pytest.mark.slow
@pytest.mark.tf
def test_quick_matrix_gives_every_row_a_number(data_dir: Path) -> None:
    """The whole quick matrix (every shape, both child processes): about two minutes."""
    require("torch")
    if os.environ.get("TFE_REQUIRE_TF") != "1":
        pytest.importorskip("tensorflow")
    text, rows = bench_shapes.run(quick=True)
    _check_rows(rows)
    per_shape = {name: [r for r in rows if r.shape == name] for name in shapes.SHAPES}
    for name, got in per_shape.items():
        # 7 TF rows + 1 bridge (Example shapes only) + 8 without TensorFlow.
        assert len(got) == 15 + (name != "sequence"), name
    assert "n/a" in text  # the SequenceExample bridge cell


@pytest.mark.parametrize("name", ["image", "sequence"])
def test_the_random_holds_ab_prints_a_row(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from benchmarks import bench_random_holds

    monkeypatch.setattr(bench_random_holds, "RECORDS", 2100)
    row = bench_random_holds.run_shape(name, rounds=1)
    cells = row.strip("| ").split(" | ")
    assert cells[0] == name
    for cell in cells[1:]:
        before, after = (float(x) for x in cell.split(" → "))
        assert min(before, after) > 0


def test_the_threshold_check_runs_on_its_held_out_shapes(data_dir: Path) -> None:
    from benchmarks import bench_thresholds

    for name, shape in [*bench_thresholds.HELD_OUT.items(), *bench_thresholds.THIRD_SET.items()]:
        assert name not in shapes.SHAPES  # (held out: never part of the matrix)
        ds = tfe.RecordDataset(shapes.write_shape(shape, 700), features=shape.features)
        rows = [
            *bench_thresholds._threads_rows(ds, shape, rounds=1),
            *bench_thresholds._walk_rows(ds, shape, rounds=1),
        ]
        assert len(rows) == 2 + 9  # (threads in order and shuffled; 9 sizes)
        assert all(row.endswith(("| right |", "| wrong |")) for row in rows)


@pytest.mark.parametrize("name", ["mixed", "captioned", "product"])
def test_the_samples_ab_prints_its_rows(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from benchmarks import bench_samples

    monkeypatch.setattr(bench_samples, "RECORDS", 700)
    rows = bench_samples._rows(name, [8, 64], rounds=1)
    assert len(rows) == 2
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert cells[0] == name
        per, one = float(cells[2]), float(cells[3])
        assert min(per, one) > 0


def test_the_columns_ab_prints_its_rows(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import bench_samples

    monkeypatch.setattr(bench_samples, "RECORDS", 700)
    (row,) = bench_samples.columns_rows("wide", [16], rounds=1)
    cells = row.strip("| ").split(" | ")
    assert cells[:2] == ["wide", "`ds[list of 16]`"]
    assert min(float(cells[2]), float(cells[3])) > 0


def test_the_templates_ab_prints_its_rows(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import bench_samples

    monkeypatch.setattr(bench_samples, "RECORDS", 700)
    monkeypatch.setattr(bench_samples, "DATA_DIR", data_dir)
    (row,) = bench_samples.templates_rows("mnist", [64], rounds=1)
    cells = row.strip("| ").split(" | ")
    assert cells[:2] == ["mnist", "`ds[list of 64]`"]
    assert min(float(cells[2]), float(cells[3])) > 0
    assert (data_dir / "samples-mnist-700.tfrecord").exists()


def test_the_dense_pool_ab_prints_its_rows_and_patches_the_choice(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_dense_pool
    from tfrecord_engine.data import epochs
    from tfrecord_engine.example import dense

    monkeypatch.setattr(bench_dense_pool, "RECORDS", 700)
    rows = bench_dense_pool.compare("tabular", rounds=1)
    assert len(rows) == len(bench_dense_pool.EPOCHS)
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert cells[0] == "tabular"
        assert min(float(x) for cell in cells[3:5] for x in cell.split(" / ")) > 0
    current = (dense.POOL_MIN_KERNEL_S, vars(epochs)["on_calling_thread"])
    assert current[1] is dense.on_calling_thread
    with bench_dense_pool._always_the_pool():
        assert dense.POOL_MIN_KERNEL_S == 0
        assert vars(epochs)["on_calling_thread"] is not current[1]
    assert (dense.POOL_MIN_KERNEL_S, vars(epochs)["on_calling_thread"]) == current


@pytest.fixture
def bridge_bench(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``benchmarks.bench_bridge_shapes`` on 600 records a shape (TensorFlow needed)."""
    if os.environ.get("TFE_REQUIRE_TF") != "1":
        pytest.importorskip("tensorflow")
    from benchmarks import bench_bridge_shapes

    monkeypatch.setattr(bench_bridge_shapes, "RECORDS", 600)
    return bench_bridge_shapes


def _labels(line: str) -> list[str]:
    """The case labels of one line of ``bench_bridge_shapes.run_shape``."""
    return [cell.split(": ")[0] for cell in line.split(": ", 1)[1].split(" | ")]


@pytest.mark.tf
def test_the_bridge_ab_measures_the_consumption_floor_when_asked(bridge_bench: Any) -> None:
    # --floor: TensorFlow's batches parsed before (.cache()), consumed alone.
    line = bridge_bench.run_shape("ragged", [0], False, 1, floor=True)
    assert _labels(line) == [
        "tf",
        "tf consumed, parsed before (cache)",
        "bridge workers=0",
        "numpy batches",
    ]


@pytest.mark.tf
def test_the_bridge_ab_prints_each_chunk_setting_with_its_faults(bridge_bench: Any) -> None:
    line = bridge_bench.run_shape("detection", [0], True, 1, chunk_batches=(None, 1))
    assert line.startswith("detection shuffled: ")
    cells = line.split(": ", 1)[1].split(" | ")
    labels = _labels(line)
    assert labels == [
        "tf",
        "bridge workers=0 chunk_batches=auto",
        "bridge workers=0 chunk_batches=1",
        "numpy batches",
    ]
    for cell in cells:
        assert cell.endswith(" faults)")
        assert float(cell.split(": ")[1].split("k/s")[0]) > 0


@pytest.mark.tf
def test_the_bridge_ab_builds_both_varlen_paths(
    bridge_bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_bridge import dataset as bridge_dataset
    from tfrecord_bridge.layout import Layout

    built: list[frozenset[str]] = []
    real_path = bridge_dataset._varlen_as_ragged

    def spy(tf: Any, specs: Any, varlen: frozenset[str] = frozenset(), **kw: Any) -> Any:
        built.append(varlen)
        return Layout(tf, specs, varlen, **kw)

    monkeypatch.setattr("tfrecord_bridge.dataset.Layout", spy)
    line = bridge_bench.run_shape("tokens", [0], False, 1, varlen=("ragged", "sparse"))
    labels = _labels(line)
    assert labels == [
        "tf",
        "bridge workers=0 varlen=ragged",
        "bridge workers=0 varlen=sparse",
        "numpy batches",
    ]
    assert built == [frozenset({"input_ids"}), frozenset()]
    assert bridge_dataset._varlen_as_ragged is real_path  # (put back after the sparse case)
    with pytest.raises(ValueError, match="ragged or sparse"):
        bridge_bench.run_shape("tokens", [0], False, 1, varlen=("coo",))


@pytest.mark.tf
def test_the_bridge_ab_builds_blocks_and_the_columns_of_before(
    bridge_bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfrecord_bridge import dataset as bridge_dataset
    from tfrecord_bridge import layout as bridge_layout
    from tfrecord_bridge.layout import Layout

    built: list[list[str]] = []

    def spy(*args: Any, **kw: Any) -> Any:
        made = Layout(*args, **kw)
        built.append([slot.kind for slot in made.slots])
        return made

    monkeypatch.setattr("tfrecord_bridge.dataset.Layout", spy)
    real = (bridge_layout.BLOCK_MIN, bridge_dataset.uses_string_rows)
    line = bridge_bench.run_shape("wide", [0], False, 1, blocks=("on", "off"))
    labels = _labels(line)
    assert labels == [
        "tf",
        "bridge workers=0 blocks=on",
        "bridge workers=0 blocks=off",
        "numpy batches",
    ]
    on, off = built
    assert on == ["block"] * 3  # int64, float32, and the strings as one blob
    assert off == ["dense"] * len(shapes.SHAPES["wide"].features)
    assert (bridge_layout.BLOCK_MIN, bridge_dataset.uses_string_rows) == real  # put back
    with pytest.raises(ValueError, match="on or off"):
        bridge_bench.run_shape("wide", [0], False, 1, blocks=("maybe",))


def test_the_malloc_ab_runs_both_settings_in_children(data_dir: Path) -> None:
    from benchmarks import bench_malloc

    rows = bench_malloc.compare("tabular", rounds=1, records=300)
    assert [r.split(" | ")[1] for r in rows] == ["256 in order", "4096 in order", "256 shuffled"]
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert cells[0] == "tabular"
        for cell in cells[2:4]:
            assert cell.endswith(" faults")
            assert min(float(x) for x in cell.split(" ms")[0].split(" / ")) > 0
        assert float(cells[4].rstrip("x")) > 0


def test_the_mix_benchmark_compares_a_mix_with_one_dataset(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_mix
    from tfrecord_engine.data import epochs, leaves

    monkeypatch.setattr(bench_mix, "RECORDS", 600)
    real = leaves.LeafSource.read_spans
    hold = epochs.files_to_hold
    threads = epochs.read_ahead_threads
    seen: list[int] = []

    def spy(*args: Any) -> int:
        seen.append(threads(*args))
        return seen[-1]

    monkeypatch.setattr(epochs, "read_ahead_threads", spy)
    lines = bench_mix.run_shape("tokens", 1, before=True)
    assert [line.split(": ")[0] for line in lines] == ["tokens in order", "tokens shuffled"]
    for line in lines:
        cells = line.split(": ", 1)[1].split(" | ")
        labels = [cell.split(" ms")[0].rsplit(" ", 3)[0] for cell in cells]
        assert labels == ["one dataset", "mix", "mix read as before"]
    # The dataset's and the mix's epochs asked for their threads; the ones read as
    # before did not (two rounds, two orders).
    assert len(seen) == 8
    assert leaves.LeafSource.read_spans is real
    assert epochs.files_to_hold is hold
    assert epochs.read_ahead_threads is spy


def test_the_chunk_benchmark_compares_whole_chunks_for_many_keys_with_bytes_only(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_chunks
    from tfrecord_engine.data import epochs

    many = epochs.MANY_KEYS
    with bench_chunks.many_keys_dataset(records=300) as ds:
        folder = Path(ds.paths[0]).parent
        line = bench_chunks.compare("many-keys", ds, rounds=1)
    assert not folder.exists()  # (nothing left where other tools look)
    assert line.startswith("many-keys (120 keys, ")
    cells = line.split(": ", 1)[1].split(" | ")
    assert cells[0].startswith("many keys, whole chunks (4096 records a chunk)")
    assert cells[1].startswith("bytes only (")
    assert float(cells[2].split(" / ")[0]) > 0
    assert many == epochs.MANY_KEYS  # put back


def test_the_list_kinds_ab_prints_a_row_a_case(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import bench_list_kinds

    monkeypatch.setattr(bench_list_kinds, "RECORDS", 400)
    rows = bench_list_kinds.compare("tokens", rounds=1)
    assert len(rows) == len(bench_list_kinds.CASES)
    assert all(row.startswith("| tokens | ") and row.endswith("x |") for row in rows)
    # The RaggedFeature spec reads the same values, with row splits for the index.
    shape = shapes.SHAPES["tokens"]
    paths = shapes.write_shape(shape, 400)
    sparse = tfe.RecordDataset(paths, features=shape.features)[0:50]["input_ids"]
    ragged = tfe.RecordDataset(paths, features=bench_list_kinds.as_ragged(shape.features))[0:50][
        "input_ids"
    ]
    assert isinstance(ragged, tfe.RaggedValue)
    np.testing.assert_array_equal(sparse.values, ragged.values)
    np.testing.assert_array_equal(
        np.bincount(sparse.indices[:, 0], minlength=50), np.diff(ragged.row_splits)
    )
