"""``tfr head`` and ``tfr cat``: records decoded for people, as JSON, or raw."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, BinaryIO, Final, TypeVar

import click
import numpy as np

from ..data.dataset import RecordDataset
from ..errors import IndexFormatError
from ..index.sidecar import Index
from ..records import framing
from ..records.detect import CompressionArg
from ..records.reader import read_records
from ..storage.filekind import stream_kind
from .common import (
    BadInput,
    compression_option,
    detect_compression,
    echo_json,
    expand_inputs,
    is_remote,
    settings,
)
from .files import count_records
from .interrupt import on_interrupt, whole
from .render import BytesMode, Kind, decode_record, to_json, to_text

__all__ = ["COMMANDS", "iter_range", "parse_range"]

_F = TypeVar("_F", bound=Callable[..., Any])
# Records fetched per random-access call on an indexed file.
_CHUNK: Final = 1024
Located = tuple[str, int, bytes]


def parse_range(text: str) -> tuple[int | None, int | None]:
    """Parses ``A:B`` (half-open, either side optional, negatives from the end) or ``A``.

    >>> parse_range("10:20"), parse_range(":5"), parse_range("-3:"), parse_range("7")
    ((10, 20), (None, 5), (-3, None), (7, 8))

    Raises:
        click.BadParameter: anything else.
    """
    try:
        if ":" not in text:
            a = int(text)
            return a, (a + 1 if a != -1 else None)
        left, right = text.split(":")
        return (int(left) if left.strip() else None, int(right) if right.strip() else None)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not A:B, A: or :B", param_hint="--range") from None


def _indexed_count(path: str, kind: CompressionArg) -> int | None:
    try:
        idx = Index.load(path, storage_options=settings().storage_options)
    except (FileNotFoundError, IndexFormatError):
        return None  # no usable sidecar: read sequentially instead
    return len(idx) if idx.compression is kind else None


def _read_indexed(path: str, kind: CompressionArg, a: int, b: int) -> Iterator[Located]:
    ds = RecordDataset(
        path,
        compression=kind,
        cache_dir=settings().cache_dir,
        cache_limit=settings().cache_limit,
        storage_options=settings().storage_options,
    )
    try:
        for c in range(a, b, _CHUNK):
            ids = np.arange(c, min(c + _CHUNK, b), dtype=np.int64)
            yield from ((path, i, r) for i, r in zip(ids.tolist(), ds[ids], strict=True))
    finally:
        ds.close()


def iter_range(
    files: Sequence[str], compression: str, start: int | None, stop: int | None
) -> Generator[Located, None, None]:
    """Yields ``(path, index in file, record)`` for records ``[start, stop)`` of all files.

    Indices count across the files in order; negative ones count from the end (which
    costs a count of every file). Files with a valid sidecar index are read by random
    access; others sequentially (pipes always).

    Raises:
        BadInput: a negative index with a pipe among the files (it cannot be counted
            first and then read).
    """
    kinds = [detect_compression(p, compression) for p in files]
    streams = [stream_kind(p) is not None for p in files]
    if (start is not None and start < 0) or (stop is not None and stop < 0):
        if any(streams):
            raise BadInput(
                "negative indices count the records first, and a pipe can be read only "
                "once: give non-negative indices"
            )
        total = sum(count_records(p, k)[0] for p, k in zip(files, kinds, strict=True))
        start = None if start is None else (start + total if start < 0 else start)
        stop = None if stop is None else (stop + total if stop < 0 else stop)
    first = max(0, start or 0)
    done = 0  # records of the files before the current one
    for path, kind, stream in zip(files, kinds, streams, strict=True):
        if stop is not None and done >= stop:
            return
        n = None if stream else _indexed_count(path, kind)
        if n is None and first > done and not stream:
            n = len(  # a header walk; cheaper than reading all
                Index.build(
                    path,
                    kind,
                    max_record_bytes=settings().max_record_bytes,
                    storage_options=settings().storage_options,
                )
            )
            if done + n <= first:
                done += n
                continue
            n = None
        if n is not None:
            a, b = max(first - done, 0), n if stop is None else min(stop - done, n)
            if a < b:
                yield from _read_indexed(path, kind, a, b)
            done += n
            continue
        i = 0
        for i, record in enumerate(
            read_records(
                path,
                kind,
                max_record_bytes=settings().max_record_bytes,
                storage_options=settings().storage_options,
            ),
            start=1,
        ):
            at = done + i - 1
            if stop is not None and at >= stop:
                return
            if at >= first:
                yield path, i - 1, record
        done += i


def _output_options(command: _F) -> _F:
    options: list[Callable[[Any], Any]] = [
        click.argument("paths", nargs=-1),
        compression_option("Compression of the inputs (auto: from each file's first bytes)."),
        click.option("--example", "kind", flag_value="example", help="Decode as tf.train.Example."),
        click.option(
            "--sequence", "kind", flag_value="sequence", help="Decode as SequenceExample."
        ),
        click.option(
            "--auto",
            "kind",
            flag_value="auto",
            default=True,
            help="SequenceExample when a record has feature lists, else Example [default].",
        ),
        click.option("--json", "as_json", is_flag=True, help="One JSON object per line."),
        click.option(
            "--bytes",
            "bytes_mode",
            type=click.Choice(["auto", "base64", "hex"]),
            default="auto",
            show_default=True,
            help="Bytes values: printable UTF-8 as text (else base64), or all base64/hex.",
        ),
        click.option("--full", is_flag=True, help="Text mode: never shorten long values."),
        click.option(
            "--raw",
            "raw",
            flag_value="framed",
            help="Write the records as a TFRecord stream (framed, uncompressed) to stdout.",
        ),
        click.option(
            "--payload",
            "raw",
            flag_value="payload",
            help="Write the bare record payloads, back to back, to stdout.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _emit(
    records: Generator[Located, None, None],
    *,
    kind: Kind,
    as_json: bool,
    bytes_mode: BytesMode,
    full: bool,
    raw: str | None,
    flush: bool = False,
) -> None:
    """Writes ``records``; Ctrl-C stops after a whole one and says how many were written."""
    written = 0
    last: tuple[str, int] | None = None

    def interrupted() -> str:
        where = "" if last is None else f" (the last: {last[0]} record {last[1]})"
        return f"wrote {written} record{'s' if written != 1 else ''}{where}"

    with on_interrupt(interrupted), contextlib.closing(records):
        if raw is not None:
            if as_json:
                raise click.UsageError("--json and --raw/--payload exclude each other")
            stream: BinaryIO = sys.stdout.buffer
            if sys.stdout.isatty():
                raise click.UsageError("refusing to write binary records to a terminal")
            for path, i, record in records:
                with whole():
                    stream.write(framing.frame(record) if raw == "framed" else record)
                    if flush:  # a follower's reader sees each record as it comes
                        stream.flush()
                    written, last = written + 1, (path, i)
            with whole():
                stream.flush()
            return
        for path, i, record in records:
            decoded = decode_record(record, kind, where=f"{path}: record {i}")
            with whole():  # the record's line(s), and counting them
                if as_json:
                    echo_json(to_json(decoded, path=path, index=i, mode=bytes_mode))
                else:
                    click.echo(
                        "\n".join(to_text(decoded, path=path, index=i, mode=bytes_mode, full=full))
                    )
                written, last = written + 1, (path, i)


@click.command("head")
@click.option(
    "-n",
    "--records",
    "n",
    default=10,
    show_default=True,
    type=click.IntRange(min=0),
    help="How many records to print (counted across the inputs, in order).",
)
@_output_options
def head_command(paths: tuple[str, ...], compression: str, n: int, **out: Any) -> None:
    """The first N records of the inputs (taken as one sequence, in order), decoded.

    PATHS are files, pipes or quoted globs. Reads pipes and "-" (standard input) too.

    \b
    Example:
      $ tfr head -n 1 train-00000-of-00002.tfrecord
      train-00000-of-00002.tfrecord[0]: Example, 3 features
        caption: bytes[1] "a handwritten digit 0"
        image: bytes[1] b64:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA... (784 bytes)
        label: int64[1] 0
      $ tfr head -n 1 --json train-00000-of-00002.tfrecord
      {"file":"train-00000-of-00002.tfrecord","index":0,"features":{...}}
    """
    files = expand_inputs(paths, allow_streams=True)
    _emit(iter_range(files, compression, 0, n), **out)


@click.command("cat")
@click.option(
    "-r",
    "--range",
    "span",
    default=":",
    show_default=True,
    help="Records A:B of the inputs (half-open; negatives count from the end).",
)
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="Like tail -f: at the end of the file wait for the records a writer appends "
    "(one local file; a record only partly written is waited for). Ctrl-C ends it "
    "(exit 130).",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0, min_open=True),
    default=0.5,
    show_default=True,
    help="With --follow: seconds between looks at a file with nothing new.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="With --follow: end after this many seconds without a new record "
    "(a record still torn then is an error).",
)
@_output_options
def cat_command(
    paths: tuple[str, ...],
    compression: str,
    span: str,
    *,
    follow: bool,
    poll_interval: float,
    idle_timeout: float | None,
    **out: Any,
) -> None:
    """Records of the inputs (all, or --range A:B across the files), decoded.

    PATHS are files, pipes or quoted globs. Files with a valid sidecar index are read
    by random access (only the records in the range); others are read from the start.
    Reads pipes and "-" (standard input) too, with non-negative indices. --follow
    waits for more records at the end of a file that is still being written.

    \b
    Example:
      $ tfr cat --range 5:7 --json 'train-*.tfrecord'
      $ tfr cat --raw a.tfrecord b.tfrecord > both.tfrecord
      $ tfr cat --follow --json logs/events.tfrecord
    """
    if follow:
        _emit(_follow(paths, compression, span, poll_interval, idle_timeout), flush=True, **out)
        return
    start, stop = parse_range(span)
    files = expand_inputs(paths, allow_streams=True)
    _emit(iter_range(files, compression, start, stop), **out)


def _follow(
    paths: tuple[str, ...],
    compression: str,
    span: str,
    poll_interval: float,
    idle_timeout: float | None,
) -> Generator[Located, None, None]:
    if span != ":":
        raise click.UsageError("--follow reads a file from its start: it takes no --range")
    files = expand_inputs(paths, allow_streams=True)
    if len(files) != 1 or stream_kind(files[0]) is not None or is_remote(files[0]):
        raise click.UsageError("--follow follows one local file (not a pipe or a URL)")
    kind = "auto" if compression == "auto" else detect_compression(files[0], compression)
    records = read_records(
        files[0],
        kind,
        max_record_bytes=settings().max_record_bytes,
        follow=True,
        poll_interval=poll_interval,
        idle_timeout=idle_timeout,
    )
    for i, record in enumerate(records):
        yield files[0], i, record


COMMANDS = [head_command, cat_command]
