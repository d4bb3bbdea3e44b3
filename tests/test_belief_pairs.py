"""agents.evaluation.belief_pairs: contenders of other beliefs joined to a side-by-side run by
episode hash, with parity checks and trace-level bootstrap ratios (values worked out by hand)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agents.evaluation.belief_pairs import format_rows, main, pair, ratio_table
from palgym.errors import ConfigError


def _side(path: Path) -> Path:
    """Two traces, one seed each: agent 90 / 80 s, PAL (online) 100 / 100 s, Packed-Sticky
    120 / 160 s."""
    episodes = [{"trace": "A", "seed": 0, "episode_seed": 11, "episode_hash": "ha"},
                {"trace": "B", "seed": 0, "episode_seed": 11, "episode_hash": "hb"}]
    rows = [{"policy": p, "kind": k, "episode_hash": h, "censored_avg_jct_s": v,
             "truncated": False}
            for p, k, values in [("agent", "learned", (90.0, 80.0)),
                                 ("pal", "heuristic", (100.0, 100.0)),
                                 ("packed-sticky", "heuristic", (120.0, 160.0))]
            for h, v in zip(("ha", "hb"), values, strict=True)]
    policies = [{"label": "agent", "kind": "learned", "env_kwargs": {"belief": "online"}}]
    path.write_text(json.dumps({"episodes": episodes, "results": rows, "policies": policies}))
    return path


def _table(path: Path, pal: tuple[float, float], packed: tuple[float, float] = (120.0, 160.0),
           hashes: tuple[str, ...] = ("ha", "hb")) -> Path:
    rows = [{"policy": p, "episode_hash": h, "censored_avg_jct_s": v, "truncated": False}
            for p, values in [("pal", pal), ("packed-sticky", packed)]
            for h, v in zip(hashes, values, strict=True)]
    path.write_text(json.dumps({"results": rows}))
    return path


def test_ratios_to_the_stale_pal_by_hand(tmp_path: Path) -> None:
    paired = pair([_side(tmp_path / "side.json")],
                  {"stale": [_table(tmp_path / "stale.json", (120.0, 200.0))]})
    assert set(paired.avg_jct_s) == {"agent", "pal@online", "packed-sticky@online", "pal@stale"}
    rows = {r["policy"]: r for r in ratio_table(paired, ["pal@stale", "pal@online"])}
    # agent / PAL-stale: 90/120 = 0.75 and 80/200 = 0.4, geomean sqrt(0.3); two traces: the
    # resamples are {A, A} 0.75, {B, B} 0.4 (each with probability 1/4) or mixed sqrt(0.3),
    # so the 2.5% and 97.5% quantiles are 0.4 and 0.75
    geo, low, high = rows["agent"]["/ pal@stale"]
    assert geo == pytest.approx(math.sqrt(0.3)) and (low, high) == pytest.approx((0.4, 0.75))
    assert rows["agent"]["/ pal@online"][0] == pytest.approx(math.sqrt(0.9 * 0.8))
    assert rows["pal@stale"]["A"] == pytest.approx(120.0 / 3600.0)
    assert rows["agent"]["unfinished"] == 0
    assert "| agent | 0 | 0.025 | 0.022 | 0.548 [0.400, 0.750]" in format_rows(list(rows.values()))


def test_a_table_of_the_runs_own_belief_must_agree(tmp_path: Path) -> None:
    side = _side(tmp_path / "side.json")
    same = _table(tmp_path / "online.json", (100.0, 100.0))
    assert "pal@online" in pair([side], {"online": [same]}).avg_jct_s
    other = _table(tmp_path / "online2.json", (100.0, 101.0))
    with pytest.raises(ConfigError, match="pal@online: average JCT differs"):
        pair([side], {"online": [other]})


def test_packed_sticky_parity_and_missing_episodes_are_errors(tmp_path: Path) -> None:
    side = _side(tmp_path / "side.json")
    drifted = _table(tmp_path / "stale.json", (120.0, 200.0), packed=(120.0, 161.0))
    with pytest.raises(ConfigError, match="packed-sticky@stale: average JCT differs"):
        pair([side], {"stale": [drifted]})
    partial = _table(tmp_path / "partial.json", (120.0, 200.0), hashes=("ha", "hx"))
    with pytest.raises(ConfigError, match=r"@stale: no table row for B seed 0 .*--seed 11"):
        pair([side], {"stale": [partial]})
    only_packed = pair([side], {"stale": [_table(tmp_path / "ok.json", (120.0, 200.0))]},
                       table_policies=["packed-sticky"])
    assert "pal@stale" not in only_packed.avg_jct_s
    with pytest.raises(ConfigError, match="reference 'pal@oracle': not among the joined"):
        ratio_table(pair([side], {}), ["pal@oracle"])


def test_runs_of_several_seeds_merge(tmp_path: Path) -> None:
    first = _side(tmp_path / "a.json")
    data = json.loads(first.read_text())
    for item in data["episodes"] + data["results"]:
        item["episode_hash"] += "2"
    for item in data["episodes"]:
        item["seed"] = 1
    second = tmp_path / "b.json"
    second.write_text(json.dumps(data))
    paired = pair([first, second], {})
    assert paired.traces == ("A", "B", "A", "B") and len(paired.hashes) == 4
    assert paired.avg_jct_s["agent"].tolist() == [90.0, 80.0, 90.0, 80.0]
    data["policies"][0]["env_kwargs"]["belief"] = "stale"
    second.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="other contenders or belief"):
        pair([first, second], {})


def test_command_line_names_an_unknown_reference_in_one_line(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    side = _side(tmp_path / "side.json")  # no table given: the default reference pal@stale
    with pytest.raises(SystemExit) as stop:  # is not among the joined contenders
        main([str(side)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "reference 'pal@stale': not among the joined contenders" in err
    assert "pal@online" in err and "Traceback" not in err


def test_one_trace_prints_no_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    side = _side(tmp_path / "side.json")
    main([str(side), "--references", "pal@online", "--contenders", "agent"])
    # two traces: an interval; the agent / PAL-online ratios 0.9 and 0.8 by hand
    assert "0.849 [0.800, 0.900]" in capsys.readouterr().out
    rows = [{"policy": "agent", "/ pal": (0.9, math.nan, math.nan)}]
    assert "| agent | 0.900 [no interval] |" in format_rows(rows)
