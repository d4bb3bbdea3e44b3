"""The action codec, actions outside the action space, and the env's argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.envs import ClusterEnv
from palgym.envs.actions import ActionCodec
from palgym.errors import ConfigError, InvalidActionError


def test_codec_arithmetic_worked_out_by_hand() -> None:
    codec = ActionCodec(num_slots=3, max_tiers=2)  # M = 2 * 2 + 2 = 6, n = 3 * 6 + 1 = 19
    assert (codec.num_candidates, codec.n, codec.END_ROUND) == (6, 19, 18)
    assert (codec.PACKED, codec.RANDOM) == (4, 5)
    assert (codec.within(1), codec.best(0), codec.best(1)) == (1, 2, 3)
    assert codec.encode(2, 5) == 17 and codec.decode(17) == (2, 5)
    assert codec.encode(1, 0) == 6 and codec.decode(6) == (1, 0)
    decoded = [codec.decode(a) for a in range(codec.END_ROUND)]
    assert len(set(decoded)) == 18 and all(codec.encode(*sc) == a for a, sc in enumerate(decoded))


@pytest.mark.parametrize("bad", [(3, 6), (-1, 0), (0, -1)])
def test_codec_rejects_slots_and_candidates_outside_the_window(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="outside"):
        ActionCodec(3, 2).encode(*bad)


def test_codec_rejects_end_round_and_out_of_range_in_decode() -> None:
    codec = ActionCodec(3, 2)
    for action in (18, 19, -1):
        with pytest.raises(ValueError, match=f"action {action} is not a placement action"):
            codec.decode(action)


@pytest.mark.parametrize("action", [10_000, -1, 16 * 10 + 1])
def test_step_outside_the_action_space_raises_naming_action_and_space(action: int) -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20)  # K = 16, M = 10: Discrete(161)
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=rf"action {action} .*Discrete\(161\)"):
        env.step(action)
    with pytest.raises(ValueError):  # InvalidActionError is a ValueError, as in Gymnasium
        env.step(np.int64(action))
    _, _, _, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert info["num_invalid_actions"] == 0  # the rejected actions did not count or act


@pytest.mark.parametrize("action", [1.0, "3", None, np.array([1]), np.float32(2)])
def test_step_with_a_non_integer_action_raises(action: object) -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20)
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"Discrete\(161\)"):
        env.step(action)  # type: ignore[arg-type]


def test_integer_scalar_types_are_accepted() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20)
    env.reset(seed=0)
    action = int(np.flatnonzero(env.action_masks())[0])
    for kind in (np.int32, np.int64, np.uint16, np.array):
        twin = ClusterEnv("sia-philly-gen-0", window=20)
        twin.reset(seed=0)
        assert not twin.step(kind(action))[4]["invalid_action"]


def test_masked_in_space_action_takes_the_fallback_and_is_counted() -> None:
    env, twin = ClusterEnv("sia-philly-gen-0", window=30), ClusterEnv("sia-philly-gen-0", window=30)
    env.reset(seed=0)
    twin.reset(seed=0)
    forbidden = int(np.flatnonzero(~env.action_masks())[0])
    obs, reward, *_, info = env.step(forbidden)
    expected = twin.step(twin.heuristic_action("pal"))  # the default fallback_policy
    assert info["invalid_action"] and info["num_invalid_actions"] == 1
    assert reward == expected[1]
    assert all(np.array_equal(obs[k], expected[0][k]) for k in obs)


@pytest.mark.parametrize(("name", "value"), [
    ("num_slots", 0), ("num_slots", -3), ("max_tiers", 0), ("num_slots", 2.5),
    ("reward_scale", 0.0), ("reward_scale", -1.0), ("reward_scale", float("nan")),
])
def test_each_bad_argument_gets_its_own_message(name: str, value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        ClusterEnv("sia-philly-gen-0", **{name: value})
    message = str(caught.value)
    assert message.startswith(f"{name} must be") and repr(value) in message
    others = {"num_slots", "max_tiers", "reward_scale"} - {name}
    assert not any(other in message for other in others)


def test_unknown_backend_is_named() -> None:
    with pytest.raises(ConfigError, match="backend must be one of .*'cuda'"):
        ClusterEnv("sia-philly-gen-0", backend="cuda")
