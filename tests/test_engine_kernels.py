"""The engine's two step backends (palgym.sim.step_numba against the step_numpy reference).

Twin simulators, one on each path, get the same targets (random valid ones, and the real
policies' ones) and must hold bit-identical state after every commit and every advance: every
JobTable column, the allocation, the clock, the usage counters and the records. Every rejected
target must raise the same exception with the same message on both paths, leaving both
unchanged. Plus numpy's pairwise summation, which the usage counter reproduces.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from palgym._numba import AVAILABLE
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError, InvalidActionError
from palgym.io import read_sia_trace
from palgym.policies import (
    CLAIRVOYANT,
    PLACEMENT_NAMES,
    make_placement,
    make_queue_order,
    make_sampler,
)
from palgym.sim.backend import Backend
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.jobs import JobColumns
from palgym.sim.locality import locality_penalties, locality_penalty
from palgym.sim.state import ADMITTED, columns_of, kernel_params
from palgym.sim.summation import pairwise_sum
from palgym.sim.types import FREE
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import Episode, make_episode, slowdown_factors
from palgym.testing import random_profile

CLUSTER = ClusterSpec(16, 4)
CONFIGS: dict[str, SimConfig] = {
    # background copies, starvation promotions (threshold low enough to trigger)
    "pal-artifact": preset("pal-artifact", starvation_threshold_s=1800.0),
    # every option the kernels read away from its default; an int round length
    "options": preset(
        "pal-artifact", restart_cost_s=90.0, locality_penalty_by_class=(1.16, 1.0, 1.3, 1.1),
        locality_rule="larger-than-node", starvation_threshold_s=1800.0, round_duration_s=300,
    ),
    # restart cost longer than a round, scalar penalty, no starvation, no background jobs
    "default-restart": preset("default", restart_cost_s=500.0, locality_penalty=2.5),
}


def bundled_trace(index: int = 0, num_jobs: int | None = None) -> Trace:
    trace = read_sia_trace(list(bundled_trace_paths().values())[index])
    if num_jobs is not None:
        trace = trace.select(np.arange(trace.num_jobs) < num_jobs)
    return trace


def state(sim: Simulator) -> dict[str, Any]:
    """Everything commit and advance may change, as bytes (bit equality, NaN positions too)."""
    out: dict[str, Any] = {
        f"jobs.{name}": (value.dtype, value.shape, value.tobytes())
        for name, value in vars(sim.jobs).items() if isinstance(value, np.ndarray)
    }
    out["jobs.size"] = sim.jobs.size
    out["job_of_gpu"] = (sim.job_of_gpu.dtype, sim.job_of_gpu.tobytes())
    out["now_s"] = np.float64(sim.now_s).tobytes()
    out["usage"] = np.asarray(sim.usage_gpu_rounds()).tobytes()
    for name, value in sim.state.counters._asdict().items():
        out[f"counters.{name}"] = (value.dtype, value.tobytes())
    for name in ("round_index", "events_since_commit", "done"):
        out[name] = getattr(sim, name)
    for name in ("next_arrival", "next_arrival_s", "next_background_s", "background_count"):
        out[f"arrivals.{name}"] = getattr(sim._arrivals, name)
    records = sim.records()
    for name in vars(records):
        out[f"records.{name}"] = np.asarray(getattr(records, name)).tobytes()
    return out


def assert_same(fast: Simulator, ref: Simulator, when: str) -> None:
    ours, theirs = state(fast), state(ref)
    differ = [name for name in theirs if ours[name] != theirs[name]]
    assert not differ, f"{when}: compiled and reference paths differ in {differ}"


class Twins:
    """A compiled and a reference simulator driven in lockstep, compared after every call."""

    def __init__(self, episode: Episode) -> None:
        args = (episode.trace, episode.profile, episode.cluster, episode.config)
        self.fast = Simulator(*args, backend="numba")
        self.ref = Simulator(*args, backend=Backend.NUMPY)
        assert_same(self.fast, self.ref, "start")

    def commit(self, target: np.ndarray | None) -> bool:
        changed = self.fast.commit(None if target is None else target.copy())
        assert self.ref.commit(target) == changed
        assert_same(self.fast, self.ref, f"commit at t={self.ref.now_s:g}")
        return changed

    def advance(self) -> None:
        finished = self.fast.advance()
        expected = self.ref.advance()
        assert finished.dtype == expected.dtype and finished.tolist() == expected.tolist()
        assert_same(self.fast, self.ref, f"advance to t={self.ref.now_s:g}")


def random_target(sim: Simulator, rng: np.random.Generator) -> np.ndarray:
    """A valid target: some running jobs stopped or moved, some active jobs placed anywhere."""
    target = sim.job_of_gpu.copy()
    to_place = [int(j) for j in sim.active_jobs() if j not in target]
    for job in sim.running_jobs().tolist():
        if rng.random() < 0.25:  # stop, and maybe restart elsewhere in the same commit
            target[target == job] = FREE
            if rng.random() < 0.5:
                to_place.append(job)
    for job in rng.permutation(to_place).tolist():
        free = np.flatnonzero(target == FREE)
        need = int(sim.jobs.num_gpus[job])
        if need <= free.size and rng.random() < 0.7:
            if rng.random() < 0.5:  # random GPUs (often spanning nodes)
                target[rng.choice(free, need, replace=False)] = job
            else:  # the first free GPUs (often within a node)
                target[free[:need]] = job
    return target


@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_random_targets_give_identical_states(config_name: str) -> None:
    rng = np.random.default_rng(len(config_name))
    config = CONFIGS[config_name]
    episode = make_episode(bundled_trace(1, 40), cluster=CLUSTER, config=config,
                           profile=random_profile(rng, CLUSTER.num_gpus), seed=1)
    twins = Twins(episode)
    if config_name == "default-restart":  # a non-contiguous GPU layout: node_of_gpu is used
        layout = rng.permutation(CLUSTER.node_of_gpu())
        twins.fast.node_of_gpu = layout
        twins.ref.node_of_gpu = layout.copy()
    promoted = 0
    for _ in range(700):
        if twins.ref.done:
            break
        draw = rng.random()
        if draw < 0.1:
            twins.commit(None)
        elif draw < 0.2:
            twins.commit(twins.ref.job_of_gpu.copy())
        else:
            twins.commit(random_target(twins.ref, rng))
        promoted += twins.ref.events_since_commit
        twins.advance()
    assert twins.ref.round_index > 100 and (twins.ref.jobs.num_preemptions > 0).any()
    if config.background_jobs_per_hour > 0:
        assert twins.ref.jobs.size > episode.trace.num_jobs, "no background job was admitted"
    if config.starvation_threshold_s is not None:
        assert promoted, "no job was promoted"


@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_policy_episodes_give_identical_states(policy: str) -> None:
    # Whole bundled episodes under the artifact preset, the targets made by the real policies.
    trace = bundled_trace(0)
    config = preset("pal-artifact", restart_cost_s=30.0 if "sticky" in policy else 0.0)
    episode = make_episode(trace, config=config, seed=2)
    placement = make_placement(policy, slowdown_factors(episode), config)
    order = make_queue_order("las", CLAIRVOYANT, config)
    sampler = make_sampler(copy.deepcopy(episode.placement_rng))
    twins = Twins(episode)
    while not twins.ref.done:
        assert not twins.ref.truncated
        view = twins.ref.view()
        twins.commit(placement.place(view, order.order(view), sampler))
        twins.advance()
    assert twins.ref.jobs.size > trace.num_jobs, "no background job was admitted"
    assert twins.fast.metrics() == twins.ref.metrics()


def toy_twins() -> Twins:
    """2 x 2 GPUs; jobs (GPUs, submit s, iterations): 0 (1, 0, 50) completes in the first
    round, 1 (2, 0, 1e6), 2 (1, 0, 1e6), 3 (1, 1e6, 10) is not admitted yet; all queued but 0."""
    trace = Trace.from_columns(
        "toy", job_id=[10, 11, 12, 13], num_gpus=[1, 2, 1, 1],
        submit_time_s=[0.0, 0.0, 0.0, 1e6], total_iterations=[50.0, 1e6, 1e6, 10.0],
        iteration_time_s=[1.0] * 4, model=["toy"] * 4, perf_class=[0, 1, 2, 3],
    )
    cluster = ClusterSpec(2, 2)
    episode = make_episode(trace, cluster=cluster, config=preset("default"),
                           profile=VariabilityProfile.homogeneous(4))
    twins = Twins(episode)
    twins.commit(np.array([0, FREE, FREE, FREE]))
    twins.advance()
    assert twins.ref.jobs.status.tolist() == [3, 1, 1, 0]
    return twins


@pytest.mark.parametrize(("target", "message"), [
    ([0, 1, 2], "target must have shape (4,)"),
    ([[1, 1, 2, FREE]], "target must have shape (4,)"),
    ([7, FREE, -5, 3], "target names unknown or unadmitted job index -5"),
    ([7, 3, FREE, FREE], "target names unknown or unadmitted job index 3"),
    ([4, 7, FREE, FREE], "target names unknown or unadmitted job index 4"),
    ([0, FREE, FREE, FREE], "job index 0 is not active (status 3)"),
    ([0, 0, 0, 2], "job index 0 is not active (status 3)"),  # status before count
    ([1, 0, 2, 2], "job index 0 is not active (status 3)"),  # lowest job index first
    ([1, FREE, 2, FREE], "job index 1 needs 2 GPUs, target gives 1"),
    ([1, 1, 1, 2], "job index 1 needs 2 GPUs, target gives 3"),
    ([1, 2, 2, FREE], "job index 1 needs 2 GPUs, target gives 1"),
    ([FREE, 2, 2, FREE], "job index 2 needs 1 GPUs, target gives 2"),
])
def test_rejected_targets_raise_the_same_error(target: list[Any], message: str) -> None:
    twins = toy_twins()
    before = state(twins.ref)
    for sim in (twins.fast, twins.ref):
        with pytest.raises(InvalidActionError) as raised:
            sim.commit(np.array(target))
        assert str(raised.value) == message
    assert state(twins.ref) == before
    assert_same(twins.fast, twins.ref, "after the rejection")
    twins.commit(np.array([1, 1, 2, FREE]))  # both still accept a valid target
    twins.advance()


def test_running_job_moved_and_stopped_on_both_paths() -> None:
    twins = toy_twins()
    twins.commit(np.array([1, 1, 2, FREE]))
    twins.advance()
    twins.commit(np.array([FREE, 1, 1, 2]))  # 1 spans the nodes now, 2 moved: both restarted
    assert twins.ref.jobs.num_preemptions.tolist() == [0, 1, 1, 0]
    twins.advance()
    twins.commit(np.array([FREE, FREE, FREE, 2]))  # 1 stopped, 2 kept
    assert twins.ref.jobs.num_preemptions.tolist() == [0, 2, 1, 0]
    twins.advance()


@pytest.mark.parametrize("size", [*range(0, 300), 511, 1000, 1024, 1025, 4099, 8193, 20000])
def test_pairwise_sum_equals_np_sum(size: int) -> None:
    rng = np.random.default_rng(size)
    for scale in (1.0, 1e-9, 1e9):
        values = 4.0 / (rng.random(size) * scale + rng.random(size) * 3.0)
        expected = np.sum(values)
        assert np.float64(0.0 + pairwise_sum(values, size)).tobytes() == expected.tobytes()


def test_numba_is_the_default_backend_when_installed() -> None:
    episode = make_episode(bundled_trace(0, 5))
    args = (episode.trace, episode.profile, episode.cluster, episode.config)
    assert Simulator(*args).backend is (Backend.NUMBA if AVAILABLE else Backend.NUMPY)
    assert Simulator(*args, backend="numpy").backend is Backend.NUMPY
    with pytest.raises(ConfigError, match="backend must be one of"):
        Simulator(*args, backend="fortran")  # type: ignore[arg-type]


@pytest.mark.parametrize("larger_than_node", [False, True])
def test_locality_rule_scalar_and_vector_forms_agree(larger_than_node: bool) -> None:
    # 2 GPUs per node; class penalties (A..D) 1.16, 1.0, 1.3, 1.1. Worked by hand: under
    # spans-nodes a job pays iff its set spans nodes; under larger-than-node iff it needs > 2.
    config = preset("default", locality_penalty_by_class=(1.16, 1.0, 1.3, 1.1),
                    locality_rule="larger-than-node" if larger_than_node else "spans-nodes")
    params = kernel_params(config, ClusterSpec(2, 2), num_measured=1)
    perf_class = np.array([0, 0, 2, 3, 2])
    num_gpus = np.array([1, 2, 3, 4, 2])
    spans = np.array([False, True, True, False, False])
    expected = ([1.0, 1.0, 1.3, 1.1, 1.0] if larger_than_node else [1.0, 1.16, 1.3, 1.0, 1.0])
    vector = locality_penalties(params, perf_class, num_gpus, spans)
    scalar = [locality_penalty(params, int(c), int(n), bool(s))
              for c, n, s in zip(perf_class, num_gpus, spans, strict=True)]
    assert vector.tolist() == expected and scalar == expected


def test_locality_penalties_fall_back_to_the_scalar_penalty() -> None:
    assert preset("default", locality_penalty=2.5).locality_penalties == (2.5,) * 4
    by_class = (1.16, 1.0, 1.0, 1.1)
    assert preset("default", locality_penalty_by_class=by_class).locality_penalties == by_class


@pytest.mark.parametrize("config_name", [*CONFIGS, "truncating"])
def test_idle_rounds_equal_the_repeated_calls(config_name: str) -> None:
    """Simulator.idle_rounds in one compiled loop leaves the state of the numpy backend's
    repeated commit(None) + advance(), round count included: it stops after a completion or
    promotion, at an arrival, at the end and at max_rounds."""
    rng = np.random.default_rng(7)
    config = (preset("default", max_rounds=150) if config_name == "truncating"
              else CONFIGS[config_name])
    episode = make_episode(bundled_trace(1, 40), cluster=CLUSTER, config=config,
                           profile=random_profile(rng, CLUSTER.num_gpus), seed=3)
    twins = Twins(episode)
    stops: set[str] = set()
    while not (twins.ref.done or twins.ref.truncated):
        twins.commit(random_target(twins.ref, rng))
        twins.advance()
        arrivals = int(twins.ref.state.counters.ints[ADMITTED])
        rounds = twins.fast.idle_rounds()
        assert twins.ref.idle_rounds() == rounds
        assert_same(twins.fast, twins.ref, f"idle rounds to t={twins.ref.now_s:g}")
        if twins.ref.truncated:
            stops.add("max_rounds")
        elif twins.ref.done:
            stops.add("done")
        elif twins.ref.state.counters.ints[ADMITTED] > arrivals:
            stops.add("arrival")
        elif rounds > 1:
            stops.add("event after idle rounds")
    assert stops >= ({"max_rounds"} if config_name == "truncating"
                     else {"done", "arrival", "event after idle rounds"}), stops


def test_job_blocks_hold_every_column_at_its_row() -> None:
    # columns_of (compiled by step_numba) must give each JobTable column, as a view of its row.
    episode = make_episode(bundled_trace(0, 5))
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    columns = columns_of(*sim.state.job_blocks)
    for name in JobColumns._fields:
        assert np.shares_memory(getattr(columns, name), getattr(sim.jobs, name)), name
        assert getattr(columns, name).tobytes() == getattr(sim.jobs, name).tobytes(), name
