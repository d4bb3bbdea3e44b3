"""The work-conserving scheduling env (``work_conserving=True``, palgym/envs/conserving.py;
docs/ENV.md "Work-conserving scheduling"): hand-checked masks on a 2x1 toy, RESERVE's EASY
reservation, heuristic agents equal to ``run_episode`` bit for bit (as tests/test_env.py and
tests/test_backfill_env.py check for the scheduling task), random valid play, the layout and
the refusals."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import palgym  # noqa: F401  (registers the ids)
from agents.base import heuristic_env_kwargs
from palgym import make_placement, run_episode
from palgym.envs import ClusterEnv
from palgym.envs.features import log_time
from palgym.envs.layouts import ENV_LAYOUTS, layout_hash, layout_text
from palgym.envs.observations import RESERVATION_FEATURES
from palgym.envs.selector import SelectorEnv
from palgym.errors import ConfigError, InvalidActionError
from palgym.policies.loader import register_placement
from palgym.sim.types import FREE
from tests.toys import A, ClusterSpec, R, toy_profile, toy_trace

NAMES = ("pal", "pal+backfill", "pal+easy", "pm-first", "pm-first+backfill", "pm-first+easy")
SCHEDULING = "palgym/PALScheduling-v0"


def _toy_env(trace, **kwargs) -> ClusterEnv:  # type: ignore[no-untyped-def]
    """2 nodes x 1 GPU, uniform GPUs, no locality penalty, R = 100 s, FIFO, work-conserving,
    strict."""
    kwargs = {"class_reorder": True, "strict": True, **kwargs}
    return ClusterEnv(trace, task="scheduling", cluster=ClusterSpec(2, 1),
                      profile=toy_profile(2), locality_penalty=1.0, round_duration_s=R,
                      work_conserving=True, **kwargs)


# J0: 1 GPU x 300 s; J1: 2 GPUs x 100 s; J2: 1 GPU x 200 s; J3: 1 GPU x 400 s; all at t = 0.
TOY = toy_trace((1, 0.0, 300.0, A), (2, 0.0, 100.0, A), (1, 0.0, 200.0, A), (1, 0.0, 400.0, A))


def _slots(mask: np.ndarray, env: ClusterEnv) -> set[int]:
    """Window slots with a valid placement."""
    places = mask[: env.codec.END_ROUND].reshape(env.num_slots, env.num_candidates)
    return set(np.flatnonzero(places.any(axis=1)).tolist())


def test_codec_and_spaces() -> None:
    env = _toy_env(TOY)
    k, m = env.num_slots, env.num_candidates
    assert (env.codec.END_ROUND, env.codec.RESERVE) == (k * m, k * m + 1)
    assert env.action_space.n == k * m + 2 == env.codec.n
    plain = ClusterEnv(TOY, task="scheduling", cluster=ClusterSpec(2, 1), profile=toy_profile(2))
    assert plain.action_space.n == k * m + 1 and plain.codec.RESERVE == -1
    # the observation is the scheduling task's, its cluster row ending with the reservation
    assert {key: space for key, space in env.observation_space.spaces.items()
            if key != "cluster"} == {key: space for key, space in
                                     plain.observation_space.spaces.items() if key != "cluster"}
    names = env.feature_names["cluster"]
    assert names == (*plain.feature_names["cluster"], *RESERVATION_FEATURES)
    assert RESERVATION_FEATURES == ("reserved", "log_reserve_shadow_time", "reserve_extra_frac")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=f"{k * m + 1} reserves"):
        env.step(k * m + 2)


def test_masks_on_the_toy_by_hand() -> None:
    env = _toy_env(TOY)
    end, reserve = env.codec.END_ROUND, env.codec.RESERVE
    env.reset(seed=0)
    # t = 0, 2 GPUs free, window J0 J1 J2 J3: the head J0 fits -> no RESERVE, no END; every
    # job but J1 (2 GPUs: fits too) may be placed.
    mask = env.action_masks()
    assert not mask[end] and not mask[reserve]
    assert _slots(mask, env) == {0, 1, 2, 3}
    env.step(env.heuristic_action("pal+easy"))  # J0 on one GPU
    # window J1 J2 J3, 1 GPU free: the head J1 is blocked -> RESERVE valid; J2 and J3 fit,
    # so END is masked (work-conserving).
    assert env.rounds.round.pending == [1, 2, 3]
    mask = env.action_masks()
    assert mask[reserve] and not mask[end]
    assert _slots(mask, env) == {1, 2}
    assert env.heuristic_action("pal+easy") == reserve
    assert env.heuristic_action("pal") == reserve
    assert env.heuristic_action("pal+backfill") == env.codec.encode(1, env.codec.best(0))
    env.step(reserve)
    # EASY: J0 holds a GPU for 300 s -> shadow 300 s, extra 0 GPUs. J2 (200 s) ends by the
    # shadow time: valid; J3 (400 s) would delay J1: masked. END now valid, RESERVE spent.
    reservation = env.rounds.round.reservation
    assert reservation is not None
    assert (reservation.head, reservation.shadow_s, reservation.extra) == (1, 300.0, 0)
    mask = env.action_masks()
    assert mask[end] and not mask[reserve]
    assert _slots(mask, env) == {1}
    assert env.heuristic_action("pal") == end
    action = env.heuristic_action("pal+easy")
    assert env.codec.decode(action)[0] == 1
    with pytest.raises(InvalidActionError):  # J3 would delay the head
        env.step(env.codec.encode(2, env.codec.PACKED))


def test_the_cluster_row_shows_the_reservation_by_hand() -> None:
    """5 nodes x 1 GPU. J0 (2 GPUs, 300 s) and J1 (1 GPU, 100 s) start; the head J2 (4 GPUs)
    is blocked with 2 GPUs free. EASY: J1 frees 1 GPU at 100 s (3 free), J0 2 more at 300 s
    (5 free >= 4): shadow 300 s, extra 5 - 4 = 1 GPU. J3 (1 GPU, 400 s) outlasts the shadow
    time but fits in the extra GPU, which it then takes (extra 0); J4 (the same) still fits
    but would delay J2."""
    trace = toy_trace((2, 0.0, 300.0, A), (1, 0.0, 100.0, A), (4, 0.0, 100.0, A),
                      (1, 0.0, 400.0, A), (1, 0.0, 400.0, A))
    env = ClusterEnv(trace, task="scheduling", cluster=ClusterSpec(5, 1), profile=toy_profile(5),
                     locality_penalty=1.0, round_duration_s=R, work_conserving=True,
                     strict=True)
    reserve = env.codec.RESERVE
    obs, _ = env.reset(seed=0)
    assert obs["cluster"][-3:].tolist() == [0.0, 0.0, 0.0]  # no reservation
    for _ in range(2):  # J0, then J1
        obs = env.step(env.heuristic_action("pal+easy"))[0]
    assert env.rounds.round.pending == [2, 3, 4] and env.heuristic_action("pal+easy") == reserve
    assert obs["cluster"][-3:].tolist() == [0.0, 0.0, 0.0]
    obs = env.step(reserve)[0]
    shadow = float(np.float32(log_time(300.0)))  # log1p(300) / log1p(365 days)
    assert obs["cluster"][-3:].tolist() == [1.0, shadow, np.float32(1 / 5)]
    action = env.heuristic_action("pal+easy")
    assert env.codec.decode(action)[0] == 1  # J3, window slot 1
    obs = env.step(action)[0]
    assert env.rounds.round.pending == [2, 4] and not _slots(env.action_masks(), env)
    assert obs["cluster"][-3:].tolist() == [1.0, shadow, 0.0]
    obs = env.step(env.codec.END_ROUND)[0]  # the next round starts without a reservation
    assert env.simulator.now_s == R
    assert obs["cluster"][-3:].tolist() == [0.0, 0.0, 0.0]


def test_end_round_when_no_window_job_fits() -> None:
    # one window slot (K = 1): after J0, the window holds J1 (2 GPUs, blocked) and J2 (fits)
    # waits behind it. No placement is valid, so END is valid, and so is RESERVE.
    env = _toy_env(TOY, num_slots=1)
    end, reserve = env.codec.END_ROUND, env.codec.RESERVE
    env.reset(seed=0)
    mask = env.action_masks()
    assert mask[:end].any() and not mask[end] and not mask[reserve]  # J0 fits
    env.step(env.heuristic_action("pal"))  # J0
    assert env.rounds.round.pending == [1, 2, 3]
    mask = env.action_masks()
    assert not mask[:end].any() and mask[end] and mask[reserve]
    env.step(end)
    # the next round (t = 100) re-places J0 first (non-sticky rounds start empty): it fits,
    # so END is masked again
    assert env.simulator.now_s == R
    assert env.rounds.round.pending[0] == 0
    mask = env.action_masks()
    assert not mask[end] and not mask[reserve]


@pytest.mark.parametrize(("name", "completions"), [
    # plain: J0 [0, 300), J1 waits for both GPUs [300, 400), J2 [400, 600), J3 [400, 800)
    ("pal", [300.0, 400.0, 600.0, 800.0]),
    # EASY: J2 ends by the shadow time (300) and backfills [0, 200); J3 (400 s) would delay
    # J1 at 0 and at 200 (shadow 100 s then), so it starts after J1: [400, 800)
    ("pal+easy", [300.0, 400.0, 200.0, 800.0]),
])
def test_toy_episodes_by_hand(name: str, completions: list[float]) -> None:
    env = _toy_env(TOY)
    got = _through_env(env, name)
    np.testing.assert_array_equal(got, completions)
    direct = run_episode(env.episode, name, "fifo")
    np.testing.assert_array_equal(direct.records.completion_time_s, completions)


def _through_env(env: ClusterEnv, name: str, seed: int = 0) -> np.ndarray:
    env.reset(seed=seed)
    while True:
        _, _, terminated, truncated, info = env.step(env.heuristic_action(name))
        if terminated or truncated:
            assert info["num_invalid_actions"] == 0
            return env.simulator.records().completion_time_s


@pytest.mark.parametrize("order", ["fifo", "srtf"])
@pytest.mark.parametrize("name", NAMES)
def test_heuristic_agents_equal_run_episode(name: str, order: str) -> None:
    env = ClusterEnv("sia-philly-gen-3", task="scheduling", window=50, queue_order=order,
                     work_conserving=True, strict=True, **heuristic_env_kwargs(name))
    env.reset(seed=0)
    reserves = 0
    while True:
        action = env.heuristic_action(name)
        assert env.action_masks()[action]
        reserves += action == env.codec.RESERVE
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    direct = run_episode(env.episode, name, order)
    np.testing.assert_array_equal(env.simulator.records().completion_time_s,
                                  direct.records.completion_time_s)
    for key in ("avg_jct_s", "p99_jct_s", "makespan_s", "num_completed"):
        assert info["episode_metrics"][key] == getattr(direct.metrics, key), key
    # first-fit never reserves; plain and EASY names meet blocked heads on this window
    assert (reserves == 0) == name.endswith("+backfill")


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_random_valid_play_keeps_the_masks_consistent(backend: str) -> None:
    """Random valid actions (RESERVE after arbitrary placements included): every mask has an
    action, END only when nothing is placeable or after RESERVE, and after RESERVE every valid
    placement is one EASY admits (a strict env: charging a refused job would raise)."""
    env = ClusterEnv("sia-philly-gen-3", task="scheduling", window=30, work_conserving=True,
                     strict=True, backend=backend)
    rng = np.random.default_rng(1)
    env.reset(seed=2)
    reserved = steps = 0
    end, reserve = env.codec.END_ROUND, env.codec.RESERVE
    while True:
        mask = env.action_masks()
        decision = env.rounds.round
        placeable = mask[:end].any()
        assert mask[end] == (decision.reservation is not None or not placeable)
        assert mask[reserve] == (decision.reservation is None
                                 and not decision.fits(decision.pending[0]))
        if decision.reservation is not None:
            view = env.simulator.view()
            for slot in _slots(mask, env):
                assert decision.reservation.allows(view, decision.pending[slot])
        action = int(rng.choice(np.flatnonzero(mask)))
        reserved += action == reserve
        steps += 1
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert reserved > 0 and steps > reserved


def test_gymnasium_env_checker_passes() -> None:
    env = gym.make(SCHEDULING, window=40, work_conserving=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_layout_has_the_reserve_action() -> None:
    env = gym.make(SCHEDULING, window=8, work_conserving=True)
    assert "action Discrete n=162 start=0 end_round=160 reserve=161" in layout_text(env)
    assert layout_hash(env) == ENV_LAYOUTS[SCHEDULING]["work_conserving"]
    assert layout_hash(env) != ENV_LAYOUTS[SCHEDULING]["default"]
    plain = gym.make(SCHEDULING, window=8, work_conserving=False)
    assert layout_hash(plain) == ENV_LAYOUTS[SCHEDULING]["default"]


def test_refusals_are_named() -> None:
    with pytest.raises(ConfigError, match="work_conserving=True needs task='scheduling'"):
        ClusterEnv("sia-philly-gen-3", task="placement", window=8, work_conserving=True)
    with pytest.raises(ConfigError, match="work_conserving must be a bool"):
        ClusterEnv("sia-philly-gen-3", task="scheduling", window=8, work_conserving=1)
    with pytest.raises(ConfigError, match="duration_knowledge='unknown'"):
        ClusterEnv("sia-philly-gen-3", task="scheduling", window=8, work_conserving=True,
                   duration_knowledge="unknown")
    with pytest.raises(ConfigError, match="work_conserving=True"):
        SelectorEnv("sia-philly-gen-3", window=8, work_conserving=True)


class _DelegatesToPal:
    """A user's placement without a candidate kind (the env asks it for its target)."""

    name = "wc-delegates-to-pal"
    sticky = False
    deterministic = True
    class_reorder = True

    def __init__(self, factors: Any, config: Any) -> None:
        self.pal = make_placement("pal", factors, config)

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        return np.asarray(self.pal.place(view, order, sampler))


class _Idles(_DelegatesToPal):
    """Places nothing: it leaves a fitting head waiting."""

    name = "wc-idles"

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        return np.full(view.cluster.num_gpus, FREE, np.int64)


def test_a_placement_without_a_candidate_kind_reserves_at_a_blocked_head() -> None:
    register_placement(_DelegatesToPal)
    env = ClusterEnv("sia-philly-gen-3", task="scheduling", window=50, work_conserving=True,
                     strict=True)
    completions = _through_env(env, _DelegatesToPal.name)
    direct = run_episode(env.episode, "pal", "fifo")
    np.testing.assert_array_equal(completions, direct.records.completion_time_s)
    register_placement(_Idles)
    env = _toy_env(TOY)
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="leaves job 0 waiting though it fits"):
        env.heuristic_action(_Idles.name)
