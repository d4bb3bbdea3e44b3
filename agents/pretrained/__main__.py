"""``python -m agents.pretrained [--csv]``: the committed models, with their env id, world and
results.

One line per ``agents/pretrained/NAME.zip``: its env id and layout hash (``NAME.yml``), the
world it was trained in (the run's env kwargs, without the trace and the reward: preset,
belief, cluster, window, ...), its timesteps, and its committed leaderboard results: per suite
and task of ``benchmarks/leaderboard/<suite>/NAME.jsonl``, the geomean ratio of average JCT
to PAL with its rank (:mod:`palgym.bench.show`; lower is better). ``--agent pretrained:NAME``
evaluates one (``evaluate.py``, ``python -m palgym.bench run``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKIPPED_KWARGS = ("trace", "reward", "reward_scale", "baseline_policy")
"""Run env kwargs that say nothing of the world a model acts in."""


def models() -> list[str]:
    """The committed models' names, sorted."""
    return sorted(p.stem for p in HERE.glob("*.zip"))


def model_facts(name: str) -> dict[str, Any]:
    """``env_id``, ``env_layout``, ``timesteps`` and ``world`` (a ``key=value`` text) of a
    committed model, from its run config (empty values when there is none)."""
    import yaml

    path = HERE / f"{name}.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    kwargs = dict(config.get("env_kwargs") or {})
    world = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k not in SKIPPED_KWARGS)
    return {"env_id": config.get("env_id", ""), "env_layout": config.get("env_layout", ""),
            "timesteps": config.get("n_timesteps", ""), "world": world or "the env's defaults"}


def model_results(names: Sequence[str], folder: Path | None = None) -> dict[str, list[str]]:
    """Per model, ``SUITE TASK: RATIO x PAL (rank R)`` for each task of its committed results
    files (``folder``: the leaderboard folder, default the checkout's)."""
    from palgym.bench.show import committed_results, show_tasks

    root = committed_results() if folder is None else folder
    found: dict[str, list[str]] = {n: [] for n in names}
    if not root.is_dir():
        return found
    for suite in sorted(p for p in root.iterdir() if p.is_dir()):
        files = [suite / f"{n}.jsonl" for n in names if (suite / f"{n}.jsonl").is_file()]
        if not files:
            continue
        for task in show_tasks(files, root, num_resamples=200):
            for row in task.rows:
                if row.row is None or row.row.summary is None or row.entry not in found:
                    continue
                ratio = row.row.summary.to_pal_geomean.scalar()[0]
                found[row.entry].append(f"{task.suite} {task.task}: {ratio:.3f}x PAL "
                                        f"(rank {row.rank})")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Print the list (see the module docstring); 0."""
    parser = argparse.ArgumentParser(prog="python -m agents.pretrained",
                                     description="the committed models")
    parser.add_argument("--no-results", action="store_true",
                        help="leave out the leaderboard results (faster)")
    args = parser.parse_args(argv)
    names = models()
    results = {} if args.no_results else model_results(names)
    for name in names:
        facts = model_facts(name)
        print(f"{name}: {facts['env_id']} (layout {facts['env_layout']}), "
              f"{facts['timesteps']} timesteps")
        print(f"  world: {facts['world']}")
        for line in results.get(name, []):
            print(f"  {line}")
        if not args.no_results and not results.get(name):
            print("  no committed leaderboard results")
    print(f"\n{len(names)} models in {HERE}; evaluate one with --agent pretrained:NAME "
          "(ratios of average JCT: lower is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
