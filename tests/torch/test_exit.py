"""A script that dies of an uncaught exception exits quietly: no llvmlite noise.

Before the kernels were dropped at exit, a script that imported PyTorch, used a kernel
(loaded in the background) and then raised printed one ``Exception ignored in
ObjectRef.__del__`` traceback per piece of numba's compiled code after its own error.
"""

from __future__ import annotations

from pathlib import Path

from ..isolated import run_python
from ..optional import require

require("torch")

SCRIPT = """
import os, sys, torch
import tfrecord_engine as tfe
path = os.path.join(sys.argv[1], "a.tfrecord")
with tfe.TFRecordWriter(path, index=True) as w:
    w.write_many(tfe.encode_example({"image": [bytes(100)], "y": [i]}) for i in range(10))
raise KeyError("the script's own error")
"""


def test_an_uncaught_exception_exits_without_teardown_noise(tmp_path: Path) -> None:
    done = run_python(SCRIPT, str(tmp_path), timeout=300)
    assert done.returncode == 1
    assert 'KeyError: "the script\'s own error"' in done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]
