"""LAS, SRTF, SRSF and Tiresias on 160-job traces (two bundled Sia-Philly-like ones and, with
PALGYM_DATA_DIR, the public Sia-Philly workloads 1 and 4), checked round by round against a
small pure-Python reference written from PAL_MODEL.md sections 3-4 and the Tiresias paper.

The reference keeps its own per-job state (iterations done, wall-clock and GPU-seconds of
service, admissions, completions) from the GPU sets the engine commits, using only the progress
rule of PAL_MODEL section 3::

    T_eff = (max perfvar[class, g] over the set x (lf if the set spans nodes else 1)) x T_it
    iterations_done = R / T_eff + iterations_done; attained += R; gpu_service += R x num_gpus
    complete at the first boundary with iterations_done >= total_iterations

and sorts the admitted, uncompleted jobs (admission order, stable) by the order's key:
LAS = attained service (wall-clock seconds, or GPU-seconds in the default preset); SRTF =
T_it x total - wall-clock attained (nominal) or T_it x (total - done) (ideal); SRSF = the SRTF
key x num_gpus (Tiresias paper, Section 2.2); Tiresias 2D-LAS
= (number of GPU-second thresholds reached, submit time) (Gu et al., NSDI'19, Section 4).
Every round the engine's order must equal the reference's, and every job must complete when
the reference says.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from palgym import Simulator, SimView, make_episode, preset, read_sia_trace
from palgym.policies import CLAIRVOYANT, make_placement, make_queue_order, make_sampler
from palgym.simulate import Episode, drive, slowdown_factors

TRACES = ("sia-philly-gen-0", "sia-philly-gen-3")


def bundled(name: str) -> Path:
    return Path(str(resources.files("palgym").joinpath("data", "traces", f"{name}.csv")))


class Reference:
    """Pure-Python shadow of the engine (lists and floats only)."""

    def __init__(self, episode: Episode) -> None:
        trace, config, cluster = episode.trace, episode.config, episode.cluster
        self.r = float(config.round_duration_s)
        self.lf = float(config.locality_penalty)
        self.gpus_per_node = cluster.gpus_per_node
        self.perfvar = episode.profile.perfvar[:, : cluster.num_gpus].tolist()
        self.submit = trace.submit_time_s.tolist()
        self.num_gpus = trace.num_gpus.tolist()
        self.total = trace.total_iterations.tolist()
        self.t_it = trace.iteration_time_s.tolist()
        self.perf_class = trace.perf_class.tolist()
        jobs = len(self.submit)
        self.done = [0.0] * jobs
        self.attained = [0.0] * jobs
        self.gpu_service = [0.0] * jobs
        self.completion: list[float | None] = [None] * jobs
        self.now = 0.0
        self.sets: dict[int, tuple[int, ...]] = {}
        self.t_eff: dict[int, float] = {}

    def active(self) -> list[int]:
        return [j for j, s in enumerate(self.submit)
                if s <= self.now and self.completion[j] is None]

    def committed(self, job_of_gpu: list[int]) -> None:
        sets: dict[int, list[int]] = {}
        for gpu, job in enumerate(job_of_gpu):
            if job >= 0:
                sets.setdefault(job, []).append(gpu)
        new_sets = {job: tuple(gpus) for job, gpus in sets.items()}
        for job, gpus in new_sets.items():
            assert len(gpus) == self.num_gpus[job]
            if self.sets.get(job) != gpus:  # (re)started: penalties of the new set
                variability = max(self.perfvar[self.perf_class[job]][g] for g in gpus)
                spans = len({g // self.gpus_per_node for g in gpus}) > 1
                locality = self.lf if spans else 1.0
                self.t_eff[job] = (variability * locality) * self.t_it[job]
        self.sets = new_sets

    def advanced(self) -> None:
        for job in self.sets:
            self.done[job] = self.r / self.t_eff[job] + self.done[job]
            self.attained[job] += self.r
            self.gpu_service[job] += self.r * self.num_gpus[job]
        self.now += self.r
        for job in list(self.sets):
            if self.done[job] >= self.total[job]:
                self.completion[job] = self.now
                del self.sets[job]

    def order(self, name: str, wall_clock: bool, nominal: bool,
              thresholds: tuple[float, ...]) -> list[int]:
        active = self.active()
        if name == "las":
            key = (lambda j: self.attained[j]) if wall_clock else (lambda j: self.gpu_service[j])
        elif name in ("srtf", "srsf") and nominal:
            def key(j: int) -> float:
                gpus = self.num_gpus[j] if name == "srsf" else 1
                return (self.t_it[j] * self.total[j] - self.attained[j]) * gpus
        elif name in ("srtf", "srsf"):
            def key(j: int) -> float:
                gpus = self.num_gpus[j] if name == "srsf" else 1
                return self.t_it[j] * (self.total[j] - self.done[j]) * gpus
        else:  # tiresias, 2D-LAS
            def key(j: int) -> tuple[int, float]:  # type: ignore[misc]
                return sum(self.gpu_service[j] >= t for t in thresholds), self.submit[j]
        return sorted(active, key=key)  # stable: ties keep admission order


class CheckedOrder:
    """The engine's order, compared with the reference's every round."""

    static = False

    def __init__(self, name: str, reference: Reference, config: object) -> None:
        self.inner = make_queue_order(name, CLAIRVOYANT, config)  # type: ignore[arg-type]
        self.name = name
        self.reference = reference
        self.args = (config.las_service.value == "wall-clock",  # type: ignore[attr-defined]
                     config.srtf_remaining.value == "nominal",  # type: ignore[attr-defined]
                     tuple(config.tiresias_thresholds_gpu_s))  # type: ignore[attr-defined]
        self.checks = 0
        self.not_fifo = 0

    def order(self, sim: SimView) -> np.ndarray:
        got = self.inner.order(sim)
        expected = self.reference.order(self.name, *self.args)
        assert sim.now_s == self.reference.now
        assert got.tolist() == expected, f"{self.name} at t={sim.now_s:g} s"
        self.checks += 1
        self.not_fifo += expected != sorted(expected, key=lambda j: self.reference.submit[j])
        return got


CONFIGS = {
    "default": {},  # GPU-time LAS, ideal SRTF, one Tiresias threshold (4 GPU-hours)
    "artifact-keys": {"las_service": "wall-clock", "srtf_remaining": "nominal"},
    "two-thresholds": {"tiresias_thresholds_gpu_s": (3600.0, 14400.0)},
}


CASES = [  # (queue order, configuration); Tiresias with wall-clock service is LAS
    ("las", "default"), ("las", "artifact-keys"), ("srtf", "default"),
    ("srtf", "artifact-keys"), ("srsf", "default"), ("srsf", "artifact-keys"),
    ("tiresias", "default"), ("tiresias", "two-thresholds"),
]


@pytest.mark.parametrize(("queue_order", "config_name"), CASES)
@pytest.mark.parametrize("policy", ["packed-sticky", "pal"])
@pytest.mark.parametrize("trace_name", TRACES)
def test_order_and_completions_match_the_reference(
    trace_name: str, policy: str, queue_order: str, config_name: str,
) -> None:
    check_against_reference(bundled(trace_name), policy, queue_order, config_name)


@pytest.mark.parametrize(("queue_order", "config_name"), CASES)
@pytest.mark.parametrize("workload", ["workload-1", "workload-4"])
def test_public_workloads_match_the_reference(
    data_dir: Path, workload: str, queue_order: str, config_name: str,
) -> None:
    """The public Sia-Philly traces (PAL's own workloads), PAL placement."""
    trace = data_dir / "traces" / "sia_philly_pal" / f"{workload}.csv"
    check_against_reference(trace, "pal", queue_order, config_name)


def check_against_reference(path: Path, policy: str, queue_order: str, config_name: str) -> None:
    """Drive the engine like run_episode with the checked order; compare completions."""
    config = preset("default", **CONFIGS[config_name])
    episode = make_episode(read_sia_trace(path), config=config, seed=0)
    reference = Reference(episode)
    order = CheckedOrder(queue_order, reference, config)
    placement = make_placement(policy, slowdown_factors(episode), config)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, config)
    phase = {"commit": True}

    def on_event(sim: Simulator) -> None:
        if phase["commit"]:
            reference.committed(sim.job_of_gpu.tolist())
        else:
            reference.advanced()
        phase["commit"] = not phase["commit"]

    drive(sim, order, placement, make_sampler(copy.deepcopy(episode.placement_rng)), on_event)
    assert sim.done
    assert order.checks == sim.round_index > 100  # one order per simulated round
    assert order.not_fifo > 0, "the order never differed from FIFO: the key was not exercised"
    assert sim.records().completion_time_s.tolist() == reference.completion
