"""What the scheduler knows about job durations (palgym.policies.durations): noisy user
estimates drawn by hand, SRTF by the estimate, unknown durations (SRTF refused, no
remaining-time information in the observation), parity of the env's two backends and of the
env with direct simulation under every level, and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.envs import ClusterEnv, kernel
from palgym.envs.features import JOB
from palgym.errors import ConfigError
from palgym.policies import CLAIRVOYANT, Durations, make_queue_order
from palgym.policies.durations import remaining_time_s
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import RemainingTime, preset
from palgym.sim.engine import Simulator
from palgym.sim.types import JobStatus
from palgym.sim.workload import Trace
from palgym.simulate import make_episode, run_episode
from tests.toys import R, toy_profile, toy_trace

ONE_GPU = ClusterSpec(1, 1)
# three 1-GPU class-A jobs at t = 0 with T_it = 1 s: true work 300, 200 and 100 s
THREE = toy_trace((1, 0.0, 300.0, 0), (1, 0.0, 200.0, 0), (1, 0.0, 100.0, 0))
needs_numba = pytest.mark.skipif(not kernel.AVAILABLE, reason="numba is not installed")


def _errors(seed: int, sigma: float, count: int) -> np.ndarray:
    """The estimate errors drawn independently: numpy's lognormal on child 2 of the seed.

    The same normal draws, exponentiated by C's ``exp`` one at a time, where palgym takes
    ``numpy.exp`` of a block: the two may differ in the last bit on CPUs whose vectorised exp
    rounds otherwise, so comparisons with these values allow one part in 1e15."""
    child = np.random.SeedSequence(seed).spawn(3)[2]
    return np.random.default_rng(child).lognormal(0.0, sigma, count)


def _toy_episode(trace: Trace = THREE, seed: int = 4):  # type: ignore[no-untyped-def]
    config = preset("default", round_duration_s=R)
    return make_episode(trace, cluster=ONE_GPU, config=config,
                        profile=toy_profile(ONE_GPU.num_gpus), seed=seed)


def _admitted(episode) -> Simulator:  # type: ignore[no-untyped-def]
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    assert sim.active_jobs().tolist() == [0, 1, 2]  # all three admitted at t = 0
    return sim


@pytest.mark.parametrize(("seed", "sigma"), [(4, 1.0), (0, 0.5), (123, 2.0)])
def test_noisy_estimates_are_the_seeds_lognormal_draws(seed: int, sigma: float) -> None:
    sim = _admitted(_toy_episode(seed=seed))
    durations = Durations("noisy", sigma).for_seed(seed)
    expected = np.array([300.0, 200.0, 100.0]) * _errors(seed, sigma, 3)
    np.testing.assert_allclose(durations.total_iterations(sim.jobs)[:3], expected, rtol=1e-15)
    # nothing has run: the estimated remaining time is the estimate itself (T_it = 1 s)
    jobs = np.arange(3)
    np.testing.assert_array_equal(remaining_time_s(sim.view(), jobs, durations),
                                  durations.total_iterations(sim.jobs)[:3])
    np.testing.assert_array_equal(
        remaining_time_s(sim.view(), jobs, durations, RemainingTime.NOMINAL),
        durations.total_iterations(sim.jobs)[:3])
    # job j's error is the j-th draw whatever the number of jobs drawn for
    np.testing.assert_array_equal(durations.errors(2000)[:3],
                                  Durations("noisy", sigma).for_seed(seed).errors(3))
    np.testing.assert_allclose(durations.errors(2000)[:3], _errors(seed, sigma, 3), rtol=1e-15)
    assert not np.array_equal(Durations("noisy", sigma).for_seed(seed + 1).errors(3),
                              durations.errors(3))


def test_remaining_estimate_counts_down_and_stops_at_zero() -> None:
    sim = _admitted(_toy_episode())
    durations = Durations("noisy", 1.0).for_seed(4)
    sim.jobs.iterations_done[:3] = [50.0, 50.0, 50.0]
    # seed 4, sigma 1: errors 0.28296, 6.56730, 1.55627, estimates 84.89, 1313.46, 155.63
    estimate = np.array([300.0, 200.0, 100.0]) * _errors(4, 1.0, 3)
    np.testing.assert_allclose(estimate, [84.889, 1313.459, 155.627], atol=1e-3)
    np.testing.assert_allclose(remaining_time_s(sim.view(), np.arange(3), durations),
                               estimate - 50.0, rtol=1e-15)
    sim.jobs.iterations_done[0] = 100.0  # past its estimate: the scheduler expects it now
    assert remaining_time_s(sim.view(), np.arange(1), durations)[0] == 0.0


def test_srtf_under_noisy_runs_jobs_in_estimate_order() -> None:
    """Seed 4, sigma 1: estimates 84.9, 1313.5 and 155.6 s (true 300, 200, 100 s), so SRTF
    runs job 0, then 2, then 1 on the single GPU (a running job's estimate only shrinks):
    completions 300, 400 and 600 s; clairvoyant SRTF runs 2, 1, 0: 600, 300 and 100 s."""
    episode = _toy_episode(seed=4)
    noisy = Durations("noisy", 1.0)
    order = make_queue_order("srtf", noisy.for_seed(4), episode.config)
    assert order.order(_admitted(episode).view()).tolist() == [0, 2, 1]
    assert make_queue_order("srtf", CLAIRVOYANT, episode.config).order(
        _admitted(episode).view()).tolist() == [2, 1, 0]
    result = run_episode(episode, "packed-sticky", "srtf", durations=noisy)
    np.testing.assert_array_equal(result.records.completion_time_s, [300.0, 600.0, 400.0])
    clairvoyant = run_episode(episode, "packed-sticky", "srtf")
    np.testing.assert_array_equal(clairvoyant.records.completion_time_s, [600.0, 300.0, 100.0])
    assert result.episode_hash == clairvoyant.episode_hash  # the same episode


def test_unknown_durations_refuse_srtf_naming_the_option() -> None:
    unknown = Durations("unknown")
    episode = _toy_episode()
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        make_queue_order("srtf", unknown, episode.config)
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        run_episode(episode, "pal", "srtf", durations=unknown)
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        remaining_time_s(_admitted(episode).view(), np.arange(3), unknown)
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        ClusterEnv("sia-philly-gen-0", queue_order="srtf", duration_knowledge="unknown")


def test_bad_knowledge_and_sigma_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="duration_knowledge must be one of"):
        Durations("psychic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="estimate_sigma"):
        Durations("noisy", -0.5)
    with pytest.raises(ConfigError, match="estimate_sigma"):
        ClusterEnv("sia-philly-gen-0", duration_knowledge="noisy", estimate_sigma=float("nan"))


@pytest.mark.parametrize("order", ["fifo", "las", "tiresias"])
def test_orders_without_durations_are_unaffected(order: str) -> None:
    """FIFO, LAS and Tiresias never read durations: equal results under every level."""
    episode = make_episode(Trace.from_columns(
        "t", job_id=list(range(6)), num_gpus=[1, 2, 4, 1, 2, 1],
        submit_time_s=[0.0, 0.0, 100.0, 150.0, 400.0, 400.0],
        total_iterations=[900.0, 400.0, 700.0, 300.0, 800.0, 100.0],
        iteration_time_s=[1.0] * 6, model=["m"] * 6, perf_class=[0, 1, 2, 3, 0, 1]),
        cluster=ClusterSpec(2, 2), config=preset("default", round_duration_s=R),
        profile=toy_profile(4), seed=2)
    reference = run_episode(episode, "pal", order).records.completion_time_s
    for level in ("noisy", "unknown"):
        ours = run_episode(episode, "pal", order, durations=Durations(level)).records
        np.testing.assert_array_equal(ours.completion_time_s, reference)


def _first_steps(env: ClusterEnv, seed: int) -> list[np.ndarray]:
    """Observations (the keys jobs, candidates, cluster concatenated) up to, not including,
    the first completion."""
    obs, _ = env.reset(seed=seed)
    seen = []
    completed = JobStatus.COMPLETED
    while not (env.simulator.jobs.status == completed).any():
        seen.append(np.concatenate([obs[k] for k in ("jobs", "candidates", "cluster")]))
        obs, _, terminated, truncated, _ = env.step(env.heuristic_action("pal"))
        assert not (terminated or truncated)
    return seen


@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=needs_numba)])
def test_unknown_observation_holds_no_remaining_time(backend: str) -> None:
    """Two episodes that differ only in the jobs' total iterations look the same until the
    first completion when durations are unknown (and differ at once when clairvoyant)."""
    short = toy_trace(*[(1 + j % 4, 50.0 * j, 2000.0 + 500.0 * j, j % 4) for j in range(40)])
    longer = Trace.from_columns(
        "toy", job_id=list(range(40)), num_gpus=short.num_gpus.tolist(),
        submit_time_s=short.submit_time_s.tolist(),
        total_iterations=(short.total_iterations * 3.0 + 700.0).tolist(),
        iteration_time_s=[1.0] * 40, model=["toy-model"] * 40,
        perf_class=short.perf_class.tolist())
    runs = {}
    for level in ("unknown", "clairvoyant"):
        for name, trace in (("short", short), ("long", longer)):
            env = ClusterEnv(trace, queue_order="las", duration_knowledge=level,
                             backend=backend, round_duration_s=R)
            runs[level, name] = _first_steps(env, seed=9)
    unknown_short, unknown_long = runs["unknown", "short"], runs["unknown", "long"]
    steps = min(len(unknown_short), len(unknown_long))
    assert steps > 10
    for ours, theirs in zip(unknown_short[:steps], unknown_long[:steps], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    width = len(JOB)
    for seen in unknown_short:  # the remaining-time column is 0 in every slot
        assert not seen[: 16 * width].reshape(16, width)[:, JOB.log_remaining_ideal_time].any()
    assert not np.array_equal(runs["clairvoyant", "short"][0], runs["clairvoyant", "long"][0])


@needs_numba
@pytest.mark.parametrize(("level", "order", "task"), [
    ("clairvoyant", "srtf", "placement"), ("noisy", "srtf", "placement"),
    ("noisy", "srtf", "scheduling"), ("unknown", "las", "placement"),
    ("unknown", "tiresias", "scheduling"),
])
def test_backends_agree_under_every_level(level: str, order: str, task: str) -> None:
    kwargs = {"trace": "sia-philly-gen-1", "window": 60, "task": task, "queue_order": order,
              "duration_knowledge": level, "estimate_sigma": 0.7}
    envs = [ClusterEnv(**kwargs, backend="numba"), ClusterEnv(**kwargs, backend="numpy")]
    observations = [env.reset(seed=5)[0] for env in envs]
    rng = np.random.default_rng(1)
    for _ in range(150):
        masks = [env.action_masks() for env in envs]
        np.testing.assert_array_equal(masks[0], masks[1])
        for key in observations[0]:
            np.testing.assert_array_equal(observations[0][key], observations[1][key])
        action = int(rng.choice(np.flatnonzero(masks[0])))
        results = [env.step(action) for env in envs]
        observations = [r[0] for r in results]
        assert results[0][1:4] == results[1][1:4]
        if results[0][2] or results[0][3]:
            observations = [env.reset()[0] for env in envs]


@pytest.mark.parametrize(("level", "order", "preset_name"), [
    ("noisy", "srtf", "default"), ("noisy", "srtf", "pal-artifact"), ("unknown", "las", "default"),
])
def test_env_heuristic_reproduces_direct_simulation(level: str, order: str,
                                                    preset_name: str) -> None:
    """PAL through the env equals run_episode with the same knowledge on the identical
    episode (pal-artifact: nominal SRTF, background copies get their own estimates)."""
    env = ClusterEnv("sia-philly-gen-2", window=20, queue_order=order, preset=preset_name,
                     duration_knowledge=level, backend="numpy")
    env.reset(seed=11)
    while True:
        _, _, terminated, truncated, _ = env.step(env.heuristic_action("pal"))
        if terminated or truncated:
            break
    direct = run_episode(env.episode, "pal", order, durations=Durations(level))
    np.testing.assert_array_equal(env.simulator.records().completion_time_s,
                                  direct.records.completion_time_s)
    if preset_name == "pal-artifact":
        assert env.simulator.jobs.size > env.simulator.jobs.num_measured  # copies estimated


def test_same_seed_same_result_and_the_noise_matters() -> None:
    episode = make_episode(toy_trace(*[(1 + j % 2, 30.0 * j, 300.0 + 170.0 * (j % 5), j % 4)
                                       for j in range(24)]),
                           cluster=ClusterSpec(2, 2), config=preset("default", round_duration_s=R),
                           profile=toy_profile(4), seed=6)
    noisy = Durations("noisy", 1.0)
    runs = [run_episode(episode, "pal", "srtf", durations=noisy).records for _ in range(2)]
    np.testing.assert_array_equal(runs[0].completion_time_s, runs[1].completion_time_s)
    clairvoyant = run_episode(episode, "pal", "srtf").records.completion_time_s
    assert not np.array_equal(runs[0].completion_time_s, clairvoyant)


def test_evaluate_cli_refuses_srtf_without_durations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.test_evaluate import TINY_TRACE, run_cli

    trace = tmp_path / "tiny.csv"
    trace.write_text(TINY_TRACE, encoding="utf-8")
    process = run_cli("--trace", trace, "--cluster", "2x2", "--policy", "pal", "--queue-order",
                      "srtf", "--duration-knowledge", "unknown", "--quiet")
    assert process.returncode == 2
    assert "duration_knowledge='unknown'" in process.stderr and "Traceback" not in process.stderr
    process = run_cli("--estimate-sigma", "-1")
    assert process.returncode == 2 and "estimate sigma must be >= 0" in process.stderr


def test_flags_reach_the_simulator_and_the_env() -> None:
    from agents.evaluation.args import build_parser, duration_kwargs
    from agents.evaluation.comparison import heuristic_table
    from palgym.report import EvaluationSetup

    args = build_parser().parse_args(["--duration-knowledge", "noisy", "--estimate-sigma", "0.3"])
    assert duration_kwargs(args) == {"duration_knowledge": "noisy", "estimate_sigma": 0.3}
    assert duration_kwargs(build_parser().parse_args([])) == {}
    trace = THREE
    config = preset("default", round_duration_s=R)
    noisy = Durations("noisy", 1.0)
    setup = EvaluationSetup(ClusterSpec(1, 1), config, toy_profile(1), seed=4, durations=noisy)
    results = heuristic_table([trace], ["packed-sticky"], ["srtf"], setup).results
    result = next(r for r in results if r.policy == "packed-sticky")
    # the hand-checked order of test_srtf_under_noisy_runs_jobs_in_estimate_order
    np.testing.assert_array_equal(result.records.completion_time_s, [300.0, 600.0, 400.0])


def test_easy_backfilling_reads_the_estimated_run_time() -> None:
    """EASY's reservations read ``remaining_run_time_s``: the scheduler's remaining
    iterations x T_it x the job's current penalties (seed 4, sigma 1: estimates 84.9, 1313.5
    and 155.6 iterations, as above)."""
    from palgym.policies.durations import remaining_run_time_s

    sim = _admitted(_toy_episode())
    sim.jobs.iterations_done[:3] = [50.0, 50.0, 50.0]
    sim.jobs.variability_penalty[:3] = [1.0, 2.0, 1.5]
    sim.jobs.locality_penalty[:3] = [1.0, 1.0, 1.7]
    estimate = np.array([300.0, 200.0, 100.0]) * _errors(4, 1.0, 3)
    expected = (estimate - 50.0) * 1.0 * np.array([1.0 * 1.0, 2.0 * 1.0, 1.5 * 1.7])
    got = remaining_run_time_s(sim.view(), np.arange(3), Durations("noisy", 1.0).for_seed(4))
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    clairvoyant = remaining_run_time_s(sim.view(), np.arange(3))
    np.testing.assert_allclose(clairvoyant, [250.0, 300.0, 50.0 * 1.5 * 1.7], rtol=1e-15)
    # one job at a time: the same floats bit for bit (a job past its estimate: 0, not < 0)
    from palgym.policies.durations import remaining_run_time_one_s

    sim.jobs.iterations_done[2] = 400.0
    for durations in (Durations("noisy", 1.0).for_seed(4), Durations()):
        every = remaining_run_time_s(sim.view(), np.arange(3), durations)
        one = [remaining_run_time_one_s(sim.view(), j, durations) for j in range(3)]
        assert one == every.tolist() and one[2] == 0.0
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        remaining_run_time_one_s(sim.view(), 0, Durations("unknown"))


def test_easy_backfilling_is_refused_without_durations() -> None:
    from palgym.policies import make_placement
    from palgym.simulate import slowdown_factors

    episode = _toy_episode()
    unknown = Durations("unknown")
    with pytest.raises(ConfigError, match="EASY backfilling.*duration_knowledge='unknown'"):
        make_placement("pal+easy", slowdown_factors(episode), episode.config, durations=unknown)
    with pytest.raises(ConfigError, match="EASY backfilling.*backfill none or first-fit"):
        run_episode(episode, "packed-non-sticky+easy", "fifo", durations=unknown)
    # first-fit backfilling needs no durations
    result = run_episode(episode, "packed-non-sticky+backfill", "fifo", durations=unknown)
    assert result.metrics.num_completed == 3
