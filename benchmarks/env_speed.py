"""Benchmark: decisions per second of the Gymnasium env (random masked agent and PAL agent).

For each cluster size, a Sia-Philly-like trace is generated with the arrival rate scaled to the
cluster (32 jobs/h per 64 GPUs) and the env is stepped for a fixed number of decisions (after a
warm-up that loads the compiled kernels). Prints wall-clock decisions per second (agent and
env), env steps per second (the time inside ``step`` and ``reset`` only) and the CPU time per
decision of this process (steadier on a shared machine), each as the median and the spread
(min - max) of ``--repeat`` runs, so one lucky run is not reported as the speed; asserts
nothing. The random agent samples uniformly among the masked-valid actions; the PAL agent is
``env.heuristic_action("pal")``.

The batched env (:class:`palgym.envs.vector.ClusterVectorEnv`, ``--batched 1 16 64``) is
measured the same way on the first cluster: N rows stepped by one call, ``--decisions``
decisions in all, the random agent drawing one valid action per row from the batched masks
(vectorised) and the PAL agent asking each row's ``heuristic_action("pal")``.

    python benchmarks/env_speed.py [--clusters 16x4 64x4 256x4] [--decisions 3000] [--repeat 3]
    python benchmarks/env_speed.py --clusters 16x4 --batched 1 16 64
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from palgym._numba import entry_point
from palgym.envs import ClusterEnv, decide
from palgym.envs.vector import ClusterVectorEnv
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


def run_batched(venv: ClusterVectorEnv, agent: str, decisions: int, rng: np.random.Generator
                ) -> tuple[int, float]:
    """Step the N rows until ``decisions`` decisions; returns (episodes finished, wall seconds
    inside ``venv.step``)."""
    episodes, inside, clock = 0, 0.0, time.perf_counter
    for _ in range(max(decisions // venv.num_envs, 1)):
        if agent == "random":
            masks = venv.action_masks()
            pick = (rng.random(venv.num_envs) * masks.sum(axis=1)).astype(np.int64)
            actions = (np.cumsum(masks, axis=1) <= pick[:, None]).sum(axis=1)
        else:
            actions = np.array(venv.call("heuristic_action", "pal"))
        start = clock()
        _, _, terminated, truncated, _ = venv.step(actions)
        inside += clock() - start
        episodes += int((terminated | truncated).sum())
    return episodes, inside


def measure_batched(venv: ClusterVectorEnv, agent: str, decisions: int, seed: int, repeat: int
                    ) -> list[tuple[float, float, float, int]]:
    """:func:`measure` for the batched env (decisions counted over all rows)."""
    results = []
    for _ in range(repeat):
        rng = np.random.default_rng(seed)
        venv.reset(seed=seed)
        run_batched(venv, agent, min(200 * venv.num_envs, decisions), rng)  # warm-up
        venv.reset(seed=seed)
        wall, cpu = time.perf_counter(), time.process_time()
        episodes, inside = run_batched(venv, agent, decisions, rng)
        done = max(decisions // venv.num_envs, 1) * venv.num_envs
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        results.append((done / wall, done / inside, cpu / done * 1e6, episodes))
    return results


def spread(values: list[float]) -> str:
    """``median [min - max]`` of the runs."""
    return f"{statistics.median(values):8.0f} [{min(values):6.0f} - {max(values):6.0f}]"


def profile_env(env: ClusterEnv | ClusterVectorEnv, decisions: int, seed: int,
                agent: str = "pal") -> None:
    """Print microseconds per decision of the env's main parts (cProfile; cumulative times,
    so nested parts overlap; the batched env with the random agent, the single env with
    ``agent``). The compiled kernel's line is the call through its entry point, argument
    conversion included."""
    import cProfile
    import pstats

    env.reset(seed=seed)
    profiler = cProfile.Profile()
    if isinstance(env, ClusterVectorEnv):
        profiler.runcall(run_batched, env, "random", decisions, np.random.default_rng(seed))
        decisions = max(decisions // env.num_envs, 1) * env.num_envs
    else:
        profiler.runcall(run, env, agent, decisions, np.random.default_rng(seed))
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    parts = {
        "decision (Python + kernel)": ("decide.py", "__call__"),
        "  of which the compiled kernel": ("obs_kernel.py", "decision"),
        "engine commit": ("engine.py", "commit"), "engine advance": ("engine.py", "advance"),
        "new round (queue order)": ("rounds.py", "_new_round"),
        "heuristic action": ("queries.py", "heuristic_action"),
        "apply action": ("cluster_env.py", "_apply"),
        "whole step": ("cluster_env.py", "step"),
        "batched step (rows + writes)": ("vector.py", "step"),
    }
    who = (f"batched env, N = {env.num_envs}, random agent" if isinstance(env, ClusterVectorEnv)
           else f"single env, {agent} agent")
    print(f"  where the time goes ({who}; us per decision, cProfile adds overhead):")
    for label, (module, function) in parts.items():
        compiled = f"{module.removesuffix('.py')}.{function}>"  # a numba dispatcher's entry
        total = sum(v[3] for (path, _, name), v in stats.items()
                    if (name == function and path.endswith(module)) or name.endswith(compiled))
        if total:
            print(f"    {label:<30} {total / decisions * 1e6:8.1f}")
    everything = sum(v[2] for v in stats.values())  # the sum of own times: the whole run
    print(f"    {'the whole run':<30} {everything / decisions * 1e6:8.1f}")


def kernel_share(make: Callable[[], ClusterVectorEnv], decisions: int, seed: int) -> None:
    """Print the compiled decision kernel's wall time per decision, timed around its compiled
    entry point (no profiler), and its share of the batched run's wall time (random agent)."""
    spent = [0.0]

    def timed_entry(function: Any, args: Any) -> Callable[..., Any]:
        compiled = entry_point(function, args)

        def call(*arguments: Any) -> Any:
            start = time.perf_counter()
            result = compiled(*arguments)
            spent[0] += time.perf_counter() - start
            return result
        return call

    original = decide.entry_point
    decide.entry_point = timed_entry  # the envs made below take the timed entry
    try:
        venv = make()
        rng = np.random.default_rng(seed)
        venv.reset(seed=seed)
        run_batched(venv, "random", min(200 * venv.num_envs, decisions), rng)  # warm-up
        venv.reset(seed=seed)
        spent[0] = 0.0
        wall = time.perf_counter()
        run_batched(venv, "random", decisions, rng)
        wall = time.perf_counter() - wall
    finally:
        decide.entry_point = original
    done = max(decisions // venv.num_envs, 1) * venv.num_envs
    print(f"  compiled decision kernel, timed around its entry point (N = {venv.num_envs}, random "
          f"agent): {spent[0] / done * 1e6:.1f} us per decision, {spent[0] / wall:.0%} of the "
          f"wall time")


def main() -> None:
    """Print one line per (cluster, agent)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", nargs="+", default=["16x4", "64x4", "256x4"],
                        help="N x G_n cluster shapes (64, 256 and 1,024 GPUs by default)")
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per (cluster, agent); their median and min - max are printed")
    parser.add_argument("--batched", nargs="*", type=int, default=[], metavar="N",
                        help="also the batched env with N rows (e.g. 1 16 64), first cluster")
    parser.add_argument("--profile", action="store_true",
                        help="also print where the time goes (cProfile, cumulative; PAL agent "
                             "for the single env, random agent for the batched env)")
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
        for num_envs in args.batched if text == args.clusters[0] else []:
            venv = ClusterVectorEnv(num_envs, trace=trace.to_trace(f"gen-{text}"),
                                    cluster=cluster)
            for agent in ("random", "pal"):
                runs = measure_batched(venv, agent, args.decisions, args.seed, args.repeat)
                rates, env_rates, cpu_us, episodes = (list(c) for c in zip(*runs, strict=True))
                label = f"N={num_envs}"
                print(f"{label:<8} {cluster.num_gpus:>5} {agent:<7} {spread(rates):>31} "
                      f"{spread(env_rates):>31} {spread(cpu_us):>31} {max(episodes):>9}")
            if args.profile:
                profile_env(venv, args.decisions, args.seed)
                kernel_share(functools.partial(ClusterVectorEnv, num_envs,
                                               trace=trace.to_trace(f"gen-{text}"),
                                               cluster=cluster), args.decisions, args.seed)


if __name__ == "__main__":
    main()
