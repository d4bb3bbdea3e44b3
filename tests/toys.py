"""Shared toy-instance helpers (hand-computed tests): a tiny trace / profile builder and a
checked runner. Round length R = 100 s unless a test says otherwise."""

# ruff: noqa: F401  (the imports are re-exported to the toy test modules)

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from palgym.policies import PLACEMENT_NAMES
from palgym.policies.allocation import packed_allocation, random_allocation
from palgym.policies.pal import matrix_entries, pal_allocation
from palgym.policies.placement import Packed, class_reordered
from palgym.policies.pm_first import pm_first_allocation
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, JobStatus, PerfClass
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import EpisodeResult, make_episode, run_episode
from palgym.testing import run_checked

R = 100.0
A, B, C, D = (int(c) for c in PerfClass)


def toy_trace(*jobs: tuple[int, float, float, int]) -> Trace:
    """Jobs given as (num_gpus, submit_time_s, total_iterations, perf_class); T_it = 1 s,
    job ids 0, 1, 2, ... in the given order."""
    return Trace.from_columns(
        "toy",
        job_id=list(range(len(jobs))),
        num_gpus=[j[0] for j in jobs],
        submit_time_s=[j[1] for j in jobs],
        total_iterations=[j[2] for j in jobs],
        iteration_time_s=[1.0] * len(jobs),
        model=["toy-model"] * len(jobs),
        perf_class=[j[3] for j in jobs],
    )


def toy_profile(num_gpus: int, class_a: list[float] | None = None) -> VariabilityProfile:
    """All values 1.0, except class A's row when given."""
    perfvar = np.ones((4, num_gpus))
    if class_a is not None:
        perfvar[A] = class_a
    return VariabilityProfile("toy", perfvar)


def run_toy(
    trace: Trace,
    cluster: ClusterSpec,
    policy: str = "packed-sticky",
    queue_order: str = "fifo",
    profile: VariabilityProfile | None = None,
    **options: object,
) -> EpisodeResult:
    """run_episode on the toy, cross-checked against an invariant-checked run."""
    config = preset("default", round_duration_s=R, **options)
    episode = make_episode(
        trace, cluster=cluster, config=config,
        profile=profile or toy_profile(cluster.num_gpus), seed=0,
    )
    result = run_episode(episode, policy, queue_order)
    checked = run_checked(episode, policy, queue_order)
    np.testing.assert_array_equal(checked.records().completion_time_s,
                                  result.records.completion_time_s)
    # independent of the shared loop: completions on boundaries, never before the ideal run
    completion, start = result.records.completion_time_s, result.records.first_start_time_s
    np.testing.assert_array_equal(np.mod(completion, R), 0.0)
    fastest = episode.profile.perfvar.min(axis=1)[trace.perf_class]
    assert (completion - start >= trace.ideal_duration_s * fastest * (1 - 1e-12)).all()
    return result


def jct(result: EpisodeResult) -> list[float]:
    return result.records.jct_s.tolist()


# Free masks are written node by node. 3 nodes x 4 GPUs: node n owns GPUs 4n .. 4n+3.
def mask(*nodes: str) -> np.ndarray:
    """Free mask from one string per node, '1' = free, e.g. mask('0111', '0011', '1111')."""
    return np.array([c == "1" for node in nodes for c in node])


class ListSampler:
    """Deterministic stand-in sampler: returns the last k of the population, counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def sample(self, population: list[int], k: int) -> list[int]:
        self.calls += 1
        return list(population[-k:])
