"""The ``palgym`` command (palgym/cli.py): one table of every command line, each command's
arguments handed over untouched. Called in-process through ``main(argv)``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from palgym.cli import BENCHMARKS_DIR, COMMANDS, benchmark_names, main

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_palgym_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for name in [*COMMANDS, "benchmark"]:
        assert f"    {name}" in out, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_is_its_modules_main_and_takes_help(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    assert callable(module.main)
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])  # the command's own --help, not palgym's
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and "COMMAND" not in out.splitlines()[0]


def test_the_script_commands_are_the_table_s() -> None:
    # train.py and evaluate.py are wrappers of the modules the table runs
    for script, name in (("train.py", "train"), ("evaluate.py", "evaluate")):
        tree = ast.parse((REPO_ROOT / script).read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert COMMANDS[name].module in imported, script


def test_benchmark_runs_the_scripts_of_benchmarks(capsys: pytest.CaptureFixture[str]) -> None:
    names = benchmark_names()
    scripts = {p.stem for p in BENCHMARKS_DIR.glob("*.py")}
    # every name is a script of the folder; a helper module without a __main__ is not one
    assert names and set(names) <= scripts and "public_data" not in names
    # the script's own --help; its SystemExit becomes the exit code
    assert main(["benchmark", names[0], "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ")


@pytest.mark.parametrize("argv", [[], ["no-such-command"], ["benchmark"],
                                  ["benchmark", "no-such-benchmark"]])
def test_a_mistake_exits_2_naming_it(argv: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as done:
        code = done.code
    assert code == 2
    err = capsys.readouterr().err
    assert "error" in err and (not argv or argv[-1] in err or "NAME" in err or "COMMAND" in err)
