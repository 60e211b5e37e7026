"""``tfe.ImageFeature``: encoded images decoded to pixels on every read path.

Images are written with Pillow here (lossless PNGs drawn by
``tfrecord_engine.testing.images``, JPEGs compared with Pillow's own decode).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given

import tfrecord_engine as tfe
from tfrecord_engine.testing.images import EncodedImage, encode_png, encode_png16, png_images

Image = pytest.importorskip("PIL.Image")


def jpeg(pixels: np.ndarray[Any, Any]) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90)
    return out.getvalue()


def pillow(data: bytes, mode: str) -> np.ndarray[Any, Any]:
    """Pillow's own decode of ``data`` in ``mode``, as ``[h, w, c]``."""
    with Image.open(io.BytesIO(data)) as im:
        arr = np.asarray(im.convert(mode))
    return arr[:, :, None] if arr.ndim == 2 else arr


def image(seed: int, h: int = 5, w: int = 7, c: int = 3) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def write(records: list[bytes]) -> str:
    path = str(Path(tempfile.mkdtemp()) / "img.tfrecord")
    with tfe.TFRecordWriter(path, index=True) as w:
        w.write_many(records)
    return path


@given(png_images())
def test_png_pixels_come_back_exactly_in_their_own_channels(case: EncodedImage) -> None:
    sixteen = case.pixels.dtype == np.uint16
    spec = tfe.ImageFeature(dtype="uint16" if sixteen else "uint8")
    record = tfe.encode_example({"img": case.data})
    got = tfe.parse_single_example(record, {"img": spec})["img"]
    assert got.dtype == case.pixels.dtype
    assert np.array_equal(got, case.pixels)
    assert got.flags.writeable  # the caller's own copy (torch.from_numpy shares it)
    # tf.io.decode_image's scaling between 8 and 16 bits and to [0, 1] (tests/tf/)
    as8 = tfe.parse_single_example(record, {"img": tfe.ImageFeature()})["img"]
    assert np.array_equal(as8, case.pixels >> 8 if sixteen else case.pixels)
    flt = tfe.parse_single_example(record, {"img": tfe.ImageFeature(dtype="float32")})["img"]
    assert flt.dtype == np.float32
    assert np.allclose(flt, case.pixels / (65535.0 if sixteen else 255.0), atol=1e-6)


@given(png_images(layouts=("L", "LA", "RGB", "RGBA")))
def test_channels_convert_as_pillow_does(case: EncodedImage) -> None:
    record = tfe.encode_example({"img": case.data})
    for channels, mode in ((1, "L"), (3, "RGB"), (4, "RGBA")):
        spec = tfe.ImageFeature(channels=channels)
        got = tfe.parse_single_example(record, {"img": spec})["img"]
        assert np.array_equal(got, pillow(case.data, mode))


def test_jpeg_palette_and_sixteen_bit_to_uint16() -> None:
    data = jpeg(image(1, 16, 12))
    got = tfe.parse_example([tfe.encode_example({"img": data})], {"img": tfe.ImageFeature()})
    assert np.array_equal(got["img"][0], pillow(data, "RGB"))
    palette = io.BytesIO()
    Image.fromarray(image(2)).convert("P").save(palette, "PNG")
    spec = {"img": tfe.ImageFeature(dtype="uint16")}
    out = tfe.parse_single_example(tfe.encode_example({"img": palette.getvalue()}), spec)
    assert np.array_equal(out["img"], pillow(palette.getvalue(), "RGB").astype(np.uint16) * 257)


def test_sixteen_bit_colour_pngs_never_lose_bits_silently() -> None:
    rgb = np.array([[[1000, 40000, 65535], [0, 257, 300]]], np.uint16)
    record = tfe.encode_example({"img": encode_png16(rgb)})
    got = tfe.parse_single_example(record, {"img": tfe.ImageFeature()})["img"]
    assert np.array_equal(got, rgb >> 8)  # the high byte, TensorFlow's uint8 too
    for dtype in ("uint16", "float32"):
        with pytest.raises(tfe.ExampleParseError, match="16-bit colour PNG"):
            tfe.parse_single_example(record, {"img": tfe.ImageFeature(dtype=dtype)})
    grey_alpha = np.array([[[1000, 40000], [0, 300]]], np.uint16)
    record = tfe.encode_example({"img": encode_png16(grey_alpha)})
    got = tfe.parse_single_example(record, {"img": tfe.ImageFeature()})["img"]
    assert np.array_equal(got, grey_alpha >> 8)  # two channels, as stored


def test_a_batch_is_one_array_or_a_list_of_images() -> None:
    same = [encode_png(image(i)) for i in range(4)]
    spec: dict[str, Any] = {"img": tfe.ImageFeature(), "y": tfe.FixedLenFeature([], "int64")}
    records = [tfe.encode_example({"img": d, "y": i}) for i, d in enumerate(same)]
    out = tfe.parse_example(records, spec)
    assert out["img"].shape == (4, 5, 7, 3)
    assert np.array_equal(out["img"], np.stack([image(i) for i in range(4)]))
    mixed = [*records, tfe.encode_example({"img": encode_png(image(9, 2, 3, 1)), "y": 9})]
    images = tfe.parse_example(mixed, spec)["img"]
    assert isinstance(images, list)
    assert [im.shape for im in images] == [(5, 7, 3)] * 4 + [(2, 3, 1)]
    empty = tfe.parse_example([], {"img": tfe.ImageFeature(channels=3, shape=(5, 7))})
    assert empty["img"].shape == (0, 5, 7, 3)


def test_bad_images_are_parse_errors_naming_the_feature_and_record() -> None:
    good = tfe.encode_example({"img": encode_png(image(0))})
    spec = {"img": tfe.ImageFeature()}
    cases = {
        b"\x89PNG\r\n\x1a\n broken": "PNG data of 15 bytes could not be decoded",
        encode_png(image(0))[:-30]: "could not be decoded",
        b"plain text": "not PNG or JPEG",
    }
    for bad, text in cases.items():
        with pytest.raises(tfe.ExampleParseError, match=text) as err:
            tfe.parse_example([good, good, tfe.encode_example({"img": bad})], spec)
        assert (err.value.key, err.value.index) == ("img", 2)
        assert "Key: img, Index: 2" in str(err.value)
    with pytest.raises(tfe.ExampleParseError, match="spec says shape") as err:
        tfe.parse_example([good], {"img": tfe.ImageFeature(shape=(7, 5))})
    assert err.value.index == 0
    with pytest.raises(tfe.ExampleParseError, match="is required but could not be found"):
        tfe.parse_example([good, tfe.encode_example({"other": 1})], spec)


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"channels": 2}, "channels must be None, 1, 3 or 4"),
        ({"dtype": "int64"}, "dtype must be one of uint8, uint16, float32"),
        ({"shape": (4,)}, "shape must be"),
        ({"shape": (4, 4, 3), "channels": 1}, "has 3 channels but channels=1"),
    ],
)
def test_spec_arguments_are_checked(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(tfe.InvalidArgumentError, match=text):
        tfe.ImageFeature(**kwargs)
    assert tfe.ImageFeature(channels=0, dtype=np.float32).channels is None


@pytest.fixture(scope="module")
def image_file() -> tuple[str, list[bytes]]:
    records = [tfe.encode_example({"img": encode_png(image(i, 3, 4)), "y": i}) for i in range(300)]
    return write(records), records


SPEC: dict[str, Any] = {"img": tfe.ImageFeature(), "y": tfe.FixedLenFeature([], "int64")}


def test_every_dataset_path_decodes_the_same_pixels(image_file: tuple[str, list[bytes]]) -> None:
    path, _ = image_file
    want = np.stack([image(i, 3, 4) for i in range(300)])
    ds = tfe.RecordDataset(path, features=SPEC)
    assert np.array_equal(ds[7]["img"], want[7])
    assert np.array_equal(ds[[3, 1]]["img"], want[[3, 1]])
    for picks in ([5, 2, 9], list(range(0, 300, 2))):  # record by record, one batch decode
        got = ds.__getitems__(picks)
        assert all(np.array_equal(s["img"], want[i]) for s, i in zip(got, picks, strict=True))
    assert all(np.array_equal(s["img"], want[i]) for i, s in enumerate(ds))
    for epoch in (ds.batches(64), ds.batches(64, readahead=0), ds.batches(64, workers=2)):
        batches = list(epoch)
        assert np.array_equal(np.concatenate([b["img"] for b in batches]), want)
        assert batches[0]["img"].dtype == np.uint8
    ds.close()


def test_an_undecodable_image_raises_at_its_batch(tmp_path: Path) -> None:
    records = [tfe.encode_example({"img": encode_png(image(i, 2, 2)), "y": i}) for i in range(40)]
    records[25] = tfe.encode_example({"img": b"\xff\xd8\xff not a jpeg", "y": 25})
    ds = tfe.RecordDataset(write(records), features=SPEC)
    it = ds.batches(10)
    assert [next(it)["y"].tolist()[0] for _ in range(2)] == [0, 10]
    with pytest.raises(tfe.ExampleParseError, match="JPEG data") as err:
        next(it)
    assert err.value.key == "img"
    assert "25" in str(err.value) or err.value.index == 5  # the record, or its batch slot
    with pytest.raises(tfe.ExampleParseError, match="could not be decoded"):
        ds[25]


_NO_PILLOW = """
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "PIL":
            raise ModuleNotFoundError("No module named 'PIL' (blocked)", name=name)
sys.meta_path.insert(0, Block())
import tfrecord_engine as tfe
spec = {"img": tfe.ImageFeature(channels=3)}
try:
    tfe.parse_single_example(tfe.encode_example({"img": b"x"}), spec)
except tfe.MissingDependencyError as exc:
    print(json.dumps(str(exc)))
"""


def test_without_pillow_decoding_names_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_PILLOW], capture_output=True, text=True, check=True, timeout=120
    )
    message = json.loads(done.stdout.splitlines()[-1])
    assert "tfrecord-engine[image]" in message
    assert "Pillow" in message
