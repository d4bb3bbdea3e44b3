"""How far the best heuristic chosen on validation is from the best one per trace in hindsight.

Reads the ``--json`` file of ``evaluate.py --best-heuristic`` (every combination's per-episode
average JCT on the selection and the evaluation split: ``selection_episodes`` /
``evaluation_episodes``, layout in :mod:`agents.evaluation.best_output`) and prints, for each
split and trace, the chosen combination's average JCT, the combination that is best on that
trace alone and its ratio to the choice, then the geomean of those ratios over the traces.

The per-trace best is picked *with hindsight, on the trace it is measured on*: it is no
contender and no honest result, only a reference for how much choosing among the field's
heuristics could gain at most (an oracle selector over the field, one choice per trace). On the
selection split it says how close the choice already is to per-trace selection; on the
evaluation split, how much a scheduler that recognised each trace's best heuristic could gain
over the honest choice. An episode that did not finish (``truncated``) is never picked as the
per-trace best and is counted in the output, with a warning. Episodes are matched by trace and
seed; a trace's ratio is the geomean over its seeds.

    python evaluate.py --best-heuristic ... --json best.json
    python benchmarks/hindsight.py best.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SPLITS = (("selection", "selection_episodes"), ("evaluation", "evaluation_episodes"))


def per_trace(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, dict[int, float]]]:
    """{trace: {label: {seed: avg JCT (s)}}}, finished episodes only (an unfinished one is left
    out of its trace's candidates)."""
    table: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        for episode in row[key]:
            if not episode["truncated"]:
                table[episode["trace"]][row["label"]][episode["seed"]] = episode["avg_jct_s"]
    return table


def geomean_ratio(values: dict[int, float], reference: dict[int, float]) -> float:
    """Geomean over seeds of values / reference; ``inf`` unless both have every seed of the
    reference (a combination that left one of them unfinished is never the best)."""
    if set(values) != set(reference):
        return math.inf
    return math.exp(sum(math.log(values[s] / reference[s]) for s in reference) / len(reference))


def report(data: dict[str, Any]) -> tuple[str, int]:
    """The printed table and the number of unfinished episodes seen."""
    winner = data["winner"]
    rows = data["rows"]
    unfinished = sum(e["truncated"] for row in rows for _, key in SPLITS for e in row[key])
    lines = [f"chosen on the selection split: {winner}"]
    for name, key in SPLITS:
        table = per_trace(rows, key)
        ratios = []
        lines.append(f"{name} split: trace, {winner} avg JCT (h), best in hindsight, its avg "
                     "JCT (h), ratio")
        for trace in sorted(table):
            labels = table[trace]
            if winner not in labels:
                lines.append(f"  {trace}: {winner} did not finish; no ratio")
                continue
            best = min(labels, key=lambda label: (geomean_ratio(labels[label], labels[winner]),
                                                  label))
            ratio = geomean_ratio(labels[best], labels[winner])
            ratios.append(ratio)
            mean = sum(labels[winner].values()) / len(labels[winner]) / 3600
            best_mean = sum(labels[best].values()) / len(labels[best]) / 3600
            lines.append(f"  {trace:20s} {mean:9.3f}  {best:24s} {best_mean:9.3f}  {ratio:.3f}")
        if ratios:
            geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
            lines.append(f"  geomean over {len(ratios)} traces of best-in-hindsight / "
                         f"{winner}: {geomean:.3f}")
    lines.append(f"unfinished episodes in the file: {unfinished}")
    return "\n".join(lines), unfinished


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file", type=Path, help="evaluate.py --best-heuristic --json FILE")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.json_file.read_text())
        text, unfinished = report(data)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: {args.json_file}: not a --best-heuristic JSON file ({error!r})",
              file=sys.stderr)
        return 2
    print(text)
    if unfinished:
        print(f"warning: {unfinished} unfinished episode(s) were left out of the per-trace "
              "choices", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
