"""Evaluation lives in one place (docs/ARCHITECTURE.md, "Evaluation"): evaluate.py is a shim,
one write_plots writes every figure, each evaluation default is assigned once, and the
command lines read traces through one resolver."""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SCANNED = [*(REPO_ROOT / "palgym").rglob("*.py"), *(REPO_ROOT / "agents").rglob("*.py"),
           REPO_ROOT / "evaluate.py", REPO_ROOT / "train.py"]


def definitions(name: str) -> list[str]:
    """``path:line`` of every module-level or nested ``def name`` / ``name = ...``."""
    found = []
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            found += [f"{path.relative_to(REPO_ROOT)}:{node.lineno}" for t in targets
                      if isinstance(t, ast.Name) and t.id == name]
    return found


def test_evaluate_py_is_a_shim() -> None:
    tree = ast.parse((REPO_ROOT / "evaluate.py").read_text(encoding="utf-8"))
    functions = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert functions == []
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "agents.evaluation.cli" in imported


def test_one_write_plots() -> None:
    (only,) = definitions("write_plots")
    assert only.startswith("agents/evaluation/plots.py:")


def test_each_default_is_assigned_once() -> None:
    # agents/sb3/train_settings.py keeps its own DEFAULT_ENV_ID (training's module, not
    # evaluation's).
    training = "agents/sb3/train_settings.py"
    assert [d for d in definitions("DEFAULT_ENV_ID") if not d.startswith(training)] == [
        d for d in definitions("DEFAULT_ENV_ID") if d.startswith("agents/evaluation/defaults.py")]
    for name in ("DEFAULT_BASELINE", "DEFAULT_REFERENCE",
                 "DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_BOOTSTRAP_SEED",
                 "HEURISTICS_VIA", "BOOTSTRAP_UNITS", "EPISODE_KWARGS"):
        assert len(definitions(name)) == 1, (name, definitions(name))


def test_the_trace_readers_of_the_command_lines_are_the_resolver() -> None:
    # The heuristic layer reads no trace files; the old per-CLI readers are gone.
    for name in ("find_trace_files", "set_split_traces", "_load_traces"):
        assert definitions(name) == [], name
    report = (REPO_ROOT / "palgym" / "report.py").read_text(encoding="utf-8")
    assert "read_sia_trace" not in report
    # train.py's parser (agents/sb3/cli.py) checks its --trace with the resolver
    train = (REPO_ROOT / "agents" / "sb3" / "cli.py").read_text(encoding="utf-8")
    assert "from agents.evaluation.traces import" in train


def test_the_heuristic_table_runs_through_the_one_comparison() -> None:
    # palgym builds no sweep of its own: the heuristic table and a comparison's heuristics are
    # the runs of one simulator path (agents/evaluation/direct.py run_heuristics; the Ray task
    # body rebuilds the run it was sent).
    assert [d for d in definitions("evaluate") if d.startswith("palgym/")] == []
    builders = sorted({str(path.relative_to(REPO_ROOT)) for path in SCANNED
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                       and node.func.id == "EpisodeRun"})
    assert builders == ["agents/evaluation/direct.py", "agents/evaluation/parallel.py"]
    (table,) = definitions("heuristic_table")
    assert table.startswith("agents/evaluation/comparison.py:")
