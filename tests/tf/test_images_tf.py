"""``ImageFeature`` against ``tf.io.decode_image`` on the same PNG bytes: pixels, channel
conversions and dtype scaling (colour to grey follows Pillow's rounding: within 1)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tfrecord_engine as tfe
from tfrecord_engine.testing.images import EncodedImage, encode_png16, png_images

pytestmark = pytest.mark.tf


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=png_images())
def test_png_pixels_equal_tensorflows(tf: ModuleType, case: EncodedImage) -> None:
    record = tfe.encode_example({"img": case.data})
    for dtype in ("uint8", "uint16", "float32"):
        for channels in (None, 1, 3, 4):
            spec = tfe.ImageFeature(channels=channels, dtype=dtype)
            ours = tfe.parse_single_example(record, {"img": spec})["img"]
            theirs = tf.io.decode_image(
                case.data, channels=channels or 0, dtype=getattr(tf, dtype)
            ).numpy()
            assert ours.shape == theirs.shape, (case.layout, channels, dtype)
            assert ours.dtype == theirs.dtype
            colour_to_grey = channels == 1 and case.layout in ("RGB", "RGBA")
            if dtype == "float32":
                assert np.allclose(ours, theirs, atol=1e-6 + (1 / 255 if colour_to_grey else 0))
            elif colour_to_grey:
                assert np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max() <= (
                    257 if dtype == "uint16" else 1
                )
            else:
                assert np.array_equal(ours, theirs), (case.layout, channels, dtype)


def test_sixteen_bit_colour_png_to_uint8_equals_tensorflows(tf: ModuleType) -> None:
    rng = np.random.default_rng(0)
    for c in (2, 3, 4):
        data = encode_png16(rng.integers(0, 1 << 16, (3, 5, c), dtype=np.uint16))
        ours = tfe.parse_single_example(
            tfe.encode_example({"img": data}), {"img": tfe.ImageFeature()}
        )
        assert np.array_equal(ours["img"], tf.io.decode_image(data).numpy()), c
