"""Building a file's index while it is written (``TFRecordWriter(..., index=True)``),
index columns included (``index_columns=[...]``, see :mod:`.columns`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from ..errors import IndexFormatError, InvalidArgumentError
from ..records import framing
from ..records.compression import Compression
from ..storage.options import StorageOptionsArg, normalize_storage_options
from .columns import ColumnRecorder, ColumnSpec
from .identity import identify, opened
from .placement import IndexPlacement
from .sidecar import Index

__all__ = ["DEFAULT_FLUSH_EVERY", "IndexRecorder", "columns_of_existing"]

#: Records between two full-flush restart points in compressed files written with
#: ``index=True``: random access decodes at most this many records' worth of data.
DEFAULT_FLUSH_EVERY: Final = 256


class IndexRecorder:
    """Builds a file's index while :class:`~tfrecord_engine.TFRecordWriter` writes it.

    The writer hands each batch of records to :meth:`write` with two callbacks: ``emit``
    frames and writes a chunk of records, ``restart`` (compressed files only) fully
    flushes the deflate stream and returns the compressed file offset reached. Chunks are
    cut so that a restart point falls every ``flush_every`` records; :meth:`index_of`
    makes the index once the data file is closed, which the writer publishes with the
    data (at ``placement``, see :mod:`.placement`). ``columns`` are read from each
    record as it is written (see :mod:`.columns`).
    """

    def __init__(
        self,
        path: str,
        kind: Compression,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        placement: IndexPlacement = "hidden",
        columns: ColumnSpec = (),
        *,
        storage_options: StorageOptionsArg = None,
    ):
        if flush_every < 1:
            raise InvalidArgumentError(f"index_flush_every must be >= 1, got {flush_every}")
        self._path = path
        self._kind = kind
        self._placement = placement
        self._every = flush_every
        self._lengths: list[npt.NDArray[np.int64]] = []  # one array per chunk written
        self._restarts: list[tuple[int, int]] = []
        self._stream = 0  # offset in the (decompressed) framed stream
        self._since = 0  # records since the last restart point
        self._columns = ColumnRecorder(columns) if columns else None
        self._options = normalize_storage_options(storage_options)

    def write(
        self,
        batch: Sequence[bytes | bytearray | memoryview],
        emit: Callable[[Sequence[bytes | bytearray | memoryview], npt.NDArray[np.int64]], None],
        restart: Callable[[], int] | None,
    ) -> int:
        """Writes ``batch`` through ``emit``, cutting it at restart points.

        ``emit`` gets each chunk with its records' lengths (so that the framing need not
        measure them again).

        Returns:
            the framed bytes written (headers and footers included).
        """
        overhead = framing.HEADER_SIZE + framing.FOOTER_SIZE
        if self._columns is not None:
            # Before any byte is written: a failed write leaves the writer failed anyway.
            self._columns.add(batch)
        every = np.fromiter(map(len, batch), np.int64, count=len(batch))
        start = self._stream
        i = 0
        while i < len(batch):
            take = len(batch) - i if restart is None else self._every - self._since
            chunk = batch[i : i + take]
            lengths = every[i : i + take]
            emit(chunk, lengths)
            self._lengths.append(lengths)
            self._stream += int(lengths.sum()) + overhead * len(chunk)
            self._since += len(chunk)
            i += len(chunk)
            if restart is not None and self._since == self._every:
                self._restarts.append((restart(), self._stream))
                self._since = 0
        return self._stream - start

    @property
    def placement(self) -> IndexPlacement:
        """Where the index goes (see :mod:`.placement`)."""
        return self._placement

    def index_of(self, written: str) -> Index:
        """The index of the closed data file, stamped with the identity of the bytes at
        ``written``: the writer's own temporary file before it is renamed onto the data
        path (so that a file another writer renames there meanwhile cannot lend the
        index its identity), or the data path itself for a writer that wrote there.

        The index is :attr:`~tfrecord_engine.Index.data_verified` (a version-3 sidecar):
        every data CRC in the file was computed here, so it serves every damage policy.
        """
        lengths = np.concatenate([np.zeros(0, np.int64), *self._lengths]).astype(np.uint64)
        framed = lengths + np.uint64(framing.HEADER_SIZE + framing.FOOTER_SIZE)
        offsets = np.cumsum(framed, dtype=np.uint64) - framed
        with opened(written, self._options) as data:
            found = identify(data, self._kind is Compression.NONE, offsets, lengths)
        return Index(
            self._path,
            offsets,
            lengths,
            data_size=found.size,
            fingerprint=found.fingerprint,
            compression=self._kind,
            restarts=np.array(self._restarts, dtype=np.uint64).reshape(-1, 2),
            data_verified=True,  # every data CRC is one we computed while writing
            content=found.content,
            columns=() if self._columns is None else self._columns.finish(),
            storage_options=self._options,
        )


def columns_of_existing(path: str) -> ColumnSpec:
    """The columns (names and kinds) of the valid index of ``path``, if it has one: what
    an append keeps when it is not told which columns to index."""
    try:
        idx = Index.load(path)
    except (OSError, IndexFormatError):
        return ()  # no index, or none that describes the file: nothing to keep
    return tuple((c.name, c.kind) for c in idx.columns.values())
