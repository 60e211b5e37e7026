"""Regenerates the committed seed corpora: ``python -m tests.fuzz.make_corpus``.

Framing seeds are ``mode byte + file bytes`` (see ``framing_checks.py`` for the modes):
valid files, each kind of damage, lying lengths, and small GZIP/ZLIB streams. Example
seeds are ``spec byte + records joined by SEPARATOR`` (see ``example_checks.py``): valid
Examples and SequenceExamples, keys in different orders, unpacked lists, long varints,
malformed and deeply nested input.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib

from tests.fuzz.example_checks import SEPARATOR
from tfrecord_engine.records import framing
from tfrecord_engine.testing.examples import serialize_example, serialize_sequence_example

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "framing")
EXAMPLE_CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "example")


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


def example_seeds() -> dict[str, bytes]:
    """Returns the Example parsing seeds by name."""
    ints = [0, 1, 127, 128, 2**21, 2**35, 2**63 - 1, -1, -(2**63)]
    one = serialize_example(
        [("i", ("int64", ints)), ("f", ("float32", [0.5, -2.0])), ("s", ("string", [b"ab", b""]))]
    )
    flipped = serialize_example([("s", ("string", [b"x"])), ("i", ("int64", [7]))])
    fixed = serialize_example(
        [
            ("i", ("int64", [1, 2])),
            ("f", ("float32", [1.0])),
            ("s", ("string", [b"v"])),
            ("a_key_longer_than_8", ("int64", [3])),
        ]
    )
    ragged = serialize_example(
        [("r", ("int64", [1, 2, 3])), ("ix", ("int64", [4])), ("v", ("float32", [9.0]))]
    )
    seq = serialize_sequence_example(
        [("c", ("int64", [5]))], [("q", [("int64", [1]), ("int64", [2])]), ("w", [None])]
    )
    return {
        "varlen": b"\x00" + one,
        "key-orders": b"\x00" + SEPARATOR.join([one, flipped, b""]),
        "unpacked": b"\x00" + serialize_example([("i", ("int64", ints))], packed=False),
        "fixed": b"\x01" + SEPARATOR.join([fixed, fixed]),
        "ragged-sparse": b"\x02" + ragged,
        "sequence": b"\x00" + seq,
        "split-unknown": b"\x00"
        + serialize_example([("i", ("int64", [1])), ("s", None)], split_at=1, unknown_field=True),
        "torn-varint": b"\x00\x0a\x0b\x0a\x09\x0a\x01i\x12\x04\x1a\x02\x0a\x81",
        "deep-groups": b"\x00" + b"\x0b" * 2000,
        "long-length": b"\x00\x0a" + b"\xff" * 11,
    }


def _write(directory: str, seeds_by_name: dict[str, bytes]) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, data in seeds_by_name.items():
        digest = hashlib.sha1(data).hexdigest()[:10]
        with open(os.path.join(directory, f"{name}-{digest}"), "wb") as f:
            f.write(data)


def main() -> None:
    """Writes every seed as ``<name>-<sha1 prefix>`` into its corpus directory."""
    _write(CORPUS, seeds())
    _write(EXAMPLE_CORPUS, example_seeds())


if __name__ == "__main__":
    main()
