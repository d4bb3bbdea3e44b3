"""SimView: a frozen, read-only view of the simulation that follows the engine's live state."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from palgym import ClusterSpec, Simulator, SimView, Trace, VariabilityProfile, preset
from palgym.sim.types import FREE, JobStatus


def toy_sim() -> Simulator:
    """2 x 2 GPUs; jobs (GPUs, submit s, iterations): 0 (2, 0, 300), 1 (1, 0, 100), 2 (1,
    500, 100); rounds of 100 s, T_it 1 s, homogeneous GPUs (so job 1 completes at t = 100)."""
    trace = Trace.from_columns(
        "toy", job_id=[0, 1, 2], num_gpus=[2, 1, 1], submit_time_s=[0.0, 0.0, 500.0],
        total_iterations=[300.0, 100.0, 100.0], iteration_time_s=[1.0] * 3, model=["m"] * 3,
    )
    return Simulator(trace, VariabilityProfile.homogeneous(4), ClusterSpec(2, 2),
                     preset("default", round_duration_s=100.0), backend="numpy")


def test_writing_through_a_view_raises() -> None:
    sim = toy_sim()
    view = sim.view()
    with pytest.raises(ValueError, match="read-only"):
        view.job_of_gpu[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        view.jobs.status[1] = JobStatus.COMPLETED
    with pytest.raises(ValueError, match="read-only"):
        view.perfvar[0, 0] = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.now_s = 5.0  # type: ignore[misc]
    assert sim.job_of_gpu.tolist() == [FREE] * 4 and sim.jobs.status[1] == JobStatus.QUEUED


def test_a_view_shows_the_engine_state() -> None:
    sim = toy_sim()
    view = sim.view()
    assert isinstance(view, SimView)
    assert (view.now_s, view.round_index, view.num_admitted) == (0.0, 0, 2)  # job 2 at 500 s
    assert view.active().tolist() == [0, 1] and view.running().tolist() == []
    sim.commit(np.array([0, 0, 1, FREE]))
    assert view.job_of_gpu.tolist() == [0, 0, 1, FREE]  # the live allocation, not a copy
    assert view.running().tolist() == [0, 1]
    sim.advance()  # job 1: 100 iterations of 1 s in a 100 s round: completes at t = 100
    fresh = sim.view()
    assert (fresh.now_s, fresh.round_index) == (100.0, 1)
    assert fresh.running().tolist() == [0] and fresh.job_of_gpu.tolist() == [0, 0, FREE, FREE]
    assert fresh.jobs.completion_time_s[1] == 100.0
