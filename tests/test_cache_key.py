"""The compiled-kernel cache is keyed by the sources the kernels depend on (palgym/_numba.py).

numba stamps a cached kernel with the source of its own file only, so a kernel that calls a
kernel of another module kept the callee's old code after that module changed. These tests run
palgym's real mechanism on a copy of the package with two tiny kernels added (a callee
returning a constant and a caller in another module): the caller must see an edit of the
callee's module and load from the cache when nothing it imports changed, in the in-tree
``__pycache__`` and under ``NUMBA_CACHE_DIR``; the import scan that finds a kernel's modules
must see every import the syntax tree has.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from palgym import _numba
from tests.import_scan import PALGYM, import_graph, python_files
from tests.import_scan import module_name as ast_module_name

pytestmark = pytest.mark.skipif(not _numba.AVAILABLE, reason="numba is not installed")

CALLEE = '''from palgym._numba import njit

VALUE = 1


@njit(cache=True)
def value():
    return VALUE
'''
CALLER = '''from palgym._numba import njit
from palgym.probe_callee import value


@njit(cache=True)
def doubled():
    return 2 * value()
'''
RUN = ("from palgym.probe_caller import doubled\n"
       "print(doubled(), sum(doubled.stats.cache_hits.values()),"
       " sum(doubled.stats.cache_misses.values()))\n")


def test_import_scan_sees_every_import_of_the_syntax_tree() -> None:
    # The cache key follows imports read with a regular expression (fast at start-up); the
    # syntax tree (the architecture test's reading) must not find one it misses.
    files = {ast_module_name(path): path for path in python_files(PALGYM)}
    tree_graph = import_graph(files)
    scanned = _numba.import_graph()
    assert set(scanned) == set(files)
    missed = {module: sorted(tree_graph[module] - scanned[module]) for module in files
              if tree_graph[module] - scanned[module]}
    assert not missed, missed


def test_dependencies_follow_imports_through_other_modules() -> None:
    # Read from the sources: obs_kernel imports envs.features (its constants) and envs.kernel,
    # which imports policies.pal_kernel; step_numba compiles sim.locality's rule.
    obs = _numba.dependencies("palgym.envs.obs_kernel")
    assert {"palgym.envs.obs_kernel", "palgym.envs.features", "palgym.envs.kernel",
            "palgym.policies.pal_kernel", "palgym._numba"} <= obs
    assert "palgym.sim.locality" in _numba.dependencies("palgym.sim.step_numba")
    # Policies and step backends never import the engine (test_architecture), so editing the
    # engine leaves the compiled loop's cache valid.
    assert "palgym.sim.engine" not in _numba.dependencies("palgym.driver.kernel")


def test_source_key_changes_with_a_dependency_only(tmp_path: Path) -> None:
    # Three copies of the package: as is, with the callee's constant edited, with a module the
    # caller does not import edited. Only the first edit changes the caller's key.
    same, edited, unrelated = (copy_package(tmp_path / name) for name in ("a", "b", "c"))
    (edited / "probe_callee.py").write_text(CALLEE.replace("VALUE = 1", "VALUE = 5"),
                                            encoding="utf-8")
    with (unrelated / "report.py").open("a", encoding="utf-8") as stream:
        stream.write("# an edit the caller does not depend on\n")
    keys = [_numba.source_key(str(package / "probe_caller.py"), package)
            for package in (same, edited, unrelated)]
    assert len(keys[0]) == 64 and keys[0] != keys[1] and keys[0] == keys[2]
    assert _numba.in_package(str(same / "probe_caller.py"), same)
    assert not _numba.in_package(str(tmp_path / "elsewhere.py"), same)


def copy_package(tmp_path: Path) -> Path:
    """palgym's modules copied into ``tmp_path/palgym`` with the two probe kernels added (and
    an empty ``__init__``: the probes need none of the public API, and start faster)."""
    package = tmp_path / "palgym"
    shutil.copytree(PALGYM, package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (package / "__init__.py").write_text('"""palgym\'s modules, copied."""\n', encoding="utf-8")
    (package / "probe_callee.py").write_text(CALLEE, encoding="utf-8")
    (package / "probe_caller.py").write_text(CALLER, encoding="utf-8")
    return package


def run_caller(root: Path, cache_dir: Path | None) -> tuple[int, int, int]:
    """(doubled(), cache hits, cache misses) of the copied caller in a fresh process."""
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(root)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    value, hits, misses = (int(word) for word in done.stdout.split())
    return value, hits, misses


def test_a_callee_edit_reaches_the_cached_caller(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    assert run_caller(tmp_path, None) == (2, 0, 1)  # compiled, written to the cache
    assert run_caller(tmp_path, None) == (2, 1, 0)  # loaded from the cache
    with (package / "report.py").open("a", encoding="utf-8") as stream:
        stream.write("# an edit the caller does not depend on\n")
    assert run_caller(tmp_path, None) == (2, 1, 0)  # still loaded
    (package / "probe_callee.py").write_text(CALLEE.replace("VALUE = 1", "VALUE = 5"),
                                             encoding="utf-8")
    assert run_caller(tmp_path, None) == (10, 0, 1)  # the caller's own file is unchanged
    assert list((package / "__pycache__").glob("probe_caller.doubled-*.nbi"))


def test_numba_cache_dir_is_keyed_too(tmp_path: Path) -> None:
    package = copy_package(tmp_path / "clone")
    cache_dir = tmp_path / "numba-cache"
    assert run_caller(tmp_path / "clone", cache_dir) == (2, 0, 1)
    (package / "probe_callee.py").write_text(CALLEE.replace("VALUE = 1", "VALUE = 5"),
                                             encoding="utf-8")
    assert run_caller(tmp_path / "clone", cache_dir) == (10, 0, 1)
    assert list(cache_dir.rglob("probe_caller.doubled-*.nbi"))
    assert not (package / "__pycache__").exists() or not list(
        (package / "__pycache__").glob("*.nbi"))
