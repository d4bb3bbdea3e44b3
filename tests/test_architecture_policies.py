"""The policy seam: policies read the simulation through the read-only view and never import,
name or drive the engine (docs/ARCHITECTURE.md, "The policy seam"); the layer and import checks
are in tests/test_architecture.py."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.import_scan import (
    PALGYM,
    REPO_ROOT,
    first_party_files,
    import_graph,
    python_files,
    reachable,
)

# ----------------------------------------------------------------------- policies and the engine
ENGINE_ONLY = frozenset({"commit", "advance", "idle_rounds", "mark_event"})
"""Engine methods that change the simulation: the driver's, never a policy's."""


def annotations_of(tree: ast.AST) -> Iterator[tuple[int, ast.expr]]:
    """(line, node) of every annotation node in ``tree`` (arguments, returns, annotated
    assignments); a string annotation is parsed into its expression."""
    for node in ast.walk(tree):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            found = [node.annotation]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found = [node.returns]
        elif isinstance(node, ast.AnnAssign):
            found = [node.annotation]
        for annotation in found:
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                parsed = ast.parse(annotation.value, mode="eval").body
                yield from ((annotation.lineno, n) for n in ast.walk(parsed)
                            if isinstance(n, ast.expr))
            elif annotation is not None:
                yield annotation.lineno, annotation


def engine_uses(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """Where ``path`` imports the engine module, names ``Simulator`` (in code or in any
    annotation, string annotations included) or calls one of :data:`ENGINE_ONLY`."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [(node.lineno, f"imports {name}") for name in modules
                  if name == "palgym.sim.engine" or name.startswith("palgym.sim.engine.")]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ENGINE_ONLY):
            found.append((node.lineno, f"calls .{node.func.attr}()"))
    names = {(getattr(n, "lineno", 0), n.id) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {(line, a.id) for line, a in annotations_of(tree) if isinstance(a, ast.Name)}
    found += [(line, "names Simulator") for line, name in names if name == "Simulator"]
    where = path.relative_to(root)
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def test_policies_read_the_view_never_the_engine() -> None:
    # A policy reads the simulation through SimView and returns a target; only the driver
    # applies it (Simulator.commit) or otherwise changes the engine.
    found = [hit for path in python_files(PALGYM / "policies") for hit in engine_uses(path)]
    assert not found, found
    graph = import_graph(first_party_files())
    policies = [m for m in graph if m.startswith("palgym.policies")]
    assert len(policies) >= 10
    reaching = [m for m in policies if "palgym.sim.engine" in reachable(graph, m)]
    assert not reaching, f"import the engine, directly or through others: {reaching}"


def test_policy_interfaces_take_the_view() -> None:
    # Every order / place method of palgym.policies takes a SimView as its first argument.
    methods = []
    for path in python_files(PALGYM / "policies"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name in ("order", "place"):
                        first = item.args.args[1].annotation
                        methods.append((f"{path.name}:{node.name}.{item.name}",
                                        ast.unparse(first) if first else None))
    assert len(methods) >= 10, methods  # FIFO ... PAL, the protocols, BeliefPlacement
    assert [m for m, annotation in methods if annotation != "SimView"] == []


def test_engine_scan_sees_imports_annotations_and_calls(tmp_path: Path) -> None:
    # Guard against a vacuous scan: the policies of the old tree did all of these.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from palgym.sim.engine import Simulator\n"
        "def place(sim: Simulator, other: 'Simulator | None') -> None:\n"
        "    sim.mark_event()\n    sim.commit(None)\n    sim.view()\n", encoding="utf-8")
    assert engine_uses(sample, root=tmp_path) == [
        "sample.py:1 imports palgym.sim.engine", "sample.py:2 names Simulator",
        "sample.py:3 calls .mark_event()", "sample.py:4 calls .commit()",
    ]
    quoted = tmp_path / "quoted.py"
    quoted.write_text("def order(view: 'Simulator | None') -> None:\n    pass\n",
                      encoding="utf-8")
    assert engine_uses(quoted, root=tmp_path) == ["quoted.py:1 names Simulator"]
