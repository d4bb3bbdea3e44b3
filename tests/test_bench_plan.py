"""A bench run is planned once: the spec parsed, each split it runs resolved into the plan
(palgym/bench/entries.py SplitPlan), equal to what the suite's functions give one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.bench.runner import plan_entry
from palgym.bench.entries import RunRequest
from palgym.bench.roots import data_roots
from palgym.bench.suites import load_suite, split_env_kwargs, split_traces
from palgym.errors import ConfigError
from palgym.policies.contender_spec import parse_contender
from tests.bench_suites import tiny_suite

TASK = "scheduling-clairvoyant"


def _request(agent: str, suite: str) -> RunRequest:
    return RunRequest(suite, agent, Path(suite).with_suffix(".jsonl"), data_roots(None, None),
                      (TASK,))


@pytest.mark.parametrize(("agent", "splits"), [
    ("selector:pretrained:rule-selector-clairvoyant-seed0", {"test"}),
    ("srtf/pal+backfill", {"test"}),
    ("field", {"validation", "test"}),
    ("best", {"validation", "test"}),
])
def test_the_plan_holds_each_split_it_runs_resolved_once(agent: str, splits: set[str],
                                                          tmp_path: Path) -> None:
    path = str(tiny_suite(tmp_path, [TASK]))
    plan = plan_entry(_request(agent, path))
    assert plan.spec == parse_contender(agent)
    assert set(plan.splits) == {(TASK, split) for split in splits}
    suite, roots = load_suite(path), plan.request.roots
    task = suite.task(TASK)
    for (_, name), split in plan.splits.items():
        assert split.task == task and split.split == name
        assert dict(split.env_kwargs) == split_env_kwargs(suite, task, name, roots)
        read = split_traces(suite, task, name, roots)
        assert [(t.name, t.num_jobs) for t in split.traces] == [
            (t.name, t.num_jobs) for t in read]
        assert len(split.traces) == len(task.splits[name].traces)
        assert split.env_layout == task.env_layout  # the layout the suite was frozen with
    units = plan.first_units()
    assert {(u.task, u.split) for u in units} <= set(plan.splits)


def test_a_spec_the_bench_cannot_run_is_refused_before_the_suite_is_read(
        tmp_path: Path) -> None:
    # a malformed spec is refused before the (missing) suite file would be
    with pytest.raises(ConfigError, match=r"give selector:PATH"):
        plan_entry(_request("selector:", str(tmp_path / "no-such-suite.yaml")))
