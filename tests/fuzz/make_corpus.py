"""Regenerates the committed seed corpus: ``python -m tests.fuzz.make_corpus``.

Each seed is ``mode byte + file bytes`` (see ``framing_checks.py`` for the modes): valid
files, each kind of damage, lying lengths, and small GZIP/ZLIB streams.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib

from tfrecord_engine import framing

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "framing")


def _header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", framing.mask_crc(framing.crc32c(raw)))


def seeds() -> dict[str, bytes]:
    """Returns the seeds by name."""
    three = framing.frame_many([b"", b"a", b"hello world"])
    flipped = bytearray(three)
    flipped[len(framing.frame(b"")) + 12] ^= 0x04
    bad_len = bytearray(three)
    bad_len[0] ^= 0x01
    gz = zlib.compressobj(-1, zlib.DEFLATED, 31, 9)
    zz = zlib.compressobj(-1, zlib.DEFLATED, 15, 9)
    return {
        "empty-file": b"\x00",
        "one-empty-record": b"\x00" + framing.frame(b""),
        "three-records": b"\x00" + three,
        "data-crc-flip": b"\x00" + bytes(flipped),
        "length-crc-flip": b"\x00" + bytes(bad_len),
        "torn-header": b"\x00" + three + three[:7],
        "torn-data": b"\x00" + three + framing.frame(b"xyz")[:-2],
        "garbage-between": b"\x00" + framing.frame(b"a") + b"junk" * 3 + framing.frame(b"b"),
        "zeros-between": b"\x00" + framing.frame(b"a") + bytes(40) + framing.frame(b"b"),
        "lying-2p31": b"\x00" + _header(2**31) + b"tail",
        "lying-2p64-1": b"\x00" + _header(2**64 - 1) + b"tail",
        "nested-frame": b"\x00" + framing.frame(b"p" + framing.frame(b"inner")),
        "gzip-stream": b"\x01" + gz.compress(three) + gz.flush(),
        "zlib-stream": b"\x02" + zz.compress(three) + zz.flush(),
        "compress-damaged": b"\x03" + bytes(flipped),
    }


def main() -> None:
    """Writes every seed as ``<name>-<sha1 prefix>`` into the corpus directory."""
    os.makedirs(CORPUS, exist_ok=True)
    for name, data in seeds().items():
        digest = hashlib.sha1(data).hexdigest()[:10]
        with open(os.path.join(CORPUS, f"{name}-{digest}"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
