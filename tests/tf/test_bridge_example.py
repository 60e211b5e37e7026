"""examples/global_shuffle_training.py runs, and shows what it claims (small sizes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "global_shuffle_training.py"


def test_global_shuffle_example(tf: ModuleType, tmp_path: Any) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(sys.path))
    args = ["--records", "2000", "--shards", "2", "--batch", "64", "--epochs", "1"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    ours, theirs = out["engine_global_shuffle"], out["tf_shuffle_buffer_1000"]
    # Label-sorted files: a global shuffle mixes all labels from the first batch on and
    # keeps no trace of file order; a 1,000-record buffer does neither.
    assert ours["labels_in_first_batches"] == 10
    assert ours["mean_labels_per_batch"] > theirs["mean_labels_per_batch"]
    assert abs(ours["spearman"]) < 0.1
    assert theirs["spearman"] > 0.3
    assert out["eval_replicas"] == 2
    assert out["eval_records"] == 2000, "exact evaluation: every record once"
