"""A new user's first hour, scripted: each mistake gets a message that names the file,
the record and the offset, or says what to do (issue 34, items 1, 4, 5 and 6).

Two shards of one dataset, one of the wrong kind: every read path (``ds[i]``,
``ds[list]``, ``__getitems__``, iteration, ``batches`` in order, shuffled, without
read-ahead and in decode workers) names the failing record's file, index, offset and
dataset index around TensorFlow's own text. Damage is one exception with a hint, and a
damaged GZIP file is reported at the same record by every path. Wrong arguments fail at
the call, with what was expected.
"""

from __future__ import annotations

import doctest
import functools
import gzip
import importlib
import pickle
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecord_engine as tfe
from tfrecord_engine import errors
from tfrecord_engine.data import arguments, located
from tfrecord_engine.records import framing
from tfrecord_engine.records.compression import READ_CHUNK

N = 300  # records per shard
SPEC = {"label": tfe.FixedLenFeature([], "int64")}
TEXT = "Feature: label (data type: int64) is required but could not be found."


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``a.tfrecord`` holds labels; ``b.tfrecord`` (records 300..599) does not."""
    root = tmp_path_factory.mktemp("shards")
    a, b = root / "a.tfrecord", root / "b.tfrecord"
    with tfe.TFRecordWriter(a, index=True) as w:
        w.write_many(tfe.encode_example({"label": [i], "x": [float(i)]}) for i in range(N))
    with tfe.TFRecordWriter(b, index=True) as w:
        w.write_many(tfe.encode_example({"other": [i] * (1 + i % 3)}) for i in range(N))
    return a, b


def _raised(call: Callable[[], object]) -> BaseException:
    with pytest.raises(Exception) as err:  # noqa: PT011 - each test checks what it got
        call()
    return err.value


def _check_place(err: BaseException, b: Path) -> tfe.ExampleParseError:
    """``err`` names a record of ``b`` (the shard without labels) exactly."""
    assert isinstance(err, tfe.ExampleParseError), repr(err)
    assert err.path == str(b)
    assert err.dataset_index is not None
    assert err.record_index is not None
    assert err.dataset_index == N + err.record_index
    offsets = tfe.Index.load(b).offsets
    assert err.record_offset == int(offsets[err.record_index])
    where = f"{b}: record {err.record_index} at offset {err.record_offset}"
    assert str(err).startswith(f"{where} (dataset index {err.dataset_index}): ")
    assert TEXT in err.reason  # TensorFlow's text, whole
    assert f"{err.reason} This record has no feature 'label'" in str(err)
    assert "tfr schema" in str(err)
    return err


PATHS: dict[str, Callable[[tfe.RecordDataset], object]] = {
    "ds[i]": lambda ds: ds[410],
    "ds[-i]": lambda ds: ds[-5],
    "ds[few]": lambda ds: ds[[0, 410, 1]],
    "ds[many]": lambda ds: ds[list(range(250, 450))],
    "ds[slice]": lambda ds: ds[290:310],
    "getitems few": lambda ds: ds.__getitems__([3, 333]),
    "getitems many": lambda ds: ds.__getitems__(list(range(599, 199, -1))),
    "iteration": list,
    "batches": lambda ds: list(ds.batches(64)),
    "batches shuffled": lambda ds: list(ds.batches(64, shuffle=True, seed=3)),
    "batches readahead=0": lambda ds: list(ds.batches(64, readahead=0)),
    "batches padded": lambda ds: list(ds.batches(64, pad_remainder=True, shuffle=True)),
}


@pytest.mark.parametrize("path", PATHS)
def test_parse_errors_name_file_record_and_offset(shards: tuple[Path, Path], path: str) -> None:
    a, b = shards
    ds = tfe.RecordDataset([a, b], SPEC)
    err = _check_place(_raised(lambda: PATHS[path](ds)), b)
    if path == "ds[i]":
        assert (err.record_index, err.dataset_index) == (110, 410)
    if path in ("batches", "iteration", "ds[many]", "ds[slice]"):
        assert err.record_index == 0  # the first record without a label
    assert err.__cause__ is None
    assert not err.__suppress_context__
    assert err.__context__ is None


def test_a_parse_error_in_a_decode_worker_names_its_record(shards: tuple[Path, Path]) -> None:
    a, b = shards
    with tfe.RecordDataset([a, b], SPEC) as ds:
        err = _raised(lambda: list(ds.batches(50, shuffle=True, workers=1)))
    _check_place(err, b)


def test_located_parse_errors_pickle_with_their_place() -> None:
    err = tfe.MalformedExampleError("bad varint", offset=7, key="k", index=2)
    err.locate("a.tfrecord", 3, 96, dataset_index=13, hint="Run `tfr schema a.tfrecord`.")
    err.locate("a.tfrecord", 3, 96, dataset_index=13, hint="Run `tfr schema a.tfrecord`.")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is tfe.MalformedExampleError
    assert (
        str(back)
        == str(err)
        == (
            "a.tfrecord: record 3 at offset 96 (dataset index 13): bad varint. "
            "Run `tfr schema a.tfrecord`."
        )
    )
    assert (back.path, back.record_index, back.record_offset, back.dataset_index) == (
        "a.tfrecord",
        3,
        96,
        13,
    )
    assert (back.offset, back.key, back.index, back.reason) == (7, "k", 2, "bad varint")


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"x": tfe.FixedLenFeature([], "int64")}, "stores 'x' as float32 values"),
        ({"x": tfe.FixedLenFeature([2], "float32")}, "VarLenFeature"),
    ],
)
def test_hints_name_the_spec_that_fits(tmp_path: Path, spec: dict[str, Any], want: str) -> None:
    path = tmp_path / "f.tfrecord"
    with tfe.TFRecordWriter(path) as w:
        w.write_many(tfe.encode_example({"x": [1.5]}) for _ in range(10))
    ds = tfe.RecordDataset(path, spec)
    for call in (lambda: ds[4], lambda: list(ds.batches(3))):
        err = _raised(call)
        assert isinstance(err, tfe.ExampleParseError)
        assert want in str(err)
        assert str(err).startswith(f"{path}: record ")


def _framed_damage(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "u.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(bytes([i % 256]) * 100 for i in range(300))
    blob = bytearray(path.read_bytes())
    blob[63 * 116 + 20] ^= 0x55  # a data byte of record 63
    path.write_bytes(bytes(blob))
    return path, 63 * 116


@pytest.mark.parametrize("readahead", [0, 2])
def test_damage_is_one_exception_with_what_to_do(tmp_path: Path, readahead: int) -> None:
    path, offset = _framed_damage(tmp_path)
    err = _raised(lambda: list(tfe.RecordDataset(path).batches(10, readahead=readahead)))
    assert isinstance(err, tfe.CorruptedRecordError)
    assert (err.record_index, err.offset) == (63, offset)
    assert "on_damage='skip'" in str(err)
    assert f"tfr repair {path}" in str(err)
    text = "".join(traceback.format_exception(err))
    assert text.count("Traceback") == 1
    assert text.count("data CRC mismatch") == 1


def test_damage_hints_at_first_use_and_random_access(tmp_path: Path) -> None:
    path = tmp_path / "h.tfrecord"
    with tfe.TFRecordWriter(path) as w:  # no index: the first use builds it
        w.write_many([b"x" * 50] * 20)
    blob = bytearray(path.read_bytes())
    blob[5 * 66 + 3] ^= 1  # record 5's length field
    path.write_bytes(bytes(blob))
    err = _raised(lambda: len(tfe.RecordDataset(path)))
    assert isinstance(err, tfe.DataLossError)
    assert err.record_index == 5
    assert "on_damage='skip'" in str(err)
    assert "tfr repair" in str(err)
    path = tmp_path / "s.tfrecord"
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many([b"y" * 50] * 20)
    skipping = tfe.RecordDataset(path, on_damage="skip")
    assert len(skipping) == 20  # indexed; then damaged in place
    blob = bytearray(path.read_bytes())
    blob[5 * 66 + 20] ^= 1  # record 5's data
    with open(path, "r+b") as f:
        f.write(bytes(blob))
    err = _raised(lambda: skipping[5])
    assert "raises under every on_damage policy" in str(err)
    assert "tfr repair" in str(err)


def _gzip_records() -> list[bytes]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 4, 500, dtype=np.uint8).tobytes() for _ in range(400)]


@pytest.mark.parametrize("at", [20_000, 25_000, 40_000])
@pytest.mark.parametrize("indexed", [False, True])
def test_gzip_damage_is_named_at_the_same_record_by_every_path(
    tmp_path: Path, at: int, indexed: bool
) -> None:
    path = tmp_path / "g.tfrecord.gz"
    records = _gzip_records()
    if indexed:
        with tfe.TFRecordWriter(path, "GZIP", index=True) as w:
            w.write_many(records)
    else:  # as TensorFlow writes it: one deflate stream, no index
        path.write_bytes(gzip.compress(b"".join(framing.frame(r) for r in records)))
    held = tfe.RecordDataset(path)
    assert len(held) == len(records)  # indexed before the damage, kept in memory
    blob = bytearray(path.read_bytes())
    blob[at] ^= 0x55
    with open(path, "r+b") as f:
        f.write(bytes(blob))

    def place(call: Callable[[], object]) -> tuple[int, int]:
        err = _raised(call)
        assert isinstance(err, tfe.DataLossError), repr(err)
        return err.record_index, err.offset

    want = place(lambda: list(tfe.read_records(path)))
    stopped: list[tfe.DamageReport] = []
    list(tfe.read_records(path, on_damage="stop", on_damage_report=stopped.append))
    assert [(d.record_index, d.offset) for d in stopped] == [want]
    fresh = tfe.RecordDataset(path, save_index=False)
    assert place(lambda: len(fresh)) == want  # the default "raise" builds its index
    # The dataset indexed before the damage inflates from its own restart points and
    # reads: the output of the read that meets the damage is dropped (it may hold
    # garbage copies of earlier frames), so it may name a later record than a stream
    # read from the start, never an earlier one; its two paths agree.
    held_at = place(lambda: list(held.batches(50)))
    assert want[0] <= held_at[0] < len(records)
    assert place(lambda: list(held)) == held_at
    held_stop: list[tfe.DamageReport] = []
    stop = tfe.RecordDataset(path, on_damage="stop", on_damage_report=held_stop.append)
    assert len(stop) == want[0]
    skipped: list[tfe.DamageReport] = []
    read = list(tfe.read_records(path, on_damage="skip", on_damage_report=skipped.append))
    skip = tfe.RecordDataset(path, on_damage="skip", on_damage_report=lambda r: None)
    assert [r for batch in skip.batches(64) for r in batch] == read


def test_records_before_damage_in_a_gzip_block_are_read(tmp_path: Path) -> None:
    path = tmp_path / "b.tfrecord.gz"
    rng = np.random.default_rng(1)
    # (Incompressible: the stream spans several 256 KiB reads.)
    records = [rng.bytes(500) for _ in range(2000)]
    path.write_bytes(gzip.compress(b"".join(framing.frame(r) for r in records)))
    blob = bytearray(path.read_bytes())
    blob[-6] ^= 1  # the GZIP trailer's CRC: every record inflates, the stream fails
    path.write_bytes(bytes(blob))
    reports: list[tfe.DamageReport] = []
    ds = tfe.RecordDataset(path, on_damage="skip", on_damage_report=reports.append)
    got = [r for batch in ds.batches(64) for r in batch]
    # The records of the reads before the last are read; the last read's output is
    # dropped with its failing check (what a damaged stream inflated is not trusted).
    assert got == records[: len(got)]
    assert len(blob) - READ_CHUNK < sum(len(framing.frame(r)) for r in got) < len(blob)
    assert [r.record_index for r in reports] == [len(got)]  # where the reading stopped
    assert ds[5] == records[5]


# ---- arguments --------------------------------------------------------------------------


def _short(err: BaseException) -> None:
    """A simple mistake: the traceback is the caller's frame and a few of ours."""
    assert len(traceback.extract_tb(err.__traceback__)) <= 5, traceback.format_tb(err.__traceback__)
    assert err.__cause__ is None
    assert err.__context__ is None or err.__suppress_context__


def test_paths_as_bytes_files_folders_and_missing_files(shards: tuple[Path, Path]) -> None:
    a, _ = shards
    assert len(tfe.RecordDataset(bytes(a))) == N  # as TensorFlow, bytes are paths
    assert tfe.RecordDataset([str(a).encode()]).paths == [str(a)]
    with open(a, "rb") as f:
        err = _raised(lambda: tfe.RecordDataset(cast(Any, f)))
    assert isinstance(err, TypeError)
    assert "pass the file's path" in str(err)
    assert repr(str(a)) in str(err)
    _short(err)
    for folder in (a.parent, f"{a.parent}/"):
        err = _raised(functools.partial(tfe.RecordDataset, folder))
        assert isinstance(err, IsADirectoryError)
        assert f"pass a glob such as '{a.parent}/*.tfrecord'" in str(err)
        _short(err)
    missing = a.parent / "nope.tfrecord"
    err = _raised(lambda: tfe.RecordDataset([a, missing]))
    assert isinstance(err, FileNotFoundError)
    assert err.filename == str(missing)
    _short(err)
    err = _raised(lambda: tfe.RecordDataset(str(a.parent / "nope-*")))
    assert isinstance(err, FileNotFoundError)
    assert "nope-*" in str(err)
    err = _raised(lambda: tfe.RecordDataset(42))  # type: ignore[arg-type]
    assert isinstance(err, TypeError)
    assert "RecordDataset('data/*.tfrecord')" in str(err)


def _item(ds: tfe.RecordDataset, key: Any) -> Any:
    return ds[key]


def test_keys_and_sizes_of_the_wrong_type(
    shards: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = shards
    for features in (None, SPEC):
        ds = tfe.RecordDataset(a, features)
        for key, text in [
            (1.0, "ds[1], not ds[1.0]"),
            (None, "a record index must be an int"),
            ([1.0, 2.0], "never rounded"),
            (np.array([1.5]), "never rounded"),
            ([True, False], "np.flatnonzero(mask)"),
            (b"label", "a record index must be an int"),
        ]:
            err = _raised(functools.partial(_item, ds, key))
            assert isinstance(err, errors.InvalidArgumentTypeError), (key, err)
            assert text in str(err), (key, str(err))
            _short(err)
        err = _raised(functools.partial(ds.__getitems__, cast(Any, [0.0, 1.0])))
        assert isinstance(err, TypeError)
        err = _raised(functools.partial(ds.batches, cast(Any, 64.0)))
        assert isinstance(err, TypeError)
        assert "batch_size=64, not batch_size=64.0" in str(err)
        _short(err)
        err = _raised(functools.partial(ds.batches, 8, workers=cast(Any, 1.5)))
        assert isinstance(err, TypeError)
        assert "workers must be an int" in str(err)
    # A string key is a column name: it goes to the column access, never int("label").
    asked: list[str] = []
    monkeypatch.setattr(tfe.RecordDataset, "_column_by_name", lambda self, k: asked.append(k))
    tfe.RecordDataset(a, SPEC)["label"]
    assert asked == ["label"]


@given(st.lists(st.integers(-N, N - 1), max_size=20), st.sampled_from([list, tuple, np.array]))
def test_integer_keys_are_taken_as_they_are(indices: list[int], kind: Any) -> None:
    got = arguments.record_indices(kind(indices) if indices or kind is not np.array else [])
    assert got.dtype == np.int64
    assert got.tolist() == indices


@given(st.lists(st.integers(-5, 5), max_size=5), st.floats(allow_nan=False), st.data())
def test_a_float_among_the_keys_is_refused(indices: list[int], x: float, data: Any) -> None:
    keys: list[Any] = list(indices)
    keys.insert(data.draw(st.integers(0, len(keys))), x)
    with pytest.raises(errors.InvalidArgumentTypeError):
        arguments.record_indices(keys)


# ---- the install story ------------------------------------------------------------------

_HIDE = """
import importlib, json, sys
for name in ("torch", "apache_beam", "hypothesis", "tensorflow", "fsspec", "llvmlite", "ray"):
    sys.modules[name] = None
out = {}
for module in ("tfrecord_engine.torch", "tfrecord_engine.beam", "tfrecord_engine.testing",
               "tfrecord_bridge", "tfrecord_engine.ray", "tfrecord_engine.kernels._numba"):
    try:
        importlib.import_module(module)
        out[module] = "imported"
    except ImportError as exc:
        out[module] = str(exc)
from tfrecord_engine.storage import remote
try:
    remote.RemoteFile("s3://bucket/a.tfrecord")
except ImportError as exc:
    out["remote"] = str(exc)
print(json.dumps(out))
"""


def test_missing_extras_say_how_to_install_them() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _HIDE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"TFE_KERNELS": "0", "PYTHONPATH": str(Path(__file__).parents[1] / "bridge")},
    )
    messages: dict[str, str] = importlib.import_module("json").loads(result.stdout)
    extras = {
        "tfrecord_engine.torch": "torch",
        "tfrecord_engine.beam": "beam",
        "tfrecord_engine.testing": "testing",
        "tfrecord_bridge": "tf",
        "tfrecord_engine.ray": "ray",
        "tfrecord_engine.kernels._numba": "fast",
        "remote": "remote",
    }
    for module, extra in extras.items():
        text = messages[module]
        assert f"pip install -e '.[{extra}]'" in text, (module, text)
        assert "from a clone" in text, (module, text)
        assert "not on PyPI" in text, (module, text)
        assert f"pip install 'tfrecord-engine[{extra}]'" not in text, (module, text)


@pytest.mark.parametrize("module", [errors, arguments, located])
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
