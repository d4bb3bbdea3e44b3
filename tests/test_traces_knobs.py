"""The generator's regime knobs (traces/knobs.py, traces/arrivals.py): each knob's effect against
an expectation worked out independently, byte-identical defaults, determinism, clear errors.

Statistical tolerances are 4 standard errors of the quantity tested (derived per test), so a
correct generator fails a check with probability < 1e-4; the seeds are fixed, so the tests are
deterministic.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError
from traces.__main__ import main
from traces.arrivals import Mmpp2
from traces.bundle import BUNDLED_TRACES, default_data_dir
from traces.generate import generate_sia_philly_like, write_sia_philly_like
from traces.knobs import Knobs, gpu_weights
from traces.sia_philly_fit import (
    SIA_PHILLY_GPU_COUNTS,
    SIA_PHILLY_JOBS_PER_HOUR,
    SIA_PHILLY_MODEL_DURATIONS,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
SIGMAS = 4.0
NUM = 20_000
FITTED_WIDE = sum(w for g, w in SIA_PHILLY_GPU_COUNTS if g >= 2) / 800  # 461 / 800


def _binomial(prob: float, num: int) -> float:
    return SIGMAS * math.sqrt(prob * (1.0 - prob) / num)


def test_default_knobs_leave_every_bundled_trace_unchanged(tmp_path: Path) -> None:
    for item in BUNDLED_TRACES:
        written = write_sia_philly_like(tmp_path / "t.csv", item.num_jobs, item.seed,
                                        knobs=Knobs())
        assert written.read_bytes() == (default_data_dir() / item.relative_path).read_bytes()


def test_knob_flags_at_their_defaults_reproduce_the_bundled_file(tmp_path: Path) -> None:
    out = tmp_path / "g3.csv"
    assert main(["generate", "--kind", "sia-philly", "--seed", "3", "--output", str(out),
                 "--load", "1", "--burst-ratio", "1", "--duration-spread", "1.0",
                 "--burst-share", "0.2", "--regime", "base"]) == 0
    bundled = default_data_dir() / "traces" / "sia-philly-gen-3.csv"
    assert out.read_bytes() == bundled.read_bytes()


def test_load_scales_the_poisson_rate() -> None:
    """Load 2: the same exponential draws at half the scale, so (halving being exact in binary
    floating point) the floored times are ``floor(T / 2) = floor(T) // 2``; and the last of J
    arrivals, a Gamma(J) sum, has relative standard deviation 1 / sqrt(J)."""
    base = generate_sia_philly_like(NUM, 4)
    double = generate_sia_philly_like(NUM, 4, knobs=Knobs(load=2.0))
    assert np.array_equal(double.submit_time_s, base.submit_time_s // 2)
    expected_last_s = NUM * 3600.0 / (2.0 * SIA_PHILLY_JOBS_PER_HOUR)
    assert abs(double.submit_time_s[-1] / expected_last_s - 1.0) <= SIGMAS / math.sqrt(NUM)
    assert np.array_equal(double.num_gpus, base.num_gpus)
    assert np.array_equal(double.duration_iterations, base.duration_iterations)


def test_poisson_gaps_have_unit_coefficient_of_variation() -> None:
    """For exponential gaps the sample CV has standard error 1 / sqrt(n) (delta method with
    mu2 = 1, mu3 = 2, mu4 = 9: Var(s^2 / 4) + Var(mean) - Cov(mean, s^2) = 2 + 1 - 2 per n);
    flooring to whole seconds changes the CV by < 1e-4 at a mean gap of 112 s."""
    gaps = np.diff(generate_sia_philly_like(50_000, 5).submit_time_s).astype(np.float64)
    assert abs(gaps.std() / gaps.mean() - 1.0) <= SIGMAS / math.sqrt(gaps.size)


def test_mmpp_formulas_reduce_to_known_cases() -> None:
    """R = 1 is Poisson (SCV 1, Var N(t) = lambda t); an interrupted Poisson process (quiet
    rate 0) has hyperexponential gaps with SCV 1 + 2 lambda r1 / (r1 + r2)^2 (Kuczura, "The
    interrupted Poisson process as an overflow process", Bell Syst. Tech. J. 52(3), 1973)."""
    poisson = Mmpp2.from_burstiness(0.01, 1.0, 0.3, 500.0)
    assert poisson.interarrival_scv() == pytest.approx(1.0, rel=1e-9)
    assert poisson.interarrival_moment(1) == pytest.approx(100.0, rel=1e-9)
    assert poisson.count_variance(1000.0) == pytest.approx(10.0, rel=1e-9)
    ipp = Mmpp2((0.05, 0.0), (0.001, 0.0004))
    assert ipp.interarrival_scv() == pytest.approx(1.0 + 2 * 0.05 * 0.001 / 0.0014**2)
    bursty = Mmpp2.from_burstiness(0.01, 20.0, 0.1, 1800.0)
    assert bursty.mean_per_s == pytest.approx(0.01, rel=1e-12)
    assert bursty.burst_probability == pytest.approx(0.1, rel=1e-12)
    assert bursty.arrival_per_s[0] == pytest.approx(20.0 * bursty.arrival_per_s[1])


def test_bursty_arrivals_follow_the_mmpp() -> None:
    """Counts: N(t) within 4 sqrt(Var N(t)) of lambda t (the MMPP-2 count variance). Gaps:
    their mean square within 4 batch-means standard errors of E[X^2] (batches of 1,000 gaps,
    far longer than the ~90-gap burst cycle), so the CV matches the MMPP's, well above 1."""
    process = Mmpp2.from_burstiness(32.0 / 3600.0, 20.0, 0.1, 1800.0)
    times = process.sample_times(np.random.default_rng(7), 60_000)
    horizon_s = 0.8 * float(times[-1])
    count = int(np.searchsorted(times, horizon_s))
    expected = process.mean_per_s * horizon_s
    assert abs(count - expected) <= SIGMAS * math.sqrt(process.count_variance(horizon_s))
    squares = (np.diff(times, prepend=0.0) ** 2).reshape(60, 1000).mean(axis=1)
    standard_error = squares.std(ddof=1) / math.sqrt(squares.size)
    assert abs(squares.mean() - process.interarrival_moment(2)) <= SIGMAS * standard_error
    assert process.interarrival_scv() > 3.0

    table = generate_sia_philly_like(20_000, 8, knobs=Knobs(burst_ratio=20.0, burst_share=0.1))
    gaps = np.diff(table.submit_time_s).astype(np.float64)
    assert gaps.std() / gaps.mean() > 1.0 + SIGMAS / math.sqrt(gaps.size)


def test_wide_share_matches_the_request_and_keeps_the_wide_mix() -> None:
    table = generate_sia_philly_like(NUM, 9, knobs=Knobs(wide_share=0.8))
    wide = table.num_gpus >= 2
    assert abs(wide.mean() - 0.8) <= _binomial(0.8, NUM)
    fitted_wide = {g: w for g, w in SIA_PHILLY_GPU_COUNTS if g >= 2}
    total = sum(fitted_wide.values())
    for gpus, weight in fitted_wide.items():
        share = float(np.mean(table.num_gpus[wide] == gpus))
        assert abs(share - weight / total) <= _binomial(weight / total, int(wide.sum())), gpus


def test_wide_mean_matches_the_request_by_a_power_tilt() -> None:
    """The sample mean of the wide jobs' GPU counts is within 4 standard errors of the target,
    bounding their standard deviation by Popoviciu's (48 - 4) / 2; the wide share stays the
    fitted 461 / 800; and the tilt multiplies each wide weight by g^theta (log-linear)."""
    knobs = Knobs(wide_mean_gpus=14.0)
    table = generate_sia_philly_like(NUM, 10, knobs=knobs)
    wide = table.num_gpus[table.num_gpus >= 2]
    assert abs(wide.mean() - 14.0) <= SIGMAS * 22.0 / math.sqrt(wide.size)
    assert abs(wide.size / NUM - FITTED_WIDE) <= _binomial(FITTED_WIDE, NUM)
    tilted = dict(gpu_weights(SIA_PHILLY_GPU_COUNTS, knobs))
    counts = [g for g, _ in SIA_PHILLY_GPU_COUNTS if g >= 2]
    log_ratio = [math.log(tilted[g] / w) for g, w in SIA_PHILLY_GPU_COUNTS if g >= 2]
    slope, intercept = np.polyfit(np.log(counts), log_ratio, 1)
    assert slope > 0
    assert np.allclose(slope * np.log(counts) + intercept, log_ratio, atol=1e-9)
    narrower = generate_sia_philly_like(NUM, 10, knobs=Knobs(wide_mean_gpus=6.0))
    wide = narrower.num_gpus[narrower.num_gpus >= 2]
    assert abs(wide.mean() - 6.0) <= SIGMAS * 22.0 / math.sqrt(wide.size)


def test_duration_spread_keeps_the_median_and_scales_the_log_spread() -> None:
    """Same seed, same uniforms: each duration is m (d / m)^s up to the rounding of both to
    whole iterations (d in [d - 1/2, d + 1/2] maps into a known interval); per duration group
    half of the jobs stay below the unchanged median (binomial bound)."""
    spread = 1.5
    base = generate_sia_philly_like(NUM, 11)
    wider = generate_sia_philly_like(NUM, 11, knobs=Knobs(duration_spread=spread))
    assert np.array_equal(base.num_gpus, wider.num_gpus) and base.model == wider.model
    models = np.array(base.model)
    for fit in SIA_PHILLY_MODEL_DURATIONS:
        upper = min([f.min_gpus for f in SIA_PHILLY_MODEL_DURATIONS
                     if f.model == fit.model and f.min_gpus > fit.min_gpus], default=10**9)
        group = (models == fit.model) & (base.num_gpus >= fit.min_gpus) & (
            base.num_gpus < upper)
        median = dict(fit.quantiles)[0.5]
        d1, ds = base.duration_iterations[group], wider.duration_iterations[group]
        low = np.floor(median * ((d1 - 0.5) / median) ** spread)
        high = np.ceil(median * ((d1 + 0.5) / median) ** spread)
        assert ((ds >= low) & (ds <= high)).all(), fit.model
        below = float(np.mean(ds < median))
        assert abs(below - 0.5) <= _binomial(0.5, int(group.sum())), fit.model
        ratio = np.log(ds).std() / np.log(d1).std()
        assert ratio == pytest.approx(spread, rel=0.02), fit.model


@pytest.mark.parametrize(("flag", "value", "needle"), [
    ("--load", "0", "--load must be a finite number > 0, got 0.0"),
    ("--load", "nan", "--load must be a finite number"),
    ("--wide-share", "1.5", "--wide-share must be a finite number in [0, 1], got 1.5"),
    ("--wide-mean-gpus", "60", "--wide-mean-gpus must lie strictly between 4 and 48"),
    ("--wide-mean-gpus", "4", "--wide-mean-gpus must lie strictly between 4 and 48"),
    ("--burst-ratio", "0.5", "--burst-ratio must be a finite number >= 1, got 0.5"),
    ("--burst-share", "1", "--burst-share must be a finite number in (0, 1), got 1.0"),
    ("--burst-length-s", "-5", "--burst-length-s must be a finite number > 0, got -5.0"),
    ("--duration-spread", "5", "--duration-spread must be a finite number in (0, 4], got 5.0"),
    ("--regime", "nope", "--regime must be one of ['base',"),
])
def test_bad_knob_values_are_one_line_errors_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, needle: str,
) -> None:
    out = tmp_path / "t.csv"
    assert main(["generate", "--num-jobs", "10", "--output", str(out), flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err
    assert err.count("\n") == 1 and not out.exists()


def test_knobs_on_another_kind_are_refused(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    assert main(["generate", "--kind", "gavel", "--output", str(tmp_path / "g.csv"),
                 "--load", "2"]) == 2
    assert "apply to --kind sia-philly only" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--wide-share"):
        Knobs(wide_share=-0.1)


def test_knobbed_traces_are_identical_across_processes_and_regenerate(tmp_path: Path) -> None:
    flags = ["--regime", "bursty", "--wide-share", "0.7", "--wide-mean-gpus", "13",
             "--duration-spread", "1.3", "--load", "1.5"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    for name, hash_seed in (("a.csv", "1"), ("b.csv", "4242")):
        subprocess.run([sys.executable, "-m", "traces", "generate", "--seed", "12",
                        "--output", str(tmp_path / name), *flags], cwd=REPO_ROOT,
                       env={**env, "PYTHONHASHSEED": hash_seed}, check=True, timeout=60)
    assert main(["generate", "--seed", "12", "--output", str(tmp_path / "c.csv"), *flags]) == 0
    first = (tmp_path / "a.csv").read_bytes()
    assert first == (tmp_path / "b.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()
    command = first.decode().splitlines()[0].removeprefix("# generated by: ")
    assert "--burst-ratio" in command and "--regime" not in command
    argv = shlex.split(command)[3:] + ["--output", str(tmp_path / "d.csv")]
    assert main(argv) == 0
    assert (tmp_path / "d.csv").read_bytes() == first
