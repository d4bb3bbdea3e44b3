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
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from palgym.errors import ConfigError, PalgymError
from palgym.io import atomic_write_text, read_sia_trace
from palgym.io.atomic import atomic_write_bytes
from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.metrics import geomean_improvement, improvement
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import EpisodeResult, make_episode, run_episode, slowdown_factors

if TYPE_CHECKING:
    from matplotlib.axes import Axes

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


class PlotDependencyError(PalgymError, ImportError):
    """Plots were requested but matplotlib (the ``viz`` extra) is not installed."""


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
def bundled_trace_dir() -> Path:
    """Folder of the traces bundled with palgym (``palgym/data/traces``)."""
    return Path(str(resources.files("palgym") / "data" / "traces"))


def find_trace_files(folder: str | Path | None = None) -> list[Path]:
    """Every ``*.csv`` file of ``folder`` (default: the bundled traces), in natural name order.

    Raises:
        ConfigError: if the folder is missing or holds no ``*.csv`` file.
    """
    where = bundled_trace_dir() if folder is None else Path(folder)
    files = sorted(where.glob("*.csv"), key=_natural_key) if where.is_dir() else []
    if not files:
        raise ConfigError(
            f"no trace files (*.csv) in {where}: give trace files explicitly "
            "(evaluate.py --trace PATH) or regenerate the bundled ones (python -m traces bundle)"
        )
    return files


def _natural_key(path: Path) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def load_traces(paths: Iterable[str | Path]) -> list[Trace]:
    """Read Sia / PAL trace files (durations as iteration counts).

    Raises:
        TraceFormatError: naming file, line and field of a malformed trace.
        ConfigError: if two traces have the same id (file stem).
    """
    traces: list[Trace] = []
    seen: dict[str, str] = {}
    for path in paths:
        trace = read_sia_trace(path)
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


def _percent(fraction: float, signed: bool = False) -> str:
    if math.isnan(fraction):
        return "nan"
    return f"{100.0 * fraction:+.1f}" if signed else f"{100.0 * fraction:.1f}"


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
            _percent(metrics.utilization_allocated), _percent(metrics.utilization_effective),
            str(metrics.num_preemptions), _percent(evaluation.improvement(result), signed=True),
        ])
    return "\n".join(format_columns(header, rows, num_text_columns=3))


def format_geomean_table(evaluation: Evaluation) -> str:
    """Per (queue order, policy): 1 - geomean over traces of avgJCT(P) / avgJCT(baseline)."""
    baselines = evaluation.baselines()
    header = ["policy", "order", *(f"vs {b} (%)" for b in baselines)]
    rows = [
        [policy, order, *(
            _percent(evaluation.geomean_improvement(policy, order, b), signed=True)
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
    """The results as CSV text with :data:`CSV_COLUMNS` (floats at full ``repr`` precision)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for result in evaluation.results:
        metrics = result.metrics
        writer.writerow([
            result.trace, result.policy, result.queue_order, metrics.num_jobs,
            *(repr(float(v)) for v in (
                metrics.avg_jct_s, metrics.p50_jct_s, metrics.p99_jct_s, metrics.makespan_s,
                metrics.utilization_allocated, metrics.utilization_effective,
            )),
            metrics.num_preemptions, repr(float(evaluation.improvement(result))),
            evaluation.baseline, result.episode_hash,
        ])
    return buffer.getvalue()


def write_results_csv(evaluation: Evaluation, path: str | Path) -> Path:
    """Write :func:`results_csv` atomically (a failure leaves any previous file untouched)."""
    return atomic_write_text(path, results_csv(evaluation))


# --------------------------------------------------------------------------- plots
def require_matplotlib() -> None:
    """Check that matplotlib can be imported.

    Raises:
        PlotDependencyError: naming the ``viz`` extra if it cannot.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise PlotDependencyError(
            "plots need matplotlib, which is not installed: pip install -e .[viz]"
        ) from exc


def _png(draw: Callable[[Axes], None], size_in: tuple[float, float]) -> bytes:
    """Render one axes with the Agg canvas (no pyplot, no global backend) to PNG bytes."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size_in, layout="constrained")
    FigureCanvasAgg(figure)
    draw(figure.add_subplot())
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def jct_cdf_png(evaluation: Evaluation, trace: str, queue_order: str) -> bytes:
    """PNG of the JCT CDF of every policy on one trace (hours, log x axis)."""

    def draw(axes: Axes) -> None:
        for policy in evaluation.policies:
            jct_h = evaluation.result(trace, queue_order, policy).records.jct_s / SECONDS_PER_HOUR
            jct_h = np.sort(jct_h[np.isfinite(jct_h)])
            fraction = np.arange(1, jct_h.size + 1) / max(jct_h.size, 1)
            axes.step(jct_h, fraction, where="post", label=policy)
        axes.set_xscale("log")
        axes.set_xlabel("job completion time (h)")
        axes.set_ylabel("fraction of jobs")
        axes.set_ylim(0.0, 1.0)
        axes.set_title(f"JCT CDF: {trace} ({queue_order})")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(loc="lower right", fontsize="small")

    return _png(draw, (6.4, 4.4))


def normalised_jct_png(evaluation: Evaluation, queue_order: str) -> bytes:
    """PNG of avgJCT(policy) / avgJCT(baseline) per trace and policy (plus the geomean over
    traces when there are several)."""
    many = len(evaluation.traces) > 1
    groups = [*evaluation.traces, "geomean"] if many else list(evaluation.traces)

    def draw(axes: Axes) -> None:
        width = 0.8 / len(evaluation.policies)
        for index, policy in enumerate(evaluation.policies):
            ratios = [
                1.0 - evaluation.improvement(evaluation.result(trace, queue_order, policy))
                for trace in evaluation.traces
            ]
            if many:
                ratios.append(1.0 - evaluation.geomean_improvement(policy, queue_order))
            offsets = np.arange(len(groups)) + (index - (len(evaluation.policies) - 1) / 2) * width
            axes.bar(offsets, ratios, width, label=policy)
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
        axes.set_ylabel(f"avg JCT / avg JCT of {evaluation.baseline}")
        axes.set_title(f"normalised average JCT ({queue_order})")
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))

    return _png(draw, (max(6.4, 1.1 * len(groups) + 3.0), 4.4))


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def write_plots(evaluation: Evaluation, folder: str | Path) -> list[Path]:
    """Write, atomically, ``jct-cdf_<trace>_<order>.png`` per trace and queue order and
    ``normalised-jct_<order>.png`` per queue order into ``folder`` (created if missing).

    Returns:
        The paths written.

    Raises:
        PlotDependencyError: if matplotlib is missing.
    """
    require_matplotlib()
    out = Path(folder)
    written: list[Path] = []
    for order in evaluation.queue_orders:
        for trace in evaluation.traces:
            name = f"jct-cdf_{_file_part(trace)}_{order}.png"
            written.append(atomic_write_bytes(out / name, jct_cdf_png(evaluation, trace, order)))
        name = f"normalised-jct_{order}.png"
        written.append(atomic_write_bytes(out / name, normalised_jct_png(evaluation, order)))
    return written
