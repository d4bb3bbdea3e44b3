"""Layering contracts of docs/ARCHITECTURE.md, enforced by an AST scan of every import.

L0 errors / sim.types, L1 sim (numpy only), L2 policies, L3 simulate, L4 envs (gymnasium), L5
traces, L6 agents, L7 CLIs. A module imports only from layers below it; ``palgym`` never imports
``agents`` or ``traces``; the core has no I/O through environment variables and no prints.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def test_scan_sees_the_package() -> None:
    # Guard against a vacuous scan: the core modules are found and their imports parsed.
    files = python_files(PALGYM / "sim")
    assert {p.name for p in files} >= {"engine.py", "config.py", "workload.py", "cluster.py"}
    engine_imports = {name for _, name, _ in imports_of(PALGYM / "sim" / "engine.py")}
    assert "numpy" in engine_imports and "palgym.sim.config" in engine_imports


def test_palgym_never_imports_agents_or_traces() -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
        for path in python_files(PALGYM)
        for line, name, _ in imports_of(path)
        if name.split(".")[0] in ("agents", "traces")
    ]
    assert not found, found


def test_sim_core_imports_only_stdlib_numpy_and_itself() -> None:
    # L1: no gymnasium, torch, pandas, matplotlib, sklearn; only palgym.sim and palgym.errors,
    # plus numba in the compiled kernels (imported with the first simulator, see
    # test_import_stays_light).
    found = violations(python_files(PALGYM / "sim"),
                       ("numpy", "numba", "palgym.sim", "palgym.errors"))
    assert not found, found
    numba_users = {path.name for path in python_files(PALGYM / "sim")
                   for _, name, _ in imports_of(path) if name.split(".")[0] == "numba"}
    assert numba_users <= {"kernels.py", "summation.py"}, numba_users


def test_policies_import_only_lower_layers() -> None:
    # L2: L0-L1 plus scikit-learn and its threadpoolctl (k-means of the slowdown factors),
    # both imported lazily so that importing palgym stays cheap.
    lazy = ("sklearn", "threadpoolctl")
    allowed = ("numpy", *lazy, "palgym.sim", "palgym.errors", "palgym.policies")
    found = violations(python_files(PALGYM / "policies"), allowed)
    assert not found, found
    eager = [
        f"{path.name}:{line} {name}"
        for path in python_files(PALGYM / "policies")
        for line, name, top in imports_of(path)
        if name.split(".")[0] in lazy and top
    ]
    assert not eager, f"must be imported lazily: {eager}"


def test_io_and_simulate_do_not_reach_up() -> None:
    # palgym.io (file formats) and palgym.simulate (L3) never import the env layer, RL or plots.
    allowed = ("numpy", "sklearn", "palgym.sim", "palgym.errors", "palgym.policies", "palgym.io",
               "palgym.bundled")
    files = [*python_files(PALGYM / "io"), PALGYM / "simulate.py", PALGYM / "bundled.py"]
    found = violations([f for f in files if f.exists()], allowed)
    assert not found, found


def test_testing_module_has_no_test_framework_import() -> None:
    files = python_files(PALGYM / "testing")
    assert {p.name for p in files} >= {"__init__.py", "invariants.py"}
    found = [
        f"{path.name}: {name}" for path in files for _, name, top in imports_of(path)
        if top and name.split(".")[0] in ("pytest", "hypothesis", "gymnasium", "torch")
    ]
    assert not found, f"palgym.testing is library code; it imports {found} at module level"


def test_core_reads_no_environment_and_prints_nothing() -> None:
    # House rule 4: the core has no environment variables and no prints (it logs).
    found = []
    core = [*python_files(PALGYM / "sim"), *python_files(PALGYM / "policies"),
            *python_files(PALGYM / "io"), PALGYM / "simulate.py"]
    for path in core:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                node.func.id == "print"
            ):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} print()")
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and (
                isinstance(node.value, ast.Name) and node.value.id == "os"
            ):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} os.{node.attr}")
    assert not found, found


FORBIDDEN_AT_IMPORT = ("torch", "matplotlib", "pandas", "sklearn", "threadpoolctl",
                       "stable_baselines3", "sb3_contrib", "agents", "traces", "numba")


@pytest.mark.parametrize("statement", ["import palgym", "import palgym.simulate, palgym.testing"])
def test_import_stays_light(statement: str) -> None:
    # `import palgym` registers the Gymnasium ids by string entry point: it may import
    # gymnasium's registry, but never our env modules, RL libraries, plotting, pandas or numba
    # (the compiled kernels load with the first simulator or env).
    code = (
        f"{statement}\n"
        "import sys\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_AT_IMPORT!r}\n"
        "             or m.startswith('palgym.envs'))\n"
        "print(' '.join(bad))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{statement!r} imported: {done.stdout.strip()}"
