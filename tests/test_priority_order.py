"""The learned linear priority order (agents/priority): its features and keys by hand, the
orders its special weights reproduce (SRSF, SRTF, FIFO), its file, and the cross-entropy
training on an objective whose minimum is known."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from agents.priority.order import (
    FEATURES,
    SRSF_WEIGHTS,
    LinearPriorityOrder,
    job_features,
    read_order,
    save_order,
)
from agents.priority.train import train_cem
from palgym.errors import ConfigError
from palgym.policies.durations import DurationKnowledge, Durations
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import RemainingTime, preset
from palgym.simulate import make_episode, run_episode
from tests.toys import A, R, toy_profile, toy_trace


def _view(now_s: float, **columns: list[float]) -> SimpleNamespace:
    """A duck-typed SimView of len(columns) active jobs (what the order reads)."""
    n = len(columns["num_gpus"])
    jobs = SimpleNamespace(**{k: np.asarray(v, dtype=np.float64) for k, v in columns.items()})
    jobs.num_gpus = np.asarray(columns["num_gpus"], dtype=np.int64)
    jobs.priority = np.full(n, 999, dtype=np.int64)
    return SimpleNamespace(jobs=jobs, num_jobs=n, now_s=now_s,
                           active=lambda: np.arange(n, dtype=np.int64))


# Two jobs at t = 36,000 s (10 h): job 0, 4 GPUs, 1 h of work left, submitted at 0, never run;
# job 1, 1 GPU, 2 h left, submitted at 9 h. Job 0: 4 GPU-h left, queued 10 h; job 1: 2 GPU-h,
# queued 1 h.
VIEW = dict(now_s=36_000.0, num_gpus=[4, 1], submit_time_s=[0.0, 32_400.0],
            total_iterations=[3600.0, 7200.0], iterations_done=[0.0, 0.0],
            iteration_time_s=[1.0, 1.0], attained_service_s=[0.0, 0.0])


def test_features_by_hand() -> None:
    view = _view(**VIEW)
    phi = job_features(view, view.active())
    expected = [[math.log(5), math.log(2), math.log(11), math.log(4), 10 / 24],
                [math.log(3), math.log(3), math.log(2), 0.0, 1 / 24]]
    np.testing.assert_allclose(phi, expected, rtol=1e-12)
    assert phi.shape == (2, len(FEATURES))


def test_srsf_runs_the_smaller_job_and_aging_the_older_one() -> None:
    view = _view(**VIEW)
    # SRSF: 2 GPU-h (job 1) before 4 GPU-h (job 0).
    assert LinearPriorityOrder(SRSF_WEIGHTS).order(view).tolist() == [1, 0]
    # key = ln(1 + GPU-h) - a ln(1 + queued h): job 0 first once ln5 - a ln11 < ln3 - a ln2,
    # i.e. a > ln(5/3) / ln(11/2) = 0.2996...
    threshold = math.log(5 / 3) / math.log(11 / 2)
    assert LinearPriorityOrder((1, 0, -(threshold - 1e-3), 0, 0)).order(view).tolist() == [1, 0]
    assert LinearPriorityOrder((1, 0, -(threshold + 1e-3), 0, 0)).order(view).tolist() == [0, 1]


def test_a_negative_remaining_time_counts_as_none() -> None:
    # nominal remaining time (the artifact's) is T_it x N - attained, unclipped: it is negative
    # for a job that ran longer than its nominal duration; the order clips it at 0.
    view = _view(**{**VIEW, "attained_service_s": [7200.0, 0.0]})
    phi = job_features(view, view.active(), remaining=RemainingTime.NOMINAL)
    assert phi[0, 0] == 0.0 and phi[0, 1] == 0.0


def _episode(config_remaining: RemainingTime = RemainingTime.IDEAL):
    # 1 x 4 GPUs, six jobs of mixed widths and lengths arriving over 10 rounds.
    trace = toy_trace((2, 0.0, 900.0, A), (1, 0.0, 300.0, A), (4, 100.0, 200.0, A),
                      (1, 200.0, 1500.0, A), (2, 300.0, 400.0, A), (1, 1000.0, 100.0, A))
    config = preset("default", round_duration_s=R, srtf_remaining=config_remaining)
    return make_episode(trace, cluster=ClusterSpec(1, 4), config=config,
                        profile=toy_profile(4), seed=0)


@pytest.mark.parametrize(("weights", "order"), [
    (SRSF_WEIGHTS, "srsf"), ((0, 1, 0, 0, 0), "srtf"), ((0, 0, 0, 0, 0), "fifo")])
@pytest.mark.parametrize("placement", ["pal", "pal+backfill", "pal+easy"])
def test_special_weights_are_the_named_orders(weights: tuple, order: str,
                                              placement: str) -> None:
    # ln(1 + x) is increasing, so (1, 0, 0, 0, 0) sorts as SRSF's key and (0, 1, 0, 0, 0) as
    # SRTF's; all-zero keys tie and the stable sort keeps admission order, FIFO's.
    episode = _episode()
    named = run_episode(episode, placement, order).records.completion_time_s
    ours = run_episode(episode, placement, LinearPriorityOrder(weights)).records
    np.testing.assert_array_equal(ours.completion_time_s, named)


def test_the_order_refuses_bad_weights_and_unknown_durations() -> None:
    with pytest.raises(ConfigError, match="5 finite numbers"):
        LinearPriorityOrder((1.0, 0.0))
    with pytest.raises(ConfigError, match="5 finite numbers"):
        LinearPriorityOrder((1.0, math.nan, 0, 0, 0))
    with pytest.raises(ConfigError):
        LinearPriorityOrder(SRSF_WEIGHTS, Durations(DurationKnowledge.UNKNOWN))


def test_a_saved_order_reads_back_and_bad_files_name_the_field(tmp_path: Path) -> None:
    path = save_order(tmp_path / "o.json", np.array([1.0, 0.5, -2.0, 0.0, -0.25]),
                      "pal+backfill", {"seed": 3})
    weights, doc = read_order(path)
    assert weights == (1.0, 0.5, -2.0, 0.0, -0.25) and doc["training"] == {"seed": 3}
    bad = tmp_path / "bad.json"
    for text, field in [("{", "not a JSON"), ('{"format": "x"}', "field 'format'"),
                        (json.dumps({**doc, "weights": {"ln_gpus": 1}}), "field 'weights'"),
                        (json.dumps({**doc, "weights": dict.fromkeys(FEATURES, "1")}),
                         "field 'weights'")]:
        bad.write_text(text)
        with pytest.raises(ConfigError, match=field) as caught:
            read_order(bad)
        assert str(bad) in str(caught.value)
    with pytest.raises(ConfigError, match="cannot read"):
        read_order(tmp_path / "missing.json")


def test_cem_finds_a_known_minimum_and_keeps_the_validation_best() -> None:
    target = np.array([1.0, -0.5, -2.0, 0.3, 1.0])

    def train(w: np.ndarray) -> np.ndarray:
        return np.sum((w - target) ** 2, axis=1)

    validation_calls: list[np.ndarray] = []

    def validation(w: np.ndarray) -> np.ndarray:
        validation_calls.append(w[0].copy())
        return train(w)

    weights, log = train_cem(train, validation, iterations=25, population=40, elite=8,
                             seed=0)
    assert np.abs(weights - target).max() < 0.1
    assert len(log.validation) == 26 and log.validation[log.kept] == min(log.validation)
    np.testing.assert_array_equal(weights, validation_calls[log.kept])
    again, _ = train_cem(train, validation, iterations=25, population=40, elite=8, seed=0)
    np.testing.assert_array_equal(weights, again)


def test_cem_keeps_the_start_when_validation_never_improves() -> None:
    weights, log = train_cem(lambda w: np.zeros(len(w)), lambda w: np.zeros(len(w)),
                             iterations=3, population=4, elite=2, seed=1)
    assert log.kept == 0 and weights.tolist() == list(SRSF_WEIGHTS)
    with pytest.raises(ValueError):
        train_cem(lambda w: w[:, 0], lambda w: w[:, 0], iterations=1, population=2, elite=3,
                  seed=0)


def test_a_training_run_stops_at_its_limit_and_scores_as_documented() -> None:
    from agents.priority.train import STOP_RATIO, UNFINISHED_PENALTY, run_weights, score
    from agents.selection.runs import LabelledEpisode

    labelled = LabelledEpisode("toy", "toy", _episode())
    avg, unfinished = run_weights(labelled, "pal+backfill", SRSF_WEIGHTS)
    assert unfinished == 0
    total = avg * 6  # the toy's six jobs all complete
    # a limit below the total stops the run; at or above it, the run completes unchanged
    assert run_weights(labelled, "pal+backfill", SRSF_WEIGHTS, 0.5 * total)[1] == -1
    assert run_weights(labelled, "pal+backfill", SRSF_WEIGHTS, total * (1 + 1e-9)) == (avg, 0)
    # score: the limit is STOP_RATIO x the reference's avg x 6 jobs; a reference avg of
    # avg / (2 STOP_RATIO) puts it at half the run's own total, so the run is stopped
    ref = np.array([avg / (2 * STOP_RATIO)])
    value = score([labelled], "pal+backfill", [SRSF_WEIGHTS], ref)[0]
    assert value == pytest.approx(math.log(STOP_RATIO) + UNFINISHED_PENALTY)
    same = score([labelled], "pal+backfill", [SRSF_WEIGHTS], np.array([avg]))[0]
    assert same == 0.0


def test_under_a_floor_the_order_is_the_guards_base() -> None:
    # the training's floor runs the candidate as an aging guard's base order: with the hand
    # rule's weights it is the committed hand rule's guard, bit for bit; the floor (0.05 h =
    # 180 s, under two rounds) changes the schedule of the toy
    from agents.priority.train import run_weights
    from agents.selection.runs import LabelledEpisode

    episode = _episode()
    labelled = LabelledEpisode("toy", "toy", episode)
    weights = (1.0, 0.0, -2.0, 0.0, 0.0)
    floored = run_weights(labelled, "pal+backfill", weights, floor_hours=0.05)
    guard = run_episode(episode, "pal+backfill+age=0.05h:fifo/pal+easy",
                        "agents.priority.pretrained:ResponseRatio").metrics
    assert floored == (guard.avg_jct_s, 0)
    assert floored != run_weights(labelled, "pal+backfill", weights)


def test_score_runs_under_the_floor_it_is_given() -> None:
    # on the toy a 0.05 h floor changes the hand rule's schedule (the test above), so the
    # objective under the floor is the floored run's log ratio, not the unfloored one's
    from agents.priority.train import run_weights, score
    from agents.selection.runs import LabelledEpisode

    labelled = LabelledEpisode("toy", "toy", _episode())
    weights = (1.0, 0.0, -2.0, 0.0, 0.0)
    ref = np.array([1000.0])
    floored = run_weights(labelled, "pal+backfill", weights, floor_hours=0.05)[0]
    plain = run_weights(labelled, "pal+backfill", weights)[0]
    assert score([labelled], "pal+backfill", [weights], ref, floor_hours=0.05)[0] == \
        pytest.approx(math.log(floored / 1000.0), rel=1e-12)
    assert score([labelled], "pal+backfill", [weights], ref)[0] == \
        pytest.approx(math.log(plain / 1000.0), rel=1e-12)


def test_the_command_line_names_missing_data_and_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.priority.__main__ import main

    code = main(["grid", "--cache", str(tmp_path), "--data-dir", str(tmp_path), "--a", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "missing files" in err and "palgym.bench prepare" in err
