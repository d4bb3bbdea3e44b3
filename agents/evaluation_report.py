"""Side-by-side results of learned agents and heuristics: paired summaries, text tables, CSV
and JSON (written atomically).

Per policy P: the geomean over episodes of ``avgJCT(P) / avgJCT(R)`` for R = the reference
(PAL by default) and R = the baseline (``packed-sticky`` by default), each with a percentile
bootstrap interval (:mod:`agents.compare`), the total number of invalid actions (0 for masked
agents; ``ppo`` / ``dqn`` rely on the env's fallback) and the mean episode return. Nothing here
depends on wall-clock time: equal inputs give byte-identical CSV and JSON.

Unfinished (truncated) episodes are shown, never hidden: every table has the completed /
total jobs, means use the censored average JCT (unfinished jobs counted up to the truncation
time, a lower bound; equal to the average JCT of a finished episode; PAL_MODEL section 6),
which the text marks ``>=``, ratios of a pair with an unfinished run censor both at the
pair's earlier end time, and a warning lists each unfinished episode. With a
single resampling unit (one episode, or one trace under ``--bootstrap-unit trace``) no
interval is printed (NaN in CSV, null in JSON).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.compare import RatioSummary, bootstrap_geomean, paired_ratios
from agents.evaluation import Contender
from agents.rollout import EpisodeOutcome
from agents.runs import plain
from palgym.errors import ConfigError
from palgym.io import atomic_write_text
from palgym.report_output import format_columns, without_negative_zero
from palgym.sim.metrics import censored_mean_at

EPISODE_COLUMNS: tuple[str, ...] = (
    "trace", "seed", "episode_seed", "episode_hash", "policy", "kind", "num_jobs",
    "num_completed", "truncated", "censored_avg_jct_s", "avg_jct_s", "p50_jct_s", "p99_jct_s",
    "makespan_s", "utilization_allocated", "utilization_effective", "num_invalid_actions",
    "episode_return", "num_steps", "ratio_vs_reference", "ratio_vs_baseline", "truncation_reason",
)
"""Columns of the per-episode CSV (times in s, utilizations as fractions; ``avg_jct_s`` ..
``makespan_s`` over completed jobs; ratios of censored averages)."""
SUMMARY_COLUMNS: tuple[str, ...] = (
    "policy", "kind", "algo", "num_episodes", "num_unfinished", "mean_avg_jct_s", "reference",
    "geomean_ratio_vs_reference", "ci_low_vs_reference", "ci_high_vs_reference", "baseline",
    "geomean_ratio_vs_baseline", "ci_low_vs_baseline", "ci_high_vs_baseline",
    "num_invalid_actions", "mean_episode_return", "model_size_bytes",
)
"""Columns of the summary CSV (one row per policy; ``mean_avg_jct_s``: mean censored average)."""
BOOTSTRAP_UNITS: tuple[str, ...] = ("episode", "trace")
_MISSING: dict[str, Any] = {"num_jobs": None, "num_completed": None}
_METRICS = ("num_jobs", "num_completed", "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s",
            "utilization_allocated", "utilization_effective", "num_invalid_actions")


@dataclass(frozen=True)
class PolicySummary:
    """One policy over every episode (see the module docstring)."""

    label: str
    kind: str
    algo: str | None
    num_episodes: int
    num_unfinished: int
    mean_avg_jct_s: float
    vs_reference: RatioSummary
    vs_baseline: RatioSummary
    num_invalid_actions: int
    mean_episode_return: float
    model_size_bytes: int | None


@dataclass(frozen=True)
class Comparison:
    """Everything an evaluation produced.

    Attributes:
        env_id: the env.
        contenders: the policies, in table order.
        outcomes: label -> outcomes, in episode order (trace-major, then seed).
        traces: ``{name: content hash}`` of the evaluation traces, in order.
        trace_source: where the traces came from (e.g. ``bundled:test`` or file paths).
        seeds: reset seeds.
        reference: policy of the ``vs reference`` ratios (PAL).
        baseline: policy of the ``vs baseline`` ratios.
        bootstrap: ``{"confidence", "resamples", "seed", "method"}``.
        summaries: label -> summary.
    """

    env_id: str
    contenders: tuple[Contender, ...]
    outcomes: Mapping[str, Sequence[EpisodeOutcome]]
    traces: Mapping[str, str]
    trace_source: str
    seeds: tuple[int, ...]
    reference: str
    baseline: str
    bootstrap: Mapping[str, Any]
    summaries: Mapping[str, PolicySummary]

    def source_trace(self, position: int) -> str:
        """The evaluation trace episode ``position`` comes from (episodes are trace-major;
        an episode's own ``trace`` names its job window when there is one)."""
        return list(self.traces)[position // len(self.seeds)]

    def avg_jct(self, label: str) -> np.ndarray:
        """float64 (E,): the policy's censored avg JCT (s) per episode (:func:`avg_jct_s`)."""
        return np.array([avg_jct_s(o) for o in self.outcomes[label]], dtype=np.float64)

    def unfinished(self) -> list[tuple[str, int, EpisodeOutcome]]:
        """``(label, seed, outcome)`` of every episode that did not finish, in table order."""
        return [(c.label, self.seeds[i % len(self.seeds)], o) for c in self.contenders
                for i, o in enumerate(self.outcomes[c.label]) if is_unfinished(o)]


def avg_jct_s(outcome: EpisodeOutcome) -> float:
    """The outcome's censored average JCT (s): its average JCT if it finished, else every job
    counted, an unfinished one up to the truncation time (a lower bound)."""
    return float(outcome.metrics.get("censored_avg_jct_s", outcome.metrics["avg_jct_s"]))


def comparable(a: EpisodeOutcome, b: EpisodeOutcome) -> tuple[float, float]:
    """Average JCTs of two outcomes of one episode, comparable: plain if both finished, else
    both censored at the earlier end time (see :func:`palgym.report.comparable_avg_jct_s`)."""
    if not (is_unfinished(a) or is_unfinished(b)) or not (a.submit_time_s and b.submit_time_s):
        return avg_jct_s(a), avg_jct_s(b)
    horizon = min(float(a.metrics["end_time_s"]), float(b.metrics["end_time_s"]))
    return tuple(censored_mean_at(np.asarray(o.submit_time_s),  # type: ignore[return-value]
                                  np.asarray(o.submit_time_s) + np.asarray(o.jct_s), horizon)
                 for o in (a, b))


def is_unfinished(outcome: EpisodeOutcome) -> bool:
    """True if some measured job did not complete in the episode."""
    metrics = outcome.metrics
    if "truncated" in metrics:
        return bool(metrics["truncated"])
    return bool(metrics.get("num_completed", 0) < metrics.get("num_jobs", 0))


def completed_text(outcome: EpisodeOutcome) -> str:
    """``completed/total`` measured jobs of the outcome."""
    return f"{outcome.metrics.get('num_completed', '?')}/{outcome.metrics.get('num_jobs', '?')}"


def summarise(
    env_id: str,
    contenders: Sequence[Contender],
    outcomes: Mapping[str, Sequence[EpisodeOutcome]],
    traces: Mapping[str, str],
    trace_source: str,
    seeds: Sequence[int],
    *,
    reference: str = "pal",
    baseline: str = "packed-sticky",
    confidence: float = 0.95,
    resamples: int = 10_000,
    bootstrap_seed: int = 0,
    bootstrap_unit: str = "episode",
) -> Comparison:
    """Pair every policy with the reference and the baseline on the same episodes.

    ``bootstrap_unit`` ``"episode"`` resamples episodes; ``"trace"`` resamples traces with all
    their seeds (cluster bootstrap, :func:`agents.compare.bootstrap_geomean` ``groups``).

    Raises:
        KeyError: if ``reference`` or ``baseline`` is not among the outcomes.
        ConfigError: for a non-positive avg JCT (an episode without completed jobs) or an
            unknown ``bootstrap_unit``.
    """
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ConfigError(f"bootstrap unit must be one of {list(BOOTSTRAP_UNITS)}")

    def ratio(label: str, other: str) -> RatioSummary:
        pairs = [comparable(a, b) for a, b in zip(outcomes[label], outcomes[other], strict=True)]
        values, base = [a for a, _ in pairs], [b for _, b in pairs]
        groups = [o.trace for o in outcomes[label]] if bootstrap_unit == "trace" else None
        return bootstrap_geomean(paired_ratios(np.array(values), np.array(base)),
                                 confidence=confidence, num_resamples=resamples,
                                 seed=bootstrap_seed, groups=groups)

    summaries = {}
    for c in contenders:
        runs = outcomes[c.label]
        summaries[c.label] = PolicySummary(
            label=c.label, kind=c.kind, algo=c.algo, num_episodes=len(runs),
            num_unfinished=sum(is_unfinished(o) for o in runs),
            mean_avg_jct_s=float(np.mean([avg_jct_s(o) for o in runs])),
            vs_reference=ratio(c.label, reference), vs_baseline=ratio(c.label, baseline),
            num_invalid_actions=int(sum(int(o.metrics["num_invalid_actions"]) for o in runs)),
            mean_episode_return=float(np.mean([o.episode_return for o in runs])),
            model_size_bytes=c.model_size_bytes,
        )
    bootstrap = {"confidence": confidence, "resamples": resamples, "seed": bootstrap_seed,
                 "unit": bootstrap_unit,
                 "method": "percentile (Efron & Tibshirani 1993, ch. 13), paired by episode"}
    return Comparison(env_id, tuple(contenders), outcomes, dict(traces), trace_source,
                      tuple(int(s) for s in seeds), reference, baseline, bootstrap, summaries)


def episode_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One dict per (trace, seed, policy) with :data:`EPISODE_COLUMNS`."""
    rows = []
    num_seeds = len(comparison.seeds)
    for c in comparison.contenders:
        for position, o in enumerate(comparison.outcomes[c.label]):
            avg = avg_jct_s(o)
            vs_reference = comparable(o, comparison.outcomes[comparison.reference][position])
            vs_baseline = comparable(o, comparison.outcomes[comparison.baseline][position])
            rows.append({
                "trace": o.trace, "seed": comparison.seeds[position % num_seeds],
                "episode_seed": o.seed, "episode_hash": o.episode_hash, "policy": c.label,
                "kind": c.kind, **{k: o.metrics.get(k, _MISSING.get(k)) for k in _METRICS},
                "truncated": is_unfinished(o), "censored_avg_jct_s": avg,
                "episode_return": o.episode_return, "num_steps": o.num_steps,
                "ratio_vs_reference": vs_reference[0] / vs_reference[1],
                "ratio_vs_baseline": vs_baseline[0] / vs_baseline[1],
                "truncation_reason": str(o.metrics.get("truncation_reason", "")),
            })
    return rows


def summary_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One dict per policy with :data:`SUMMARY_COLUMNS`."""
    rows = []
    for s in comparison.summaries.values():
        rows.append({
            "policy": s.label, "kind": s.kind, "algo": s.algo or "",
            "num_episodes": s.num_episodes, "num_unfinished": s.num_unfinished,
            "mean_avg_jct_s": s.mean_avg_jct_s,
            "reference": comparison.reference, "geomean_ratio_vs_reference": s.vs_reference.geomean,
            "ci_low_vs_reference": s.vs_reference.ci_low,
            "ci_high_vs_reference": s.vs_reference.ci_high, "baseline": comparison.baseline,
            "geomean_ratio_vs_baseline": s.vs_baseline.geomean,
            "ci_low_vs_baseline": s.vs_baseline.ci_low,
            "ci_high_vs_baseline": s.vs_baseline.ci_high,
            "num_invalid_actions": s.num_invalid_actions,
            "mean_episode_return": s.mean_episode_return,
            "model_size_bytes": "" if s.model_size_bytes is None else s.model_size_bytes,
        })
    return rows


def _csv(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([repr(without_negative_zero(v))
                         if isinstance(v, (float, np.floating)) else v
                         for v in (row[c] for c in columns)])
    return buffer.getvalue()


def _json_ready(value: Any) -> Any:
    """``value`` with every float's ``-0.0`` turned into ``0.0`` (other values unchanged)."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) else without_negative_zero(value)
    return value


def episodes_csv(comparison: Comparison) -> str:
    """Per-episode CSV text (floats at full ``repr`` precision, ``-0.0`` written as ``0.0``)."""
    return _csv(EPISODE_COLUMNS, episode_rows(comparison))


def summary_csv(comparison: Comparison) -> str:
    """Per-policy summary CSV text."""
    return _csv(SUMMARY_COLUMNS, summary_rows(comparison))


def comparison_json(comparison: Comparison) -> str:
    """Everything as JSON text: setup, episodes, per-episode results, summaries (floats at full
    precision, ``-0.0`` written as ``0.0``)."""
    first = next(iter(comparison.outcomes.values()))
    content = {
        "env_id": comparison.env_id, "trace_source": comparison.trace_source,
        "traces": [{"name": n, "content_hash": h} for n, h in comparison.traces.items()],
        "seeds": list(comparison.seeds), "reference": comparison.reference,
        "baseline": comparison.baseline, "bootstrap": dict(comparison.bootstrap),
        "policies": [{"label": c.label, "kind": c.kind, "algo": c.algo,
                      "model_path": c.model_path, "model_size_bytes": c.model_size_bytes,
                      "env_kwargs": plain(c.env_kwargs)} for c in comparison.contenders],
        "episodes": [{"trace": o.trace, "seed": comparison.seeds[i % len(comparison.seeds)],
                      "episode_seed": o.seed, "profile": o.profile,
                      "episode_hash": o.episode_hash} for i, o in enumerate(first)],
        "results": plain(episode_rows(comparison)),
        "summary": plain(summary_rows(comparison)),
    }
    return json.dumps(_json_ready(plain(content)), indent=1) + "\n"


def write_outputs(comparison: Comparison, csv_path: Path | None, summary_path: Path | None,
                  json_path: Path | None) -> list[Path]:
    """Write the requested files atomically; returns the paths written."""
    written = []
    for path, render in ((csv_path, episodes_csv), (summary_path, summary_csv),
                         (json_path, comparison_json)):
        if path is not None:
            written.append(atomic_write_text(path, render(comparison)))
    return written


# --------------------------------------------------------------------------- text
def _h(seconds: float, lower_bound: bool = False) -> str:
    return (">=" if lower_bound else "") + f"{seconds / 3600.0:.3f}"


def _ratio(summary: RatioSummary) -> str:
    if not summary.has_interval:
        return f"{summary.geomean:.3f} [no interval]"
    return f"{summary.geomean:.3f} [{summary.ci_low:.3f}, {summary.ci_high:.3f}]"


def format_episodes(comparison: Comparison) -> str:
    """One row per (trace, seed, policy); unfinished episodes' censored figures marked ``>=``."""
    header = ["trace", "seed", "policy", "done", "avg JCT (h)", "p99 JCT (h)", "makespan (h)",
              "invalid", f"/ {comparison.reference}", f"/ {comparison.baseline}"]
    episodes = episode_rows(comparison)
    per_policy = len(episodes) // max(len(comparison.contenders), 1)
    order = sorted(range(len(episodes)), key=lambda i: (i % per_policy, i // per_policy))
    rows = [[str(r["trace"]), str(r["seed"]), str(r["policy"]),
             f"{r['num_completed']}/{r['num_jobs']}", _h(r["censored_avg_jct_s"], r["truncated"]),
             _h(r["p99_jct_s"]) if not r["truncated"] else "unfinished",
             _h(r["makespan_s"]) if not r["truncated"] else "unfinished",
             str(r["num_invalid_actions"]),
             f"{r['ratio_vs_reference']:.3f}", f"{r['ratio_vs_baseline']:.3f}"]
            for r in (episodes[i] for i in order)]
    return "\n".join(format_columns(header, rows, num_text_columns=3))


def format_summary(comparison: Comparison) -> str:
    """One row per policy: geomean avg-JCT ratios with their intervals, unfinished episodes,
    invalid actions."""
    level = f"{100 * comparison.bootstrap['confidence']:g}% CI"
    header = ["policy", "kind", "episodes", "unfinished", "mean avg JCT (h)",
              f"/ {comparison.reference} [{level}]", f"/ {comparison.baseline} [{level}]",
              "invalid actions", "model (kB)"]
    rows = [[s.label, s.kind, str(s.num_episodes), str(s.num_unfinished),
             _h(s.mean_avg_jct_s, s.num_unfinished > 0), _ratio(s.vs_reference),
             _ratio(s.vs_baseline), str(s.num_invalid_actions),
             "" if s.model_size_bytes is None else f"{s.model_size_bytes / 1000:.1f}"]
            for s in comparison.summaries.values()]
    title = ("geomean over episodes of avgJCT(P) / avgJCT(R), paired percentile bootstrap "
             f"over {comparison.bootstrap['unit']}s ({comparison.bootstrap['resamples']} "
             f"resamples, seed {comparison.bootstrap['seed']}); < 1: P faster than R")
    return "\n".join([title, *format_columns(header, rows, num_text_columns=2)])


def format_warnings(comparison: Comparison) -> str:
    """Warnings about unfinished episodes and missing intervals (``""`` if none)."""
    lines = []
    unfinished = comparison.unfinished()
    if unfinished:
        total = sum(len(v) for v in comparison.outcomes.values())
        lines.append(
            f"WARNING: {len(unfinished)} of {total} episodes did not finish. Their avg JCT "
            "(marked >=) counts each unfinished job up to the truncation time (censored, a "
            "lower bound); ratios compare each pair with an unfinished run censored at the "
            "pair's earlier end time:")
        lines += [f"  {o.trace} seed {seed} {label}: {completed_text(o)} jobs completed; "
                  f"{o.metrics.get('truncation_reason', 'unfinished')}"
                  for label, seed, o in unfinished]
    first = next(iter(comparison.summaries.values()), None)
    if first is not None and not first.vs_reference.has_interval:
        unit = comparison.bootstrap["unit"]
        lines.append(f"WARNING: a single {unit}: no bootstrap interval (one {unit} says nothing "
                     "about the variation between them); give more seeds or traces.")
    return "\n".join(lines)


def format_comparison(comparison: Comparison) -> str:
    """Episodes table, summary table, each episode's hash and any warnings."""
    first = next(iter(comparison.outcomes.values()))
    hashes = [f"  {o.trace} seed {comparison.seeds[i % len(comparison.seeds)]}: "
              f"{o.episode_hash} (episode seed {o.seed}, profile {o.profile})"
              for i, o in enumerate(first)]
    parts = [
        f"{comparison.env_id} on {comparison.trace_source}",
        format_episodes(comparison), format_summary(comparison),
        "\n".join(["episode hashes (identical for every policy):", *hashes]),
    ]
    warnings = format_warnings(comparison)
    return "\n\n".join([*parts, warnings] if warnings else parts)
