"""The bundled profile for clusters larger than its 1,024 GPUs (palgym.bundled.extend_profile).

Checked: sizes up to 1,024 are the file's first columns (unchanged results); larger sizes keep
the file's 1,024 GPUs, append whole bundled GPUs, agree with each other on shared GPUs, do not
depend on ``PYTHONHASHSEED``, warn once with the pinning command, and run an episode.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palgym import bundled
from palgym.bundled import BUNDLED_PROFILES, bundled_profile, bundled_profile_path, extend_profile
from palgym.errors import ProfileError
from palgym.io.profile_file import read_profile
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.simulate import make_episode, run_episode
from palgym.testing import random_trace

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLINGS = tuple(BUNDLED_PROFILES)
BUNDLED_GPUS = 1024


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warning afresh."""
    monkeypatch.setattr(bundled, "_WARNED", set())


def file_values(sampling: str) -> np.ndarray:
    """The bundled file's values, read directly (4, 1024)."""
    return read_profile(bundled_profile_path(sampling)).perfvar


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_sizes_up_to_the_file_are_its_first_columns(sampling: str) -> None:
    values = file_values(sampling)
    assert values.shape == (4, BUNDLED_GPUS)
    for size in (1, 64, BUNDLED_GPUS):
        assert np.array_equal(bundled_profile(sampling, size).perfvar, values[:, :size])


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_larger_cluster_keeps_the_file_and_appends_whole_bundled_gpus(sampling: str) -> None:
    values = file_values(sampling)
    profile = bundled_profile(sampling, 2048)
    assert profile.perfvar.shape == (4, 2048)
    assert np.array_equal(profile.perfvar[:, :BUNDLED_GPUS], values)
    # every appended GPU carries all four class values of one bundled GPU
    known = {tuple(column) for column in values.T}
    assert all(tuple(column) in known for column in profile.perfvar[:, BUNDLED_GPUS:].T)
    # drawn, not a tiled copy of the file
    assert not np.array_equal(profile.perfvar[:, BUNDLED_GPUS:], values)


def test_two_sizes_agree_on_the_gpus_they_share() -> None:
    small, large = bundled_profile("gpu-median", 1500), bundled_profile("gpu-median", 5000)
    assert np.array_equal(large.perfvar[:, :1500], small.perfvar)


def test_extension_draws_with_replacement_beyond_twice_the_file() -> None:
    profile = bundled_profile("single-run", 3 * BUNDLED_GPUS)
    assert profile.num_gpus == 3 * BUNDLED_GPUS
    assert np.isfinite(profile.perfvar).all() and (profile.perfvar > 0).all()


def test_same_profile_under_different_hash_seeds() -> None:
    code = ("from palgym.bundled import bundled_profile\n"
            "print(bundled_profile('gpu-median', 2048).content_hash(),"
            " bundled_profile('single-run', 2048).content_hash())")
    outputs = []
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO_ROOT)}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True, cwd=REPO_ROOT)
        outputs.append(done.stdout.strip())
    expected = (f"{bundled_profile('gpu-median', 2048).content_hash()} "
                f"{bundled_profile('single-run', 2048).content_hash()}")
    assert outputs == [expected, expected]


def test_warning_names_the_rule_and_the_pinning_command_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="palgym.bundled"):
        bundled_profile("gpu-median", 1024)
        assert caplog.records == []
        bundled_profile("gpu-median", 2048)
        bundled_profile("gpu-median", 2048)
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "covers 1024 GPUs, the cluster has 2048" in message
    assert "numpy.random.default_rng(1024)" in message
    assert "python -m traces model-profile --num-gpus 2048" in message
    assert "--output" in message and "evaluate.py --profile" in message


def test_bad_sizes_are_named() -> None:
    with pytest.raises(ProfileError, match="num_gpus must be >= 1, got 0"):
        bundled_profile("gpu-median", 0)
    small = bundled_profile("gpu-median", 8)
    with pytest.raises(ProfileError, match="cannot extend a 8-GPU profile to 4 GPUs"):
        extend_profile(small, 4)


@pytest.mark.parametrize("preset_name", ["default", "pal-artifact"])
def test_a_2048_gpu_episode_runs_to_the_end(preset_name: str) -> None:
    cluster = ClusterSpec(512, 4)
    rng = np.random.default_rng(7)
    trace = random_trace(rng, 12, cluster, max_submit_s=600.0, max_duration_s=900.0,
                         sizes=(1, 4, 1100, 2048))
    config = preset(preset_name, background_jobs_per_hour=0.0)
    episode = make_episode(trace, cluster=cluster, config=config, seed=3)
    assert episode.profile.num_gpus == 2048
    result = run_episode(episode, "pal", "fifo")
    assert result.records.job_id.shape == (12,)
    assert np.isfinite(result.records.completion_time_s).all()
    assert (result.records.completion_time_s > result.records.submit_time_s).all()
