"""Writing TFRecord files, crash-safely: ``TFRecordWriter``.

Uncompressed output is byte-identical to ``tf.io.TFRecordWriter``. GZIP/ZLIB output
uses TensorFlow's zlib parameters (see :mod:`tfrecord_engine.records.compression`), so it is
byte-identical on stock zlib and always decompresses to the identical framed stream.

Crash safety (the default, ``atomic=True``): records go to a hidden temporary file in
the destination directory (``.<name>.tmp-<random>``, which a ``*.tfrecord`` glob does
not match). ``close()`` flushes it, ``fsync``\\ s it, renames it onto the final name with
``os.replace`` and ``fsync``\\ s the directory, so the final name holds either the old
content (or nothing) or the complete new file, never a torn one, whenever the process
dies. An exception inside ``with`` (or :meth:`TFRecordWriter.abort`) deletes the
temporary file and publishes nothing. Every ``OSError`` (a full disk, an I/O error, a
failed ``fsync``) is raised by the ``write``/``flush``/``close`` that hit it; a writer
never reports success for data that did not reach the file. An error about the
temporary file (creating it, renaming it) names the final path, the one the caller knows.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import BinaryIO

from ..errors import InvalidArgumentError, WriterClosedError, WriterFailedError
from ..index.columns import ColumnsArg, ColumnSpec, normalize_columns
from ..index.placement import IndexPlacement, normalize_placement
from ..index.recorder import DEFAULT_FLUSH_EVERY, IndexRecorder, columns_of_existing
from ..index.sidecar import Index
from ..records import framing
from ..records.compression import Compression, CompressionLike
from ..records.options import (
    Compressor,
    TFRecordOptions,
    ZlibSettings,
    flush_like_tf,
    make_writer_compressor,
    resolve_writer_options,
)
from ..records.recovery import DamageReport
from ..storage import remote
from ..storage.fileops import FileOps, naming_final
from ..storage.options import StorageOptionsArg
from .destination import FILE_BUFFER, file_ops_for, open_for_append, open_temp, use_file_ops
from .publish import PendingIndex, index_in_place, temp_path_for

__all__ = ["TFRecordWriter", "temp_path_for", "use_file_ops"]

Record = bytes | bytearray | memoryview | str

# Payloads at least this large are written without joining them to their frame.
_DIRECT_WRITE = 1 << 16
# write_many frames and writes about this many payload bytes at a time.
_CHUNK = 1 << 20
# Python's zlib compressor (other compressors reproduce TensorFlow's calls themselves).
_ZLIB_COMPRESS = type(zlib.compressobj())
# write() holds records, then frames them together (one compiled pass for the lot, not a
# framing call per record): about this many bytes at a time, counted in records (a
# count is cheaper to keep than a byte total), at most _HOLD_MAX of them, each under
# _DIRECT_WRITE: a jump in record size holds at most 32 MiB.
_PENDING = 1 << 18
_HOLD_MAX = 512
# A durable local writer queues the disk writes of what it has handed to the file every
# this many bytes (Linux: sync_file_range, which returns without waiting for them), so
# that the disk works while records are still being written and close()'s fsync waits
# for the tail only: 70,000 records of 856 B, fsync 20-30 ms -> ~10 ms, ~15% of the
# whole. (fdatasync here instead, or on a thread, forces journal commits that stall
# the writing: slower, see docs/benchmarks.md.)
_SYNC_EVERY = 8 << 20


def _kept(record: Record) -> bytes:
    """``record`` as ``bytes`` to hold on to: a ``bytearray`` or ``memoryview`` copied
    (its owner may change it once it has been handed over)."""
    data = _as_bytes(record)
    return data if type(data) is bytes else bytes(data)


def _as_bytes(record: Record) -> bytes | bytearray | memoryview:
    if isinstance(record, str):
        # tf.io.TFRecordWriter.write accepts str and writes it as UTF-8.
        return record.encode("utf-8")
    if isinstance(record, (bytes, bytearray)):
        return record
    if isinstance(record, memoryview):
        # len() of anything but a flat byte view is not its size in bytes.
        flat = record.ndim == 1 and record.itemsize == 1 and record.contiguous
        return record if flat else record.tobytes()
    raise InvalidArgumentError(f"a record must be bytes-like or str, not {type(record).__name__}")


@functools.cache
def _writeback_call() -> Callable[[int], object] | None:
    """``fd -> sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)`` of the C library, or
    None (not Linux, or no such function). Looked up on first use (ctypes is not
    imported with the package)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # noqa: PLC0415 - only durable local writers need it

    try:
        call = ctypes.CDLL(None).sync_file_range
    except (OSError, AttributeError):  # pragma: no cover - a libc without it
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return lambda fd: call(fd, 0, 0, 2)  # 2: SYNC_FILE_RANGE_WRITE; 0, 0: the whole file


def _rebuilt(path: str, kind: Compression, columns: ColumnSpec) -> Index:
    """The index of a file appended to: a header walk, whose data CRCs are known good all
    the same (the torn-tail check read every earlier record with its data CRC checked,
    and cut what failed; the rest are the writer's own records). Index columns are read
    from the whole file."""
    idx = Index.build(path, kind, columns=columns or None)
    idx.data_verified = True
    return idx


class TFRecordWriter:
    """Writes records to a TFRecord file, publishing it atomically on ``close()``.

    Args:
        path: the file to create (replaced if it exists), or an fsspec URL: see
            :mod:`tfrecord_engine.storage.remote_fileops` for what a remote writer guarantees.
        compression: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"`` (any case), TensorFlow's
            ``TFRecordCompressionType`` ints, or an options object (TensorFlow's
            ``options`` argument): a :class:`~tfrecord_engine.TFRecordOptions` or
            ``tf.io.TFRecordOptions`` itself (read by duck typing).
        options: the same as ``compression`` (TensorFlow's keyword name); a
            :class:`~tfrecord_engine.TFRecordOptions` sets the zlib parameters
            (level, mem level, window bits, strategy, flush mode, buffer sizes) with
            TensorFlow's names, defaults and output bytes.
        compression_type: a compression type, as ``TFRecordOptions(compression_type=)``
            and ``tf.data.TFRecordDataset`` spell it. Compression types given more than
            once must agree.
        atomic: write to a hidden temporary file and rename it onto ``path`` on
            ``close()`` (default). ``False`` streams straight into ``path``, which holds
            a partial file while writing and after a crash.
        append: add records to the end of an existing file instead (created if
            missing). Appending is in place, so ``atomic`` does not apply: the records
            already in the file are never touched, and a torn tail left by an earlier
            crash (no intact record after it) is cut first and reported. Damage with
            intact records after it raises :class:`~tfrecord_engine.DataLossError`.
            GZIP appends add a gzip member; ZLIB files cannot be appended to. A pipe,
            FIFO or device cannot be appended to (:class:`InvalidArgumentError`).
        on_damage_report: receives the :class:`~tfrecord_engine.DamageReport` of a cut
            torn tail; without it, a :class:`~tfrecord_engine.DamageWarning` is emitted.
        index: also write the index (``<folder>/.tfeidx/<file>.tfeidx``: a hidden
            sub-folder that the shard globs of TensorFlow, Beam, Ray and shells do not
            match; see :mod:`tfrecord_engine.index.placement`), built as records are
            written, stamped with the identity of the bytes written and published
            with them (:mod:`tfrecord_engine.writing.publish`): written before the data
            is renamed, renamed after it, the previous version's indexes removed
            first; a failure raises an ``IndexPublishError`` that says whether nothing
            or the data alone was published. For GZIP/ZLIB it fully flushes the deflate stream every
            ``index_flush_every`` records (the file stays a valid single stream that
            TensorFlow reads) and records those restart points for random access. With
            ``append=True`` the index is rebuilt from the whole file on ``close()``
            (a GZIP file's restart points are then its member starts, one per append).
            Either way every data CRC of the file is known good (the append's torn-tail
            check read the earlier records), so the sidecar serves every damage policy.
            A placement name instead of ``True`` puts the index elsewhere: ``"cache"``
            (the user's index cache: the data's folder holds the data only, but the
            index stays on this machine) or ``"beside"`` (the old ``<path>.tfeidx``).
        index_columns: scalar features to keep in the index, read from each record as
            it is written (needs ``index``): names (each column's kind, int64 or bytes,
            from the first record holding one value), or name -> ``"int64"`` /
            ``"bytes"``. A record without exactly one such value is noted as such (see
            :mod:`tfrecord_engine.index.columns`); read them back with
            ``RecordDataset.index_column(name)`` or ``Index.columns``. With
            ``append=True`` they are read from the whole file on ``close()``; without
            ``index_columns`` an append keeps the columns of the file's valid index.
        index_flush_every: records between restart points of a compressed file.
        durable: ``fsync`` the file (and, after the rename, its directory) on
            ``close()`` so the data survives a power loss. ``False`` hands the data to
            the operating system without forcing it to disk, as TensorFlow's writer
            does: faster for scratch data; an atomic writer still publishes only a
            complete file (the rename), but a power loss may lose it.
        storage_options: for a URL, fsspec keyword arguments for its filesystem
            (``{"endpoint_url": ..., "key": ..., "secret": ...}`` for ``s3://``; see
            :mod:`tfrecord_engine.storage.options`); they win over fsspec's global
            configuration and are never shown. Local paths ignore them.

    ``close()`` is idempotent; ``write``/``flush`` after ``close`` raise
    :class:`WriterClosedError` (TensorFlow 2.21's writer raises
    ``FailedPreconditionError: Writer is closed.``). After any
    ``OSError`` the writer is failed: later calls raise :class:`WriterFailedError` and
    nothing is published. ``flush()`` pushes bytes to the operating system (into the
    temporary file in atomic mode); on a compressed writer it emits a zlib partial
    flush, like TensorFlow.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "data.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     w.write(b"first")
        ...     _ = w.write_many([b"second", b"third"])
        ...     os.path.exists(path)  # nothing under the final name until close()
        False
        >>> os.path.getsize(path)
        64
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        compression: CompressionLike = None,
        *,
        options: CompressionLike | TFRecordOptions = None,
        compression_type: CompressionLike = None,
        atomic: bool = True,
        append: bool = False,
        on_damage_report: Callable[[DamageReport], object] | None = None,
        index: bool | str = False,
        index_flush_every: int = DEFAULT_FLUSH_EVERY,
        durable: bool = True,
        index_columns: ColumnsArg | None = None,
        storage_options: StorageOptionsArg = None,
    ) -> None:
        self._kind, self._zlib = resolve_writer_options(compression, options, compression_type)
        self._columns = normalize_columns(index_columns)
        if self._columns and not index:
            raise InvalidArgumentError(
                "index_columns are kept in the index: pass index=True too (or a placement)"
            )
        self._placement: IndexPlacement = (
            "hidden" if isinstance(index, bool) else normalize_placement(index)
        )
        index = bool(index)
        self.path = remote.local_path(os.fspath(path))
        self._ops = file_ops_for(self.path, append=append, storage_options=storage_options)
        self._durable = durable
        self._failed: OSError | None = None
        self._temp: str | None = None
        # Records handed to the file (framed); write() holds later ones in _pending.
        self._written = 0
        self._pending: list[bytes] = []
        self._hold = 64  # records held before framing; adapts to their size (_drain)
        self._append = append
        # Appends keep earlier records the recorder never saw: those rebuild on close.
        self._index = (
            IndexRecorder(
                self.path,
                self._kind,
                index_flush_every,
                self._placement,
                self._columns,
                storage_options=storage_options,
            )
            if index and not append
            else None
        )
        self._rebuild_index = index and append
        if self._rebuild_index and index_columns is None:
            self._columns = columns_of_existing(self.path)
        # Where the bytes go (:mod:`.destination`): the end of the file, a temporary
        # sibling renamed onto ``path`` by close(), or ``path`` itself.
        if append:
            f = open_for_append(self._ops, self.path, self._kind, on_damage_report)
        elif atomic:
            f, self._temp = open_temp(self._ops, self.path)
        else:
            f = self._ops.open_truncate(self.path, FILE_BUFFER)
        self._file: BinaryIO | None = f
        # Early writeback (see _SYNC_EVERY): on the real file system only (an injected
        # seam sees just the calls it expects; a remote file has no descriptor).
        self._writeback = _writeback_call() if durable and type(self._ops) is FileOps else None
        self._unsynced = 0  # bytes handed to the file since the last early writeback
        self._fileno = f.fileno() if self._writeback is not None else -1
        self._tell = f.tell  # also while close() drains, after _file is cleared
        # The production seam adds no call per write; an injected one sees every write.
        self._write: Callable[[bytes | bytearray | memoryview], object] = (
            f.write if type(self._ops) is FileOps else functools.partial(self._ops.write, f)
        )
        self._framer = framing.ChunkFramer()
        self._compressor: Compressor | None = (
            make_writer_compressor(self._kind, self._zlib)
            if self._kind is not Compression.NONE
            else None
        )
        # Where the last flush() left the compressed stream (see _partial_flush).
        self._flushed_pos = f.tell() if self._compressor is not None else 0
        self._flushed_records = -1  # (no flush yet: the stream header is still to come)

    @property
    def _empty_append(self) -> bool:
        # An appended GZIP member holding no record would end TensorFlow's reading of
        # the file (it stops at a member that inflates to nothing): write none at all.
        return self._append and self.records_written == 0

    @property
    def records_written(self) -> int:
        """The records accepted so far (``write`` may still hold the latest in memory)."""
        return self._written + len(self._pending)

    @property
    def compression(self) -> Compression:
        """The compression this writer applies."""
        return self._kind

    @property
    def zlib_settings(self) -> ZlibSettings:
        """The zlib parameters (TensorFlow's defaults unless options set them)."""
        return self._zlib

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or :meth:`abort`) has been called."""
        return self._file is None

    def _open_file(self, op: str) -> BinaryIO:
        if self._file is None:
            raise WriterClosedError(f"{op} on a closed TFRecordWriter ({self.path})")
        if self._failed is not None:
            raise WriterFailedError(
                f"{op} on TFRecordWriter({self.path!r}) after an earlier I/O error: {self._failed}"
            ) from self._failed
        return self._file

    def _emit(self, data: bytes | memoryview) -> None:
        if self._compressor is not None:
            data = self._compressor.compress(data)
            if not data:
                return
        self._write(data)

    def write(self, record: Record) -> None:
        """Appends one record (bytes-like, or ``str`` written as UTF-8).

        Records are framed in bulk: ``write`` keeps them (a ``bytearray`` or
        ``memoryview`` as a copy, so the caller may reuse it) until about 256 KiB (at
        most 512 records) are waiting, or ``flush``/``write_many``/``close`` is called,
        then frames and CRCs them together. A record of 64 KiB or more is written at
        once. An ``OSError`` of the file surfaces from the call that hands it the
        bytes: this ``write``, a later one, ``flush`` or ``close``.
        """
        if self._file is None or self._failed is not None:
            self._open_file("write")
        if type(record) is not bytes or len(record) >= _DIRECT_WRITE:
            held = self._accept(record)
            if held is None:
                return
            record = held
        pending = self._pending
        pending.append(record)
        if len(pending) >= self._hold:
            self._drain()

    def _accept(self, record: Record) -> bytes | None:
        """Checks a record that is not a small ``bytes``: a large one is written now
        (``None``), a small one returned as ``bytes`` to hold (a ``bytearray`` or
        ``memoryview`` copied: the caller may reuse its buffer once ``write`` returns)."""
        data = _as_bytes(record)
        if len(data) >= _DIRECT_WRITE:
            self._write_large(data)
            return None
        return _kept(data)

    def _write_large(self, data: bytes | bytearray | memoryview) -> None:
        self._drain()
        if self._index is not None:
            self._handed(self._write_indexed([data]))
            return
        try:
            if self._compressor is not None:
                self._emit(framing.frame(data))
            else:
                # No join copy; the file's buffer takes the three parts.
                write = self._write
                write(framing.header(len(data)))
                write(data)
                write(framing.footer(data))
        except OSError as exc:
            # The file (and the compressor state) is now behind what was accepted: the
            # writer must never again claim success.
            self._failed = exc
            raise
        self._written += 1
        self._handed(len(data))

    def _drain(self) -> None:
        """Frames the records ``write`` holds and hands them to the file, in order."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        if self._index is not None:
            size = self._write_indexed(pending)
        else:
            try:
                framed = self._framer.frame(pending)
                self._emit(framed)
            except OSError as exc:
                # The file (and the compressor state) is now behind what was accepted.
                self._failed = exc
                raise
            self._written += len(pending)
            size = len(framed)
        self._hold = max(1, min(_HOLD_MAX, _PENDING * len(pending) // max(size, 1)))
        self._handed(size)

    def _handed(self, size: int) -> None:
        """Counts ``size`` bytes handed to the file; every :data:`_SYNC_EVERY` of them a
        durable local writer queues their disk writes."""
        self._unsynced += size
        if self._unsynced >= _SYNC_EVERY and self._writeback is not None:
            self._unsynced = 0
            # Only a head start: it waits for nothing and its result is not the
            # writer's (it does not consume the file's error state: close()'s fsync
            # still reports any failed write).
            self._writeback(self._fileno)

    def write_many(self, records: Iterable[Record]) -> int:
        """Appends a batch of records, framed and checksummed together.

        The framed bytes are handed to the file in chunks of about 1 MiB, so memory
        stays bounded whatever the batch size.

        Returns:
            the number of records written.
        """
        self._open_file("write_many")
        self._drain()
        if self._index is not None:
            batch = [_kept(r) for r in records]
            self._handed(self._write_indexed(batch))
            return len(batch)
        count = 0
        chunk: list[bytes] = []
        pending = 0
        try:
            for record in records:
                # (Kept until the chunk is framed: a bytearray or memoryview is copied,
                # as write() copies it, for an iterable may refill one buffer.)
                data = record if type(record) is bytes else _kept(record)
                chunk.append(data)
                pending += len(data)
                if pending >= _CHUNK:
                    self._emit(self._framer.frame(chunk))
                    count += len(chunk)
                    self._written += len(chunk)
                    self._handed(pending)
                    chunk = []
                    pending = 0
            if chunk:
                self._emit(self._framer.frame(chunk))
                count += len(chunk)
                self._written += len(chunk)
                self._handed(pending)
        except OSError as exc:
            # The file (and the compressor state) is now behind what was accepted: the
            # writer must never again claim success.
            self._failed = exc
            raise
        return count

    def _write_indexed(self, batch: Sequence[bytes | bytearray | memoryview]) -> int:
        """Writes ``batch`` through the index recorder; returns the framed bytes."""
        assert self._index is not None
        try:
            size = self._index.write(
                batch,
                lambda chunk, lengths: self._emit(self._framer.frame(chunk, lengths)),
                None if self._compressor is None else self._full_flush,
            )
        except OSError as exc:
            self._failed = exc
            raise
        self._written += len(batch)
        return size

    def _full_flush(self) -> int:
        # A full flush byte-aligns the stream and forgets the window: decoding can
        # restart here. Returns the compressed offset reached.
        assert self._compressor is not None
        self._write(self._compressor.flush(zlib.Z_FULL_FLUSH))
        return self._tell()

    def flush(self) -> None:
        """Pushes every record written so far to the operating system (does not publish)."""
        f = self._open_file("flush")
        self._drain()
        try:
            if self._compressor is not None and not self._empty_append:
                self._write(self._partial_flush(f))
            self._ops.flush(f)
        except OSError as exc:
            # The file (and the compressor state) is now behind what was accepted: the
            # writer must never again claim success.
            self._failed = exc
            raise

    def _partial_flush(self, f: BinaryIO) -> bytes:
        # TensorFlow's Flush(): a partial flush of the deflate stream, whose marker zlib
        # repeats when it reaches the end of TensorFlow's output buffer. Only this call
        # needs the bytes written since the last flush (the file's position tells): the
        # per-record path is not touched. A flush mode other than Z_NO_FLUSH, or level 0,
        # has its own compressor (TFZlibStream, TFZlibOutputBuffer), which follows every
        # piece anyway.
        assert self._compressor is not None
        if type(self._compressor) is not _ZLIB_COMPRESS:  # it makes TensorFlow's calls
            return bytes(self._compressor.flush(zlib.Z_PARTIAL_FLUSH))
        pos = f.tell()
        out, _ = flush_like_tf(
            self._compressor,
            zlib.Z_PARTIAL_FLUSH,
            fed=self.records_written != self._flushed_records,
            fill=0,  # TensorFlow's Flush() empties its output buffer
            produced=pos - self._flushed_pos,
            cap=self._zlib.output_buffer_size,
        )
        data = b"".join(out)
        self._flushed_pos = pos + len(data)
        self._flushed_records = self.records_written
        return data

    def close(self) -> None:
        """Finishes the stream, makes it durable and publishes it under ``path``.

        With ``index=True`` the index is published with the data (see
        :mod:`tfrecord_engine.writing.publish`): written before the data is renamed,
        renamed after it, and the previous version's indexes removed first.

        Calling it again does nothing.

        Raises:
            OSError: finishing, syncing or renaming failed; in atomic mode nothing was
                published and the temporary file is removed.
            IndexPublishError: writing the index failed (an ``OSError``); its message
                and ``published`` say whether the data was published without it or
                nothing was.
            WriterFailedError: an earlier call failed; nothing was published.
        """
        f = self._file
        if f is None:
            return
        self._file = None
        pending: PendingIndex | None = None
        unsynced: OSError | None = None
        try:
            if self._failed is not None:
                raise WriterFailedError(
                    f"TFRecordWriter({self.path!r}) is closed after an I/O error; "
                    + ("nothing was published" if self._temp else "the file is incomplete")
                ) from self._failed
            self._drain()
            if self._compressor is not None and not self._empty_append:
                self._ops.write(f, self._compressor.flush(zlib.Z_FINISH))
            self._ops.flush(f)
            if self._durable:
                self._ops.fsync(f)
            self._ops.close(f)
            if self._index is not None and self._temp is not None:
                # Made from our own bytes and written before anything is published.
                idx = self._index.index_of(self._temp)
                pending = PendingIndex(
                    self._ops,
                    idx,
                    self._temp,
                    self._placement,
                    durable=self._durable,
                    in_place=False,
                )
                pending.clear_older()
            if self._temp is not None:
                try:
                    self._ops.replace(self._temp, self.path)
                except OSError as exc:
                    raise naming_final(exc, self._temp, self.path) from None
                self._temp = None
            # Until the directory is synced the rename itself may not survive a crash;
            # a failure here raises (the complete file is in place): after its index
            # is in place too, if it has one, so that the two stay together.
            if self._durable:
                try:
                    self._ops.fsync_dir(os.path.dirname(os.path.abspath(self.path)))
                except OSError as exc:
                    if pending is None:
                        raise
                    unsynced = exc
        except BaseException:
            self._discard(f)
            if pending is not None:
                pending.discard()
            raise
        if pending is not None:
            pending.publish()
        else:
            self._index_in_place()
        if unsynced is not None:
            raise unsynced

    def _index_in_place(self) -> None:
        """Publishes the index of a file written in place (``atomic=False``, or an
        append, whose index is built from the whole file), once it is complete."""
        index = self._index
        if index is not None:
            idx_of = functools.partial(index.index_of, self.path)
        elif self._rebuild_index:
            idx_of = functools.partial(_rebuilt, self.path, self._kind, self._columns)
        else:
            return
        index_in_place(self._ops, self.path, idx_of, self._placement, durable=self._durable)

    def _discard(self, f: BinaryIO) -> None:
        # Best-effort cleanup while another exception propagates: that one matters.
        with contextlib.suppress(OSError):
            f.close()
        temp, self._temp = self._temp, None
        if temp is not None:
            with contextlib.suppress(OSError):
                self._ops.remove(temp)

    def abort(self) -> None:
        """Closes without publishing: in atomic mode the temporary file is deleted.

        With ``atomic=False`` or ``append=True`` the bytes already written stay in the
        file (a compressed stream stays unfinished). Calling it again does nothing.
        """
        f = self._file
        if f is None:
            return
        self._file = None
        self._pending = []
        self._discard(f)

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # On an exception nothing is published (atomic), and a writer that already
        # failed is only closed, so the original error is the one that propagates.
        if exc is not None and (self._temp is not None or self._failed is not None):
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        # A writer dropped without close() never publishes; do not leave its temp file.
        if getattr(self, "_temp", None) is not None and getattr(self, "_file", None):
            self.abort()
        elif getattr(self, "_file", None) and getattr(self, "_pending", None) and not self._failed:
            # In place (atomic=False, append): the file's own finalizer flushes what it
            # buffers, as before write() held records; the held ones must reach it first.
            with contextlib.suppress(OSError):
                self._drain()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"TFRecordWriter({self.path!r}, compression={self._kind.value!r}, {state}, "
            f"{self.records_written} records)"
        )
