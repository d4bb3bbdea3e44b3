"""The compiled candidate kernel against the reference (the placement policies' own numpy
functions): every candidate set, feasibility, feature and keeps_gpus flag, on random states of
clusters of several shapes, and whole observations of env runs on both paths."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.envs import ClusterEnv, kernel, rewards
from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import EpisodeTables, window_candidates
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE
from palgym.simulate import make_episode, slowdown_factors
from palgym.testing.generators import random_trace

pytestmark = pytest.mark.skipif(not kernel.AVAILABLE, reason="numba is not installed")


def _per_slot(cands, num_slots):
    """Slot-indexed copies (shape rows may be numbered differently on the two paths)."""
    rows = cands.shape_of_slot[:num_slots]
    return (
        cands.sets[rows], cands.feasible[rows], cands.features[rows], cands.keeps[:num_slots]
    )


@pytest.mark.parametrize(("cluster", "preset_name"), [
    ("16x4", "default"), ("8x8", "default"), ("16x4", "pal-artifact"), ("4x2", "default"),
    ("64x4", "default"),
])
def test_kernel_equals_reference_on_random_states(cluster: str, preset_name: str) -> None:
    rng = np.random.default_rng(7)
    spec = ClusterSpec.parse(cluster)
    config = preset(preset_name)
    trace = random_trace(rng, 60, spec, sizes=tuple(
        n for n in (1, 2, 3, 4, 5, 6, 8, 12, 16) if n <= spec.num_gpus))
    episode = make_episode(trace, cluster=spec, config=config, seed=3)
    factors = slowdown_factors(episode)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    num_slots = 16
    tables = EpisodeTables.build(sim, factors, ActionCodec(num_slots, 4), False)
    checked = 0
    for _ in range(150):
        free = rng.random(spec.num_gpus) < rng.uniform(0.05, 1.0)
        held = np.full(spec.num_gpus, FREE, np.int64)
        window = rng.choice(trace.num_jobs, size=int(rng.integers(1, num_slots + 1)), replace=False)
        # give some window jobs the GPUs they would be offered, so keeps_gpus is exercised
        for job in window[: 3].tolist():
            busy = np.flatnonzero(~free)
            n = int(sim.jobs.num_gpus[job])
            if busy.size >= n:
                held[busy[:n]] = job
        sim.job_of_gpu[:] = held
        ref = window_candidates(sim, window.tolist(), free, tables, factors, compiled=False)
        out = window_candidates(sim, window.tolist(), free, tables, factors, compiled=True)
        for ours, theirs in zip(
            _per_slot(out, window.size), _per_slot(ref, window.size), strict=True
        ):
            if ours.ndim == 3 and ours.dtype == np.int64:
                width = min(ours.shape[2], theirs.shape[2])
                assert np.array_equal(ours[:, :, :width], theirs[:, :, :width])
            else:
                assert np.array_equal(ours, theirs)
        checked += int(out.feasible.sum())
    assert checked > 1000  # the states exercised many feasible candidates


@pytest.mark.parametrize(("task", "sticky", "conserving"),
                         [("placement", False, False), ("placement", True, False),
                          ("scheduling", False, False), ("scheduling", False, True)])
def test_env_observations_equal_on_both_paths(task: str, sticky: bool, conserving: bool) -> None:
    """200 random masked steps: the compiled and the reference env see the same observations
    and masks (features are computed with the same float operations; the compiled masks come
    from the kernel, the reference ones from palgym.envs.decide.action_mask; work-conserving:
    RESERVE among the random actions, its reservation in the cluster row)."""
    kwargs = {"trace": "sia-philly-gen-1", "window": 60, "sticky": sticky,
              "class_reorder": not sticky, "task": task, "work_conserving": conserving}
    envs = [ClusterEnv(**kwargs, backend="numba"), ClusterEnv(**kwargs, backend="numpy")]
    observations = [env.reset(seed=5)[0] for env in envs]
    rng = np.random.default_rng(1)
    reserved = shown = 0
    for _ in range(200):
        masks = [env.action_masks() for env in envs]
        assert np.array_equal(masks[0], masks[1])
        for key in observations[0]:
            assert np.array_equal(observations[0][key], observations[1][key]), key
        shown += conserving and observations[0]["cluster"][-3] == 1.0  # "reserved"
        action = int(rng.choice(np.flatnonzero(masks[0])))
        reserved += action == envs[0].codec.RESERVE
        results = [env.step(action) for env in envs]
        observations = [r[0] for r in results]
        assert results[0][1:4] == results[1][1:4]
        if results[0][2] or results[0][3]:
            observations = [env.reset()[0] for env in envs]
    assert (reserved > 0) == conserving == (shown > 0)


@pytest.mark.parametrize("size", [0, 1, 7, 8, 129, 300, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_system_time_is_the_numpy_sum_bit_for_bit(size: int, weighted: bool) -> None:
    """The reward's compiled system-time sum gives numpy's bits (pairwise summation above 8
    and 128 values, NaN completions counted to now, completions after now clipped)."""
    rng = np.random.default_rng(size)
    submit = rng.uniform(0.0, 1e6, size) * rng.uniform(0.5, 1.5)
    completion = submit + rng.exponential(3e5, size)
    completion[rng.random(size) < 0.3] = np.nan
    weights = rng.uniform(0.0, 3.0, size) if weighted else None
    for now in (0.0, float(np.nanmedian(completion)) if size else 1.0, 1e7):
        ours = rewards.system_time_s(submit, completion, now, weights)
        reference = rewards.system_time_reference(submit, completion, now, weights)
        assert np.float64(ours).tobytes() == np.float64(reference).tobytes()
