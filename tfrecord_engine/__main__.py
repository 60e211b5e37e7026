"""``python -m tfrecord_engine``: runs the ``tfr`` command line tool."""

from __future__ import annotations

from .cli.app import main

main()
