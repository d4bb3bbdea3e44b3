"""The palgym Gymnasium environment (one class, two registered tasks).

:class:`ClusterEnv` holds the env card, the construction from its arguments and the commands
(``reset``, ``step``) with the one decision cache; what it answers without changing the
episode (the mask, a heuristic's action, frames, shapes) is in :mod:`palgym.envs.queries`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from palgym.envs.actions import ActionCodec
from palgym.envs.arguments import (
    BeliefSpec,
    check_choice,
    check_positive,
    check_window,
    make_config,
    parse_belief,
)
from palgym.envs.conserving import check_work_conserving, conserving_decision, make_reservation
from palgym.envs.decide import Decision, choose_backend, final_decision
from palgym.envs.decisions import TASKS
from palgym.envs.episodes import (
    EpisodeMemo,
    TraceSpec,
    draw_episode,
    load_traces,
    refreshed,
    reset_info,
    reset_options,
    start_episode,
)
from palgym.envs.observations import ObservationBuilder
from palgym.envs.queries import EnvQueries
from palgym.envs.render import GanttRecorder
from palgym.envs.rewards import REWARD_NAMES, RewardTracker, episode_metrics, episode_note
from palgym.envs.rounds import RoundDriver
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.io.profile_file import read_profile
from palgym.policies import BACKFILL_PLACEMENT_NAMES, PLACEMENT_NAMES, make_queue_order
from palgym.policies.allocation import random_allocation
from palgym.policies.durations import DEFAULT_ESTIMATE_SIGMA, Durations, parse_knowledge
from palgym.sim.cluster import ClusterSpec
from palgym.sim.engine import Simulator
from palgym.sim.trace_fit import check_trace_fits
from palgym.sim.variability import VariabilityProfile


class ClusterEnv(EnvQueries, gym.Env[dict[str, np.ndarray], np.int64]):
    """## Description

    A GPU cluster whose GPUs run each class of ML job at their own speed (PAL, SC24). At every
    round boundary the simulator credits progress, completes jobs and admits arrivals; the agent
    then places the round's jobs one decision at a time: which job goes next and which GPU set
    (candidate) it gets. Heuristics (PAL, PM-First, Packed, Random) are agents of this env
    (:meth:`heuristic_action`) and reproduce :func:`palgym.simulate.run_episode` bit for bit.

    Tasks: ``"placement"`` (``palgym/PALPlacement-v0``): the queue order fixes the round's jobs
    (the longest prefix that fits); the agent orders them and picks GPUs. ``"scheduling"``
    (``palgym/PALScheduling-v0``): any waiting job that fits may be placed (backfilling) and
    the agent may end the round early (deferral). ``work_conserving=True`` (scheduling only)
    keeps the sensible moves: "end round" only when nothing fits, or after RESERVE, which
    makes EASY backfilling's reservation for a blocked head job (Lifka 1995; Mu'alem and
    Feitelson 2001), after which only placements that do not delay it are valid
    (:mod:`palgym.envs.conserving`; docs/ENV.md "Work-conserving scheduling").

    ## Observation Space

    ``Dict`` of flat float32 ``Box`` es in [0, 1] (entry names: ``env.unwrapped.feature_names``;
    reshape with ``env.unwrapped.observation_shapes``; every feature's meaning, unit,
    normalisation and horizon: ``docs/ENV.md``; the layouts: :mod:`palgym.envs.features`):

    - ``jobs`` (K, F_j): one row per window slot, the features of
      :class:`~palgym.envs.features.JobFeatures` (F_j = ``len(JOB_FEATURES)``), e.g. the
      job's GPU share, class and waiting time; its remaining time is what
      ``duration_knowledge`` lets the scheduler know (docs/ENV.md);
    - ``candidates`` (K, M, F_c), candidate (k, m) = action ``codec.encode(k, m)`` =
      k * M + m: the features of :class:`~palgym.envs.features.CandidateFeatures`
      (F_c = ``len(CANDIDATE_FEATURES)``), e.g. feasibility, slowdown, locality;
    - ``cluster`` (4T + H + 5,), H = ``max_gpus_per_node`` or G_n: free GPUs per (tier,
      class) / G, node free-count histogram (n = 0 .. H), free fraction, pending / K,
      queued / 4K, log time; with ``work_conserving=True`` (4T + H + 8,): then the round's
      reservation (reserved flag, log shadow time, extra GPUs / G; 0 without one);
    - ``gpus`` (G, 6), only with ``observed_rates=True``: the belief of each class and the last
      observed slowdown and its age (:mod:`palgym.envs.observed`); the one key sized by the
      cluster (G).

    With the ``-v1`` ids' defaults (``max_tiers`` = :data:`~palgym.envs.features.MAX_TIERS`,
    ``max_gpus_per_node`` = :data:`~palgym.envs.features.MAX_GPUS_PER_NODE`) no space depends
    on the cluster or the profile (without ``observed_rates``): tiers a profile lacks and node
    sizes the cluster lacks are zero entries and masked candidates (docs/ENV.md
    "Cluster-independent layout").

    ## Action Space

    ``Discrete(K * M + 1)`` (:class:`~palgym.envs.actions.ActionCodec`, ``env.unwrapped.codec``):
    action ``k * M + m`` gives the job in window slot k its candidate m (M = 2T + 2: T
    within-node tiers, T best-factor tiers, Packed, Random); ``K * M`` ends the round;
    ``work_conserving=True`` adds ``K * M + 1``, RESERVE (``Discrete(K * M + 2)``).
    ``action_masks()`` (bool (n,)) marks the valid ones and is never all False. An action
    outside the action space (e.g. ``n``, ``-1``, a float) raises
    :class:`~palgym.errors.InvalidActionError` (a ``ValueError``) naming it and the space. An
    in-space action the mask forbids is replaced by the ``fallback_policy`` heuristic's action,
    flagged in ``info["invalid_action"]`` and counted; with ``strict=True`` it raises.

    ## Rewards

    ``reward="jct"`` (default): -(time in system of measured jobs) / ``reward_scale`` at every
    step, so the return is -sum(JCT) / reward_scale exactly. Also ``slowdown``, ``makespan``,
    ``utilization`` and ``relative`` (vs ``baseline_policy`` run on the identical episode);
    ``info["reward_terms"]`` names the terms (:mod:`palgym.envs.rewards`).

    ## Episode End

    Terminated when every measured job has completed; truncated after ``max_rounds`` rounds.
    A trace whose times the round clock cannot resolve, or (as a whole-trace episode) whose
    first job arrives after ``max_rounds`` rounds, is refused with a
    :class:`~palgym.errors.TraceFormatError` (:mod:`palgym.sim.trace_fit`): at construction
    without ``window``, else at the ``reset`` that draws it.
    Stepping after the end without ``reset`` raises :class:`~palgym.errors.PalgymError`. The
    final step's ``info`` holds ``episode_metrics``: ``num_jobs``, ``num_completed``,
    ``num_unfinished``, avg/p50/p99 JCT (s) and ``makespan_s`` over the completed jobs (NaN
    when none completed), ``censored_avg_jct_s`` (every measured job, an unfinished one counted
    up to ``end_time_s``), ``truncated`` / ``truncation_reason``, utilizations, ``num_rounds``
    and ``num_invalid_actions``; and
    ``episode_note``, a sentence saying whether every job completed and, if not, what the
    metrics cover.

    ## Rendering

    ``"ansi"``: a text map of the cluster. ``"rgb_array"``: uint8 frames of one shape per env,
    ``env.unwrapped.frame_shape`` = (H, W, 3), fixed at construction from G and K
    (:class:`~palgym.envs.render.GanttRecorder`): 64 columns (the last 63 rounds' allocations
    and the current round's), G GPU rows, a blank row and ceil(K / 64) rows of the window's K
    slots; each cell ``max(1, 256 // max(G + 1 + ceil(K / 64), 64))`` pixels square, sides
    padded with white to multiples of 16 (16x4, K = 16: (208, 192, 3)).

    ## Arguments

    ``trace`` (path, bundled name, ``"bundled"``, a trace-set split ``"SET:SPLIT"`` such as
    ``"bundled:train"``, Trace, or list), ``window`` (jobs per episode, None = whole trace),
    ``variability_data`` (measurement folder) or ``profile`` (file or VariabilityProfile),
    ``preset`` (``"default"`` | ``"pal-artifact"`` | ``"dynamic"``), ``cluster`` (``"16x4"``),
    ``queue_order`` (``fifo`` | ``las`` | ``srtf`` | ``srsf`` | ``tiresias``),
    ``locality_penalty``, ``round_duration_s``, ``sticky``, ``class_reorder`` (window in PAL's
    class order), ``reward``, ``reward_scale`` (s, default 360000), ``baseline_policy``,
    ``max_rounds``, ``num_slots`` (K, default 16), ``max_tiers`` (T, default 4; a profile
    with more tiers in a class is refused at reset), ``max_gpus_per_node`` (H, the node
    histogram's room, >= G_n; default None: G_n), ``strict``,
    ``fallback_policy`` (default ``"pal"``), ``task``, ``duration_knowledge`` and
    ``estimate_sigma`` (what the scheduler knows of job durations:
    :mod:`palgym.policies.durations`), ``belief`` (``"oracle"``, ``"stale"``, ``"online"`` or
    :class:`~palgym.policies.belief.BeliefOptions` / a mapping of its fields: the candidates,
    observation and heuristics read its factors, the engine runs the truth, as
    ``run_episode(belief=)``; docs/ENV.md), ``observed_rates`` (the ``gpus`` key),
    ``backend`` (``"numba"``, the default, or ``"numpy"``, the reference; equal results),
    ``work_conserving`` (scheduling task: the work-conserving action set above),
    ``render_mode`` (``"ansi"`` | ``"rgb_array"``).

    ## Registered Configurations

    ``palgym/PALPlacement-v0`` (task placement), ``palgym/PALScheduling-v0`` (task scheduling);
    ``palgym/PALPlacement-v1``, ``palgym/PALScheduling-v1``: the same tasks with
    ``max_tiers=8`` and ``max_gpus_per_node=16`` by default (the cluster-independent layout).

    ## Version History

    v0: initial release. v1: the cluster-independent layout by default (docs/ENV.md).
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
        max_gpus_per_node: int | None = None,
        strict: bool = False,
        fallback_policy: str = "pal",
        duration_knowledge: str = "clairvoyant",
        estimate_sigma: float = DEFAULT_ESTIMATE_SIGMA,
        belief: BeliefSpec = "oracle",
        observed_rates: bool = False,
        backend: str = "numba",
        work_conserving: bool = False,
        render_mode: str | None = None,
    ) -> None:
        check_choice("task", task, TASKS)
        check_choice("reward", reward, REWARD_NAMES)
        check_choice("baseline_policy", baseline_policy, PLACEMENT_NAMES + BACKFILL_PLACEMENT_NAMES)
        check_choice("fallback_policy", fallback_policy, PLACEMENT_NAMES)
        check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        base_codec = ActionCodec(num_slots, max_tiers)  # the decision backends' (K*M+1)
        check_positive("reward_scale", reward_scale)
        self.task = task
        self.traces = load_traces(trace)
        self.window = check_window(window)
        self.cluster = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
        self.config = make_config(preset, locality_penalty, round_duration_s, max_rounds)
        if window is None:  # each episode is a whole trace: refuse one that cannot run now
            for whole in self.traces:
                check_trace_fits(whole, self.cluster, self.config)
        if sticky and self.config.packed_sticky_strict_total:
            raise ConfigError("sticky envs need packed_sticky_strict_total=False")
        self.variability_data = variability_data
        self.profile = read_profile(profile) if isinstance(profile, (str, Path)) else profile
        self.durations = Durations(parse_knowledge(duration_knowledge), estimate_sigma)
        self.work_conserving = check_work_conserving(work_conserving, task, self.durations)
        self.codec = replace(base_codec, reserve=self.work_conserving)
        self.belief = parse_belief(belief)
        if self.belief.straggler_ratio is not None:
            raise ConfigError("belief straggler_ratio: straggler migration is a heuristic "
                              "placement's (run_episode, rule selection); in the env the agent "
                              "places every job itself")
        self.observed_rates = observed_rates
        self.order = make_queue_order(queue_order, self.durations, self.config)
        self.sticky = sticky
        self.class_reorder = class_reorder
        self.reward_name = reward
        self.reward_scale = reward_scale
        self.baseline_policy = baseline_policy
        self.num_slots, self.max_tiers = num_slots, max_tiers
        self.num_candidates, self.num_actions = self.codec.num_candidates, self.codec.n
        self.end_round_action = self.codec.END_ROUND
        self.strict = strict
        self.fallback_policy = fallback_policy
        self.backend = backend
        self._decide = choose_backend(backend, self.config.pal_node_order)
        self.render_mode = render_mode
        self._observations = ObservationBuilder(
            base_codec, self.cluster.gpus_per_node,
            self.cluster.num_gpus if observed_rates else None, max_gpus_per_node,
            reservation=self.work_conserving)
        self.max_gpus_per_node = max_gpus_per_node
        self.observation_space = self._observations.space  # type: ignore[assignment]
        self.action_space = spaces.Discrete(self.codec.n)
        self._final = final_decision(self._observations)
        if self.work_conserving:
            self._final = conserving_decision(self._final, None, self.codec)
        self._recorder = (GanttRecorder(self.cluster.num_gpus, num_slots)
                          if render_mode == "rgb_array" else None)
        self.memo = EpisodeMemo()
        """What episodes share (profile fits, reference episodes): the rows of a
        :class:`~palgym.envs.vector.ClusterVectorEnv` share one."""
        self._sim: Simulator | None = None
        self._decision: Decision | None = self._final  # no episode runs before reset
        self._pending: dict[str, float] = {}  # reward terms owed to the next step

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode; ``options`` may set ``trace`` (index, name or Trace),
        ``window_start`` and ``profile``. Otherwise both are drawn from the seeded RNG.

        Raises:
            TypeError: if ``options`` is not a dict (or None).
            ConfigError: for an unknown option key, a ``trace`` index or ``window_start``
                out of range (naming the option and the valid range).
            TraceFormatError: for a trace (window) the episode cannot simulate
                (:func:`palgym.sim.trace_fit.check_trace_fits`).
        """
        super().reset(seed=seed)
        episode, window_start = draw_episode(self, self.memo, self.np_random,
                                             reset_options(options))
        self._ctx, self._sim = start_episode(
            episode, self.memo, self.codec,
            self.sticky and self.config.packed_sticky_strict_total, self.observed_rates,
        )
        builder = self._observations
        builder.rates, builder.believed = self._ctx.rates, self._ctx.fit.belief.values
        durations = builder.durations = self.durations.for_seed(episode.seed)
        order = make_queue_order(self.order.name, durations, self.config)
        rewards = RewardTracker(
            self.reward_name, self.reward_scale,
            self.memo.baseline(episode, self.baseline_policy, order.name, durations)
            if self.reward_name == "relative" else None,
        )
        rewards.reset(self._sim)
        if self._recorder is not None:
            self._recorder.reset()
        self._rounds = RoundDriver(self._sim, order, self.task, self.sticky,
                                   self.class_reorder, rewards, self._recorder,
                                   self._ctx.watcher())
        self._invalid = 0
        # rounds before the first decision are credited to the first step's reward
        self._pending = self._advance({})
        self._decision = None
        return self._current().observation, reset_info(episode, window_start)

    def step(
        self, action: int | np.integer[Any]
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply one decision; see the class docstring.

        Raises:
            InvalidActionError: ``action`` is outside the action space (always), or the mask
                forbids it and the env is ``strict``.
            PalgymError: the episode has ended (call ``reset``).
        """
        current = self._decision
        if current is None:
            current = self._current()
        if current is self._final:
            raise PalgymError("the episode has ended: call reset() before step()")
        action = self.codec.check(action)
        invalid = not current.mask.item(action)
        if invalid:
            if self.strict:
                raise InvalidActionError(f"action {action} is not valid now (see action_masks())")
            self._invalid += 1
            action = self.heuristic_action(self.fallback_policy, check=False)
        terms = self._apply(action, current)
        info: dict[str, Any] = {"invalid_action": invalid, "reward_terms": terms,
                                "num_invalid_actions": self._invalid}
        terminated = truncated = False
        if self._rounds.over:  # as of the last advance (none when the round is still open)
            sim = self._rounds.sim
            terminated = sim.done
            truncated = not terminated and sim.truncated
            info["episode_metrics"] = metrics = episode_metrics(sim, self._invalid)
            info["episode_note"] = episode_note(metrics)
        return (self._current().observation, float(sum(terms.values())), terminated, truncated,
                info)

    # ------------------------------------------------------------------ internals
    def _current(self) -> Decision:
        """The current decision, computed at most once (the one cache slot)."""
        decision = self._decision
        if decision is None:
            rounds, ctx = self._rounds, self._ctx
            decision = self._decision = self._final if rounds.over else self._decide(
                rounds.sim, rounds.round, ctx.tables, ctx.factors, self._observations
            )
            if self.work_conserving and decision is not self._final:
                decision = self._decision = conserving_decision(decision, rounds.round,
                                                                self.codec)
        return decision

    def _apply(self, action: int, current: Decision) -> dict[str, float]:
        """Apply a valid action of the ``current`` decision and advance to the next decision
        (the engine moves only once the round has nothing left to decide); returns the
        reward terms."""
        decision = self._rounds.round
        codec = self.codec
        if action == codec.END_ROUND:
            decision.end()
        elif action == codec.RESERVE:
            make_reservation(decision, self._observations.durations)
        else:
            slot, candidate = codec.decode(action)
            candidates = current.candidates
            assert candidates is not None
            job = candidates.jobs.item(slot)
            if candidate == codec.RANDOM:
                gpus = random_allocation(
                    decision.free, int(self._rounds.sim.jobs.num_gpus[job]), self._ctx.sampler
                )
                assert gpus is not None
            else:
                gpus = candidates.gpus(slot, candidate)
            decision.place(job, gpus)
        self._decision = None  # the round changed: the decision is stale
        terms, self._pending = self._pending, {}
        return self._advance(terms) if decision.done else terms

    def _advance(self, terms: dict[str, float]) -> dict[str, float]:
        """Advance to the next decision (the context on the belief's factors then)."""
        terms = self._rounds.advance_until_decision(terms)
        self._ctx = refreshed(self._ctx, self._rounds.sim)
        return terms
