"""How the compiled kernels load: in the background, safely across fork and exit, and
cached where a user can write when the installed package is read-only.

Each case runs in a fresh interpreter: what is under test is a new process's start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tfrecord_engine
from tfrecord_engine import kernels

pytestmark = pytest.mark.skipif(
    not kernels.available(), reason="numba is not installed (the fallback is tested elsewhere)"
)

ROOT = Path(tfrecord_engine.__file__).resolve().parent.parent


def _child(
    code: str,
    *,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
    cwd: Path | None = None,
) -> str:
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TFE_", "NUMBA_"))}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_a_new_process_uses_numpy_until_the_kernels_are_loaded() -> None:
    out = _child(
        """
        import numpy as np
        from tfrecord_engine import kernels
        from tfrecord_engine.records import framing
        buf = np.frombuffer(b"123456789" * 3, np.uint8)
        starts, ends = np.array([0, 9]), np.array([9, 27])
        # The first call starts the load and does not wait for it.
        assert kernels.crc32c_spans(buf, starts, ends) is None
        assert not kernels.ready()
        before = framing.crc_spans(buf, starts, ends).tolist()
        assert kernels.wait(timeout=240)
        after = kernels.crc32c_spans(buf, starts, ends)
        assert after is not None and kernels.ready() and kernels.enabled()
        assert framing.crc_spans(buf, starts, ends).tolist() == before
        print("ok")
        """,
        env=_env(),
    )
    assert out.strip() == "ok"


def test_a_fork_during_the_load_waits_for_it_and_the_child_has_the_kernels() -> None:
    # A child forked while another thread holds numba's or the import system's locks
    # could deadlock; the fork waits for the load, so the child starts with the kernels
    # and no thread (-W error: Python 3.12+ warns on a fork with threads running). With
    # the kernels in numba's cache (a cold cache is filled by a builder process instead,
    # which a fork does not wait for: test_a_new_install_neither_compiles_nor_waits...).
    _child("from tfrecord_engine import kernels; assert kernels.available()", env=_env())
    out = _child(
        """
        import os
        from tfrecord_engine import kernels
        assert not kernels.ready()  # starts the load
        pid = os.fork()
        if pid == 0:
            os._exit(0 if kernels.ready() else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        print("ok")
        """,
        env=_env(),
    )
    assert out.strip() == "ok"


def test_the_load_gives_every_kernel_both_kinds_of_buffer_for_forked_children() -> None:
    # numba makes one variant per kind of record buffer (read-only bytes or a writable
    # copy); the load makes both, so a DataLoader worker forked afterwards decodes its
    # first batch (writable buffers) without loading code from numba's cache.
    out = _child(
        """
        import os
        import numpy as np
        from numba.core import types
        from tfrecord_engine.kernels import _loader

        loaded = _loader._load()
        twins = missing = 0
        for kernel in {id(k): k for k in loaded.values() if k is not None}.values():
            sigs = kernel.signatures
            for sig in sigs:
                # (A writable first argument may be an output, with no read-only twin.)
                if sig and isinstance(sig[0], types.Array) and not sig[0].mutable:
                    twin = (sig[0].copy(readonly=False), *sig[1:])
                    twins += 1
                    missing += twin not in sigs
        assert twins > 20 and missing == 0, (twins, missing)
        print("ok")
        """,
        env=_env(),
    )
    assert out.strip() == "ok"


def test_exiting_during_the_load_is_clean() -> None:
    # The interpreter waits for the loader at exit: no crash, no message, status 0.
    for _ in range(3):
        _child("from tfrecord_engine import kernels; kernels.ready()", env=_env())


def test_without_numba_nothing_is_started(tmp_path: Path) -> None:
    # numba hidden: the load finds nothing, every kernel says None, ready() stays False.
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    out = _child(
        """
        import numpy as np
        from tfrecord_engine import kernels
        buf = np.zeros(8, np.uint8)
        assert kernels.crc32c_spans(buf, np.array([0]), np.array([8])) is None
        assert not kernels.wait(timeout=60)
        assert not kernels.ready() and not kernels.enabled()
        print("ok")
        """,
        env={**_env(), "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )
    assert out.strip() == "ok"


_STATS = """
from tfrecord_engine import kernels
from tfrecord_engine.kernels import _numba
assert kernels.wait(timeout=240)
hits = misses = 0
for name in ("varint_runs", "match_words_loaded", "match_lengths", "walk_records", "frame_records"):
    stats = getattr(_numba, name).stats
    hits += sum(stats.cache_hits.values())
    misses += sum(stats.cache_misses.values())
print(hits, misses, _numba.__file__)
"""


def test_compiled_code_is_cached_where_the_user_can_write_when_the_package_is_read_only(
    tmp_path: Path,
) -> None:
    # site-packages may be read-only (a system or container install): the compiled code
    # is cached under the user's cache folder, from which every process then loads.
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare(1) to mount the package read-only")
    probe = subprocess.run(
        [unshare, "-rm", "sh", "-c", f"mount --bind -o ro {tmp_path} {tmp_path}"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"this machine refuses a read-only bind mount: {probe.stderr!r}")
    site = tmp_path / "site"
    shutil.copytree(
        ROOT / "tfrecord_engine",
        site / "tfrecord_engine",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    cache = tmp_path / "cache"
    env = {**_env(XDG_CACHE_HOME=str(cache), HOME=str(tmp_path)), "PYTHONPATH": str(site)}
    mount = [unshare, "-rm", "sh", "-c", f'mount --bind -o ro {site} {site} && exec "$0" "$@"']
    # (cwd: not the checkout, whose tfrecord_engine would come first on sys.path)
    first = _child(_STATS, env=env, prefix=mount, cwd=tmp_path).split()
    second = _child(_STATS, env=env, prefix=mount, cwd=tmp_path).split()
    assert not list(site.rglob("*.nbi")), "nothing may be written into the package"
    assert list(cache.rglob("*.nbi")), "the cache index lives under the user's cache folder"
    assert first[2] == str(site / "tfrecord_engine" / "kernels" / "_numba.py")
    # A new install's first process does not compile: its builder process does (into
    # the user's cache), and the first process then loads, as the next one does.
    # (Five kernels, each for read-only and writable buffers: _loader._load_buffer_twins.)
    assert (int(first[0]), int(first[1])) == (10, 0)
    assert (int(second[0]), int(second[1])) == (10, 0)


def test_a_new_install_neither_compiles_nor_waits_at_exit(tmp_path: Path) -> None:
    """An empty cache (a new install): a short script parses with the numpy paths and
    ends while a builder process compiles the kernels into the cache; the next process
    loads them from it without compiling."""
    cache = tmp_path / "numba-cache"
    env = _env(NUMBA_CACHE_DIR=str(cache))
    out = _child(
        """
        import os
        import time
        from pathlib import Path
        import tfrecord_engine as tfe
        from tfrecord_engine import kernels
        records = [tfe.encode_example({"x": [i]}) for i in range(300)]
        got = tfe.parse_example(records, {"x": tfe.FixedLenFeature([], "int64")})
        assert got["x"].tolist() == list(range(300))
        kernels.crc32c_spans(got["x"].view("uint8"), [0], [8])  # starts the load
        deadline = time.monotonic() + 120
        while not list(Path(os.environ["NUMBA_CACHE_DIR"]).rglob("tfe-kernels-builder.lock")):
            assert time.monotonic() < deadline, "no builder started"
            time.sleep(0.05)
        print(kernels.ready())
        """,
        env=env,
    )
    assert out.strip() == "False"  # nothing compiled in the script's process
    # The script has ended; its builder has not: the exit did not wait for it.
    lock = next(cache.rglob("tfe-kernels-builder.lock"))
    assert lock.exists()
    for _ in range(3000):  # the builder's compilation: seconds to a few minutes
        if list(cache.rglob("tfe-kernels-*.ok")) and not lock.exists():
            break
        subprocess.run(["sleep", "0.1"], check=True)
    assert list(cache.rglob("tfe-kernels-*.ok")), "the builder left no marker"
    hits, misses, _ = _child(_STATS, env=env).split()
    assert (int(hits), int(misses)) == (10, 0)  # loaded from the cache, not compiled
