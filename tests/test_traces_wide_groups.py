"""The wide-groups knob (traces/wide_groups.py): grouped arrivals of long wide jobs against
expectations worked out independently: counts, widths and durations from the fitted conditional
distributions, arrivals within the window, the other jobs unchanged, determinism, clear errors.

Statistical tolerances are 4 standard errors of the quantity tested (derived per test), so a
correct generator fails a check with probability < 1e-4; the seeds are fixed, so the tests are
deterministic.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError
from traces.__main__ import main
from traces.bundle import default_data_dir
from traces.generate import SiaTraceTable, generate_sia_philly_like
from traces.knobs import LONG_WIDE_MIN_GPUS, Knobs, gpu_weights, spread_params
from traces.sia_philly_fit import (
    SIA_PHILLY,
    SIA_PHILLY_GPU_COUNTS,
    SIA_PHILLY_MODEL_DURATIONS,
    SIA_PHILLY_MODEL_GPU_COUNTS,
)
from traces.wide_groups import WideGroups, sample_wide_groups

SIGMAS = 4.0
MEDIAN = 195_574.5  # the resnet50 >= 24-GPU group: knots (0, 76977), (0.5, MEDIAN), (1, MAXIMUM)
MAXIMUM = 2_912_468.0
FITTED_MIX = tuple((g, float(w)) for g, w in SIA_PHILLY_GPU_COUNTS)


def _rows(table: SiaTraceTable) -> list[tuple[int, int, float, str]]:
    return list(zip(table.num_gpus.tolist(), table.submit_time_s.tolist(),
                    table.duration_iterations.tolist(), table.model, strict=True))


def _binomial(prob: float, num: int) -> float:
    return SIGMAS * math.sqrt(prob * (1.0 - prob) / num)


def _groups(num: int, size: int, window_s: float, span_s: int, seed: int = 0,
            knobs: Knobs | None = None) -> WideGroups:
    knobs = replace(knobs or Knobs(), wide_groups=num, wide_group_size=size,
                    wide_group_window_s=window_s)
    return sample_wide_groups(np.random.default_rng(seed), knobs, FITTED_MIX,
                              spread_params(SIA_PHILLY, knobs.duration_spread), span_s)


def test_long_wide_is_the_fitted_duration_group_of_the_widest_jobs() -> None:
    wide_fits = [f for f in SIA_PHILLY_MODEL_DURATIONS if f.min_gpus > 1]
    assert [(f.model, f.min_gpus) for f in wide_fits] == [("resnet50", LONG_WIDE_MIN_GPUS)]
    assert dict(wide_fits[0].quantiles) == {0.0: 76977.0, 0.5: MEDIAN, 1.0: MAXIMUM}
    assert {m for m, g, _ in SIA_PHILLY_MODEL_GPU_COUNTS if g >= LONG_WIDE_MIN_GPUS} == {
        "resnet50"}


def test_groups_take_the_place_of_the_last_jobs() -> None:
    """J = 40 with 2 groups of 3: the first 34 jobs of the seed's trace, unchanged and in order,
    plus 6 resnet50 jobs of 24-48 GPUs above the median, in time order, ids 0..39."""
    knobs = Knobs(wide_groups=2, wide_group_size=3, wide_group_window_s=600.0)
    table = generate_sia_philly_like(40, 5, knobs=knobs)
    ordinary = _rows(generate_sia_philly_like(34, 5))
    assert table.job_id.tolist() == list(range(40))
    assert (np.diff(table.submit_time_s) >= 0).all()
    rows = _rows(table)
    kept = iter(range(40))
    positions = [next(i for i in kept if rows[i] == row) for row in ordinary]  # a subsequence
    extra = [rows[i] for i in sorted(set(range(40)) - set(positions))]
    assert len(extra) == 6
    for gpus, submit_s, duration, model in extra:
        assert gpus in (24, 32, 48) and model == "resnet50"
        assert MEDIAN < duration <= MAXIMUM and duration == int(duration)
        assert 0 <= submit_s < ordinary[-1][1] + 600
    assert generate_sia_philly_like(40, 5, knobs=Knobs()).num_gpus[:34].tolist() == [
        r[0] for r in ordinary]


def test_each_group_arrives_within_its_window_anchored_in_the_span() -> None:
    """Offsets floor(W u) of K = 3 uniforms: the range is < W, and its mean is W (K - 1) /
    (K + 1) = W / 2 up to the flooring (< 1 s), standard deviation W sqrt(2 (K - 1) /
    ((K + 1)^2 (K + 2))) = 0.2236 W. The group's first arrival is the anchor floor(S u) plus the
    least offset: mean S / 2 + W / (K + 1), within 4 sqrt((S^2 + W^2) / 12 / n) (less 1 s)."""
    num, size, window_s, span_s = 4000, 3, 900.0, 10_000
    groups = _groups(num, size, window_s, span_s, seed=1)
    times = groups.submit_time_s.reshape(num, size)
    assert groups.group.tolist() == np.repeat(np.arange(num), size).tolist()
    ranges = times.max(axis=1) - times.min(axis=1)
    assert ranges.max() < window_s
    assert abs(ranges.mean() - window_s / 2) <= SIGMAS * 0.2236 * window_s / math.sqrt(num) + 1
    firsts = times.min(axis=1)
    assert firsts.min() >= 0 and times.max() < span_s + window_s
    expected = span_s / 2 + window_s / (size + 1)
    bound = SIGMAS * math.sqrt((span_s**2 + window_s**2) / 12 / num) + 1.0
    assert abs(firsts.mean() - expected) <= bound


def test_widths_and_durations_follow_the_fitted_conditional_distributions() -> None:
    """Widths: the fitted 24 / 32 / 48-GPU weights 5 / 8 / 5 of 18. Durations: log Q is linear
    between the group's knots (0.5, median) and (1, max), so above the median log d is uniform on
    [log median, log max]: a quarter lie below median (max / median)^(1/4), half below the
    geometric midpoint (binomial bounds)."""
    num = 12_000
    groups = _groups(4000, 3, 600.0, 10_000, seed=2)
    assert set(groups.model) == {"resnet50"}
    for gpus, weight in ((24, 5), (32, 8), (48, 5)):
        share = float(np.mean(groups.num_gpus == gpus))
        assert abs(share - weight / 18) <= _binomial(weight / 18, num), gpus
    durations = groups.duration_iterations
    assert durations.min() > MEDIAN and durations.max() <= MAXIMUM
    for level in (0.25, 0.5, 0.75):
        below = float(np.mean(durations < MEDIAN * (MAXIMUM / MEDIAN) ** level))
        assert abs(below - level) <= _binomial(level, num), level


def test_the_other_knobs_shape_the_groups_too() -> None:
    """Duration spread 2 maps Q to m (Q / m)^2: above the median the log-uniform range doubles,
    so half the durations lie beyond the fitted maximum. A wide-mean tilt g^theta with theta > 0
    raises the 48-GPU share of the groups over its fitted 5 / 18."""
    num = 6000
    spread = _groups(2000, 3, 600.0, 10_000, seed=3, knobs=Knobs(duration_spread=2.0))
    durations = spread.duration_iterations
    assert durations.min() > MEDIAN and durations.max() <= MEDIAN * (MAXIMUM / MEDIAN) ** 2
    assert abs(float(np.mean(durations > MAXIMUM)) - 0.5) <= _binomial(0.5, num)
    knobs = Knobs(wide_mean_gpus=20.0)
    tilted = gpu_weights(SIA_PHILLY_GPU_COUNTS, knobs)  # the tilted mix a trace draws from
    groups = sample_wide_groups(np.random.default_rng(4), Knobs(wide_groups=2000), tilted,
                                SIA_PHILLY, 10_000)
    share = float(np.mean(groups.num_gpus == 48))
    assert share > 5 / 18 + _binomial(5 / 18, num)


def test_unused_group_settings_and_zero_groups_change_nothing(tmp_path: Path) -> None:
    knobs = Knobs(wide_groups=0, wide_group_size=7, wide_group_window_s=30.0)
    assert _rows(generate_sia_philly_like(160, 3, knobs=knobs)) == _rows(
        generate_sia_philly_like(160, 3))
    out = tmp_path / "g3.csv"
    assert main(["generate", "--seed", "3", "--output", str(out), "--wide-groups", "0"]) == 0
    bundled = default_data_dir() / "traces" / "sia-philly-gen-3.csv"
    assert out.read_bytes() == bundled.read_bytes()


def test_groups_are_deterministic_per_seed_and_regenerate(tmp_path: Path) -> None:
    knobs = Knobs(wide_groups=2, wide_group_size=2, wide_group_window_s=300.0)
    first, again = (generate_sia_philly_like(60, 7, knobs=knobs) for _ in range(2))
    assert _rows(first) == _rows(again)
    other = generate_sia_philly_like(60, 8, knobs=knobs)
    assert _rows(first) != _rows(other)
    flags = ["--wide-groups", "2", "--wide-group-size", "2", "--wide-group-window-s", "300"]
    out = tmp_path / "a.csv"
    assert main(["generate", "--num-jobs", "60", "--seed", "7", "--output", str(out),
                 *flags]) == 0
    text = out.read_text()
    assert text.splitlines()[0].endswith(
        "--seed 7 --wide-groups 2 --wide-group-size 2 --wide-group-window-s 300.0")
    assert [line for line in text.splitlines() if not line.startswith("#")] == (
        first.to_csv_text().splitlines())


def test_counts_are_whole_numbers() -> None:
    whole = Knobs(wide_groups=2.0, wide_group_size=4.0)  # type: ignore[arg-type]
    assert whole == Knobs(wide_groups=2, wide_group_size=4)
    assert isinstance(whole.wide_groups, int) and isinstance(whole.wide_group_size, int)
    with pytest.raises(ConfigError, match="--wide-group-size must be a whole number >= 1"):
        Knobs(wide_group_size=True)


@pytest.mark.parametrize(("args", "needle"), [
    (["--wide-groups", "-1"], "--wide-groups must be a whole number >= 0, got -1.0"),
    (["--wide-groups", "1.5"], "--wide-groups must be a whole number >= 0, got 1.5"),
    (["--wide-groups", "nan"], "--wide-groups must be a whole number >= 0, got nan"),
    (["--wide-group-size", "0"], "--wide-group-size must be a whole number >= 1, got 0.0"),
    (["--wide-group-window-s", "0"],
     "--wide-group-window-s must be a finite number in (0, 1e+09], got 0.0"),
    (["--wide-group-window-s", "inf"], "--wide-group-window-s must be a finite number"),
    (["--wide-groups", "4", "--num-jobs", "12"],
     "--wide-groups 4 x --wide-group-size 3 = 12 grouped jobs must be fewer than --num-jobs 12"),
    (["--wide-groups", "1", "--wide-share", "0"],
     "--wide-groups: the GPU-count mix has no count of 24 GPUs or more"),
])
def test_bad_group_values_are_one_line_errors_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str,
) -> None:
    out = tmp_path / "t.csv"
    assert main(["generate", "--num-jobs", "20", "--output", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err
    assert err.count("\n") == 1 and not out.exists()
