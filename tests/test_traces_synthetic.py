"""Philly-calibrated Poisson and Gavel-style generators (traces/synthetic.py).

Statistical tolerances are 4 binomial standard errors (fixed seeds: deterministic tests).
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
from traces.canonical_io import read_canonical, write_canonical
from traces.philly_fit import PHILLY_DURATIONS_BY_GPUS, PHILLY_GPU_COUNTS
from traces.synthetic import (
    GAVEL_MODELS,
    GAVEL_SCALE_FACTORS,
    generate_gavel,
    generate_philly_poisson,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
NUM = 20_000


def tolerance(prob: float, num: int) -> float:
    return 4.0 * math.sqrt(prob * (1.0 - prob) / num)


@pytest.mark.parametrize("make", [generate_gavel, generate_philly_poisson])
def test_seeded_and_prefix_stable(make) -> None:  # type: ignore[no-untyped-def]
    first, again, other = make(300, 5), make(300, 5), make(300, 6)
    assert first.content_hash() == again.content_hash() != other.content_hash()
    longer = make(600, 5)
    assert longer.to_csv_text().splitlines()[:301] == first.to_csv_text().splitlines()
    with pytest.raises(ConfigError):
        make(0, 1)
    with pytest.raises(ConfigError):
        make(10, -1)


def test_gavel_mix_and_log_uniform_durations() -> None:
    trace = generate_gavel(NUM, 1)
    gpus = trace.jobs["num_gpus"].to_numpy()
    for value, prob in GAVEL_SCALE_FACTORS:
        assert abs(np.mean(gpus == value) - prob) <= tolerance(prob, NUM), value
    minutes = trace.jobs["duration"].to_numpy() / 60.0
    assert minutes.min() >= 10**1.5 and minutes.max() <= 10**4
    # short jobs: log10(minutes) uniform on [1.5, 3): a quarter of them below 10^1.875
    short = np.mean(minutes < 1000.0)
    assert abs(short - 0.8) <= tolerance(0.8, NUM)
    quarter = np.mean(minutes < 10**1.875)
    assert abs(quarter - 0.2) <= tolerance(0.2, NUM)
    classes = dict(GAVEL_MODELS)
    assert all(classes[m] == c for m, c in zip(trace.jobs["model"], trace.jobs["perf_class"],
                                               strict=True))


def test_philly_poisson_follows_the_fit() -> None:
    trace = generate_philly_poisson(NUM, 2)
    gpus = trace.jobs["num_gpus"].to_numpy()
    total = sum(n for _, n in PHILLY_GPU_COUNTS)
    one_gpu = dict(PHILLY_GPU_COUNTS)[1] / total
    assert abs(np.mean(gpus == 1) - one_gpu) <= tolerance(one_gpu, NUM)
    duration = trace.jobs["duration"].to_numpy()
    single = duration[gpus == 1]
    p50 = dict(PHILLY_DURATIONS_BY_GPUS[0].quantiles)[0.5]
    assert abs(np.mean(single <= p50) - 0.5) <= tolerance(0.5, single.size)
    assert single.min() >= 1.0 and single.max() <= PHILLY_DURATIONS_BY_GPUS[0].quantiles[-1][1]
    assert set(trace.jobs["duration_unit"]) == {"seconds"}
    gaps = np.diff(trace.jobs["submit_time_s"].to_numpy())
    assert abs(gaps.mean() / (3600 / 31.47) - 1) <= 4 / math.sqrt(NUM)


@pytest.mark.parametrize("make", [generate_gavel, generate_philly_poisson])
def test_recorded_command_regenerates_identical_bytes(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    path = write_canonical(make(50, 9), tmp_path / "ours.csv")
    command = read_canonical(path).metadata["generated_by"]
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "traces"]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONHASHSEED="123")
    subprocess.run([sys.executable, *argv[1:], "--output", str(tmp_path / "cli.csv")],
                   cwd=tmp_path, env=env, check=True, capture_output=True, timeout=60)
    assert (tmp_path / "cli.csv").read_bytes() == path.read_bytes()
