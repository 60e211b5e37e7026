"""Hypothesis strategies for encoded images (``ImageFeature`` tests): PNG files of every
pixel layout Pillow writes, with the pixels they hold.

Needs Pillow (the ``image`` extra) as well as Hypothesis.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from ..errors import MissingDependencyError, install_hint

try:
    from PIL import Image
except ImportError as exc:  # pragma: no cover - exercised by tests/test_packaging.py
    raise MissingDependencyError(
        f"tfrecord_engine.testing.images needs Pillow: {install_hint('image')}"
    ) from exc

__all__ = ["EncodedImage", "encode_png", "encode_png16", "png_images"]

#: Channels per layout drawn: grey, grey + alpha, RGB, RGBA (8-bit), and 16-bit grey.
LAYOUTS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "I;16": 1}


@dataclass(frozen=True)
class EncodedImage:
    """An encoded image and the pixels ``[h, w, c]`` it holds (uint8, or uint16 for 16-bit)."""

    data: bytes
    pixels: npt.NDArray[Any]
    layout: str


def encode_png(pixels: npt.NDArray[Any]) -> bytes:
    """``pixels`` (``[h, w]``, ``[h, w, 1-4]`` uint8, or ``[h, w]`` uint16) as a PNG file."""
    arr = pixels[:, :, 0] if pixels.ndim == 3 and pixels.shape[2] == 1 else pixels
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr)).save(out, "PNG")
    return out.getvalue()


def encode_png16(pixels: npt.NDArray[np.uint16]) -> bytes:
    """``pixels`` ``[h, w, c]`` (c: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA) as a 16-bit PNG,
    written here: Pillow writes no 16-bit colour PNGs."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    h, w, c = pixels.shape
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = b"".join(b"\0" + row.astype(">u2").tobytes() for row in pixels)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, colour, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@st.composite
def png_images(
    draw: st.DrawFn, max_side: int = 12, layouts: tuple[str, ...] = tuple(LAYOUTS)
) -> EncodedImage:
    """A PNG image of a drawn size, pixel layout and content (lossless: the pixels are
    exactly what a decoder must return, in their own channels)."""
    layout = draw(st.sampled_from(layouts))
    h = draw(st.integers(1, max_side))
    w = draw(st.integers(1, max_side))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if layout == "I;16":
        pixels: npt.NDArray[Any] = rng.integers(0, 1 << 16, (h, w, 1), dtype=np.uint16)
    else:
        pixels = rng.integers(0, 256, (h, w, LAYOUTS[layout]), dtype=np.uint8)
    return EncodedImage(encode_png(pixels), pixels, layout)
