"""Tests of the Sia-Philly-like trace generator, the bundle and the profile command (traces/).

Statistical tolerances are 4 binomial (or Poisson) standard errors of the quantity tested, so a
correct generator fails a check with probability < 1e-4 per check; the seeds are fixed, so the
tests are deterministic.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError
from palgym.io import read_profile, read_sia_trace
from traces import generate_sia_philly_like, write_sia_philly_like
from traces.bundle import BUNDLED_PROFILES, BUNDLED_TRACES, default_data_dir
from traces.generate import SiaTraceTable
from traces.sia_philly_fit import (
    SIA_PHILLY_DURATION_KNOT_MIN_JOBS,
    SIA_PHILLY_DURATION_QUANTILES,
    SIA_PHILLY_GPU_COUNTS,
    SIA_PHILLY_JOBS_PER_HOUR,
    SIA_PHILLY_MODEL_DURATIONS,
    SIA_PHILLY_MODEL_GPU_COUNTS,
    DurationFit,
    SiaPhillyParams,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
LONGHORN_DIR = (  # optional public data; conftest checks it is complete when set
    Path(os.environ["PALGYM_DATA_DIR"]) / "variability" / "longhorn_pal"
    if os.environ.get("PALGYM_DATA_DIR")
    else None
)
NUM_BIG = 5_000
NUM_HUGE = 50_000  # per-group duration checks: >= 1,000 jobs even in the GPT2 group (2 %)
SIGMAS = 4.0


def _run_cli(*args: str, hash_seed: str = "0") -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env["PYTHONHASHSEED"] = hash_seed
    subprocess.run(
        [sys.executable, "-m", "traces", *args], cwd=REPO_ROOT, env=env, check=True,
        capture_output=True, timeout=60,
    )


def _binomial_tolerance(prob: float, num: int) -> float:
    return SIGMAS * math.sqrt(prob * (1.0 - prob) / num)


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    first = write_sia_philly_like(tmp_path / "a.csv", 160, 7).read_bytes()
    second = write_sia_philly_like(tmp_path / "b.csv", 160, 7).read_bytes()
    assert first == second


def test_same_bytes_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    for name, hash_seed in (("a.csv", "1"), ("b.csv", "98765")):
        _run_cli(
            "generate", "--kind", "sia-philly", "--num-jobs", "160", "--seed", "3",
            "--output", str(tmp_path / name), hash_seed=hash_seed,
        )
    in_process = write_sia_philly_like(tmp_path / "c.csv", 160, 3).read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes() == in_process


def test_different_seeds_differ() -> None:
    texts = {generate_sia_philly_like(160, seed).to_csv_text() for seed in range(5)}
    assert len(texts) == 5


def test_longer_trace_extends_shorter_one() -> None:
    short = generate_sia_philly_like(160, 11)
    long = generate_sia_philly_like(400, 11)
    assert long.to_csv_text().splitlines()[:161] == short.to_csv_text().splitlines()


def test_published_tables_are_consistent() -> None:
    """The model x GPU table has the published GPU mix and model counts as marginals."""
    gpu_marginal: dict[int, int] = {}
    model_marginal: dict[str, int] = {}
    for model, gpus, count in SIA_PHILLY_MODEL_GPU_COUNTS:
        gpu_marginal[gpus] = gpu_marginal.get(gpus, 0) + count
        model_marginal[model] = model_marginal.get(model, 0) + count
    assert gpu_marginal == dict(SIA_PHILLY_GPU_COUNTS)
    assert model_marginal == {
        "vgg19": 339, "PointNet": 306, "resnet50": 68, "DCGAN": 50, "BERT": 21, "GPT2": 16,
    }


@pytest.mark.parametrize("seed", [0, 1])
def test_gpu_mix_within_4_sigma(seed: int) -> None:
    """Each GPU count's share is within 4 binomial standard errors of the published share."""
    table = generate_sia_philly_like(NUM_BIG, seed)
    total = sum(count for _, count in SIA_PHILLY_GPU_COUNTS)
    assert set(np.unique(table.num_gpus).tolist()) <= {g for g, _ in SIA_PHILLY_GPU_COUNTS}
    for gpus, count in SIA_PHILLY_GPU_COUNTS:
        expected = count / total
        observed = float(np.mean(table.num_gpus == gpus))
        assert abs(observed - expected) <= _binomial_tolerance(expected, NUM_BIG), gpus


def test_model_mix_within_4_sigma_and_tied_to_gpu_count() -> None:
    table = generate_sia_philly_like(NUM_BIG, 2)
    models = np.array(table.model)
    total = sum(count for _, _, count in SIA_PHILLY_MODEL_GPU_COUNTS)
    for name in {m for m, _, _ in SIA_PHILLY_MODEL_GPU_COUNTS}:
        expected = sum(c for m, _, c in SIA_PHILLY_MODEL_GPU_COUNTS if m == name) / total
        observed = float(np.mean(models == name))
        assert abs(observed - expected) <= _binomial_tolerance(expected, NUM_BIG), name
    allowed = {(m, g) for m, g, _ in SIA_PHILLY_MODEL_GPU_COUNTS}
    assert set(zip(table.model, table.num_gpus.tolist(), strict=True)) <= allowed


def test_independent_models_option_breaks_the_tie() -> None:
    table = generate_sia_philly_like(NUM_BIG, 2, SiaPhillyParams(model_given_gpus=False))
    pairs = set(zip(table.model, table.num_gpus.tolist(), strict=True))
    assert ("vgg19", 16) in pairs and ("resnet50", 1) in pairs


def _group_mask(table: SiaTraceTable, fit: DurationFit) -> np.ndarray:
    """Jobs of ``fit``'s duration group: its model, GPU count in [min_gpus, next threshold)."""
    upper = min(
        (f.min_gpus for f in SIA_PHILLY_MODEL_DURATIONS
         if f.model == fit.model and f.min_gpus > fit.min_gpus),
        default=10**9,
    )
    in_model = np.array(table.model) == fit.model
    return in_model & (table.num_gpus >= fit.min_gpus) & (table.num_gpus < upper)


def _fit_id(fit: DurationFit) -> str:
    return f"{fit.model}-from-{fit.min_gpus}-gpus"


@pytest.fixture(scope="module")
def huge_table() -> SiaTraceTable:
    return generate_sia_philly_like(NUM_HUGE, 5)


def test_duration_fits_cover_the_public_jobs_and_follow_the_knot_rule() -> None:
    """Group sizes add up to the model x GPU table (resnet50: 50 jobs with 4 GPUs, 18 with
    24/32/48), and a fit keeps exactly the knots with n * min(p, 1 - p) >= 5."""
    per_model: dict[str, int] = {}
    for fit in SIA_PHILLY_MODEL_DURATIONS:
        per_model[fit.model] = per_model.get(fit.model, 0) + fit.jobs
        expected = [0.0] + [
            p for p in (0.10, 0.25, 0.50, 0.75, 0.90)
            if fit.jobs * min(p, 1.0 - p) >= SIA_PHILLY_DURATION_KNOT_MIN_JOBS - 1e-9
        ] + [1.0]
        assert [p for p, _ in fit.quantiles] == expected, _fit_id(fit)
    model_totals: dict[str, int] = {}
    for model, _, count in SIA_PHILLY_MODEL_GPU_COUNTS:
        model_totals[model] = model_totals.get(model, 0) + count
    assert per_model == model_totals
    resnet = {f.min_gpus: f.jobs for f in SIA_PHILLY_MODEL_DURATIONS if f.model == "resnet50"}
    big_resnet = sum(c for m, g, c in SIA_PHILLY_MODEL_GPU_COUNTS if m == "resnet50" and g >= 24)
    assert resnet == {1: 50, 24: big_resnet}


@pytest.mark.parametrize("fit", SIA_PHILLY_MODEL_DURATIONS, ids=_fit_id)
def test_duration_per_group_within_4_sigma(huge_table: SiaTraceTable, fit: DurationFit) -> None:
    """Per duration group (a model; resnet50 split at 24 GPUs) of a 50,000-job trace:

    - the share of the group's n durations <= each fitted interior knot q_p is within 4 binomial
      standard errors, 4 * sqrt(p (1 - p) / n), of p;
    - the group's median is within the fitted p50 up to a log-ratio of
      4 * sqrt(0.25 / n) * s, where s is the larger log-slope (d log Q / dp) of the quantile
      function on the two segments next to p50: the sample median's CDF position has standard
      error sqrt(0.25 / n), and Q turns an error dp into a log-error of at most s * dp (valid
      because 4 sigma stays inside those segments, which is asserted). E.g. GPT2 (n ~ 1,000):
      0.063 * 3.5 = 0.22; vgg19 (n ~ 21,000): 0.014 * 6.5 = 0.09;
    - all durations are whole iterations within the fitted [min, max].
    """
    durations = huge_table.duration_iterations[_group_mask(huge_table, fit)]
    num = int(durations.shape[0])
    assert num >= 800  # expected: 50,000 x the group's share (>= 2 %)
    for prob, value in fit.quantiles[1:-1]:
        observed = float(np.mean(durations <= value))
        assert abs(observed - prob) <= _binomial_tolerance(prob, num), (_fit_id(fit), prob)
    knots = list(fit.quantiles)
    mid = [p for p, _ in knots].index(0.5)
    (p_lo, q_lo), (_, q_50), (p_hi, q_hi) = knots[mid - 1], knots[mid], knots[mid + 1]
    prob_tolerance = _binomial_tolerance(0.5, num)
    assert prob_tolerance < min(0.5 - p_lo, p_hi - 0.5)
    slope = max(math.log(q_50 / q_lo) / (0.5 - p_lo), math.log(q_hi / q_50) / (p_hi - 0.5))
    log_error = abs(math.log(float(np.median(durations)) / q_50))
    assert log_error <= prob_tolerance * slope, (_fit_id(fit), log_error, prob_tolerance * slope)
    assert durations.min() >= fit.quantiles[0][1]
    assert durations.max() <= fit.quantiles[-1][1]
    assert np.array_equal(durations, np.rint(durations))


def test_durations_depend_on_the_model(huge_table: SiaTraceTable) -> None:
    """As in the public files: vgg19 / PointNet never above 3,417 iterations, resnet50 jobs with
    >= 24 GPUs never below 76,977, and the resnet50 median is ~60x the vgg19 one."""
    models = np.array(huge_table.model)
    durations = huge_table.duration_iterations
    assert durations[(models == "vgg19") | (models == "PointNet")].max() <= 3417
    assert durations[(models == "resnet50") & (huge_table.num_gpus >= 24)].min() >= 76977
    ratio = np.median(durations[models == "resnet50"]) / np.median(durations[models == "vgg19"])
    assert 30 <= ratio <= 150


@pytest.mark.parametrize("prob, published", SIA_PHILLY_DURATION_QUANTILES[1:-1])
def test_pooled_duration_option_within_4_sigma(prob: float, published: float) -> None:
    """``duration_given_model=False`` (the old, model-independent durations): the share below
    each published pooled percentile (p10, p50 = 1408, p90, p99) is within 4 binomial standard
    errors of its probability; the median also within 25 %."""
    params = SiaPhillyParams(duration_given_model=False)
    durations = generate_sia_philly_like(NUM_BIG, 5, params).duration_iterations
    observed = float(np.mean(durations <= published))
    assert abs(observed - prob) <= _binomial_tolerance(prob, NUM_BIG)
    if prob == 0.5:
        # 4 sigma in probability (0.028) times the quantile function's log-slope (<= 7.4).
        assert abs(math.log(float(np.median(durations)) / published)) <= 0.25
    assert durations.min() >= SIA_PHILLY_DURATION_QUANTILES[0][1]
    assert durations.max() <= SIA_PHILLY_DURATION_QUANTILES[-1][1]
    assert np.array_equal(durations, np.rint(durations))


def test_pooled_option_keeps_the_other_columns() -> None:
    """The duration option changes only ``duration``: the other streams are untouched."""
    default = generate_sia_philly_like(400, 9)
    pooled = generate_sia_philly_like(400, 9, SiaPhillyParams(duration_given_model=False))
    assert default.model == pooled.model
    assert np.array_equal(default.num_gpus, pooled.num_gpus)
    assert np.array_equal(default.submit_time_s, pooled.submit_time_s)
    assert not np.array_equal(default.duration_iterations, pooled.duration_iterations)


def test_arrival_rate_within_4_sigma() -> None:
    """The last arrival of J Poisson arrivals has relative standard deviation 1 / sqrt(J)."""
    table = generate_sia_philly_like(NUM_BIG, 4)
    expected_last_s = NUM_BIG * 3600.0 / SIA_PHILLY_JOBS_PER_HOUR
    relative_error = abs(float(table.submit_time_s[-1]) / expected_last_s - 1.0)
    assert relative_error <= SIGMAS / math.sqrt(NUM_BIG)
    assert (np.diff(table.submit_time_s) >= 0).all()


def test_generated_file_parses_like_a_pal_trace(tmp_path: Path) -> None:
    path = write_sia_philly_like(tmp_path / "t.csv", 160, 0)
    lines = path.read_text().splitlines()
    command = "python -m traces generate --kind sia-philly --num-jobs 160 --seed 0"
    assert lines[0] == f"# generated by: {command}"
    trace = read_sia_trace(path)
    assert trace.num_jobs == 160
    assert trace.job_id.tolist() == list(range(160))
    assert np.array_equal(trace.submit_time_s, np.floor(trace.submit_time_s))
    table = generate_sia_philly_like(160, 0)
    assert table.to_trace("t").content_hash() == trace.content_hash()


def test_invalid_arguments_raise_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        generate_sia_philly_like(0, 0)
    with pytest.raises(ConfigError):
        generate_sia_philly_like(10, -1)
    with pytest.raises(ConfigError):
        SiaPhillyParams(jobs_per_hour=0.0)
    with pytest.raises(ConfigError):
        SiaPhillyParams(duration_quantiles=((0.0, 10.0), (0.5, 5.0), (1.0, 20.0)))
    with pytest.raises(ConfigError):
        SiaPhillyParams(model_gpu_counts=(("vgg19", 1, 339),))
    no_gpt2 = tuple(f for f in SIA_PHILLY_MODEL_DURATIONS if f.model != "GPT2")
    with pytest.raises(ConfigError):
        SiaPhillyParams(model_durations=no_gpt2)
    with pytest.raises(ConfigError):
        SiaPhillyParams(model_durations=SIA_PHILLY_MODEL_DURATIONS + SIA_PHILLY_MODEL_DURATIONS[:1])
    with pytest.raises(ConfigError):
        SiaPhillyParams(
            model_durations=(*no_gpt2, DurationFit("GPT2", 1, 16, ((0.0, 9.0), (1.0, 8.0))))
        )
    with pytest.raises(ConfigError):  # the pooled option has no CLI equivalent
        write_sia_philly_like(
            tmp_path / "t.csv", 10, 0, SiaPhillyParams(duration_given_model=False)
        )


def test_bundle_reproduces_committed_files(tmp_path: Path) -> None:
    """``python -m traces bundle --output-dir TMP`` rewrites the committed files byte for byte
    (the profiles too, when the Longhorn measurement folder is available)."""
    args = ["bundle", "--output-dir", str(tmp_path)]
    items = [item.relative_path for item in BUNDLED_TRACES]
    if LONGHORN_DIR is not None:  # a missing folder makes the CLI fail, never drops the check
        args += ["--variability-data", str(LONGHORN_DIR)]
        items += [item.relative_path for item in BUNDLED_PROFILES]
    _run_cli(*args)
    for relative_path in items:
        committed = default_data_dir() / relative_path
        assert (tmp_path / relative_path).read_bytes() == committed.read_bytes(), relative_path


def test_committed_artifact_profile_matches_pal() -> None:
    """The single-run, seed-42 profile reproduces the PAL artifact's 64-GPU values.

    Source: PAL_MODEL.md section 1 (GPU 0 and GPU 35 class A of the artifact's profile).
    """
    profile = read_profile(default_data_dir() / "profiles" / "longhorn-1024-single-run.csv")
    assert profile.num_gpus == 1024
    np.testing.assert_allclose(
        profile.perfvar[:, 0], [0.953386, 0.999224, 0.993355, 0.999400], atol=1e-6
    )
    assert profile.perfvar[0, 35] == pytest.approx(2.827860, abs=1e-6)
