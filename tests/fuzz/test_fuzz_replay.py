"""Replays the committed fuzz corpora (no atheris needed) and fuzzes with Hypothesis.

The long run, ``--run-slow``, drives atheris for a million inputs per target (framing,
Example parsing) when it is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz import example_checks
from tests.fuzz.framing_checks import check_one
from tests.fuzz.make_corpus import CORPUS, EXAMPLE_CORPUS, example_seeds, seeds
from tfrecord_engine.records import framing
from tfrecord_engine.testing.damage import Damage, damages
from tfrecord_engine.testing.examples import ParseCase, parse_cases
from tfrecord_engine.testing.records import record_lists

TARGETS = {
    "framing": (Path(__file__).with_name("fuzz_framing.py"), CORPUS),
    "example": (Path(__file__).with_name("fuzz_example.py"), EXAMPLE_CORPUS),
}


def _corpus(directory: str = CORPUS) -> list[Path]:
    return sorted(Path(directory).iterdir())


def test_committed_corpus_is_current() -> None:
    names = {p.name.rsplit("-", 1)[0] for p in _corpus()}
    assert set(seeds()) <= names
    names = {p.name.rsplit("-", 1)[0] for p in _corpus(EXAMPLE_CORPUS)}
    assert set(example_seeds()) <= names


@pytest.mark.parametrize("seed", _corpus(), ids=lambda p: p.name)
def test_replay_corpus(seed: Path) -> None:
    check_one(seed.read_bytes())


@pytest.mark.parametrize("seed", _corpus(EXAMPLE_CORPUS), ids=lambda p: p.name)
def test_replay_example_corpus(seed: Path) -> None:
    example_checks.check_one(seed.read_bytes())


@given(spec=st.integers(0, 255), blob=st.binary(max_size=200))
def test_fuzz_example_random_bytes(spec: int, blob: bytes) -> None:
    example_checks.check_one(bytes([spec]) + blob)


@given(spec=st.integers(0, 255), case=parse_cases(max_batch=4), data=st.data())
def test_fuzz_example_mutated_records(spec: int, case: ParseCase, data: st.DataObject) -> None:
    joined = example_checks.SEPARATOR.join(case.records)
    if joined:
        damage: Damage = data.draw(damages(len(joined)), label="damage")
        joined = damage.apply(joined)
    example_checks.check_one(bytes([spec]) + joined)


@given(mode=st.integers(0, 3), blob=st.binary(max_size=200))
def test_fuzz_random_bytes(mode: int, blob: bytes) -> None:
    check_one(bytes([mode]) + blob)


@given(
    mode=st.sampled_from([0, 3]), records=record_lists(max_records=6, max_size=64), data=st.data()
)
def test_fuzz_damaged_files(mode: int, records: list[bytes], data: st.DataObject) -> None:
    blob = framing.frame_many(records)
    if blob:
        damage: Damage = data.draw(damages(len(blob)), label="damage")
        blob = damage.apply(blob)
    check_one(bytes([mode]) + blob)


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atheris_a_million_runs(tmp_path: Path, target: str) -> None:
    """Ten libFuzzer processes of 100,000 inputs each, sharing one growing corpus.

    Memory stays flat (about 70 MB); ``recovery`` avoids ``==`` on numpy arrays, which
    atheris's comparison tracing used to turn into a leak of tens of KB per input.
    """
    pytest.importorskip("atheris")
    work = tmp_path / "corpus"
    work.mkdir()
    total = int(os.environ.get("TFE_FUZZ_RUNS", "1000000"))
    batch = min(total, 100_000)
    done = 0
    while done < total:
        out = subprocess.run(
            [
                sys.executable,
                str(TARGETS[target][0]),
                f"-runs={batch}",
                "-max_len=4096",
                "-rss_limit_mb=4096",
                str(work),
                TARGETS[target][1],
            ],
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
            cwd=Path(__file__).parents[2],
        )
        tail = out.stderr[-3000:]
        assert out.returncode == 0, tail
        assert f"Done {batch} runs" in out.stderr, tail
        done += batch
    shutil.rmtree(work)
