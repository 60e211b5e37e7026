"""``tfr schema`` hints at RawFeature for fixed-size bytes values, and the hint parses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import invoke
from tfrecord_engine.cli.infer import RAW_HINT_BYTES


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(path: str, records: list[bytes]) -> None:
    with tfe.TFRecordWriter(path) as w:
        w.write_many(records)


def _line(out: str, key: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith(f'    "{key}"')]
    return line


def test_fixed_size_bytes_get_the_hint_and_it_parses(cwd: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (30, 784), dtype=np.uint8)
    records = [
        tfe.encode_example({"image": im.tobytes(), "label": i, "name": f"n{i}"})
        for i, im in enumerate(images)
    ]
    _write("m.tfrecord", records)
    out = invoke("schema", "m.tfrecord").stdout
    assert _line(out, "image") == (
        '    "image": tfe.FixedLenFeature([], "string"),  # always 1 value of 784 bytes: '
        'tfe.RawFeature([784], "uint8") reads arrays'
    )
    assert _line(out, "name").endswith("# always 1 value")  # sizes vary: no hint
    assert _line(out, "label").endswith("# always 1 value")
    hinted = _line(out, "image").split("# always 1 value of 784 bytes: ")[1]
    spec = eval(hinted.removesuffix(" reads arrays"), {"tfe": tfe})
    got = tfe.parse_example(records, {"image": spec})["image"]
    np.testing.assert_array_equal(got, images)
    # TensorFlow's specs have no RawFeature: no hint there.
    assert "RawFeature" not in invoke("schema", "--tf", "m.tfrecord").stdout


@pytest.mark.parametrize(
    ("values", "hint"),
    [
        ([b"\0" * RAW_HINT_BYTES] * 3, True),
        ([b"\0" * (RAW_HINT_BYTES - 1)] * 3, False),  # short values: no hint
        ([b"\0" * 20, b"\1" * 20, b"\2" * 21], False),  # one size differs
        ([[b"\0" * 20, b"\1" * 20]] * 3, False),  # two values per record
        ([b"\0" * 20, b"\1" * 20, None], False),  # missing in one record
        ([b"x" * RAW_HINT_BYTES] * 3, False),  # text of one size: a string, not an array
    ],
)
def test_hint_only_for_one_value_of_one_size(cwd: Path, values: list[Any], hint: bool) -> None:
    records = [tfe.encode_example({} if v is None else {"b": v}) for v in values]
    _write("b.tfrecord", records)
    out = invoke("schema", "b.tfrecord").stdout
    assert ("RawFeature" in _line(out, "b")) is hint
    note = invoke("schema", "--json", "b.tfrecord").stdout
    assert ("RawFeature" in note) is hint


def test_sequence_example_context_gets_the_hint(cwd: Path) -> None:
    records = [
        tfe.encode_sequence_example({"emb": np.full(8, i, "<f4").tobytes()}, {"t": [[1], [2]]})
        for i in range(3)
    ]
    _write("s.tfrecord", records)
    out = invoke("schema", "s.tfrecord").stdout
    assert 'tfe.RawFeature([32], "uint8") reads arrays' in _line(out, "emb")
    context, _, _ = tfe.parse_sequence_example(
        records, context_features={"emb": tfe.RawFeature([8], "float32")}
    )
    assert context["emb"][:, 0].tolist() == [0.0, 1.0, 2.0]


def _png(pixels: np.ndarray) -> bytes:
    """A real grayscale PNG, stored uncompressed: equal sizes for equal shapes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    h, w = pixels.shape
    rows = b"".join(b"\0" + row.tobytes() for row in pixels.astype(np.uint8))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("magic", "name"),
    [
        (None, "PNG"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "JPEG"),
        (b"GIF89a", "GIF"),
        (b"RIFF\x20\x00\x00\x00WEBPVP8 ", "WebP"),
    ],
)
def test_equal_size_encoded_images_get_no_raw_hint(
    cwd: Path, magic: bytes | None, name: str
) -> None:
    rng = np.random.default_rng(1)
    if magic is None:
        images = [_png(rng.integers(0, 256, (6, 7))) for _ in range(20)]
    else:
        images = [magic + rng.bytes(300) for _ in range(20)]
    assert len(set(map(len, images))) == 1  # equal sizes: what used to get the hint
    records = [tfe.encode_example({"image": im, "label": i}) for i, im in enumerate(images)]
    _write("img.tfrecord", records)
    out = invoke("schema", "img.tfrecord").stdout
    line = _line(out, "image")
    assert "RawFeature(" not in line
    if magic is None:  # real PNGs: tfe.ImageFeature proposed (the pixels, decoded)
        assert line.startswith('    "image": tfe.ImageFeature(),  # always 1 value, encoded PNG')
    else:  # an image's magic bytes, but no image Pillow decodes: the bytes stay bytes
        assert line.startswith('    "image": tfe.FixedLenFeature([], "string"),')
        assert f"encoded {name} data" in line
    assert "RawFeature(" not in invoke("schema", "--json", "img.tfrecord").stdout
    # the per-record path (a SequenceExample's context) decides the same
    sequences = [tfe.encode_sequence_example({"image": im}, {"t": [[1]]}) for im in images]
    _write("seq.tfrecord", sequences)
    assert "RawFeature(" not in _line(invoke("schema", "seq.tfrecord").stdout, "image")
    # the spec proposed parses the records: the encoded bytes come back whole
    spec = {"image": tfe.FixedLenFeature([], "string")}
    assert tfe.parse_example(records, spec)["image"].tolist() == images
