"""Benchmark: the env's CPU time per decision in two source trees, side by side in one run.

Each tree (``--old PATH``, ``--new PATH``, default this checkout) is served by its own
subprocess with that tree first on ``sys.path`` (its own ``palgym``, its own numba cache). The
trees alternate burst by burst for ``--pairs`` pairs (old new, new old, old new, ...), so a
drift of the machine's load hits both sides alike. Both build the same env (``--cluster``, a
Sia-Philly-like trace with the arrival rate scaled to the cluster, 32 jobs/h per 64 GPUs, as
``benchmarks/env_speed.py``); a burst resets it with ``--seed`` and steps ``--decisions``
decisions of one agent (the random masked agent, or the PAL agent
``env.heuristic_action("pal")``), resets at episode ends included, and reports its process's
CPU microseconds per decision (agent and env). A warm-up burst per tree and agent is not
measured (kernels compiled or loaded).

Prints one line per pair (old us, new us, new/old per agent), the median [quartiles] (min -
max) of each side's us and of the new/old ratio over the pairs, and whether both trees took the same
decisions (crc32 of every action and reward: they match when the envs are bit-identical).
Asserts nothing. The env API used (``ClusterEnv(trace, cluster=)``, ``reset``, ``step``,
``action_masks``, ``heuristic_action``) is the same in every tree since the env's release.

    python benchmarks/env_speed_ab.py --old ../wt-old [--new .] [--pairs 100] [--cluster 16x4]
        [--decisions 1500] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

AGENTS = ("random", "pal")
_MARK = "ENV_SPEED_AB "


def _child(tree: str) -> None:
    """Serve one tree's env: for every stdin line ``AGENT DECISIONS SEED``, step and print one
    JSON line (CPU microseconds per decision, fingerprint)."""
    sys.path.insert(0, tree)
    import numpy as np

    import palgym
    from palgym.envs import ClusterEnv
    from palgym.sim.cluster import ClusterSpec
    from traces.generate import generate_sia_philly_like
    from traces.sia_philly_fit import SIA_PHILLY

    if not palgym.__file__ or not palgym.__file__.startswith(tree):
        raise SystemExit(f"imported {palgym.__file__}, not the tree {tree}")
    envs: dict[str, ClusterEnv] = {}

    def make_env(text: str, seed: int) -> ClusterEnv:
        cluster = ClusterSpec.parse(text)
        scale = cluster.num_gpus / 64
        params = type(SIA_PHILLY)(**{**SIA_PHILLY.__dict__,
                                     "jobs_per_hour": SIA_PHILLY.jobs_per_hour * scale})
        trace = generate_sia_philly_like(int(160 * scale), seed=seed, params=params)
        return ClusterEnv(trace.to_trace(f"gen-{text}"), cluster=cluster)

    def run(env: ClusterEnv, agent: str, decisions: int, seed: int) -> int:
        """Step ``decisions`` times from a seeded reset; returns a fingerprint (crc32 of the
        actions and rewards)."""
        env.reset(seed=seed)
        uniform = np.random.default_rng(seed).random(decisions)
        trail = np.empty((decisions, 2))
        for i in range(decisions):
            if agent == "random":
                valid = env.action_masks().nonzero()[0]
                action = int(valid[int(uniform[i] * valid.size)])
            else:
                action = env.heuristic_action("pal")
            _, reward, terminated, truncated, _ = env.step(action)
            trail[i] = action, reward
            if terminated or truncated:
                env.reset()
        return zlib.crc32(trail.tobytes())

    for line in sys.stdin:
        cluster, agent, decisions, seed = line.split()
        key = f"{cluster} {seed}"
        if key not in envs:
            envs[key] = make_env(cluster, int(seed))
        start = time.process_time()
        fingerprint = run(envs[key], agent, int(decisions), int(seed))
        cpu_us = (time.process_time() - start) / int(decisions) * 1e6
        print(json.dumps({"cpu_us": cpu_us, "fingerprint": fingerprint}), flush=True)


class _Tree:
    """One tree's serving subprocess (its own ``palgym`` first on ``sys.path``)."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child", str(tree)],
            cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def run(self, cluster: str, agent: str, decisions: int, seed: int) -> dict[str, float]:
        """Step ``decisions`` decisions of ``agent`` from a seeded reset; the child's result."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{cluster} {agent} {decisions} {seed}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.tree}: the subprocess ended (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def _spread(values: list[float], digits: int = 3) -> str:
    """``median [first quartile - third quartile] (min - max)``."""
    low, _, high = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return (f"{statistics.median(values):.{digits}f} [{low:.{digits}f} - {high:.{digits}f}] "
            f"({min(values):.{digits}f} - {max(values):.{digits}f})")


def _interleave(
    trees: dict[str, _Tree], args: argparse.Namespace
) -> tuple[dict[tuple[str, str], list[float]], dict[str, bool]]:
    """Warm up, then alternate the trees pair by pair, printing each pair; returns every
    burst's CPU us per (agent, side) and whether the fingerprints matched per agent."""
    for tree in trees.values():  # unmeasured: kernels compiled / loaded, envs built
        for agent in AGENTS:
            tree.run(args.cluster, agent, min(300, args.decisions), args.seed)
    us: dict[tuple[str, str], list[float]] = {(a, s): [] for a in AGENTS for s in trees}
    same = dict.fromkeys(AGENTS, True)
    print(f"{'pair':>4} {'order':<8} " + " ".join(
        f"{agent + ' old':>10} {agent + ' new':>10} {'new/old':>8}" for agent in AGENTS))
    for pair in range(args.pairs):
        order = ("old", "new") if pair % 2 == 0 else ("new", "old")
        cells = []
        for agent in AGENTS:
            result = {side: trees[side].run(args.cluster, agent, args.decisions, args.seed)
                      for side in order}
            for side in order:
                us[agent, side].append(result[side]["cpu_us"])
            same[agent] &= result["old"]["fingerprint"] == result["new"]["fingerprint"]
            old, new = result["old"]["cpu_us"], result["new"]["cpu_us"]
            cells.append(f"{old:10.2f} {new:10.2f} {new / old:8.3f}")
        print(f"{pair:>4} {'-'.join(order):<8} " + " ".join(cells), flush=True)
    return us, same


def main() -> None:
    """Alternate the trees for ``--pairs`` pairs; print per pair and per agent."""
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the old tree (a git worktree)")
    parser.add_argument("--new", type=Path, default=here, help="the new tree (default: this one)")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--cluster", default="16x4", help="N x G_n (default 64 GPUs)")
    parser.add_argument("--decisions", type=int, default=1500, help="decisions per burst")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(str(Path(args.child).resolve()))
        return
    if args.old is None:
        parser.error("--old PATH is required")
    trees = {"old": _Tree(args.old.resolve()), "new": _Tree(args.new.resolve())}
    print(f"old {trees['old'].tree}\nnew {trees['new'].tree}\ncluster {args.cluster}, "
          f"bursts of {args.decisions} decisions from seed {args.seed}, {args.pairs} pairs; "
          "CPU us per decision (agent + env, resets included)")
    try:
        us, same = _interleave(trees, args)
    finally:
        for tree in trees.values():
            tree.close()
    for agent in AGENTS:
        print(f"{agent:<7} CPU us/decision old {_spread(us[agent, 'old'], 2)}, "
              f"new {_spread(us[agent, 'new'], 2)}")
    for agent in AGENTS:
        ratios = [n / o for o, n in zip(us[agent, "old"], us[agent, "new"], strict=True)]
        print(f"{agent:<7} new/old median [q1 - q3] (min - max) {_spread(ratios)}   "
              f"same decisions in both trees: {'yes' if same[agent] else 'NO'}")


if __name__ == "__main__":
    main()
