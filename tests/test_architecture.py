"""Layering contracts of docs/ARCHITECTURE.md, enforced by an AST scan of every import.

The layer table :data:`LAYERS` (the same table as in docs/ARCHITECTURE.md): a module imports only
from its own layer or the layers below it, and no import cycle exists among palgym's modules
(every import counts, lazy ones and ``TYPE_CHECKING`` ones too). No palgym module reaches into
another object's private members (``x._name`` read, written or called, ``x`` not ``self`` /
``cls``). The step backends never import the engine; policies never import, take or drive the
engine (they read :class:`palgym.sim.views.SimView`); numba is imported by ``palgym/_numba.py``
alone. ``palgym`` never imports ``agents`` or ``traces``; the core has no I/O through
environment variables and no prints. The import scan itself is tests/import_scan.py.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.import_scan import (
    PALGYM,
    REPO_ROOT,
    STDLIB,
    cycles,
    dynamic_imports,
    first_party_files,
    import_graph,
    imports_of,
    python_files,
    violations,
)


def test_scan_sees_the_package() -> None:
    # Guard against a vacuous scan: the core modules are found and their imports parsed.
    files = python_files(PALGYM / "sim")
    assert {p.name for p in files} >= {"engine.py", "config.py", "workload.py", "cluster.py"}
    engine_imports = {name for _, name, _ in imports_of(PALGYM / "sim" / "engine.py")}
    assert "numpy" in engine_imports and "palgym.sim.config" in engine_imports


COMMAND_TABLE = PALGYM / "cli.py"
"""The one palgym module that names modules above palgym: the ``palgym`` command table, which
imports a command's module by name when that command runs (docs/ARCHITECTURE.md)."""
DYNAMIC_IMPORTERS = {PALGYM / "_numba.py": "numba's internals",
                     PALGYM / "policies" / "loader.py": "a user's MODULE:CLASS policy",
                     COMMAND_TABLE: "the command a user names"}
"""The palgym modules that import a module by a name computed at run time, and what they load."""


def test_palgym_never_imports_agents_or_traces() -> None:
    # No exception: the bench command's body lives in agents/bench/ (docs/ARCHITECTURE.md).
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
        for path in python_files(PALGYM)
        for line, name, _ in imports_of(path)
        if name.split(".")[0] in ("agents", "traces")
    ]
    assert not found, found


def test_only_the_command_table_imports_by_name_above_palgym() -> None:
    # An import by a computed name is invisible to the scan above; palgym has three, each for
    # a stated reason, and only the command table's can reach agents or traces.
    found = sorted(p for p in python_files(PALGYM) if dynamic_imports(p))
    assert found == sorted(DYNAMIC_IMPORTERS), found
    from palgym.cli import COMMANDS

    above = {c.module for c in COMMANDS.values() if c.module.split(".")[0] != "palgym"}
    assert above and all(layer_of(m) > layer_of("palgym") for m in above), above


def test_sim_core_imports_only_stdlib_numpy_and_itself() -> None:
    # L1: no gymnasium, torch, pandas, matplotlib, sklearn; only palgym.sim and palgym.errors,
    # plus numba in the compiled kernels (imported with the first simulator, see
    # test_import_stays_light).
    found = violations(python_files(PALGYM / "sim"),
                       ("numpy", "palgym.sim", "palgym.errors", "palgym._numba"))
    assert not found, found


def test_numba_is_imported_by_one_module() -> None:
    # palgym/_numba.py is the one home of njit (and of its stand-in where numba is missing).
    users = sorted(str(path.relative_to(REPO_ROOT)) for path in python_files(PALGYM)
                   for _, name, _ in imports_of(path) if name.split(".")[0] == "numba")
    assert users == ["palgym/_numba.py"], users


def test_policies_import_only_lower_layers() -> None:
    # L2: L0-L1 plus scikit-learn and its threadpoolctl (k-means of the slowdown factors),
    # both imported lazily so that importing palgym stays cheap; palgym._numba (L0) for the
    # compiled twins of the PAL and PM-First rules.
    lazy = ("sklearn", "threadpoolctl")
    allowed = ("numpy", *lazy, "palgym.sim", "palgym.errors", "palgym.policies", "palgym._numba")
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
               "palgym.bundled", "palgym.driver")
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


# ----------------------------------------------------------------------------- the layer table
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("L0", ("palgym.errors", "palgym.sim.types", "palgym._numba")),
    ("L1", ("palgym.sim",)),
    ("L2", ("palgym.policies", "palgym.io", "palgym.bundled")),
    ("L3", ("palgym.simulate", "palgym.driver", "palgym.testing", "palgym.tracesets",
            "palgym.report", "palgym.plots", "palgym.sweep", "palgym.progress",
            "palgym.rule_selection", "palgym.rule_sets", "palgym.schedule_record",
            "palgym.headroom")),
    ("L4", ("palgym.envs",)),
    ("L5", ("palgym",)),
    ("L6", ("traces",)),
    ("L7", ("agents",)),
    ("L8", ("agents.sb3", "agents.planning", "agents.rllib")),
    ("L9", ("agents.selection",)),
    ("L10", ("agents.evaluation", "agents.priority")),
    ("L11", ("train", "evaluate", "agents.bench", "agents.sb3.cli", "agents.rule_selector_cli",
             "agents.policies")),
)
"""Layer of every first-party module, by longest matching module prefix (docs/ARCHITECTURE.md)."""

THIRD_PARTY: dict[str, tuple[str, ...]] = {
    "L0": ("numpy", "numba"), "L1": (), "L2": ("sklearn", "threadpoolctl"),
    "L3": ("matplotlib", "tqdm", "ortools"), "L4": ("gymnasium",), "L5": ("yaml", "ray"),
    "L6": ("pandas", "pyarrow", "scipy"),
    "L7": ("stable_baselines3", "sb3_contrib", "torch", "cloudpickle", "optuna"),
    "L8": (), "L9": (), "L10": (), "L11": (),
}
"""The table's "may also import" column: third-party packages a layer adds to those of the
layers below it (top-level import names; numba in ``palgym/_numba.py`` only)."""

PRIVATE_API_OF_NAMEDTUPLE = frozenset({"_replace", "_asdict", "_make", "_fields",
                                       "_field_defaults"})
THIRD_PARTY_EXTENSION_POINTS = frozenset({
    "palgym/_numba.py reads or calls numba_caching.CacheImpl._locator_classes",
})
"""Private names a library offers as its extension point: numba's list of cache locators, where
palgym/_numba.py puts the locators that key the kernel cache by the kernels' sources."""


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of ``module``'s layer (longest prefix), or -1 if none."""
    best, best_length = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def private_reaches(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """``x._name`` in ``path`` with ``x`` not ``self`` / ``cls``: reads, writes and calls of
    another object's private members (NamedTuple's ``_replace`` and kin are public API)."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or node.attr in PRIVATE_API_OF_NAMEDTUPLE:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        access = "writes" if isinstance(node.ctx, ast.Store) else "reads or calls"
        found.append(f"{path.relative_to(root)}:{node.lineno} {access} "
                     f"{ast.unparse(node)}")
    return found


def test_every_first_party_module_has_a_layer() -> None:
    files = first_party_files()
    assert {"palgym.sim.engine", "palgym.sim.step_numba", "palgym.envs.cluster_env",
            "agents.sb3.training", "train"} <= set(files)
    assert not [m for m in files if layer_of(m) < 0]


def test_third_party_imports_are_those_of_the_layer_table() -> None:
    assert list(THIRD_PARTY) == [name for name, _ in LAYERS]
    files = first_party_files()
    ours = {module.split(".")[0] for module in files}
    found = []
    for module, path in files.items():
        layer = layer_of(module)
        allowed = {p for _, names in list(THIRD_PARTY.items())[: layer + 1] for p in names}
        found += [f"{module} (L{layer}) imports {name}" for _, name, _ in imports_of(path)
                  if name.split(".")[0] not in STDLIB | ours | allowed]
    assert not found, found


def test_imports_go_down_the_layer_table() -> None:
    graph = import_graph(first_party_files())
    upward = [f"{module} (L{layer_of(module)}) imports {target} (L{layer_of(target)})"
              for module, targets in graph.items() for target in targets
              if layer_of(target) > layer_of(module)]
    assert not upward, upward


def test_no_import_cycle_among_palgym_modules() -> None:
    files = {m: p for m, p in first_party_files().items() if m.split(".")[0] == "palgym"}
    assert not cycles(import_graph(files)), cycles(import_graph(files))


def test_no_import_cycle_in_the_whole_tree() -> None:
    # palgym, traces, agents and the two scripts: no two modules import each other, directly
    # or through others (imports inside functions and under TYPE_CHECKING count).
    graph = import_graph(first_party_files())
    assert not cycles(graph), cycles(graph)


def test_cycle_scan_finds_a_cycle() -> None:
    # Guard against a vacuous scan: a two-module loop and a three-module loop are found.
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "x": {"y"}, "y": {"z"}, "z": {"x"}}
    assert cycles(graph) == [["a", "b"], ["x", "y", "z"]]


def test_no_module_reaches_into_another_objects_private_members() -> None:
    found = [hit for path in python_files(PALGYM) for hit in private_reaches(path)
             if hit.split(":")[0] + " " + hit.split(" ", 1)[1] not in THIRD_PARTY_EXTENSION_POINTS]
    assert not found, found


def test_private_scan_sees_writes_and_calls(tmp_path: Path) -> None:
    # Guard against a vacuous scan: the engine's old kernels did both of these.
    sample = tmp_path / "sample.py"
    sample.write_text("def f(sim):\n    sim._left -= 1\n    sim._admit()\n"
                      "    return sim.state._replace(jobs=None)\n", encoding="utf-8")
    hits = private_reaches(sample, root=tmp_path)
    assert hits == ["sample.py:2 writes sim._left", "sample.py:3 reads or calls sim._admit"]


def test_step_backends_never_import_the_engine() -> None:
    graph = import_graph(first_party_files())
    backends = ("palgym.sim.state", "palgym.sim.locality", "palgym.sim.step_numpy",
                "palgym.sim.step_numba", "palgym.sim.step_apply", "palgym.sim.step_active",
                "palgym.sim.backend")
    found = [m for m in backends if "palgym.sim.engine" in graph[m]]
    assert not found, found
