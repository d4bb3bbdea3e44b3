"""The compiled Random walks against the Python walks with ``random_allocation`` (the
reference) on random queues and allocations, on both random streams; and whole episodes on
both paths."""

from __future__ import annotations

import copy
import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from palgym._numba import AVAILABLE
from palgym.policies.base import NumpySampler
from palgym.sim.cluster import ClusterSpec

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

SHAPES = ["16x4", "4x2", "5x3", "1x1", "64x4"]


def _samplers(seed: int) -> list[Any]:
    return [NumpySampler(np.random.default_rng(seed)), random.Random(seed)]


def _state(sampler: Any) -> Any:
    if isinstance(sampler, NumpySampler):
        return sampler.generator.bit_generator.state
    return sampler.getstate()


class _StubSim:
    """What the Random walks read of a simulation view."""

    def __init__(self, spec: ClusterSpec, num_gpus: np.ndarray, job_of_gpu: np.ndarray) -> None:
        self.cluster = spec
        self.job_of_gpu = job_of_gpu
        self.jobs = SimpleNamespace(num_gpus=num_gpus, size=num_gpus.size)
        self.num_jobs = num_gpus.size


def _allocation(rng: np.random.Generator, total: int, num_gpus: np.ndarray) -> np.ndarray:
    """A job index (or -1) per GPU: some jobs hold exactly their GPU count, anywhere."""
    job_of_gpu = np.full(total, -1, dtype=np.int64)
    for job in rng.permutation(num_gpus.size):
        free = np.flatnonzero(job_of_gpu == -1)
        if rng.random() < 0.5 and free.size >= num_gpus[job]:
            job_of_gpu[rng.choice(free, size=int(num_gpus[job]), replace=False)] = job
    return job_of_gpu


def _queue(rng: np.random.Generator, total: int) -> tuple[np.ndarray, np.ndarray]:
    num_jobs = int(rng.integers(1, 40))
    small = rng.random(num_jobs) < 0.7  # mostly small jobs, some up to the whole cluster
    num_gpus = np.where(small, rng.integers(1, min(total, 4) + 1, num_jobs),
                        rng.integers(1, total + 1, num_jobs)).astype(np.int64)
    return num_gpus, rng.permutation(num_jobs).astype(np.int64)


@pytest.fixture
def compiled_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled non-sticky walk on a random.Random at every cluster size."""
    from palgym.policies import random_placement

    monkeypatch.setattr(random_placement, "MT_NON_STICKY_MIN_GPUS", 0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.usefixtures("compiled_everywhere")
def test_random_from_empty_equals_place_from_empty(shape: str) -> None:
    from palgym.policies import placement, random_placement

    rng = np.random.default_rng(11)
    spec = ClusterSpec.parse(shape)
    placed = 0
    for trial in range(60):
        num_gpus, order = _queue(rng, spec.num_gpus)
        sim = _StubSim(spec, num_gpus, np.full(spec.num_gpus, -1, np.int64))
        for mine, reference in zip(_samplers(trial), _samplers(trial), strict=True):
            target = random_placement.compiled_random_from_empty(sim, order, mine)  # type: ignore[arg-type]
            ref = placement.place_from_empty(sim, order, random_placement._random, reference)  # type: ignore[arg-type]
            assert target is not None
            np.testing.assert_array_equal(target, ref)
            assert _state(mine) == _state(reference)
            placed += int((ref >= 0).sum())
    assert placed > 0


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keep_stopped", [False, True])
def test_sticky_random_walk_equals_place_sticky(shape: str, keep_stopped: bool) -> None:
    from palgym.policies import placement, random_placement

    rng = np.random.default_rng(7)
    spec = ClusterSpec.parse(shape)
    changed = 0
    for trial in range(60):
        num_gpus, order = _queue(rng, spec.num_gpus)
        job_of_gpu = _allocation(rng, spec.num_gpus, num_gpus)
        before = job_of_gpu.copy()
        sim = _StubSim(spec, num_gpus, job_of_gpu)
        for mine, reference in zip(_samplers(trial), _samplers(trial), strict=True):
            target = random_placement.compiled_sticky_random(sim, order, mine, keep_stopped)  # type: ignore[arg-type]
            ref = placement.place_sticky(sim, order, random_placement._random, reference,  # type: ignore[arg-type]
                                         keep_victims_stopped=keep_stopped)
            np.testing.assert_array_equal(job_of_gpu, before)  # input untouched
            assert target is not None
            np.testing.assert_array_equal(target, ref)
            assert _state(mine) == _state(reference)
            changed += not np.array_equal(target, before)
    assert changed > 20


def test_small_clusters_keep_the_python_non_sticky_walk_on_random_random() -> None:
    from palgym.policies import random_placement

    order = np.array([0], np.int64)
    for gpus, compiled in ((random_placement.MT_NON_STICKY_MIN_GPUS - 4, False),
                           (random_placement.MT_NON_STICKY_MIN_GPUS, True)):
        sim = _StubSim(ClusterSpec(gpus // 4, 4), np.array([2], np.int64),
                       np.full(gpus, -1, np.int64))
        target = random_placement.compiled_random_from_empty(sim, order, random.Random(0))  # type: ignore[arg-type]
        assert (target is not None) == compiled
        sticky = random_placement.compiled_sticky_random(sim, order, random.Random(0), False)  # type: ignore[arg-type]
        assert sticky is not None and int((sticky == 0).sum()) == 2


def test_other_samplers_keep_the_python_walk() -> None:
    """A random.Random subclass may override its draws: no compiled path. A Generator over
    another bit generator (MT19937) is drawn through its own next_uint32: still exact."""
    from palgym.policies import placement, random_placement

    class Subclassed(random.Random):
        pass

    spec = ClusterSpec(4, 2)
    sim = _StubSim(spec, np.array([1, 2, 3], np.int64), np.full(8, -1, np.int64))
    order = np.array([0, 1, 2], np.int64)
    assert random_placement.compiled_random_from_empty(sim, order, Subclassed(1)) is None  # type: ignore[arg-type]
    mine, reference = (NumpySampler(np.random.Generator(np.random.MT19937(3))) for _ in range(2))
    target = random_placement.compiled_random_from_empty(sim, order, mine)  # type: ignore[arg-type]
    ref = placement.place_from_empty(sim, order, random_placement._random, reference)  # type: ignore[arg-type]
    assert target is not None
    np.testing.assert_array_equal(target, ref)
    assert mine.generator.integers(2**62, size=4).tolist() == (
        reference.generator.integers(2**62, size=4).tolist())


@pytest.mark.parametrize("policy", ["random-sticky", "random-non-sticky"])
@pytest.mark.parametrize(("preset_name", "order"), [("pal-artifact", "fifo"),
                                                    ("pal-artifact", "las"), ("default", "srtf")])
@pytest.mark.usefixtures("compiled_everywhere")
def test_episode_equal_on_compiled_and_python_random(policy: str, preset_name: str, order: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from palgym.policies import random_placement
    from palgym.sim.config import preset
    from palgym.simulate import make_episode, run_episode
    from palgym.testing.generators import random_trace

    spec = ClusterSpec(8, 4)
    trace = random_trace(np.random.default_rng(5), 120, spec, max_submit_s=20000.0)
    episode = make_episode(trace, cluster=spec, config=preset(preset_name), seed=2)
    stream_before = copy.deepcopy(episode.placement_rng)
    compiled = run_episode(episode, policy, order)
    monkeypatch.setattr(random_placement, "_compiled_walk", lambda *args: None)
    reference = run_episode(episode, policy, order)
    assert compiled.records.completion_time_s.tobytes() == (
        reference.records.completion_time_s.tobytes())
    assert np.array_equal(compiled.records.num_preemptions, reference.records.num_preemptions)
    assert compiled.num_rounds == reference.num_rounds
    assert _state(_wrap(episode.placement_rng)) == _state(_wrap(stream_before))  # not consumed


def _wrap(rng: Any) -> Any:
    return rng if isinstance(rng, random.Random) else NumpySampler(rng)
