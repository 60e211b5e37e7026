"""Golden files written by TensorFlow 2.21 (see tests/golden/make_golden.py): no TF needed."""

from __future__ import annotations

import hashlib
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

import tfrecord_engine as tfe
from tests.golden.make_golden import golden_records

GOLDEN = Path(__file__).parent / "golden"
MANIFEST: dict[str, Any] = json.loads((GOLDEN / "manifest.json").read_text())
FILES = sorted(MANIFEST["files"].items())
# Compressed bytes are identical only on stock zlib on Linux (spec §2 caveats).
STOCK_ZLIB = sys.platform.startswith("linux") and zlib.ZLIB_RUNTIME_VERSION.startswith("1.")


@pytest.mark.parametrize(("name", "meta"), FILES, ids=[n for n, _ in FILES])
def test_reads_tensorflow_golden_file(name: str, meta: dict[str, Any]) -> None:
    recs = list(tfe.read_records(GOLDEN / name, meta["compression"]))
    assert len(recs) == meta["count"]
    assert [hashlib.sha256(r).hexdigest() for r in recs] == meta["sha256"]


@pytest.mark.parametrize(("name", "meta"), FILES, ids=[n for n, _ in FILES])
def test_writer_reproduces_golden_file(tmp_path: Path, name: str, meta: dict[str, Any]) -> None:
    recs = golden_records() if meta["count"] > 1 else [b""] * meta["count"]
    assert [hashlib.sha256(r).hexdigest() for r in recs] == meta["sha256"]
    out = tmp_path / name
    with tfe.TFRecordWriter(out, meta["compression"]) as w:
        for r in recs:
            w.write(r)
    ours, theirs = out.read_bytes(), (GOLDEN / name).read_bytes()
    comp = meta["compression"]
    if comp:
        wbits = 31 if comp == "GZIP" else 15
        # The decompressed framed stream is always identical...
        assert zlib.decompress(ours, wbits) == zlib.decompress(theirs, wbits)
        # ... and the compressed bytes too on stock zlib.
        if STOCK_ZLIB:
            assert ours == theirs
    else:
        assert ours == theirs
