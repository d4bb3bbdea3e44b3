"""Which heuristic combination wins in each regime, and by how much (a Markdown table).

Reads one ``evaluate.py --best-heuristic --json FILE`` per regime (chosen on the regime's
validation traces, measured on its test traces; layout in
:mod:`agents.evaluation.best_output`), the regime named by the file name before its first dot
(``wide.best.json`` -> ``wide``), and prints per regime:

- the winner on validation and its geomean average JCT;
- the runner-up and its ratio to the winner (how clear the win is);
- the **reference regime's** winner (``--reference``, default ``base``), measured on this
  regime's validation and test traces, over this regime's winner: what choosing on the
  reference regime alone costs here (> 1: the regime's own choice is better);
- the best combination on the test traces (hindsight, no contender) and the chosen winner's
  ratio to it;
- unfinished episodes of the winner (validation / test).

Ratios are of geomeans over the split's episodes (the selection rule's own figure)::

    for r in base wide ...; do python evaluate.py --best-heuristic ... \\
        --trace-set regimes/$r.json --json regimes/$r.best.json; done
    python benchmarks/regime_winners.py regimes/*.best.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HOURS = 3600.0


def _rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["label"]: row for row in data["rows"]}


def _ranked(rows: dict[str, dict[str, Any]], key: str) -> list[str]:
    return sorted(rows, key=lambda label: (rows[label][key], label))


def regime_line(name: str, data: dict[str, Any], reference: str) -> str:
    """One Markdown row (columns: module docstring)."""
    rows = _rows(data)
    winner = data["winner"]
    select, evaluate = "selection_geomean_avg_jct_s", "evaluation_geomean_avg_jct_s"
    ranked = _ranked(rows, select)
    runner_up = ranked[1] if ranked[0] == winner else ranked[0]
    best_test = _ranked(rows, evaluate)[0]
    win = rows[winner]
    cells = [
        f"`{name}`", f"`{winner}`", f"{win[select] / HOURS:.3f}",
        f"`{runner_up}` {rows[runner_up][select] / win[select]:.3f}",
    ]
    if reference in rows:
        ref = rows[reference]
        cells.append(f"{ref[select] / win[select]:.3f} / {ref[evaluate] / win[evaluate]:.3f}")
    else:
        cells.append("(not in the field)")
    cells += [f"`{best_test}` {win[evaluate] / rows[best_test][evaluate]:.3f}",
              f"{win['selection_unfinished']}/{win['evaluation_unfinished']}"]
    return "| " + " | ".join(cells) + " |"


def report(files: list[Path], reference_regime: str) -> str:
    """The Markdown table of every file (regime order: as given)."""
    loaded = {path.name.split(".")[0]: json.loads(path.read_text()) for path in files}
    if reference_regime not in loaded:
        raise ValueError(f"no file for the reference regime {reference_regime!r} "
                         f"(got {sorted(loaded)})")
    reference = loaded[reference_regime]["winner"]
    header = (f"| regime | winner on validation | geomean (h) | runner-up, / winner | "
              f"`{reference}` ({reference_regime}'s winner) / winner, validation / test | "
              "best on test, winner / it | winner unfinished (val/test) |")
    lines = [header, "|" + "---|" * 7]
    lines += [regime_line(name, data, reference) for name, data in loaded.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_files", type=Path, nargs="+",
                        help="evaluate.py --best-heuristic --json files, REGIME.*.json")
    parser.add_argument("--reference", default="base",
                        help="regime whose winner every regime is compared with (default base)")
    args = parser.parse_args(argv)
    try:
        print(report(args.json_files, args.reference))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
