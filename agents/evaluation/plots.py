"""Figures of an evaluation, and :func:`write_plots`, the one writer of every evaluation's
figures (PNG, written atomically). A comparison's: JCT CDFs per trace, normalised average-JCT
bars with bootstrap intervals, and the learning curve of every learned agent whose run folder
holds ``evaluations.npz``; the heuristic table's come from :func:`palgym.plots.table_figures`.

matplotlib (the ``viz`` extra) is imported lazily and drawn through its Agg canvas only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.evaluation.contenders import learning_curve_files
from agents.evaluation.summary import Comparison
from palgym.io.atomic import atomic_write_bytes
from palgym.plots import (
    cdf_points,
    curve_label,
    figure_png,
    png_bytes,
    render_figure,
    require_matplotlib,
    style_jct_cdf,
    table_figures,
)
from palgym.report import Evaluation

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def jct_cdf_data(comparison: Comparison, trace: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Legend label -> :func:`palgym.plots.cdf_points` of every policy on ``trace``, jobs
    pooled over seeds (and job windows), normalised by all of them (what the CDF plots)."""
    data = {}
    for c in comparison.contenders:
        runs = [o for i, o in enumerate(comparison.outcomes[c.label])
                if comparison.source_trace(i) == trace]
        jobs = np.asarray([v for o in runs for v in o.jct_s], dtype=np.float64)
        completed = int(np.count_nonzero(np.isfinite(jobs)))
        data[curve_label(c.label, completed, jobs.size)] = cdf_points(jobs)
    return data


def jct_cdf_png(comparison: Comparison, trace: str) -> bytes:
    """CDF of per-job JCT (hours, log x) of every policy on ``trace`` (:func:`jct_cdf_data`)."""
    kinds = [c.kind for c in comparison.contenders]

    def draw(axes: Axes) -> None:
        for kind, (label, (jct_h, fraction)) in zip(
                kinds, jct_cdf_data(comparison, trace).items(), strict=True):
            axes.step(jct_h, fraction, where="post", label=label,
                      linestyle="-" if kind == "learned" else "--")
        style_jct_cdf(axes, f"JCT CDF: {trace} ({len(comparison.seeds)} seed(s))")

    return png_bytes(draw, (6.4, 4.4))


def normalised_png(comparison: Comparison) -> bytes:
    """PNG bytes of :func:`normalised_figure`."""
    return figure_png(normalised_figure(comparison))


def normalised_figure(comparison: Comparison) -> Figure:
    """Geomean avgJCT(P) / avgJCT(baseline) per policy (dot) with its bootstrap interval (bar),
    one row per policy; a line marks 1 (the baseline). The figure widens to fit long policy
    names (:func:`palgym.plots.render_figure`)."""
    summaries = list(comparison.summaries.values())

    def draw(axes: Axes) -> None:
        y = np.arange(len(summaries))[::-1]
        ratios = np.array([s.vs_baseline.geomean for s in summaries])
        # no interval (a single episode or trace): a dot without a bar
        low = np.nan_to_num(ratios - np.array([s.vs_baseline.ci_low for s in summaries]))
        high = np.nan_to_num(np.array([s.vs_baseline.ci_high for s in summaries]) - ratios)
        for kind, color in (("learned", "tab:orange"), ("heuristic", "tab:blue")):
            pick = np.array([s.kind == kind for s in summaries])
            if pick.any():
                axes.errorbar(ratios[pick], y[pick], xerr=np.vstack([low[pick], high[pick]]),
                              fmt="o", capsize=4, color=color, label=kind)
        axes.axvline(1.0, color="black", linewidth=0.8)
        axes.set_yticks(y, [s.label for s in summaries])
        level = f"{100 * comparison.bootstrap['confidence']:g}%"
        axes.set_xlabel(f"avg JCT / avg JCT of {comparison.baseline} (geomean, {level} CI)")
        episodes = len(comparison.outcomes[summaries[0].label])
        axes.set_title(f"normalised average JCT over {episodes} episode(s)")
        axes.grid(True, axis="x", alpha=0.3)
        axes.legend(fontsize="small")

    return render_figure(draw, (7.5, 1.2 + 0.45 * len(summaries)))


def learning_curve_png(evaluations: Path, references_file: Path, label: str) -> bytes:
    """Mean evaluation return vs timesteps (an ``evaluations.npz``), with the run's heuristic
    references (a ``references.yml``) as horizontal lines when that file exists."""
    return figure_png(learning_curve_figure(evaluations, references_file, label))


def learning_curve_figure(evaluations: Path, references_file: Path, label: str) -> Figure:
    """The figure of :func:`learning_curve_png`."""
    with np.load(evaluations) as data:
        steps = np.asarray(data["timesteps"])
        returns = np.asarray(data["results"]).mean(axis=1)
    references = _references(references_file)

    def draw(axes: Axes) -> None:
        axes.plot(steps, returns, marker="o", label=label, color="tab:orange")
        styles = ("--", ":", "-.")
        colors = ("tab:blue", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:gray")
        for i, (name, value) in enumerate(references.items()):  # one colour and dash each
            axes.axhline(value, linestyle=styles[i % len(styles)], linewidth=1.1,
                         color=colors[i % len(colors)], label=name)
        axes.set_xlabel("timesteps")
        axes.set_ylabel("mean evaluation return")
        axes.set_title(f"learning curve: {label}")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")

    return render_figure(draw, (6.4, 4.4))


def _references(path: Path) -> dict[str, float]:
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        return {}
    content: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    policies = content.get("policies", {}) if isinstance(content, dict) else {}
    return {str(k): float(v["mean_return"]) for k, v in policies.items()
            if isinstance(v, dict) and "mean_return" in v}


MAX_FILE_PART_CHARS = 60
"""Longest policy part of a learning-curve file name (see :func:`policy_file_part`)."""


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


def policy_file_part(label: str, max_chars: int = MAX_FILE_PART_CHARS) -> str:
    """A short, safe and distinct file-name part for a policy label (``learning-curve_<part>``).

    Rule: every run of characters outside ``[A-Za-z0-9._-]`` becomes one ``_``, and leading
    and trailing ``_`` and ``.`` are dropped. A label that this leaves unchanged and that has at
    most ``max_chars`` characters is used as is (``pal``, ``palgym_PALPlacement-v0_ppo_0``).
    Otherwise the result is cut to ``max_chars - 9`` characters and ``-`` plus the first 8 hex
    digits of the SHA-256 of the full label (UTF-8) are appended, so the part has at most
    ``max_chars`` characters and two labels (a comparison's are unique) give different parts:
    ``runs/a/model.zip`` -> ``runs_a_model.zip-<hash>``,
    ``pretrained:sia-philly-artifact_maskable_ppo`` ->
    ``pretrained_sia-philly-artifact_maskable_ppo-<hash>``.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_.")
    if safe and safe == label and len(safe) <= max_chars:
        return safe
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    cut = safe[: max_chars - len(digest) - 1].rstrip("_.")
    return f"{cut}-{digest}" if cut else digest


def comparison_figures(comparison: Comparison) -> Iterator[tuple[str, bytes]]:
    """A comparison's figures as ``(file name, PNG bytes)``, rendered one at a time:
    ``jct-cdf_<trace>.png`` per trace, ``normalised-jct.png`` and
    ``learning-curve_<policy>.png`` per learned agent with a learning curve (see
    :func:`agents.evaluation.contenders.learning_curve_files`; ``<policy>`` is
    :func:`policy_file_part` of the label).

    Raises:
        PlotDependencyError: if matplotlib is missing.
    """
    require_matplotlib()
    for trace in comparison.traces:
        yield f"jct-cdf_{_file_part(trace)}.png", jct_cdf_png(comparison, trace)
    yield "normalised-jct.png", normalised_png(comparison)
    for contender in comparison.contenders:
        files = learning_curve_files(contender)
        if files is not None:
            yield (f"learning-curve_{policy_file_part(contender.label)}.png",
                   learning_curve_png(*files, contender.label))


def write_plots(result: Evaluation | Comparison, folder: str | Path) -> list[Path]:
    """Write the figures of an evaluation into ``folder`` (created if missing), each
    atomically as soon as it is drawn: :func:`palgym.plots.table_figures` of a heuristic
    table, :func:`comparison_figures` of a comparison.

    Returns:
        The paths written, in drawing order.

    Raises:
        PlotDependencyError: if matplotlib is missing.
    """
    figures = (table_figures(result) if isinstance(result, Evaluation)
               else comparison_figures(result))
    out = Path(folder)
    return [atomic_write_bytes(out / name, png) for name, png in figures]
