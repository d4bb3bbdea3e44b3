"""Field members that run on the engine with their schedule recorded: aging guards.

An aging guard (:mod:`palgym.policies.guards`, e.g. ``srtf/pal+backfill+age=32h:fifo/pal+easy``)
switches queue order and rule mid-episode, which no env action can express, so a guard in a
task's ``heuristic_field`` (the ``best`` and ``field`` entries) or given as ``--agent`` runs on
the engine (:func:`palgym.schedule_record.record_episode`) on the episode the task's env builds,
as a user's placement class does (:mod:`palgym.bench.module_entry`). Its row records the
allocations it commits, and its header member carries a ``schedule`` object instead of env
kwargs, so the replay rebuilds its metrics from the episode and the record alone. This module
imports no agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from palgym.bench.entries import SplitPlan
from palgym.policies.guards import is_guard
from palgym.schedule_record import FORMAT, record_episode


@dataclass(frozen=True)
class ScheduleOutcome:
    """One recorded episode, with what :func:`palgym.bench.entries.episode_rows` reads
    (``num_steps``: the commits; ``actions``: the record's flat form)."""

    metrics: dict[str, Any]
    num_steps: int
    decision_time_s: float
    episode_hash: str
    actions: list[int]


def guard_parts(spec: str) -> tuple[str, str | None] | None:
    """``(placement, queue order or None)`` of a guard spec ``[ORDER/]PLACEMENT``, else None
    (the part before the first ``/`` is the base order, :mod:`palgym.policies.guards`)."""
    order, sep, placement = spec.partition("/")
    if not sep:
        order, placement = "", spec
    if not is_guard(placement):
        return None
    return placement, order or None


def is_engine_member(spec: str) -> bool:
    """Whether a field member runs on the engine (an aging guard)."""
    return guard_parts(spec) is not None


def record_split(split: SplitPlan, placement: str, queue_order: str | None,
                 step: Callable[[int], None] | None = None,
                 trace_indices: Sequence[int] | None = None) -> tuple[list[Any], str]:
    """Run ``placement`` (a registered name, a user's class or a guard) on the engine on the
    split's episodes (trace indices ``trace_indices``, None: all; each with every task seed,
    in (trace, seed) order) with its schedule recorded: the one loop of every engine-run
    entry (a user's placement, :mod:`palgym.bench.module_entry`; a guard of a field).

    Returns:
        The outcomes (:class:`ScheduleOutcome`, ``step(1)`` after each; a truncated episode
        carries ``truncated`` and ``censored_avg_jct_s``, as an env outcome does) and the queue
        order they ran under (``queue_order``, else the env's).

    Raises:
        ConfigError: for a rule the task cannot run (e.g. SRTF without durations).
    """
    from palgym.bench.entries import episode_metrics

    env = split.make_env()
    order = queue_order or env.unwrapped.order.name
    outcomes = []
    try:
        for episode, durations in split.episodes(env, trace_indices):
            done = record_episode(episode, placement, order, durations=durations)
            result = done.result
            metrics = {**episode_metrics(result.metrics),
                       "truncated": result.metrics.truncated,
                       "censored_avg_jct_s": result.metrics.censored_avg_jct_s}
            outcomes.append(ScheduleOutcome(
                metrics, len(done.record), done.seconds, result.episode_hash,
                done.record.to_ints()))
            if step is not None:
                step(1)
    finally:
        env.close()
    return outcomes, order


def run_engine_members(split: SplitPlan, trace_indices: Sequence[int] | None,
                       specs: Sequence[str], step: Callable[[int], None] | None = None
                       ) -> dict[str, list[Any]]:
    """``{spec: outcomes}`` of the engine members ``specs`` (:func:`record_split`)."""
    found = {}
    for spec in specs:
        parts = guard_parts(spec)
        if parts is None:
            raise ValueError(f"{spec!r} is not an engine member")
        found[spec], _ = record_split(split, *parts, step, trace_indices)
    return found


def engine_member_header(split: SplitPlan, spec: str) -> dict[str, Any]:
    """The header's member object of an engine member: no env kwargs, the split env's layout,
    and its ``schedule`` object (:data:`palgym.bench.module_entry.SCHEDULE_KEYS`)."""
    parts = guard_parts(spec)
    if parts is None:
        raise ValueError(f"{spec!r} is not an engine member")
    order = parts[1] or str(split.env_kwargs.get("queue_order", split.task.queue_order))
    return {"env_kwargs": {}, "env_layout": split.env_layout,
            "schedule": {"format": FORMAT, "placement": parts[0], "queue_order": order}}


__all__ = ["ScheduleOutcome", "engine_member_header", "guard_parts", "is_engine_member",
           "record_split", "run_engine_members"]
