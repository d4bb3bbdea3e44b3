"""The command line of ``python -m agents.selection`` (:mod:`agents.selection.cli`): its
subcommands, their options and the options' own checks."""

from __future__ import annotations

import argparse

from agents.selection.known_jobs import ARRIVALS
from agents.selection.runs import DEFAULT_SUITE, DEFAULT_TASK
from palgym.rule_sets import ORDER_PLACEMENT_RULE_SET, ORDER_PLACEMENT_RULES

DESCRIPTION = ("train fits a linear rule selector by the cross-entropy method on the training "
               "episodes, kept by its validation objective; evaluate chooses the field's best "
               "heuristic on validation and measures it, the field's per-trace hindsight best "
               "and the selectors on test; distill fits a selector to the rollout search's "
               "choices; floor adds an aging floor to a selector file")
"""``--help``'s description (the module :mod:`agents.selection.cli` says more)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agents.selection",
                                     description=DESCRIPTION)
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


__all__ = ["build_parser"]
