"""The compiled Packed rule and sticky Packed walk against the numpy rule and walk (the
reference) on random free masks and allocations of several cluster shapes; and whole episodes
on both paths."""

from __future__ import annotations

import numpy as np
import pytest

from palgym._numba import AVAILABLE
from palgym.policies.allocation import packed_allocation
from palgym.sim.cluster import ClusterSpec

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

SHAPES = ["16x4", "8x8", "4x2", "5x3", "1x4"]


@pytest.mark.parametrize("shape", SHAPES)
def test_packed_pick_equals_packed_allocation(shape: str) -> None:
    from palgym.policies.packed_kernel import packed_pick

    rng = np.random.default_rng(3)
    spec = ClusterSpec.parse(shape)
    per_node, total = spec.gpus_per_node, spec.num_gpus
    counts = np.empty(spec.num_nodes, dtype=np.int64)
    outcomes = {True: 0, False: 0}
    for _ in range(300):
        free = rng.random(total) < rng.uniform(0.0, 1.0)
        for n in {1, 2, 3, per_node, per_node + 1, 2 * per_node + 1, total}:
            if n > total:
                continue
            for strict in (False, True):
                out = np.full(n, -7, dtype=np.int64)
                found = packed_pick(free, n, per_node, strict, counts, out)
                ref = packed_allocation(free, n, per_node, strict)
                assert found == (ref is not None)
                outcomes[bool(found)] += 1
                if ref is not None:
                    np.testing.assert_array_equal(out, ref)
    assert min(outcomes.values()) > 100  # both outcomes exercised


def _random_allocation(rng: np.random.Generator, spec: ClusterSpec, num_gpus: np.ndarray
                       ) -> np.ndarray:
    """A job index (or -1) per GPU: some jobs hold exactly their GPU count, anywhere."""
    job_of_gpu = np.full(spec.num_gpus, -1, dtype=np.int64)
    for job in rng.permutation(num_gpus.size):
        free = np.flatnonzero(job_of_gpu == -1)
        if rng.random() < 0.5 and free.size >= num_gpus[job]:
            job_of_gpu[rng.choice(free, size=int(num_gpus[job]), replace=False)] = job
    return job_of_gpu


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keep_stopped", [False, True])
def test_sticky_packed_walk_equals_place_sticky(shape: str, keep_stopped: bool) -> None:
    from palgym.policies import placement
    from palgym.policies.packed_kernel import sticky_packed_walk

    rng = np.random.default_rng(7)
    spec = ClusterSpec.parse(shape)
    changed = 0
    for _ in range(150):
        num_jobs = int(rng.integers(1, 12))
        num_gpus = rng.integers(1, spec.num_gpus + 1, size=num_jobs).astype(np.int64)
        job_of_gpu = _random_allocation(rng, spec, num_gpus)
        order = rng.permutation(num_jobs).astype(np.int64)
        strict = bool(rng.random() < 0.5)
        sim = _StubSim(spec, num_gpus, job_of_gpu, keep_stopped)
        ref = placement.place_sticky(sim, order, placement._packed(strict), None,  # type: ignore[arg-type]
                                     keep_victims_stopped=keep_stopped)
        before = job_of_gpu.copy()
        target = sticky_packed_walk(order, job_of_gpu, num_gpus, num_jobs, spec.gpus_per_node,
                                    strict, keep_stopped)
        np.testing.assert_array_equal(job_of_gpu, before)  # input untouched
        np.testing.assert_array_equal(target, ref)
        changed += not np.array_equal(target, before)
    assert changed > 30


class _StubSim:
    """What ``place_sticky`` with the Packed rule reads of a simulation view."""

    def __init__(self, spec: ClusterSpec, num_gpus: np.ndarray, job_of_gpu: np.ndarray,
                 keep_stopped: bool) -> None:
        from types import SimpleNamespace

        self.cluster = spec
        self.job_of_gpu = job_of_gpu
        self.jobs = SimpleNamespace(num_gpus=num_gpus, size=num_gpus.size)
        self.num_jobs = num_gpus.size


@pytest.mark.parametrize("policy", ["packed-sticky", "packed-non-sticky"])
@pytest.mark.parametrize("order", ["fifo", "las"])
def test_episode_equal_on_compiled_and_numpy_packed(policy: str, order: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from palgym.policies import placement
    from palgym.sim.config import preset
    from palgym.simulate import make_episode, run_episode
    from palgym.testing.generators import random_trace

    spec = ClusterSpec(8, 4)
    trace = random_trace(np.random.default_rng(5), 120, spec, max_submit_s=20000.0)
    episode = make_episode(trace, cluster=spec, config=preset("pal-artifact"), seed=2)
    compiled = run_episode(episode, policy, order)
    monkeypatch.setattr(placement, "compiled_packed_rule", lambda *args: None)
    monkeypatch.setattr(placement, "compiled_sticky_packed", lambda *args: None)
    reference = run_episode(episode, policy, order)
    assert compiled.records.completion_time_s.tobytes() == (
        reference.records.completion_time_s.tobytes())
    assert np.array_equal(compiled.records.num_preemptions, reference.records.num_preemptions)
    assert compiled.num_rounds == reference.num_rounds
    assert compiled.records.num_preemptions.sum() > 0 or order == "fifo"
