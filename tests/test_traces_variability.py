"""Variability inputs of any size, the fitted core + tail model and profile drift.

Statistical tolerances are 4 binomial standard errors (fixed seeds: deterministic tests).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtr

from palgym.errors import ConfigError, ProfileError
from palgym.io import read_measurements, read_profile
from palgym.sim.variability import VariabilityProfile
from traces.drift import DriftParams, ProfileDrift, drift_rounds
from traces.variability_io import load_runs_table, profile_for_cluster, profile_from_runs
from traces.variability_model import (
    LONGHORN_MODEL,
    ClassVariabilityModel,
    fit_class_model,
    sample_model_profile,
)

RUNS = """exp,uuid,perf,temp
r,g1,10.0,40
r,g2,20.0,41
r,g1,12.0,40
r,g3,30.0,39
r,g2,22.0,45
"""
PAL_PER_GPU = """GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD
0,0,1.0,1.1,1.2,1.3
1,0,2.0,2.1,2.2,2.3
2,1,3.0,3.1,3.2,3.3
"""


def test_runs_table_normalises_by_the_file_median(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(RUNS)
    table = load_runs_table(path)
    # median perf of the file = 20
    assert table.norm_runs.tolist() == [0.5, 1.0, 0.6, 1.5, 1.1]
    assert table.gpu_ids == ("g1", "g2", "g3")
    assert table.gpu_medians.tolist() == pytest.approx([0.55, 1.05, 1.5])
    profile = profile_from_runs([path] * 4, 5, seed=1)
    assert profile.perfvar.shape == (4, 5)  # 5 > 3 GPUs: drawn with replacement
    assert set(np.round(profile.perfvar.ravel(), 12)) <= {0.55, 1.05, 1.5}


@pytest.mark.parametrize("text, line, field", [
    ("uuid,perf\ng1,-1\n", 2, "perf"), ("uuid,perf\ng1,1\n,2\n", 3, "uuid"),
    ("uuid,perf\ng1,abc\n", 2, "perf"), ("uuid\ng1\n", 1, "perf"), ("uuid,perf\n", 2, None),
])
def test_runs_table_errors_name_line_and_field(tmp_path: Path, text: str, line: int,
                                               field: str | None) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ProfileError) as error:
        load_runs_table(path)
    assert (error.value.line, error.value.field) == (line, field)
    assert str(path) in str(error.value)


def test_per_gpu_table_larger_or_smaller_than_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "pal.csv"
    path.write_text(PAL_PER_GPU)
    profile = read_profile(path)
    assert profile_for_cluster(profile, 2).perfvar[:, 1].tolist() == [2.0, 2.1, 2.2, 2.3]
    with pytest.raises(ProfileError):
        profile_for_cluster(profile, 4, "first")
    small = profile_for_cluster(profile, 2, "resample", seed=0)
    columns = {tuple(c) for c in small.perfvar.T.tolist()}
    assert len(columns) == 2 and columns <= {tuple(c) for c in profile.perfvar.T.tolist()}
    big = profile_for_cluster(profile, 7, "resample", seed=0)
    # each simulated GPU is one measured GPU: its classes stay together
    assert all(round(c[1] - c[0], 9) == 0.1 for c in big.perfvar.T.tolist())
    with pytest.raises(ConfigError):
        profile_for_cluster(profile, 2, "stretch")


def test_fit_recovers_hand_computed_values() -> None:
    # log values: 0 x 5, +-0.01, and one tail GPU at log 0.5
    values = np.exp([0.0, 0.0, 0.0, 0.0, 0.0, 0.01, -0.01, 0.01, -0.01, 0.5])
    model = fit_class_model(values)
    assert model.mu == pytest.approx(0.0, abs=1e-15)
    # |x - mu| = 0 x5, 0.01 x4, 0.5: median = 0.005 -> sigma = 1.4826 x 0.005
    assert model.sigma == pytest.approx(1.4826 * 0.005)
    assert model.tail_prob == pytest.approx(0.1)
    assert model.tail_mean == pytest.approx(0.5 - 3 * 1.4826 * 0.005)


def test_model_samples_follow_core_and_tail() -> None:
    model = ClassVariabilityModel(mu=0.0, sigma=0.02, tail_prob=0.05, tail_mean=0.1, num_gpus=1)
    num = 40_000
    x = np.log(model.sample(np.random.default_rng(3), num))
    tail = x > model.threshold
    assert abs(tail.mean() - 0.05) <= 4 * math.sqrt(0.05 * 0.95 / num)
    # core: truncated normal, so P(x <= mu | core) = 0.5 / Phi(3)
    core = x[~tail]
    expected = 0.5 / ndtr(3.0)
    assert abs(np.mean(core <= 0.0) - expected) <= 4 * math.sqrt(0.25 / core.size)
    # tail excess: exponential with mean 0.1 -> P(excess > 0.1) = e^-1
    excess = x[tail] - model.threshold
    assert abs(np.mean(excess > 0.1) - math.exp(-1)) <= 4 * math.sqrt(0.25 / excess.size)


def test_model_profile_any_size_seeded_and_prefix_stable() -> None:
    small = sample_model_profile(64, seed=2)
    big = sample_model_profile(4096, seed=2)
    assert np.array_equal(big.perfvar[:, :64], small.perfvar)
    assert sample_model_profile(64, seed=2).content_hash() == small.content_hash()
    assert sample_model_profile(64, seed=3).content_hash() != small.content_hash()
    # class A: P(x <= mu) = (1 - tail_prob) x 0.5 / Phi(3) (core truncated at 3 sigma)
    a = np.log(big.perfvar[0])
    expected = (1 - LONGHORN_MODEL[0].tail_prob) * 0.5 / ndtr(3.0)
    assert abs(np.mean(a <= LONGHORN_MODEL[0].mu) - expected) <= 4 * math.sqrt(0.25 / 4096)
    with pytest.raises(ConfigError):
        sample_model_profile(0)


def test_drift_is_seeded_and_has_the_stated_structure() -> None:
    base = VariabilityProfile("b", np.array([[1.0, 2.0], [1.0, 2.0], [1.5, 1.0], [1.0, 1.0]]))
    rounds = drift_rounds(base, 50, seed=4)
    assert rounds.shape == (50, 4, 2)
    assert np.array_equal(rounds, drift_rounds(base, 50, seed=4))
    ratio = rounds / base.perfvar
    # one factor per GPU and round, shared by the classes
    assert np.allclose(ratio, ratio[:, :1, :])
    quiet = drift_rounds(base, 5, DriftParams(noise_sigma=0.0, throttle_start_prob=0.0))
    assert np.array_equal(quiet, np.broadcast_to(base.perfvar, (5, 4, 2)))


def test_throttle_episodes_last_their_rounds() -> None:
    base = VariabilityProfile.homogeneous(3)
    params = DriftParams(noise_sigma=0.0, throttle_start_prob=1.0, throttle_factor=2.0,
                         throttle_rounds=3)
    drift = ProfileDrift(base, params, seed=0)
    values = [float(drift.next_round()[0, 0]) for _ in range(7)]
    # always restarted as soon as one ends: throttled every round
    assert values == [2.0] * 7
    params = DriftParams(noise_sigma=0.0, throttle_start_prob=0.3, throttle_rounds=4,
                         throttle_factor=3.0)
    series = drift_rounds(VariabilityProfile.homogeneous(200), 400, params, seed=1)[:, 0, :]
    throttled = series == 3.0
    assert set(np.unique(series).tolist()) == {1.0, 3.0}
    # stationary share of throttled GPU-rounds: each episode (4 rounds) follows a geometric wait
    # of mean (1 - p) / p idle rounds -> share = 4 / (4 + (1 - p) / p)
    expected = 4 / (4 + 0.7 / 0.3)
    assert abs(throttled[50:].mean() - expected) < 0.02
    with pytest.raises(ConfigError):
        DriftParams(throttle_factor=0.5)


def test_longhorn_fit_and_runs_loader_match_the_data(data_dir: Path) -> None:
    folder = data_dir / "variability" / "longhorn_pal"
    measurements = read_measurements(folder)
    files = ["resnet-longhorn-agg.csv", "bert-longhorn-agg.csv", "bert-longhorn-agg.csv",
             "pagerank-longhorn-agg.csv"]
    for perf_class, file_name in enumerate(files):
        table = load_runs_table(folder / file_name)
        assert np.allclose(np.sort(table.gpu_medians),
                           np.sort(measurements.gpu_medians[perf_class]), rtol=0, atol=1e-12)
        refit = fit_class_model(table.gpu_medians)
        assert refit == LONGHORN_MODEL[perf_class] or np.allclose(
            [refit.mu, refit.sigma, refit.tail_prob, refit.tail_mean],
            [LONGHORN_MODEL[perf_class].mu, LONGHORN_MODEL[perf_class].sigma,
             LONGHORN_MODEL[perf_class].tail_prob, LONGHORN_MODEL[perf_class].tail_mean],
            rtol=1e-12, atol=0,
        )
