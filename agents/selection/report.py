"""The table and the results JSON of ``python -m agents.selection evaluate``: every
entry's geomean ratio of the censored average JCT to the validation-chosen best on the test
episodes (95% bootstrap interval over traces, resampled within strata), on validation, and to
the per-trace hindsight best; unfinished jobs and the selector's asks and switches; per
stratum; and the pooled seeds of a recipe (geomean and IQM over (seed, trace) scores,
intervals that resample whole test traces)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.selection.runs import (
    CENSORED,
    LabelledEpisode,
    geomean_ratio,
    interval,
    no_nan,
    pooled_scores,
)

Entry = tuple[str, "np.ndarray | None", np.ndarray]
"""(label, its validation runs or None, its test runs): :func:`run_many` rows."""


@dataclass(frozen=True)
class PoolGroup:
    """Entries that are seeds of one recipe, pooled under ``label``; ``key`` names what they
    share (written beside the pooled scores) and ``kind`` the JSON list they go to
    (``pooled``, ``pooled_floors``, ``pooled_stragglers``)."""

    label: str
    names: list[str]
    kind: str = "pooled"
    key: dict[str, Any] = field(default_factory=dict)


def _with_interval(values: Sequence[float]) -> str:
    """``point [low, high]``, or ``point (no interval)`` when the interval is undefined (one
    test trace)."""
    point, low, high = values
    return (f"{point:.3f} (no interval)" if math.isnan(low)
            else f"{point:.3f} [{low:.3f}, {high:.3f}]")


def report(entries: Sequence[Entry], best_rule: str, field_rules: Sequence[str],
           valid_eps: Sequence[LabelledEpisode], test_eps: Sequence[LabelledEpisode],
           groups: Sequence[PoolGroup], header: dict[str, Any], output: str | None) -> None:
    """Print the table (stdout; a warning per entry with unfinished jobs on stderr) and write
    ``output`` (JSON, atomically) when given.

    Args:
        entries: the first is the validation-chosen best (the reference of every ratio), the
            last the per-trace hindsight best (no validation runs).
        best_rule: its name.
        field_rules: the field it was chosen from.
        valid_eps, test_eps: the episodes the runs are of, in their order.
        groups: the pooled recipes (an entry label per seed).
        header: more keys of the JSON (task, test task).
        output: the JSON path, or None.
    """
    jct = CENSORED
    test = entries[0][2]
    strata = [e.stratum for e in test_eps]
    pad = max(36, *(len(label) for label, _, _ in entries))
    print(f"{'entry':{pad}s} {'valid / best':>12s} {'test / best [95% CI]':>26s} "
          f"{'/ hindsight':>11s} {'unfin v+t':>10s} {'asks':>8s} {'switches':>8s}")
    oracle = entries[-1][2]  # the hindsight best: the last entry
    rows: list[dict[str, Any]] = []
    for label, valid_runs, runs in entries:
        point, low, high = interval(runs[:, jct] / test[:, jct], strata)
        on_valid = (math.nan if valid_runs is None
                    else geomean_ratio(valid_runs[:, jct], entries[0][1][:, jct]))
        unfinished = int(runs[:, 1].sum()) + (0 if valid_runs is None
                                              else int(valid_runs[:, 1].sum()))
        choices, switches = int(runs[:, 3].sum()), int(runs[:, 4].sum())
        versus_oracle = geomean_ratio(runs[:, jct], oracle[:, jct])
        shown = "(no interval)" if math.isnan(low) else f"[{low:.3f}, {high:.3f}]"
        valid_text = "-" if math.isnan(on_valid) else f"{on_valid:.3f}"
        print(f"{label:{pad}s} {valid_text:>12s} {point:8.3f} {shown:16s}  "
              f"{versus_oracle:11.3f} {unfinished:10d} {choices:8d} {switches:8d}")
        per_stratum = {name: geomean_ratio(runs[mask, jct], test[mask, jct])
                       for name in sorted(set(strata))
                       for mask in [np.array([s == name for s in strata])]}
        rows.append({"entry": label, "validation_vs_best": on_valid,
                     "geomean_vs_best": point, "ci95": [low, high],
                     "geomean_vs_hindsight": versus_oracle, "unfinished_jobs": unfinished,
                     "unfinished_jobs_test": int(runs[:, 1].sum()),
                     "choices": choices, "switches": switches, "per_stratum": per_stratum,
                     "per_trace": {e.label: {"censored_avg_jct_s": float(j), "stratum": e.stratum}
                                   for e, j in zip(test_eps, runs[:, jct], strict=True)}})
        if unfinished:
            print(f"WARNING: {label} left {unfinished} jobs unfinished (validation and test); "
                  "their JCTs are censored at the episode's end", file=sys.stderr)
    names = sorted(set(strata))
    print("\ntest geomean / best per stratum")
    width = max(9, *(len(n) for n in names))
    print(" " * (pad + 1) + " ".join(f"{n:>{width}s}" for n in names))
    for row in rows:
        print(f"{row['entry']:{pad}s} " + " ".join(f"{row['per_stratum'][n]:{width}.3f}"
                                                for n in names))
    pooled: dict[str, Any] = {"pooled": None, "pooled_floors": [], "pooled_stragglers": []}
    by_label = {label: runs for label, _, runs in entries}
    for group in groups:
        ratios = np.array([by_label[name][:, jct] / test[:, jct] for name in group.names])
        found = {"entry": group.label, "seeds": len(group.names),
                 **pooled_scores(ratios, [e.label for e in test_eps])}
        if group.kind == "pooled":
            pooled["pooled"] = found
        else:
            pooled[group.kind].append({**group.key, **found})
        geo, iqm = (_with_interval(found[key]) for key in ("geomean", "iqm"))
        print(f"\n{group.label}, {len(group.names)} seeds x {len(test_eps)} test traces: "
              f"geomean / best {geo}, IQM / best {iqm} (95% CI, whole traces resampled with "
              "all their seeds)")
    if output:
        from palgym.io.atomic import atomic_write_text

        atomic_write_text(output, json.dumps(no_nan(
            {"best": best_rule, "field": list(field_rules), "rows": rows, **header,
             "validation_traces": [e.label for e in valid_eps],
             "test_traces": [e.label for e in test_eps], **pooled}),
            indent=1, allow_nan=False) + "\n")
        print(f"wrote {output}")
