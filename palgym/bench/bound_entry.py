"""The ``lower-bound`` reference entry's own pieces (:mod:`palgym.bench.reference_entry` runs
it): which tasks it refuses, a row's metrics, its replay and its header's ``bound`` object.

A lower-bound row holds :func:`palgym.headroom.bound.lower_bound` of its episode as
``avg_jct_s`` (every other metric null, no decision); its header member carries a ``bound``
object (:data:`BOUND_FORMAT`); the replay recomputes the bound on the episode.
"""

from __future__ import annotations

from typing import Any

from palgym.bench.entries import Plan
from palgym.bench.suites import Task, split_env_kwargs
from palgym.errors import ConfigError

BOUND_FORMAT = "palgym-lower-bound/1"
"""The ``format`` of a lower-bound member's ``bound`` object."""


def check_tasks(plan: Plan) -> None:
    """Refuse a task the bound cannot run on, saying where it can: a
    world whose dynamic truth has no fastest speed (drift; :mod:`palgym.headroom.bound`).

    Raises:
        ConfigError: naming the task and the tasks the bound runs on.
    """
    from palgym.sim.config import preset

    def unbounded(task: Task) -> bool:
        world = split_env_kwargs(plan.suite, task, "test", plan.request.roots)
        dynamics = preset(str(world.get("preset", "default"))).dynamics
        return dynamics is not None and dynamics.active and dynamics.fastest_factor is None

    for task in plan.tasks:
        if unbounded(task):
            able = [t.name for t in plan.suite.tasks if not unbounded(t)]
            raise ConfigError(f"--agent {plan.request.agent}: task {task.name}'s dynamic "
                              "truth has drift, which has no fastest speed; the bound runs on "
                              f"the tasks {able} (--tasks)")


def bound_metrics(episode: Any) -> dict[str, Any]:
    """A lower-bound row's metrics: the bound as ``avg_jct_s`` (s), no other metric (NaN,
    written null), every job counted as completed (what
    :func:`palgym.bench.results.row_metrics` reads)."""
    from palgym.headroom.bound import lower_bound

    jobs = int(episode.trace.num_jobs)
    nan = float("nan")
    return {"avg_jct_s": lower_bound(episode).avg_jct_s, "p99_jct_s": nan, "makespan_s": nan,
            "utilization_effective": nan, "num_jobs": jobs, "num_completed": jobs,
            "num_unfinished": 0, "num_invalid_actions": 0}


def replay_bound_row(env: Any, row: Any, index: int) -> dict[str, Any]:
    """A lower-bound row's recomputed fields on the episode ``env`` builds on trace ``index``
    with the row's seed."""
    from palgym.bench.entries import env_episode
    from palgym.bench.results import row_metrics

    episode, _ = env_episode(env, row.seed, index)
    return {"episode_hash": episode.episode_hash(),
            **row_metrics(bound_metrics(episode), 0)}


def bound_object_problem(value: Any) -> str:
    """Why a header's ``bound`` object is malformed (``""``: it is not)."""
    if value != {"format": BOUND_FORMAT}:
        return f"{{'format': {BOUND_FORMAT!r}}}"
    return ""


__all__ = ["BOUND_FORMAT", "bound_metrics", "bound_object_problem", "check_tasks",
           "replay_bound_row"]
