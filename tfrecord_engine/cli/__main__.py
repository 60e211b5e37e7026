"""``python -m tfrecord_engine.cli``: runs ``tfr``."""

from __future__ import annotations

from .app import main

main()
