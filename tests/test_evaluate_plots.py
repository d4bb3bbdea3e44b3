"""Figures of ``evaluate.py``: text stays inside the figure with long names; file names of
learning curves are short, safe and distinct."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.base import HeuristicAgent
from agents.evaluation.comparison import heuristic_table
from agents.evaluation.contenders import Contender
from agents.evaluation.plots import normalised_figure, normalised_png, policy_file_part
from agents.evaluation.summary import Comparison, summarise
from agents.rollout import EpisodeOutcome
from palgym.io import read_sia_trace
from palgym.report import EvaluationSetup
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.variability import VariabilityProfile

LONG_LABELS = (
    "runs/palgym_PALPlacement-v0_maskable_ppo_0/evaluated/again/with/a/long/path/model.zip",
    "pretrained:sia-philly-artifact_maskable_ppo",
    "pal",
    "packed-sticky",
)


def comparison_of(labels: tuple[str, ...]) -> Comparison:
    """One episode per policy; avg JCT 100 s, 101 s, ... in label order."""
    metrics = {"num_jobs": 2, "num_completed": 2, "p50_jct_s": 90.0, "p99_jct_s": 110.0,
               "makespan_s": 300.0, "utilization_allocated": 0.5, "utilization_effective": 0.4,
               "num_invalid_actions": 0}
    runs = {label: [EpisodeOutcome(label, "w", 0, "p", 7, "h", -1.0, 3,
                                   {**metrics, "avg_jct_s": 100.0 + i})]
            for i, label in enumerate(labels)}
    contenders = [Contender(label, "learned" if ":" in label or "/" in label else "heuristic",
                            HeuristicAgent("pal")) for label in labels]
    return summarise("palgym/PALPlacement-v0", contenders, runs, {"w": "hw"}, "test", [0],
                     baseline="packed-sticky", resamples=10)


def assert_inside(figure: Any, texts: list[Any]) -> None:
    """Every text's window extent (pixels) lies inside ``figure.bbox`` (half a pixel slack)."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert (extent.x0 >= box.x0 - 0.5 and extent.x1 <= box.x1 + 0.5
                and extent.y0 >= box.y0 - 0.5 and extent.y1 <= box.y1 + 0.5), (
            f"{text.get_text()!r} at {extent.bounds} outside the figure {box.bounds}")


def visible_tick_labels(axis: Any) -> list[Any]:
    """Tick labels of ticks inside the view limits (the ones drawn)."""
    low, high = sorted(axis.get_view_interval())
    return [label for label, loc in zip(axis.get_ticklabels(), axis.get_ticklocs(), strict=True)
            if low - 1e-9 <= loc <= high + 1e-9 and label.get_text()]


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_side_by_side_normalised_figure_fits_long_policy_names() -> None:
    pytest.importorskip("matplotlib")
    comparison = comparison_of(LONG_LABELS)
    figure = normalised_figure(comparison)
    (axes,) = figure.axes
    names = visible_tick_labels(axes.yaxis)
    assert sorted(t.get_text() for t in names) == sorted(LONG_LABELS)
    assert_inside(figure, [*names, *visible_tick_labels(axes.xaxis), axes.title,
                           axes.xaxis.label, axes.get_legend()])
    # the PNG is this figure: same pixel size (up to rounding)
    width, height = png_size(normalised_png(comparison))
    assert abs(width - figure.bbox.width) < 1.0 and abs(height - figure.bbox.height) < 1.0


def test_side_by_side_normalised_figure_keeps_its_size_for_short_names() -> None:
    pytest.importorskip("matplotlib")
    labels = ("pal", "packed-sticky", "random-sticky")
    figure = normalised_figure(comparison_of(labels))
    # 7.5 in wide, 1.2 + 0.45 per policy high: nothing needs to grow
    assert tuple(figure.get_size_inches()) == pytest.approx((7.5, 1.2 + 0.45 * len(labels)))


def test_heuristic_normalised_figure_fits_long_trace_names(write_sia_csv: Any) -> None:
    pytest.importorskip("matplotlib")
    from palgym.plots import normalised_jct_figure

    rows = [(0, 1, 0, 500, "vgg19"), (1, 2, 100, 300, "resnet50"), (2, 1, 200, 400, "BERT")]
    names = ["philly-week-03-virtual-cluster-11b3a2-with-a-long-descriptive-name",
             "philly-week-04-virtual-cluster-0e1f22-with-a-long-descriptive-name"]
    traces = [read_sia_trace(write_sia_csv(rows, name=f"{n}.csv")) for n in names]
    flat = VariabilityProfile("flat", np.ones((4, 4)))
    setup = EvaluationSetup(cluster=ClusterSpec(2, 2), config=preset("default"), profile=flat)
    evaluation = heuristic_table(traces, ["pal"], ["fifo"], setup)
    figure = normalised_jct_figure(evaluation, "fifo")
    (axes,) = figure.axes
    groups = visible_tick_labels(axes.xaxis)
    assert [t.get_text() for t in groups] == [*names, "geomean"]
    legend = axes.get_legend()
    assert_inside(figure, [*groups, *visible_tick_labels(axes.yaxis), axes.title,
                           axes.yaxis.label, legend, *legend.get_texts()])


@pytest.mark.parametrize("label", ["pal", "palgym_PALPlacement-v0_maskable_ppo_0",
                                   "v1.2_run-3", "x" * 60])
def test_policy_file_part_keeps_short_safe_labels(label: str) -> None:
    assert policy_file_part(label) == label


def test_policy_file_part_of_unsafe_or_long_labels() -> None:
    def digest(label: str) -> str:
        return hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]

    pretrained = "pretrained:sia-philly-artifact_maskable_ppo"
    assert policy_file_part(pretrained) == (
        f"pretrained_sia-philly-artifact_maskable_ppo-{digest(pretrained)}")
    path = "runs/a b/model.zip"
    assert policy_file_part(path) == f"runs_a_b_model.zip-{digest(path)}"
    long = "y" * 61
    assert policy_file_part(long) == "y" * 51 + "-" + digest(long)
    assert policy_file_part("../..") == digest("../..")
    # two long labels that differ only after the cut, and two that differ only in an unsafe
    # character, stay apart
    first, second = "runs/" + "z" * 70 + "/a.zip", "runs/" + "z" * 70 + "/b.zip"
    for a, b in ((first, second), ("runs/x", "runs:x")):
        assert policy_file_part(a) != policy_file_part(b)
    for label in (*LONG_LABELS, first, second, "ümlaut/模型", ""):
        part = policy_file_part(label)
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,60}", part), part
        assert not part.startswith(".")


def test_learning_curve_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_plots names each learning curve by policy_file_part of the label."""
    pytest.importorskip("matplotlib")
    import agents.evaluation.plots as plots

    run = tmp_path / "run"
    run.mkdir()
    np.savez(run / "evaluations.npz", timesteps=np.array([10, 20]),
             results=np.array([[-3.0], [-2.0]]))
    monkeypatch.setattr(plots, "learning_curve_files",
                        lambda c: (run / "evaluations.npz", run / "references.yml")
                        if c.kind == "learned" else None)
    written = plots.write_plots(comparison_of(LONG_LABELS), tmp_path / "plots")
    curves = sorted(p.name for p in written if p.name.startswith("learning-curve_"))
    assert curves == sorted(f"learning-curve_{policy_file_part(label)}.png"
                            for label in LONG_LABELS[:2])
    assert all(len(name) <= len("learning-curve_.png") + 60 for name in curves)


# --------------------------------------------------------------------------- plotted data
def test_cdf_points_are_normalised_by_all_jobs() -> None:
    # 4 jobs, one unfinished (NaN): the CDF climbs 1/4, 2/4, 3/4 and stops below 1
    from palgym.plots import cdf_points

    jct_h, fraction = cdf_points(np.array([7200.0, np.nan, 3600.0, 10800.0]))
    assert list(jct_h) == [1.0, 2.0, 3.0]
    assert list(fraction) == [0.25, 0.5, 0.75]
    done_h, done_fraction = cdf_points(np.array([3600.0, 7200.0]))
    assert list(done_fraction) == [0.5, 1.0] and list(done_h) == [1.0, 2.0]


def test_truncated_run_cdf_and_ratio_axis() -> None:
    """The starving toy (tests/test_truncation.py): under LAS job 1 completes at 720 s and job 0
    never; the CDF is 1/2 at 0.2 h and stops there, labelled 1/2 completed."""
    from test_truncation import starving_episode

    from palgym.plots import jct_cdf_data, normalised_jct_data, normalised_jct_figure

    episode = starving_episode()
    setup = EvaluationSetup(cluster=episode.cluster, config=episode.config,
                            profile=episode.profile)
    evaluation = heuristic_table([episode.trace], ["packed-non-sticky", "pal"], ["las"],
                                 setup, baseline="packed-non-sticky")
    data = jct_cdf_data(evaluation, "toy", "las")
    jct_h, fraction = data["packed-non-sticky (1/2 completed)"]
    assert list(jct_h) == [720.0 / 3600] and list(fraction) == [0.5]
    groups, ratios = normalised_jct_data(evaluation, "las")
    assert groups == ["toy"] and ratios["packed-non-sticky"] == [1.0]
    figure = normalised_jct_figure(evaluation, "las")
    axes = figure.axes[0]
    assert not axes.patches  # dots, no bars
    plotted = {line.get_label(): list(line.get_ydata()) for line in axes.get_lines()
               if not line.get_label().startswith("_")}
    assert plotted == {policy: values for policy, values in ratios.items()}


def test_side_by_side_ratio_axis_is_around_one_not_from_zero() -> None:
    """Ratios 100/101 = 0.990 and 1: the axis hugs them instead of starting at 0."""
    pytest.importorskip("matplotlib")
    axes = normalised_figure(comparison_of(("pal", "packed-sticky"))).axes[0]
    low, high = axes.get_xlim()
    assert 0.9 < low < 0.99 and 1.0 < high < 1.1


def test_side_by_side_cdf_pools_seeds_and_counts_unfinished_jobs() -> None:
    from agents.evaluation.plots import jct_cdf_data

    comparison = comparison_of(("pal", "packed-sticky"))
    finished = EpisodeOutcome("pal", "w", 0, "p", 7, "h", -1.0, 3, {}, (3600.0, 7200.0))
    cut = EpisodeOutcome("packed-sticky", "w", 0, "p", 7, "h", -1.0, 3, {},
                         (3600.0, float("nan")))
    comparison = dataclasses.replace(comparison, outcomes={"pal": [finished],
                                                           "packed-sticky": [cut]})
    data = jct_cdf_data(comparison, "w")
    assert [list(v) for v in data["pal"]] == [[1.0, 2.0], [0.5, 1.0]]
    assert [list(v) for v in data["packed-sticky (1/2 completed)"]] == [[1.0], [0.5]]
