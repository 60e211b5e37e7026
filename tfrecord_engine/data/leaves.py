"""Several datasets read as one: the records of a mix's sources under global numbers.

:class:`LeafSource` numbers the records of its datasets one after the other (dataset
``f`` holds ``[starts[f], starts[f + 1])``) and reads each group of a request from its
own dataset, so every dataset keeps its files, compression, CRC checks and index. It is
what an epoch of a mix reads from: a :class:`~tfrecord_engine.data.prepare.ChunkSource`
for :func:`~tfrecord_engine.data.prepare.prepare_chunk` (one decoder: the datasets have
equal feature specs), a :class:`~tfrecord_engine.data.procpool.PoolSource` whose decode
workers open every dataset from its parent's indexes, the owner of those pools, and
the rest of what :class:`~tfrecord_engine.data.dataset.RecordBatchIterator` asks of its
dataset (damage reports, locating errors, the output format, per-record samples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from ..index.damage import reporter
from ..index.sidecar import Index
from ..records.recovery import DamageReport
from .dataset import RecordDataset
from .epochs import FileRecords, files_reached
from .pools import close_pools, return_pool, take_pool
from .procpool import DecodePool, WorkerInit
from .spans import Spans

__all__ = ["LeafSource", "check_alike", "mean_record_bytes"]

IntArray = npt.NDArray[np.int64]


def mean_record_bytes(datasets: Sequence[RecordDataset]) -> float:
    """The mean record size (data bytes, framing left out) over the files of
    ``datasets``, from their indexes: a dataset's own ``record_bytes`` over the same
    files, so that a mix's epoch is settled as such a dataset's is."""
    indexes = [index for ds in datasets for index in ds.indexes]
    records = sum(len(index) for index in indexes)
    return sum(int(index.lengths.sum()) for index in indexes) / max(1, records)


class LeafSource:
    """The records of ``datasets`` numbered one after the other.

    Args:
        datasets: datasets of equal ``features`` and ``on_damage`` (one may repeat).

    Raises:
        InvalidArgumentError: the datasets disagree on ``features`` or ``on_damage``.

    Example:
        >>> import os, tempfile, tfrecord_engine as tfe
        >>> d = tempfile.mkdtemp()
        >>> for name, recs in (("a", [b"a0", b"a1"]), ("b", [b"b0"])):
        ...     with tfe.TFRecordWriter(os.path.join(d, name), index=True) as w:
        ...         w.write_many(recs)
        2
        1
        >>> src = LeafSource([tfe.RecordDataset(os.path.join(d, n)) for n in "ab"])
        >>> src.read_raw([2, 0])
        [b'b0', b'a0']
    """

    def __init__(self, datasets: Sequence[RecordDataset]) -> None:
        check_alike(datasets)
        self.datasets = list(datasets)
        counts = [len(ds) for ds in datasets]
        self.starts: IntArray = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._pools: list[DecodePool] = []
        self._reached: list[Callable[[IntArray], list[FileRecords]]] | None = None

    @property
    def features(self) -> Any:
        """The feature spec of every dataset, or ``None`` for raw records."""
        return self.datasets[0].features

    @property
    def on_damage(self) -> str:
        """The damage policy of every dataset."""
        return self.datasets[0].on_damage

    @property
    def decoder(self) -> Any:
        """The batch decoder of ``features`` (the first dataset's)."""
        return self.datasets[0].decoder

    @property
    def verify(self) -> bool:
        """Whether every dataset checks its records' data CRCs."""
        return all(ds.verify for ds in self.datasets)

    @property
    def indexes(self) -> list[Index]:
        """Every dataset's file indexes, in order (how errors are located)."""
        return [index for ds in self.datasets for index in ds.indexes]

    def _out_batch(self, batch: Any) -> Any:
        """A batch in the datasets' output format (``with_format``)."""
        return self.datasets[0]._out_batch(batch)

    def on_damage_report(self, report: DamageReport) -> None:
        """Hands ``report`` to the callback of the dataset that holds its file."""
        owner = next((ds for ds in self.datasets if report.path in ds.paths), self.datasets[0])
        reporter(owner.on_damage_report)(report)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def _groups(self, idx: IntArray) -> list[tuple[int, IntArray, IntArray]]:
        """``(dataset, where in idx, local indices)`` for each dataset ``idx`` touches."""
        f = np.searchsorted(self.starts, idx, "right") - 1
        if len(idx) and f[0] == f[-1] and bool(np.all(f == f[0])):
            d = int(f[0])
            return [(d, np.arange(len(idx)), idx - self.starts[d])]
        order = np.argsort(f, kind="stable")
        files, first = np.unique(f[order], return_index=True)
        bounds = [*first.tolist(), len(idx)]
        out = []
        for k, d in enumerate(files.tolist()):
            where = order[bounds[k] : bounds[k + 1]]
            out.append((d, where, idx[where] - self.starts[d]))
        return out

    def read_raw(self, indices: Sequence[int] | IntArray) -> list[bytes]:
        """The records at ``indices`` (global numbers), in order, CRC-checked."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        out: list[bytes] = [b""] * len(idx)
        for d, where, local in self._groups(idx):
            for j, record in zip(where.tolist(), self.datasets[d].read_raw(local), strict=True):
                out[j] = record
        return out

    def __getitems__(self, indices: Sequence[int] | IntArray) -> list[Any]:
        """The records at ``indices`` one item per record, as each dataset's
        ``__getitems__`` gives them (its transform and format applied)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        out: list[Any] = [None] * len(idx)
        for d, where, local in self._groups(idx):
            for j, item in zip(where.tolist(), self.datasets[d].__getitems__(local), strict=True):
                out[j] = item
        return out

    def read_spans(self, indices: Sequence[int] | IntArray) -> Spans | None:
        """The records as CRC-checked spans of one buffer when they all lie in
        uncompressed local files (see ``RecordDataset.read_spans``), else ``None``.

        Records of several datasets (a mix's chunk) are read as spans from each and
        gathered into one buffer in request order (:meth:`Spans.joined`), where a list
        of ``bytes`` per record, joined again for the decoder, cost a mix of two token
        datasets a third of its epoch.
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        groups = self._groups(idx)
        if len(groups) == 1:
            d, _, local = groups[0]
            return self.datasets[d].read_spans(local)
        parts = []
        for d, where, local in groups:
            got = self.datasets[d].read_spans(local)
            if got is None:
                return None
            parts.append((where, got))
        return Spans.joined(len(idx), parts)

    def read_salvaged(self, indices: IntArray) -> tuple[list[bytes | None], list[DamageReport]]:
        """The records one by one: ``None`` and a report (in ``indices`` order) for each
        damaged one."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        out: list[bytes | None] = [None] * len(idx)
        found: list[tuple[int, DamageReport]] = []
        for d, where, local in self._groups(idx):
            got, reports = self.datasets[d].read_salvaged(local)
            damaged = iter(reports)
            for j, record in zip(where.tolist(), got, strict=True):
                out[j] = record
                if record is None:
                    found.append((j, next(damaged)))
        return out, [report for _, report in sorted(found, key=lambda x: x[0])]

    # ---- epochs: what RecordBatchIterator needs besides the reads ---------------------

    def readers(self) -> list[FileRecords]:
        """Every dataset's files, each once (a dataset may repeat in a mix), in order:
        what an epoch checks and holds (``epochs.start_epoch``)."""
        found: dict[int, FileRecords] = {}
        for ds in self.datasets:
            found.update((id(r), r) for r in ds._open())
        return list(found.values())

    @property
    def record_bytes(self) -> float:
        """The mean record size over every dataset's files (:func:`mean_record_bytes`)."""
        return mean_record_bytes(self.datasets)

    def files_reached(self, indices: IntArray) -> list[FileRecords]:
        """The files that the records at ``indices`` (global numbers) lie in."""
        if self._reached is None:
            self._reached = [files_reached(ds._open(), ds._numbers) for ds in self.datasets]
        found: dict[int, FileRecords] = {}
        for d, _, local in self._groups(np.asarray(indices, dtype=np.int64).reshape(-1)):
            found.update((id(r), r) for r in self._reached[d](local))
        return list(found.values())

    def worker_init(self) -> WorkerInit:
        """What a decode worker needs: each dataset's own opener, state and indexes."""
        inits = [ds.worker_init() for ds in self.datasets]
        state = {"openers": [i.opener for i in inits], "states": [i.state for i in inits]}
        return WorkerInit(_open_leaves, state, [i.indexes for i in inits])

    def _take_pool(self, workers: int, slots: int) -> DecodePool:
        """An idle pool of this shape, or a new one (kept for the next epoch)."""
        return take_pool(self, workers, slots)

    def _return_pool(self, pool: DecodePool) -> None:
        """Keeps a healthy pool (one per shape) for the next epoch, else stops it."""
        return_pool(self, pool, is_open=True)

    def close(self) -> None:
        """Stops the decode workers and closes every dataset (they reopen on next use)."""
        close_pools(self)
        for ds in self.datasets:
            ds.close()


def check_alike(datasets: Sequence[RecordDataset]) -> None:
    """Checks that ``datasets`` can be read as one: equal ``features`` and ``on_damage``.

    Raises:
        InvalidArgumentError: naming the first dataset that differs from the first one.
    """
    if not datasets:
        raise InvalidArgumentError("a mix needs at least one dataset")
    first = datasets[0]
    for j, ds in enumerate(datasets):
        if ds.features != first.features:
            raise InvalidArgumentError(
                f"dataset {j} of the mix ({ds.paths[0]}, ...) has other features than "
                f"dataset 0 ({first.paths[0]}, ...): mixed records must decode alike; "
                "open every dataset with the same features="
            )
        if getattr(ds, "format", "numpy") != getattr(first, "format", "numpy"):
            raise InvalidArgumentError(
                f"dataset {j} of the mix has format {ds.format!r}, dataset 0 "
                f"{first.format!r}: give them one format (with_format)"
            )
        if ds.on_damage != first.on_damage:
            raise InvalidArgumentError(
                f"dataset {j} of the mix has on_damage={ds.on_damage!r}, dataset 0 "
                f"{first.on_damage!r}: a batch follows one policy; open them alike"
            )


def _open_leaves(state: dict[str, Any], indexes: list[Any]) -> LeafSource:
    """A decode worker's copy: each dataset opened by its own opener from its indexes."""
    datasets = [
        cast("RecordDataset", opener(s, idx))
        for opener, s, idx in zip(state["openers"], state["states"], indexes, strict=True)
    ]
    return LeafSource(datasets)
