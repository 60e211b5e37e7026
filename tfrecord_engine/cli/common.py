"""What every ``tfr`` command shares: inputs, compression, progress, errors, output.

Exit codes (see ``tfr --help``): 0 ok; 1 damage found, a check failed, or an input's
contents are unusable; 2 usage error (bad options or arguments, a path that does not
exist or cannot be opened); 130 interrupted (Ctrl-C, see :mod:`.interrupt`). Expected
errors print one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeVar

import click

from ..data.dataset import _expand
from ..index.sidecar import INDEX_SUFFIX
from ..records.compression import Compression, normalize_compression
from ..records.detect import AUTO, detect_file
from ..records.recovery import DamageReport
from ..storage.filekind import stream_kind
from ..storage.options import StorageOptions
from ..storage.remote import same_file
from .interrupt import whole

__all__ = [
    "DALI_SUFFIX",
    "EXIT_DAMAGE",
    "EXIT_OK",
    "EXIT_USAGE",
    "STDIN",
    "BadInput",
    "Failure",
    "Progress",
    "chunked",
    "cli_hints",
    "compression_option",
    "damage_json",
    "detect_compression",
    "echo_json",
    "expand_inputs",
    "is_remote",
    "progress",
    "same_file",
    "settings",
]

EXIT_OK: Final = 0
EXIT_DAMAGE: Final = 1
EXIT_USAGE: Final = 2
#: What ``-`` stands for in the inputs of the commands that read pipes.
STDIN: Final = "/dev/stdin"
#: Suffix of DALI / ``tfrecord`` text indexes written by ``tfr index --format dali``.
DALI_SUFFIX: Final = ".tfindex"
_SIDECARS: Final = (INDEX_SUFFIX, DALI_SUFFIX)
_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


class Failure(click.ClickException):
    """Damage found, a check failed, or an input's contents are unusable (exit 1)."""

    exit_code = EXIT_DAMAGE


class BadInput(click.ClickException):
    """A usage error outside option parsing: a missing or unreadable path (exit 2)."""

    exit_code = EXIT_USAGE


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Options of the ``tfr`` group that every command sees."""

    progress: bool
    max_record_bytes: int | None = None
    #: ``--cache-dir``/``--cache-limit``: the node-local cache of remote inputs read by
    #: random access (``RecordDataset(cache_dir=, cache_limit=)``).
    cache_dir: str | None = None
    cache_limit: int | None = None
    #: ``--storage-option key=value``: fsspec options for every URL (never shown).
    storage_options: StorageOptions | None = dataclasses.field(default=None, repr=False)


def settings() -> Settings:
    """The group's :class:`Settings` (defaults when a command runs outside the group)."""
    ctx = click.get_current_context(silent=True)
    obj = None if ctx is None else ctx.find_object(Settings)
    return obj if obj is not None else Settings(progress=False)


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return "://" in path


# The library's advice names the arguments of its Python API; these name the flags.
_COMPRESSION_ARG: Final = re.compile(r"(?<![\w.])compression=(None|'\w*')(?: or (None|'\w*'))?")
_MAX_RECORD_BYTES_ARG: Final = re.compile(r"(?<![\w.])max_record_bytes=(\d+)")


def _compression_value(spelled: str) -> str:
    name = spelled.strip("'").lower()
    return "none" if name in ("none", "") else name


_ON_DAMAGE_ADVICE = re.compile(
    r"To read past damaged records, pass on_damage='skip' \(or 'stop': only the records "
    r"before the damage\) to RecordDataset; "
)


def cli_hints(text: str, *, compression_flag: str = "-c") -> str:
    """``text`` with the Python API's advice spelled as ``tfr``'s flags.

    >>> cli_hints("the file starts with the GZIP magic (1f 8b); pass compression='GZIP' or 'auto'")
    'the file starts with the GZIP magic (1f 8b); pass -c gzip or -c auto'
    >>> cli_hints("more than max_record_bytes=64")
    'more than --max-record-bytes 64'
    >>> cli_hints("To read past damaged records, pass on_damage='skip' (or 'stop': only the "
    ...           "records before the damage) to RecordDataset; `tfr repair x` writes a copy.")
    '`tfr repair x` writes a copy.'
    """

    def flag(match: re.Match[str]) -> str:
        out = f"{compression_flag} {_compression_value(match[1])}"
        if match[2] is not None:
            out += f" or {compression_flag} {_compression_value(match[2])}"
        return out

    text = _COMPRESSION_ARG.sub(flag, text)
    text = _MAX_RECORD_BYTES_ARG.sub(r"--max-record-bytes \1", text)
    # The dataset's advice for Python callers (on_damage=...) has no flag here: what a
    # tfr user can do is tfr repair, which the same hint names.
    text = _ON_DAMAGE_ADVICE.sub("", text)
    return text.replace("with shuffle=False", "without --shuffle")


def damage_json(report: DamageReport) -> dict[str, object]:
    """A :class:`~tfrecord_engine.DamageReport` as a JSON object (advice as flags)."""
    return {
        "record_index": report.record_index,
        "offset": report.offset,
        "bytes_skipped": report.bytes_skipped,
        "reason": cli_hints(report.reason),
    }


def detect_compression(path: str, given: str) -> Compression | str:
    """``given`` unless it is ``"auto"``; then from the file's first bytes, its extension
    a hint only (see :mod:`tfrecord_engine.records.detect`). A pipe or standard input
    stays ``"auto"``: :func:`~tfrecord_engine.read_records` peeks it without losing bytes.

    >>> detect_compression("a.gz", "none"), detect_compression("a.tfrecord", "gzip")
    (<Compression.NONE: ''>, <Compression.GZIP: 'GZIP'>)
    """
    if given != "auto":
        return normalize_compression("" if given == "none" else given)
    if not is_remote(path) and stream_kind(path) is not None:
        return AUTO
    return detect_file(path, settings().storage_options)


def compression_option(help_text: str, *, name: str = "--compression") -> Callable[[_F], _F]:
    """A ``[auto|none|gzip|zlib]`` option; ``auto`` recognises each file's from its bytes."""
    decls = [name, "-c"] if name == "--compression" else [name]
    return click.option(
        *decls,
        type=click.Choice(["auto", "none", "gzip", "zlib"], case_sensitive=False),
        default="auto",
        show_default=True,
        help=help_text,
    )


def expand_inputs(
    args: Sequence[str], *, allow_dirs: bool = False, allow_streams: bool = False
) -> list[str]:
    """Expands paths and globs (sorted per pattern) into input files, in argument order.

    Index sidecars (``*.tfeidx``, ``*.tfindex``) are left out, also when a shell glob
    passed them explicitly: they are never record files. With ``allow_streams`` (the
    commands that read each input once, from start to end) pipes, FIFOs and ``-``
    (standard input, at most once) are inputs too.

    Raises:
        BadInput: no argument, a glob that matches nothing, a missing local path, a
            directory where files are expected, or a pipe where random access is needed.
    """
    if not args:
        raise click.UsageError("give at least one path or glob")
    if allow_streams and list(args).count("-") > 1:
        raise BadInput("'-' (standard input) can be read once: give it once")
    out: list[str] = []
    for arg in args:
        if allow_streams and arg == "-":
            out.append(STDIN)
            continue
        try:
            # The core's expansion, so that remote globs work wherever the core has them.
            found = _expand(arg, settings().storage_options)
        except FileNotFoundError as exc:
            raise BadInput(f"no file matches {arg!r}") from exc
        for path in found:
            if path.endswith(_SIDECARS):
                continue
            if not is_remote(path):
                if not os.path.exists(path):
                    raise BadInput(f"no such file: {path}")
                if os.path.isdir(path):
                    if not allow_dirs:
                        raise BadInput(f"is a directory, not a TFRecord file: {path}")
                elif not allow_streams and (kind := stream_kind(path)) is not None:
                    # This command needs random access or reads its inputs twice.
                    raise BadInput(
                        f"not a regular file ({kind}): {path}; of the tfr commands, "
                        "count, verify, head and cat read pipes and '-'"
                    )
            out.append(path)
    if not out:
        raise BadInput(f"only index files among {', '.join(args)}")
    return out


def chunked(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    """Consecutive lists of ``size`` items (the last may be shorter).

    >>> list(chunked(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def echo_json(value: object) -> None:
    """Writes ``value`` as one line of compact JSON to stdout (Ctrl-C never cuts it)."""
    import json  # noqa: PLC0415 - only the --json paths need it

    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    with whole():
        click.echo(text)


class Progress:
    """A progress bar on stderr that may be disabled (then every call is a no-op)."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar
        self._pending = 0

    def update(self, n: int, *, flush_every: int = 1) -> None:
        """Advances by ``n``; the bar is redrawn once ``flush_every`` has accumulated."""
        if self._bar is None:
            return
        self._pending += n
        if self._pending >= flush_every:
            self._bar.update(self._pending)
            self._pending = 0

    def finish(self) -> None:
        """Draws what is pending."""
        if self._bar is not None and self._pending:
            self._bar.update(self._pending)
            self._pending = 0

    def echo(self, message: str, **style: Any) -> None:
        """Prints a line (``click.secho``) on a line of its own, never after the bar.

        On a terminal the bar's line has no newline until the bar ends: it is erased
        first, and drawn again below the message.
        """
        bar = self._bar
        file = getattr(bar, "file", None)
        drawn = file is not None and file.isatty()
        if file is not None and drawn:
            width = shutil.get_terminal_size().columns
            file.write("\r" + " " * max(width - 1, 0) + "\r")
            file.flush()
        click.secho(message, **style)
        if drawn:
            # click skips drawing a line it drew last: forget it, then draw again.
            bar._last_line = None
            bar.render_progress()


@contextlib.contextmanager
def progress(length: int, label: str) -> Iterator[Progress]:
    """A bar of ``length`` steps when ``--progress`` is on (default: stderr is a TTY)."""
    if not settings().progress:
        yield Progress(None)
        return
    bar: Any
    with click.progressbar(
        length=length, label=label, file=sys.stderr, show_pos=True, width=24
    ) as bar:
        p = Progress(bar)
        yield p
        p.finish()
