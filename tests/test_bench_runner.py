"""palgym-bench run: every kind of entry through the contender protocol, the validation-chosen
``best`` and the ``field`` agree with each other and with the replay, and worker processes
write the serial rows."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from agents.bench.runner import run_entry
from palgym.bench.entries import RunRequest, entry_kind, entry_name
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from palgym.envs.layouts import env_layout
from palgym.errors import ConfigError
from tests.bench_suites import tiny_suite

FIELDS = {"placement-default": ["pal", "packed-non-sticky", "random-non-sticky"],
          "scheduling-clairvoyant": ["srtf/pal", "srtf/pal+backfill", "fifo/pal"]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("bench"), list(FIELDS), seeds=(0, 1),
                      fields=FIELDS)


def _run(suite: Path, agent: str, output: Path, **options: object) -> Path:
    request = RunRequest(str(suite), agent, output, DataRoots(), progress=False)
    run_entry(replace(request, **options))  # type: ignore[arg-type]
    return output


def _valid(*paths: Path, suite: Path) -> None:
    for path, problems in validate_files(list(paths), DataRoots(), suite):
        assert problems == [], (path, problems)


@pytest.mark.parametrize(("spec", "kind", "name"), [
    ("pal", "heuristic", "pal"), ("srtf/pal+backfill", "heuristic", "srtf/pal+backfill"),
    ("best", "best", "best"), ("field", "field", "field"),
    ("planner:K=4,H=end", "planner", "planner:K=4,H=end"),
    ("pretrained", "learned", "pretrained"),
    ("pretrained:dynamic-online_maskable_ppo", "learned", "dynamic-online_maskable_ppo"),
    ("runs/x/best_model.zip", "learned", "x"), ("model.zip", "learned", "model"),
    ("mypkg.policies:Mine", "module", "mypkg.policies:Mine"),
])
def test_entry_kinds_and_names(spec: str, kind: str, name: str) -> None:
    assert entry_kind(spec) == kind
    assert entry_name(spec, kind) == name


@pytest.fixture(scope="module")
def field_and_best(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("entries")
    return (_run(suite, "field", folder / "field.jsonl"),
            _run(suite, "best", folder / "best.jsonl"))


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_best_is_the_field_member_with_the_lowest_validation_geomean(
        field_and_best: tuple[Path, Path], suite: Path) -> None:
    field, best = (read_results(p) for p in field_and_best)
    assert field.header.entry_kind == "field" and best.header.entry_kind == "best"
    for task, members in FIELDS.items():
        scores = {m: _geomean([r.avg_jct_s for _, r in field.episodes  # type: ignore[misc]
                               if (r.task, r.split, r.member) == (task, "validation", m)])
                  for m in members}
        [choice] = [c for _, c in best.choices if c.task == task]
        assert choice.member == min(scores, key=lambda m: (scores[m], m))
        assert choice.field == members
        for member, value in choice.validation_geomean_avg_jct_s.items():
            assert value == pytest.approx(scores[member], rel=1e-12)
        # the best file's test rows are the field's rows of the chosen member
        def strip(row: object) -> dict[str, object]:
            data = dict(vars(row))
            data.pop("decision_time_s")
            return data

        assert [strip(r) for _, r in best.episodes if r.task == task] == [
            strip(r) for _, r in field.episodes
            if (r.task, r.split, r.member) == (task, "test", choice.member)]
    assert {(r.split, r.member) for _, r in field.episodes if r.task == "placement-default"} == {
        (s, m) for s in ("validation", "test") for m in FIELDS["placement-default"]}
    _valid(*field_and_best, suite=suite)


def test_a_tampered_choice_is_rejected(field_and_best: tuple[Path, Path], suite: Path,
                                       tmp_path: Path) -> None:
    field, best = field_and_best
    lines = best.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if '"choice"' in line)
    choice = json.loads(lines[number])
    losers = [m for m in choice["field"] if m != choice["member"]]
    choice["validation_geomean_avg_jct_s"][losers[0]] *= 0.5  # now a loser looks best
    lines[number] = json.dumps(choice)
    tampered = tmp_path / "best.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    problems = dict(validate_files([field, tampered], DataRoots(), suite))[tampered]
    fields = {(p.line, p.field) for p in problems}
    assert (number + 1, "member") in fields
    assert (number + 1, f"validation_geomean_avg_jct_s.{losers[0]}") in fields


def test_workers_write_the_serial_rows(suite: Path, field_and_best: tuple[Path, Path],
                                       tmp_path: Path) -> None:
    field = read_results(field_and_best[0])
    parallel = read_results(_run(suite, "field", tmp_path / "w2.jsonl", workers=2))
    def rows(results: object) -> list[dict[str, object]]:
        return [{k: v for k, v in vars(r).items() if k != "decision_time_s"}
                for _, r in results.episodes]  # type: ignore[attr-defined]

    assert rows(parallel) == rows(field) and parallel.header.members == field.header.members


def test_ray_tasks_write_the_serial_rows(suite: Path, field_and_best: tuple[Path, Path],
                                        tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the optional 'ray' extra is not installed")
    field = read_results(field_and_best[0])
    remote = read_results(_run(suite, "field", tmp_path / "ray.jsonl", ray_address=""))
    def rows(results: object) -> list[dict[str, object]]:
        return [{k: v for k, v in vars(r).items() if k != "decision_time_s"}
                for _, r in results.episodes]  # type: ignore[attr-defined]

    assert rows(remote) == rows(field) and remote.header.members == field.header.members
    _valid(tmp_path / "ray.jsonl", suite=suite)


def test_ray_without_the_extra_names_it(suite: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    output = tmp_path / "x.jsonl"
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ray\]'"):
        _run(suite, "pal", output, ray_address="", tasks=("placement-default",))
    assert not output.exists()


def test_an_order_outside_the_fixed_regime_is_refused(suite: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="regime fixed"):
        _run(suite, "srtf/pal", tmp_path / "x.jsonl", tasks=("placement-default",))
    path = _run(suite, "srtf/pal", tmp_path / "y.jsonl", tasks=("scheduling-clairvoyant",))
    members = read_results(path).header.members["scheduling-clairvoyant"]["srtf/pal"]
    assert members["env_kwargs"]["queue_order"] == "srtf"


def test_a_user_class_a_planner_and_a_model_run_and_validate(suite: Path,
                                                             tmp_path: Path) -> None:
    placement = ("placement-default",)
    user = _run(suite, "examples.least_loaded_fastest:LeastLoadedFastest",
                tmp_path / "user.jsonl", tasks=placement)
    planner = _run(suite, "planner:K=2,H=2", tmp_path / "planner.jsonl", tasks=placement)
    model = _run(suite, "pretrained", tmp_path / "model.jsonl", tasks=placement)
    _valid(user, planner, model, suite=suite)
    header = read_results(user).header
    assert (header.entry, header.entry_kind) == ("least-loaded-fastest", "module")
    assert read_results(planner).header.entry == "planner:K=2,H=2"
    learned = read_results(model).header
    [(member, entry)] = learned.members["placement-default"].items()
    assert (learned.entry_kind, member) == ("learned", "pretrained")
    assert not {"reward", "reward_scale", "baseline_policy"} & set(entry["env_kwargs"])
    assert entry["env_layout"] == env_layout("palgym/PALPlacement-v0", {"window": 8})


def test_a_model_of_another_env_is_refused(suite: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="PALPlacement-v0"):
        _run(suite, "pretrained:PALPlacement-v0_maskable_ppo", tmp_path / "x.jsonl",
             tasks=("scheduling-clairvoyant",))


def test_run_refuses_a_bad_submission_file_before_running(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    # The object lacks every key but one: the run stops at once, naming the file and a key.
    from agents.bench.cli import main

    bad = tmp_path / "submission.json"
    bad.write_text('{"submitter": "me"}', encoding="utf-8")
    output = tmp_path / "out.jsonl"
    code = main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--submission",
                 str(bad), "--output", str(output)])
    err = capsys.readouterr().err
    assert code == 2 and f"--submission {bad}" in err and "submission.env_modified" in err
    assert not output.exists()
    # a parameter picked on a test trace of the suite (the lite suite tests on
    # sia-philly-gen-4), named as a token of the selection_data value
    stated = {
        "submitter": "A. Tester", "env_modified": False, "env_modifications": "",
        "parameters": {"n_steps": 2048}, "parameters_tried": {"n_steps": [1024, 2048]},
        "selection_data": {"n_steps": "bundled sia-philly-gen-4, seeds 0-2"},
        "training_traces": [], "training_env_steps": 0, "training_wall_time_s": 0.0,
        "deterministic": True, "hardware": "2 CPU cores", "model": "",
    }
    bad.write_text(json.dumps(stated), encoding="utf-8")
    assert main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--submission",
                 str(bad), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert f"--submission {bad}, field 'submission.selection_data.n_steps': parameters are " \
           "never picked on the test split: 'sia-philly-gen-4' is a test trace of the suite" \
        in err and not output.exists()
    bad.write_text("{not json", encoding="utf-8")
    assert main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--submission",
                 str(bad), "--output", str(output)]) == 2
    assert "not JSON" in capsys.readouterr().err
