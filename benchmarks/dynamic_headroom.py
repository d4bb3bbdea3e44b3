"""Benchmark: what the dynamic world's variability costs one rule, and what straggler
migration takes back.

Runs one rule (default ``srsf/pal+backfill``, the validation-chosen best of the 27 combinations
in the ``dynamic-online`` world) on a split's episodes (the rule selector's episodes:
``agents.selection.runs.split_episodes``, the suite's traces plus ``--regimes``), then the
same episodes in counterfactual worlds (parts of ``SimConfig.dynamics`` switched off: the
references no scheduler can beat on those causes), with straggler migration
(``BeliefOptions.straggler_ratio``, PAL_MODEL section 10), and with the oracle belief (the
rule deciding on the truth now instead of the online estimate). The worlds (:data:`WORLDS`): parts
of the dynamics off; every GPU at its class's best profile value; the locality penalty paid
only by jobs wider than a node; eight times the nodes. Prints, per variant, the geomean over
episodes of the ratio of the censored average JCT to the rule's, its range, and the unfinished
jobs; asserts nothing. A counterfactual world is not a policy: its rows are headroom
references, never contenders.

    python benchmarks/dynamic_headroom.py --cache CACHE --regimes REGIMES [--split test]
        [--stragglers 1.3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from agents.selection.runs import LabelledEpisode, split_episodes, with_stragglers
from palgym.errors import ConfigError
from palgym.policies.belief import BeliefOptions
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import LocalityRule
from palgym.simulate import run_episode


def _dynamics(**parts: Any) -> Callable[[LabelledEpisode], LabelledEpisode]:
    """The world with ``parts`` of the dynamics replaced (none given: no dynamics)."""
    def world(e: LabelledEpisode) -> LabelledEpisode:
        config = e.episode.config
        dynamics = None if not parts else dataclasses.replace(config.dynamics, **parts)
        return _with(e, config=dataclasses.replace(config, dynamics=dynamics))
    return world


def _with(e: LabelledEpisode, **fields: Any) -> LabelledEpisode:
    return dataclasses.replace(e, episode=dataclasses.replace(e.episode, **fields))


def _local_only(e: LabelledEpisode) -> LabelledEpisode:
    """Only a job wider than a node pays the locality penalty."""
    config = dataclasses.replace(e.episode.config, locality_rule=LocalityRule.LARGER_THAN_NODE)
    return _with(e, config=config)


def _larger(e: LabelledEpisode, times: int = 8) -> LabelledEpisode:
    """``times`` the nodes, the profile tiled: no contention for GPUs."""
    cluster, profile = e.episode.cluster, e.episode.profile
    return _with(e, cluster=ClusterSpec(cluster.num_nodes * times, cluster.gpus_per_node),
                 profile=dataclasses.replace(profile, perfvar=np.tile(profile.perfvar, times)))


def _best_gpus(e: LabelledEpisode) -> LabelledEpisode:
    """No dynamics, and every GPU at its class's best (least) profile value."""
    profile = e.episode.profile
    best = np.repeat(profile.perfvar.min(axis=1, keepdims=True), profile.perfvar.shape[1], 1)
    return _with(_dynamics()(e), profile=dataclasses.replace(profile, perfvar=best))


def _oracle(episodes: list[LabelledEpisode]) -> list[LabelledEpisode]:
    """The same episodes and world, the rule deciding on the oracle belief (the truth now,
    refitted as the online belief is) instead of the online one: what knowing the GPUs'
    current speeds is worth to it."""
    return [_with(e, belief=dataclasses.replace(e.episode.belief, mode="oracle"))
            for e in episodes]


WORLDS: dict[str, Callable[[LabelledEpisode], LabelledEpisode]] = {
    "no outlier runs": _dynamics(run_outlier_prob=0.0),
    "no throttling": _dynamics(throttle=False),
    "no run-to-run noise": _dynamics(run_sigma=0.0),
    "no outlier runs, no throttling": _dynamics(run_outlier_prob=0.0, throttle=False),
    "no dynamics": _dynamics(),
    "every GPU at its best value, no dynamics": _best_gpus,
    "locality penalty only when wider than a node": _local_only,
    "8x the nodes (no contention)": _larger,
}
"""The counterfactual worlds: each maps an episode to the same trace in that world."""


def censored(episodes: list[LabelledEpisode], rule: str) -> tuple[np.ndarray, int]:
    """The censored average JCT (s) of each episode under ``rule``, and the unfinished jobs."""
    order, _, placement = rule.partition("/")
    values, unfinished = [], 0
    for e in episodes:
        metrics = run_episode(e.episode, placement, order, durations=e.durations).metrics
        values.append(metrics.censored_avg_jct_s)
        unfinished += metrics.num_jobs - metrics.num_completed
    return np.array(values), unfinished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="palgym-bench-v1")
    parser.add_argument("--task", default="dynamic-online")
    parser.add_argument("--split", default="test")
    parser.add_argument("--data-dir", default=os.environ.get("PALGYM_DATA_DIR"),
                        help="the public data (default: $PALGYM_DATA_DIR); the suite's "
                        "Sia-Philly workloads are read from it")
    parser.add_argument("--cache", help="palgym-bench's generated files (bench prepare): the "
                        "suite's generated validation traces")
    parser.add_argument("--regimes", help="a folder of `python -m traces regimes`")
    parser.add_argument("--rule", default="srsf/pal+backfill")
    parser.add_argument("--stragglers", nargs="*", type=float, default=[1.3])
    args = parser.parse_args()
    for ratio in args.stragglers:
        try:
            BeliefOptions("online", straggler_ratio=ratio)
        except ConfigError as error:
            parser.error(f"--stragglers: {error}")
    if args.regimes is None:
        warnings.warn("no --regimes: only the suite's own traces are run; the figures the docs "
                      "quote are over the suite's traces plus --regimes", stacklevel=1)
    try:
        episodes = split_episodes(args.split, suite=args.suite, task=args.task,
                                  data_dir=args.data_dir, cache_dir=args.cache,
                                  regimes=args.regimes)
    except ConfigError as error:  # missing public data or cache files included
        parser.error(str(error))
    start = time.perf_counter()
    base, unfinished = censored(episodes, args.rule)
    print(f"{args.rule} on {len(episodes)} {args.split} episodes of {args.task}: geomean "
          f"censored average JCT {np.exp(np.log(base).mean()) / 3600:.3f} h, {unfinished} "
          f"unfinished ({time.perf_counter() - start:.0f} s)")
    variants = [(f"world: {name}", [world(e) for e in episodes])
                for name, world in WORLDS.items()]
    variants += [(f"straggler migration, ratio {ratio:g}", with_stragglers(episodes, ratio))
                 for ratio in args.stragglers]
    variants.append(("oracle belief (the truth now, no migration)", _oracle(episodes)))
    print(f"{'variant':52s} {'geomean / rule':>14s} {'min':>7s} {'max':>7s} {'unfinished':>10s}")
    for name, worlds in variants:
        values, unfinished = censored(worlds, args.rule)
        ratio = values / base
        print(f"{name:52s} {np.exp(np.log(ratio).mean()):14.3f} {ratio.min():7.3f} "
              f"{ratio.max():7.3f} {unfinished:10d}")


if __name__ == "__main__":
    main()
