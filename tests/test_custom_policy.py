"""The public API of a custom policy (docs/CUSTOM_POLICY.md, "Writing your own policy").

The page's example runs as printed (the block after its marker comment): a custom placement
and queue order through ``run_episode``, and PAL driven round by round with the documented
loop, whose per-job JCTs equal ``run_episode``'s exactly. The custom placement's run satisfies
the simulator's invariants after every commit and advance (:mod:`palgym.testing`), every job
completes, and each round's target follows the rule the example states (checked against the
rule's definition, not its code). Objects lacking a protocol member are refused by name; a
custom policy never takes the compiled loop. ``palgym.__all__`` exports what a policy author
needs and no internals.
"""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import palgym
from palgym import (
    CLAIRVOYANT,
    ConfigError,
    make_episode,
    make_placement,
    make_queue_order,
    make_simulator,
    preset,
    read_sia_trace,
    run_episode,
    slowdown_factors,
)
from palgym.policies.base import is_own_policy
from palgym.testing import drive_checked

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGE = REPO_ROOT / "docs" / "CUSTOM_POLICY.md"
MARKER = "<!-- tests/test_custom_policy.py runs this block -->"
TRACE = REPO_ROOT / "palgym" / "data" / "traces" / "sia-philly-gen-0.csv"


def page_block() -> str:
    """The fenced python block right after :data:`MARKER` in :data:`PAGE`."""
    after = PAGE.read_text(encoding="utf-8").split(MARKER, 1)[1]
    match = re.match(r"\s*```python\n(.*?)\n```", after, re.S)
    assert match, f"{PAGE}: no ```python block right after the marker"
    return match.group(1)


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    """The page's block's namespace after running it from the repository root."""
    namespace: dict[str, Any] = {"__name__": "custom_policy_example"}
    cwd = Path.cwd()
    try:
        os.chdir(REPO_ROOT)  # the block's trace path is relative to the root
        exec(compile(page_block(), str(PAGE), "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


def test_step_by_step_loop_reproduces_run_episode(example: dict[str, Any]) -> None:
    sim, pal = example["sim"], example["pal"]
    assert sim.done and not pal.metrics.truncated
    assert sim.round_index == pal.num_rounds
    np.testing.assert_array_equal(sim.records().job_id, pal.records.job_id)
    np.testing.assert_array_equal(sim.records().jct_s, pal.records.jct_s)  # exact, per job
    assert pal.policy == "pal" and pal.queue_order == "fifo"


def test_custom_policies_complete_every_job(example: dict[str, Any]) -> None:
    mine, episode = example["mine"], example["episode"]
    assert (mine.policy, mine.queue_order) == ("fastest-gpus", "fewest-gpus-first")
    assert not mine.metrics.truncated
    assert mine.metrics.num_completed == mine.metrics.num_jobs == episode.trace.num_jobs
    assert np.all(np.isfinite(mine.records.jct_s)) and np.all(mine.records.jct_s > 0)
    assert mine.belief == "none"


class RuleChecked:
    """Wraps the example's placement; checks each target against the stated rule."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.sticky, self.deterministic = inner.name, inner.sticky, inner.deterministic
        self.rounds = 0

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        target = self.inner.place(view, order, sampler)
        assert target.dtype == np.int64 and target.shape == (view.cluster.num_gpus,)
        sf = self.inner.factors.sf
        free = np.ones(view.cluster.num_gpus, dtype=bool)  # non-sticky: from an empty cluster
        placed = 0
        for job in order.tolist():
            gpus = np.flatnonzero(target == job)
            need = int(view.jobs.num_gpus[job])
            if gpus.size == 0:
                assert need > free.sum()  # the walk stopped at the first job that does not fit
                break
            assert gpus.size == need and free[gpus].all()  # free GPUs only, all or none
            free[gpus] = False
            cls = view.jobs.perf_class[job]
            if free.any():  # the job's GPUs are the lowest-factor ones left for its class
                assert sf[cls, gpus].max() <= sf[cls, free].min()
            placed += 1
        held = target[target != palgym.FREE]
        assert np.isin(held, order[:placed]).all() and held.size == (~free).sum()
        self.rounds += 1
        return target


def test_custom_placement_keeps_the_invariants(example: dict[str, Any]) -> None:
    episode, mine = example["episode"], example["mine"]
    placement = RuleChecked(example["FastestGpus"](slowdown_factors(episode)))
    sim = make_simulator(episode)
    drive_checked(sim, example["FewestGpusFirst"](), placement, palgym.episode_sampler(episode))
    assert placement.rounds > 0
    np.testing.assert_array_equal(sim.records().jct_s, mine.records.jct_s)


@pytest.fixture(scope="module")
def episode() -> palgym.Episode:
    return make_episode(read_sia_trace(TRACE), config=preset("default"), seed=0)


def test_placement_object_takes_the_named_path(episode: palgym.Episode) -> None:
    # palgym's own PAL passed as an object gives the named run's episode exactly
    by_name = run_episode(episode, policy="pal")
    pal = make_placement("pal", slowdown_factors(episode), episode.config)
    by_object = run_episode(episode, policy=pal)
    assert by_object.policy == "pal"
    np.testing.assert_array_equal(by_object.records.jct_s, by_name.records.jct_s)


def test_custom_policy_is_refused_by_the_compiled_driver(
        episode: palgym.Episode, example: dict[str, Any]) -> None:
    custom = example["FastestGpus"](slowdown_factors(episode))
    with pytest.raises(ConfigError, match=r"compiled driver does not serve.*fastest-gpus.*"
                                          r"FastestGpus.*no compiled twin"):
        run_episode(episode, policy=custom, driver="compiled")
    with pytest.raises(ConfigError, match="fewest-gpus-first.*no compiled twin"):
        run_episode(episode, queue_order=example["FewestGpusFirst"](), driver="compiled")
    with pytest.raises(ConfigError, match="belief applies to a named policy"):
        run_episode(episode, policy=custom, belief="online")


def _place(view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
    return np.full(view.cluster.num_gpus, palgym.FREE, dtype=np.int64)


@pytest.mark.parametrize(("policy", "order", "missing"), [
    (SimpleNamespace(name="x", place=_place), "fifo", r"lacks sticky, deterministic \("),
    (SimpleNamespace(name="x", sticky=False, deterministic=True, place=None), "fifo",
     r"lacks place\(\) method"),
    ("pal", SimpleNamespace(name="y", order=lambda view: view.active()), r"lacks static \("),
    (SimpleNamespace, "fifo", "must be an instance, not the class"),
])
def test_object_lacking_a_member_is_named(episode: palgym.Episode, policy: Any, order: Any,
                                          missing: str) -> None:
    with pytest.raises(TypeError, match=missing):
        run_episode(episode, policy=policy, queue_order=order)


AUTHOR_NAMES = (
    "FREE", "CLAIRVOYANT", "PlacementPolicy", "QueueOrder", "Sampler", "SimView", "JobColumns",
    "SlowdownFactors", "make_placement", "make_queue_order", "make_sampler", "slowdown_factors",
    "make_simulator", "episode_sampler", "final_metrics", "drive", "run_episode", "JobStatus",
    "Durations",
)


def test_public_api_exports_what_a_policy_author_needs() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page.startswith("# Writing your own policy\n")
    for name in AUTHOR_NAMES:
        assert name in palgym.__all__, name
        assert re.search(rf"\b{name}\b", page), f"{PAGE.name} does not name {name}"
    assert len(set(palgym.__all__)) == len(palgym.__all__)
    for name in palgym.__all__:
        obj = getattr(palgym, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
            module = obj.__module__
            assert module.startswith("palgym."), name
            # internals stay out: private modules, compiled kernels, the driver's machinery
            parts = module.split(".")
            assert not any(p.startswith("_") for p in parts), (name, module)
            assert not module.endswith("_kernel"), (name, module)
            assert parts[1] != "driver" or module == "palgym.driver.rounds", (name, module)


class Returns:
    """A non-sticky placement whose place() returns ``value`` (a broken target)."""

    name = "returns"
    sticky = False
    deterministic = True

    def __init__(self, value: Any) -> None:
        self.value = value

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> Any:
        return self.value(view) if callable(self.value) else self.value


@pytest.mark.parametrize(("value", "got"), [
    (None, "got NoneType"),
    ([0, 1], "got list"),
    (lambda view: np.zeros(view.cluster.num_gpus), "dtype float64"),
    (lambda view: np.zeros(3, np.int64), r"shape \(3,\)"),
])
def test_a_broken_target_is_named_at_the_first_round(episode: palgym.Episode, value: Any,
                                                     got: str) -> None:
    # the engine reads None as "keep the allocation"; a user's place() must return a target
    with pytest.raises(TypeError, match=rf"placement 'returns': place\(\) must return an "
                                        rf"integer numpy array of shape \(64,\).*{got}"):
        run_episode(episode, policy=Returns(value))


def test_own_policies_are_told_from_a_users() -> None:
    config = preset("default")
    factors = slowdown_factors(make_episode(read_sia_trace(TRACE), config=config, seed=0))
    assert is_own_policy(make_placement("pal", factors, config))
    assert is_own_policy(make_queue_order("las", CLAIRVOYANT, config))
    assert not is_own_policy(Returns(None))
