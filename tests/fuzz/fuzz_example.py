"""Coverage-guided fuzzing of Example parsing with atheris (libFuzzer).

Run it (atheris must be installed; libFuzzer flags pass through)::

    python tests/fuzz/fuzz_example.py -runs=1000000 /tmp/new-corpus tests/fuzz/corpus/example

The property checked is in ``example_checks.py``; the committed corpus is replayed
without atheris by ``test_fuzz_replay.py``.
"""

from __future__ import annotations

import importlib
import os
import sys

EXCLUDE = [m for m in os.environ.get("TFE_FUZZ_EXCLUDE", "").split(",") if m]


def main() -> None:
    """Instruments tfrecord_engine, then hands control to libFuzzer."""
    atheris = importlib.import_module("atheris")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(os.path.dirname(here)))
    with atheris.instrument_imports(include=["tfrecord_engine"], exclude=EXCLUDE):
        checks = importlib.import_module("tests.fuzz.example_checks")
    atheris.Setup(sys.argv, checks.check_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
