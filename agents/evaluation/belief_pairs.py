"""Contenders that decide on other beliefs, paired with a side-by-side run on the same episodes.

A side-by-side run (``evaluate.py --agent ... --json``) shares one belief among its
contenders: the first learned agent's (e.g. ``belief: online``), so its PAL is PAL with that
belief. PAL with another belief (``stale``, ``oracle``) runs in the heuristic table
(``evaluate.py --belief B --seed S --json``), where ``--seed`` is the episode seed. The env
draws its episode seed from the reset seed, so the table reproduces the side-by-side episode
``(trace, reset seed s)`` when ``--seed`` is that episode's ``episode_seed`` (in the
side-by-side JSON's ``episodes``); the episode hash covers trace, profile, cluster, config and
seed but not the belief (the engine runs the truth), so equal hashes mean identical episodes.
The config includes ``max_rounds``: the env's default (100,000) is not the preset's
(1,000,000), so the side-by-side contenders need ``max_rounds: 1000000`` for the hashes to agree.

:func:`pair` joins them by episode hash (every side-by-side episode must be found in the
tables, else an error names it), checks that a contender both runs hold (the side-by-side
run's own belief in a table, and the belief-free Packed-Sticky under every belief) has the
same average JCT in both (parity: the table simulates directly, the side-by-side run goes
through the env), and :func:`ratio_table` gives each contender's geomean ratio of average JCT
to each reference with a trace-level 95% percentile bootstrap interval
(:func:`palgym.bench.stats.bootstrap_geomean`, ``groups`` = traces). Unfinished episodes
are counted and shown (their censored average JCT is used, as the side-by-side run does).

Use::

    python -m agents.evaluation.belief_pairs side-0.json side-1.json \\
        --table stale=/tmp/t-stale-*.json \\
        --table oracle=/tmp/t-oracle-*.json --references pal@stale pal@online
"""

from __future__ import annotations

import argparse
import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from palgym.bench.stats import bootstrap_geomean
from palgym.errors import ConfigError

PARITY_POLICY = "packed-sticky"
"""A belief-free heuristic both runs contain: its average JCT must agree per episode."""


@dataclass(frozen=True)
class Paired:
    """Every contender's censored average JCT (s) on the side-by-side episodes.

    Attributes:
        traces: (E,) trace name of each episode (trace-major, then seed).
        hashes: (E,) episode hashes.
        avg_jct_s: label -> float64 (E,); table contenders are ``POLICY@BELIEF``, the
            side-by-side ones keep their label (its heuristics get ``@BELIEF`` of the run).
        unfinished: label -> episodes not finished (censored JCT used).
    """

    traces: tuple[str, ...]
    hashes: tuple[str, ...]
    avg_jct_s: Mapping[str, np.ndarray]
    unfinished: Mapping[str, int]


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not a readable JSON file ({error})") from error
    if "results" not in data:
        raise ConfigError(f"{path}: no 'results' field (not an evaluate.py --json output)")
    return data


def _side_belief(side: Mapping[str, Any]) -> str:
    learned = [p for p in side["policies"] if p["kind"] == "learned"]
    kwargs = (learned or side["policies"])[0]["env_kwargs"]
    return str(kwargs.get("belief", "oracle"))


def _table_rows(tables: Mapping[str, Sequence[Path]], policies: Sequence[str] | None
                ) -> dict[tuple[str, str], dict[str, Any]]:
    """(episode hash, ``POLICY@BELIEF``) -> table result row (only ``policies``, if given)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for belief, paths in tables.items():
        for path in paths:
            for row in _read(path)["results"]:
                for field in ("episode_hash", "policy", "censored_avg_jct_s", "truncated"):
                    if field not in row:
                        raise ConfigError(f"{path}: a result row lacks {field!r}")
                if policies is None or row["policy"] in policies:
                    rows[(row["episode_hash"], f"{row['policy']}@{belief}")] = row
    return rows


def _merged(side_paths: Sequence[Path]) -> dict[str, Any]:
    """Side-by-side JSONs of the same contenders and belief (e.g. one per seed) as one.

    Raises:
        ConfigError: for none, other contenders or another belief than the first file's.
    """
    if not side_paths:
        raise ConfigError("no side-by-side JSON given")
    runs = [_read(path) for path in side_paths]
    first = runs[0]
    labels = [p["label"] for p in first["policies"]]
    for path, run in zip(side_paths[1:], runs[1:], strict=True):
        if [p["label"] for p in run["policies"]] != labels or _side_belief(run) != _side_belief(
                first):
            raise ConfigError(f"{path}: other contenders or belief than {side_paths[0]}")
    return {"policies": first["policies"],
            "episodes": [e for run in runs for e in run["episodes"]],
            "results": [r for run in runs for r in run["results"]]}


def pair(side_paths: Sequence[Path], tables: Mapping[str, Sequence[Path]],
         rtol: float = 1e-9, table_policies: Sequence[str] | None = None) -> Paired:
    """Join side-by-side JSONs and heuristic-table JSONs on the episode hash.

    Args:
        side_paths: ``evaluate.py --agent ... --json`` outputs (one run, or one per seed).
        tables: belief -> ``evaluate.py --belief BELIEF --seed S --json`` outputs.
        rtol: relative tolerance of the parity checks.
        table_policies: the table policies to join (default: all).

    Raises:
        ConfigError: for a side-by-side episode missing from a table contender, or a
            contender of both runs whose average JCTs differ.
    """
    side = _merged(side_paths)
    episodes = side["episodes"]
    hashes = tuple(str(e["episode_hash"]) for e in episodes)
    belief = _side_belief(side)
    position = {h: i for i, h in enumerate(hashes)}
    values: dict[str, np.ndarray] = {}
    unfinished: dict[str, int] = {}
    for row in side["results"]:
        label = row["policy"] + (f"@{belief}" if row["kind"] == "heuristic" else "")
        values.setdefault(label, np.full(len(hashes), np.nan))[position[row["episode_hash"]]] = (
            float(row["censored_avg_jct_s"]))
        unfinished[label] = unfinished.get(label, 0) + int(bool(row["truncated"]))
    table = _table_rows(tables, table_policies)
    for label in sorted({key[1] for key in table}):
        jct = np.full(len(hashes), np.nan)
        for i, (h, episode) in enumerate(zip(hashes, episodes, strict=True)):
            row = table.get((h, label))
            if row is None:
                raise ConfigError(f"{label}: no table row for {episode['trace']} seed "
                                  f"{episode['seed']} (episode hash {h}; run the table with "
                                  f"--seed {episode['episode_seed']}, and the env's "
                                  "max_rounds the preset's)")
            jct[i] = float(row["censored_avg_jct_s"])
        if label in values:  # the same contender in both runs: a parity check
            _check_parity(label, values[label], jct, rtol)
            continue
        values[label] = jct
        unfinished[label] = sum(int(bool(table[(h, label)]["truncated"])) for h in hashes)
    for other in tables:  # the belief-free baseline, run under every belief
        name = f"{PARITY_POLICY}@{other}"
        if other != belief and name in values and f"{PARITY_POLICY}@{belief}" in values:
            _check_parity(name, values[f"{PARITY_POLICY}@{belief}"], values.pop(name), rtol)
            unfinished.pop(name, None)
    return Paired(tuple(str(e["trace"]) for e in episodes), hashes, values, unfinished)


def _check_parity(label: str, side: np.ndarray, table: np.ndarray, rtol: float) -> None:
    if not np.allclose(side, table, rtol=rtol, atol=0.0):
        raise ConfigError(f"{label}: average JCT differs between the side-by-side run and the "
                          f"heuristic table ({side} vs {table} s): the episodes are not "
                          "identical")


def ratio_table(paired: Paired, references: Sequence[str],
                contenders: Sequence[str] | None = None, resamples: int = 10_000,
                seed: int = 0) -> list[dict[str, Any]]:
    """Per contender: mean average JCT per trace (h) and the geomean ratio to each reference
    with its trace-level 95% bootstrap interval (``resamples`` resamples, ``seed``).

    Args:
        paired: the joined runs.
        references: labels the ratios are taken to.
        contenders: labels to report, in order (default: all).

    Raises:
        ConfigError: for a reference or contender that is not in ``paired``.
    """
    for kind, labels in (("reference", references), ("contender", contenders or [])):
        for label in labels:
            if label not in paired.avg_jct_s:
                raise ConfigError(f"{kind} {label!r}: not among the joined contenders "
                                  f"({', '.join(paired.avg_jct_s)})")
    traces = list(dict.fromkeys(paired.traces))
    where = np.array(paired.traces)
    rows = []
    for label in contenders or list(paired.avg_jct_s):
        jct = paired.avg_jct_s[label]
        row: dict[str, Any] = {"policy": label, "unfinished": paired.unfinished.get(label, 0)}
        row.update({t: float(jct[where == t].mean()) / 3600.0 for t in traces})
        for reference in references:
            summary = bootstrap_geomean(jct / paired.avg_jct_s[reference], groups=paired.traces,
                                        num_resamples=resamples, seed=seed)
            row[f"/ {reference}"] = (summary.geomean, summary.ci_low, summary.ci_high)
        rows.append(row)
    return rows


def format_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a Markdown table (hours to 3 decimals, ratios with [low, high])."""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = []
        for column in columns:
            value = row[column]
            if isinstance(value, tuple) and np.isnan(value[1]):  # one trace: no interval
                cells.append(f"{value[0]:.3f} [no interval]")
            elif isinstance(value, tuple):
                cells.append(f"{value[0]:.3f} [{value[1]:.3f}, {value[2]:.3f}]")
            elif isinstance(value, float):
                cells.append(f"{value:.3f}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line (see the module docstring).

    Bad input (a ``--table`` spec without ``=`` or matching no file, an unreadable JSON, an
    unknown reference) ends with a one-line error naming it and exit status 2.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("side_by_side", type=Path, nargs="+", metavar="SIDE_BY_SIDE_JSON",
                        help="evaluate.py --agent ... --json outputs (one per seed)")
    parser.add_argument("--table", action="append", default=[], metavar="BELIEF=GLOB",
                        help="heuristic-table JSONs of one belief (repeatable)")
    parser.add_argument("--references", nargs="+", default=["pal@stale"], metavar="LABEL",
                        help="POLICY@BELIEF labels the ratios are taken to (default: "
                             "pal@stale; the labels are listed if one is unknown)")
    parser.add_argument("--table-policies", nargs="+", default=None,
                        help="table policies to join (default: all)")
    parser.add_argument("--contenders", nargs="+", default=None,
                        help="labels to report, in order (default: all)")
    args = parser.parse_args(argv)
    try:
        tables: dict[str, list[Path]] = {}
        for spec in args.table:
            belief, sep, pattern = spec.partition("=")
            paths = sorted(Path(p) for p in glob.glob(pattern))
            if not sep or not paths:
                raise ConfigError(f"--table {spec!r}: expected BELIEF=GLOB matching JSON files")
            tables.setdefault(belief, []).extend(paths)
        paired = pair(args.side_by_side, tables, table_policies=args.table_policies)
        print(format_rows(ratio_table(paired, args.references, args.contenders)))
    except ConfigError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
