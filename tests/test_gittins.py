"""The Gittins-index queue order (palgym/policies/gittins.py), against ranks worked by hand
from its definition 1/G(a) = min_k (x_1 + ... + x_k + (n - k) x_k) / k over the residuals."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.errors import ConfigError
from palgym.policies import CLAIRVOYANT, make_queue_order
from palgym.policies.gittins import GittinsOrder, ServicePrior, gittins_rank
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

SAMPLES = np.array([10.0, 100.0])  # half the jobs need 10 GPU-s, half 100


@pytest.mark.parametrize(("attained", "rank"), [
    (0.0, 20.0),    # residuals [10, 100]: k=1 (10 + 1 x 10) / 1 = 20; k=2 110 / 2 = 55
    (5.0, 10.0),    # [5, 95]: (5 + 5) / 1 = 10; 100 / 2 = 50
    (9.0, 2.0),     # [1, 91]: (1 + 1) / 1 = 2; 92 / 2 = 46
    (10.0, 90.0),   # past the short mode: [90] -> 90
    (250.0, 250.0),  # past every sample: its attained service
])
def test_rank_by_hand(attained: float, rank: float) -> None:
    assert gittins_rank(SAMPLES, attained) == pytest.approx(rank, rel=1e-12)


def _trace(name: str, gpus: list[int], work: list[float], classes: list[int]) -> Trace:
    size = len(gpus)
    return Trace.from_columns(
        name, job_id=list(range(size)), submit_time_s=[0.0] * size, num_gpus=gpus,
        total_iterations=work, iteration_time_s=[1.0] * size, model=["m"] * size,
        perf_class=classes)


def test_prior_is_gpu_seconds_per_class() -> None:
    trace = _trace("train", gpus=[1, 4, 2], work=[10.0, 25.0, 7.0], classes=[0, 0, 2])
    prior = ServicePrior.from_traces([trace])
    np.testing.assert_array_equal(prior.samples[0], [10.0, 100.0])  # 1 x 10, 4 x 25
    np.testing.assert_array_equal(prior.samples[2], [14.0])
    np.testing.assert_array_equal(prior.samples[1], [10.0, 14.0, 100.0])  # no class B: all
    with pytest.raises(ConfigError, match="no job"):
        ServicePrior.from_traces([])


def test_gittins_runs_the_nearly_done_job_where_las_runs_the_fresh_one() -> None:
    """R = 9 s, 1 node x 1 GPU; J0 and J1 (1 GPU, class A) arrive at 0; J0 runs one round
    (9 GPU-s attained). LAS: J1 first (0 < 9). Gittins with samples [10, 100]: J0's rank 2 <
    J1's 20 -> J0 first (a job past 9 GPU-s is likely one of the 10 GPU-s jobs)."""
    trace = _trace("toy", gpus=[1, 1], work=[10.0, 100.0], classes=[0, 0])
    config = preset("default", round_duration_s=9.0)
    sim = Simulator(trace, VariabilityProfile("p", np.ones((4, 1))), ClusterSpec(1, 1), config)
    sim.commit(np.array([0]))
    sim.advance()
    assert sim.jobs.gpu_service_s[:2].tolist() == [9.0, 0.0]
    order = GittinsOrder(ServicePrior((SAMPLES,) * 4))
    assert order.order(sim.view()).tolist() == [0, 1]
    assert make_queue_order("las", CLAIRVOYANT, config).order(sim.view()).tolist() == [1, 0]


def test_run_episode_takes_the_order_object() -> None:
    """A QueueOrder object runs like a name; with a prior that cannot tell jobs apart (one
    sample, never exceeded: every rank is its attained service) Gittins is LAS (GPU-time)."""
    from palgym import make_episode, read_sia_trace, run_episode
    from palgym.bundled import bundled_trace_paths

    trace = read_sia_trace(bundled_trace_paths()["sia-philly-gen-0"])
    episode = make_episode(trace.select(np.arange(trace.num_jobs) < 40), seed=0)
    blind = GittinsOrder(ServicePrior((np.zeros(1),) * 4))
    gittins = run_episode(episode, "pal", blind)
    las = run_episode(episode, "pal", "las")
    assert gittins.queue_order == "gittins" and not gittins.metrics.truncated
    np.testing.assert_array_equal(gittins.records.jct_s, las.records.jct_s)
