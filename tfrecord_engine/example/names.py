"""``example_names``: TensorFlow's per-record names in the parse functions' error texts.

``tf.io.parse_example(serialized, features, example_names=...)`` reports a failing record
as ``Name: <its name>, ...`` where it otherwise says ``Name: <unknown>``; so does
``parse_sequence_example``, and ``parse_single_sequence_example`` with its
``example_name``. ``parse_single_example`` takes a name but its texts carry none (as in
TensorFlow). The names change nothing else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..errors import ExampleParseError, InvalidArgumentError

__all__ = ["example_name_list", "named_errors"]

_UNKNOWN = "<unknown>"


def _text(name: object) -> str:
    if isinstance(name, (bytes, bytearray)):
        return bytes(name).decode("utf-8", "backslashreplace")
    return str(name)


def example_name_list(example_names: object, count: int) -> list[str] | None:
    """The names of ``count`` records, or ``None`` when none were given (``None``/empty).

    >>> example_name_list([b"a", "b"], 2)
    ['a', 'b']

    Raises:
        InvalidArgumentError: not one name per record (TensorFlow's text).
    """
    if example_names is None:
        return None
    names: list[object]
    if isinstance(example_names, (str, bytes, bytearray)):
        names = [example_names]
    else:
        try:
            names = list(example_names)  # type: ignore[call-overload]
        except TypeError:
            names = [example_names]
    if not names:
        return None
    if len(names) != count:
        raise InvalidArgumentError(
            "Expected names have the same shape as serialized: "
            f"name.shape=[{len(names)}], serialized.shape=[{count}]"
        )
    return [_text(n) for n in names]


@contextlib.contextmanager
def named_errors(names: list[str] | None, single: object = None) -> Iterator[None]:
    """Puts the failing record's name into a parse error raised inside the block.

    Args:
        names: one name per record of a batch (the error's ``index`` picks it).
        single: the name of a single record (any index), e.g. ``example_name``.
    """
    try:
        yield
    except ExampleParseError as exc:
        if single is not None:
            name: str | None = _text(single)
        elif names is not None and exc.index is not None and 0 <= exc.index < len(names):
            name = names[exc.index]
        else:
            name = None
        text = str(exc)
        if name is not None and _UNKNOWN in text:
            exc.args = (text.replace(_UNKNOWN, name, 1), *exc.args[1:])
        raise
