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
from traces.generate import (
    SIA_PHILLY_DURATION_QUANTILES,
    SIA_PHILLY_GPU_COUNTS,
    SIA_PHILLY_JOBS_PER_HOUR,
    SIA_PHILLY_MODEL_GPU_COUNTS,
    SiaPhillyParams,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
LONGHORN_DIR = (  # optional public data; the tests that need it skip without it
    Path(os.environ["PALGYM_DATA_DIR"]) / "variability" / "longhorn_pal"
    if os.environ.get("PALGYM_DATA_DIR")
    else None
)
NUM_BIG = 5_000
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


@pytest.mark.parametrize("prob, published", SIA_PHILLY_DURATION_QUANTILES[1:-1])
def test_duration_percentiles_within_4_sigma(prob: float, published: float) -> None:
    """The share of durations below each published percentile (p10, p50 = 1408, p90, p99) is
    within 4 binomial standard errors of its probability; the median also within 25 %."""
    durations = generate_sia_philly_like(NUM_BIG, 5).duration_iterations
    observed = float(np.mean(durations <= published))
    assert abs(observed - prob) <= _binomial_tolerance(prob, NUM_BIG)
    if prob == 0.5:
        # 4 sigma in probability (0.028) times the quantile function's log-slope (<= 7.4).
        assert abs(math.log(float(np.median(durations)) / published)) <= 0.25
    assert durations.min() >= SIA_PHILLY_DURATION_QUANTILES[0][1]
    assert durations.max() <= SIA_PHILLY_DURATION_QUANTILES[-1][1]
    assert np.array_equal(durations, np.rint(durations))


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


def test_invalid_arguments_raise_config_error() -> None:
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


def test_bundle_reproduces_committed_files(tmp_path: Path) -> None:
    """``python -m traces bundle --output-dir TMP`` rewrites the committed files byte for byte
    (the profiles too, when the Longhorn measurement folder is available)."""
    args = ["bundle", "--output-dir", str(tmp_path)]
    items = [item.relative_path for item in BUNDLED_TRACES]
    if LONGHORN_DIR is not None and LONGHORN_DIR.is_dir():
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
