"""``python -m palgym.bench run --agent MODULE:CLASS``: a user's placement class as a benchmark
entry, run on the engine with its schedule recorded, and the replay of its rows.

A user's placement may give a job any GPU set, which no env candidate need hold, so it runs
on the engine (:func:`palgym.simulate.run_episode` with the class's registered name and the
task's or the spec's queue order, as ``evaluate.py --policy`` runs it), not through the env.
Each episode is the one the task's env builds for the row's (trace, seed) (``reset(seed,
options={"trace": index})``, then ``env.episode``: the same episode hash as every other row),
with the duration knowledge of the task (``env.durations``) and its belief (a class taking
``factors`` decides on the episode's belief, refitted as PAL's is).

The allocations it commits are recorded (:mod:`palgym.schedule_record`: per commit, the jobs
whose GPU set changed and their new sets) in the row's ``actions`` field (the flat form, in
the int32 codec of env actions, :func:`palgym.bench.results.encode_actions`); ``decisions``
is the number of commits; ``decision_time_s`` the wall seconds spent in the class's
``place``. The header's member adds ``schedule``: ``{"format": "palgym-schedule/1",
"placement": NAME, "queue_order": NAME}`` and no env kwarg (results schema
``palgym-bench-results/3``). :func:`replay_schedule_row` replays a row on the engine from the
episode and the record alone, without the user's module: every metric and the episode hash
are recomputed, and a record the engine refuses (a job on a GPU set of the wrong size, a job
not admitted, a commit that changes nothing, one at a round the episode never reaches) is
reported. A replay proves that the row's metrics follow from its schedule on the suite's
episode; that the schedule is the class's, and online, rests on the submission's code (as an
env entry's actions rest on its model).

A spec whose placement is one of palgym's (a user's queue order with PAL, say) still runs
through the env. This module imports no agent.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from palgym.bench.engine_members import record_split
from palgym.bench.entries import Plan, env_episode, episode_metrics, split_rows
from palgym.bench.results import SCHEDULE_SCHEMA, Row, decode_actions, row_metrics, write_results
from palgym.errors import ConfigError
from palgym.schedule_record import FORMAT, ScheduleError, ScheduleRecord

SCHEDULE_KEYS = ("format", "placement", "queue_order")
"""The keys of a member's ``schedule`` object in the header."""


def run_module_entry(plan: Plan, placement: str, queue_order: str | None, started: float
                     ) -> tuple[Path, int, float]:
    """Run a user's placement entry on the engine and write its results file (as
    :func:`agents.bench.runner.run_entry`; ``placement``: the class's registered name;
    ``queue_order``: the spec's, or None for the task's; ``started``: the run's
    ``time.perf_counter()``).

    Raises:
        ConfigError: for ``workers`` > 1 or Ray (the entry runs in one process), or a queue
            order a fixed-regime task refuses.
        OSError: if the output cannot be written.
    """
    from palgym.progress import SweepProgress

    request = plan.request
    if request.workers > 1 or request.ray_address is not None:
        raise ConfigError(f"--agent {request.agent}: a placement of your own runs on the "
                          "engine in one process: drop --workers / --ray")
    for task in plan.tasks:
        if (task.queue_order_regime == "fixed" and queue_order is not None
                and queue_order != task.queue_order):
            raise ConfigError(f"{request.agent!r}: task {task.name} runs every contender under "
                              f"queue order {task.queue_order!r} (regime fixed)")
    bar = SweepProgress(plan.total_episodes(), enabled=request.progress)
    rows: list[Row] = []
    members: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for split in (plan.split_plan(unit) for unit in plan.first_units()):
            outcomes, order = record_split(split, placement, queue_order, bar.update)
            rows += split_rows(plan, split, outcomes)
            members[split.task.name] = {plan.name: {
                "env_kwargs": {}, "env_layout": split.env_layout,
                "schedule": {"format": FORMAT, "placement": placement, "queue_order": order}}}
    finally:
        bar.close()
    header = replace(plan.header(members), schema=SCHEDULE_SCHEMA)
    write_results(request.output, header, rows)
    return request.output, len(rows), time.perf_counter() - started


# --------------------------------------------------------------------------- replay
def schedule_object_problem(value: Any, task_queue_order: str, regime: str) -> str:
    """Why a header's ``schedule`` object is malformed (``""``: it is not)."""
    if not isinstance(value, dict) or set(value) != set(SCHEDULE_KEYS):
        return f"an object with keys {list(SCHEDULE_KEYS)}"
    if value["format"] != FORMAT:
        return f"format: {FORMAT!r}"
    if not all(isinstance(value[k], str) and value[k] for k in ("placement", "queue_order")):
        return "placement, queue_order: names"
    if regime == "fixed" and value["queue_order"] != task_queue_order:
        return f"queue_order: the task's {task_queue_order!r} (regime fixed)"
    return ""


def replay_schedule_row(env: Any, row: Any, index: int) -> dict[str, Any]:
    """Replay one recorded row: the episode ``env`` builds on trace ``index`` with the row's
    seed, run on the row's schedule record (:func:`palgym.schedule_record.replay_schedule`).

    Returns:
        The row's recomputed fields (:data:`palgym.bench.results.METRIC_FIELDS` and
        ``episode_hash``), or ``{"actions": note}`` when the record is malformed or the
        episode refuses it (the note names the commit and its round).
    """
    from palgym.schedule_record import replay_schedule

    episode, _ = env_episode(env, row.seed, index)
    try:
        record = ScheduleRecord.from_ints(decode_actions(row.actions))
        result = replay_schedule(episode, record)
    except (ScheduleError, ValueError) as exc:
        return {"actions": f"schedule: {exc}"}
    return {"episode_hash": result.episode_hash,
            **row_metrics(episode_metrics(result.metrics), len(record))}


__all__ = ["SCHEDULE_KEYS", "replay_schedule_row", "run_module_entry",
           "schedule_object_problem"]
