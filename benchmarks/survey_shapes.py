"""Shapes outside the matrix, written after it was tuned: the check that its figures hold
on records nobody tuned for (``python -m benchmarks.bench_shapes --shapes clips ...``).

Four shapes of kinds the matrix lacks or has only once: long float lists (speech clips
of 1-16 K samples, 4-64 KB a record), string lists beside a float vector
(multi-label records), small fixed matrices and vectors (pose keypoints), and
SequenceExamples of many short steps in two lists. Written, as the matrix's shapes,
in four files of their own sub-ranges and feature orders (``shapes.write_shape``).
First run 2026-11-29 (docs/benchmarks.md, "Shapes outside the matrix").
"""

from __future__ import annotations

import numpy as np

import tfrecord_engine as tfe
from benchmarks.shapes import SHAPES, Record, Shape, _fixed, _length


def _letters(rng: np.random.Generator, size: int) -> bytes:
    return rng.integers(97, 123, size=size, dtype=np.uint8).tobytes()


def _clips(rng: np.random.Generator, lo: float, hi: float) -> Record:
    return {
        "audio": rng.standard_normal(_length(rng, 1000, 16000, lo, hi)).astype(np.float32),
        "sample_rate": int(rng.choice([8000, 16000, 44100])),
        "transcript": _letters(rng, _length(rng, 20, 200, lo, hi)),
        "speaker": int(rng.integers(0, 5000)),
    }


def _multilabel(rng: np.random.Generator, lo: float, hi: float) -> Record:
    k = _length(rng, 1, 10, lo, hi)
    labels = [b"lbl-%d" % x for x in rng.integers(0, 10 ** int(rng.integers(1, 8)), size=k)]
    return {
        "labels": np.array(labels, dtype="S"),
        "embedding": rng.standard_normal(128).astype(np.float32),
        "id": int(rng.integers(0, 2**50)),
        "url": b"https://example.com/" + _letters(rng, _length(rng, 10, 60, lo, hi)),
        "scores": rng.random(k).astype(np.float32),
    }


def _pose(rng: np.random.Generator, lo: float, hi: float) -> Record:
    del lo, hi  # (every value of fixed size: only the files' feature orders vary)
    return {
        "keypoints": rng.random((17, 3)).astype(np.float32),
        "visibility": rng.integers(0, 3, size=17),
        "bbox": rng.random(4).astype(np.float32),
        "person_id": int(rng.integers(0, 10**6)),
        "frame": int(rng.integers(0, 10**5)),
        "camera": b"cam%d" % rng.integers(0, 10),
    }


def _steps(rng: np.random.Generator, lo: float, hi: float) -> Record:
    steps = _length(rng, 10, 200, lo, hi)
    return (
        {"length": steps, "doc": _letters(rng, _length(rng, 10, 50, lo, hi))},
        {
            "pos": rng.standard_normal((steps, 2)).astype(np.float32),
            "vel": rng.standard_normal((steps, 3)).astype(np.float32),
        },
    )


SURVEY_SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "clips",
            "speech clips (1-16 K float32 samples as a VarLenFeature, rate, transcript, speaker)",
            _clips,
            {
                "audio": tfe.VarLenFeature("float32"),
                "sample_rate": _fixed("int64"),
                "transcript": _fixed("string"),
                "speaker": _fixed("int64"),
            },
            count_key="sample_rate",
        ),
        Shape(
            "multilabel",
            "multi-label (1-10 string labels, float[128], id, url, 1-10 scores)",
            _multilabel,
            {
                "labels": tfe.VarLenFeature("string"),
                "embedding": _fixed("float32", (128,)),
                "id": _fixed("int64"),
                "url": _fixed("string"),
                "scores": tfe.VarLenFeature("float32"),
            },
            count_key="id",
        ),
        Shape(
            "pose",
            "pose (float[17, 3], int64[17], float[4], two ids, a camera name)",
            _pose,
            {
                "keypoints": _fixed("float32", (17, 3)),
                "visibility": _fixed("int64", (17,)),
                "bbox": _fixed("float32", (4,)),
                "person_id": _fixed("int64"),
                "frame": _fixed("int64"),
                "camera": _fixed("string"),
            },
            count_key="person_id",
        ),
        Shape(
            "steps",
            "SequenceExample (length, doc; 10-200 steps of float32[2] and float32[3])",
            _steps,
            {"length": _fixed("int64"), "doc": _fixed("string")},
            sequence_features={
                "pos": tfe.FixedLenSequenceFeature([2], "float32"),
                "vel": tfe.FixedLenSequenceFeature([3], "float32"),
            },
            count_key="length",
        ),
    )
}

#: The matrix's shapes and the survey's, by name (the tools' ``--shapes`` take either).
ALL_SHAPES: dict[str, Shape] = {**SHAPES, **SURVEY_SHAPES}
