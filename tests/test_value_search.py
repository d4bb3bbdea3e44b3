"""agents/selection/value.py and benchmarks/value_search.py: the state's features, the value's
fit, the held-out regret and the script's table, on values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from agents.selection import value as learned
from palgym.errors import ConfigError, PalgymError
from palgym.simulate import make_simulator
from tests.room_support import script
from tests.test_known_jobs_search import toy
from tests.toys import A

VALUE = script("value_search")


def test_state_features_by_hand() -> None:
    # J0 (4 GPUs, 300 s) and J1 (4 GPUs, 100 s), both queued at t = 0 on 4 GPUs. The base's
    # order, (1 + remaining GPU-h) / (1 + hours queued)^2, puts J1 (0.11 GPU-h) before J0
    # (0.33 GPU-h): J0 waits for J1's 100 s on all 4 GPUs.
    sim = make_simulator(toy((4, 0.0, 300, A), (4, 0.0, 100, A)))
    from agents.priority.pretrained import ResponseRatio

    got = dict(zip(learned.FEATURES, learned.state_features(sim, 2, ResponseRatio()), strict=True))
    hour = 3600.0
    assert got == pytest.approx({
        "ideal_h": 400 / hour, "effective_h": 400 / hour, "running": 0.0, "queued": 2.0,
        "queued_ideal_h": 400 / hour, "queued_wait_h": 100 / hour,
        "queued_x_running_work": 0.0, "queued_wide_wait_h": 100 / hour, "age_h": 0.0,
        "jobs_x_work_h": 2 * 400 / hour, "jobs_x_free": 2.0}, rel=1e-12)
    assert not learned.state_features(sim, 0, ResponseRatio()).any()


def _ask(*candidates: tuple[float, float, list[float] | None, float]) -> object:
    return learned.Ask("e", [learned.Candidate(p, r, None if f is None else np.array(f), i)
                           for p, r, f, i in candidates])


def test_regret_by_hand() -> None:
    # true costs 10 (the base's) and 8: the base's regret is 10 / 8 - 1 = 0.25; the ideal
    # estimate prices them 5 + 1 = 6 and 4 + 0.5 = 4.5, so it picks the cheaper (regret 0);
    # weights (1) on features (3) and (5) price them 8 and 9: the base's (0.25).
    asks = [_ask((5.0, 5.0, [3.0], 1.0), (4.0, 4.0, [5.0], 0.5))]
    assert learned.regret(asks, "base") == pytest.approx(0.25)
    assert learned.regret(asks, "ideal") == 0.0
    assert learned.regret(asks, "value", np.array([1.0])) == pytest.approx(0.25)
    # a candidate whose rollout ended before its horizon is priced exactly (12) by every
    # estimate
    asks = [_ask((12.0, 0.0, None, 0.0), (4.0, 9.0, [5.0], 0.5))]
    assert learned.regret(asks, "ideal") == pytest.approx(13 / 12 - 1)
    assert learned.regret(asks, "value", np.array([1.0])) == pytest.approx(13 / 12 - 1)


def test_fit_recovers_the_weights_that_made_the_rests() -> None:
    rng = np.random.default_rng(0)
    w = np.array([2.0, -1.0, 0.5])
    asks = [_ask(*[(0.0, float(f @ w), list(f), 0.0) for f in rng.random((3, 3))])
            for _ in range(40)]
    assert learned.fit_value(asks, 10.0, 1e-9) == pytest.approx(w, rel=1e-6)
    with pytest.raises(PalgymError, match="horizon"):
        learned.fit_value([_ask((1.0, 0.0, None, 0.0), (2.0, 0.0, None, 0.0))], 1.0, 1.0)


def test_table_pools_the_value_seeds() -> None:
    # search / best 0.5 and 2 (seed 0), 1 and 4 (seed 1): pooled geomean 4 ** (1 / 4) = 1.414
    def row(name: str, search: float) -> dict[str, object]:
        return {"estimate": name, "best_avg_jct_s": 100.0, "base_avg_jct_s": 100.0,
                "search_avg_jct_s": search, "base_unfinished": 0, "search_unfinished": 1,
                "asks": 10, "decision_mean_s": 0.01, "decision_max_s": 0.02,
                "searched_over_limit": 0, "searched": 5}

    rows = [row("value seed 0", 50.0), row("value seed 0", 200.0),
            row("value seed 1", 100.0), row("value seed 1", 400.0)]
    lines = VALUE.table(rows)
    assert [line.split(" (")[0] for line in lines[2:]] == [
        "| value seed 0", "| value seed 1", "| value, 2 seeds pooled"]
    assert lines[4].startswith("| value, 2 seeds pooled (4) | 1.414 [")
    assert "| 0, 4 |" in lines[4]
    assert lines[2].startswith("| value seed 0 (2) | 1.000 [")


def test_bad_arguments_and_missing_data_exit_2(tmp_path: object,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--H", "-1"], ["--rounds", "0"], ["--p", "0"], ["--ridge", "0"],
                 ["--pair-weight", "-1"], ["--limit", "0"], ["--budget", "1"],
                 ["--budget", "-2"]):
        with pytest.raises(SystemExit) as done:
            VALUE.main(argv)
        assert done.value.code == 2
        assert f"error: {argv[0]} must be" in capsys.readouterr().err
    assert VALUE.main(["--cache", str(tmp_path), "--data-dir", str(tmp_path)]) == 2
    assert "missing files" in capsys.readouterr().err
    a_file = tmp_path / "file"  # type: ignore[operator]
    a_file.write_text("")
    assert VALUE.main(["--cache", str(tmp_path), "--save", str(a_file)]) == 2
    assert f"--save {a_file}: not a folder" in capsys.readouterr().err


def test_linear_value_refuses_bad_weights_and_is_never_negative() -> None:
    from agents.priority.pretrained import ResponseRatio

    with pytest.raises(ConfigError, match="value weights"):
        learned.LinearValue(np.ones(3), ResponseRatio())
    with pytest.raises(ConfigError, match="value weights"):
        learned.LinearValue(np.full(len(learned.FEATURES), np.nan), ResponseRatio())
    # the toy of test_state_features_by_hand: queued = 2, so weights picking it (-1 s each)
    # price -2 s, floored at 0; picking ideal_h (3600 s each) price 400 s
    sim = make_simulator(toy((4, 0.0, 300, A), (4, 0.0, 100, A)))
    queued = np.eye(len(learned.FEATURES))[learned.FEATURES.index("queued")]
    assert learned.LinearValue(-queued, ResponseRatio())(sim, 2) == 0.0
    ideal = np.eye(len(learned.FEATURES))[learned.FEATURES.index("ideal_h")] * 3600.0
    assert learned.LinearValue(ideal, ResponseRatio())(sim, 2) == pytest.approx(400.0)


def test_search_episode_script_names_a_bad_value_file_or_missing_data(
        tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.room_support import script

    timing = script("search_episode")
    bad = tmp_path / "v.json"  # type: ignore[operator]
    bad.write_text('{"value": {"weights": {"ideal_h": 1}}}')
    assert timing.main(["--cache", str(tmp_path), "--value", str(bad)]) == 2
    assert "v.json: field value.weights" in capsys.readouterr().err
    from pathlib import Path

    good = str(Path(__file__).resolve().parents[1] / "agents/pretrained/rule-selector"
               / "value-search-seed0.json")
    assert timing.main(["--cache", str(tmp_path), "--data-dir", str(tmp_path),
                        "--value", good]) == 2
    assert "missing" in capsys.readouterr().err
