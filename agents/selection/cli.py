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

from agents.selection.report import PoolGroup, report
from agents.selection.runs import (
    CENSORED,
    COLUMNS,
    DEFAULT_SUITE,
    DEFAULT_TASK,
    LabelledEpisode,
    check_positive,
    rule_runs,
    run_many,
    selector_objective,
    split_episodes,
    with_stragglers,
)
from agents.selection.search import ARRIVALS
from agents.selection.selector import LinearSelector, StarvationFloor, train_cem
from palgym.errors import ConfigError, PalgymError
from palgym.io.selector_json import read_selector_json
from palgym.rule_selection import check_rules
from palgym.rule_sets import ORDER_PLACEMENT_RULE_SET, ORDER_PLACEMENT_RULES, expand_rule_set


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agents.selection",
                                     description=__doc__.split("\n\n")[1])
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="fit a selector (CEM), chosen on validation")
    evaluate = commands.add_parser("evaluate", help="selectors vs the validation-chosen best")
    distil = commands.add_parser("distill", help="fit a selector to the rollout search's "
                                 "choices around a base selector (expert iteration)")
    for sub in (train, evaluate, distil):
        sub.add_argument("--suite", default=DEFAULT_SUITE,
                         help="a palgym-bench suite (default %(default)s, which reads the public "
                         "data: --data-dir or $PALGYM_DATA_DIR)")
        sub.add_argument("--task", default=DEFAULT_TASK, help="the suite's task whose world, "
                         "duration knowledge and splits are used (default %(default)s); one "
                         "episode per trace, episode seed 0")
        sub.add_argument("--data-dir", help="the public data (default $PALGYM_DATA_DIR)")
        sub.add_argument("--cache", help="palgym-bench's generated files (bench prepare; "
                         "default $PALGYM_BENCH_CACHE)")
        sub.add_argument("--regimes", help="a folder of `python -m traces regimes`: its "
                         "split's traces join the suite's")
        sub.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    train.add_argument("--output", required=True, help="selector JSON to write")
    train.add_argument("--rules", default=ORDER_PLACEMENT_RULE_SET,
                       help="comma-separated ORDER/PLACEMENT rules, the base first, or the name "
                       "of a rule set of palgym.rule_sets (default %(default)s: "
                       f"{','.join(ORDER_PLACEMENT_RULES)})")
    train.add_argument("--per-regime", type=int, default=2,
                       help="training traces per regime (default 2)")
    train.add_argument("--iterations", type=int, default=12,
                       help="CEM iterations (default %(default)s)")
    train.add_argument("--population", type=int, default=24,
                       help="CEM samples per iteration (default %(default)s)")
    train.add_argument("--seed", type=int, default=0,
                       help="the CEM's random seed (default %(default)s; the episodes' seed "
                       "is always 0)")
    train.add_argument("--floor", type=float, metavar="HOURS",
                       help="train under an aging floor: once a job has queued > HOURS, "
                       "--floor-rule is picked whatever the scores (declared, not learned)")
    train.add_argument("--floor-rule", default="fifo/pal+easy",
                       help="the floor's rule, one of --rules (default %(default)s)")
    train.add_argument("--stragglers", type=float, metavar="RATIO",
                       help="train with straggler migration (online belief; "
                       "BeliefOptions.straggler_ratio = RATIO): evaluate with --stragglers")
    floor = commands.add_parser("floor", help="write a selector with an aging floor added")
    floor.add_argument("--selector", required=True, help="the selector JSON to start from")
    floor.add_argument("--hours", type=float, required=True, help="the floor's hours")
    floor.add_argument("--rule", default="fifo/pal+easy",
                       help="the floor's rule, one of the selector's (default %(default)s)")
    floor.add_argument("--chosen-on", required=True, metavar="TEXT",
                       help="how HOURS and the rule were chosen (recorded), e.g. the "
                       "evaluation whose validation column chose them")
    floor.add_argument("--output", required=True, help="the selector JSON to write")
    distil.add_argument("--base", required=True, help="the base selector JSON of the search")
    distil.add_argument("--H", type=_horizon, default=10, help="the search's horizon: asks "
                        "decided by the base after each rollout's first, or 'end' (default "
                        "%(default)s)")
    distil.add_argument("--arrivals", choices=ARRIVALS, default="all",
                        help="what the search's rollouts admit: 'all' (the episode's future, "
                        "default) or 'known' (the jobs submitted by the ask: an online "
                        "teacher, agents.selection.search)")
    distil.add_argument("--C", type=float, nargs="+", default=[0.01, 0.1, 1.0, 10.0],
                        help="inverse L2 strengths tried, chosen on validation (ties: the first "
                        "given; default %(default)s)")
    distil.add_argument("--per-regime", type=int, default=2,
                        help="training traces per regime (default 2)")
    distil.add_argument("--output", required=True, help="selector JSON to write")
    evaluate.add_argument("--selector", nargs="*", default=[], help="selector JSON files")
    evaluate.add_argument("--also", nargs="*", default=[], metavar="FILE",
                          help="more selector files, shown but never pooled (e.g. selectors "
                          "trained in another world)")
    evaluate.add_argument("--guard", nargs="*", type=float, default=[], metavar="HOURS",
                          help="add hand-set starvation guards (references): the first "
                          "of --rules, or --guard-rule once a job has queued > HOURS")
    evaluate.add_argument("--rules", default=ORDER_PLACEMENT_RULES[0],
                          help="the guards' base rule (default %(default)s)")
    evaluate.add_argument("--guard-rule", default="fifo/pal+easy",
                          help="the rule a guard switches to (default %(default)s)")
    evaluate.add_argument("--floor", nargs="*", type=float, default=[], metavar="HOURS",
                          help="also run every --selector file under an aging floor of HOURS "
                          "(rows '<file> + floor H h'; pooled per H with --pool)")
    evaluate.add_argument("--floor-rule", default="fifo/pal+easy",
                          help="the --floor rule, one of each selector's (default %(default)s)")
    evaluate.add_argument("--stragglers", nargs="*", type=float, default=[], metavar="RATIO",
                          help="also run the best rule and every selector with straggler "
                          "migration (online belief; BeliefOptions.straggler_ratio = RATIO; "
                          "rows '<entry> + stragglers R', pooled per R with --pool)")
    evaluate.add_argument("--run-cache", metavar="DIR",
                          help="reuse finished runs kept in DIR (keyed by rule or selector, "
                          "episode hash and the code's fingerprint) and keep new ones there")
    evaluate.add_argument("--output", help="results JSON to write")
    evaluate.add_argument("--pool", metavar="LABEL", help="the --selector files are seeds of one "
                          "recipe: add their geomean and IQM over (seed, trace) scores, with "
                          "intervals that resample whole test traces")
    evaluate.add_argument("--field", help="comma-separated ORDER/PLACEMENT rules the best and "
                          "the hindsight best are chosen from (default: the task's field)")
    evaluate.add_argument("--test-task", help="take the test episodes' world (cluster, "
                          "preset, profile) from this task of the suite, e.g. cross-cluster; "
                          "the field and the validation stay --task's")
    return parser


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


def _horizon(text: str) -> int | None:
    """``--H``: an integer >= 0, or ``end`` (None: to the episode's end)."""
    if text == "end":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer >= 0 or 'end', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"an integer >= 0 or 'end', got {text!r}")
    return value


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
