"""Unfinished episodes: completed / total jobs, censored JCT and the stall detector, on toys
worked out by hand (PAL_MODEL section 6, "Unfinished episodes")."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from toys import toy_profile, toy_trace

from agents.evaluation.comparison import heuristic_table
from palgym.errors import ConfigError
from palgym.report import Evaluation, EvaluationSetup
from palgym.report_output import format_report, results_csv, results_json
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.simulate import (
    DEFAULT_ROUND_CAP,
    DEFAULT_STALL_FACTOR,
    StallDetector,
    make_episode,
    run_episode,
)

R = 360.0
LF = 1.7  # the default preset's locality penalty


def starving_episode(stall_rounds: int = 1_000_000):  # type: ignore[no-untyped-def]
    """One GPU, LAS, a background copy of the trace's jobs every ~3.6 s (1000 jobs/h, never a
    gap of a whole round). Job 0 (1000 s of work) runs round [0, 360); job 1 (100 s) wins the
    tie at attained 0 against the later copies and runs [360, 720), completing at 720. From
    then on a fresh copy with 0 attained service always heads the LAS queue: job 0 (attained
    360) never runs again."""
    trace = toy_trace((1, 0.0, 1000.0, 0), (1, 0.0, 100.0, 0))
    config = preset("default", round_duration_s=R, background_jobs_per_hour=1000.0,
                    max_rounds=stall_rounds)
    return make_episode(trace, cluster=ClusterSpec(1, 1), config=config,
                        profile=toy_profile(1), seed=0)


def test_a_starving_job_is_reported_truncated_with_censored_jct() -> None:
    result = run_episode(starving_episode(), "packed-non-sticky", "las")
    metrics = result.metrics
    # By hand: at job 1's completion (t = 720) the unfinished work is job 0's 640 iterations x
    # T_it 1 s x slowest perfvar 1.0 x lf 1.7 = 1088 s; deadline 720 + 3 x 1088 + 1 x 360 =
    # 4344 s; the first boundary after it is 13 x 360 = 4680 s.
    assert DEFAULT_STALL_FACTOR == 3.0 and DEFAULT_ROUND_CAP == 200_000
    assert metrics.truncated and (metrics.num_completed, metrics.num_jobs) == (1, 2)
    assert metrics.completed_text == "1/2"
    assert metrics.truncation_reason.startswith("stalled: 1 of 2 measured jobs can never complete")
    assert result.num_rounds == 13 and metrics.end_time_s == 4680.0
    assert np.isnan(result.records.completion_time_s[0])
    assert result.records.completion_time_s[1] == 720.0
    assert metrics.avg_jct_s == 720.0  # completed jobs only
    assert metrics.censored_avg_jct_s == (4680.0 + 720.0) / 2  # job 0 counted up to 4680
    assert metrics.censored_p99_jct_s == pytest.approx(720.0 + 0.99 * (4680.0 - 720.0))


def test_max_rounds_truncates_with_its_reason() -> None:
    # stall detector off: the cap of 20 rounds stops it at t = 20 x 360 = 7200 s
    result = run_episode(starving_episode(stall_rounds=20), "packed-non-sticky", "las",
                         stall_factor=math.inf)
    metrics = result.metrics
    assert metrics.truncated and metrics.completed_text == "1/2"
    assert metrics.truncation_reason == "max_rounds (20) reached"
    assert metrics.end_time_s == 7200.0
    assert metrics.censored_avg_jct_s == (7200.0 + 720.0) / 2


def test_a_finished_episode_has_equal_plain_and_censored_metrics() -> None:
    # FIFO on the same stream: job 0 runs [0, 1080) (1000 s of work, 3 rounds), job 1 then
    # [1080, 1440): JCTs 1080 and 1440; the background copies arrive after them in FIFO.
    result = run_episode(starving_episode(), "packed-non-sticky", "fifo")
    metrics = result.metrics
    assert not metrics.truncated and metrics.truncation_reason == ""
    assert list(result.records.jct_s) == [1080.0, 1440.0]
    assert metrics.avg_jct_s == metrics.censored_avg_jct_s == 1260.0
    assert metrics.p99_jct_s == metrics.censored_p99_jct_s
    assert metrics.end_time_s == 1440.0


def test_detector_deadline_and_bad_factor() -> None:
    episode = starving_episode()
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    detector = StallDetector(sim, 2.0)
    # t = 0, nothing completed: W = (1000 + 100) x 1.7 = 1870 s; deadline 2 x 1870 + 2 x 360
    assert detector.work_s == pytest.approx(1100.0 * LF)
    assert detector.deadline_s == pytest.approx(2 * 1100.0 * LF + 2 * R)
    assert StallDetector(sim, math.inf).check(sim) == ""
    # overload by hand (GPU-time LAS, 1 GPU, 1000 copies/h of rows s = 1000 s and 100 s):
    # rho(1000) = 1000 / 3600 x (min(1000, 1000) + min(100, 1000)) / 2 = 152.78 (job 0);
    # rho(100) = 1000 / 3600 x (100 + 100) / 2 = 27.78 (job 1)
    las = StallDetector(sim, 2.0, "las")
    assert list(las.overload) == pytest.approx([1000 / 3600 * 550, 1000 / 3600 * 100])
    assert not detector.overload.any()  # no queue order given: never fires
    assert not StallDetector(sim, 2.0, "fifo").overload.any()
    with pytest.raises(ConfigError, match="stall factor must be > 0"):
        StallDetector(sim, 0.0)
    with pytest.raises(ConfigError, match="round cap >= 1"):
        StallDetector(sim, 1.0, round_cap=0)


def test_round_cap_stops_any_order() -> None:
    # SRTF (no overload test) on the starving stream with a cap of 25 rounds: job 1 (100 s)
    # runs first and completes at 360; job 0 (1000 s) never runs, as a fresh copy of job 1
    # (100 s left) always comes first; the cap stops it after 25 rounds.
    episode = starving_episode()
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    detector = StallDetector(sim, 10.0, "srtf", round_cap=25)
    assert not detector.overload.any()
    from palgym.policies import CLAIRVOYANT, make_placement, make_queue_order, make_sampler
    from palgym.simulate import drive, slowdown_factors

    placement = make_placement("packed-non-sticky", slowdown_factors(episode), episode.config)
    reason = drive(sim, make_queue_order("srtf", CLAIRVOYANT, episode.config), placement,
                   make_sampler(np.random.default_rng(0)), stall=detector)
    assert reason == "round cap (25) reached with 1 of 2 measured jobs unfinished"
    assert sim.round_index == 25 and sim.jobs.completion_time_s[1] == 360.0


def _truncated_evaluation() -> Evaluation:
    episode = starving_episode()
    setup = EvaluationSetup(cluster=episode.cluster, config=episode.config,
                            profile=episode.profile)
    return heuristic_table([episode.trace], ["packed-non-sticky"], ["las"], setup,
                           baseline="packed-non-sticky")


def test_reports_show_completed_of_total_and_warn() -> None:
    evaluation = _truncated_evaluation()
    text = format_report(evaluation)
    row = next(line for line in text.splitlines() if line.startswith("toy"))
    cells = row.split()
    assert cells[3] == "1/2"
    assert cells[4] == f">={2700.0 / 3600:.3f}"  # censored avg JCT (4680 + 720) / 2 s
    assert "WARNING: 1 of 1 episodes did not finish" in text
    assert "toy packed-non-sticky las: 1/2 jobs completed; stalled:" in text
    rows = list(csv.DictReader(results_csv(evaluation).splitlines()))
    assert rows[0]["num_completed"] == "1" and rows[0]["num_jobs"] == "2"
    assert rows[0]["truncated"] == "True" and rows[0]["censored_avg_jct_s"] == "2700.0"
    assert rows[0]["truncation_reason"].startswith("stalled:")
    content = json.loads(results_json(evaluation))
    assert content["num_unfinished"] == 1
    assert content["results"][0]["num_completed"] == 1
    assert content["results"][0]["end_time_s"] == 4680.0


def test_evaluate_cli_json_in_heuristic_mode(tmp_path: Path) -> None:
    from evaluate import main

    trace = tmp_path / "tiny.csv"
    trace.write_text("job_id,num_gpus,submit_time,duration,model\n0,1,0,100,resnet50\n",
                     encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(["--trace", str(trace), "--policy", "pal", "--json", str(out), "--quiet"]) == 0
    content = json.loads(out.read_text(encoding="utf-8"))
    assert content["num_unfinished"] == 0
    assert {r["num_completed"] for r in content["results"]} == {1}


def test_runs_truncated_at_different_times_are_compared_at_the_earlier_end() -> None:
    """Packed-Non-Sticky stalls at 4680 s; Packed-Sticky (no overload test) runs to the cap
    of 20 rounds, 7200 s. Both complete job 1 at 720 s and never job 0, so censored at the
    common horizon 4680 s both average (720 + 4680) / 2 = 2700 s: improvement 0, not the
    1 - 2700 / 3960 of their own end times."""
    episode = starving_episode(stall_rounds=20)
    setup = EvaluationSetup(cluster=episode.cluster, config=episode.config,
                            profile=episode.profile)
    evaluation = heuristic_table([episode.trace], ["packed-non-sticky"], ["las"], setup,
                                 baseline="packed-sticky")
    cut = evaluation.result("toy", "las", "packed-non-sticky")
    capped = evaluation.result("toy", "las", "packed-sticky")
    assert (cut.metrics.end_time_s, capped.metrics.end_time_s) == (4680.0, 7200.0)
    assert capped.metrics.truncation_reason == "max_rounds (20) reached"
    assert capped.metrics.censored_avg_jct_s == (720.0 + 7200.0) / 2
    assert evaluation.improvement(cut) == 0.0
    assert evaluation.geomean_improvement("packed-non-sticky", "las") == 0.0
