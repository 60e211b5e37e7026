"""``ImageFeature``: one encoded image (PNG, JPEG, ...) per record, decoded to pixels.

TensorFlow parses such a feature as ``FixedLenFeature([], tf.string)`` and decodes it
afterwards with ``tf.io.decode_image``; an :class:`ImageFeature` does both in one spec,
so ``parse_example``, ``RecordDataset`` (``ds[i]``, ``__getitems__``, ``batches()``,
decode workers) and the PyTorch host hand out pixels. The bytes are parsed exactly as
``FixedLenFeature([], "string")`` (a missing value is TensorFlow's "required" error),
then decoded with Pillow (the ``image`` extra, or ``pip install pillow``)
a batch at a time, where the batch's records are decoded: on the read-ahead thread or
in the decode worker processes, never in the consumer's loop.

Outputs (``[h, w, c]`` per image, always 3-D as ``tf.io.decode_image`` gives them):

- one record (``parse_single_example``, ``ds[i]``): an array ``[h, w, c]``;
- a batch: one array ``[n, h, w, c]`` when every image has the same shape, else a list
  of ``n`` arrays (an empty batch: an array ``[0, h, w, c]`` of the spec's shape, 0
  where it gives none).

``channels``: ``None`` keeps each image's own (grey 1, grey + alpha 2, RGB 3, RGBA 4;
palette images become RGB, or RGBA when they have transparency); ``1``, ``3`` or ``4``
convert (as ``tf.io.decode_image(channels=...)``). ``dtype``: ``"uint8"`` (16-bit images
are scaled down, ``>> 8``), ``"uint16"`` (8-bit values times 257) or ``"float32"``
(``[0, 1]``), as ``tf.io.decode_image(dtype=...)`` scales them. ``shape``: ``(h, w)`` or
``(h, w, c)`` that every image must have, else the record is refused (no resizing:
that is a transform's job). An animated image gives its first frame. Pixels equal
TensorFlow's for PNG (tests/tf/test_images_tf.py), except colour to grey
(``channels=1``), which follows Pillow's luma rounding and may differ by 1; JPEG pixels
are Pillow's (libjpeg's), which may differ slightly from TensorFlow's decoder.

Bytes Pillow cannot decode raise :class:`~tfrecord_engine.ExampleParseError` naming the
feature and the record's index in its batch (``.key``, ``.index``), as any parse error.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import (
    ExampleParseError,
    InvalidArgumentError,
    MissingDependencyError,
    install_hint,
)

__all__ = ["IMAGE_DTYPES", "ImageFeature", "decode_image_bytes", "decode_images"]

#: The pixel types an :class:`ImageFeature` decodes to.
IMAGE_DTYPES = ("uint8", "uint16", "float32")
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
#: Pillow modes kept as they are when ``channels`` is None (their channel counts).
_NATIVE = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "I;16": 1}
#: Pillow modes of 16-bit greys (big- or little-endian, or widened to 32-bit ints).
_SIXTEEN = ("I;16", "I;16B", "I;16L", "I")
Prefix = Callable[[str, "int | None"], str]


@dataclass(frozen=True, slots=True, init=False)
class ImageFeature:
    """An encoded image (PNG, JPEG, GIF, BMP, WebP, TIFF: what Pillow reads) per record.

    Args:
        channels: ``None`` (or ``0``, as in ``tf.io.decode_image``) keeps each image's
            channels; ``1``, ``3`` or ``4`` converts to grey, RGB or RGBA.
        dtype: ``"uint8"``, ``"uint16"`` or ``"float32"`` (scaled to ``[0, 1]``).
        shape: ``(height, width)`` or ``(height, width, channels)`` every image must
            have (checked, not resized); ``None`` accepts any size.

    Example:
        >>> spec = ImageFeature(channels=3)
        >>> spec.channels, spec.dtype, spec.output_shape
        (3, 'uint8', (None, None, 3))
    """

    channels: int | None
    dtype: str
    shape: tuple[int, ...] | None

    def __init__(
        self, channels: int | None = None, dtype: object = "uint8", shape: object = None
    ) -> None:
        if channels == 0:
            channels = None
        if channels is not None and (
            not isinstance(channels, (int, np.integer)) or int(channels) not in _MODES
        ):
            raise InvalidArgumentError(
                f"ImageFeature: channels must be None, 1, 3 or 4, got {channels!r}"
            )
        try:
            name = np.dtype(dtype).name  # type: ignore[call-overload]
        except TypeError:
            name = str(getattr(dtype, "name", dtype))
        if name not in IMAGE_DTYPES:
            raise InvalidArgumentError(
                f"ImageFeature: dtype must be one of {', '.join(IMAGE_DTYPES)}, got {dtype!r}"
            )
        object.__setattr__(self, "channels", None if channels is None else int(channels))
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "shape", _image_shape(shape, self.channels))

    @property
    def output_shape(self) -> tuple[int | None, int | None, int | None]:
        """One image's ``(height, width, channels)``; ``None`` where images may differ."""
        if self.shape is None:
            return None, None, self.channels
        h, w = self.shape[0], self.shape[1]
        c = self.shape[2] if len(self.shape) == 3 else self.channels
        return h, w, c


def _image_shape(shape: object, channels: int | None) -> tuple[int, ...] | None:
    if shape is None:
        return None
    dims = list(getattr(shape, "as_list")()) if hasattr(shape, "as_list") else shape  # noqa: B009
    if (
        not isinstance(dims, Sequence)
        or isinstance(dims, (str, bytes))
        or len(dims) not in (2, 3)
        or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims)
        or any(int(d) <= 0 for d in dims)
    ):
        raise InvalidArgumentError(
            f"ImageFeature: shape must be (height, width) or (height, width, channels) of "
            f"positive ints, got {shape!r}"
        )
    out = tuple(int(d) for d in dims)
    if len(out) == 3 and channels is not None and out[2] != channels:
        raise InvalidArgumentError(
            f"ImageFeature: shape {out} has {out[2]} channels but channels={channels}"
        )
    return out


def _pil() -> Any:
    try:
        return importlib.import_module("PIL.Image")
    except ImportError as exc:
        raise MissingDependencyError(
            f"ImageFeature decodes images with Pillow: {install_hint('image')} "
            "(or pip install pillow)"
        ) from exc


def decode_image_bytes(data: bytes, spec: ImageFeature) -> npt.NDArray[Any]:
    """One encoded image as an array ``[h, w, c]`` of ``spec.dtype``.

    Raises:
        ValueError: Pillow cannot decode ``data`` (the message says why), or the image
            does not have ``spec.shape``.
        MissingDependencyError: Pillow is not installed.

    Example:
        >>> import io
        >>> from PIL import Image
        >>> out = io.BytesIO()
        >>> Image.new("RGB", (4, 2), (255, 0, 0)).save(out, "PNG")
        >>> decode_image_bytes(out.getvalue(), ImageFeature()).shape
        (2, 4, 3)
    """
    image_module = _pil()
    deep = _sixteen_bit_colour_png(data)
    if deep and spec.dtype != "uint8":
        raise ValueError(
            "a 16-bit colour PNG: Pillow decodes only the high 8 bits of its values, so "
            f"dtype={spec.dtype!r} would lose the rest; use dtype='uint8' (the high byte, "
            "what TensorFlow gives for uint8) or decode the bytes in a transform"
        )
    try:
        with image_module.open(io.BytesIO(data)) as im:
            pixels = _pixels(im, spec.channels)
        if deep == _GREY_ALPHA and spec.channels is None and pixels.shape[2] == 4:
            pixels = pixels[:, :, [0, 3]]  # (Pillow widens 16-bit grey + alpha to RGBA)
    except (OSError, SyntaxError, ValueError, image_module.DecompressionBombError) as exc:
        # Pillow's errors for bytes it cannot read: unknown format (UnidentifiedImageError
        # is an OSError), truncated data, broken chunks, images over its pixel limit.
        what = _kind_of(data)
        why = (
            "not in a format Pillow reads"
            if isinstance(exc, image_module.UnidentifiedImageError)
            else str(exc)
        )
        raise ValueError(f"{what} of {len(data)} bytes could not be decoded: {why}") from None
    out = _convert(pixels, spec.dtype)
    if spec.shape is not None and out.shape[: len(spec.shape)] != spec.shape:
        raise ValueError(
            f"an image of shape {list(out.shape)} (height, width, channels), but the spec "
            f"says shape {list(spec.shape)}"
        )
    return out


_GREY_ALPHA = 4  # PNG colour types with more than one channel: 2 RGB, 4 grey + alpha, 6 RGBA


def _sixteen_bit_colour_png(data: bytes) -> int:
    """The colour type of a 16-bit PNG of several channels (from its header), else 0."""
    if len(data) < 26 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return 0
    return data[25] if data[24] == 16 and data[25] in (2, 4, 6) else 0


def _kind_of(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "PNG data"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG data"
    if not data:
        return "an empty value"
    return "a value (not PNG or JPEG by its first bytes)"


def _pixels(im: Any, channels: int | None) -> npt.NDArray[Any]:
    mode = im.mode
    if mode in _SIXTEEN:
        return _sixteen_bit_grey(im, channels)
    if channels is None:
        if mode in ("P", "PA"):
            mode = "RGBA" if mode == "PA" or "transparency" in im.info else "RGB"
        elif mode == "1":
            mode = "L"
        elif mode not in _NATIVE:
            mode = "RGBA" if "A" in mode else "RGB"  # CMYK, YCbCr, LAB, HSV ...
    else:
        mode = _MODES[channels]
    arr = np.asarray(im if im.mode == mode else im.convert(mode))
    return arr[:, :, None] if arr.ndim == 2 else arr


def _sixteen_bit_grey(im: Any, channels: int | None) -> npt.NDArray[Any]:
    """A 16-bit grey image at 16 bits, its grey repeated (and an opaque alpha) for
    ``channels`` 3 or 4, as TensorFlow converts it (Pillow's own conversion clips)."""
    # Pillow's 16-bit grey modes differ by byte order; read the values as ints.
    wide = np.asarray(im.convert("I") if im.mode != "I" else im)
    if wide.size and (int(wide.min()) < 0 or int(wide.max()) > 0xFFFF):
        raise ValueError(f"{im.mode} pixels outside 0-65535 (not a 16-bit image)")
    grey = wide.astype(np.uint16)[:, :, None]
    if channels in (None, 1):
        return grey
    out = np.repeat(grey, 3, axis=2)
    if channels == 4:
        out = np.concatenate([out, np.full_like(grey, 0xFFFF)], axis=2)
    return out


def _convert(pixels: npt.NDArray[Any], dtype: str) -> npt.NDArray[Any]:
    """``tf.io.decode_image``'s scaling between 8-bit, 16-bit and float (tests/tf/)."""
    sixteen = pixels.dtype == np.uint16
    if dtype == "uint8":
        return (pixels >> 8).astype(np.uint8) if sixteen else pixels.astype(np.uint8, copy=False)
    if dtype == "uint16":
        return pixels if sixteen else pixels.astype(np.uint16) * np.uint16(257)
    scale = np.float32(65535.0 if sixteen else 255.0)
    out: npt.NDArray[np.float32] = pixels.astype(np.float32) / scale
    return out


def decode_images(
    name: str, spec: ImageFeature, values: npt.NDArray[Any], single: bool, prefix: Prefix
) -> Any:
    """The images of ``values`` (one record's 0-d, or a batch's 1-d object array of bytes).

    Args:
        name: the feature's key (errors name it).
        spec: the feature's spec.
        values: the parsed bytes (``FixedLenFeature([], "string")``'s output).
        single: one record (``[h, w, c]``) or a batch.
        prefix: the parse-error prefix for a key and a batch index (TensorFlow's form).

    Returns:
        one record: an array ``[h, w, c]``; a batch: one array ``[n, h, w, c]`` when
        every image has the same shape, else a list of arrays.

    Raises:
        ExampleParseError: a value is not a decodable image (``.key``, ``.index``).
    """
    if single:
        return _writable(_decode(name, spec, values.item(), None, prefix))
    images = [_decode(name, spec, v, i, prefix) for i, v in enumerate(values.tolist())]
    if not images:
        h, w, c = spec.output_shape
        return np.zeros((0, h or 0, w or 0, c or 0), dtype=spec.dtype)
    first = images[0].shape
    if all(im.shape == first for im in images):
        return np.stack(images)  # (a copy: writable)
    return [_writable(im) for im in images]


def _writable(pixels: npt.NDArray[Any]) -> npt.NDArray[Any]:
    # Pillow's arrays are read-only views of its image: the caller owns a copy (torch
    # shares only writable memory, and a transform may write in place).
    return pixels if pixels.flags.writeable else pixels.copy()


def _decode(
    name: str, spec: ImageFeature, data: bytes, index: int | None, prefix: Prefix
) -> npt.NDArray[Any]:
    try:
        return decode_image_bytes(data, spec)
    except ValueError as exc:
        raise ExampleParseError(
            f"{prefix(name, index)}ImageFeature: {exc}", key=name, index=index
        ) from None
