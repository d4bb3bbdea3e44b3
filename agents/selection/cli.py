"""``python -m agents.selection``: train the learned rule selector, and evaluate
selectors against the validation-chosen best heuristic and the per-trace hindsight best.

``train`` fits a :class:`agents.selection.selector.LinearSelector` by the cross-entropy method on
the training episodes and keeps the iteration whose mean is best on the validation episodes
(the test split is never read). ``evaluate`` chooses the best heuristic of the task's field on
validation, then runs it, the field (for the hindsight best) and the selectors on test, and
prints and writes (``--output``, JSON, atomically) geomean ratios of the average JCT over every
measured job (an unfinished one counted up to the episode's end) with 95% bootstrap
intervals over traces (resampled within strata), unfinished jobs and decision counts.
Commands and measured results: agents/pretrained/README.md, "The rule selector".
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.selection.cli_parser import build_parser
from agents.selection.report import PoolGroup, report
from agents.selection.runs import (
    CENSORED,
    COLUMNS,
    LabelledEpisode,
    check_positive,
    rule_runs,
    run_many,
    selector_objective,
    split_episodes,
    with_stragglers,
)
from agents.selection.selector import LinearSelector, StarvationFloor, train_cem
from palgym.errors import ConfigError, PalgymError
from palgym.io.selector_json import read_selector_json
from palgym.rule_selection import check_rules
from palgym.rule_sets import expand_rule_set


def _episodes(args: argparse.Namespace, split: str, per_regime: int | None = None,
              task: str | None = None) -> list[LabelledEpisode]:
    from palgym.bench.roots import data_roots

    roots = data_roots(args.data_dir, args.cache)  # --data-dir, --cache or their variables
    return split_episodes(split, suite=args.suite, task=task or args.task,
                          data_dir=roots.data_dir, cache_dir=roots.cache_dir,
                          regimes=args.regimes, per_regime=per_regime)


def _selector_task(args: argparse.Namespace) -> None:
    """Refuse a ``--task`` that ``bench run --agent selector:FILE`` refuses (a task of the
    fixed queue-order regime), before anything runs."""
    from palgym.bench.selector_entry import check_selector_task, selector_tasks
    from palgym.bench.suites import load_suite

    suite = load_suite(args.suite)
    check_selector_task(suite.task(args.task), f"{args.command} --task {args.task}",
                        selector_tasks(suite))


OBJECTIVE_TEXT = ("the mean over episodes of log(avg JCT / avg JCT of the base rule {base}); "
                  "lower is better, 0 is the base, -0.1 about 10% lower JCT")
"""What the objective of ``train``'s lines is (:func:`agents.selection.selector.log_ratio`)."""


def iteration_line(index: int, iterations: int, mean_objective: float, best_objective: float,
                   validation: float, elapsed_s: float) -> str:
    """One line of ``train`` per CEM iteration (``index``: 0-based); objectives as
    :data:`OBJECTIVE_TEXT` (lower is better)."""
    return (f"iteration {index + 1}/{iterations}: train objective of the mean before it "
            f"{mean_objective:+.4f}, best sample {best_objective:+.4f}, validation of the new "
            f"mean {validation:+.4f} (lower is better; {elapsed_s:.0f} s elapsed)")


def train(args: argparse.Namespace) -> int:
    _selector_task(args)
    rules = tuple(r.strip() for r in expand_rule_set(args.rules, "order/placement").split(","))
    selector_rules = LinearSelector.constant(rules).rules  # checks them
    for name, value in (("--iterations", args.iterations), ("--population", args.population),
                        ("--workers", args.workers), ("--per-regime", args.per_regime)):
        check_positive(name, value)
    start = time.perf_counter()
    train_eps = _episodes(args, "train", args.per_regime)
    valid_eps = _episodes(args, "validation")
    if args.stragglers is not None:
        train_eps, valid_eps = (with_stragglers(eps, args.stragglers)
                                for eps in (train_eps, valid_eps))
    base_train = rule_runs(rules[:1], train_eps, args.workers)[0, :, 0]
    base_valid = rule_runs(rules[:1], valid_eps, args.workers)[0, :, 0]
    train_objective = selector_objective(train_eps, base_train, args.workers)
    valid_objective = selector_objective(valid_eps, base_valid, args.workers)
    validation: list[float] = []

    print(f"objective: {OBJECTIVE_TEXT.format(base=rules[0])}", flush=True)

    def on_iteration(index: int, mean: LinearSelector, history: Any) -> None:
        validation.append(float(valid_objective([mean])[0]))
        print(iteration_line(index, args.iterations, history.mean_objective[-1],
                             history.best_objective[-1], validation[-1],
                             time.perf_counter() - start), flush=True)

    floor = None if args.floor is None else _floor(selector_rules, args.floor, args.floor_rule,
                                                   "--floor/--floor-rule", "--rules")
    means, history = train_cem(selector_rules, train_objective, iterations=args.iterations,
                               population=args.population, seed=args.seed, floor=floor,
                               on_iteration=on_iteration)
    # least validation objective; ties go to the later (longer-trained) iteration
    chosen = max(range(len(means)), key=lambda i: (-round(validation[i], 12), i))
    final_train = float(train_objective([means[chosen]])[0])
    meta = {"trained": {
        "method": "cross-entropy method (agents.selection.selector.train_cem)",
        "suite": args.suite, "task": args.task, "regimes": args.regimes,
        "per_regime": args.per_regime, "iterations": args.iterations,
        "population": args.population, "seed": args.seed,
        "straggler_ratio": args.stragglers,
        "train_traces": [e.label for e in train_eps],
        "validation_traces": [e.label for e in valid_eps],
        "train_objective_of_mean": history.mean_objective, "validation_objective": validation,
        "chosen_iteration": chosen + 1, "train_objective_chosen": final_train,
        "command": "python -m agents.selection " + shlex.join(args.argv),
        "wall_s": round(time.perf_counter() - start, 1)}}
    path = means[chosen].save(args.output, **meta)
    print(f"wrote {path}: iteration {chosen + 1} (validation objective "
          f"{validation[chosen]:+.4f}, train {final_train:+.4f}; lower is better) in "
          f"{time.perf_counter() - start:.0f} s")
    return 0


def distill(args: argparse.Namespace) -> int:
    """``distill``: :func:`agents.selection.distill.distill` on the task's episodes."""
    from agents.selection.distill import distill as run

    _selector_task(args)
    check_positive("--workers", args.workers)
    run(args.base, _episodes(args, "train", args.per_regime), _episodes(args, "validation"),
        H=args.H, grid=args.C, workers=args.workers, output=args.output,
        arrivals=args.arrivals,
        command="python -m agents.selection " + shlex.join(args.argv),
        meta={"suite": args.suite, "task": args.task, "regimes": args.regimes,
              "per_regime": args.per_regime})
    return 0


def _floor(rules: Sequence[str], hours: float, rule: str, options: str = "--floor/--floor-rule",
           where: str = "") -> StarvationFloor:
    """The floor of ``hours`` and ``rule`` (by name) for a selector of ``rules`` (``options``
    and ``where``, the selector's file, name the input in an error)."""
    if rule not in rules:
        source = f" ({where})" if where else ""
        raise ConfigError(f"{options}: the floor rule {rule!r} is not one of the selector's "
                          f"rules{source}: {list(rules)}")
    try:
        return StarvationFloor(hours, list(rules).index(rule))
    except ConfigError as error:  # StarvationFloor's own check of the hours
        raise ConfigError(f"{options}: {error}") from None


def add_floor(args: argparse.Namespace) -> int:
    """``floor``: the selector file with an aging floor, its provenance recorded."""
    from palgym.bench.suites import file_sha256

    selector = LinearSelector.load(args.selector)
    if selector.floor is not None:
        raise ConfigError(f"{args.selector}: field floor: it already has one "
                          f"({selector.floor.describe(selector.rules)}); start from the file "
                          "without a floor")
    data = read_selector_json(args.selector)
    meta = {key: value for key, value in data.items() if key not in selector.to_dict()}
    floored = selector.with_floor(_floor(selector.rules, args.hours, args.rule,
                                         "--hours/--rule", args.selector))
    meta["floor_added"] = {"from": Path(args.selector).name,
                           "from_sha256": file_sha256(Path(args.selector)),
                           "chosen_on": args.chosen_on,
                           "command": "python -m agents.selection " + shlex.join(args.argv)}
    path = floored.save(args.output, **meta)
    print(f"wrote {path}: {args.selector} under a floor of {args.hours:g} h -> {args.rule}")
    return 0


Labelled = list[tuple[str, LinearSelector]]


def _loaded_and_floored(args: argparse.Namespace) -> tuple[Labelled, list[Labelled]]:
    """The ``--selector`` files (label, selector) and, per ``--floor`` hours, each under it.

    Raises:
        ConfigError: for a file that cannot be read, or that already has a floor when
            ``--floor`` is given (naming the file).
    """
    loaded = [(Path(p).name, LinearSelector.load(p)) for p in args.selector]
    for path, (_, selector) in zip(args.selector, loaded, strict=True):
        if args.floor and selector.floor is not None:
            raise ConfigError(f"--floor: {path} already has a floor "
                              f"({selector.floor.describe(selector.rules)}); give the file "
                              "without one")
    floored = [[(f"{name} + floor {hours:g} h", selector.with_floor(
                    _floor(selector.rules, hours, args.floor_rule, where=path)))
                for path, (name, selector) in zip(args.selector, loaded, strict=True)]
               for hours in args.floor]
    return loaded, floored


def evaluate(args: argparse.Namespace) -> int:
    from palgym.bench.suites import load_suite

    check_positive("--workers", args.workers)
    loaded, floored = _loaded_and_floored(args)
    selectors = [*loaded, *(pair for group in floored for pair in group),
                 *((Path(p).name, LinearSelector.load(p)) for p in args.also)]
    guard_rules = (expand_rule_set(args.rules, "order/placement").split(",")[0].strip(),
                   args.guard_rule)
    selectors += [(f"guard {hours:g} h: {guard_rules[0]} -> {guard_rules[1]}",
                   LinearSelector.guard(guard_rules, hours, 1)) for hours in args.guard]
    if not selectors and not args.stragglers:
        raise ConfigError("evaluate: give --selector FILE ..., --guard HOURS ... or "
                          "--stragglers RATIO ...")
    field = (list(load_suite(args.suite).task(args.task).heuristic_field) if not args.field
             else [rule.strip() for rule in args.field.split(",")])
    if not args.field and not all("/" in rule for rule in field):
        raise ConfigError(f"evaluate: task {args.task!r}'s heuristic field {field} names "
                          "placements under the task's fixed queue order; give --field "
                          "ORDER/PLACEMENT,... (e.g. the 27 combinations of "
                          "scheduling-clairvoyant)")
    check_rules(field)
    valid_eps = _episodes(args, "validation")
    test_eps = _episodes(args, "test", task=args.test_task)
    cache = args.run_cache
    valid = rule_runs(field, valid_eps, args.workers, cache)
    test = rule_runs(field, test_eps, args.workers, cache)
    # every ratio is of the censored avg JCT (COLUMNS): an unfinished job counts up to the
    # episode's end, so starving a job never makes an episode look shorter
    jct = CENSORED
    # the best: fewest unfinished jobs on validation, then least geomean avg JCT
    best = min((int(valid[r, :, 1].sum()), float(np.log(valid[r, :, jct]).mean()), r)
               for r in range(len(field)))[2]
    finished = np.where(test[:, :, 1] > 0, np.inf, test[:, :, jct])
    oracle = np.zeros((len(test_eps), len(COLUMNS)))
    oracle[:, jct] = finished.min(axis=0)
    entries = [("best: " + field[best], valid[best], test[best])]
    for label, selector in selectors:
        runs = [run_many([("selector", selector, i) for i in range(len(eps))], eps,
                         args.workers, cache)
                for eps in (valid_eps, test_eps)]
        entries.append((label, runs[0], runs[1]))
    for ratio in args.stragglers:  # the best rule and every selector, stragglers migrated
        worlds = [with_stragglers(eps, ratio) for eps in (valid_eps, test_eps)]
        entries += [(f"best: {field[best]} + stragglers {ratio:g}",
                     *(rule_runs([field[best]], eps, args.workers, cache)[0] for eps in worlds))]
        for label, selector in selectors:
            runs = [run_many([("selector", selector, i) for i in range(len(eps))], eps,
                             args.workers, cache) for eps in worlds]
            entries.append((f"{label} + stragglers {ratio:g}", runs[0], runs[1]))
    entries.append(("hindsight best of the field", None, oracle))
    print(f"validation-chosen best of {len(field)} rules on {len(valid_eps)} validation "
          f"episodes: {field[best]}; test: {len(test_eps)} episodes in "
          f"{len({e.stratum for e in test_eps})} strata"
          + (f", world of task {args.test_task}" if args.test_task else ""))
    groups = []
    if args.pool and len(loaded) > 1:
        names = [name for name, _ in loaded]
        groups.append(PoolGroup(args.pool, names))
        groups += [PoolGroup(f"{args.pool} + floor {hours:g} h", [name for name, _ in group],
                             "pooled_floors", {"floor_hours": hours,
                                               "floor_rule": args.floor_rule})
                   for hours, group in zip(args.floor, floored, strict=True)]
        groups += [PoolGroup(f"{args.pool} + stragglers {ratio:g}",
                             [f"{name} + stragglers {ratio:g}" for name in names],
                             "pooled_stragglers", {"straggler_ratio": ratio})
                   for ratio in args.stragglers]
    report(entries, field[best], field, valid_eps, test_eps, groups,
           {"task": args.task, "test_task": args.test_task or args.task}, args.output)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        command = {"train": train, "evaluate": evaluate, "floor": add_floor,
                   "distill": distill}[args.command]
        return command(args)
    except PalgymError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
