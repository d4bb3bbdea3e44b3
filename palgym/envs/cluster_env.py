"""The palgym Gymnasium environment (one class, two registered tasks)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from palgym.envs import kernel
from palgym.envs.candidates import (
    EpisodeTables,
    WindowCandidates,
    num_candidates,
    random_index,
    window_candidates,
)
from palgym.envs.decisions import DecisionRound
from palgym.envs.episodes import EpisodeMemo, TraceSpec, choose_episode_trace, load_traces
from palgym.envs.heuristics import (
    check_choice,
    check_heuristic,
    copy_rng,
    heuristic_candidate,
    make_config,
    pal_orders,
)
from palgym.envs.observations import ObservationBuilder
from palgym.envs.rewards import REWARD_NAMES, RewardTracker, episode_metrics
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.io.profile_file import read_profile
from palgym.policies import PLACEMENT_NAMES, make_queue_order, make_sampler
from palgym.policies.allocation import random_allocation
from palgym.sim.cluster import ClusterSpec
from palgym.sim.engine import Simulator
from palgym.sim.fast_forward import idle_rounds
from palgym.sim.variability import VariabilityProfile
from palgym.simulate import make_episode


class ClusterEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """## Description

    A GPU cluster whose GPUs run each class of ML job at their own speed (PAL, SC24). At every
    round boundary the simulator credits progress, completes jobs and admits arrivals; the agent
    then places the round's jobs one decision at a time: which job goes next and which GPU set
    (candidate) it gets. Heuristics (PAL, PM-First, Packed, Random) are agents of this env
    (:meth:`heuristic_action`) and reproduce :func:`palgym.simulate.run_episode` bit for bit.

    Tasks: ``"placement"`` (``palgym/PALPlacement-v0``): the queue order fixes the round's jobs
    (the longest prefix that fits); the agent orders them and picks GPUs. ``"scheduling"``
    (``palgym/PALScheduling-v0``): any waiting job that fits may be placed (backfilling) and
    the agent may end the round early (deferral).

    ## Observation Space

    ``Dict`` of flat float32 ``Box`` es in [0, 1] (entry names: ``env.unwrapped.feature_names``;
    reshape with ``env.unwrapped.observation_shapes``):

    - ``jobs`` (K, 12): present, selectable, num_gpus / G, class one-hot, log remaining ideal
      time, log waiting time, log attained service, was running, queue position k / K;
    - ``candidates`` (K, M, 7), candidate (k, m) = action k * M + m: feasible, max slowdown
      factor / 4, spans nodes, (lf - 1) / 3, speed / 2, fraction on the best tier, keeps the
      current GPUs;
    - ``cluster`` (4T + G_n + 5,): free GPUs per (tier, class) / G, node free-count histogram,
      free fraction, pending / K, queued / 4K, log time.

    ## Action Space

    ``Discrete(K * M + 1)``: action ``k * M + m`` gives the job in window slot k its candidate m
    (M = 2T + 2: T within-node tiers, T best-factor tiers, Packed, Random); ``K * M`` ends the
    round. ``action_masks()`` (bool (K*M+1,)) marks the valid ones and is never all False. An
    invalid action is replaced by the ``fallback_policy`` heuristic's action, flagged in
    ``info["invalid_action"]`` and counted; with ``strict=True`` it raises
    :class:`~palgym.errors.InvalidActionError`.

    ## Rewards

    ``reward="jct"`` (default): -(time in system of measured jobs) / ``reward_scale`` at every
    step, so the return is -sum(JCT) / reward_scale exactly. Also ``slowdown``, ``makespan``,
    ``utilization`` and ``relative`` (vs ``baseline_policy`` run on the identical episode);
    ``info["reward_terms"]`` names the terms (:mod:`palgym.envs.rewards`).

    ## Episode End

    Terminated when every measured job has completed; truncated after ``max_rounds`` rounds.
    Stepping after the end without ``reset`` raises :class:`~palgym.errors.PalgymError`. The
    final ``info["episode_metrics"]`` holds avg/p50/p99 JCT (s), makespan (s), utilizations,
    num_jobs and num_invalid_actions.

    ## Arguments

    ``trace`` (path, bundled name, ``"bundled"``, a trace-set split ``"SET:SPLIT"`` such as
    ``"bundled:train"``, Trace, or list), ``window`` (jobs per episode, None = whole trace),
    ``variability_data`` (measurement folder) or ``profile`` (file or VariabilityProfile),
    ``preset`` (``"default"`` | ``"pal-artifact"``), ``cluster`` (``"16x4"``), ``queue_order``
    (``fifo`` | ``las`` | ``srtf`` | ``tiresias``), ``locality_penalty``, ``round_duration_s``,
    ``sticky``, ``class_reorder`` (window in PAL's class order), ``reward``, ``reward_scale``
    (s, default 360000), ``baseline_policy``,
    ``max_rounds``, ``num_slots`` (K, default 16), ``max_tiers`` (T, default 4), ``strict``,
    ``fallback_policy`` (default ``"pal"``), ``task``, ``render_mode`` (``"ansi"`` |
    ``"rgb_array"``).

    ## Registered Configurations

    ``palgym/PALPlacement-v0`` (task placement), ``palgym/PALScheduling-v0`` (task scheduling).

    ## Version History

    v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(  # noqa: PLR0913 - an env's arguments are its configuration
        self,
        trace: TraceSpec | Sequence[TraceSpec] = "bundled",
        *,
        task: str = "placement",
        window: int | None = None,
        variability_data: str | Path | None = None,
        profile: str | Path | VariabilityProfile | None = None,
        preset: str = "default",
        cluster: str | ClusterSpec = "16x4",
        queue_order: str = "fifo",
        locality_penalty: float | None = None,
        round_duration_s: float | None = None,
        sticky: bool = False,
        class_reorder: bool = True,
        reward: str = "jct",
        reward_scale: float = 360_000.0,
        baseline_policy: str = "packed-sticky",
        max_rounds: int = 100_000,
        num_slots: int = 16,
        max_tiers: int = 4,
        strict: bool = False,
        fallback_policy: str = "pal",
        render_mode: str | None = None,
    ) -> None:
        check_choice("task", task, ("placement", "scheduling"))
        check_choice("reward", reward, REWARD_NAMES)
        check_choice("baseline_policy", baseline_policy, PLACEMENT_NAMES)
        check_choice("fallback_policy", fallback_policy, PLACEMENT_NAMES)
        check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        if num_slots < 1 or max_tiers < 1 or reward_scale <= 0:
            raise ConfigError("num_slots and max_tiers must be >= 1 and reward_scale > 0")
        self.task = task
        self.traces = load_traces(trace)
        self.window = window
        self.cluster = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
        self.config = make_config(preset, locality_penalty, round_duration_s, max_rounds)
        if sticky and self.config.packed_sticky_strict_total:
            raise ConfigError("sticky envs need packed_sticky_strict_total=False")
        self.variability_data = variability_data
        self.profile = read_profile(profile) if isinstance(profile, (str, Path)) else profile
        self.order = make_queue_order(queue_order)
        self.sticky = sticky
        self.class_reorder = class_reorder
        self.reward_name = reward
        self.reward_scale = reward_scale
        self.baseline_policy = baseline_policy
        self.num_slots = num_slots
        self.max_tiers = max_tiers
        self.strict = strict
        self.fallback_policy = fallback_policy
        self.render_mode = render_mode
        self.num_candidates = num_candidates(max_tiers)
        self._observations = ObservationBuilder(num_slots, max_tiers, self.cluster.gpus_per_node)
        self.observation_space = self._observations.space  # type: ignore[assignment]
        self.num_actions = num_slots * self.num_candidates + 1
        self.action_space = spaces.Discrete(self.num_actions)
        self.end_round_action = num_slots * self.num_candidates
        # The compiled kernel reproduces the default within-node order only.
        self._compiled = kernel.AVAILABLE and self.config.pal_node_order == "ascending"
        self._memo = EpisodeMemo()
        self._sim: Simulator | None = None
        self._finished = True

    # ------------------------------------------------------------------ API
    @property
    def feature_names(self) -> dict[str, tuple[str, ...]]:
        """Names of the last axis of every observation key."""
        return self._observations.feature_names()

    @property
    def observation_shapes(self) -> dict[str, tuple[int, ...]]:
        """Logical shape of every observation key (the keys themselves are flat)."""
        return dict(self._observations.logical_shapes)

    @property
    def simulator(self) -> Simulator:
        """The running engine (read only; raises before the first reset)."""
        if self._sim is None:
            raise PalgymError("call reset() first")
        return self._sim

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode; ``options`` may set ``trace`` (index, name or Trace),
        ``window_start`` and ``profile``. Otherwise both are drawn from the seeded RNG."""
        super().reset(seed=seed)
        options = dict(options or {})
        trace, window_start = choose_episode_trace(self.traces, self.window, self.np_random,
                                                   options)
        episode_seed = int(self.np_random.integers(2**31 - 1))
        profile = options.get("profile", self.profile)
        if profile is None and self.variability_data is None:
            profile = self._memo.bundled_profile(self.config.profile_sampling, self.cluster)
        episode = make_episode(
            trace, cluster=self.cluster, config=self.config, profile=profile,
            variability_data=None if profile is not None else self.variability_data,
            seed=episode_seed,
        )
        self._episode = episode
        self._factors = self._memo.slowdown_factors(episode, self.max_tiers)
        self._pal_orders = pal_orders(self._factors, self.config, self.max_tiers)
        self._sampler = make_sampler(copy_rng(episode.placement_rng))
        self._sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
        self._tables = EpisodeTables.build(
            self._sim, self._factors, self.max_tiers,
            self.sticky and self.config.packed_sticky_strict_total, self.num_slots,
        )
        self._rewards = RewardTracker(
            self.reward_name, self.reward_scale,
            self._memo.baseline(episode, self.baseline_policy, self.order.name, self._factors)
            if self.reward_name == "relative" else None,
        )
        self._rewards.reset(self._sim)
        self._invalid, self._finished = 0, False
        self._pending_reward: dict[str, float] = {}
        self._history: list[np.ndarray] = []
        self._round_memo: tuple[np.ndarray, tuple[int, ...]] | None = None
        self._new_round()
        self._advance_until_decision()
        info = {
            "trace": trace.name, "window_start": window_start,
            "profile": episode.profile.name, "profile_hash": episode.profile.content_hash(),
            "episode_hash": episode.episode_hash(), "seed": episode_seed,
        }
        return self._observe(), info

    def step(
        self, action: int | np.integer[Any]
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply one decision; see the class docstring."""
        if self._finished or self._sim is None:
            raise PalgymError("the episode has ended: call reset() before step()")
        action = int(action)
        invalid = not (0 <= action < self.num_actions and self._valid_actions()[action])
        if invalid:
            if self.strict:
                raise InvalidActionError(f"action {action} is not valid now (see action_masks())")
            self._invalid += 1
            action = self.heuristic_action(self.fallback_policy, check=False)
        self._apply(action)
        self._advance_until_decision()
        terms, self._pending_reward = self._pending_reward, {}
        terminated = self._sim.done
        truncated = not terminated and self._sim.truncated
        self._finished = terminated or truncated
        info: dict[str, Any] = {"invalid_action": invalid, "reward_terms": terms,
                                "num_invalid_actions": self._invalid}
        if self._finished:
            info["episode_metrics"] = episode_metrics(self._sim, self._invalid)
        return self._observe(), float(sum(terms.values())), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """bool (K*M+1,): valid actions now (a fresh array); never all False."""
        return self._valid_actions().copy()

    def _valid_actions(self) -> np.ndarray:
        """The mask of the current decision, computed once per decision."""
        if self._finished:  # only "end round"
            return np.arange(self.num_actions) == self.end_round_action
        if self._mask is None:
            candidates = self._candidates()  # the compiled path fills the mask as well
            if self._mask is None:
                self._mask = self._round.action_mask(candidates.slot_feasible(), self.num_actions)
        return self._mask

    def heuristic_action(self, name: str, check: bool = True) -> int:
        """The action the named placement policy takes now.

        Always the first window slot (heuristics keep the queue's order) with the policy's own
        allocation rule; in the scheduling task, "end round" when that job does not fit.

        Raises:
            ConfigError: for an unknown name, or when the env's ``sticky`` / ``class_reorder``
                contradict the policy (e.g. ``pal`` in a sticky env).
        """
        if check:
            check_heuristic(name, self.sticky, self.class_reorder)
        decision = self._round
        if not decision.pending or not decision.fits(decision.pending[0]):
            return self.end_round_action
        job = decision.pending[0]
        perf_class = int(self.simulator.jobs.perf_class[job])
        candidates = self._candidates()
        choice = heuristic_candidate(
            name, candidates.feasible[candidates.shape_of_slot[0]],
            int(self.simulator.jobs.num_gpus[job]), self._factors.tiers[perf_class].size,
            self._pal_orders[perf_class], self.cluster.gpus_per_node, self.max_tiers,
        )
        return self.end_round_action if choice is None else choice  # slot 0: action = candidate

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text map of the cluster; ``"rgb_array"``: an image (H, W, 3) uint8."""
        from palgym.envs.render import render_ansi, render_rgb

        if self.render_mode == "ansi":
            return render_ansi(self.simulator, self._round.target)
        if self.render_mode == "rgb_array":
            return render_rgb(self.simulator, self._round.target, self._factors, self._history)
        return None

    # ------------------------------------------------------------------ internals
    def _new_round(self) -> None:
        """The next round; a static order and the round's start are reused until an event."""
        sim, memo = self.simulator, self._round_memo
        order = memo[0] if memo is not None else self.order.order(sim)
        self._round = DecisionRound(sim, order, self.task, self.sticky, self.class_reorder,
                                    start=memo[1] if memo is not None and memo[1] else None)
        if self.order.static:
            self._round_memo = (order, self._round.start)
        self._cached: WindowCandidates | None = None
        self._cached_obs: dict[str, np.ndarray] | None = None
        self._mask: np.ndarray | None = None

    def _advance_until_decision(self) -> None:
        """Commit and advance rounds until one has a decision (or the episode ends).

        A round that offered no decision (none placed, not deferred) and changed nothing is
        repeated while nothing happens (no arrival, completion or promotion) under a static
        queue order, in one call (:func:`palgym.sim.fast_forward.idle_rounds`).
        """
        sim = self.simulator
        while self._round.done and not sim.done and not sim.truncated:
            changed = sim.commit(self._round.target)
            if self.render_mode == "rgb_array":
                self._history.append(sim.job_of_gpu.copy())
            sim.advance()
            idle = not (changed or self._round.acted or sim.events_since_commit)
            if idle and self.order.static and self.render_mode != "rgb_array":
                idle_rounds(sim)  # the same round again up to the next event, in one call
                idle = False
            if sim.events_since_commit:  # an arrival, completion or promotion
                self._round_memo = None
            self._rewards.add_step(sim, self._pending_reward)
            if not sim.done and not sim.truncated and not (idle and self.order.static):
                self._new_round()

    def _candidates(self) -> WindowCandidates:
        """The current decision's candidates (with the compiled kernel, its observation too)."""
        if self._cached is None:
            window = self._round.window(self.num_slots)
            if self._compiled:
                self._cached, self._cached_obs, self._mask = self._observations.build_compiled(
                    self.simulator, self._round, window, self._tables
                )
            else:
                self._cached = window_candidates(
                    self.simulator, window, self._round.free, self._tables, self._factors,
                    compiled=False,
                )
        return self._cached

    def _apply(self, action: int) -> None:
        self._mask = None
        if action == self.end_round_action:
            self._round.end()
            return
        slot, candidate = divmod(action, self.num_candidates)
        cands = self._candidates()
        job = int(cands.jobs[slot])
        if candidate == random_index(self.max_tiers):
            gpus = random_allocation(
                self._round.free, int(self.simulator.jobs.num_gpus[job]), self._sampler
            )
            assert gpus is not None
        else:
            gpus = cands.gpus(slot, candidate)
        self._round.place(job, gpus)
        self._cached, self._cached_obs = None, None

    def _observe(self) -> dict[str, np.ndarray]:
        """The observation (fresh arrays on every call)."""
        if self._finished:
            return self._observations.empty()
        if self._compiled and self._cached_obs is None:
            self._cached = None  # the decision's observation was handed out already: rebuild
        candidates = self._candidates()
        if not self._compiled:
            return self._observations.build(self.simulator, self._round, candidates, self._tables)
        obs, self._cached_obs = self._cached_obs, None
        assert obs is not None
        return obs
