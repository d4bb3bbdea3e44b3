"""A trained queue order as a palgym-bench entry: a ``MODULE:CLASS`` order with a palgym
placement runs through the env; its header names the class (what a replay imports) and, when
the class declares ``learned = True``, records the entry as learned; the file replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.bench.runner import declares_learned, run_entry
from agents.priority.pretrained import ResponseRatio
from palgym.bench.entries import RunRequest
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from tests.bench_suites import tiny_suite

TASK = "scheduling-clairvoyant"
HAND = "agents.priority.pretrained:ResponseRatio"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("priority"), [TASK], window=10, seeds=(0, 1))


def _run(suite: Path, agent: str, out: Path) -> Path:
    return run_entry(RunRequest(str(suite), agent, out, DataRoots(), tasks=(TASK,),
                                progress=False))[0]


def test_only_a_class_that_declares_it_is_learned() -> None:
    assert not declares_learned(f"{HAND}/pal+backfill")
    assert not declares_learned("srsf/pal+backfill")
    assert not hasattr(ResponseRatio, "learned")


@pytest.mark.parametrize(("order", "kind"), [(HAND, "module")])
def test_the_entry_names_its_class_and_replays(suite: Path, tmp_path: Path, order: str,
                                               kind: str) -> None:
    path = _run(suite, f"{order}/pal+backfill", tmp_path / "entry.jsonl")
    results = read_results(path)
    assert results.header.entry_kind == kind
    (member,) = results.header.members[TASK].values()
    assert member["env_kwargs"]["queue_order"] == order
    assert [p for _, p in validate_files([path], DataRoots(), suite, trust_modules=True)] == [[]]
    # without --trust-modules the replay imports nothing and says why
    (_, problems), = validate_files([path], DataRoots(), suite)
    assert problems and "--trust-modules" in str(problems[0])
