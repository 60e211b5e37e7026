"""The package's layering: no import cycles (type-only imports included), layers in order.

docs/architecture.md describes the layers; this test is what keeps them true. Imports are
read from the source with :mod:`ast`, so an import inside a function or an
``if TYPE_CHECKING:`` block counts exactly like one at the top of a module.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import tfrecord_engine

PACKAGE = "tfrecord_engine"
ROOT = Path(tfrecord_engine.__file__).parent

# Lower layers first. A module may import from its own layer and the layers before it.
# Everything not named here (cli, hosts, demo, testing, the facade) sits on top.
LAYERS = ["errors", "kernels", "storage", "records", "index", "writing", "example", "data"]
TOP = len(LAYERS)


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(name: str) -> bool:
    return (ROOT.joinpath(*name.split(".")[1:]) / "__init__.py").exists()


def resolve(importer: str, node: ast.ImportFrom) -> list[str]:
    """The package modules one ``from ... import ...`` statement loads."""
    if node.level:
        base = importer.split(".")
        if not is_package(importer):
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not (target == PACKAGE or target.startswith(PACKAGE + ".")):
        return []
    modules: list[str] = []
    names: list[str] = []
    for alias in node.names:  # ``from pkg import module`` depends on the module
        candidate = f"{target}.{alias.name}"
        file = ROOT.joinpath(*candidate.split(".")[1:]).with_suffix(".py")
        (modules if file.exists() or is_package(candidate) else names).append(candidate)
    # A name that is not a module comes from ``target`` itself (its __init__ for a package).
    return modules + ([target] if names or not modules else [])


def dynamic_import(node: ast.AST) -> ast.ImportFrom | None:
    """``importlib.import_module("..x.y", __package__)`` as the import it performs."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return None
    text = node.args[0].value
    level = len(text) - len(text.lstrip("."))
    module, _, name = text[level:].rpartition(".")
    if level and len(node.args) < 2:
        return None
    return ast.ImportFrom(module=module or None, names=[ast.alias(name=name)], level=level)


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        edges = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                edges.update(resolve(name, node))
            elif (call := dynamic_import(node)) is not None:
                edges.update(resolve(name, call))
            elif isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
        # Python runs a package's __init__ before its modules; that order is not a
        # dependency of the module, so it is not an edge (as in import-linter). What
        # keeps it harmless is the next test's rule for __init__ files.
        edges.discard(name)
        edges.discard(PACKAGE)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of module names, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def layer_of(name: str) -> int:
    first = name.split(".")[1] if "." in name else ""
    return LAYERS.index(first) if first in LAYERS else TOP


def test_the_package_has_no_import_cycle() -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    assert find_cycle(import_graph()) is None, " -> ".join(find_cycle(import_graph()) or [])


def test_each_layer_imports_only_itself_and_the_layers_below() -> None:
    upward = sorted(
        f"{importer} -> {target}"
        for importer, targets in import_graph().items()
        for target in targets
        if layer_of(target) > layer_of(importer)
    )
    assert upward == []


def test_layer_inits_import_only_their_own_modules() -> None:
    """A layer's ``__init__`` may re-export its own modules, nothing else of the package."""
    graph = import_graph()
    for layer in LAYERS[1:]:
        outside = [t for t in graph[f"{PACKAGE}.{layer}"] if not t.startswith(f"{PACKAGE}.{layer}")]
        assert outside in ([], [f"{PACKAGE}.errors"]), (layer, outside)


def test_errors_is_a_leaf() -> None:
    assert import_graph()[f"{PACKAGE}.errors"] == set()


def test_the_worker_pool_does_not_know_the_dataset_class() -> None:
    graph = import_graph()
    for name in ("data.procpool", "data.prepare"):
        assert f"{PACKAGE}.data.dataset" not in graph[f"{PACKAGE}.{name}"]


def test_every_module_lies_in_a_layer_folder_or_is_a_known_top_module() -> None:
    top_level = sorted(p.stem for p in ROOT.glob("*.py") if p.stem not in {"__init__", "__main__"})
    assert top_level == sorted(["errors", "demo", *HOST_MODULES])


# One per framework (optional extras).
HOST_MODULES: list[str] = ["arrow", "beam", "ray", "spark", "torch"]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], expected: list[str] | None
) -> None:
    assert find_cycle(graph) == expected


def test_dynamic_imports_count() -> None:
    call = ast.parse('importlib.import_module("..example.batch", __package__)').body[0]
    assert isinstance(call, ast.Expr)
    node = dynamic_import(call.value)
    assert node is not None
    assert resolve(f"{PACKAGE}.data.prepare", node) == [f"{PACKAGE}.example.batch"]


def test_type_only_imports_count(tmp_path: Path) -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .data import dataset\n"
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level)
    assert f"{PACKAGE}.data.dataset" in resolve(f"{PACKAGE}.errors", node)
