"""Replays the committed fuzz corpus (no atheris needed) and fuzzes with Hypothesis.

The long run, ``--run-slow``, drives atheris for a million inputs when it is installed.
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

from tests.fuzz.framing_checks import check_one
from tests.fuzz.make_corpus import CORPUS, seeds
from tfrecord_engine import framing
from tfrecord_engine.testing.damage import Damage, damages
from tfrecord_engine.testing.records import record_lists

FUZZER = Path(__file__).with_name("fuzz_framing.py")


def _corpus() -> list[Path]:
    return sorted(Path(CORPUS).iterdir())


def test_committed_corpus_is_current() -> None:
    names = {p.name.rsplit("-", 1)[0] for p in _corpus()}
    assert set(seeds()) <= names


@pytest.mark.parametrize("seed", _corpus(), ids=lambda p: p.name)
def test_replay_corpus(seed: Path) -> None:
    check_one(seed.read_bytes())


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
def test_atheris_a_million_runs(tmp_path: Path) -> None:
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
                str(FUZZER),
                f"-runs={batch}",
                "-max_len=4096",
                "-rss_limit_mb=4096",
                str(work),
                CORPUS,
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
