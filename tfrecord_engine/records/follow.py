"""Following a TFRecord file that is still being written: ``RecordFollower``.

What TensorBoard does with ``tf_record_iterator``: read every record there is, wait at
the end of the file, and read on when a writer appends more. A follower keeps its
position between calls:

- :meth:`RecordFollower.poll` returns the complete records available now, without
  blocking (``[]`` when there are none), and remembers where it stopped;
- :meth:`RecordFollower.records` (also ``read_records(path, follow=True)``) yields them
  as they come, sleeping ``poll_interval`` seconds between looks at the file (never a
  busy loop), until :meth:`RecordFollower.stop` is called, ``timeout`` seconds have
  passed, ``idle_timeout`` seconds went by without a new record, or the iterator is
  closed.

A record the writer has only partly written (a torn tail: some of its header, or a
header whose data is not all there yet) is not damage while following: the follower
waits for the rest and returns the record once it is complete. When following ends
(stop, timeout, or :meth:`RecordFollower.finish`) with such a tail still torn, it is
reported as the ordinary :class:`~tfrecord_engine.TruncatedRecordError`. Every CRC is
still checked: a *complete* record that does not match its CRCs raises
:class:`~tfrecord_engine.CorruptedRecordError`, as in :func:`~tfrecord_engine.read_records`.

GZIP/ZLIB files are followed too: the inflater keeps its state between polls, so a
deflate stream that stops mid-way (the writer has not flushed or closed it yet) is
normal, and the records are returned as soon as the writer's flushes make them
decodable (``TFRecordWriter.flush()`` emits a zlib partial flush, which does). Offsets
are then offsets in the decompressed stream, as everywhere. Damage to the deflate
stream raises :class:`~tfrecord_engine.CorruptedRecordError` after the intact records
before it.

A follower reads a local regular file through one descriptor, with ``pread``. Write the
followed file with ``TFRecordWriter(path, atomic=False)`` or ``append=True``: the default
atomic writer writes a hidden temporary file and renames it onto ``path`` only on
``close()``. A file that shrinks under the follower, or is replaced or deleted (renamed
over), raises instead of being waited on forever.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from types import TracebackType

import crc32c as _crc32c

from ..errors import (
    CorruptedRecordError,
    DataLossError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    TFRecordError,
    TruncatedRecordError,
)
from ..storage import remote
from ..storage.filekind import stream_kind
from . import framing
from .compression import READ_CHUNK, Compression
from .detect import HEAD_SIZE, CompressionArg, detect, mismatch_note, noted, requested

__all__ = ["RecordFollower"]

# Bytes read at a time from an uncompressed file (more when one record needs more).
_WINDOW = 1 << 20
# Decompressed bytes produced per inflate call, so memory follows the records parsed.
_INFLATE_CHUNK = 1 << 20
# Records returned by one poll of the iterator form, so a large backlog streams.
_BATCH = 4096
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
# The largest data length framing.parse_header accepts.
_MAX_LENGTH = 2**64 - 2 - framing.FOOTER_SIZE


def _seconds(name: str, value: float | None, *, positive: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{name} must be a number of seconds, not {value!r}")
    if not value >= 0 or (positive and value == 0):  # NaN fails >= 0
        raise InvalidArgumentError(
            f"{name} must be {'> 0' if positive else '>= 0'} seconds, got {value!r}"
        )
    return float(value)


class RecordFollower:
    """Reads a TFRecord file while another process is still writing it.

    Args:
        path: a local regular file (it must exist; a pipe or URL is refused).
        compression: ``"auto"`` (default: recognised from the first bytes once there
            are enough of them, with the extension as a hint), or ``None``/``""``,
            ``"GZIP"`` or ``"ZLIB"``.
        verify: check every data CRC (header CRCs are always checked).
        max_record_bytes: refuse a record whose header announces more data bytes
            (:class:`~tfrecord_engine.RecordTooLargeError`) instead of waiting for it.

    Attributes:
        path: the followed file.
        records_read: how many records were returned so far (the next one's index).
        offset: where the next record starts (in the decompressed stream for
            GZIP/ZLIB).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InvalidArgumentError: not a local regular file, or a bad argument.

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "events.tfrecord")
        >>> w = tfe.TFRecordWriter(path, atomic=False)
        >>> w.write(b"step 1"); w.flush()
        >>> follower = tfe.RecordFollower(path)
        >>> follower.poll()
        [b'step 1']
        >>> follower.poll()  # nothing new yet: returns at once
        []
        >>> w.write(b"step 2"); w.close()
        >>> follower.poll()
        [b'step 2']
        >>> follower.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        compression: CompressionArg = "auto",
        verify: bool = True,
        *,
        max_record_bytes: int | None = None,
    ) -> None:
        self._want = requested(compression)
        self._limit = framing.normalize_limit(max_record_bytes)
        self._verify = verify
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentTypeError(
                f"RecordFollower follows a file path, not {type(path).__name__}"
            )
        name = remote.local_path(os.fspath(path))
        if remote.is_url(name):
            raise InvalidArgumentError(f"{name}: following needs a local file, not a URL")
        if stream_kind(name) is not None:
            raise InvalidArgumentError(
                f"{name}: following needs a regular file; read a pipe or device with "
                "read_records(), which already waits for its writer"
            )
        self.path = name
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        self._fd: int | None = fd
        self._identity = (st.st_dev, st.st_ino)
        self._kind: Compression | None = self._want
        self._stop = threading.Event()
        self.records_read = 0
        self.offset = 0  # the next record's start (decompressed offset when compressed)
        self._raw_pos = 0  # compressed input consumed from the file
        self._pending = 0  # bytes of an incomplete record at the end (uncompressed)
        self._need = framing.HEADER_SIZE  # bytes the next record needs in all
        # Decompressed bytes not yet returned as records, in pieces: joined only once
        # they hold the next record whole (a large record is not copied per poll).
        self._parts: list[bytes] = []
        self._have = 0
        self._input = b""  # compressed bytes read but not yet fed to the inflater
        self._dec: zlib._Decompress | None = None
        self._failed: CorruptedRecordError | None = None  # deflate damage met ahead
        self._damage: DataLossError | None = None  # framing damage at the position

    # -- the public surface -----------------------------------------------------------

    @property
    def compression(self) -> Compression | None:
        """The file's compression; ``None`` while ``"auto"`` has too few bytes to tell."""
        return self._kind

    @property
    def pending_bytes(self) -> int:
        """Bytes at the end that do not form a complete record yet (a torn tail)."""
        if self._kind is None or self._kind is Compression.NONE:
            return self._pending
        return self._have

    @property
    def closed(self) -> bool:
        return self._fd is None

    def poll(self, max_records: int | None = None) -> list[bytes]:
        """The complete records written since the last call, without waiting.

        Args:
            max_records: return at most this many (the rest come with the next call);
                ``None`` for all there are.

        Damage is raised once every record before it was returned: a poll that has
        records returns them, and the next poll (and every one after it) raises.

        Raises:
            CorruptedRecordError: a complete record fails its CRCs, or the deflate
                stream is damaged.
            RecordTooLargeError: a header announces more than ``max_record_bytes``.
            TruncatedRecordError: the file shrank below what was already read.
            TFRecordError: the file was deleted or replaced while being followed.
        """
        if max_records is not None and (
            isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1
        ):
            raise InvalidArgumentError(
                f"max_records must be an int >= 1 or None, not {max_records!r}"
            )
        fd = self._require_open()
        if self._damage is not None:
            raise self._damage
        size = os.fstat(fd).st_size
        if size < (
            self.offset + self._pending if self._kind is Compression.NONE else self._raw_pos
        ):
            raise TruncatedRecordError(
                f"the file shrank to {size} bytes while being followed: changed in place? "
                "Records before this one were returned",
                path=self.path,
                record_index=self.records_read,
                offset=self.offset,
            )
        if self._kind is None:
            head = os.pread(fd, framing.HEADER_SIZE, 0)
            if len(head) < framing.HEADER_SIZE:  # too few bytes to tell yet: wait
                self._pending = len(head)
                return self._unchanged(size)
            self._kind = detect(head, self.path)
        limit = max_records if max_records is not None else -1
        if self._kind is Compression.NONE:
            out = self._poll_plain(fd, size, limit)
        else:
            out = self._poll_compressed(fd, limit)
        if out:
            return out
        if self._damage is not None:
            raise self._damage
        return self._unchanged(size)

    def records(
        self,
        *,
        poll_interval: float = 0.5,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> Iterator[bytes]:
        """Yields records as they are written, waiting at the end of the file.

        Args:
            poll_interval: seconds between looks at the file while there is nothing new
                (> 0; :meth:`stop` wakes a waiting iterator at once).
            timeout: stop after this many seconds in all (``None``: no limit).
            idle_timeout: stop after this many seconds without a new record
                (``None``: no limit).

        Ends when :meth:`stop` is called or a timeout expires, after a last look that
        returns the complete records written up to then; a torn tail that is still
        torn then raises :class:`~tfrecord_engine.TruncatedRecordError` (see
        :meth:`finish`). Closing the iterator ends it quietly. Raises what
        :meth:`poll` raises; a bad argument raises here, not at the first record.
        """
        interval = _seconds("poll_interval", poll_interval, positive=True)
        assert interval is not None
        return self._follow(
            interval, _seconds("timeout", timeout), _seconds("idle_timeout", idle_timeout)
        )

    def _follow(self, interval: float, total: float | None, idle: float | None) -> Iterator[bytes]:
        start = last = time.monotonic()
        while True:
            batch = self.poll(_BATCH)
            yield from batch
            now = time.monotonic()
            if batch:
                last = now
            ends = [start + total] if total is not None else []
            if idle is not None:
                ends.append(last + idle)
            end = min(ends, default=None)
            if self._stop.is_set() or (end is not None and now >= end):
                break
            if not batch and self._stop.wait(interval if end is None else min(interval, end - now)):
                break
        # A last look up to the bytes there are now: what was written is returned, and a
        # writer faster than this reader cannot keep it from ending.
        if self._fd is None:
            return
        size = os.fstat(self._fd).st_size
        while self._consumed() < size and (batch := self.poll(_BATCH)):
            yield from batch
        self.finish()

    def __iter__(self) -> Iterator[bytes]:
        """:meth:`records` with its defaults: follows until :meth:`stop`."""
        return self.records()

    def stop(self) -> None:
        """Asks a running :meth:`records` to end (safe to call from another thread).

        It ends after its last look (see :meth:`records`); a later :meth:`records`
        ends after one look too, while :meth:`poll` goes on working.
        """
        self._stop.set()

    def finish(self) -> None:
        """Declares the writer done: raises if the file ends in a torn record.

        Raises:
            TruncatedRecordError: the last record is incomplete (the same error
                :func:`~tfrecord_engine.read_records` raises for it).
        """
        if self._kind is None:
            if self._pending:
                self._raise_torn(os.pread(self._require_open(), self._pending, 0))
            return
        if self._kind is Compression.NONE:
            if self._pending:
                self._raise_torn(
                    os.pread(self._require_open(), min(self._pending, 12), self.offset)
                )
            return
        if self._have:
            self._raise_torn(b"".join(self._parts)[: framing.HEADER_SIZE])

    def close(self) -> None:
        """Closes the file (idempotent). Call it from the thread that reads (another
        thread calls :meth:`stop`, then the reader closes)."""
        self._stop.set()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> RecordFollower:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.records_read} records read"
        return f"RecordFollower({self.path!r}, {state})"

    # -- internals ----------------------------------------------------------------------

    def _consumed(self) -> int:
        """How far into the file the follower has read."""
        return self.offset if self._kind in (None, Compression.NONE) else self._raw_pos

    def _require_open(self) -> int:
        if self._fd is None:
            raise InvalidArgumentError(f"{self.path}: the follower is closed")
        return self._fd

    def _unchanged(self, size: int) -> list[bytes]:
        """Nothing new: check the name still refers to the file being followed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            what = "deleted" if st is None else "replaced by another file"
            raise TFRecordError(
                f"{self.path}: the file was {what} while being followed, after "
                f"{self.records_read} records (offset {self.offset}, {size} bytes then); "
                "follow a file written in place (TFRecordWriter(..., atomic=False) or "
                "append=True)"
            )
        return []

    def _raise_torn(self, head: bytes) -> None:
        framing.parse_header(
            head,
            remaining=self.pending_bytes - framing.HEADER_SIZE,
            path=self.path,
            record_index=self.records_read,
            offset=self.offset,
        )
        raise AssertionError("unreachable: a torn record parsed")  # pragma: no cover

    def _take(self, buf: bytes, out: list[bytes], limit: int) -> tuple[int, int]:
        """Appends the complete records at the start of ``buf`` to ``out`` (up to
        ``limit`` in all); returns where the first incomplete one starts and how many
        bytes it needs in all (0: none left, or ``limit`` reached).

        The follower's position moves past every record appended, also when a later one
        raises its damage.
        """
        size = len(buf)
        verify = self._verify
        unpack_header = _HEADER.unpack_from
        unpack_footer = _FOOTER.unpack_from
        crc = _crc32c.crc32c
        delta = framing.MASK_DELTA
        max_length = _MAX_LENGTH if self._limit is None else self._limit
        append = out.append
        first = count = len(out)
        pos = 0
        try:
            # Checks inline, as the readers' loops do; the framing helpers, which name
            # the damage precisely, only for a record that fails one.
            while pos < size:
                if count == limit:
                    return pos, 0
                if size - pos < framing.HEADER_SIZE:
                    return pos, framing.HEADER_SIZE
                length, stored = unpack_header(buf, pos)
                c = crc(buf[pos : pos + 8])
                if (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != stored or length > max_length:
                    framing.parse_header(
                        buf[pos : pos + framing.HEADER_SIZE],
                        remaining=None,
                        path=self.path,
                        record_index=self.records_read + count - first,
                        offset=self.offset + pos,
                        max_length=self._limit,
                    )
                    raise AssertionError("unreachable: a failed check passed")  # pragma: no cover
                end = pos + framing.HEADER_SIZE + length
                if end + framing.FOOTER_SIZE > size:
                    return pos, length + framing.HEADER_SIZE + framing.FOOTER_SIZE
                data = buf[pos + framing.HEADER_SIZE : end]
                if verify:
                    c = crc(data)
                    stored = unpack_footer(buf, end)[0]
                    if (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != stored:
                        framing.check_data(
                            data,
                            stored,
                            path=self.path,
                            record_index=self.records_read + count - first,
                            offset=self.offset + pos,
                        )
                append(data)
                count += 1
                pos = end + framing.FOOTER_SIZE
            return pos, 0
        except DataLossError as exc:
            # Raised by poll() once the records before it were returned.
            self._damage = self._explained(exc)
            return pos, 0
        finally:
            self.records_read += count - first
            self.offset += pos

    def _explained(self, exc: DataLossError) -> DataLossError:
        """``exc``, saying what the file's first bytes look like when they contradict
        the compression it is read with (an error at its first record only)."""
        if exc.record_index != 0 or self._kind is None or self._fd is None:
            return exc
        head = os.pread(self._fd, HEAD_SIZE, 0)
        better = noted(exc, head, self._kind, auto=self._want is None)
        return exc if better is None else better

    def _poll_plain(self, fd: int, size: int, limit: int) -> list[bytes]:
        out: list[bytes] = []
        while True:
            avail = size - self.offset
            self._pending = avail
            if avail < self._need or len(out) == limit:
                return out
            buf = os.pread(fd, min(avail, max(_WINDOW, self._need)), self.offset)
            if not buf:
                return out  # shrank between fstat and pread: the next poll says so
            used, need = self._take(buf, out, limit)
            self._need = max(need, framing.HEADER_SIZE)
            self._pending = avail - used
            if self._damage is not None:
                return out

    def _poll_compressed(self, fd: int, limit: int) -> list[bytes]:
        out: list[bytes] = []
        while len(out) != limit:
            if self._have >= self._need:
                buf = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                used, need = self._take(buf, out, limit)
                rest = buf[used:] if used else buf
                self._parts = [rest] if rest else []
                self._have = len(rest)
                self._need = max(need, framing.HEADER_SIZE)
                if self._damage is not None:
                    break
                continue
            more = self._inflate(fd)
            if not more:
                if self._failed is not None and self._damage is None:
                    self._damage = self._failed  # after the records inflated before it
                break
            self._parts.append(more)
            self._have += len(more)
        return out

    def _inflate(self, fd: int) -> bytes:
        """The next decompressed bytes there are (``b""``: wait for the writer)."""
        kind = self._kind
        assert kind is not None
        wbits = 31 if kind is Compression.GZIP else 15
        if self._failed is not None:
            return b""
        while True:
            dec = self._dec
            if dec is None or dec.eof:
                if dec is not None:  # a member or stream ended: the next one follows
                    self._input = dec.unused_data + self._input
                dec = self._dec = zlib.decompressobj(wbits)
            data = dec.unconsumed_tail
            if not data:
                data, self._input = self._input, b""
            if not data:
                data = os.pread(fd, READ_CHUNK, self._raw_pos)
                self._raw_pos += len(data)
                if not data:
                    return b""
            try:
                got = dec.decompress(data, _INFLATE_CHUNK)
            except zlib.error as exc:
                reason = f"{kind.value} data is damaged: {exc}"
                if self.offset == 0 and not self._have:
                    head = os.pread(fd, 4096, 0)
                    note = mismatch_note(head, kind, auto=self._want is None)
                    if note is not None:
                        reason = f"{reason}; {note}"
                failed = CorruptedRecordError(
                    reason, path=self.path, record_index=self.records_read, offset=self.offset
                )
                failed.__cause__ = exc
                self._failed = failed
                # What the failing call inflated is dropped: bytes inflated after the
                # damaged bit, before zlib noticed, may copy whole earlier frames (see
                # compression.Decompressor.read).
                return b""
            if got:
                return got
