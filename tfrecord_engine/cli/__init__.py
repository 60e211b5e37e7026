"""The ``tfr`` command-line tool (``python -m tfrecord_engine.cli`` runs it too).

This package imports ``click``; ``import tfrecord_engine`` never imports it.
"""

from __future__ import annotations

from .app import cli, main

__all__ = ["cli", "main"]
