"""Ctrl-C in ``tfr``: exit 130 with a partial summary, never half an output.

While a command runs, SIGINT raises ``KeyboardInterrupt`` where the command is, as
Python's own handler does (a read blocked on a pipe is interrupted too), except inside
a :func:`whole` section: there it is held, and raised when the section ends. Sections
wrap what must not be cut: one output line or record, one JSON document, one batch of
statistics, the publication of a shard. So stdout ends at a whole line, a whole record
or a whole JSON document. A second Ctrl-C while the first is held is not held (a write
to a reader that stopped reading would hold it forever).

A command reports how far it got with :func:`on_interrupt`: its callback prints what
the command has (the JSON document with ``"interrupted": true`` under ``--json``) and
returns the line for stderr; ``tfr`` then exits 130 (128 + SIGINT, what a shell reports
for a command stopped by Ctrl-C). A second Ctrl-C while that summary is written ends the
process at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import IO, Any, Final

import click

__all__ = [
    "EXIT_INTERRUPTED",
    "Interrupted",
    "handling_sigint",
    "on_interrupt",
    "whole",
]

#: 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C.
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT


class Interrupted(click.ClickException):
    """Ctrl-C stopped the command; the message says how far it got (exit 130)."""

    exit_code = EXIT_INTERRUPTED

    def show(self, file: IO[Any] | None = None) -> None:
        """Prints ``Interrupted: MESSAGE`` on stderr."""
        click.echo(f"Interrupted: {self.format_message()}", err=True, file=file)


@dataclasses.dataclass
class _Held:
    """The state of the SIGINT handler (signals are process-wide, so is this)."""

    depth: int = 0  # open whole() sections
    pending: bool = False  # a SIGINT came inside one


_HELD: Final = _Held()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _HELD.depth and not _HELD.pending:
        _HELD.pending = True
        return
    # A second Ctrl-C cuts a section: it may be a write that a stalled reader blocks.
    raise KeyboardInterrupt


def _main_thread() -> bool:
    # Signal handlers can be set from the main thread only (CliRunner in a test thread).
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handling_sigint() -> Iterator[None]:
    """Installs the holding SIGINT handler for the length of one command."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _HELD.depth = 0
        _HELD.pending = False


@contextlib.contextmanager
def whole() -> Iterator[None]:
    """A section that Ctrl-C does not cut: the interrupt is raised when it ends."""
    _HELD.depth += 1
    try:
        yield
    finally:
        _HELD.depth -= 1
    if not _HELD.depth and _HELD.pending:
        _HELD.pending = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def _second_sigint_kills() -> Iterator[None]:
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def on_interrupt(summary: Callable[[], str]) -> Iterator[None]:
    """Turns Ctrl-C inside the block into :class:`Interrupted`.

    ``summary`` prints the partial results the command has (on stdout, where its results
    go) and returns how far the command got, for the stderr line.
    """
    try:
        yield
    except KeyboardInterrupt:
        _HELD.pending = False
        with _second_sigint_kills():
            message = summary()
        raise Interrupted(message) from None
