"""What a plain ``pip install tfrecord-engine`` gives: every shipped module imports with
the base dependencies, or says which extra it needs; public signatures show no seams."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import tfrecord_engine as tfe

ROOT = Path(tfe.__file__).parent
BRIDGE = ROOT.parent / "bridge" / "tfrecord_bridge"

# Everything the extras bring (pyproject.toml), and the test tools: blocked below as if
# they were not installed.
OPTIONAL = [
    "tensorflow",
    "hypothesis",
    "numba",
    "llvmlite",
    "fsspec",
    "aiohttp",
    "requests",
    "torch",
    "torchdata",
    "apache_beam",
    "ray",
    "grain",
    "jax",
    "array_record",
    "tfrecord",
    "pytest",
    "pyarrow",
    "pyspark",
    "polars",
    "duckdb",
    "datasets",
    "PIL",
    "s3fs",
]

_PROBE = """
import importlib, importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None
sys.meta_path.insert(0, Block())
from tfrecord_engine import MissingDependencyError
out = {}
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
        out[name] = "ok"
    except MissingDependencyError as exc:
        out[name] = "extra: " + str(exc)
    except Exception as exc:
        out[name] = f"FAILED {type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def _modules(root: Path, package: str) -> list[str]:
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__main__":
            continue  # runs the CLI when imported
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def _import_without_extras(names: list[str]) -> dict[str, str]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(OPTIONAL), json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out: dict[str, str] = json.loads(result.stdout.splitlines()[-1])
    return out


def test_every_shipped_module_imports_or_names_its_extra() -> None:
    names = _modules(ROOT, "tfrecord_engine") + _modules(BRIDGE, "tfrecord_bridge")
    outcome = _import_without_extras(names)
    failed = {n: r for n, r in outcome.items() if r.startswith("FAILED")}
    assert failed == {}
    # The core needs no extra: only the test kit, the compiled kernels, the bridge and
    # the hosts of other frameworks may ask for one.
    hosts = tuple(
        f"tfrecord_engine.{h}"
        for h in ("hosts", "torch", "beam", "ray", "grain", "jax", "arrow", "spark")
    )
    optional: tuple[str, ...] = (
        "tfrecord_engine.testing",
        "tfrecord_engine.kernels._numba",
        "tfrecord_engine.kernels._sequence",
        "tfrecord_engine.kernels._examples",
        "tfrecord_engine.kernels._dense",
        "tfrecord_engine.kernels._intrinsics",
        "tfrecord_engine.kernels._single",
        "tfrecord_bridge",
        *hosts,
    )
    core = [n for n in names if not n.startswith(optional)]
    assert {n: outcome[n] for n in core if outcome[n] != "ok"} == {}
    assert outcome["tfrecord_engine"] == "ok"
    assert outcome["tfrecord_engine.cli"] == "ok"
    assert "tfrecord-engine[testing]" in outcome["tfrecord_engine.testing"]
    assert "tfrecord-engine[tf]" in outcome["tfrecord_bridge"]
    assert "tfrecord-engine[beam]" in outcome["tfrecord_engine.beam"]
    assert "tfrecord-engine[ray]" in outcome["tfrecord_engine.ray"]
    assert "tfrecord-engine[torch]" in outcome["tfrecord_engine.torch"]
    assert "tfrecord-engine[arrow]" in outcome["tfrecord_engine.arrow"]
    assert "tfrecord-engine[spark]" in outcome["tfrecord_engine.spark"]


def test_the_probe_sees_a_module_that_fails_for_another_reason(tmp_path: Path) -> None:
    # A module raising a plain ImportError must be reported as a failure, not an extra.
    (tmp_path / "broken_mod.py").write_text("import hypothesis\n")
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(OPTIONAL), json.dumps(["broken_mod"])],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
    )
    assert json.loads(result.stdout.splitlines()[-1])["broken_mod"].startswith("FAILED")


def test_python_dash_m_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tfrecord_engine", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert tfe.__version__ in result.stdout


def test_public_signatures_show_no_private_parameters() -> None:
    leaks = []
    for name in tfe.__all__:
        obj = getattr(tfe, name)
        target = obj.__init__ if inspect.isclass(obj) else obj
        if not callable(target):
            continue
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            continue
        leaks += [f"{name}({p})" for p in params if p.startswith("_")]
    assert leaks == []


def test_public_all_is_sorted_and_complete() -> None:
    assert tfe.__all__ == sorted(tfe.__all__)
    assert all(hasattr(tfe, name) for name in tfe.__all__)


def test_the_wheel_installs_the_docs_the_docstrings_name(tmp_path: Path) -> None:
    """Docstrings say "see docs/reliability.md": the wheel carries docs/ (as
    tfrecord_engine/docs/), so an installed package has every page they name."""
    import re
    import zipfile

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT.parent),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("tfrecord_engine-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    named = set()
    for path in ROOT.rglob("*.py"):
        named |= set(re.findall(r"docs/([a-z0-9-]+\.md)", path.read_text()))
    assert named, "no docstring names a page: the test would prove nothing"
    assert {f"tfrecord_engine/docs/{page}" for page in named} <= shipped
