"""Figures of an evaluation: JCT CDFs and normalised average-JCT bars (PNG bytes), and the
drawing helpers every evaluation figure shares.

matplotlib (the ``viz`` extra) is imported lazily and used through its Agg canvas only (no
pyplot, no global backend change). Nothing here writes files: the one writer of every
evaluation's figures is ``agents.evaluation.plots.write_plots``.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from palgym.errors import PalgymError
from palgym.report import SECONDS_PER_HOUR, Evaluation

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


class PlotDependencyError(PalgymError, ImportError):
    """Plots were requested but matplotlib (the ``viz`` extra) is not installed."""


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


PNG_DPI = 110
"""Resolution of the PNG files (dots per inch)."""

MIN_AXES_SIZE_IN = (3.5, 0.5)
"""Smallest (width, height) in inches of the data area of a figure's axes."""


def render_figure(draw: Callable[[Axes], None], size_in: tuple[float, float]) -> Figure:
    """One axes drawn on an Agg canvas (no pyplot, no global backend) and laid out to fit.

    The figure starts at ``size_in`` with matplotlib's constrained layout; when its text does
    not fit (long tick labels, a legend beside the axes, a title wider than the axes) it grows,
    so that every artist lies inside the figure and the axes keeps at least
    :data:`MIN_AXES_SIZE_IN` (and the width of its title and x label). Equal inputs give equal
    figures.

    Args:
        draw: draws on the axes.
        size_in: smallest figure (width, height) in inches.

    Raises:
        PlotDependencyError: if matplotlib (the ``viz`` extra) is not installed.
    """
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size_in, dpi=PNG_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    draw(figure.add_subplot())
    _grow_to_fit(figure)
    return figure


def _grow_to_fit(figure: Figure, rounds: int = 6, pad_in: float = 0.1) -> None:
    """Enlarge ``figure`` until its content fits (see :func:`render_figure`)."""
    for _ in range(rounds):
        with warnings.catch_warnings():  # a first layout too small for a wide legend: it grows
            warnings.filterwarnings("ignore", message="constrained_layout not applied")
            figure.draw_without_rendering()  # runs the constrained layout
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        width, height = figure.get_size_inches()
        content = figure.get_tightbbox(renderer)  # inches
        grow_w = max(0.0, -content.x0) + max(0.0, content.x1 - width)
        grow_h = max(0.0, -content.y0) + max(0.0, content.y1 - height)
        for axes in figure.axes:
            box = axes.bbox  # pixels
            texts = [axes.title, axes.xaxis.label]
            need_w = max([MIN_AXES_SIZE_IN[0]]
                         + [t.get_window_extent(renderer).width / figure.dpi + pad_in
                            for t in texts if t.get_text()])
            grow_w = max(grow_w, need_w - box.width / figure.dpi)
            grow_h = max(grow_h, MIN_AXES_SIZE_IN[1] - box.height / figure.dpi)
        if grow_w <= 1e-3 and grow_h <= 1e-3:
            return
        figure.set_size_inches(
            width + (grow_w + pad_in if grow_w > 1e-3 else 0.0),
            height + (grow_h + pad_in if grow_h > 1e-3 else 0.0),
        )


def figure_png(figure: Figure) -> bytes:
    """PNG bytes of a figure of :func:`render_figure` (without a software tag, so equal figures
    give equal bytes)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
    return buffer.getvalue()


def png_bytes(draw: Callable[[Axes], None], size_in: tuple[float, float]) -> bytes:
    """PNG bytes of :func:`render_figure` ``(draw, size_in)``.

    Raises:
        PlotDependencyError: if matplotlib (the ``viz`` extra) is not installed.
    """
    return figure_png(render_figure(draw, size_in))


def style_jct_cdf(axes: Axes, title: str) -> None:
    """Axes, labels, limits, grid and legend of a JCT CDF plot (log time axis, hours); the
    legend sits outside the axes, right of them, off the curves' tails."""
    axes.set_xscale("log")
    axes.set_xlabel("job completion time (h)")
    axes.set_ylabel("fraction of jobs completed")
    axes.set_ylim(0.0, 1.0)
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")


def cdf_points(jct_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The JCT CDF of a set of jobs, normalised by **all** of them.

    Args:
        jct_s: float64 (N,), JCT per job in seconds; NaN (or inf) for a job that did not
            complete.

    Returns:
        ``(jct_h, fraction)``: float64 (k,) the k completed jobs' JCTs in hours, ascending, and
        float64 (k,) ``1/N .. k/N``, the fraction of all N jobs completed by then; the CDF of a
        truncated run stops at k/N < 1.
    """
    jct = np.asarray(jct_s, dtype=np.float64)
    done = np.sort(jct[np.isfinite(jct)]) / SECONDS_PER_HOUR
    return done, np.arange(1, done.size + 1) / max(jct.size, 1)


def curve_label(name: str, completed: int, total: int) -> str:
    """A CDF legend entry: ``name``, plus ``(completed/total)`` when some job did not finish."""
    return name if completed == total else f"{name} ({completed}/{total} completed)"


def jct_cdf_data(evaluation: Evaluation, trace: str, queue_order: str
                 ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Legend label -> :func:`cdf_points` of every policy on one trace (what the CDF plots)."""
    data = {}
    for policy in evaluation.policies:
        result = evaluation.result(trace, queue_order, policy)
        label = curve_label(policy, result.metrics.num_completed, result.metrics.num_jobs)
        data[label] = cdf_points(result.records.jct_s)
    return data


def jct_cdf_png(evaluation: Evaluation, trace: str, queue_order: str) -> bytes:
    """PNG of the JCT CDF of every policy on one trace (hours, log x axis; normalised by all
    measured jobs, see :func:`cdf_points`)."""

    def draw(axes: Axes) -> None:
        for label, (jct_h, fraction) in jct_cdf_data(evaluation, trace, queue_order).items():
            axes.step(jct_h, fraction, where="post", label=label)
        style_jct_cdf(axes, f"JCT CDF: {trace} ({queue_order})")

    return png_bytes(draw, (6.4, 4.4))


def normalised_jct_png(evaluation: Evaluation, queue_order: str) -> bytes:
    """PNG bytes of :func:`normalised_jct_figure`."""
    return figure_png(normalised_jct_figure(evaluation, queue_order))


def normalised_jct_data(evaluation: Evaluation, queue_order: str
                        ) -> tuple[list[str], dict[str, list[float]]]:
    """``(groups, {policy: ratios})``: avgJCT(policy) / avgJCT(baseline) per trace (censored
    averages for unfinished runs), plus the geomean over traces when there are several."""
    many = len(evaluation.traces) > 1
    groups = [*evaluation.traces, "geomean"] if many else list(evaluation.traces)
    ratios: dict[str, list[float]] = {}
    for policy in evaluation.policies:
        values = [1.0 - evaluation.improvement(evaluation.result(trace, queue_order, policy))
                  for trace in evaluation.traces]
        if many:
            values.append(1.0 - evaluation.geomean_improvement(policy, queue_order))
        ratios[policy] = values
    return groups, ratios


def normalised_jct_figure(evaluation: Evaluation, queue_order: str) -> Figure:
    """avgJCT(policy) / avgJCT(baseline) per trace and policy as dots on a ratio axis around
    1 (not bars from 0, which hide differences of a few percent), a line marking 1; the figure
    grows to fit long trace and policy names."""
    groups, ratios = normalised_jct_data(evaluation, queue_order)
    markers = "osD^v<>ph*"

    def draw(axes: Axes) -> None:
        step = 0.8 / len(ratios)
        for index, (policy, values) in enumerate(ratios.items()):
            offsets = np.arange(len(groups)) + (index - (len(ratios) - 1) / 2) * step
            axes.plot(offsets, values, linestyle="none", marker=markers[index % len(markers)],
                      label=policy)
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
        axes.set_ylabel(f"avg JCT / avg JCT of {evaluation.baseline}")
        axes.set_title(f"normalised average JCT ({queue_order})")
        axes.grid(True, axis="y", alpha=0.3)
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))

    return render_figure(draw, (max(6.4, 1.1 * len(groups) + 3.0), 4.4))


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def table_figures(evaluation: Evaluation) -> Iterator[tuple[str, bytes]]:
    """The heuristic table's figures as ``(file name, PNG bytes)``, rendered one at a time:
    ``jct-cdf_<trace>_<order>.png`` per queue order and trace, then
    ``normalised-jct_<order>.png`` per queue order (``agents.evaluation.plots.write_plots``
    writes them).

    Raises:
        PlotDependencyError: if matplotlib is missing.
    """
    require_matplotlib()
    for order in evaluation.queue_orders:
        for trace in evaluation.traces:
            yield f"jct-cdf_{_file_part(trace)}_{order}.png", jct_cdf_png(evaluation, trace, order)
        yield f"normalised-jct_{order}.png", normalised_jct_png(evaluation, order)
