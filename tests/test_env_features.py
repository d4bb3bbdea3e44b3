"""The feature tables: one declaration shared by both builders, documented in docs/ENV.md,
and the Decision value the env caches; the env's argument table (docs/ENV.md "Arguments")
lists every constructor keyword with its default."""

from __future__ import annotations

import ast
import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

from palgym.envs import ClusterEnv
from palgym.envs.decide import decide_numba, decide_numpy
from palgym.envs.features import CANDIDATE, CANDIDATE_FEATURES, JOB, JOB_FEATURES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ENV.md"


def _documented(section: str) -> list[str]:
    """Names in the first column of the table under the ``### `section``` heading."""
    text = DOCS.read_text().split(f"### `{section}`", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([^`]+)`", text, flags=re.MULTILINE)


def test_docs_list_exactly_the_declared_features() -> None:
    jobs = _documented("jobs")
    expanded = [n for name in jobs for n in (
        [f"class_{c}" for c in "ABCD"] if name == "class_A" else [name])]
    assert expanded == list(JOB_FEATURES)
    assert _documented("candidates") == list(CANDIDATE_FEATURES)
    assert "clairvoyant" in DOCS.read_text().lower()
    # the headings' feature counts are the declared ones
    text = DOCS.read_text()
    assert f"### `jobs` (K, {len(JOB_FEATURES)})" in text
    assert f"### `candidates` (K, M, {len(CANDIDATE_FEATURES)})" in text


def _argument_rows() -> dict[str, list[str]]:
    """The cells after the first of each row of the "## Arguments" table, by argument name."""
    text = DOCS.read_text().split("\n## Arguments\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for name, rest in re.findall(r"^\| `([^`]+)` \|(.*)\|$", text, flags=re.MULTILINE):
        assert name not in rows, f"docs/ENV.md \"Arguments\": {name} has two rows"
        rows[name] = [cell.strip() for cell in rest.split("|")]
    return rows


def test_the_argument_table_lists_every_constructor_keyword_in_order() -> None:
    parameters = list(inspect.signature(ClusterEnv.__init__).parameters)[1:]
    documented = list(_argument_rows())
    missing = [name for name in parameters if name not in documented]
    assert not missing, f"docs/ENV.md \"Arguments\" lacks {missing}"
    assert documented == parameters


def test_the_argument_table_gives_the_constructor_defaults() -> None:
    """Each row: the type of a plain annotation, the default as a Python literal (the first
    code span of its default cell), and a link to the section explaining it."""
    for name, parameter in list(inspect.signature(ClusterEnv.__init__).parameters.items())[1:]:
        kind, default, _, details = _argument_rows()[name]
        if parameter.annotation in ("bool", "int", "float", "str"):
            assert kind.split()[0] == parameter.annotation, name
        literal = ast.literal_eval(re.findall(r"`([^`]+)`", default)[0])
        assert literal == parameter.default and type(literal) is type(parameter.default), name
        assert "](" in details, f"docs/ENV.md \"Arguments\": {name} links to no section"


def test_the_argument_table_gives_each_ids_registered_defaults() -> None:
    """``-v1``'s padding (and each id's task) as ``palgym/__init__.py`` registers them."""
    from gymnasium.envs.registration import registry

    rows = _argument_rows()
    ids = [i for i, spec in registry.items() if spec.entry_point == (
        "palgym.envs.cluster_env:ClusterEnv")]
    assert {i.rsplit("-", 1)[1] for i in ids} == {"v0", "v1"}
    for env_id in ids:
        version = env_id.rsplit("-", 1)[1]
        for key, value in registry[env_id].kwargs.items():
            default = rows[key][1]
            if key == "task":
                assert f"`{value!r}`".replace("'", '"') in default, env_id
            elif value != inspect.signature(ClusterEnv.__init__).parameters[key].default:
                assert f"(`-{version}`: `{value!r}`)" in default, (env_id, key)


def test_env_names_and_shapes_come_from_the_tables() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20, num_slots=3, max_tiers=2)
    assert env.observation_shapes["jobs"] == (3, len(JOB_FEATURES))
    # M = 2T + 2 candidates per slot (T = max_tiers = 2), one column per declared feature
    assert env.observation_shapes["candidates"] == (3, 2 * 2 + 2, len(CANDIDATE_FEATURES))
    assert env.feature_names["jobs"][JOB.log_waiting_time] == "slot0.log_waiting_time"
    assert env.feature_names["candidates"][len(CANDIDATE) + CANDIDATE.keeps_gpus] == \
        "slot0.cand1.keeps_gpus"


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_named_columns_hold_their_values(backend: str) -> None:
    """Slot 0's waiting time, GPU share and class at the first decision, worked out from the
    trace: a job submitted at s waits now - s, mapped by log1p(t) / log1p(365 days)."""
    env = ClusterEnv("sia-philly-gen-0", window=20, backend=backend)
    obs, _ = env.reset(seed=0)
    rows = obs["jobs"].reshape(env.observation_shapes["jobs"])
    sim = env.simulator
    job = env._rounds.round.pending[0]
    trace = env.episode.trace
    waited = sim.now_s - float(trace.submit_time_s[job])
    expected = min(math.log1p(waited) / math.log1p(365 * 24 * 3600.0), 1.0)
    assert rows[0, JOB.log_waiting_time] == np.float32(expected)
    assert rows[0, JOB.num_gpus_frac] == np.float32(int(trace.num_gpus[job]) / 64)
    assert rows[0, JOB.present] == 1.0 and rows[0, JOB.queue_position] == 0.0
    candidates = obs["candidates"].reshape(env.observation_shapes["candidates"])
    mask = env.action_masks()
    assert np.array_equal(candidates[:, :, CANDIDATE.feasible].ravel() > 0, mask[:-1])


def test_both_backends_give_the_same_decision_and_it_is_frozen() -> None:
    env = ClusterEnv("sia-philly-gen-1", window=40)
    env.reset(seed=4)
    args = (env.simulator, env._rounds.round, env._ctx.tables, env._ctx.factors,
            env._observations)
    reference, compiled = decide_numpy(*args), decide_numba(*args)
    assert np.array_equal(reference.mask, compiled.mask)
    for key, value in reference.observation.items():
        assert np.array_equal(value, compiled.observation[key]), key
    with pytest.raises(AttributeError):
        compiled.mask = reference.mask  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        compiled.observation["jobs"][0] = 1.0


def test_an_observation_can_be_handed_out_more_than_once() -> None:
    """Queries between two steps (masks, heuristic actions) leave the decision as it was."""
    env = ClusterEnv("sia-philly-gen-0", window=30)
    obs, _ = env.reset(seed=0)
    first = env._current()
    env.action_masks()
    env.heuristic_action("pal")
    assert env._current() is first and all(first.observation[k] is obs[k] for k in obs)
