"""Runs :mod:`tests.jax.format_cases` in a child pytest (see :mod:`tests.isolated`)."""

from __future__ import annotations

from pathlib import Path

from ..isolated import run_cases


def test_jax_format_cases_in_a_process_of_their_own() -> None:
    run_cases(Path(__file__).with_name("format_cases.py"), "jax")
