"""Benchmark: decisions per second of the Gymnasium env (random masked agent and PAL agent).

For each cluster size, a Sia-Philly-like trace is generated with the arrival rate scaled to the
cluster (32 jobs/h per 64 GPUs) and the env is stepped for a fixed number of decisions (after a
warm-up that loads the compiled kernels). Prints wall-clock decisions per second (agent and
env), env steps per second (the time inside ``step`` and ``reset`` only) and the CPU time per
decision of this process (steadier on a shared machine), each as the median and the spread
(min - max) of ``--repeat`` runs, so one lucky run is not reported as the speed; asserts
nothing. The random agent samples uniformly among the masked-valid actions; the PAL agent is
``env.heuristic_action("pal")``.

    python benchmarks/env_speed.py [--clusters 16x4 64x4 256x4] [--decisions 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from palgym.envs import ClusterEnv
from palgym.sim.cluster import ClusterSpec
from traces.generate import generate_sia_philly_like
from traces.sia_philly_fit import SIA_PHILLY


def run(
    env: ClusterEnv, agent: str, decisions: int, rng: np.random.Generator
) -> tuple[int, float]:
    """Step ``decisions`` times from a reset; returns (episodes finished, wall seconds spent
    inside ``env.step`` and ``env.reset``, i.e. without the agent's own time)."""
    episodes = 0
    inside = 0.0
    clock = time.perf_counter
    uniform = rng.random(decisions)  # drawn up front: the agent's own cost stays small
    for i in range(decisions):
        if agent == "random":
            valid = env.action_masks().nonzero()[0]
            action = int(valid[int(uniform[i] * valid.size)])
        else:
            action = env.heuristic_action("pal")
        start = clock()
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            episodes += 1
            env.reset()
        inside += clock() - start
    return episodes, inside


def measure(
    env: ClusterEnv, agent: str, decisions: int, seed: int, repeat: int
) -> list[tuple[float, float, float, int]]:
    """Every one of ``repeat`` runs: (decisions per wall-clock second with the agent, env steps
    per second without it, CPU microseconds per decision, episodes)."""
    results = []
    for _ in range(repeat):
        rng = np.random.default_rng(seed)
        env.reset(seed=seed)
        run(env, agent, min(200, decisions), rng)  # warm-up: kernels loaded, factors fitted
        env.reset(seed=seed)
        wall, cpu = time.perf_counter(), time.process_time()
        episodes, inside = run(env, agent, decisions, rng)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        results.append((decisions / wall, decisions / inside, cpu / decisions * 1e6, episodes))
    return results


def spread(values: list[float]) -> str:
    """``median [min - max]`` of the runs."""
    return f"{statistics.median(values):8.0f} [{min(values):6.0f} - {max(values):6.0f}]"


def profile_env(env: ClusterEnv, decisions: int, seed: int) -> None:
    """Print microseconds per decision of the env's main parts (cProfile, PAL agent)."""
    import cProfile
    import pstats

    env.reset(seed=seed)
    profiler = cProfile.Profile()
    profiler.runcall(run, env, "pal", decisions, np.random.default_rng(seed))
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    parts = {
        "decision (Python + kernel)": ("decide.py", "__call__"),
        "  of which the compiled kernel": ("obs_kernel.py", "decision"),
        "engine commit": ("engine.py", "commit"), "engine advance": ("engine.py", "advance"),
        "new round (queue order)": ("rounds.py", "_new_round"),
        "heuristic action": ("cluster_env.py", "heuristic_action"),
        "apply action": ("cluster_env.py", "_apply"),
        "whole step": ("cluster_env.py", "step"),
    }
    print("  where the time goes (us per decision, cProfile adds overhead):")
    for label, (module, function) in parts.items():
        total = sum(v[3] for (path, _, name), v in stats.items()
                    if name == function and path.endswith(module))
        print(f"    {label:<30} {total / decisions * 1e6:8.1f}")


def main() -> None:
    """Print one line per (cluster, agent)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", nargs="+", default=["16x4", "64x4", "256x4"],
                        help="N x G_n cluster shapes (64, 256 and 1,024 GPUs by default)")
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per (cluster, agent); their median and min - max are printed")
    parser.add_argument("--profile", action="store_true",
                        help="also print where the time goes (cProfile, cumulative, PAL agent)")
    args = parser.parse_args()
    print(f"{'cluster':<8} {'GPUs':>5} {'agent':<7} {'decisions/s median [min - max]':>31} "
          f"{'env steps/s median [min - max]':>31} {'CPU us/dec median [min - max]':>31} "
          f"{'episodes':>9}")
    for text in args.clusters:
        cluster = ClusterSpec.parse(text)
        scale = cluster.num_gpus / 64
        params = type(SIA_PHILLY)(**{**SIA_PHILLY.__dict__,
                                     "jobs_per_hour": SIA_PHILLY.jobs_per_hour * scale})
        trace = generate_sia_philly_like(int(160 * scale), seed=args.seed, params=params)
        env = ClusterEnv(trace.to_trace(f"gen-{text}"), cluster=cluster)
        for agent in ("random", "pal"):
            runs = measure(env, agent, args.decisions, args.seed, args.repeat)
            rates, env_rates, cpu_us, episodes = (list(c) for c in zip(*runs, strict=True))
            print(f"{text:<8} {cluster.num_gpus:>5} {agent:<7} {spread(rates):>31} "
                  f"{spread(env_rates):>31} {spread(cpu_us):>31} {max(episodes):>9}")
        if args.profile:
            profile_env(env, args.decisions, args.seed)


if __name__ == "__main__":
    main()
