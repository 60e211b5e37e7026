"""Regenerates the golden TFRecord files with TensorFlow (run by hand, not by the tests).

    python -m tests.golden.make_golden

Writes ``*.tfrecord*`` files and ``manifest.json`` (per file: compression, record
count, and the SHA-256 of every record) so that reader tests need no TensorFlow.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

HERE = Path(__file__).parent


def golden_records() -> list[bytes]:
    """Deterministic payloads: empty, tiny, text, binary, ~850 B, and one 100 KB record."""
    recs = [b"", b"x", b"hello", "héllo wörld".encode()]
    recs += [bytes((i * 37 + j) % 256 for j in range(i * 13)) for i in range(1, 12)]
    recs.append(bytes(range(256)) * 3 + b"tail" * 22)  # ~856 bytes, MNIST-like size
    recs.append(b"0123456789abcdef" * 6400)  # 100 KiB, compressible
    return recs


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    recs = golden_records()
    files: dict[str, dict[str, object]] = {}
    for name, comp, payload in (
        ("records.tfrecord", "", recs),
        ("records.tfrecord.gz", "GZIP", recs),
        ("records.tfrecord.zz", "ZLIB", recs),
        ("empty.tfrecord", "", []),
        ("empty.tfrecord.gz", "GZIP", []),
        ("empty.tfrecord.zz", "ZLIB", []),
        ("single_empty_record.tfrecord", "", [b""]),
    ):
        with tf.io.TFRecordWriter(str(HERE / name), comp) as w:
            for r in payload:
                w.write(r)
        files[name] = {
            "compression": comp,
            "count": len(payload),
            "sha256": [hashlib.sha256(r).hexdigest() for r in payload],
        }
    manifest = {"tensorflow": tf.__version__, "files": files}
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
