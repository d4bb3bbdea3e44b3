"""The policy API: policies read a SimView, take their options as fields (filled from a
configuration by the factories), and a custom policy written against the view runs under the
heuristic driver. SimConfig's closed choices are enums that read as their names."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

import numpy as np
import pytest

from palgym import ClusterSpec, SimConfig, Simulator, SimView, Trace, VariabilityProfile, preset
from palgym.errors import ConfigError
from palgym.policies import (
    CLAIRVOYANT,
    FIFO,
    LAS,
    PAL,
    SRTF,
    Packed,
    RandomPlacement,
    Sampler,
    Tiresias,
    make_placement,
    make_queue_order,
    make_sampler,
)
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import (
    ENGINE_FIELDS,
    EPISODE_FIELDS,
    POLICY_FIELDS,
    AttainedService,
    ClusterCountRule,
    PalNodeOrder,
    PolicyOptions,
    ProfileSampling,
    RemainingTime,
)
from palgym.sim.types import FREE, IntArray
from palgym.simulate import drive


@dataclass(frozen=True)
class LowestIds:
    """The custom placement of palgym.policies.base's docstring: each job in order on the
    lowest free GPU ids, stopping at the first that does not fit."""

    name: str = "lowest-ids"
    sticky: bool = False
    deterministic: bool = True

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        for job in order.tolist():
            free = np.flatnonzero(target == FREE)
            need = int(view.jobs.num_gpus[job])
            if need > free.size:
                break
            target[free[:need]] = job
        return target


def toy_sim() -> Simulator:
    """1 x 4 GPUs, R = 100 s, T_it 1 s, homogeneous: jobs (GPUs, iterations) 0 (3, 200),
    1 (2, 100), 2 (1, 300), all submitted at 0."""
    trace = Trace.from_columns(
        "toy", job_id=[0, 1, 2], num_gpus=[3, 2, 1], submit_time_s=[0.0, 0.0, 0.0],
        total_iterations=[200.0, 100.0, 300.0], iteration_time_s=[1.0] * 3, model=["m"] * 3,
        perf_class=[0, 0, 0],
    )
    return Simulator(trace, VariabilityProfile.homogeneous(4), ClusterSpec(1, 4),
                     preset("default", round_duration_s=100.0), backend="numpy")


def test_a_custom_policy_runs_under_the_driver() -> None:
    # FIFO: t=0 J0 on GPUs 0-2, J1 (2) does not fit: stop (J2 waits behind it).
    # t=200 J0 done; J1 on 0-1, J2 on 2. t=300 J1 done. J2 runs 300 rounds-worth: from 200 s
    # for 300 s -> done at 500 s.
    sim = toy_sim()
    drive(sim, FIFO(), LowestIds(), make_sampler(np.random.default_rng(0)))
    assert sim.records().completion_time_s.tolist() == [200.0, 300.0, 500.0]


def test_the_view_is_live_read_only_and_taken_once() -> None:
    sim = toy_sim()
    view = sim.view()
    assert sim.view() is view  # free to ask for at every decision
    sim.commit(np.array([0, 0, 0, FREE]))
    sim.advance()
    assert (view.now_s, view.round_index, view.num_admitted, view.num_jobs) == (100.0, 1, 3, 3)
    assert view.running().tolist() == [0] and view.round_duration_s == 100.0
    with pytest.raises(ValueError, match="read-only"):
        view.counters.floats[0] = 0.0


def test_factories_give_policies_the_configurations_options() -> None:
    artifact = preset("pal-artifact", packed_sticky_strict_total=True, pal_node_order="pandas-1.1",
                      tiresias_thresholds_gpu_s=(10.0, 20.0))
    factors = SlowdownFactors(sf=np.ones((4, 4)), labels=np.zeros((4, 4), dtype=np.int64),
                              tiers=(np.ones(1),) * 4)
    assert make_placement("packed-sticky", factors, artifact) == Packed(
        sticky=True, strict_total=True, keep_victims_stopped=True)
    assert make_placement("random-sticky", factors, artifact) == RandomPlacement(
        sticky=True, keep_victims_stopped=True)
    assert make_placement("packed-sticky", factors, preset("default")) == Packed(sticky=True)
    pal = make_placement("pal", factors, artifact)
    assert isinstance(pal, PAL) and pal.node_order is PalNodeOrder.PANDAS_1_1
    assert make_queue_order("las", CLAIRVOYANT, artifact) == LAS(service=AttainedService.WALL_CLOCK)
    assert make_queue_order("srtf", CLAIRVOYANT, artifact) == SRTF(remaining=RemainingTime.NOMINAL)
    assert make_queue_order("tiresias", CLAIRVOYANT, artifact) == Tiresias(
        service=AttainedService.WALL_CLOCK, thresholds_gpu_s=(10.0, 20.0))
    assert make_queue_order("las", CLAIRVOYANT, PolicyOptions()) == LAS(
        service=AttainedService.GPU_TIME)  # the defaults, asked for
    with pytest.raises(ConfigError, match="not None"):
        make_queue_order("las", CLAIRVOYANT, None)  # type: ignore[arg-type]
    assert make_queue_order("las", CLAIRVOYANT, PolicyOptions(las_service="wall-clock")) == LAS(
        service=AttainedService.WALL_CLOCK)


def test_config_fields_split_into_engine_policy_and_episode() -> None:
    names = [f.name for f in fields(SimConfig)]
    assert sorted(ENGINE_FIELDS + POLICY_FIELDS + EPISODE_FIELDS) == sorted(names)
    assert len(set(ENGINE_FIELDS + POLICY_FIELDS + EPISODE_FIELDS)) == len(names)
    assert set(POLICY_FIELDS) == {"sticky_keep_victims_stopped", "las_service", "srtf_remaining",
                                  "tiresias_thresholds_gpu_s", "packed_sticky_strict_total",
                                  "pal_node_order"}
    assert "round_duration_s" in ENGINE_FIELDS and "profile_seed" in EPISODE_FIELDS
    # PolicyOptions' defaults are SimConfig's
    assert SimConfig().policy_options == PolicyOptions()


def test_closed_choices_are_enums_that_read_as_their_names() -> None:
    config = SimConfig(pal_node_order="pandas-1.1", profile_sampling="single-run",
                       slowdown_clusters="outliers")
    assert config.pal_node_order is PalNodeOrder.PANDAS_1_1
    assert config.profile_sampling is ProfileSampling.SINGLE_RUN
    assert config.slowdown_clusters is ClusterCountRule.OUTLIERS
    # the text of a configuration (and so every episode hash) is as with plain strings
    assert "pal_node_order='pandas-1.1'" in repr(config)
    assert "profile_sampling='single-run', profile_seed=0, slowdown_clusters='outliers'" in (
        repr(config))
    assert json.dumps([config.pal_node_order]) == '["pandas-1.1"]'
    assert f"{config.slowdown_clusters}" == "outliers" and config.pal_node_order == "pandas-1.1"
    assert config == SimConfig(pal_node_order=PalNodeOrder.PANDAS_1_1,
                               profile_sampling=ProfileSampling.SINGLE_RUN,
                               slowdown_clusters=ClusterCountRule.OUTLIERS)
    with pytest.raises(ConfigError, match="pal_node_order must be one of"):
        SimConfig(pal_node_order="descending")
