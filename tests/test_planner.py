"""The rollout planner (agents/planning/planner.py): hand-computed toys, ties, determinism,
episodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the envs)
from agents.base import HeuristicAgent
from agents.evaluation.comparison import run_contenders
from agents.evaluation.contenders import heuristic_contender, planner_contender
from agents.planning.planner import (
    PlannerAgent,
    PlannerSpec,
    alternatives,
    choose,
    format_planner_costs,
)
from agents.planning.search import clone_env, queue_estimate, state_cost
from agents.rollout import rollout
from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

R = 100.0
CLASS_A = 0


def _toy(*jobs: tuple[int, float]) -> Trace:
    """Jobs (num_gpus, total_iterations), all submitted at 0, T_it = 1 s, class A."""
    return Trace.from_columns(
        "toy", job_id=list(range(len(jobs))), num_gpus=[j[0] for j in jobs],
        submit_time_s=[0.0] * len(jobs), total_iterations=[j[1] for j in jobs],
        iteration_time_s=[1.0] * len(jobs), model=["toy-model"] * len(jobs),
        perf_class=[CLASS_A] * len(jobs))


def _toy_env(trace: Trace, task: str = "scheduling", **kwargs: object) -> ClusterEnv:
    """2 nodes x 1 GPU, uniform GPUs, no locality penalty, R = 100 s, FIFO."""
    return ClusterEnv(trace, task=task, cluster="2x1",
                      profile=VariabilityProfile("toy", np.ones((4, 2))),
                      locality_penalty=1.0, round_duration_s=R, **kwargs)  # type: ignore[arg-type]


class _Recording(PlannerAgent):
    """Records (base action, chosen action) at every decision."""

    def __init__(self, spec: PlannerSpec) -> None:
        super().__init__(spec)
        self.pairs: list[tuple[int, int]] = []

    def predict(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        base = int(self._env.heuristic_action(self.spec.base, check=False))
        action, state = super().predict(*args, **kwargs)
        self.pairs.append((base, int(action)))
        return action, state


def _run(agent: object, env: gym.Env, seed: int = 0):  # type: ignore[no-untyped-def]
    return rollout(agent, env, seed=seed)  # type: ignore[arg-type]


def test_planner_beats_a_provably_suboptimal_base_on_a_two_node_toy() -> None:
    # job 0: 2 GPUs x 1000 s; job 1: 1 GPU x 100 s; both at t = 0 on 2 x 1 GPUs.
    # FIFO + PAL starts job 0 (both GPUs): JCTs 1000 and 1000 + 100 -> sum 2100 s.
    # Job 1 first (job 0 no longer fits that round): JCTs 100 and 100 + 1000 -> sum 1200 s.
    trace = _toy((2, 1000.0), (1, 100.0))
    base = _run(HeuristicAgent("pal"), _toy_env(trace))
    np.testing.assert_allclose(base.jct_s, [1000.0, 1100.0])
    for spec in ("K=1,H=end", "K=6,H=end", "K=1,H=3"):
        agent = PlannerAgent(PlannerSpec.parse(spec))
        planned = _run(agent, _toy_env(trace, **agent.env_kwargs))
        np.testing.assert_allclose(planned.jct_s, [1100.0, 100.0], err_msg=spec)
        assert planned.episode_hash == base.episode_hash
        assert agent.episodes[-1].changed == 1
    # placement task: the round's jobs are FIFO's fitting prefix (job 0 alone), so no
    # action starts job 1 first: the planner can only match the base, 1000 and 1100 s.
    agent = PlannerAgent(PlannerSpec.parse("K=6,H=end"))
    placed = _run(agent, _toy_env(trace, task="placement", **agent.env_kwargs))
    np.testing.assert_allclose(placed.jct_s, [1000.0, 1100.0])


def test_ties_go_to_the_base_action() -> None:
    assert choose(5, 100.0, [(3, 100.0), (4, 100.0)]) == (5, True)
    assert choose(5, 100.0, [(3, 100.0), (4, 99.0)]) == (4, True)
    assert choose(5, 100.0, [(3, 98.0), (4, 98.0)]) == (3, False)
    assert choose(5, 100.0, [(3, 101.0)]) == (5, False)
    # two identical 1-GPU jobs on two identical GPUs: every placement order gives JCTs
    # 100 and 100; deferring is worse (>= 200). The planner must keep every base action.
    trace = _toy((1, 100.0), (1, 100.0))
    agent = _Recording(PlannerSpec.parse("K=6,H=end"))
    outcome = _run(agent, _toy_env(trace, **agent.env_kwargs))
    np.testing.assert_allclose(outcome.jct_s, [100.0, 100.0])
    assert agent.pairs and all(base == chosen for base, chosen in agent.pairs)
    stats = agent.episodes[-1]
    assert stats.changed == 0 and stats.ties >= 1 and stats.evaluated >= 1


def _window_env(agent: PlannerAgent, window: int = 6) -> gym.Env:
    return gym.make("palgym/PALScheduling-v0", trace="sia-philly-gen-3", window=window,
                    queue_order="srtf", **agent.env_kwargs)


def test_deterministic_for_a_seed() -> None:
    runs = []
    for _ in range(2):
        agent = PlannerAgent(PlannerSpec.parse("K=2,H=3"))
        outcome = _run(agent, _window_env(agent), seed=5)
        row = agent.episodes[-1].row()
        row.pop("planning_s")
        runs.append((outcome.jct_s, outcome.episode_hash, row))
    assert runs[0] == runs[1]


def test_never_worse_than_its_base_with_exact_values_and_k0_is_the_base() -> None:
    base_kwargs = {"window": 6, "queue_order": "srtf"}
    traces = ClusterEnv("sia-philly-gen-3").traces
    contenders = [planner_contender("K=0", base_kwargs), planner_contender("K=2", base_kwargs),
                  heuristic_contender("pal", base_kwargs)]
    outcomes = run_contenders("palgym/PALScheduling-v0", contenders, traces, [0, 1])
    pal, k0, k3 = (outcomes[c.label] for c in (contenders[2], contenders[0], contenders[1]))
    for a, b, c in zip(pal, k0, k3, strict=True):
        assert a.episode_hash == b.episode_hash == c.episode_hash
        assert b.jct_s == a.jct_s  # K = 0: the base heuristic itself
        # policy improvement: exact rollout values never lose to the base
        assert c.metrics["avg_jct_s"] <= a.metrics["avg_jct_s"]
    stats = contenders[0].agent.episodes
    assert all(s.one_valid + s.no_alternative == s.decisions and s.changed == 0 for s in stats)
    text = format_planner_costs(contenders, outcomes)
    assert "planner:base=pal,K=0,H=end" in text and "not recorded" not in text
    assert str(stats[0].decisions) in text


def test_clone_continues_like_the_original() -> None:
    env = gym.make("palgym/PALScheduling-v0", trace="sia-philly-gen-3", window=10).unwrapped
    env.reset(seed=1)
    for _ in range(7):
        env.step(env.heuristic_action("pal"))
    clone = clone_env(env)

    def finish(target: ClusterEnv) -> np.ndarray:
        for step in range(10_000):  # alternate the first and the middle valid action
            valid = np.flatnonzero(target.action_masks())
            *_, terminated, truncated, _ = target.step(int(valid[(step % 2) * (valid.size // 2)]))
            if terminated or truncated:
                break
        return target.simulator.records().jct_s

    np.testing.assert_array_equal(finish(clone), finish(env))


def test_queue_estimate_by_hand() -> None:
    # The toy above at t = 0, both jobs queued on 2 free GPUs. SRTF list schedule: job 1
    # (100 s) on one GPU, job 0 (2 GPUs) waits for it: 100 + (100 + 1000) = 1200 s. FIFO: job 0
    # first, 1000 + (1000 + 100) = 2100 s.
    env = _toy_env(_toy((2, 1000.0), (1, 100.0)))
    env.reset(seed=0)
    assert env.simulator.now_s == 0.0
    assert queue_estimate(env.simulator, srtf=True) == pytest.approx(1200.0)
    assert queue_estimate(env.simulator, srtf=False) == pytest.approx(2100.0)
    # After the base placed job 0, time in system so far plus the estimate is 2100 s at every
    # later decision (job 0 ends at 1000 s on its 2 GPUs, then job 1 runs 100 s).
    env.step(env.heuristic_action("pal"))
    assert env.simulator.now_s > 0.0
    assert state_cost(env.simulator, "queue", srtf=True) == pytest.approx(2100.0)
    assert state_cost(env.simulator, "ideal") == pytest.approx(
        2 * env.simulator.now_s + (1000.0 - env.simulator.now_s) + 100.0)


@pytest.mark.parametrize("text, message", [
    ("K=-1", "K must be >= 0"), ("depth=3", "depth must be 1 or 2"), ("H=abc", "H must be"),
    ("speed=1", "not key=value"), ("base=nope", "unknown placement"),
    ("H=5,estimate=magic", "estimate must be one of"),
])
def test_bad_specs_name_the_option(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PlannerSpec.parse(text)


def test_spec_label_is_canonical() -> None:
    assert PlannerSpec.parse("default").label == "planner:base=pal,K=6,H=end"
    assert (PlannerSpec.parse("planner:H=20,K=4").label
            == "planner:base=pal,K=4,H=20,estimate=queue")


def test_backfill_base_gives_other_jobs_the_placement_gpu_sets() -> None:
    # Backfilling changes which job goes next, never a job's GPU set: with base pal+backfill
    # the alternatives "another slot's job" take PAL's GPU set for that job (not Random's),
    # so they equal the alternatives of base pal at the same decision.
    env = _toy_env(_toy((1, 100.0), (1, 200.0), (1, 300.0)))
    env.reset(seed=0)
    codec = env.codec
    base_action = int(env.heuristic_action("pal", check=False))
    assert base_action == int(env.heuristic_action("pal+backfill", check=False))
    plain = alternatives(env, "pal", base_action, 6)
    backfill = alternatives(env, "pal+backfill", base_action, 6)
    assert backfill == plain
    others = [codec.decode(a) for a in plain if a != codec.END_ROUND]
    assert {slot for slot, _ in others} >= {1, 2}
    assert all(m != codec.RANDOM for slot, m in others if slot > 0)


def _online_env(**kwargs: object) -> gym.Env:
    """The dynamic world with the online belief (the bench's ``dynamic-online`` task's
    world and knowledge) on a short window."""
    return gym.make("palgym/PALPlacement-v0", trace="sia-philly-gen-4", preset="dynamic",
                    cluster="16x4", window=20, belief="online", queue_order="fifo",
                    duration_knowledge="clairvoyant", **kwargs)


def test_a_clone_of_an_online_belief_env_leaves_the_original_alone() -> None:
    # The belief changes during the episode: a clone stepped ahead must not update the
    # original's belief (nor anything else the original reads): the original then continues
    # exactly like an untouched twin.
    env, twin = _online_env().unwrapped, _online_env().unwrapped
    for target in (env, twin):
        target.reset(seed=0)
        for _ in range(5):
            target.step(target.heuristic_action("pal"))
    clone = clone_env(env)
    assert clone._ctx.fit is not env._ctx.fit
    for _ in range(40):  # the clone takes other actions than PAL's: the middle valid one
        valid = np.flatnonzero(clone.action_masks())
        *_, terminated, truncated, _ = clone.step(int(valid[valid.size // 2]))
        if terminated or truncated:
            break
    np.testing.assert_array_equal(env._ctx.fit.belief.values, twin._ctx.fit.belief.values)
    observation, twin_observation = env._current().observation, twin._current().observation
    assert observation.keys() == twin_observation.keys()
    for key in observation:
        np.testing.assert_array_equal(observation[key], twin_observation[key], err_msg=key)
    np.testing.assert_array_equal(env.action_masks(), twin.action_masks())
    for target in (env, twin):
        for _ in range(10_000):
            *_, terminated, truncated, _ = target.step(target.heuristic_action("pal"))
            if terminated or truncated:
                break
    np.testing.assert_array_equal(env.simulator.records().jct_s, twin.simulator.records().jct_s)


class _ActionRecording(PlannerAgent):
    """Records the env action of every decision."""

    def __init__(self, spec: PlannerSpec) -> None:
        super().__init__(spec)
        self.actions: list[int] = []

    def predict(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        action, state = super().predict(*args, **kwargs)
        self.actions.append(int(action))
        return action, state


def test_the_planners_actions_replay_with_an_online_belief() -> None:
    # The env's trajectory is a function of its seed and actions alone: replaying the
    # planner's actions on a fresh env ends the episode exactly at the last action, with
    # the planner's job completion times.
    agent = _ActionRecording(PlannerSpec.parse("K=1,H=3"))
    planned = _run(agent, _online_env(**agent.env_kwargs), seed=0)
    fresh = _online_env(**agent.env_kwargs).unwrapped
    fresh.reset(seed=0)
    ends = []
    for step, action in enumerate(agent.actions):
        assert fresh.action_masks()[action], f"decision {step}: the planner's action is invalid"
        *_, terminated, truncated, _ = fresh.step(action)
        ends.append(terminated or truncated)
    assert ends[-1] and not any(ends[:-1])
    np.testing.assert_array_equal(fresh.simulator.records().jct_s, planned.jct_s)


# ----------------------------------------------------------- the work-conserving env
def test_reserve_is_an_alternative_like_end_round() -> None:
    # J0 (1 GPU, 300 s) placed; the head J1 (2 GPUs) is blocked with 1 GPU free; J2 (200 s)
    # and J3 (400 s) fit. END_ROUND is masked (jobs fit), RESERVE valid.
    env = _toy_env(_toy((1, 300.0), (2, 100.0), (1, 200.0), (1, 400.0)), work_conserving=True,
                   strict=True)
    env.reset(seed=0)
    codec = env.codec
    env.step(env.heuristic_action("pal"))
    assert env.rounds.round.pending == [1, 2, 3]
    # base pal+backfill places J2 (slot 1); RESERVE is offered, END_ROUND (masked) is not
    base = int(env.heuristic_action("pal+backfill", check=False))
    assert codec.decode(base)[0] == 1
    others = alternatives(env, "pal+backfill", base, 6)
    assert codec.RESERVE in others and codec.END_ROUND not in others
    # base pal reserves: its alternatives place J2 or J3 (slots 1, 2), nothing else
    base = int(env.heuristic_action("pal", check=False))
    assert base == codec.RESERVE
    others = alternatives(env, "pal", base, 6)
    assert sorted(codec.decode(a)[0] for a in others) == [1, 2]
    env.step(codec.RESERVE)
    # after RESERVE (shadow 300 s): pal ends the round; J2 (ends by 300 s) is the only other
    # valid action, J3 (400 s) would delay J1
    base = int(env.heuristic_action("pal", check=False))
    assert base == codec.END_ROUND
    others = alternatives(env, "pal", base, 6)
    assert [codec.decode(a)[0] for a in others] == [1]


def test_on_the_work_conserving_env_k0_is_the_base_and_k2_never_worse() -> None:
    base_kwargs = {"window": 16, "queue_order": "fifo", "work_conserving": True}
    traces = ClusterEnv("sia-philly-gen-2").traces
    contenders = [planner_contender("K=0", base_kwargs), planner_contender("K=2", base_kwargs),
                  heuristic_contender("pal", base_kwargs)]
    outcomes = run_contenders("palgym/PALScheduling-v0", contenders, traces, [1, 2])
    pal, k0, k2 = (outcomes[c.label] for c in (contenders[2], contenders[0], contenders[1]))
    for a, b, c in zip(pal, k0, k2, strict=True):
        assert a.episode_hash == b.episode_hash == c.episode_hash
        assert b.jct_s == a.jct_s  # K = 0: the base heuristic itself
        assert b.metrics["num_invalid_actions"] == 0 == c.metrics["num_invalid_actions"]
        assert c.metrics["avg_jct_s"] <= a.metrics["avg_jct_s"]  # exact rollout values
    reserve = 16 * 10 + 1  # K = 16, M = 2 * 4 + 2: RESERVE = K * M + 1
    assert all(reserve in outcome.actions for outcome in k0)  # pal reserved at blocked heads
    assert sum(s.evaluated for s in contenders[1].agent.episodes) > 0
