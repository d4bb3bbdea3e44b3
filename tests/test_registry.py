"""A user's Python-only class registered in the policy registry (palgym.policies.registry) runs
by name wherever palgym's own placements run: the objects its entry makes, run_episode (on the
Python loop), MODULE:CLASS names, the env as a heuristic agent (palgym.envs.policy_agent: parity
with run_episode, or a clear error when the env cannot express its choice) and evaluate.py's
worker processes. The registry's names and traits: tests/test_registry_names.py.

The user classes below are defined here, at module level (importable as
``tests.test_registry:NAME``); conftest.py puts the registry back after every test.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import palgym
from evaluate import main
from palgym import FREE, ConfigError, make_episode, preset, read_sia_trace, run_episode
from palgym._numba import AVAILABLE as NUMBA
from palgym.envs import ClusterEnv
from palgym.errors import PolicyTypeError
from palgym.policies import (
    PLACEMENT_NAMES,
    SlowdownFactors,
    make_placement,
    make_queue_order,
    placement_name,
    register_placement,
    register_queue_order,
)
from palgym.policies.allocation import packed_allocation
from palgym.policies.registry import (
    COMPILED_PLACEMENT_NAMES,
    placement_entry,
)
from palgym.simulate import slowdown_factors

TRACE = Path(__file__).resolve().parents[1] / "palgym" / "data" / "traces" / "sia-philly-gen-0.csv"
PAPER_SIX = ("pal", "pm-first", "packed-sticky", "packed-non-sticky", "random-sticky",
             "random-non-sticky")


class PackedInPython:
    """Packed-Non-Sticky written by a user: each job in queue order on
    palgym.policies.allocation.packed_allocation of the GPUs still free, stopping at the
    first that does not fit (the Packed candidate's rule, so the env can act as it)."""

    name = "packed-in-python"
    sticky = False
    deterministic = True

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        for job in order.tolist():
            gpus = packed_allocation(target == FREE, int(view.jobs.num_gpus[job]),
                                     view.cluster.gpus_per_node, False)
            if gpus is None:
                break
            target[gpus] = job
        return target


@dataclass(frozen=True)
class LowestFactorById:
    """Each job on the free GPUs of lowest slowdown factor for its class, ties by GPU id (no
    env candidate holds such sets in general)."""

    factors: SlowdownFactors
    name: str = "lowest-factor-by-id"
    sticky: bool = False
    deterministic: bool = True

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        for job in order.tolist():
            free = np.flatnonzero(target == FREE)
            need = int(view.jobs.num_gpus[job])
            if need > free.size:
                break
            sf = self.factors.sf[view.jobs.perf_class[job], free]
            target[free[np.argsort(sf, kind="stable")[:need]]] = job
        return target


class StickyKeeper(PackedInPython):
    """A sticky placement (the env's sticky rounds are not its rule)."""

    name = "sticky-keeper"
    sticky = True


class Drawing(PackedInPython):
    """A placement that draws random numbers."""

    name = "drawing"
    deterministic = False


class NoPlace:
    """A placement class lacking its place() method."""

    name = "no-place"
    sticky = False
    deterministic = True


class BadSticky(PackedInPython):
    """A placement class whose sticky is not a bool."""

    name = "bad-sticky"
    sticky = "no"  # type: ignore[assignment]


class LargestFirst:
    """A user's queue order: most GPUs first, ties in admission order."""

    name = "largest-first"
    static = True

    def order(self, view: Any) -> np.ndarray:
        active = view.active()
        return active[np.argsort(-view.jobs.num_gpus[active], kind="stable")]


@pytest.fixture(scope="module")
def episode() -> palgym.Episode:
    return make_episode(read_sia_trace(TRACE), config=preset("default"), seed=0)


# ------------------------------------------------------------------------ the objects a name makes
def test_each_entry_describes_the_objects_it_makes(episode: palgym.Episode) -> None:
    factors = slowdown_factors(episode)
    for name in PLACEMENT_NAMES:
        entry = placement_entry(name)
        placement = make_placement(name, factors, episode.config)
        assert placement.name == name and type(placement) in entry.kinds
        assert placement.sticky == entry.sticky
        assert placement.deterministic == entry.deterministic


def test_an_object_not_matching_its_registration_is_refused(episode: palgym.Episode) -> None:
    class Renames(PackedInPython):
        def __init__(self) -> None:
            self.name = "other"  # type: ignore[misc]

    register_placement(Renames, name="renames")
    with pytest.raises(ConfigError, match="Renames\\(...\\).name is 'other' but the class was "
                                          "registered with name='renames'"):
        make_placement("renames", slowdown_factors(episode), episode.config)


def test_an_object_member_of_the_wrong_type_is_named(episode: palgym.Episode) -> None:
    odd = PackedInPython()
    odd.sticky = "no"  # type: ignore[assignment]
    with pytest.raises(PolicyTypeError, match="PackedInPython.sticky must be a bool"):
        run_episode(episode, policy=odd)


# ------------------------------------------------------------------------ run_episode
def test_a_registered_class_runs_by_name_as_its_object_does(episode: palgym.Episode) -> None:
    by_object = run_episode(episode, policy=PackedInPython(), queue_order=LargestFirst())
    register_placement(PackedInPython)
    register_queue_order(LargestFirst)
    by_name = run_episode(episode, "packed-in-python", "largest-first")
    assert (by_name.policy, by_name.queue_order) == ("packed-in-python", "largest-first")
    np.testing.assert_array_equal(by_name.records.jct_s, by_object.records.jct_s)
    # its rule is Packed-Non-Sticky's, so its episode is palgym's own, bit for bit
    packed = run_episode(episode, "packed-non-sticky", "largest-first")
    np.testing.assert_array_equal(by_name.records.jct_s, packed.records.jct_s)
    with pytest.raises(ConfigError, match=r"packed-in-python.*\(PackedInPython\) has no "
                                          "compiled twin"):
        run_episode(episode, "packed-in-python", driver="compiled")


@pytest.mark.skipif(not NUMBA, reason="compiled forms need numba")
def test_a_compiled_form_is_an_opt_in_that_changes_no_result(episode: palgym.Episode) -> None:
    # PackedInPython's rule is Packed-Non-Sticky's: the kernel's Packed rule is its compiled
    # form (registered as a separate, optional step)
    from palgym.policies.place_kernel import PACKED_RULE
    from palgym.policies.registry import CompiledRule

    def packed_form(view: Any, placement: Any) -> CompiledRule:
        return CompiledRule((PACKED_RULE, 0, 0, 0), None)

    register_placement(PackedInPython)
    python = run_episode(episode, "packed-in-python", "las", driver="python")
    register_placement(PackedInPython, compiled=packed_form)  # the class again: its new entry
    assert "packed-in-python" in COMPILED_PLACEMENT_NAMES
    compiled = run_episode(episode, "packed-in-python", "las", driver="compiled")
    np.testing.assert_array_equal(compiled.records.jct_s, python.records.jct_s)
    assert compiled.num_rounds == python.num_rounds


def test_module_class_names_import_and_register_the_class(episode: palgym.Episode) -> None:
    spec = "tests.test_registry:PackedInPython"
    assert placement_name(spec) == "packed-in-python"
    assert placement_name(spec) == "packed-in-python"  # once
    result = run_episode(episode, spec, "tests.test_registry:LargestFirst")
    assert (result.policy, result.queue_order) == ("packed-in-python", "largest-first")
    order = make_queue_order("largest-first", palgym.CLAIRVOYANT, episode.config)
    assert type(order).__qualname__ == "LargestFirst"  # pytest imports this file as another


@pytest.mark.parametrize(("spec", "message"), [
    ("tests.no_such_module:X", "cannot import module 'tests.no_such_module' "
                               r"\(ModuleNotFoundError"),
    ("tests.test_registry:Missing", "module 'tests.test_registry' has no attribute 'Missing'"),
    ("tests.test_registry:PAPER_SIX", "PAPER_SIX is a tuple, not a class"),
    ("tests.test_registry:", "expected MODULE:CLASS"),
    ("tests.test_registry:PackedInPython+easy", "takes no backfill mode"),
])
def test_a_bad_module_class_name_is_named(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        placement_name(spec, f"--policy {spec!r}")


# ------------------------------------------------------------------------ the env
def env_run(policy: str, task: str, queue_order: str = "fifo", **kwargs: Any
            ) -> tuple[ClusterEnv, dict[str, Any]]:
    entry = placement_entry(placement_name(policy))
    env = ClusterEnv("sia-philly-gen-1", window=60, task=task, queue_order=queue_order,
                     sticky=entry.sticky, class_reorder=entry.class_reorder, **kwargs)
    env.reset(seed=4)
    while True:
        _, _, terminated, truncated, info = env.step(env.heuristic_action(policy))
        if terminated or truncated:
            return env, info


@pytest.mark.parametrize("task", ["placement", "scheduling"])
def test_the_env_acts_as_a_python_only_placement(task: str) -> None:
    register_placement(PackedInPython)
    env, info = env_run("packed-in-python", task, "srtf")
    direct = run_episode(env.episode, "packed-in-python", "srtf")
    assert np.array_equal(direct.records.completion_time_s,
                          env.simulator.records().completion_time_s)
    assert info["num_invalid_actions"] == 0


def test_the_env_refuses_what_it_cannot_express() -> None:
    register_placement(LowestFactorById)
    with pytest.raises(ConfigError, match="placement 'lowest-factor-by-id' gives job .* GPUs "
                                          r"\[.*\], which no env candidate holds"):
        env_run("lowest-factor-by-id", "scheduling")
    register_placement(StickyKeeper)
    with pytest.raises(ConfigError, match="sticky-keeper is sticky and has no candidate kind"):
        env_run("sticky-keeper", "placement")
    register_placement(Drawing)
    with pytest.raises(ConfigError, match="drawing draws random numbers"):
        env_run("drawing", "placement")


# ------------------------------------------------------------------------ evaluate.py
def test_evaluate_runs_a_module_class_in_worker_processes(tmp_path: Path,
                                                          episode: palgym.Episode) -> None:
    output = tmp_path / "table.csv"
    assert main(["--trace", str(TRACE), "--policy", "tests.test_registry:PackedInPython",
                 "--queue-order", "tests.test_registry:LargestFirst", "--workers", "2",
                 "--output", str(output), "--quiet"]) == 0
    with output.open(newline="", encoding="utf-8") as handle:
        rows = {row["policy"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"packed-in-python", "packed-sticky", "packed-non-sticky"}
    assert {row["queue_order"] for row in rows.values()} == {"largest-first"}
    direct = run_episode(episode, policy=PackedInPython(), queue_order=LargestFirst())
    assert float(rows["packed-in-python"]["avg_jct_s"]) == direct.metrics.avg_jct_s
    # the same rule as Packed-Non-Sticky: the same episode
    assert rows["packed-in-python"]["avg_jct_s"] == rows["packed-non-sticky"]["avg_jct_s"]


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "tests.test_registry:NoPlace"],
     "--policy 'tests.test_registry:NoPlace': NoPlace is not a placement policy: it lacks the "
     "place() method"),
    (["--policy", "tests.test_registry:BadSticky"],
     "--policy 'tests.test_registry:BadSticky': BadSticky.sticky must be a bool, got 'no'"),
    (["--queue-order", "tests.test_registry:PackedInPython"],
     "PackedInPython is not a queue order: it lacks the order() method"),
    (["--policy", "no_such_package.mod:Mine"],
     "--policy 'no_such_package.mod:Mine': cannot import module 'no_such_package.mod'"),
])
def test_evaluate_names_a_bad_class_in_one_line(args: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*args, "--trace", str(TRACE), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {err[len('error: '):]}" and err.count("\n") == 1, err
    assert message in err


def test_a_class_defined_in_a_function_cannot_go_to_workers() -> None:
    class Local(PackedInPython):
        name = "local"

    register_placement(Local)
    from palgym.policies.loader import origins_of

    with pytest.raises(ConfigError, match="Local cannot be imported by another process"):
        origins_of(["local"], ["fifo"])
    assert origins_of(["pal", "packed-sticky+easy"], ["fifo"]) == ()
