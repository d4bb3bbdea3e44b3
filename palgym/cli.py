"""``palgym``: one command for every palgym command line (the ``palgym`` console script;
``python -m palgym.cli``).

``palgym COMMAND [ARGS...]`` hands ``ARGS`` to the command's own module, unchanged, so each
command's ``--help``, exit codes and errors are its own; ``palgym --help`` lists the commands.
``palgym benchmark NAME [ARGS...]`` runs ``benchmarks/NAME.py`` (from a source checkout).

The table names each command's module as a string and imports it when the command runs (as a
console script's entry point does): ``import palgym`` loads none of them, and palgym's own
modules never import ``agents`` (docs/ARCHITECTURE.md).

Exit codes: the command's own; 2 for an unknown command or benchmark (``error: <message>``).
"""

from __future__ import annotations

import argparse
import importlib
import runpy
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from palgym.io.pipes import run_cli

EXIT_USAGE = 2


@dataclass(frozen=True)
class Command:
    """One command: the module whose ``main(argv) -> int`` runs it, and one line of help."""

    module: str
    help: str


COMMANDS: dict[str, Command] = {
    "evaluate": Command("agents.evaluation.cli", "heuristics and agents on job traces "
                        "(evaluate.py)"),
    "train": Command("agents.sb3.cli", "train a learned scheduler on a palgym env (train.py)"),
    "bench": Command("agents.bench.cli", "palgym-bench: list, prepare, run, validate, "
                     "leaderboard (python -m palgym.bench)"),
    "traces": Command("traces.__main__", "trace formats: convert, describe, split, generate, "
                      "regimes, bundle, profile (python -m traces)"),
    "tracesets": Command("palgym.tracesets.__main__", "trace sets and their splits "
                         "(python -m palgym.tracesets)"),
    "selector": Command("agents.selection.cli", "the learned rule selector: train, evaluate, "
                        "distill, floor (python -m agents.selection)"),
    "headroom": Command("palgym.headroom.__main__", "where the room is: build the small-instance "
                        "suite of exact optima (python -m palgym.headroom)"),
    "models": Command("agents.pretrained.__main__", "the committed pretrained models "
                      "(python -m agents.pretrained)"),
    "plot": Command("agents.evaluation.plot_curve", "a run's learning curve beside PAL's line "
                    "(python -m agents.evaluation.plot_curve)"),
}
"""Command name -> its module (rl-baselines3-zoo's one table of scripts)."""

BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
"""Where ``palgym benchmark NAME`` finds ``NAME.py`` (a source checkout's ``benchmarks/``)."""


def benchmark_names(folder: Path = BENCHMARKS_DIR) -> list[str]:
    """The scripts ``palgym benchmark`` runs: the ``benchmarks/*.py`` that run as a script
    (``if __name__ == "__main__"``; their shared helpers do not), sorted ([] without a source
    checkout)."""
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.py")
                  if '__name__ == "__main__"' in p.read_text(encoding="utf-8"))


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: a command, then the command's own arguments (left unparsed)."""
    parser = argparse.ArgumentParser(
        prog="palgym", description="palgym: GPU-cluster scheduling simulator, env, agents "
        "and benchmark. Each command takes --help.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        commands.add_parser(name, help=command.help, add_help=False)
    names = benchmark_names()
    bench = commands.add_parser(
        "benchmark", help="run benchmarks/NAME.py (speed and headroom figures)",
        usage="palgym benchmark NAME [ARGS...]",
        description="Run one script of benchmarks/ with its own arguments (ARGS, its --help "
        "included): " + (", ".join(names) or "none found (benchmarks/ comes with a source "
                         "checkout)"))
    bench.add_argument("name", metavar="NAME", help="a script of benchmarks/ (without .py)")
    return parser


def command_main(name: str) -> Callable[[Sequence[str] | None], int]:
    """The ``main`` of command ``name`` (its module imported now)."""
    module = importlib.import_module(COMMANDS[name].module)
    main: Callable[[Sequence[str] | None], int] = module.main
    return main


def run_command(name: str, argv: Sequence[str] | None = None) -> int:
    """Run command ``name`` with ``argv`` (None: ``sys.argv[1:]``); its exit code."""
    return command_main(name)(None if argv is None else list(argv))


def run_benchmark(name: str, args: Sequence[str], folder: Path = BENCHMARKS_DIR) -> int:
    """Run ``benchmarks/NAME.py`` as ``__main__`` with ``args``; its exit status.

    Raises:
        SystemExit: 2 for an unknown name (listing the scripts).
    """
    if name not in benchmark_names(folder):
        print(f"error: no benchmark {name!r}; the benchmarks are {benchmark_names(folder)}",
              file=sys.stderr)
        return EXIT_USAGE
    argv = sys.argv
    sys.argv = [str(folder / f"{name}.py"), *args]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = argv
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (see the module docstring); None: ``sys.argv[1:]``.

    The command's arguments are handed over untouched (its own ``--help`` included); the
    top-level parser reads only ``palgym --help`` and mistakes (exit 2, naming them).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in COMMANDS:
        return run_command(args[0], args[1:])
    if len(args) > 1 and args[0] == "benchmark" and not args[1].startswith("-"):
        return run_benchmark(args[1], args[2:])
    build_parser().parse_args(args)  # --help exits 0; anything else is a usage error
    return EXIT_USAGE


def console() -> None:
    """The ``palgym`` console script (``[project.scripts]``)."""
    sys.exit(run_cli(main))


if __name__ == "__main__":
    console()
