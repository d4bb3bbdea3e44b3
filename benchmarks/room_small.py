"""The room on the small-instance suite (palgym/data/small): per split, the validation-chosen
best heuristic, the hindsight search and the lower bound, each as a ratio to the proven optimum.

The field is every ``fifo``/``srtf``/``srsf`` x ``pal``/``pm-first``/``packed-non-sticky`` x no
/ first-fit / EASY backfilling (27 combinations); ``best`` is the one of lowest geomean average
JCT over the validation split's instances, then measured on each split. Ratios are geomeans
over the proven instances of a split (unproven ones are counted and left out), with a 95%
percentile bootstrap interval over instances (10,000 resamples, seed 0).

    python benchmarks/room_small.py [--selector FILE ...] [--heuristic ORDER/PLACEMENT ...]
        [--online-search] [--suite FILE]

``--selector``: also each selector file (a rule selector of ``agents.selection``, run with its
aging floor, or a learned value plus cut search, ``palgym-value-search/1``; either through
:func:`palgym.rule_selection.run_selected_episode`) as a ratio to the optimum, and the
share of the gap between ``best`` and the optimum that it closes, (best - selector) / (best -
optimum) of the geomeans, per split; files given together are also pooled (geomean over
(selector, instance)). ``--heuristic``: the same for heuristics run by
:func:`palgym.run_episode`, an order given as ``MODULE:CLASS`` too (a trained priority order of
:mod:`agents.priority.pretrained`); given together, also pooled. ``--online-search``: also
the known-jobs rollout search of ``benchmarks/online_search.py`` (its default field and
(2, 96 h) base; it sees only the jobs submitted by each decision) as a ratio to the optimum
with the gap it closes; its base is the ``--heuristic``
``agents.priority.pretrained:ResponseRatio/pal+backfill+age=96h:fifo/pal+easy``.
``--suite``: another ``palgym-small/1`` file (default: the shipped one; a bad file exits 2
naming it).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

from agents.selection.entry import load_selector
from palgym import run_episode
from palgym.errors import ConfigError
from palgym.headroom.small import small_instance
from palgym.headroom.suite import read_suite, suite_path
from palgym.simulate import Episode


def interval(ratios: list[float], resamples: int = 10_000) -> tuple[float, float, float]:
    """Geomean of ``ratios`` and its 95% percentile bootstrap interval (over instances); NaNs
    for no ratio (a split without a proven instance)."""
    if not ratios:
        return math.nan, math.nan, math.nan
    logs = np.log(np.asarray(ratios))
    rng = np.random.default_rng(0)
    means = logs[rng.integers(0, logs.size, size=(resamples, logs.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return math.exp(logs.mean()), math.exp(low), math.exp(high)


FIELD: tuple[tuple[str, str], ...] = tuple(
    (o, p + s) for o in ("fifo", "srtf", "srsf") for p in ("pal", "pm-first", "packed-non-sticky")
    for s in ("", "+backfill", "+easy"))
"""The field: (queue order, placement) of each of the 27 combinations."""
SPLITS = ("train", "validation", "test", "all")
"""The rows of the main table (``all``: every instance)."""
Interval = tuple[float, float, float]
"""A geomean ratio and its 95% interval: (point, low, high)."""


def field_averages(episodes: dict[int, Episode]) -> dict[tuple[int, str, str], float]:
    """Average JCT (s) of each field combination on each instance: by (seed, order,
    placement)."""
    return {(seed, o, p): run_episode(ep, p, o).metrics.avg_jct_s
            for seed, ep in episodes.items() for o, p in FIELD}


def choose_best(rows: list[dict], avg: dict[tuple[int, str, str], float],
                where: str = "the suite") -> tuple[str, str]:
    """The (order, placement) of lowest geomean average JCT over the validation split's
    instances (ties: the first by name).

    Raises:
        ConfigError: naming ``where`` (the suite file) when it has no validation instance.
    """
    validation = [item["seed"] for item in rows if item["split"] == "validation"]
    if not validation:
        raise ConfigError(f"{where}: no instance of split 'validation' to choose best on")
    score = {(o, p): np.mean([math.log(avg[s, o, p]) for s in validation]) for o, p in FIELD}
    return min(score, key=lambda k: (score[k], k))


def split_rows(rows: list[dict], best_avg: dict[int, float]
               ) -> list[tuple[str, int, int, list[Interval]]]:
    """Per split of :data:`SPLITS`: (split, proven instances, instances, [best / optimum,
    search / optimum, bound / optimum]), geomeans over the proven instances with their
    intervals (:func:`interval`); ``best_avg``: best's average JCT (s) by seed."""
    found = []
    for split in SPLITS:
        chosen = [item for item in rows if split == "all" or item["split"] == split]
        proven = [item for item in chosen if item["status"] == "optimal"]
        cells = [interval([ratio(i) / i["optimum_avg_jct_s"] for i in proven])
                 for ratio in (lambda i: best_avg[i["seed"]],
                               lambda i: i["search_avg_jct_s"],
                               lambda i: i["lower_bound_avg_jct_s"])]
        found.append((split, len(proven), len(chosen), cells))
    return found


def gap_row(entries: list[dict[int, float]], proven: list[dict], best_avg: dict[int, float]
            ) -> tuple[Interval, float]:
    """An entry's ratio to the optimum over the ``proven`` instances (geomean over (entry,
    instance) when ``entries`` holds several, each an average JCT (s) by seed) and the gap it
    closes, (b - g) / (b - 1), with ``b`` best's geomean ratio to the optimum over the same
    instances and ``g`` the entry's (NaN when b <= 1: no gap to close; all NaN for no proven
    instance)."""
    if not proven:
        return (math.nan, math.nan, math.nan), math.nan
    ratios = interval([entry[i["seed"]] / i["optimum_avg_jct_s"]
                       for entry in entries for i in proven])
    g = ratios[0]
    b = math.exp(np.mean([math.log(best_avg[i["seed"]] / i["optimum_avg_jct_s"])
                          for i in proven]))
    closed = (b - g) / (b - 1.0) if b > 1.0 else float("nan")
    return ratios, closed


def selector_rows(selectors: dict[str, Any], rows: list[dict],
                  episodes: dict[int, Episode], best_avg: dict[int, float]
                  ) -> list[tuple[str, str, Interval, float]]:
    """Each selector's (by file, run with its aging floor) and, for several, their pooled ratio
    to the optimum per split (validation, test) and the gap it closes (:func:`gap_row`):
    (label, split, ratio, gap closed)."""
    from palgym.rule_selection import run_selected_episode

    avg = {}
    for path, selector in selectors.items():
        avg[path] = {seed: run_selected_episode(ep, selector.rules, selector
                                                ).result.metrics.avg_jct_s
                     for seed, ep in episodes.items()}
        print(f"{path}: {len(episodes)} instances done", file=sys.stderr, flush=True)
    return entry_rows(avg, rows, best_avg, "files")


def heuristic_averages(specs: list[str], episodes: dict[int, Episode]
                       ) -> dict[str, dict[int, float]]:
    """Average JCT (s) by seed of each ``ORDER/PLACEMENT`` spec (the order may be a
    ``MODULE:CLASS``, e.g. a trained priority order of ``agents.priority.pretrained``).

    Raises:
        ConfigError: for a spec without ``/`` or a name palgym does not know.
    """
    out = {}
    for spec in specs:
        order, sep, placement = spec.partition("/")
        if not sep:
            raise ConfigError(f"--heuristic {spec!r}: expected ORDER/PLACEMENT")
        out[spec] = {seed: run_episode(ep, placement, order).metrics.avg_jct_s
                     for seed, ep in episodes.items()}
    return out


def online_search_averages(episodes: dict[int, Episode]) -> dict[str, dict[int, float]]:
    """Average JCT (s) by seed of the known-jobs rollout search of ``online_search.py``
    (its default field and base), under one label."""
    from pathlib import Path

    from agents.selection.search import RolloutSearch
    from palgym.rule_selection import run_selected_episode

    sys.path.insert(0, str(Path(__file__).parent))
    from online_search import base_member, field

    exponents = [1.5, 2.0, 3.0]
    rules = field(exponents)
    base = base_member(rules, exponents, 2.0, 96.0)
    return {"online search (known jobs)": {
        seed: run_selected_episode(ep, rules, RolloutSearch(rules, base, H=None,
                                                            arrivals="known")
                                   ).result.metrics.avg_jct_s
        for seed, ep in episodes.items()}}


def entry_rows(avg: dict[str, dict[int, float]], rows: list[dict], best_avg: dict[int, float],
               what: str = "entries") -> list[tuple[str, str, Interval, float]]:
    """Each entry's (average JCT by seed, by label) and, for several, their pooled ratio to
    the optimum per split (validation, test) and the gap it closes (:func:`gap_row`):
    (label, split, ratio, gap closed)."""
    labels = list(avg)
    groups = [[p] for p in labels] + ([labels] if len(labels) > 1 else [])
    found = []
    for group in groups:
        label = group[0] if len(group) == 1 else f"pooled ({len(group)} {what})"
        for split in ("validation", "test"):
            proven = [i for i in rows if i["split"] == split and i["status"] == "optimal"]
            ratios, closed = gap_row([avg[p] for p in group], proven, best_avg)
            found.append((label, split, ratios, closed))
    return found


def interval_text(ratios: Interval) -> str:
    """``1.0630 [1.0250, 1.1110]``."""
    return f"{ratios[0]:.4f} [{ratios[1]:.4f}, {ratios[2]:.4f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selector", nargs="*", default=[], metavar="FILE",
                        help="rule selector files to measure against the optimum")
    parser.add_argument("--heuristic", nargs="*", default=[], metavar="ORDER/PLACEMENT",
                        help="heuristics (a MODULE:CLASS order too) to measure against it")
    parser.add_argument("--online-search", action="store_true",
                        help="also the known-jobs rollout search of online_search.py")
    parser.add_argument("--suite", default=None, metavar="FILE",
                        help="a palgym-small/1 suite file (default: the shipped one)")
    args = parser.parse_args(argv)
    try:
        selectors = {path: load_selector(f"selector:{path}").select for path in args.selector}
        path = args.suite if args.suite is not None else suite_path()
        suite = read_suite(path)
        rows = suite["instances"]
        episodes = {item["seed"]: small_instance(item["seed"]).episode() for item in rows}
        avg = field_averages(episodes)
        print(f"the field of {len(FIELD)}: {len(episodes)} instances done", file=sys.stderr,
              flush=True)
        best = choose_best(rows, avg, str(path))
        heuristics = heuristic_averages(args.heuristic, episodes)
        online = online_search_averages(episodes) if args.online_search else {}
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    best_avg = {item["seed"]: avg[item["seed"], best[0], best[1]] for item in rows}
    print(f"validation-chosen best of {len(FIELD)}: {best[0]}/{best[1]}")
    print(f"{'split':<11} {'proven':>8}  {'best / optimum':>26}  {'search / optimum':>26}  "
          f"{'bound / optimum':>26}")
    for split, proven, chosen, cells in split_rows(rows, best_avg):
        print(f"{split:<11} {proven:>3} of {chosen:<3}  " + "  ".join(
            f"{interval_text(c):>26}" for c in cells))
    unproven = [item["name"] for item in rows if item["status"] != "optimal"]
    if args.selector:
        print(f"{'selector':<40} {'split':<11} {'entry / optimum':>26}  {'gap closed':>10}")
        for label, split, ratios, closed in selector_rows(selectors, rows, episodes, best_avg):
            print(f"{label[-40:]:<40} {split:<11} {interval_text(ratios):>26}  "
                  f"{closed:>10.2f}")
    if heuristics:
        print(f"{'heuristic':<40} {'split':<11} {'entry / optimum':>26}  {'gap closed':>10}")
        for label, split, ratios, closed in entry_rows(heuristics, rows, best_avg):
            print(f"{label[-40:]:<40} {split:<11} {interval_text(ratios):>26}  "
                  f"{closed:>10.2f}")
    if online:
        print(f"{'online search (not the hindsight one)':<40} {'split':<11} "
              f"{'entry / optimum':>26}  {'gap closed':>10}")
    for label, split, ratios, closed in entry_rows(online, rows, best_avg):
        print(f"{label[-40:]:<40} {split:<11} {interval_text(ratios):>26}  {closed:>10.2f}")
    if unproven:
        print(f"warning: {len(unproven)} instances without a proven optimum are left out of the "
              f"ratios: {', '.join(unproven)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
