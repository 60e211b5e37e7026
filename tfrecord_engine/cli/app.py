"""The ``tfr`` command group: global options, exit codes and error handling."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from .. import __version__
from ..errors import (
    DataLossError,
    IndexFormatError,
    InvalidArgumentError,
    ParseError,
    TFRecordError,
)
from ..storage.options import StorageOptions, normalize_storage_options, parse_storage_option
from .common import BadInput, Failure, Settings, cli_hints
from .interrupt import Interrupted, handling_sigint
from .sizes import ByteSize

__all__ = ["cli", "main"]

_EPILOG = """\b
Exit codes:
  0  success
  1  damage found, a check failed, or an input's contents are unusable
  2  usage error: bad options or arguments, a missing or unreadable path
 130 interrupted (Ctrl-C): what was done so far is summarised, JSON stays whole
 141 the reader of the output went away (a closed pipe, e.g. `| head`)

Paths may be globs (quote them to let tfr expand them, sorted). Indexes (kept in a
hidden .tfeidx/ folder; old *.tfeidx, *.tfindex) are never read as record files.
Compression is recognised from each file's first bytes (the extension, .gz, .zz,
.zlib, .deflate, only breaks a tie) unless --compression says otherwise."""

# 128 + SIGPIPE, what a shell reports for a process killed by a closed pipe.
EXIT_BROKEN_PIPE = 141


def _translate(exc: BaseException, compression_flag: str = "-c") -> click.ClickException | None:
    """Maps an expected error to the one-line CLI error and its exit code.

    The library's advice names Python arguments (``pass compression='GZIP'``); the CLI's
    names its flags (``-c gzip``): see :func:`~tfrecord_engine.cli.common.cli_hints`.
    """
    text = cli_hints(str(exc), compression_flag=compression_flag)
    if isinstance(exc, DataLossError):
        return Failure(f"damaged file: {text} (run `tfr verify` for every damage)")
    if isinstance(exc, (ParseError, IndexFormatError)):
        return Failure(text)
    if isinstance(exc, InvalidArgumentError):
        return BadInput(text)
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
        name = exc.filename if exc.filename is not None else exc
        return BadInput(f"no such file: {name}" if isinstance(exc, FileNotFoundError) else str(exc))
    if isinstance(exc, PermissionError):
        return BadInput(f"permission denied: {exc.filename}")
    if isinstance(exc, (TFRecordError, OSError)):
        return Failure(text)
    return None


def _compression_flag(command: click.Command | None) -> str:
    """The flag that sets the inputs' compression of ``command`` (reshard's differs)."""
    for param in [] if command is None else command.params:
        if param.name == "input_compression":
            return param.opts[0]
    return "-c"


def _storage_options(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> StorageOptions | None:
    """``--storage-option`` values as one mapping (a key given twice: the last wins)."""
    del ctx, param
    try:
        return normalize_storage_options(dict(parse_storage_option(v) for v in values))
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="--storage-option") from None


class _Group(click.Group):
    """A group that turns expected exceptions into one-line errors (no tracebacks)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with handling_sigint():
                return super().invoke(ctx)
        except BrokenPipeError:
            # The consumer closed the pipe (`tfr cat ... | head`): stop quietly. Point
            # stdout at devnull so the interpreter's final flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(EXIT_BROKEN_PIPE)
        except click.ClickException:
            raise
        except KeyboardInterrupt:
            # Ctrl-C outside a command's own summary (e.g. while expanding globs): click
            # would print "Aborted!" and exit 1, the code of "damage found".
            raise Interrupted(f"tfr {ctx.invoked_subcommand} stopped") from None
        except (TFRecordError, OSError) as exc:
            name = ctx.invoked_subcommand
            command = None if name is None else self.get_command(ctx, name)
            err = _translate(exc, _compression_flag(command))
            if err is None:  # pragma: no cover - _translate covers both bases
                raise
            raise err from exc
        except MemoryError as exc:
            raise Failure(
                "out of memory: a record is larger than the memory available; "
                "`tfr --max-record-bytes N ...` refuses such records as damage"
            ) from exc


@click.group(cls=_Group, epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bars on stderr [default: when stderr is a terminal].",
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour output [default: on a terminal, unless NO_COLOR is set].",
)
@click.option(
    "--max-record-bytes",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Refuse records announcing more than N data bytes, as damage [default: no limit].",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    envvar="TFE_CACHE_DIR",
    metavar="DIR",
    help="Copy remote (URL) inputs read by random access (head, cat, reshard --shuffle) "
    "whole into this node-local folder and read them there; shared by processes "
    "[env TFE_CACHE_DIR].",
)
@click.option(
    "--cache-limit",
    type=ByteSize(),
    default=None,
    metavar="SIZE",
    help="The most bytes --cache-dir holds (e.g. 50G) [default: no limit but the disk].",
)
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    callback=_storage_options,
    metavar="KEY=VALUE",
    help="An fsspec option for URL inputs and outputs (repeatable; the value is JSON when "
    "it parses, else a string), e.g. endpoint_url=http://127.0.0.1:8333 or "
    'client_kwargs=\'{"region_name": "eu-west-1"}\' for s3://. They win over fsspec\'s '
    "configuration [default: fsspec's configuration only].",
)
@click.version_option(__version__, prog_name="tfr")
@click.pass_context
def cli(  # noqa: PLR0917 - click passes the group's options by name
    ctx: click.Context,
    progress: bool | None,
    color: bool | None,
    max_record_bytes: int | None,
    cache_dir: str | None,
    cache_limit: int | None,
    storage_option: StorageOptions | None,
) -> None:
    """Inspect, check and reshape TFRecord files."""
    if color is None and os.environ.get("NO_COLOR"):
        color = False  # https://no-color.org: any non-empty value disables colour
    ctx.color = color
    if progress is None:
        progress = sys.stderr.isatty()
    if cache_limit is not None and cache_dir is None:
        raise click.UsageError("--cache-limit needs --cache-dir")
    ctx.obj = Settings(
        progress=progress,
        max_record_bytes=max_record_bytes,
        cache_dir=cache_dir,
        cache_limit=cache_limit,
        storage_options=storage_option,
    )


def _register() -> None:
    from . import convert, files, repair, reshard, schema, show  # noqa: PLC0415

    for module in (files, show, schema, convert, reshard, repair):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Runs ``tfr`` (the console entry point) and exits with its status.

    Example:
        >>> try:
        ...     main(["--version"])
        ... except SystemExit as done:
        ...     print("exit status", done.code)
        tfr, version 0.1.0
        exit status 0
    """
    cli.main(args=argv, prog_name="tfr")


if __name__ == "__main__":  # pragma: no cover
    main()
