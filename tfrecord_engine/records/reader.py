"""Sequential reading of TFRecord files: ``read_records``.

Local uncompressed files are read with ``pread`` in 1 MiB windows, never through a map
(a file cut under a map kills the process with SIGBUS; a short read is an error);
GZIP/ZLIB files, file objects and local paths that are not regular files (pipes,
FIFOs, ``/dev/stdin``, devices: see :mod:`tfrecord_engine.storage.filekind`) are read as a
stream in bounded chunks;
URLs (``s3://``, ``gs://``, ``http://``, ``memory://`` ... through fsspec, see
:mod:`tfrecord_engine.storage.remote`) are read as a stream of large read-ahead blocks.

Damage policies (``on_damage``): ``"raise"`` (default) raises a
:class:`~tfrecord_engine.DataLossError` at the first damaged record, after yielding every
record before it; ``"stop"`` ends cleanly there instead and reports the damage;
``"skip"`` reports it, resynchronizes on the next intact record (see
:mod:`tfrecord_engine.records.recovery`) and goes on. Reports go to ``on_damage_report`` or,
without one, are emitted as :class:`~tfrecord_engine.DamageWarning`. A damaged GZIP/ZLIB
*deflate* stream cannot be resynchronized: ``"skip"`` then stops, and says so.
I/O errors (``OSError`` that is not a ``DataLossError``) are never treated as damage.

Where we differ from TensorFlow on purpose (all stricter, none loses data):

- 1-11 stray bytes after the last record (a torn header) raise
  :class:`TruncatedRecordError`; TensorFlow treats them as a clean end of file.
- A length field larger than the bytes that remain raises at once, before anything is
  allocated; TensorFlow 2.21 allocates first and can crash on a lying length.
- A GZIP/ZLIB stream that ends without its end marker (an unclosed writer) raises
  after the last complete record; TensorFlow stops silently.
- Concatenated ZLIB streams are all read; TensorFlow reads the first and silently drops
  the rest.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import BinaryIO, cast

import crc32c as _crc32c
import numpy as np
import numpy.typing as npt

from .. import kernels
from ..errors import (
    DataLossError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    TruncatedRecordError,
    warn_damage,
)
from ..kernels.words import read_words
from ..storage import remote
from ..storage.filekind import stream_kind
from ..storage.options import StorageOptionsArg
from . import framing
from .compression import Compression
from .detect import (
    HEAD_SIZE,
    CompressionArg,
    detect,
    noted,
    noting,
    peek_stream,
    reading_compression,
    requested,
)
from .follow import RecordFollower
from .framing import normalize_limit
from .recovery import DamageCallback, DamagePolicy, DamageReport
from .recovery import normalize_policy as _normalize_policy
from .stream_reader import read_stream

__all__ = ["normalize_limit", "read_records", "read_records_noting_members"]

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")

PathLike = str | os.PathLike[str]


def read_records(
    source: PathLike | BinaryIO,
    compression: CompressionArg = "auto",
    verify: bool = True,
    *,
    on_damage: DamagePolicy = "raise",
    on_damage_report: DamageCallback | None = None,
    max_record_bytes: int | None = None,
    follow: bool = False,
    poll_interval: float = 0.5,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    compression_type: CompressionArg = None,
    storage_options: StorageOptionsArg = None,
) -> Iterator[bytes]:
    """Yields the data of every record of a TFRecord file, in order.

    Args:
        source: a path or an fsspec URL, or a binary file object (read sequentially,
            never seeked). A path may name a pipe, FIFO or ``/dev/stdin``.
        compression: ``"auto"`` (default: recognised from the first bytes, see
            :mod:`tfrecord_engine.records.detect`; a stream is peeked, nothing is
            lost), or ``None``/``""``, ``"GZIP"`` or ``"ZLIB"`` (any case), which wins
            over the bytes. Under an explicit value that the bytes contradict, the
            error at the first record says what they look like. TensorFlow's
            ``TFRecordCompressionType`` ints and options objects (ours or
            ``tf.io.TFRecordOptions``: only the type is used, as in
            ``tf_record_iterator(path, options)``) are accepted too.
        verify: check every data CRC. Header (length) CRCs are always checked: they
            guard the length field that decides how much is read.
        on_damage: ``"raise"`` (default), ``"stop"`` (end cleanly before the first
            damage) or ``"skip"`` (step over damage to the next intact record).
        on_damage_report: called with a :class:`~tfrecord_engine.DamageReport` for each
            damaged region under ``"stop"``/``"skip"`` (``reports.append`` collects
            them). Without it each report is emitted as a
            :class:`~tfrecord_engine.DamageWarning`.
        max_record_bytes: refuse records whose header announces more data bytes than
            this, as damage (:class:`~tfrecord_engine.RecordTooLargeError` under
            ``"raise"``; ``"skip"`` steps over the whole record). Without it a
            compressed record's claimed length is checked against the bytes that really
            follow before anything is allocated for it.
        follow: at the end of the file, wait for the records a writer still appends
            (like TensorBoard over ``tf_record_iterator``) instead of ending; a record
            only partly written is waited for, not damage. Local regular files only,
            under ``on_damage="raise"``; see :class:`~tfrecord_engine.RecordFollower`,
            which this returns the :meth:`~tfrecord_engine.RecordFollower.records` of
            (its ``poll()`` suits a caller with its own loop).
        poll_interval: with ``follow``, seconds between looks at a file with nothing
            new (never a busy loop).
        timeout: with ``follow``, stop after this many seconds in all.
        idle_timeout: with ``follow``, stop after this many seconds without a new
            record. Following ends only so (or when the iterator is closed); a torn
            record still torn then raises :class:`TruncatedRecordError`.
        compression_type: the same as ``compression``, under ``tf.data``'s name.
        storage_options: for a URL, fsspec keyword arguments for its filesystem
            (``{"endpoint_url": ..., "key": ..., "secret": ...}`` for ``s3://``; see
            :mod:`tfrecord_engine.storage.options`); they win over fsspec's global
            configuration and are never shown. Local paths ignore them.

    Raises:
        CorruptedRecordError: a length or data CRC does not match (``"raise"`` only).
        TruncatedRecordError: the file ends inside a record or header, a length
            field exceeds the bytes that remain, or the file shrank while it was read
            (``"raise"`` only for damage; a shrinking file raises under every policy).
        RecordTooLargeError: a record exceeds ``max_record_bytes`` (``"raise"`` only).
        InvalidArgumentError: an unknown compression type or damage policy;
            :class:`~tfrecord_engine.errors.InvalidArgumentTypeError` (also a
            ``TypeError``) for a source that is no path, URL or binary file object.
        OSError: reading failed (under every policy: an I/O error is not damage).

    Example:
        >>> import tempfile, os, tfrecord_engine as tfe
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with tfe.TFRecordWriter(path) as w:
        ...     _ = w.write_many([b"hello", b"world"])
        >>> with open(path, "r+b") as f:  # damage the first record's data
        ...     _ = f.write(b"\\0" * 14)
        >>> reports = []
        >>> list(tfe.read_records(path, on_damage="skip", on_damage_report=reports.append))
        [b'world']
        >>> (reports[0].record_index, reports[0].offset, reports[0].bytes_skipped)
        (0, 0, 21)
    """
    compression = reading_compression(compression, compression_type)
    want = requested(compression)
    policy = _normalize_policy(on_damage)
    limit = normalize_limit(max_record_bytes)
    if follow:
        return _follow(
            source,
            compression,
            verify,
            policy=policy,
            limit=limit,
            poll_interval=poll_interval,
            timeout=timeout,
            idle_timeout=idle_timeout,
        )
    report = _reporter(on_damage_report)
    if isinstance(source, (str, os.PathLike)):
        path = remote.local_path(os.fspath(source))
        if remote.is_url(path):
            return _read_url(
                path, want, verify, policy, report, limit=limit, storage_options=storage_options
            )
        if stream_kind(path) is None:
            return _read_file(path, want, verify, policy, report, limit=limit)
        return _read_opened(path, want, verify, policy, report, limit=limit)
    if isinstance(source, (int, bytes, bytearray, memoryview)) or not hasattr(source, "read"):
        raise InvalidArgumentTypeError(
            f"read_records reads a path, a URL or a binary file object, not {type(source).__name__}"
        )
    name = getattr(source, "name", None)
    label = name if isinstance(name, str) else None
    return _read_peeked(source, want, verify, policy, report, path=label, limit=limit)


def read_records_noting_members(
    path: PathLike,
    compression: Compression,
    members: list[tuple[int, int]],
    verify: bool = True,
    *,
    on_damage: DamagePolicy = "raise",
    on_damage_report: DamageCallback | None = None,
    max_record_bytes: int | None = None,
    storage_options: StorageOptionsArg = None,
) -> Iterator[bytes]:
    """:func:`read_records` of a GZIP/ZLIB file (a local path or a URL), also noting
    where each member (stream) after the first starts.

    ``members`` receives ``(compressed offset, decompressed offset)`` of each member
    start as reading reaches it (see :class:`~.compression.Decompressor`): the restart
    points that an index of a multi-member file (bgzip, ``cat a.gz b.gz``, appends)
    keeps. The other arguments are :func:`read_records`'.

    Raises:
        InvalidArgumentError: ``compression`` is none, or ``path`` is not a regular file
            or a URL (a pipe has no offsets to restart at).
    """
    if compression is Compression.NONE:
        raise InvalidArgumentError("read_records_noting_members reads GZIP/ZLIB files")
    policy = _normalize_policy(on_damage)
    limit = normalize_limit(max_record_bytes)
    report = _reporter(on_damage_report)
    where = remote.local_path(os.fspath(path))
    if remote.is_url(where):
        return _read_url(
            where,
            compression,
            verify,
            policy,
            report,
            limit=limit,
            members=members,
            storage_options=storage_options,
        )
    if stream_kind(where) is not None:
        raise InvalidArgumentError(f"{where}: member offsets need a regular file")
    return _read_file(where, compression, verify, policy, report, limit=limit, members=members)


def _follow(
    source: PathLike | BinaryIO,
    compression: CompressionArg,
    verify: bool,
    *,
    policy: DamagePolicy,
    limit: int | None,
    poll_interval: float,
    timeout: float | None,
    idle_timeout: float | None,
) -> Iterator[bytes]:
    """``read_records(..., follow=True)``: the checks at the call, then the records."""
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"follow=True follows a local file path, not {type(source).__name__}"
        )
    if policy != "raise":
        raise InvalidArgumentError(
            f"follow=True supports on_damage='raise' only, not {policy!r}: a record the "
            "writer has not finished yet would look like damage"
        )
    follower = RecordFollower(source, compression, verify, max_record_bytes=limit)
    try:
        records = follower.records(
            poll_interval=poll_interval, timeout=timeout, idle_timeout=idle_timeout
        )
    except BaseException:
        follower.close()
        raise
    return _closing(follower, records)


def _closing(follower: RecordFollower, records: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from records
    finally:
        follower.close()


def _read_file(
    path: str,
    want: Compression | None,
    verify: bool,
    policy: DamagePolicy,
    report: DamageCallback,
    *,
    limit: int | None,
    members: list[tuple[int, int]] | None = None,
) -> Iterator[bytes]:
    """A local regular file: read in windows when uncompressed, streamed otherwise."""

    def head() -> bytes:
        with open(path, "rb") as f:
            return f.read(HEAD_SIZE)

    kind = detect(head(), path) if want is None else want
    report = noting(report, head, kind, auto=want is None)
    # No generator between the caller and the record loops: each layer costs per record.
    try:
        with open(path, "rb") as f:
            if kind is not Compression.NONE:
                yield from read_stream(
                    f,
                    kind,
                    verify=verify,
                    path=path,
                    policy=policy,
                    report=report,
                    max_record_bytes=limit,
                    members=members,
                )
                return
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return
            if policy == "raise":
                yield from _iter_windows(f.fileno(), path, size, verify, limit)
                return

            # Damage recovery reads the file as a stream (bounded chunks, no map): what
            # a "stop" leaves unread is the rest of the file, whose size is known here.
            def sized(r: DamageReport) -> None:
                if r.bytes_skipped is None:
                    r = DamageReport(r.path, r.record_index, r.offset, size - r.offset, r.reason)
                report(r)

            n = 0
            for record in read_stream(
                f,
                Compression.NONE,
                verify=verify,
                path=path,
                policy=policy,
                report=sized,
                max_record_bytes=limit,
            ):
                n += 1
                yield record
            now = os.fstat(f.fileno()).st_size
            if now < size:  # a change of the file, not damage: an error under every policy
                raise TruncatedRecordError(
                    f"the file shrank to {now} bytes while being read (it had {size}): "
                    "changed while in use? Records before this one were returned",
                    path=path,
                    record_index=n,
                    offset=now,
                )
    except DataLossError as exc:
        better = noted(exc, head(), kind, auto=want is None)
        if better is None:
            raise
        raise better from exc


def _read_opened(
    path: str,
    want: Compression | None,
    verify: bool,
    policy: DamagePolicy,
    report: DamageCallback,
    *,
    limit: int | None,
) -> Iterator[bytes]:
    """A pipe, FIFO or device path: opened once, peeked, streamed."""
    with open(path, "rb") as f:
        yield from _read_peeked(f, want, verify, policy, report, path=path, limit=limit)


def _read_peeked(
    raw: BinaryIO,
    want: Compression | None,
    verify: bool,
    policy: DamagePolicy,
    report: DamageCallback,
    *,
    path: str | None,
    limit: int | None,
    members: list[tuple[int, int]] | None = None,
) -> Iterator[bytes]:
    """A stream: its first bytes are peeked (and handed back) to decide or to explain."""
    head, stream = peek_stream(raw)
    kind = detect(head, path) if want is None else want
    report = noting(report, lambda: head, kind, auto=want is None)
    records = read_stream(
        cast("BinaryIO", stream),
        kind,
        verify=verify,
        path=path,
        policy=policy,
        report=report,
        max_record_bytes=limit,
        members=members,
    )
    try:
        yield from records
    except DataLossError as exc:
        better = noted(exc, head, kind, auto=want is None)
        if better is None:
            raise
        raise better from exc


def _reporter(callback: DamageCallback | None) -> DamageCallback:
    if callback is not None:
        return callback

    return warn_damage


def _read_url(
    url: str,
    want: Compression | None,
    verify: bool,
    policy: DamagePolicy,
    report: DamageCallback,
    *,
    limit: int | None,
    members: list[tuple[int, int]] | None = None,
    storage_options: StorageOptionsArg = None,
) -> Iterator[bytes]:
    stream = remote.RemoteFile(url, storage_options=storage_options).open_stream()
    try:
        # The stream has read/read1 with file semantics; it is not an io class.
        yield from _read_peeked(
            cast("BinaryIO", stream),
            want,
            verify,
            policy,
            report,
            path=url,
            limit=limit,
            members=members,
        )
    finally:
        stream.close()


def _pread(fd: int, n: int, pos: int, path: str, index: int) -> bytes:
    """Exactly ``n`` bytes at ``pos``; a short read means the file shrank under us."""
    data = os.pread(fd, n, pos)
    if len(data) < n:
        now = os.fstat(fd).st_size
        raise TruncatedRecordError(
            f"the file shrank to {now} bytes while being read (read {len(data)} of {n} bytes "
            f"at offset {pos}): changed while in use? Records before this one were read "
            "intact",
            path=path,
            record_index=index,
            offset=pos,
        )
    return data


# Bytes read at a time by the sequential reader (a window holds whole records only);
# larger windows measured slower (each a fresh allocation: page faults), smaller too.
_WINDOW = 1 << 20


def _iter_windows(
    fd: int, path: str, size: int, verify: bool, limit: int | None
) -> Iterator[bytes]:
    # The file is read with pread, never mapped: a file cut under the reader then gives
    # a short read and a TruncatedRecordError instead of SIGBUS. Small records go in
    # windows of _WINDOW bytes through the bulk path (walk, checks in bulk); the records
    # that lie wholly in a window are taken, and one that crosses its end starts the
    # next. A large record, or the first damaged one, takes the one-record step, which
    # reads it on its own (its data straight into the bytes returned) and raises the
    # precise error.
    if size < _BULK_MIN_BYTES:
        # Small files: one read, then the per-record loop (no bulk fixed costs).
        yield from _iter_slow(_pread(fd, size, 0, path, 0), path, verify, 0, 0, limit=limit)
        return
    pos = index = 0
    header: bytes | None = None  # the next record's header, when already read
    pread = os.pread
    crc = _crc32c.crc32c
    delta = framing.MASK_DELTA
    unpack_header = _HEADER.unpack
    unpack_footer = _FOOTER.unpack_from
    max_length = 2**64 - 1 - framing.FOOTER_SIZE if limit is None else limit
    while pos < size:
        if header is None:
            header = os.pread(fd, framing.HEADER_SIZE, pos)
        if len(header) == framing.HEADER_SIZE and _unpack_length(header)[0] < _BULK_MAX_RECORD:
            buf = _pread(fd, min(_WINDOW, size - pos), pos, path, index)
            done, records = _window_records(buf, verify, limit)
            if records:
                yield from records
                index += len(records)
                pos += done
                header = None
                continue
        # Large records, one at a time with inline checks (the framing helpers, which
        # name the damage, only where one fails): the data straight into its bytes,
        # then its footer with the next header.
        progressed = False
        while header is not None and len(header) == framing.HEADER_SIZE:
            length, stored = unpack_header(header)
            c = crc(header[:8])
            end = pos + framing.HEADER_SIZE + length
            if (
                length < _BULK_MAX_RECORD
                or (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != stored
                or length > max_length
                or end + framing.FOOTER_SIZE > size
            ):
                break
            data = pread(fd, length, pos + framing.HEADER_SIZE)
            tail = pread(fd, framing.FOOTER_SIZE + framing.HEADER_SIZE, end)
            if len(data) != length or len(tail) < framing.FOOTER_SIZE:
                break  # the file shrank: the careful step below raises
            if verify:
                c = crc(data)
                if (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != unpack_footer(tail)[0]:
                    break
            yield data
            pos = end + framing.FOOTER_SIZE
            index += 1
            header = tail[framing.FOOTER_SIZE :] if pos < size else None
            progressed = True
        if progressed:
            continue  # the next record decides again: a window, or more large ones
        data, header = _one_record(
            fd, path, size, pos, index=index, verify=verify, limit=limit, header=header
        )
        yield data
        pos += len(data) + framing.FRAME_OVERHEAD
        index += 1


def _window_records(buf: bytes, verify: bool, limit: int | None) -> tuple[int, list[bytes]]:
    """The intact records at the start of ``buf`` and how many bytes they take.

    Stops before the first record that does not lie wholly in ``buf``, fails a check,
    or begins a block of large records (those are read one at a time).
    """
    size = len(buf)
    raw = np.frombuffer(buf, np.uint8)
    out: list[bytes] = []
    pos = 0
    while pos < size:
        walked = kernels.walk_records(raw, pos, _BLOCK_RECORDS, _BLOCK_BYTES)
        starts, stop = walked if walked is not None else _walk_block(buf, pos, size)
        if len(starts) == 0 or (stop - pos) > _BULK_MAX_RECORD * len(starts):
            break
        good, records = _check_block(buf, raw, starts, verify, limit)
        out += records if good == len(records) else records[:good]
        if good < len(starts):
            return int(starts[good]), out
        pos = stop
    return pos, out


def _one_record(
    fd: int,
    path: str,
    size: int,
    pos: int,
    *,
    index: int,
    verify: bool,
    limit: int | None,
    header: bytes | None,
) -> tuple[bytes, bytes | None]:
    """The record at ``pos``, read on its own and checked through the framing helpers
    (which raise the precise error); and the next record's header, read with its footer."""
    if header is None or len(header) < framing.HEADER_SIZE:
        header = os.pread(fd, framing.HEADER_SIZE, pos)
    length = framing.parse_header(
        header,
        remaining=size - pos - framing.HEADER_SIZE,
        path=path,
        record_index=index,
        offset=pos,
        max_length=limit,
    )
    start = pos + framing.HEADER_SIZE
    data = _pread(fd, length, start, path, index)
    tail = os.pread(fd, framing.FOOTER_SIZE + framing.HEADER_SIZE, start + length)
    if len(tail) < framing.FOOTER_SIZE:
        _pread(fd, framing.FOOTER_SIZE, start + length, path, index)  # raises: shrank
    if verify:
        framing.check_data(
            data, _FOOTER.unpack_from(tail)[0], path=path, record_index=index, offset=pos
        )
    following = tail[framing.FOOTER_SIZE :]
    return data, following if len(following) == framing.HEADER_SIZE else None


_BLOCK_RECORDS = 4096
_BULK_MIN_BYTES = 256 << 10
_BULK_MAX_RECORD = 16 << 10  # average framed record size above which blocks do not pay
_BLOCK_BYTES = 1 << 20
_unpack_length = struct.Struct("<Q").unpack_from


def _walk_block(buf: bytes, pos: int, size: int) -> tuple[list[int], int]:
    """Record starts from ``pos`` while lengths fit the file; and where the walk stopped."""
    starts: list[int] = []
    append = starts.append
    unpack = _unpack_length
    stop = min(size - 16, pos + _BLOCK_BYTES)  # a header and a footer still fit
    for _ in range(_BLOCK_RECORDS):
        if pos > stop:
            break
        nxt = pos + unpack(buf, pos)[0] + 16
        if nxt > size:
            break  # a lying or torn length: the one-by-one path reports it
        append(pos)
        pos = nxt
    return starts, pos


def _check_block(
    buf: bytes,
    raw: npt.NDArray[np.uint8],
    starts: list[int] | npt.NDArray[np.int64],
    verify: bool,
    limit: int | None = None,
) -> tuple[int, list[bytes]]:
    """The records at ``starts`` and how many of them, from the first, are intact."""
    if len(starts) == 0:
        return 0, []
    at = np.asarray(starts, np.int64)
    lengths = read_words(raw, at)
    bad = framing.length_crc_array(lengths) != read_words(raw, at + 8).astype(np.uint32)
    if limit is not None:
        bad |= lengths > np.uint64(limit)
    begin = at + 12
    end = begin + lengths.astype(np.int64)
    records = list(map(buf.__getitem__, map(slice, begin.tolist(), end.tolist())))
    if verify:
        bad |= framing.crc_spans(raw, begin, end) != read_words(raw, end).astype(np.uint32)
    first = int(np.argmax(bad)) if bad.any() else len(starts)
    return first, records


def _iter_slow(
    buf: bytes,
    path: str,
    verify: bool,
    pos: int,
    index: int,
    *,
    limit: int | None = None,
) -> Iterator[bytes]:
    # One record at a time from ``pos`` (record ``index``): where a block of the batched
    # path found damage. Any mismatch is re-checked through the framing helpers, which
    # raise the detailed error.
    size = len(buf)
    unpack_header = _HEADER.unpack_from
    unpack_footer = _FOOTER.unpack_from
    crc = _crc32c.crc32c
    delta = framing.MASK_DELTA
    max_length = 2**64 - 1 - framing.FOOTER_SIZE
    if limit is not None:
        max_length = min(max_length, limit + 1)
    while pos < size:
        start = pos + 12
        if start > size:
            _raise_header(buf, pos, size, path, index, limit=limit)
        length, stored = unpack_header(buf, pos)
        c = crc(buf[pos : pos + 8])
        end = start + length
        if (
            (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != stored
            or length >= max_length
            or end + 4 > size
        ):
            _raise_header(buf, pos, size, path, index, limit=limit)
        data = buf[start:end]
        if verify:
            c = crc(data)
            footer = unpack_footer(buf, end)[0]
            if (((c >> 15) | (c << 17)) + delta) & 0xFFFFFFFF != footer:
                framing.check_data(data, footer, path=path, record_index=index, offset=pos)
        yield data
        pos = end + 4
        index += 1


def _raise_header(
    buf: bytes, pos: int, size: int, path: str, index: int, *, limit: int | None = None
) -> None:
    framing.parse_header(
        buf[pos : pos + framing.HEADER_SIZE],
        remaining=size - pos - framing.HEADER_SIZE,
        path=path,
        record_index=index,
        offset=pos,
        max_length=limit,
    )
    raise AssertionError(  # pragma: no cover
        "unreachable: parse_header accepted a header the fast path rejected"
    )
