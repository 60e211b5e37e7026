"""Every ``tfr`` option has help text, and every ``--help`` example runs as shown."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import numpy as np
import pytest

import tfrecord_engine as tfe
from tests.cli.helpers import invoke, mnist_like, write_examples
from tfrecord_engine.cli import cli

COMMANDS = sorted(cli.commands)


def _help(*path: str) -> str:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_option_and_argument_is_explained() -> None:
    for name in [None, *COMMANDS]:
        command: click.Command = cli if name is None else cli.commands[name]
        text = _help() if name is None else _help(name)
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"tfr {name or ''}: {param.opts} has no help text"
            else:
                # click prints no help for arguments: the command's text explains them.
                metavar = param.human_readable_name.upper()
                description = text.split("Options:")[0].split("\n", 2)[2]
                assert re.search(rf"\b{metavar}\b", description), (
                    f"tfr {name}: the help never says what {metavar} is"
                )


def _examples(text: str) -> list[tuple[str, str]]:
    """``(command line, expected output)`` of each ``$ tfr ...`` line in a help text."""
    if "Example:" not in text:
        return []
    block = text.split("Example:", 1)[1].split("\nOptions:", 1)[0].splitlines()
    out: list[tuple[str, list[str]]] = []
    indent = ""
    for line in block:
        stripped = line.strip()
        if stripped.startswith("$ "):
            indent = line[: line.index("$")]
            out.append((stripped[2:], []))
        elif out and out[-1][0].endswith("\\"):
            out[-1] = (out[-1][0][:-1] + stripped, out[-1][1])
        elif out:
            assert not stripped or line.startswith(indent), f"misindented: {line!r}"
            out[-1][1].append(line[len(indent) :])
    return [(cmd, "\n".join(lines).strip("\n")) for cmd, lines in out]


def _matches(expected: str, actual: str) -> bool:
    """``actual`` is ``expected``, where ``...`` stands for any text (as in doctests)."""
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def _example_files(root: Path) -> None:
    """The files the examples name, made so that the shown outputs are the true ones."""
    rows = [
        {
            "image": bytes([i % 256]) * 784,
            "label": i % 10,
            "caption": f"a handwritten digit {i % 10}",
        }
        for i in range(1272)
    ]
    write_examples(root / "train-00000-of-00002.tfrecord", rows[:761])
    write_examples(root / "train-00001-of-00002.tfrecord", rows[761:])
    # Ten records of 402 bytes framed (the first 401): record 3 starts at 1205.
    with tfe.TFRecordWriter(root / "data.tfrecord") as w:
        w.write_many([bytes(385)] + [bytes([k]) * 386 for k in range(1, 10)])
    blob = bytearray((root / "data.tfrecord").read_bytes())
    blob[1205 + 12 + 100] ^= 1  # in record 3's data: a data CRC mismatch
    (root / "data.tfrecord").write_bytes(bytes(blob))
    write_examples(root / "a.tfrecord", mnist_like(3))
    write_examples(root / "b.tfrecord", mnist_like(2, 3))
    rng = np.random.default_rng(0)
    np.savez(
        root / "mnist.npz",
        image=rng.integers(0, 256, (1000, 28, 28), dtype=np.uint8),
        label=np.arange(1000) % 10,
    )


def test_help_examples_run_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in COMMANDS:
        examples = _examples(_help(name))
        assert examples, f"tfr {name} --help shows no example"
        folder = tmp_path / name  # each command's examples start from the same files
        folder.mkdir()
        _example_files(folder)
        monkeypatch.chdir(folder)
        for line, expected in examples:
            _check_example(name, line, expected)


def _check_example(name: str, line: str, expected: str) -> None:
    words = shlex.split(line)
    assert words[0] == "tfr", line
    if "--follow" in words:
        return  # waits for a writer by design (test_show covers it)
    target = None
    if ">" in words:
        at = words.index(">")
        words, target = words[:at], words[at + 1]
    result = invoke(*words[1:])
    damaged = name == "verify" and "damaged region" in expected
    assert result.exit_code == (1 if damaged else 0), f"$ {line}\n{result.output}"
    if target is not None:
        Path(target).write_bytes(result.stdout_bytes)
        assert len(list(tfe.read_records(target))) == 5
    if expected:
        actual = result.stdout.rstrip("\n")
        assert _matches(expected, actual), f"$ {line}\nshown:\n{expected}\ngot:\n{actual}"
