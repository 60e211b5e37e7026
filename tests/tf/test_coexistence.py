"""The core never imports TensorFlow, and both import together in either order."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import tfrecord_engine

_ROUND_TRIP = """
import os, tempfile
p = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
with tfe.TFRecordWriter(p) as w:
    w.write(b"payload")
got = [r.numpy() for r in tf.data.TFRecordDataset(p)]
assert got == [b"payload"], got
with tf.io.TFRecordWriter(p) as w:
    w.write(b"back")
assert list(tfe.read_records(p)) == [b"back"]
print("ok")
"""


@pytest.mark.parametrize(
    "imports",
    [
        "import tfrecord_engine as tfe\nimport tensorflow as tf\n",
        "import tensorflow as tf\nimport tfrecord_engine as tfe\n",
    ],
    ids=["engine-first", "tensorflow-first"],
)
def test_import_both_in_either_order(tf: ModuleType, imports: str) -> None:
    del tf  # only ensures TensorFlow is installed (or skips)
    code = imports + textwrap.dedent(_ROUND_TRIP)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_core_does_not_import_tensorflow() -> None:
    code = (
        "import sys, tfrecord_engine, tfrecord_engine.testing.records\n"
        "import pkgutil, importlib\n"
        "for m in pkgutil.walk_packages(tfrecord_engine.__path__, 'tfrecord_engine.'):\n"
        "    if m.name.split('.')[-1] in ('__main__', 'demo'):\n"
        "        continue\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'tensorflow' or n.startswith('tensorflow.'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    src = Path(tfrecord_engine.__file__).parent
    offenders = [
        str(p)
        for p in src.rglob("*.py")
        if any(
            line.lstrip().startswith(("import tensorflow", "from tensorflow"))
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []
