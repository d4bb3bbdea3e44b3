"""The candidate-scoring policy: its actor is equivariant to slot and candidate order, the
end-round logit reads only the cluster row, and a saved model predicts identically."""

from __future__ import annotations

import re

import numpy as np
import pytest

th = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402

from agents.sb3.policies import CandidateScoringPolicy, ObservationLayout  # noqa: E402
from palgym.envs import ClusterEnv  # noqa: E402
from palgym.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def model() -> MaskablePPO:
    th.set_num_threads(1)
    env = ClusterEnv("sia-philly-gen-0", window=30, num_slots=4, max_tiers=4)
    return MaskablePPO(CandidateScoringPolicy, env, n_steps=64, batch_size=32, seed=0,
                       device="cpu", policy_kwargs={"scorer_arch": [16, 16]})


def _logits(model: MaskablePPO, flat: np.ndarray) -> np.ndarray:
    with th.no_grad():
        return model.policy.action_net(th.as_tensor(flat[None], dtype=th.float32))[0].numpy()


def _random_flat(model: MaskablePPO, seed: int) -> np.ndarray:
    space = model.observation_space
    size = sum(int(np.prod(box.shape)) for box in space.spaces.values())
    return np.random.default_rng(seed).random(size).astype(np.float32)


def test_logits_follow_a_permutation_of_slots_and_candidates(model: MaskablePPO) -> None:
    layout = ObservationLayout.of(model.observation_space)
    k, m = layout.num_slots, layout.num_candidates
    flat = _random_flat(model, 0)
    slot_perm = np.array([2, 0, 3, 1])
    cand_perm = np.random.default_rng(1).permutation(m)
    permuted = flat.copy()
    a, b = layout.offsets["candidates"]
    cands = flat[a:b].reshape(k, m, -1)
    permuted[a:b] = cands[slot_perm][:, cand_perm].ravel()
    a, b = layout.offsets["jobs"]
    permuted[a:b] = flat[a:b].reshape(k, -1)[slot_perm].ravel()
    base, moved = _logits(model, flat), _logits(model, permuted)
    expected = base[:-1].reshape(k, m)[slot_perm][:, cand_perm].ravel()
    np.testing.assert_allclose(moved[:-1], expected, rtol=1e-5, atol=1e-6)
    assert moved[-1] == pytest.approx(base[-1])


def test_end_round_logit_reads_only_the_cluster_row(model: MaskablePPO) -> None:
    layout = ObservationLayout.of(model.observation_space)
    flat = _random_flat(model, 2)
    other = _random_flat(model, 3)
    a, b = layout.offsets["cluster"]
    other[a:b] = flat[a:b]
    assert _logits(model, other)[-1] == pytest.approx(_logits(model, flat)[-1])


def test_training_then_save_and_load_predicts_identically(model: MaskablePPO, tmp_path) -> None:
    model.learn(64)
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    assert isinstance(loaded.policy, CandidateScoringPolicy)
    env = model.get_env()
    obs = env.reset()
    masks = np.stack(env.env_method("action_masks"))
    ours, _ = model.predict(obs, action_masks=masks, deterministic=True)
    theirs, _ = loaded.predict(obs, action_masks=masks, deterministic=True)
    assert np.array_equal(ours, theirs)
    flat = _random_flat(model, 4)
    np.testing.assert_array_equal(_logits(model, flat), _logits(loaded, flat))


def test_net_arch_sets_only_the_critic() -> None:
    from agents.sb3.policies import critic_only

    assert critic_only(None) == {"pi": [], "vf": [64, 64]}
    assert critic_only([32]) == {"pi": [], "vf": [32]}
    assert critic_only({"pi": [], "vf": [8, 8]}) == {"pi": [], "vf": [8, 8]}
    with pytest.raises(ValueError, match="'pi' must be empty"):
        critic_only({"pi": [64], "vf": [64]})


def test_discounted_returns_by_hand() -> None:
    from agents.sb3.imitation import discounted_returns

    # G_2 = 1; G_1 = 0 + 0.5 * 1 = 0.5; G_0 = -2 + 0.5 * 0.5 = -1.75
    assert discounted_returns(np.array([-2.0, 0.0, 1.0]), 0.5).tolist() == [-1.75, 0.5, 1.0]


def test_behaviour_cloning_raises_the_likelihood_of_the_heuristic(model: MaskablePPO) -> None:
    from agents.sb3.imitation import collect_demonstrations, pretrain

    kwargs = {"trace": "sia-philly-gen-0", "window": 30, "num_slots": 4}
    demos = collect_demonstrations("palgym/PALPlacement-v0", kwargs, "pal", 200, 0.99, 0)
    assert demos.actions.size >= 200 and demos.num_episodes >= 1
    assert demos.masks[np.arange(demos.actions.size), demos.actions].all()  # valid actions
    fresh = MaskablePPO(CandidateScoringPolicy, model.get_env(), n_steps=64, batch_size=32,
                        seed=1, device="cpu", policy_kwargs={"scorer_arch": [16, 16]})
    before = pretrain(fresh, demos, epochs=0)
    after = pretrain(fresh, demos, epochs=5, batch_size=64, seed=0)
    assert after["accuracy"] > before["accuracy"]
    # mean log-likelihood of the demonstrated actions, recomputed after training
    obs = {k: th.as_tensor(v) for k, v in demos.observations.items()}
    with th.no_grad():
        _, log_prob, _ = fresh.policy.evaluate_actions(
            obs, th.as_tensor(demos.actions), action_masks=th.as_tensor(demos.masks))
    uniform = -np.log(demos.masks.sum(axis=1)).mean()  # a uniform masked policy's value
    assert float(log_prob.mean()) > uniform


def test_equivalent_actions_by_hand() -> None:
    from agents.sb3.imitation import equivalent_actions

    # K = 1 slot, M = 3 candidates, F_c = 2 features; candidates 0 and 2 look the same
    rows = np.array([[1.0, 0.5], [1.0, 0.7], [1.0, 0.5]], dtype=np.float32).ravel()
    mask = np.array([True, True, True, True])
    assert equivalent_actions(rows, mask, 0, (1, 3, 2)).tolist() == [True, False, True, False]
    assert equivalent_actions(rows, mask, 3, (1, 3, 2)).tolist() == [False, False, False, True]
    mask[2] = False  # an invalid twin is not a target
    assert equivalent_actions(rows, mask, 0, (1, 3, 2)).tolist() == [True, False, False, False]


def test_exploring_demonstrations_keep_the_heuristic_labels() -> None:
    from agents.sb3.imitation import collect_demonstrations

    kwargs = {"trace": "sia-philly-gen-0", "window": 20, "num_slots": 4}
    plain = collect_demonstrations("palgym/PALPlacement-v0", kwargs, "pal", 100, 0.99, 0)
    noisy = collect_demonstrations("palgym/PALPlacement-v0", kwargs, "pal", 100, 0.99, 0,
                                   explore=0.5)
    assert noisy.masks[np.arange(noisy.actions.size), noisy.actions].all()
    assert noisy.equivalent[np.arange(noisy.actions.size), noisy.actions].all()
    # the random steps lead elsewhere: the visited states differ from the heuristic's own
    size = min(plain.actions.size, noisy.actions.size)
    assert not np.array_equal(plain.observations["candidates"][:size],
                              noisy.observations["candidates"][:size])


def test_training_with_imitation_records_the_clone(tmp_path) -> None:
    pytest.importorskip("yaml")
    import yaml

    from agents.sb3.training import TrainSettings, train

    settings = TrainSettings(
        n_timesteps=64, trace="sia-philly-gen-0", window=15, eval_freq=-1,
        log_folder=str(tmp_path), env_kwargs={"num_slots": 4}, verbose=0,
        hyperparams={"n_steps": 64, "batch_size": 32, "n_epochs": 1,
                     "policy_kwargs": "dict(scorer_arch=[8], net_arch=[8])"},
        imitate="pal", imitate_decisions=60, imitate_epochs=2,
    )
    result = train(settings)
    record = yaml.safe_load((result.run_dir / "imitation.yml").read_text(encoding="utf-8"))
    assert record["heuristic"] == "pal" and record["decisions"] >= 60
    # accuracy = greedy hits / decisions, so accuracy x decisions is a whole number of hits
    hits = record["accuracy"] * record["decisions"]
    assert hits == pytest.approx(round(hits), abs=1e-6) and record["explore"] == 0.3
    with pytest.raises(ConfigError, match="needs --algo maskable_ppo"):
        train(TrainSettings(algo="ppo", n_timesteps=64, trace="sia-philly-gen-0", window=15,
                            eval_freq=-1, log_folder=str(tmp_path / "ppo"), verbose=0,
                            imitate="pal"))


# --------------------------------------------------------------------------- the ``gpus`` key
@pytest.fixture(scope="module")
def rates_model() -> MaskablePPO:
    th.set_num_threads(1)
    env = ClusterEnv("sia-philly-gen-0", window=20, num_slots=4, max_tiers=6, preset="dynamic",
                     belief="online", observed_rates=True)
    return MaskablePPO(CandidateScoringPolicy, env, n_steps=32, batch_size=16, seed=0,
                       device="cpu", policy_kwargs={"scorer_arch": [16, 16], "gpu_arch": 8})


def _with_gpus(layout: ObservationLayout, flat: np.ndarray, rows: np.ndarray) -> np.ndarray:
    out = flat.copy()
    a, b = layout.offsets["gpus"]
    out[a:b] = rows.ravel()
    return out


def test_layout_finds_the_gpus_rows(rates_model: MaskablePPO) -> None:
    layout = ObservationLayout.of(rates_model.observation_space)
    # 16 x 4 cluster: G = 64 rows of 6 features; K = 4 slots, M = 2 * 6 + 2 = 14 candidates
    assert (layout.num_gpus, layout.num_slots, layout.num_candidates) == (64, 4, 14)
    a, b = layout.offsets["gpus"]
    assert b - a == 64 * 6
    flat = _random_flat(rates_model, 5)
    np.testing.assert_array_equal(layout.gpus(th.as_tensor(flat[None]))[0].numpy(),
                                  flat[a:b].reshape(64, 6))
    assert _logits(rates_model, flat).shape == (4 * 14 + 1,)


def test_logits_ignore_the_order_of_gpus_but_read_their_rows(rates_model: MaskablePPO) -> None:
    layout = ObservationLayout.of(rates_model.observation_space)
    flat = _random_flat(rates_model, 6)
    a, b = layout.offsets["gpus"]
    rows = flat[a:b].reshape(64, 6)
    permuted = _with_gpus(layout, flat, rows[np.random.default_rng(7).permutation(64)])
    np.testing.assert_allclose(_logits(rates_model, permuted), _logits(rates_model, flat),
                               rtol=1e-5, atol=1e-6)
    slower = rows.copy()
    slower[:, 4] = 1.0  # every GPU's last observed slowdown at the box's top
    changed = _logits(rates_model, _with_gpus(layout, flat, slower)) - _logits(rates_model, flat)
    assert np.abs(changed[:-1]).max() > 0 and abs(changed[-1]) > 0


def test_rates_model_saves_and_loads(rates_model: MaskablePPO, tmp_path) -> None:
    rates_model.learn(32)
    path = tmp_path / "rates.zip"
    rates_model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    assert loaded.policy.action_net.gpu_summary.encode.out_features == 8
    flat = _random_flat(rates_model, 8)
    np.testing.assert_array_equal(_logits(rates_model, flat), _logits(loaded, flat))


def test_without_gpus_the_scorer_has_its_old_parameters(model: MaskablePPO) -> None:
    net = model.policy.action_net
    assert net.gpu_summary is None and net.gpus_in is None
    # scorer_arch [16, 16]; F_c = 7, F_j = 12, cluster row F_k (bias-free maps for job / cluster)
    f_k = net.layout.offsets["cluster"][1] - net.layout.offsets["cluster"][0]
    by_hand = ((7 * 16 + 16) + 12 * 16 + f_k * 16  # first layer
               + (16 * 16 + 16) + (16 + 1)  # score: 16 -> 16 -> 1
               + (f_k * 16 + 16) + (16 * 16 + 16) + (16 + 1))  # end_round: F_k -> 16 -> 16 -> 1
    assert sum(p.numel() for p in net.parameters()) == by_hand


def test_layout_refuses_a_malformed_gpus_key() -> None:
    from gymnasium import spaces

    box = spaces.Box(0.0, 1.0, (8,), np.float32)
    for shape in [(4, 5), (20,), (2, 3, 6)]:  # 5 columns; 20 is not a multiple of 6; 3-D
        space = spaces.Dict({"candidates": box, "cluster": box, "jobs": box,
                             "gpus": spaces.Box(0.0, 1.0, shape, np.float32)})
        with pytest.raises(ValueError, match=rf"'gpus': shape {re.escape(str(shape))}"):
            ObservationLayout.of(space)
    with pytest.raises(ValueError, match="not a palgym observation space"):
        ObservationLayout.of(spaces.Dict({"jobs": box, "cluster": box}))


# --------------------------------------------------------------------- the RESERVE action
@pytest.fixture(scope="module")
def reserve_model() -> MaskablePPO:
    th.set_num_threads(1)
    env = ClusterEnv("sia-philly-gen-0", task="scheduling", window=30, num_slots=4,
                     work_conserving=True)
    return MaskablePPO(CandidateScoringPolicy, env, n_steps=32, batch_size=16, seed=0,
                       device="cpu", policy_kwargs={"scorer_arch": [16, 16]})


def test_reserve_logit_reads_the_cluster_row_and_the_head_job(reserve_model) -> None:
    layout = ObservationLayout.of(reserve_model.observation_space)
    k, m = layout.num_slots, layout.num_candidates
    flat = _random_flat(reserve_model, 9)
    logits = _logits(reserve_model, flat)
    assert logits.shape == (k * m + 2,)  # placements, END_ROUND, RESERVE
    kept = _random_flat(reserve_model, 10)  # everything else changed
    a, b = layout.offsets["cluster"]
    kept[a:b] = flat[a:b]
    a, b = layout.offsets["jobs"]
    head = (b - a) // k
    kept[a:a + head] = flat[a:a + head]  # slot 0's job row: the head's
    assert _logits(reserve_model, kept)[-1] == pytest.approx(logits[-1])
    moved = flat.copy()
    moved[a:a + head] = 1.0 - flat[a:a + head]
    assert _logits(reserve_model, moved)[-1] != pytest.approx(logits[-1])
    assert _logits(reserve_model, moved)[-2] == pytest.approx(logits[-2])  # END_ROUND's


def test_reserve_is_masked_like_every_action(reserve_model, tmp_path) -> None:
    env = reserve_model.get_env()
    obs = env.reset()
    obs_tensor, _ = reserve_model.policy.obs_to_tensor(obs)
    n = int(reserve_model.action_space.n)
    masks = np.zeros((1, n), bool)
    masks[0, [0, n - 1]] = True  # a placement and RESERVE
    with th.no_grad():
        probs = reserve_model.policy.get_distribution(
            obs_tensor, action_masks=masks).distribution.probs[0].numpy()
    assert probs[n - 1] > 0 and probs[0] + probs[n - 1] == pytest.approx(1.0)
    masks[0, n - 1] = False
    with th.no_grad():
        probs = reserve_model.policy.get_distribution(
            obs_tensor, action_masks=masks).distribution.probs[0].numpy()
    assert probs[n - 1] == 0 and probs[0] == pytest.approx(1.0)
    reserve_model.learn(32)
    path = tmp_path / "reserve.zip"
    reserve_model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    flat = _random_flat(reserve_model, 11)
    np.testing.assert_array_equal(_logits(reserve_model, flat), _logits(loaded, flat))


def test_the_reserve_mlp_is_sized_by_hand(reserve_model) -> None:
    net = reserve_model.policy.action_net
    f_k = net.layout.offsets["cluster"][1] - net.layout.offsets["cluster"][0]
    # cluster row + the head's job row (F_j = 12) -> 16 -> 16 -> 1
    assert sum(p.numel() for p in net.reserve.parameters()) == (
        (f_k + 12) * 16 + 16 + (16 * 16 + 16) + (16 + 1))


def test_an_action_space_of_another_size_is_refused() -> None:
    from gymnasium import spaces

    from agents.sb3.policies import scores_reserve

    env = ClusterEnv("sia-philly-gen-0", window=30, num_slots=4)
    layout = ObservationLayout.of(env.observation_space)
    places = layout.num_slots * layout.num_candidates
    assert not scores_reserve(layout, spaces.Discrete(places + 1))
    assert scores_reserve(layout, spaces.Discrete(places + 2))
    with pytest.raises(ValueError, match=rf"expected Discrete\({places + 1}\) or "
                                         rf"Discrete\({places + 2}\)"):
        scores_reserve(layout, spaces.Discrete(places + 3))
