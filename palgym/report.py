"""Evaluation reports: run heuristics over traces, then tabulate, export and plot the results.

The logic behind ``evaluate.py``: find and read traces, run every (queue order, placement) on
one episode per trace, compare each policy with a baseline on the same trace and queue order,
and render the outcome as an aligned text table, a CSV file and PNG figures. Nothing here
prints; matplotlib is imported lazily (the ``viz`` extra).

Improvement of policy P over baseline B on one trace = 1 - avgJCT(P) / avgJCT(B); across
traces, 1 - geomean of the ratios. Source: PAL, SC24, Figure 10; PAL_MODEL sections 6-7 (the
default baseline is the truly sticky packed policy; the non-sticky one is reported too).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from palgym.bundled import bundled_trace_paths, natural_key
from palgym.errors import ConfigError
from palgym.io import atomic_write_text, read_sia_trace
from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.metrics import geomean_improvement, improvement
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import EpisodeResult, make_episode, run_episode, slowdown_factors

DEFAULT_BASELINE = "packed-sticky"
"""Baseline of the improvement column (PAL_MODEL section 7: the truly sticky packed policy)."""

SECOND_BASELINE = "packed-non-sticky"
"""The other conventional baseline, also reported when the baseline is ``packed-sticky``."""

CSV_COLUMNS: tuple[str, ...] = (
    "trace", "policy", "queue_order", "num_jobs", "avg_jct_s", "p50_jct_s", "p99_jct_s",
    "makespan_s", "utilization_allocated", "utilization_effective", "num_preemptions",
    "improvement_vs_baseline", "baseline", "episode_hash",
)
"""Columns of the results CSV, in order (times in seconds, utilizations and improvements as
fractions)."""

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class EvaluationSetup:
    """Everything an evaluation shares across traces and policies.

    Attributes:
        cluster: cluster shape.
        config: simulator options (a preset, possibly with overrides).
        profile: explicit variability profile (takes precedence over ``variability_data``).
        variability_data: Longhorn-style measurement folder to build the profile from.
        seed: episode seed (see :func:`palgym.simulate.make_episode`).
    """

    cluster: ClusterSpec
    config: SimConfig
    profile: VariabilityProfile | None = None
    variability_data: Path | None = None
    seed: int = 0


@dataclass(frozen=True)
class Evaluation:
    """Results of every (trace, queue order, policy) run of an evaluation.

    Attributes:
        results: one result per run, trace-major, then queue order, then policy.
        traces: trace ids, in run order.
        policies: placement names run (the requested ones, then any added baseline).
        queue_orders: queue order names run.
        baseline: placement the improvement column is relative to.
        episode_hashes: trace id -> episode hash (equal for every policy on that trace).
    """

    results: tuple[EpisodeResult, ...]
    traces: tuple[str, ...]
    policies: tuple[str, ...]
    queue_orders: tuple[str, ...]
    baseline: str
    episode_hashes: dict[str, str]

    @cached_property
    def _by_key(self) -> dict[tuple[str, str, str], EpisodeResult]:
        return {(r.trace, r.queue_order, r.policy): r for r in self.results}

    def result(self, trace: str, queue_order: str, policy: str) -> EpisodeResult:
        """The result of one run.

        Raises:
            KeyError: if that combination was not run.
        """
        return self._by_key[(trace, queue_order, policy)]

    def baselines(self) -> tuple[str, ...]:
        """The baselines reported: the baseline, plus ``packed-non-sticky`` after
        ``packed-sticky``."""
        return reference_baselines(self.baseline)

    def improvement(self, result: EpisodeResult, baseline: str | None = None) -> float:
        """1 - avgJCT(result) / avgJCT(baseline) on the same trace and queue order."""
        reference = self.result(result.trace, result.queue_order, baseline or self.baseline)
        return improvement(result.metrics.avg_jct_s, reference.metrics.avg_jct_s)

    def geomean_improvement(self, policy: str, queue_order: str, baseline: str | None = None
                            ) -> float:
        """1 - geomean over traces of avgJCT(policy) / avgJCT(baseline) (PAL Figure 10 style)."""
        ratios = [
            self.result(trace, queue_order, policy).metrics.avg_jct_s
            / self.result(trace, queue_order, baseline or self.baseline).metrics.avg_jct_s
            for trace in self.traces
        ]
        return geomean_improvement(np.asarray(ratios, dtype=np.float64))


# --------------------------------------------------------------------------- traces and runs
def find_trace_files(folder: str | Path | None = None) -> list[Path]:
    """Every ``*.csv`` file of ``folder`` (default: the bundled traces), in natural name order.

    Raises:
        ConfigError: if the folder is missing or holds no ``*.csv`` file.
    """
    if folder is None:
        files = list(bundled_trace_paths().values())
        where: Path | str = "the bundled traces folder (palgym/data/traces)"
    else:
        where = Path(folder)
        files = sorted(where.glob("*.csv"), key=natural_key) if where.is_dir() else []
    if not files:
        raise ConfigError(
            f"no trace files (*.csv) in {where}: give trace files explicitly "
            "(evaluate.py --trace PATH) or regenerate the bundled ones (python -m traces bundle)"
        )
    return files


def load_traces(
    paths: Iterable[str | Path],
    duration_unit: str = "iterations",
    reader: Callable[[str | Path, str], Trace] = read_sia_trace,
) -> list[Trace]:
    """Read trace files (``duration_unit``: ``"iterations"``, PAL's reading, or ``"seconds"``)
    with ``reader`` (default: the Sia / PAL CSV reader).

    Raises:
        TraceFormatError: naming file, line and field of a malformed trace.
        ConfigError: if two traces have the same id (file stem).
    """
    traces: list[Trace] = []
    seen: dict[str, str] = {}
    for path in paths:
        trace = reader(path, duration_unit)
        if trace.name in seen:
            raise ConfigError(
                f"two traces are named {trace.name!r} ({seen[trace.name]} and {path}): "
                "trace ids are file stems and must be unique"
            )
        seen[trace.name] = str(path)
        traces.append(trace)
    return traces


def reference_baselines(baseline: str) -> tuple[str, ...]:
    """Baselines to report: ``baseline``, plus ``packed-non-sticky`` if it is ``packed-sticky``."""
    return (baseline, SECOND_BASELINE) if baseline == DEFAULT_BASELINE else (baseline,)


def policies_to_run(policies: Iterable[str], baseline: str = DEFAULT_BASELINE) -> tuple[str, ...]:
    """The requested placements (duplicates dropped), then each reported baseline not among them.

    Raises:
        ConfigError: for an unknown placement name.
    """
    wanted = list(dict.fromkeys(policies))
    for extra in reference_baselines(baseline):
        if extra not in wanted:
            wanted.append(extra)
    unknown = [name for name in wanted if name not in PLACEMENT_NAMES]
    if unknown:
        raise ConfigError(f"unknown placement(s) {unknown}; known: {', '.join(PLACEMENT_NAMES)}")
    return tuple(wanted)


def evaluate(
    traces: Sequence[Trace],
    policies: Sequence[str],
    queue_orders: Sequence[str],
    setup: EvaluationSetup,
    baseline: str = DEFAULT_BASELINE,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> Evaluation:
    """Run every (queue order, placement) on one episode per trace.

    The slowdown factors are fitted once per trace; every policy sees the same episode.

    Args:
        traces: traces with unique ids.
        policies: placement names; the reported baselines are added if missing.
        queue_orders: queue order names.
        setup: cluster, options, profile source and seed.
        baseline: placement the improvements are relative to.
        on_result: called after each run (e.g. to advance a progress bar).

    Returns:
        The evaluation.

    Raises:
        PalgymError: for unknown names, an unusable profile or a run that can never end.
    """
    run_policies = policies_to_run(policies, baseline)
    _check_queue_orders(queue_orders)
    results: list[EpisodeResult] = []
    hashes: dict[str, str] = {}
    for trace in traces:
        episode = make_episode(
            trace, cluster=setup.cluster, config=setup.config, profile=setup.profile,
            variability_data=setup.variability_data, seed=setup.seed,
        )
        factors = slowdown_factors(episode)
        hashes[trace.name] = episode.episode_hash()
        for order in queue_orders:
            for policy in run_policies:
                results.append(run_episode(episode, policy, order, factors))
                if on_result is not None:
                    on_result(results[-1])
    return Evaluation(
        results=tuple(results), traces=tuple(t.name for t in traces), policies=run_policies,
        queue_orders=tuple(queue_orders), baseline=baseline, episode_hashes=hashes,
    )


def _check_queue_orders(queue_orders: Sequence[str]) -> None:
    unknown = [name for name in queue_orders if name not in QUEUE_ORDER_NAMES]
    if unknown or not queue_orders:
        raise ConfigError(
            f"unknown or no queue order(s) {unknown}; known: {', '.join(QUEUE_ORDER_NAMES)}"
        )


# --------------------------------------------------------------------------- text tables
def format_columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], num_text_columns: int = 1
) -> list[str]:
    """Align a table with a dashed rule under the header.

    Args:
        header: column titles.
        rows: cells, one list per row, as long as ``header``.
        num_text_columns: how many leading columns are left-aligned (the rest, numbers, are
            right-aligned).

    Returns:
        The lines of the table.
    """
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if column < num_text_columns else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [line(header), rule, *(line(row) for row in rows)]


def _hours(seconds: float) -> str:
    return f"{seconds / SECONDS_PER_HOUR:.3f}"


def without_negative_zero(value: float) -> float:
    """``value`` as a float, with ``-0.0`` turned into ``0.0`` (other values, NaN included,
    unchanged)."""
    value = float(value)
    return 0.0 if value == 0.0 else value


def format_percent(fraction: float, signed: bool = False) -> str:
    """A fraction as a percentage with one decimal (``signed``: a ``+`` before positive values).

    A value that rounds to zero prints as ``0.0``, never ``-0.0`` or ``+0.0``; NaN as ``nan``.
    """
    if math.isnan(fraction):
        return "nan"
    text = f"{100.0 * fraction:+.1f}" if signed else f"{100.0 * fraction:.1f}"
    return "0.0" if float(text) == 0.0 else text


def format_results_table(evaluation: Evaluation) -> str:
    """One row per (trace, queue order, policy): JCT, makespan, utilization, improvement."""
    header = [
        "trace", "policy", "order", "avg JCT (h)", "p99 JCT (h)", "makespan (h)",
        "util alloc (%)", "util eff (%)", "preemptions", f"vs {evaluation.baseline} (%)",
    ]
    rows = []
    for result in evaluation.results:
        metrics = result.metrics
        rows.append([
            result.trace, result.policy, result.queue_order, _hours(metrics.avg_jct_s),
            _hours(metrics.p99_jct_s), _hours(metrics.makespan_s),
            format_percent(metrics.utilization_allocated),
            format_percent(metrics.utilization_effective), str(metrics.num_preemptions),
            format_percent(evaluation.improvement(result), signed=True),
        ])
    return "\n".join(format_columns(header, rows, num_text_columns=3))


def format_geomean_table(evaluation: Evaluation) -> str:
    """Per (queue order, policy): 1 - geomean over traces of avgJCT(P) / avgJCT(baseline)."""
    baselines = evaluation.baselines()
    header = ["policy", "order", *(f"vs {b} (%)" for b in baselines)]
    rows = [
        [policy, order, *(
            format_percent(evaluation.geomean_improvement(policy, order, b), signed=True)
            for b in baselines
        )]
        for order in evaluation.queue_orders
        for policy in evaluation.policies
    ]
    title = (
        f"geomean avg-JCT improvement over {len(evaluation.traces)} trace(s), "
        "1 - geomean(avgJCT(P) / avgJCT(B)):"
    )
    return "\n".join([title, *format_columns(header, rows, num_text_columns=2)])


def format_report(evaluation: Evaluation) -> str:
    """The results table, the geomean improvements and each trace's episode hash."""
    hashes = [f"  {trace}: {evaluation.episode_hashes[trace]}" for trace in evaluation.traces]
    return "\n\n".join([
        format_results_table(evaluation),
        format_geomean_table(evaluation),
        "\n".join(["episode hashes:", *hashes]),
    ])


# --------------------------------------------------------------------------- CSV
def results_csv(evaluation: Evaluation) -> str:
    """The results as CSV text with :data:`CSV_COLUMNS` (floats at full ``repr`` precision,
    ``-0.0`` written as ``0.0``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for result in evaluation.results:
        metrics = result.metrics
        writer.writerow([
            result.trace, result.policy, result.queue_order, metrics.num_jobs,
            *(repr(without_negative_zero(v)) for v in (
                metrics.avg_jct_s, metrics.p50_jct_s, metrics.p99_jct_s, metrics.makespan_s,
                metrics.utilization_allocated, metrics.utilization_effective,
            )),
            metrics.num_preemptions, repr(without_negative_zero(evaluation.improvement(result))),
            evaluation.baseline, result.episode_hash,
        ])
    return buffer.getvalue()


def write_results_csv(evaluation: Evaluation, path: str | Path) -> Path:
    """Write :func:`results_csv` atomically (a failure leaves any previous file untouched)."""
    return atomic_write_text(path, results_csv(evaluation))
