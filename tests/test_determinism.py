"""Determinism and RNG discipline (docs/ARCHITECTURE.md; docs/TESTING.md failure mode 20).

Equal seeds give bit-identical results for every policy; the seed only feeds the random streams;
results do not depend on the interpreter's string-hash seed; and running an episode never touches
the global ``random`` / ``np.random`` state.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palgym.policies import PLACEMENT_NAMES, SlowdownFactors
from palgym.policies.registry import DRAWING_PLACEMENT_NAMES
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.metrics import JobRecords
from palgym.simulate import Episode, EpisodeResult, make_episode, run_episode, slowdown_factors
from palgym.testing import random_profile, random_trace

REPO_ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ClusterSpec(4, 4)
RECORD_FIELDS = ("job_id", "submit_time_s", "first_start_time_s", "completion_time_s", "num_gpus",
                 "perf_class", "num_preemptions")
RANDOM_POLICIES = tuple(DRAWING_PLACEMENT_NAMES)  # the placements that draw random numbers
DETERMINISTIC_POLICIES = tuple(p for p in PLACEMENT_NAMES if p not in RANDOM_POLICIES)


def build_episode(preset_name: str, seed: int, **options: object) -> Episode:
    """A fresh 20-job episode on 4x4 (trace and profile fixed by their own generator)."""
    rng = np.random.default_rng(123)
    trace = random_trace(rng, 20, CLUSTER, max_submit_s=7200.0, max_duration_s=1800.0)
    profile = random_profile(rng, CLUSTER.num_gpus)
    options = {"background_jobs_per_hour": 0.0, **options}
    return make_episode(trace, cluster=CLUSTER, config=preset(preset_name, **options),
                        profile=profile, seed=seed)


def records_digest(records: JobRecords) -> str:
    digest = hashlib.sha256()
    for name in RECORD_FIELDS:
        digest.update(getattr(records, name).tobytes())
    return digest.hexdigest()


def assert_bit_identical(first: EpisodeResult, second: EpisodeResult) -> None:
    for name in RECORD_FIELDS:
        a, b = getattr(first.records, name), getattr(second.records, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert repr(first.metrics) == repr(second.metrics)
    assert first.num_rounds == second.num_rounds
    assert first.episode_hash == second.episode_hash


_FACTORS: dict[str, SlowdownFactors] = {}


def factors_for(preset_name: str) -> SlowdownFactors:
    if preset_name not in _FACTORS:
        _FACTORS[preset_name] = slowdown_factors(build_episode(preset_name, 0))
    return _FACTORS[preset_name]


@pytest.mark.parametrize("preset_name", ["default", "pal-artifact"])
def test_slowdown_factors_are_deterministic(preset_name: str) -> None:
    first = factors_for(preset_name)
    second = slowdown_factors(build_episode(preset_name, 0))
    assert first.sf.tobytes() == second.sf.tobytes()
    assert first.labels.tobytes() == second.labels.tobytes()


@pytest.mark.parametrize("queue_order", ["fifo", "las"])
@pytest.mark.parametrize("preset_name", ["default", "pal-artifact"])
@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_same_seed_bit_identical(policy: str, preset_name: str, queue_order: str) -> None:
    factors = factors_for(preset_name)
    first = run_episode(build_episode(preset_name, 5), policy, queue_order, factors)
    second = run_episode(build_episode(preset_name, 5), policy, queue_order, factors)
    assert_bit_identical(first, second)
    assert first.metrics.num_completed == 20


def test_different_seeds_change_only_random_policies() -> None:
    # Default preset with an explicit profile: the seed feeds only the placement stream, so the
    # random policies differ between seeds and the deterministic ones do not.
    factors = factors_for("default")
    for policy in RANDOM_POLICIES:
        digests = {records_digest(run_episode(build_episode("default", seed), policy,
                                              "fifo", factors).records) for seed in (0, 1, 2)}
        assert len(digests) > 1, f"{policy}: three seeds gave identical records"
    for policy in DETERMINISTIC_POLICIES:
        digests = {records_digest(run_episode(build_episode("default", seed), policy,
                                              "fifo", factors).records) for seed in (0, 1)}
        assert len(digests) == 1, f"{policy} depends on the seed"


def test_artifact_streams_are_fixed_by_the_artifact_seeds() -> None:
    # pal-artifact replays random.Random(42) (profile draw, then Random placement) whatever the
    # episode seed, so even the random policies repeat across seeds.
    factors = factors_for("pal-artifact")
    for policy in RANDOM_POLICIES:
        first = run_episode(build_episode("pal-artifact", 0), policy, "fifo", factors)
        second = run_episode(build_episode("pal-artifact", 99), policy, "fifo", factors)
        assert records_digest(first.records) == records_digest(second.records)


def test_reusing_an_episode_repeats_the_run() -> None:
    # Every run gets its own copy of the placement stream: running other policies on the same
    # Episode object in between changes nothing.
    factors = factors_for("default")
    episode = build_episode("default", 3)
    first = run_episode(episode, "random-sticky", "las", factors)
    run_episode(episode, "random-non-sticky", "fifo", factors)
    run_episode(episode, "pal", "fifo", factors)
    assert_bit_identical(first, run_episode(episode, "random-sticky", "las", factors))


def test_background_arrivals_are_deterministic() -> None:
    # pal-artifact with its background copies (random.Random(1) inter-arrival stream) on.
    factors = factors_for("pal-artifact")
    first = run_episode(build_episode("pal-artifact", 0, background_jobs_per_hour=2.0),
                        "random-sticky", "fifo", factors)
    second = run_episode(build_episode("pal-artifact", 0, background_jobs_per_hour=2.0),
                         "random-sticky", "fifo", factors)
    assert_bit_identical(first, second)


def test_global_random_state_untouched() -> None:
    random.seed(2024)
    np.random.seed(2024)
    python_state = random.getstate()
    numpy_state = np.random.get_state()
    runs: tuple[tuple[str, dict[str, object]], ...] = (
        ("default", {}), ("pal-artifact", {"background_jobs_per_hour": 2.0}),
    )
    for preset_name, options in runs:
        episode = build_episode(preset_name, 11, **options)
        factors = slowdown_factors(episode)
        for policy in PLACEMENT_NAMES:
            run_episode(episode, policy, "fifo", factors)
    assert random.getstate() == python_state
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and after[2:] == numpy_state[2:]
    np.testing.assert_array_equal(after[1], numpy_state[1])
    assert after[2:] == numpy_state[2:]


HASH_SCRIPT = """
import hashlib
import numpy as np
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.simulate import make_episode, run_episode
from palgym.testing import random_profile, random_trace

cluster = ClusterSpec(4, 4)
digest = hashlib.sha256()
for preset_name, policy, order in (("default", "random-sticky", "las"), ("default", "pal", "srtf"),
                                   ("pal-artifact", "random-non-sticky", "fifo")):
    rng = np.random.default_rng(123)
    trace = random_trace(rng, 20, cluster, max_submit_s=7200.0, max_duration_s=1800.0)
    profile = random_profile(rng, cluster.num_gpus)
    config = preset(preset_name, background_jobs_per_hour=0.0)
    episode = make_episode(trace, cluster=cluster, config=config, profile=profile, seed=5)
    records = run_episode(episode, policy, order).records
    for name in ("job_id", "submit_time_s", "first_start_time_s", "completion_time_s",
                 "num_gpus", "perf_class", "num_preemptions"):
        digest.update(getattr(records, name).tobytes())
print(digest.hexdigest())
"""


def test_results_do_not_depend_on_the_string_hash_seed() -> None:
    # Two interpreters with different PYTHONHASHSEED (set / dict-of-str iteration orders differ)
    # must print the same digest of the records, equal to this process's.
    procs = []
    for hash_seed in ("0", "987654321"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO_ROOT)}
        procs.append(subprocess.Popen([sys.executable, "-c", HASH_SCRIPT], env=env, cwd=REPO_ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    digest = hashlib.sha256()
    for preset_name, policy, order in (("default", "random-sticky", "las"),
                                       ("default", "pal", "srtf"),
                                       ("pal-artifact", "random-non-sticky", "fifo")):
        records = run_episode(build_episode(preset_name, 5), policy, order).records
        for name in RECORD_FIELDS:
            digest.update(getattr(records, name).tobytes())
    assert outputs[0] == outputs[1] == digest.hexdigest()


# --------------------------------------------------------------------------- public data
def test_artifact_profile_draw_from_public_measurements(data_dir: Path) -> None:
    # PAL_MODEL section 1: random.Random(42), for g, for c: choice(norm runs of the class file)
    # gives GPU 0 = (0.953386, 0.999224, 0.993355, 0.999400) and GPU 35 class A = 2.827860.
    folder = data_dir / "variability" / "longhorn_pal"
    trace = random_trace(np.random.default_rng(0), 4, ClusterSpec(16, 4))
    episode = make_episode(trace, cluster=ClusterSpec(16, 4), config=preset("pal-artifact"),
                           variability_data=folder, seed=0)
    perfvar = episode.profile.perfvar
    np.testing.assert_allclose(perfvar[:, 0], [0.953386, 0.999224, 0.993355, 0.999400],
                               atol=5e-7)
    assert perfvar[0, 35] == pytest.approx(2.827860, abs=5e-7)
    # The seed does not matter for the artifact's draw.
    again = make_episode(trace, cluster=ClusterSpec(16, 4), config=preset("pal-artifact"),
                         variability_data=folder, seed=7)
    assert again.profile.perfvar.tobytes() == perfvar.tobytes()


def test_gpu_median_profile_follows_the_seed(data_dir: Path) -> None:
    folder = data_dir / "variability" / "longhorn_pal"
    trace = random_trace(np.random.default_rng(0), 4, CLUSTER)

    def profile_bytes(seed: int) -> bytes:
        episode = make_episode(trace, cluster=CLUSTER, config=preset("default"),
                               variability_data=folder, seed=seed)
        return episode.profile.perfvar.tobytes()

    assert profile_bytes(1) == profile_bytes(1)
    assert profile_bytes(1) != profile_bytes(2)
