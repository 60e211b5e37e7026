"""Host tests that must run in a pytest process of their own.

JAX starts threads when it is imported (Grain imports JAX) and warns on every later
``os.fork()``, which may deadlock in the child; this suite forks on purpose (decode
workers, DataLoader workers under fork, pipes). So the JAX and Grain cases live in
``*_cases.py`` files that the main run does not collect, and one test per file runs
them in a child ``pytest``, reporting its output when any case fails.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cases(cases: Path, module: str) -> None:
    """Runs the test file ``cases`` in a child pytest; skips if ``module`` is missing
    (an error under ``TFE_REQUIRE_FRAMEWORKS=1``: the child then fails importing it)."""
    if os.environ.get("TFE_REQUIRE_FRAMEWORKS") != "1" and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(cases)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    summary = done.stdout.strip().splitlines()[-1:] or [""]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in summary[0], done.stdout[-3000:]
    assert "skipped" not in summary[0] or os.environ.get("TFE_REQUIRE_FRAMEWORKS") != "1", summary


def run_python(code: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` in a fresh interpreter that imports this checkout, in the
    current directory; its output is captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
