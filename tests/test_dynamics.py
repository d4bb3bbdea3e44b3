"""The dynamic truth (palgym.sim.dynamics, palgym.sim.truth): hand-computed toys for a transient
outlier run, a throttling episode and drift, on both step backends; static presets unchanged.

Expected draws are recomputed here from the documented streams (``SeedSequence(seed).spawn(3)``
= run, throttle, drift; a run draw of n factors takes n uniforms then n normals; throttling one
uniform per unit and round, round 0 at construction; drift G normals at t = 0 and per round).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from palgym.errors import ConfigError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.dynamics import VariabilityDynamics, VariabilityProcess, throttle_step
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE
from palgym.sim.variability import VariabilityProfile
from palgym.simulate import make_episode, run_episode
from tests.toys import A, toy_profile, toy_trace

R = 100.0
BACKENDS = ("numpy", "numba")


def streams(seed: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def first_seed(accept) -> int:  # type: ignore[no-untyped-def]
    return next(seed for seed in range(1000) if accept(seed))


def sim_of(trace, num_gpus: int, dynamics: VariabilityDynamics | None, backend: str,  # type: ignore[no-untyped-def]
           profile: VariabilityProfile | None = None, seed: int | None = None) -> Simulator:
    config = preset("default", round_duration_s=R, dynamics=dynamics)
    return Simulator(trace, profile or toy_profile(num_gpus), ClusterSpec(1, num_gpus), config,
                     backend=backend, dynamics_seed=seed)  # type: ignore[arg-type]


def run_to_end(sim: Simulator, targets: dict[int, list[int]]) -> list[float]:
    """Commit ``targets[round]`` at that round (else keep), advance until done; the JCTs."""
    while not sim.done:
        sim.commit(np.array(targets[sim.round_index]) if sim.round_index in targets else None)
        sim.advance()
    return sim.records().completion_time_s.tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_outlier_run_is_transient(backend: str) -> None:
    # run draws: outlier (ratio 2) with probability 0.5, else exp(0 z) = 1. The first draw
    # (GPU 0's next run at t = 0) an outlier, the second (drawn when that run starts) normal.
    def draws(seed: int) -> list[float]:
        rng = streams(seed)[0]
        out = []
        for _ in range(2):
            u = rng.random(1)
            rng.standard_normal(1)
            out.append(2.0 if u[0] < 0.5 else 1.0)
        return out

    seed = first_seed(lambda s: draws(s) == [2.0, 1.0])
    dynamics = VariabilityDynamics(run_variation=True, run_sigma=0.0, run_outlier_prob=0.5,
                                   run_outlier_ratio=2.0)
    trace = toy_trace((1, 0.0, 200, A), (1, 0.0, 200, A))
    sim = sim_of(trace, 1, dynamics, backend, seed=seed)
    assert sim.perfvar[A, 0] == 2.0  # a free GPU shows its next run
    # job 0: T_eff = 2 s -> 50 iterations per round, 200 done at t = 400; job 1 then starts a
    # normal run: 100 per round, done at t = 600 (static profile: 200 and 400)
    sim.commit(np.array([0]))
    assert sim.jobs.iteration_time_effective_s[0] == 2.0
    for _ in range(4):
        sim.commit(None)
        sim.advance()
    assert sim.job_of_gpu[0] == FREE and sim.perfvar[A, 0] == 1.0
    assert run_to_end(sim, {4: [1]}) == [400.0, 600.0]
    static = sim_of(trace, 1, None, backend)
    assert run_to_end(static, {0: [0], 2: [1]}) == [200.0, 400.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_throttling_episode_slows_its_rounds_only(backend: str) -> None:
    # start probability 0.5, 2 rounds at factor 2: round 0 starts an episode (rounds 0, 1),
    # rounds 2 and 3 draw no start (round 1's uniform is drawn and ignored)
    def uniforms(seed: int) -> np.ndarray:
        return streams(seed)[1].random(4)

    seed = first_seed(lambda s: uniforms(s)[0] < 0.5 and min(uniforms(s)[2:]) >= 0.5)
    dynamics = VariabilityDynamics(throttle=True, throttle_start_prob=0.5, throttle_rounds=2,
                                   throttle_factor=2.0)
    sim = sim_of(toy_trace((1, 0.0, 250, A)), 1, dynamics, backend, seed=seed)
    # rounds 0, 1 at T_eff 2 s (50 each), round 2 at 1 s (100): 200 done; round 3: 300 >= 250
    done = []
    for _ in range(4):
        sim.commit(np.array([0]))
        done.append(float(sim.jobs.iterations_done[0]))
        sim.advance()
    assert done == [0.0, 50.0, 100.0, 200.0]
    assert sim.done and sim.records().completion_time_s.tolist() == [400.0]


def test_node_throttling_is_shared_within_a_node() -> None:
    options = VariabilityDynamics(throttle=True, throttle_start_prob=0.3, throttle_rounds=2,
                                  throttle_factor=1.5, throttle_scope="node")
    process = VariabilityProcess(options, np.ones((4, 4)), np.array([0, 0, 1, 1]), seed=3)
    rounds = []
    for _ in range(60):
        rounds.append(process.throttle.copy())
        process.next_round()
    series = np.array(rounds)
    assert np.array_equal(series[:, 0], series[:, 1]) and np.array_equal(series[:, 2], series[:, 3])
    assert (series[:, 0] != series[:, 2]).any() and set(np.unique(series).tolist()) == {1.0, 1.5}


def test_throttle_step_counts_the_start_round() -> None:
    left = np.array([0, 0, 2])
    throttled = throttle_step(left, np.array([0.1, 0.9, 0.0]), 0.5, 3)
    # unit 0 starts (3 rounds, this one included), unit 1 does not, unit 2 continues
    assert throttled.tolist() == [True, False, True] and left.tolist() == [2, 0, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_drift_is_an_ar1_in_log_space_and_sets_the_next_rounds_speed(backend: str) -> None:
    sigma, rho = 0.1, 0.5
    dynamics = VariabilityDynamics(drift=True, drift_sigma=sigma, drift_correlation=rho)
    profile = VariabilityProfile("c", np.full((4, 1), 1.5))
    sim = sim_of(toy_trace((1, 0.0, 1e9, A)), 1, dynamics, backend, profile, seed=11)
    z = streams(11)[2].standard_normal(3)
    x0 = sigma * z[0]
    x1 = rho * x0 + sigma * math.sqrt(1 - rho * rho) * z[1]
    x2 = rho * x1 + sigma * math.sqrt(1 - rho * rho) * z[2]
    assert sim.perfvar[A, 0] == pytest.approx(1.5 * math.exp(x0), rel=1e-14)
    sim.commit(np.array([0]))
    sim.advance()
    assert sim.perfvar[A, 0] == pytest.approx(1.5 * math.exp(x1), rel=1e-14)
    sim.commit(None)
    sim.advance()
    assert sim.perfvar[A, 0] == pytest.approx(1.5 * math.exp(x2), rel=1e-14)
    # round 0 ran at x0, round 1 at x1 (each round's speed fixed at its start)
    expected = R / (1.5 * math.exp(x0)) + R / (1.5 * math.exp(x1))
    assert sim.jobs.iterations_done[0] == pytest.approx(expected, rel=1e-13)


def test_every_part_off_is_the_static_engine() -> None:
    trace = toy_trace((2, 0.0, 500, A), (1, 50.0, 300, A), (3, 120.0, 400, A))
    profile = toy_profile(4, [1.0, 1.3, 2.0, 1.1])
    results = []
    for dynamics in (None, VariabilityDynamics()):
        episode = make_episode(trace, cluster=ClusterSpec(2, 2), profile=profile,
                               config=preset("default", round_duration_s=R, dynamics=dynamics))
        result = run_episode(episode, "pal")
        results.append((result.metrics, result.records.completion_time_s.tolist()))
    assert results[0] == results[1]
    assert Simulator(trace, profile, ClusterSpec(2, 2), preset("default")).truth is None


def test_the_dynamic_preset_and_bad_options() -> None:
    dynamics = preset("dynamic").dynamics
    assert dynamics is not None and dynamics.run_variation and dynamics.throttle
    assert not dynamics.drift and preset("dynamic", dynamics=None) == preset("default")
    assert repr(preset("dynamic")) == repr(preset("default"))  # the hash adds the dynamics
    with pytest.raises(ConfigError, match="run_outlier_prob"):
        VariabilityDynamics(run_outlier_prob=1.5)
    with pytest.raises(ConfigError, match="throttle_scope"):
        VariabilityDynamics(throttle_scope="rack")
    with pytest.raises(ConfigError, match="dynamics must be"):
        preset("default", dynamics="on")


def test_backends_agree_and_a_copy_continues_identically() -> None:
    import copy

    from palgym.policies import CLAIRVOYANT, make_queue_order
    from palgym.policies.placement import Packed
    from palgym.simulate import drive
    from tests.toys import B, C, ListSampler

    dynamics = VariabilityDynamics(run_variation=True, run_outlier_prob=0.3, throttle=True,
                                   throttle_start_prob=0.2, throttle_rounds=3, drift=True,
                                   throttle_scope="node")
    jobs = [(1 + i % 3, 30.0 * i, 200.0 + 70 * i, (A, B, C)[i % 3]) for i in range(10)]
    trace = toy_trace(*jobs)
    profile = toy_profile(4, [1.0, 1.3, 2.0, 1.1])
    config = preset("default", round_duration_s=R, dynamics=dynamics)
    finished = []
    for backend in BACKENDS:
        sim = Simulator(trace, profile, ClusterSpec(2, 2), config, backend=backend,  # type: ignore[arg-type]
                        dynamics_seed=5)
        drive(sim, make_queue_order("fifo", CLAIRVOYANT, config), Packed(sticky=False),
              ListSampler())
        finished.append(sim.records().completion_time_s.tolist())
    assert finished[0] == finished[1]
    sim = Simulator(trace, profile, ClusterSpec(2, 2), config, backend="numpy", dynamics_seed=5)
    for _ in range(5):
        sim.commit(None if sim.round_index else np.array([0, FREE, FREE, FREE]))
        sim.advance()
    twin = copy.deepcopy(sim)
    assert twin.truth is not None and twin.perfvar is twin.truth.process.truth
    for each in (sim, twin):
        drive(each, make_queue_order("fifo", CLAIRVOYANT, config), Packed(sticky=False),
              ListSampler())
    assert sim.records().completion_time_s.tolist() == twin.records().completion_time_s.tolist()
