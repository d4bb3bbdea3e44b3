"""``python -m palgym.bench validate``: replay every row's actions, recompute every metric.

For each results file (:mod:`palgym.bench.results`): the suite it names must have the bytes it
was run on (``suite_sha256``); each task's env must have the layout the header records and the
suite was frozen with; each member's env kwargs must be among
:data:`~palgym.bench.results.AGENT_KWARGS` (its own queue order only under the task's ``free``
regime) and its env's layout must be the one recorded. Then every episode row is replayed: a
fresh env of the task's split (the split's env kwargs, the member's, the split's traces), reset
with the row's seed on the row's trace, steps the row's actions, and every field but
``decision_time_s`` is recomputed from the env (``episode_hash`` from the reset, the metrics
from the final step) and compared bit for bit. A rule selector's row (a member with a
``selector`` object) is replayed on the episode that env builds, by the engine's rule selection
with the recorded choices (:func:`palgym.bench.selector_entry.replay_selector_row`), and a
user's placement's row (a member with a ``schedule`` object) on that episode by its recorded
schedule, without the user's module (:func:`palgym.bench.module_entry.replay_schedule_row`).
The file
must hold every (trace, seed) of the splits it runs exactly once per member; a ``best`` entry's
choice must be the lowest of its validation geomeans (and, when a ``field`` file of the same
suite is validated with it, those geomeans must be the field's, recomputed from its validation
rows).

Every disagreement is a :class:`Problem` naming the file, the line, the field, the expected
and the found value; the file is rejected when there is any. The header's checks are
:mod:`palgym.bench.file_check`'s, a ``best`` entry's choices :mod:`palgym.bench.choice_check`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from palgym.bench.bound_entry import replay_bound_row
from palgym.bench.choice_check import check_choices
from palgym.bench.file_check import FileCheck, Problem, same_bits
from palgym.bench.module_entry import replay_schedule_row
from palgym.bench.results import (
    METRIC_FIELDS,
    EpisodeRow,
    ResultsError,
    ResultsFile,
    decode_actions,
    read_results,
    row_metrics,
)
from palgym.bench.selector_entry import replay_selector_row
from palgym.bench.suites import (
    DataRoots,
    Task,
    load_suite,
    split_env_kwargs,
    split_traces,
    suite_names,
)
from palgym.errors import PalgymError
from palgym.policies.loader import no_user_imports


def replay_row(env: Any, row: EpisodeRow, index: int) -> dict[str, Any]:
    """Replay one row in ``env`` (reset with the row's seed on trace ``index``).

    Returns:
        The row's recomputed fields: :data:`METRIC_FIELDS` and ``episode_hash``, or
        ``{"actions": note}`` when the actions do not make one whole episode.
    """
    _, info = env.reset(seed=row.seed, options={"trace": index})
    actions = decode_actions(row.actions, row.decisions)
    for step, action in enumerate(actions.tolist()):
        try:
            _, _, terminated, truncated, step_info = env.step(int(action))
        except PalgymError as exc:
            return {"actions": f"action {step} ({action}) refused: {exc}"}
        if terminated or truncated:
            if step + 1 != actions.size:
                return {"actions": f"the episode ended after {step + 1} of {actions.size} "
                                   "actions"}
            return {"episode_hash": str(info["episode_hash"]),
                    **row_metrics(step_info["episode_metrics"], actions.size)}
    return {"actions": f"the episode has not ended after the file's {actions.size} actions"}



def _groups(rows: Sequence[tuple[int, EpisodeRow]]
            ) -> dict[tuple[str, str, str], list[tuple[int, EpisodeRow]]]:
    groups: dict[tuple[str, str, str], list[tuple[int, EpisodeRow]]] = {}
    for line, row in rows:
        groups.setdefault((row.task, row.split, row.member), []).append((line, row))
    return groups


def check_rows(check: FileCheck) -> None:
    """Every row's place (task, member, split, trace, hash, seed), completeness, replay."""
    header, suite = check.results.header, check.suite
    splits = ("validation", "test") if header.entry_kind == "field" else ("test",)
    groups = _groups(check.results.episodes)
    for task_name, members in header.members.items():
        for member in members:
            for split in splits:
                if (task_name, split, member) not in groups:
                    check.add(None, "record", f"{split} episodes of {member} on {task_name}",
                              "none")
    for line, row in check.results.episodes:
        if row.seed not in header.seeds:
            check.add(line, "seed", f"one of the header's seeds {header.seeds}", row.seed)
    for (task_name, split, member), rows in groups.items():
        entry = header.members.get(task_name, {}).get(member)
        if entry is None or split not in splits or task_name not in [t.name for t in
                                                                      suite.tasks]:
            check.add(rows[0][0], "member", f"a member of the header on the "
                      f"{'/'.join(splits)} split", f"{member} on {task_name} / {split}")
            continue
        _replay_group(check, suite.task(task_name), split, member, entry, rows)


def _replay_group(check: FileCheck, task: Task, split: str, member: str,
                  entry: Mapping[str, Any], rows: Sequence[tuple[int, EpisodeRow]]) -> None:
    """Replay one member's rows of one split in a fresh env of that split (a selector
    member's: :func:`palgym.bench.selector_entry.replay_selector_row`)."""
    import gymnasium as gym

    suite, own = check.suite, entry["env_kwargs"]
    rules = entry["selector"]["rules"] if "selector" in entry else None
    refs = task.splits[split].traces
    labels = [r.label for r in refs]
    wanted = {(label, s) for label in labels for s in task.seeds}
    seen: set[tuple[str, int]] = set()
    kwargs = {**split_env_kwargs(suite, task, split, check.roots), **own}
    traces = split_traces(suite, task, split, check.roots)
    try:
        env = gym.make(task.env_id, **kwargs, trace=traces)
    except PalgymError as exc:  # e.g. a member's own queue order that cannot be made
        check.add(1, f"members.{task.name}.{member}.env_kwargs", "kwargs the env takes", own,
                  str(exc))
        return
    try:
        for line, row in rows:
            key = (row.trace, row.seed)
            if key not in wanted or key in seen:
                check.add(line, "trace", "each trace x seed of the split once",
                          f"{row.trace} seed {row.seed}")
                continue
            seen.add(key)
            ref = refs[labels.index(row.trace)]
            if row.trace_sha256 != suite.files[ref.file].sha256:
                check.add(line, "trace_sha256", suite.files[ref.file].sha256, row.trace_sha256)
            index = labels.index(row.trace)
            if "schedule" in entry:
                replayed = replay_schedule_row(env, row, index)
            elif "bound" in entry:
                replayed = replay_bound_row(env, row, index)
            elif rules is not None:
                replayed = replay_selector_row(env, row, index, rules)
            else:
                replayed = replay_row(env, row, index)
            _compare(check, line, row, replayed)
            if check.on_row is not None:
                check.on_row(1)
    finally:
        env.close()
    for trace, seed in sorted(wanted - seen):
        check.add(None, "record", f"{split} episode {trace} seed {seed} of {member} on "
                  f"{task.name}", "none")


def _compare(check: FileCheck, line: int, row: EpisodeRow, replayed: Mapping[str, Any]) -> None:
    if "actions" in replayed:
        check.add(line, "actions", "one whole episode", replayed["actions"])
        return
    for name in ("episode_hash", *METRIC_FIELDS):
        found = getattr(row, name)
        if not same_bits(replayed[name], found):
            check.add(line, name, replayed[name], found)



NO_IMPORT = ("validate imports no module a results file names (importing a module runs its "
             "code); pass --trust-modules if you trust the file and the module")
"""Why ``validate`` refuses a ``MODULE:CLASS`` name of a header (a member's own queue order,
a selector's rule) without ``--trust-modules``."""


def validate_files(paths: Sequence[str | Path], roots: DataRoots,
                   suite_file: str | Path | None = None, allow_large: bool = False,
                   trust_modules: bool = False,
                   on_row: Callable[[int], None] | None = None
                   ) -> Iterator[tuple[Path, list[Problem]]]:
    """Validate each results file (see the module docstring).

    Args:
        paths: results files.
        roots: where the suites' public and generated files are.
        suite_file: the suite file to check against (None: the committed suite each header
            names).
        allow_large: lift the size limits of the results files
            (:func:`palgym.bench.results.read_results`).
        trust_modules: import the modules a header's ``MODULE:CLASS`` names need (else each
            such name is a problem, :data:`NO_IMPORT`, and no module is imported).
        on_row: called with 1 after each episode row is replayed (a progress count).

    Yields:
        ``(path, problems)`` per file, in order (no problem: the file is valid).

    Raises:
        ConfigError: for an unknown suite; SuiteDataError for missing or changed data files.
        OSError: for a file that cannot be read.
    """
    files: list[ResultsFile | Problem] = []
    for path in paths:
        try:
            files.append(read_results(path, allow_large))
        except ResultsError as exc:
            files.append(Problem(exc.path, exc.line, exc.field, "a valid results file",
                                 str(exc).split(": ", 1)[-1]))
    field_files = [f for f in files if isinstance(f, ResultsFile)
                   and f.header.entry_kind == "field"]
    for item in files:
        if isinstance(item, Problem):
            yield Path(item.path), [item]
            continue
        if suite_file is None and item.header.suite not in suite_names():
            yield item.path, [Problem(str(item.path), 1, "suite", f"one of the committed "
                                      f"suites {suite_names()}", item.header.suite,
                                      "or pass --suite FILE: a header never names a path")]
            continue
        suite = load_suite(suite_file or item.header.suite)
        check = FileCheck(item, suite, roots, on_row)
        with nullcontext() if trust_modules else no_user_imports(NO_IMPORT):
            check.header()
            if not check.problems:
                check_rows(check)
                check_choices(check, [f for f in field_files if f is not item])
        yield item.path, check.problems


__all__ = ["NO_IMPORT", "Problem", "replay_row", "validate_files"]
