"""The compiled heuristic loop (palgym.driver) against the Python loop of palgym.simulate.drive.

Every (queue order, placement) the compiled loop serves runs the same episodes on both loops:
the records, the metrics, the rounds, the stop reason, the random stream left behind and the
rounds at which the progress callback was called must be identical, bit for bit. The
episodes are small bundled-trace episodes with random profiles under the artifact's options
(background copies, starvation promotions at a low threshold, the stall detector's proof and
overload test with a low round cap) and under the defaults (numpy streams). Which episodes the
compiled loop serves is the rule of palgym.driver.plan, listed here case by case.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import pytest

from palgym._numba import AVAILABLE
from palgym.driver import CompiledPlan, compiled_plan
from palgym.errors import ConfigError
from palgym.policies import (
    CLAIRVOYANT,
    Durations,
    make_placement,
    make_queue_order,
    make_sampler,
)
from palgym.policies.gittins import GittinsOrder, ServicePrior
from palgym.policies.registry import COMPILED_PLACEMENT_NAMES, COMPILED_QUEUE_ORDER_NAMES
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.stall import StallDetector
from palgym.simulate import Episode, drive, make_episode, slowdown_factors
from palgym.testing import random_profile
from tests.test_engine_kernels import bundled_trace

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the compiled loop needs numba")

CLUSTER = ClusterSpec(8, 4)
CONFIGS: dict[str, SimConfig] = {
    # background copies overloading 16 GPUs, promotions, the artifact's policy options
    "artifact": preset("pal-artifact", starvation_threshold_s=5400.0, max_rounds=900,
                       background_jobs_per_hour=6.0),
    # numpy streams, no background, no starvation
    "default": preset("default", max_rounds=3000),
}


def episode_of(config_name: str, seed: int) -> Episode:
    rng = np.random.default_rng(seed)
    config = CONFIGS[config_name]
    trace = bundled_trace(seed % 5, 24)
    trace = trace.select(trace.num_gpus <= CLUSTER.num_gpus)
    return make_episode(trace, cluster=CLUSTER, config=config,
                        profile=random_profile(rng, CLUSTER.num_gpus), seed=seed)


def run(episode: Episode, order_name: str, policy: str, driver: str) -> dict[str, Any]:
    """One episode on one loop: everything the two loops must agree on."""
    factors = slowdown_factors(episode)
    order = make_queue_order(order_name, CLAIRVOYANT, episode.config)
    placement = make_placement(policy, factors, episode.config)
    rng = copy.deepcopy(episode.placement_rng)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    sticky = placement.sticky
    stall = StallDetector(sim, 3.0, None if sticky else order.name, round_cap=600,
                          prefix_order=order.name if sticky else None, proof_every=7)
    calls: list[int] = []

    def progress(s: Simulator) -> int:
        calls.append(s.round_index)
        return s.round_index + 37

    reason = drive(sim, order, placement, make_sampler(rng), stall=stall, progress=progress,
                   driver=driver)
    records = sim.records()
    return {
        "reason": reason, "rounds": sim.round_index, "now_s": sim.now_s, "calls": calls,
        "records": {name: np.asarray(getattr(records, name)).tobytes() for name in vars(records)},
        "metrics": repr(sim.metrics()), "job_of_gpu": sim.job_of_gpu.tobytes(),
        "rng": repr(rng.getstate() if hasattr(rng, "getstate") else rng.bit_generator.state),
    }


@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("policy", COMPILED_PLACEMENT_NAMES)
def test_compiled_loop_gives_the_python_loops_episodes(config_name: str, policy: str) -> None:
    # every registered placement and queue order with a compiled form, on both loops
    for seed, order_name in enumerate(COMPILED_QUEUE_ORDER_NAMES):
        episode = episode_of(config_name, seed + 3 * len(policy))
        python = run(episode, order_name, policy, "python")
        compiled = run(episode, order_name, policy, "compiled")
        differ = [key for key in python if python[key] != compiled[key]]
        assert not differ, f"{order_name} {policy} seed {seed}: {differ}"


def test_the_episodes_reach_what_the_compiled_loop_must_stop_for() -> None:
    # Guard against a vacuous comparison: the artifact episodes stop on the round cap and on
    # the stall detector's blocking proof, admit background copies and promote starved jobs.
    policy = "packed-sticky"
    reasons = {run(episode_of("artifact", seed + 3 * len(policy)), order, policy,
                   "compiled")["reason"].split(" ")[0]
               for seed, order in enumerate(COMPILED_QUEUE_ORDER_NAMES)}
    assert {"", "round", "blocked:"} <= reasons, reasons
    episode = episode_of("artifact", 1)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    factors = slowdown_factors(episode)
    drive(sim, make_queue_order("srtf", CLAIRVOYANT, episode.config),
          make_placement("pal", factors, episode.config), make_sampler(episode.placement_rng))
    assert sim.jobs.size > sim.jobs.num_measured  # background copies
    assert np.any(sim.jobs.priority[: sim.jobs.size] == 1)  # promotions


SERVED = [(order, policy) for order in COMPILED_QUEUE_ORDER_NAMES
          for policy in COMPILED_PLACEMENT_NAMES]


@functools.lru_cache(maxsize=8)
def small_episode(config: SimConfig) -> tuple[Episode, SlowdownFactors]:
    trace = bundled_trace(0, 10)
    episode = make_episode(trace.select(trace.num_gpus <= CLUSTER.num_gpus), cluster=CLUSTER,
                           config=config,
                           profile=random_profile(np.random.default_rng(0), CLUSTER.num_gpus))
    return episode, slowdown_factors(episode)


def plan_for(order: object = "fifo", policy: str = "pal", config: SimConfig | None = None,
             backend: str = "numba", **kwargs: Any) -> CompiledPlan | str:
    config = config or CONFIGS["default"]
    episode, factors = small_episode(config)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config,
                    backend=backend)  # type: ignore[arg-type]
    queue = (make_queue_order(order, kwargs.pop("durations", CLAIRVOYANT), config)
             if isinstance(order, str) else order)
    placement = make_placement(policy, factors, config)
    return compiled_plan(sim, queue, placement, make_sampler(episode.placement_rng), **kwargs)


@pytest.mark.parametrize(("order", "policy"), SERVED)
def test_every_order_and_placement_without_backfill_goes_compiled(order: str, policy: str
                                                                   ) -> None:
    for config in CONFIGS.values():
        assert isinstance(plan_for(order, policy, config), CompiledPlan)


@pytest.mark.parametrize(("case", "reason"), [
    ({"policy": "pal+backfill"}, "backfills"),
    ({"policy": "packed-sticky+easy"}, "backfills"),
    ({"backend": "numpy"}, "numpy step backend"),
    ({"on_event": print}, "per-round callback"),
    ({"config": preset("dynamic")}, "dynamic truth"),
    ({"config": preset("default", pal_node_order="pandas-1.1")}, "node order"),
    ({"order": "srtf", "durations": Durations("noisy")}, "noisy durations"),
    ({"order": GittinsOrder(ServicePrior.from_traces([bundled_trace(0, 10)]))},
     "no compiled twin"),
])
def test_the_python_loop_runs_what_the_compiled_one_does_not_serve(case: dict[str, Any],
                                                                    reason: str) -> None:
    plan = plan_for(**case)
    assert isinstance(plan, str) and reason in plan, plan


def test_compiled_driver_refuses_an_episode_it_does_not_serve() -> None:
    episode = episode_of("default", 1)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    placement = make_placement("pal+backfill", slowdown_factors(episode), episode.config)
    with pytest.raises(ConfigError, match="backfills"):
        drive(sim, make_queue_order("fifo", CLAIRVOYANT, episode.config), placement,
              make_sampler(episode.placement_rng), driver="compiled")
    with pytest.raises(ConfigError, match="driver must be one of"):
        drive(sim, make_queue_order("fifo", CLAIRVOYANT, episode.config), placement,
              make_sampler(episode.placement_rng), driver="fast")
