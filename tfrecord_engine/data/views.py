"""Views of a dataset: some of its records, in a chosen order, as a dataset of their own.

``ds.select(indices)``, ``ds.filter(...)``, ``ds.where(...)``, ``ds.take(n)``,
``ds.skip(n)`` and ``ds.train_test_split(...)`` return a
:class:`~tfrecord_engine.RecordDataset` whose records are the selected ones: every
dataset operation works on it (``len``, ``ds[i]``, ``ds[list]``, ``__getitems__``,
iteration, ``batches`` with shuffles, epochs, shards, state and decode workers, the
PyTorch host, the tf.data bridge, Grain), in its own numbering ``0 .. len(view) - 1``.
A view holds a :class:`Selection`: the global record number of each of its records in
the files (one ``int64`` per record); a view of a view selects from those. It reads
nothing when it is made, except for ``filter``/``where`` over a column that is not in
the index (below).

Columns (:func:`index_column`, ``ds["label"]``) come from the index columns when every
file's index has them (:mod:`tfrecord_engine.index.columns`: no record is read), else
from one read of the feature over the dataset.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, OutOfRangeError
from ..index.columns import (
    RAISE,
    ColumnKind,
    ColumnRecorder,
    IndexColumn,
    missing_error,
)
from ..index.sidecar import Index
from .samples import sample_of, samples_of

__all__ = [
    "RAISE",
    "Selection",
    "ViewSource",
    "column_by_name",
    "filter_records",
    "index_column",
    "read_column",
    "select",
    "skip",
    "take",
    "train_test_split",
    "where",
]

IntArray = npt.NDArray[np.int64]
#: Records read together when a column is read from the records.
_READ_CHUNK = 4096


class Selection:
    """The records of a view: the global record number (across the dataset's files)
    of each of its records, in the view's order. Read-only."""

    __slots__ = ("_digest", "records")

    def __init__(self, records: IntArray) -> None:
        records = np.array(records, dtype=np.int64).reshape(-1)
        records.flags.writeable = False
        self.records = records
        self._digest: str | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __getstate__(self) -> dict[str, Any]:
        return {"records": self.records}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["records"])  # type: ignore[misc]

    @property
    def digest(self) -> str:
        """A short digest of the selected records (part of the dataset's identity, as
        Grain's checkpoints compare it)."""
        if self._digest is None:
            self._digest = hashlib.sha256(self.records.tobytes()).hexdigest()[:16]
        return self._digest

    def record(self, i: int) -> int:
        """The global record number of view record ``i`` (negatives count from the end).

        Raises:
            OutOfRangeError: ``i`` outside ``[-len, len)``.
        """
        n = len(self.records)
        if not -n <= i < n:
            raise OutOfRangeError(f"record index {i} out of range for a dataset of {n} records")
        return int(self.records[i])

    def lookup(self, key: Sequence[Any] | npt.NDArray[Any]) -> list[int] | None:
        """The global record numbers of view records ``key`` when they are all valid
        int indices, else ``None`` (the caller's slow path then raises the error)."""
        idx = np.asarray(key)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            return None
        n = len(self.records)
        idx = idx.astype(np.int64)
        if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
            return None
        out: list[int] = self.records[np.where(idx < 0, idx + n, idx)].tolist()
        return out


class ViewSource(Protocol):
    """What views need of a dataset (:class:`~tfrecord_engine.RecordDataset` is one)."""

    @property
    def features(self) -> Mapping[str, Any] | None:
        """The feature specs, or ``None`` for raw records."""

    @property
    def indexes(self) -> list[Index]:
        """The index of every file, in file order."""

    def __len__(self) -> int: ...

    def _normalize(self, indices: IntArray) -> IntArray:
        """Indices checked against the dataset's length, negatives wrapped."""

    def _records(self, indices: IntArray) -> IntArray:
        """The global record numbers of (normalized) dataset indices."""

    def _with_view(self: V, view: Selection) -> V:
        """A dataset over the same files holding the records of ``view``."""

    def read_raw(self, indices: Sequence[int] | IntArray) -> list[bytes]:
        """The raw records at ``indices``."""

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """One sample per record."""


V = TypeVar("V", bound=ViewSource)


def _positions(ds: ViewSource) -> IntArray:
    """The global record number of each of the dataset's records."""
    return ds._records(np.arange(len(ds), dtype=np.int64))


def _view(ds: V, positions: IntArray) -> V:
    """A view of ``ds`` holding its records at (normalized) ``positions``."""
    return ds._with_view(Selection(ds._records(positions)))


# ---- making views -----------------------------------------------------------------


def select(ds: V, indices: Sequence[int] | npt.NDArray[Any] | slice) -> V:
    """The records of ``ds`` at ``indices`` (ints, negatives from the end, repeats
    allowed; a boolean mask of ``len(ds)``; or a slice), in that order."""
    n = len(ds)
    if isinstance(indices, slice):
        return _view(ds, np.arange(n, dtype=np.int64)[indices])
    idx = np.asarray(indices)
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise InvalidArgumentError(
                f"a boolean mask selects from {n} records and needs shape ({n},), got {idx.shape}"
            )
        return _view(ds, np.flatnonzero(idx).astype(np.int64))
    if idx.size == 0:
        return _view(ds, np.zeros(0, np.int64))
    if idx.dtype.kind not in "iu" or idx.ndim != 1:
        raise InvalidArgumentError(
            f"select takes a 1-D sequence of int indices, a boolean mask or a slice, got "
            f"an array of {idx.dtype} with shape {idx.shape}"
        )
    return _view(ds, ds._normalize(idx.astype(np.int64)))


def _count(n: int, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < -1:
        raise InvalidArgumentError(
            f"{what} takes a count >= 0, or -1 for all records (as tf.data), got {n!r}"
        )
    return int(n)


def take(ds: V, n: int) -> V:
    """The first ``n`` records (all of them for ``n = -1`` or ``n >= len``), as
    ``tf.data.Dataset.take``."""
    count = _count(n, "take")
    total = len(ds)
    return _view(ds, np.arange(total if count == -1 else min(count, total), dtype=np.int64))


def skip(ds: V, n: int) -> V:
    """The records after the first ``n`` (none for ``n = -1``), as
    ``tf.data.Dataset.skip``."""
    count = _count(n, "skip")
    total = len(ds)
    return _view(ds, np.arange(total if count == -1 else min(count, total), total, dtype=np.int64))


def filter_records(
    ds: V,
    predicate: Callable[[Any], Any],
    columns: str | Sequence[str],
    missing: Any = RAISE,
) -> V:
    """The records whose columns ``predicate`` accepts, in order.

    ``predicate`` gets the whole columns at once: the array of ``columns`` when it is
    one name, else a dict of arrays; it returns a boolean array with one entry per
    record. Columns come from the index when every file's index has them, else from
    one read of the records (see :func:`read_column`).
    """
    names = [columns] if isinstance(columns, str) else list(columns)
    if not names:
        raise InvalidArgumentError("filter needs the columns its predicate reads")
    values = {name: _filled(ds, _column(ds, name), missing) for name in names}
    mask = np.asarray(predicate(values[names[0]] if isinstance(columns, str) else values))
    if mask.dtype != np.bool_ or mask.shape != (len(ds),):
        raise InvalidArgumentError(
            f"a filter predicate returns a boolean array of one entry per record "
            f"(shape ({len(ds)},)), got {mask.dtype} of shape {mask.shape}"
        )
    return _view(ds, np.flatnonzero(mask).astype(np.int64))


def where(ds: V, conditions: Mapping[str, Any]) -> V:
    """The records whose columns equal the given values (a list, tuple, set or array:
    any of them), in order. A record without a value of a column never matches."""
    if not conditions:
        raise InvalidArgumentError("where needs at least one column=value condition")
    keep = np.ones(len(ds), dtype=np.bool_)
    for name, wanted in conditions.items():
        column = _column(ds, name)
        many = isinstance(wanted, (list, tuple, set, frozenset, np.ndarray))
        items = list(wanted) if many else [wanted]
        if column.kind == "bytes":
            items = [w.encode("utf-8") if isinstance(w, str) else w for w in items]
        kind = (bytes,) if column.kind == "bytes" else (int, np.integer)
        odd = [w for w in items if not isinstance(w, kind) or isinstance(w, bool)]
        if odd:
            raise InvalidArgumentError(
                f"where({name}=...): column {name!r} holds {column.kind} values, got {odd[0]!r}"
            )
        match = np.zeros(len(ds), dtype=np.bool_)
        for item in items:
            match |= column.values == item
        keep &= match & column.present
    return _view(ds, np.flatnonzero(keep).astype(np.int64))


def train_test_split(
    ds: V,
    test_size: float | None = None,
    train_size: float | None = None,
    *,
    seed: int = 0,
    shuffle: bool = True,
    stratify_by_column: str | None = None,
) -> tuple[V, V]:
    """``(train, test)`` views: disjoint, of exact sizes, each in file order.

    Sizes as Hugging Face's ``Dataset.train_test_split`` (and scikit-learn's): a float
    in ``(0, 1)`` is a fraction (the test set's rounded up, the train set's down), an
    int a count; one left out is the rest; both left out: ``test_size=0.25``.
    ``shuffle=True`` draws the test records with a generator seeded by ``seed``;
    ``False`` takes the first records for train and the next for test.
    ``stratify_by_column`` splits each class of that column in the same proportions
    (counts rounded so that the totals are exact).
    """
    n = len(ds)
    n_test, n_train = _sizes(n, test_size, train_size)
    if not shuffle:
        if stratify_by_column is not None:
            raise InvalidArgumentError("stratify_by_column needs shuffle=True")
        train = np.arange(n_train, dtype=np.int64)
        test = np.arange(n_train, n_train + n_test, dtype=np.int64)
        return _view(ds, train), _view(ds, test)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([_seed(seed), 0x5B1])))
    if stratify_by_column is None:
        order = rng.permutation(n).astype(np.int64)
        test, train = order[:n_test], order[n_test : n_test + n_train]
    else:
        labels = _filled(ds, _column(ds, stratify_by_column), RAISE)
        test, train = _stratified(labels, n_test, n_train, rng)
    return _view(ds, np.sort(train)), _view(ds, np.sort(test))


def _seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidArgumentError(f"seed must be an int >= 0, got {seed!r}")
    return int(seed)


def _size(value: float | None, n: int, what: str, *, up: bool) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be a fraction in (0, 1) or a count, got {value!r}")
    if isinstance(value, (int, np.integer)):
        if not 0 <= value <= n:
            raise InvalidArgumentError(f"{what}={value} is not a count of 0 to {n} records")
        return int(value)
    if isinstance(value, (float, np.floating)) and 0.0 < value < 1.0:
        return math.ceil(value * n) if up else math.floor(value * n)
    raise InvalidArgumentError(f"{what} must be a fraction in (0, 1) or a count, got {value!r}")


def _sizes(n: int, test_size: float | None, train_size: float | None) -> tuple[int, int]:
    if test_size is None and train_size is None:
        test_size = 0.25
    n_test = _size(test_size, n, "test_size", up=True)
    n_train = _size(train_size, n, "train_size", up=False)
    if n_test is None:
        assert n_train is not None
        n_test = n - n_train
    if n_train is None:
        n_train = n - n_test
    if n_test + n_train > n:
        raise InvalidArgumentError(
            f"test_size and train_size ask for {n_test} + {n_train} records of {n}"
        )
    if n and (n_test == 0 or n_train == 0):
        raise InvalidArgumentError(
            f"a split of {n} records into {n_train} train and {n_test} test records "
            "leaves one empty: choose other sizes"
        )
    return n_test, n_train


def _shares(counts: IntArray, total: int) -> IntArray:
    """``total`` split over the classes in proportion to ``counts`` (largest remainders,
    ties to the first class), summing to ``total`` exactly."""
    n = int(counts.sum())
    exact = counts * total / max(n, 1)
    share = np.floor(exact).astype(np.int64)
    left = total - int(share.sum())
    share[np.argsort(-(exact - share), kind="stable")[:left]] += 1
    return np.minimum(share, counts)


def _stratified(
    labels: npt.NDArray[Any], n_test: int, n_train: int, rng: np.random.Generator
) -> tuple[IntArray, IntArray]:
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    del classes
    test_share = _shares(counts, n_test)
    train_share = _shares(counts - test_share, n_train)
    test: list[IntArray] = []
    train: list[IntArray] = []
    for c in range(len(counts)):
        members = np.flatnonzero(inverse.reshape(-1) == c).astype(np.int64)
        members = members[rng.permutation(len(members))]
        a, b = int(test_share[c]), int(train_share[c])
        test.append(members[:a])
        train.append(members[a : a + b])
    return np.concatenate([np.zeros(0, np.int64), *test]), np.concatenate(
        [np.zeros(0, np.int64), *train]
    )


# ---- columns ----------------------------------------------------------------------


def _file_starts(indexes: Sequence[Index]) -> IntArray:
    return np.concatenate([[0], np.cumsum([len(i) for i in indexes])]).astype(np.int64)


def _locate(ds: ViewSource, position: int) -> tuple[Index, int]:
    """The index and file record number of dataset record ``position``."""
    indexes = ds.indexes
    record = int(ds._records(np.array([position], np.int64))[0])
    starts = _file_starts(indexes)
    f = int(np.searchsorted(starts, record, "right")) - 1
    return indexes[f], record - int(starts[f])


def _column(ds: ViewSource, name: str) -> IndexColumn:
    """Column ``name`` of every record of ``ds`` (in its order): from the index when
    every file's index has it, else read from the records."""
    if all(name in idx.columns for idx in ds.indexes):
        return _indexed(ds, name)
    return read_column(ds, name)


def _indexed(ds: ViewSource, name: str) -> IndexColumn:
    """Column ``name`` of ``ds`` from its files' indexes (each must have it)."""
    indexes = ds.indexes
    lacking = [idx.data_path for idx in indexes if name not in idx.columns]
    if lacking:
        have = sorted(set().union(*(idx.columns for idx in indexes)))
        raise InvalidArgumentError(
            f"{lacking[0]}: its index has no column {name!r} ({len(lacking)} of "
            f"{len(indexes)} files lack it; columns in some index: {have}): index the "
            f"files with `tfr index --columns {name} FILES...`, or "
            f"tfe.Index.build(path, columns=[{name!r}]).save(), or write them with "
            f"TFRecordWriter(..., index=True, index_columns=[{name!r}])"
        )
    parts = [idx.columns[name] for idx in indexes]
    # A file whose column holds no value at all takes the kind of the others.
    kinds = {c.kind for c in parts if bool(c.present.any())}
    if len(kinds) > 1:
        raise InvalidArgumentError(
            f"index column {name!r} holds int64 values in some files and bytes in others"
        )
    kind: ColumnKind = kinds.pop() if kinds else parts[0].kind
    values = np.concatenate([_values_as(c, kind) for c in parts]) if parts else np.zeros(0)
    status = np.concatenate([c.status for c in parts]) if parts else np.zeros(0, np.uint8)
    positions = _positions(ds)  # (a view's records, in its order)
    return IndexColumn(name, kind, values[positions], status[positions])


def _values_as(column: IndexColumn, kind: ColumnKind) -> npt.NDArray[Any]:
    if column.kind == kind:
        return column.values
    empty: npt.NDArray[Any] = (
        np.zeros(len(column), np.int64) if kind == "int64" else np.full(len(column), b"", object)
    )
    return empty


def read_column(ds: ViewSource, name: str) -> IndexColumn:
    """Column ``name`` read from the records (one read of the dataset), with the
    semantics of an index column: a scalar int64 or bytes feature, each record's
    status noted (see :mod:`tfrecord_engine.index.columns`)."""
    recorder = ColumnRecorder(((name, None),))
    n = len(ds)
    for a in range(0, n, _READ_CHUNK):
        recorder.add(ds.read_raw(np.arange(a, min(a + _READ_CHUNK, n), dtype=np.int64)))
    return recorder.finish()[0]


def _filled(ds: ViewSource, column: IndexColumn, missing: Any) -> npt.NDArray[Any]:
    """The values of ``column``; a record without one raises (``missing`` is
    :data:`RAISE`) or gets ``missing``."""
    present = column.present
    if (
        column.kind == "int64"
        and missing is not RAISE
        and (isinstance(missing, bool) or not isinstance(missing, (int, np.integer)))
    ):
        raise InvalidArgumentError(
            f"index column {column.name!r} holds int64 values: missing= must be an "
            f"int, got {missing!r}"
        )
    if bool(present.all()):
        return column.values
    if missing is RAISE:
        position = int(np.argmin(present))
        idx, i = _locate(ds, position)
        raise missing_error(
            column,
            position,
            path=idx.data_path,
            record=i,
            offset=int(idx.offsets[i]),
            dataset_index=position,
        )
    out = column.values.copy()
    out[~present] = missing
    filled: npt.NDArray[Any] = out
    return filled


def index_column(ds: ViewSource, name: str, missing: Any = RAISE) -> npt.NDArray[Any]:
    """The values of index column ``name`` for every record of ``ds``, in its order,
    from the files' indexes (no record is read). See ``RecordDataset.index_column``."""
    return _filled(ds, _indexed(ds, name), missing)


def column_by_name(ds: ViewSource, key: str) -> Any:
    """``ds[key]``: the column of feature ``key`` for every record, in order.

    From the index column when every file's index has it (a scalar
    ``FixedLenFeature`` spec's ``default_value`` then fills records without one);
    else from one read of the feature with the dataset's spec for it (dense kinds give
    one array, the others a list with one value per record); else, for a raw dataset
    or a key without a spec, one read of it as a scalar int64 or bytes feature.
    """
    spec = None if ds.features is None else ds.features.get(key)
    if all(key in idx.columns for idx in ds.indexes):
        missing = _scalar_default(spec)
        if spec is None or missing is not None:
            return index_column(ds, key, RAISE if missing is None else missing)
    if spec is not None:
        return _read_feature(ds, key, spec)
    return _filled(ds, read_column(ds, key), RAISE)


def _scalar_default(spec: Any) -> Any:
    """What fills records without a value when ``spec`` is answered from an index
    column: ``RAISE`` for a required scalar ``FixedLenFeature``, its default when it has
    one, ``None`` when the index column cannot answer the spec."""
    if type(spec).__name__ != "FixedLenFeature" or tuple(spec.shape) not in ((), (1,)):
        return None
    if getattr(spec.dtype, "name", spec.dtype) not in ("int64", "string"):
        return None
    if tuple(spec.shape) == (1,):
        return None  # (its values would be rows of one: a read gives those)
    default = spec.default_value
    return RAISE if default is None else default[0]


def _read_feature(ds: ViewSource, key: str, spec: Any) -> Any:
    """Feature ``key`` of every record, decoded with ``spec`` (one read): an array for
    the dense kinds, else a list of one sample value per record."""
    batch = importlib.import_module("..example.batch", __package__)
    decoder = batch.BatchDecoder({key: spec})
    n = len(ds)
    dense: list[npt.NDArray[Any]] = []
    rows: list[Any] = []
    for a in range(0, n, _READ_CHUNK):
        records = ds.read_raw(np.arange(a, min(a + _READ_CHUNK, n), dtype=np.int64))
        columns = decoder.columns(*batch.join_records(records))
        if columns is None:
            decoder.decode_exact(records)  # raises the error the chunk holds
        assembled = decoder.assemble(columns, 0, len(records))
        if isinstance(assembled[key], np.ndarray):
            dense.append(assembled[key])  # (the spec's kind decides: every chunk alike)
        else:

            def one(i: int, records: list[bytes] = records) -> Any:
                single = importlib.import_module("..example.parse", __package__)
                return sample_of({key: spec}, single.parse_single_example(records[i], {key: spec}))

            got = samples_of({key: spec}, assembled, columns, len(records), one)
            rows += [s[key] for s in got]
    if dense:
        return np.concatenate(dense)
    if rows or n:
        return rows
    empty = decoder.decode_records([])[key]
    return empty if isinstance(empty, np.ndarray) else []
