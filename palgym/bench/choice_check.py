"""A ``best`` entry's choices, checked by ``python -m palgym.bench validate``
(:mod:`palgym.bench.replay`): one choice line per task, naming the task's field, whose member
is the lowest of its validation geomeans (ties by label) and the entry's one member of that
task; when a ``field`` file of the same suite is validated with it, each geomean must be the
geomean of that file's validation rows (:func:`palgym.sim.metrics.geomean`), bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from palgym.bench.file_check import FileCheck, same_bits
from palgym.bench.results import ChoiceRow, ResultsFile
from palgym.sim.metrics import geomean


def check_choices(check: FileCheck, field_files: Sequence[ResultsFile]) -> None:
    """A ``best`` file's choices: one per task, the lowest geomean (ties by label), its rows'
    member; against a validated ``field`` file's validation rows when there is one."""
    header = check.results.header
    if header.entry_kind != "best":
        for line, _ in check.results.choices:
            check.add(line, "record", "no choice line outside a best entry", "choice")
        return
    chosen = {c.task: (line, c) for line, c in check.results.choices}
    for task_name in header.env_layouts:
        if task_name not in chosen:
            check.add(None, "record", f"a choice line for {task_name}", "none")
            continue
        line, choice = chosen[task_name]
        _check_choice(check, line, choice, field_files)


def _check_choice(check: FileCheck, line: int, choice: ChoiceRow,
                  field_files: Sequence[ResultsFile]) -> None:
    task = check.suite.task(choice.task)
    values = choice.validation_geomean_avg_jct_s
    if list(values) != list(task.heuristic_field) or choice.field != list(task.heuristic_field):
        check.add(line, "field", list(task.heuristic_field), choice.field)
        return
    finite = [(v, k) for k, v in values.items() if v is not None and math.isfinite(v)]
    if not finite or min(finite)[1] != choice.member:
        check.add(line, "member", min(finite)[1] if finite else None, choice.member)
    members = list(check.results.header.members.get(choice.task, {}))
    if members != [choice.member]:
        check.add(1, f"members.{choice.task}", [choice.member], members)
    for other in field_files:
        if other.header.suite_sha256 != check.results.header.suite_sha256:
            continue
        for member, value in values.items():
            rows = [r for _, r in other.episodes
                    if (r.task, r.split, r.member) == (choice.task, "validation", member)]
            if not rows or any(r.unfinished_jobs for r in rows):
                continue  # the choice counts an unfinished episode's censored JCT (not in rows)
            expected = _geomean([r.avg_jct_s for r in rows])
            if not same_bits(expected, value if value is not None else math.nan):
                check.add(line, f"validation_geomean_avg_jct_s.{member}", expected, value,
                          f"from the validation rows of {other.path}")


def _geomean(values: Sequence[float | None]) -> float:
    """Geomean of the values (NaN if any is None or there are none)."""
    if not values or any(v is None for v in values):
        return math.nan
    return geomean([float(v) for v in values if v is not None])


__all__ = ["check_choices"]
