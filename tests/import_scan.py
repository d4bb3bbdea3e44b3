"""The AST scan of first-party imports that the architecture tests share
(tests/test_architecture.py, tests/test_architecture_policies.py, tests/test_cache_key.py):
every import of a file, with the name it resolves to and whether it runs at module level; the
imports by a computed name, which that scan cannot see; the first-party files and the graph of
their imports, and the cycles in it. Every import counts: those inside functions and under
``TYPE_CHECKING`` too.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PALGYM = REPO_ROOT / "palgym"
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> Iterator[tuple[int, str, bool]]:
    """Yield (line, absolute module name, at module level) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, id(node) in top_level
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            yield node.lineno, name, id(node) in top_level


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def violations(files: list[Path], allowed: tuple[str, ...], stdlib: bool = True) -> list[str]:
    """Imports of ``files`` outside ``allowed`` (module prefixes) and, if set, the stdlib."""
    found = []
    for path in files:
        for line, name, _ in imports_of(path):
            top = name.split(".")[0]
            if stdlib and top in STDLIB:
                continue
            if any(name == a or name.startswith(a + ".") for a in allowed):
                continue
            found.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {name}")
    return found


def dynamic_imports(path: Path) -> list[int]:
    """Lines of ``path`` that call ``import_module``, ``__import__``, ``run_module`` or
    ``run_path`` (an import the import scan above cannot see)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = ("import_module", "__import__", "run_module", "run_path")
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr in names)
        or (isinstance(node.func, ast.Name) and node.func.id in names))]


SCANNED = [PALGYM, REPO_ROOT / "traces", REPO_ROOT / "agents", REPO_ROOT / "train.py",
           REPO_ROOT / "evaluate.py"]
"""The first-party code: palgym, traces, agents and the two scripts."""


def first_party_files() -> dict[str, Path]:
    files: list[Path] = []
    for place in SCANNED:
        files += python_files(place) if place.is_dir() else [place]
    return {module_name(path): path for path in files}


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports (``from P import N`` names ``P.N`` if that
    is a module, else ``P``; a name outside ``files`` is cut back to its longest known prefix)."""
    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        targets: set[str | None] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1],
                                     *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in files else known(base))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of more than one module that import each other (directly or not), sorted."""
    reach = {node: reachable(graph, node) for node in graph}
    groups = {tuple(sorted({node} | {o for o in reach[node] if node in reach.get(o, ())}))
              for node in graph if node in reach[node]}
    return sorted(list(group) for group in groups if len(group) > 1)
