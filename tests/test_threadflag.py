"""tfrecord_engine.kernels.threads.ThreadFlag: a per-thread switch for the length of a block."""

from __future__ import annotations

import doctest
import threading

from tfrecord_engine.kernels import threads
from tfrecord_engine.kernels.threads import ThreadFlag


def test_the_flag_is_per_thread_and_blocks_nest() -> None:
    flag = ThreadFlag()
    seen: list[bool] = []
    inside = threading.Event()
    done = threading.Event()

    def other() -> None:
        inside.wait(5)
        seen.append(flag.on)  # (another thread's block does not set it here)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with flag.set():
        inside.set()
        done.wait(5)
        with flag.set():
            assert flag.on
        assert flag.on  # (the inner block ends: the outer one's setting stays)
    t.join(5)
    assert seen == [False]
    assert not flag.on


def test_the_flag_is_reset_when_the_block_raises() -> None:
    flag = ThreadFlag()
    try:
        with flag.set():
            raise KeyError("x")
    except KeyError:
        pass
    assert not flag.on


def test_docstring_example() -> None:
    result = doctest.testmod(threads)
    assert result.attempted > 0
    assert result.failed == 0
