"""A learned selector over heuristic rules (a hyper-heuristic env) on the scheduling task.

:class:`SelectorEnv` (``palgym/PALSelector-v0``) runs a ``PALScheduling-v0``
:class:`~palgym.envs.cluster_env.ClusterEnv` (its *base*) and lets the agent pick, state by
state, which rule of a declared field makes the scheduling decisions: action ``h`` of
``Discrete(H)`` plays ``base.heuristic_action(rules[h])``, the exact action of heuristic agent
``rules[h]`` (docs/ENV.md "Heuristic agents"). Every action is a heuristic's, so every action
is valid and the mask is all True; an invalid base action cannot happen (the base env is
strict: it would raise).

Granularity (``granularity``):

- ``"round"`` (default): the chosen rule makes every decision of the rest of the current
  round (until the engine advances); the next choice is at a later round. A rule then acts
  as it does in :func:`palgym.run_episode` for whole rounds, and the agent makes one choice per
  round instead of one per job (up to K per round): fewer, more meaningful decisions.
- ``"decision"``: the chosen rule makes the current decision only.

In both, a decision at which every rule's action has the same effect (the same job on the
same GPU set, or "end round": no choice to make; :meth:`SelectorEnv.rule_groups`) is played
without asking the agent (unless a held rule decides it anyway); the first decision of an
episode is always asked (a reset cannot end an episode). So a selector that always picks rule
h plays exactly rule h's actions and reproduces rule h's episode bit for bit, with the
metrics of ``run_episode(episode, h, queue_order)``.

Queue order: the window is ordered by the base env's ``queue_order`` (class-reordered for PAL
and PM-First) and every backfilling rule scans it, so a rule of another queue order (e.g.
``srsf/pal`` in an SRTF env) is not expressible exactly: its head may lie beyond the K
window slots, and its round's start differs. The order is therefore fixed per env (make one
env per order); rules are placement names with their backfill suffix.

Rewards: the base env's (``reward``: ``jct``, ``relative`` to ``baseline_policy`` on the
identical episode, ...), summed over the base decisions one selector step plays, so the return
is the base env's return (e.g. -sum(JCT) / reward_scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from palgym.envs.arguments import check_choice
from palgym.envs.cluster_env import ClusterEnv
from palgym.envs.heuristics import check_heuristic
from palgym.envs.selector_obs import SelectorObservation
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.rule_sets import PLACEMENT_RULES, expand_rule_set
from palgym.sim.engine import Simulator
from palgym.simulate import Episode

DEFAULT_RULES: tuple[str, ...] = PLACEMENT_RULES
"""The default field: the rule set :data:`palgym.rule_sets.PLACEMENT_RULE_SET` (PAL and
PM-First, each without backfilling, with first-fit and with EASY backfilling)."""
GRANULARITIES: tuple[str, ...] = ("round", "decision")
"""How long a chosen rule decides: the rest of the round, or the current decision."""
NOT_SELECTOR_ARGUMENTS: tuple[str, ...] = ("task", "strict", "fallback_policy")
"""Base env arguments the selector sets itself: the scheduling task, and a strict base (a
heuristic's action is always valid, so no fallback is ever taken)."""


def parse_rules(rules: Sequence[str] | str) -> tuple[str, ...]:
    """The field as a tuple of names (a string is split at commas; a rule set's name,
    :data:`palgym.rule_sets.RULE_SETS`, stands for its rules).

    Raises:
        ConfigError: for no rule, a name given twice, a non-string, an ``ORDER/NAME``
            (the queue order is the env's ``queue_order``), or a set of ORDER/PLACEMENT rules.
    """
    if isinstance(rules, str):
        names = expand_rule_set(rules, "placement").split(",")
    else:
        names = list(rules)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ConfigError(f"rules must be a non-empty list of placement names, got {rules!r}")
    names = [n.strip() for n in names]
    if len(set(names)) != len(names):
        raise ConfigError(f"rules: a name is given twice in {names}")
    for name in names:
        if "/" in name:
            raise ConfigError(f"rules: {name!r}: give placement names only; the queue order is "
                              "the env's queue_order (one per env)")
    return tuple(names)


class SelectorEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """Pick which heuristic rule schedules next (see the module docstring).

    ## Observation Space

    ``Dict`` of flat float32 ``Box`` es in [0, 1] (:mod:`palgym.envs.selector_obs`): ``state``
    (F_s = 20,), a summary of the cluster, window and head job; ``rules`` (H x F_r,) = (H, 12),
    what each rule would do now (its job's GPU share, remaining and waiting time, slot, the
    candidate's slowdown and speed, whether it ends the round, how many rules agree).

    ## Action Space

    ``Discrete(H)``: rule ``rules[h]``; ``action_masks()`` is all True.

    ## Arguments

    ``trace`` and every :class:`~palgym.envs.cluster_env.ClusterEnv` keyword but ``task``,
    ``strict`` and ``fallback_policy`` (:data:`NOT_SELECTOR_ARGUMENTS`) and with
    ``work_conserving=False`` only, plus ``rules`` (the
    field, default :data:`DEFAULT_RULES`; names as ``heuristic_action`` takes them, each
    checked against the env's ``sticky``, ``class_reorder`` and ``num_slots``) and
    ``granularity`` (:data:`GRANULARITIES`, default ``"round"``).

    Raises:
        ConfigError: for a bad field (:func:`parse_rules`, a rule the env cannot act as), a
            bad granularity, a base argument the selector sets itself or
            ``work_conserving=True``.
    """

    metadata = ClusterEnv.metadata

    def __init__(self, trace: Any = "bundled", *, rules: Sequence[str] | str = DEFAULT_RULES,
                 granularity: str = "round", **kwargs: Any) -> None:
        given = [key for key in NOT_SELECTOR_ARGUMENTS if key in kwargs]
        if given:
            raise ConfigError(f"the selector env sets {', '.join(given)} itself (the "
                              "scheduling task; rule actions are always valid)")
        if kwargs.get("work_conserving", False) is not False:
            raise ConfigError("the selector env plays whole heuristic rules on the scheduling "
                              "task: work_conserving=True (RESERVE) is not one of its base "
                              "envs' settings (give work_conserving=False or leave it out)")
        check_choice("granularity", granularity, GRANULARITIES)
        self.rules = parse_rules(rules)
        self.granularity = granularity
        self.base = ClusterEnv(trace, task="scheduling", strict=True, **kwargs)
        for name in self.rules:
            check_heuristic(name, self.base.sticky, self.base.class_reorder, "scheduling",
                            self.base.num_slots)
        self.render_mode = self.base.render_mode
        self._observations = SelectorObservation(
            self.base.codec, self.base.feature_names["cluster"], self.rules)
        self.observation_space = self._observations.space  # type: ignore[assignment]
        self._space = spaces.Discrete(len(self.rules))
        self.action_space = self._space
        self._actions = np.zeros(len(self.rules), np.int64)
        self._groups = np.zeros(len(self.rules), np.int64)
        self._held: tuple[int, int] | None = None  # (rule, round index) in "round" mode
        self._over = True

    # ------------------------------------------------------------------ the base's facts
    @property
    def simulator(self) -> Simulator:
        """The running engine (read only; raises before the first reset)."""
        return self.base.simulator

    @property
    def episode(self) -> Episode:
        """The current episode (rebuild it for :func:`palgym.run_episode`)."""
        return self.base.episode

    def __getattr__(self, name: str) -> Any:
        """The base env's public configuration (``window``, ``cluster``, ``config``,
        ``profile``, ``variability_data``, ``belief``, ``durations``, ``order``,
        ``reward_scale``, ``sticky``, ``class_reorder``, ``num_slots``, ...), read only."""
        if name.startswith("_") or name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def feature_names(self) -> dict[str, tuple[str, ...]]:
        """Names of the entries of every (flat) observation key."""
        return self._observations.feature_names()

    @property
    def observation_shapes(self) -> dict[str, tuple[int, ...]]:
        """Logical shape of every observation key."""
        return dict(self._observations.logical_shapes)

    def layout_header(self) -> list[str]:
        """The task, action and rule lines of the env's layout
        (:func:`palgym.envs.layouts.layout_text`)."""
        space = self._space
        return ["task selector", f"action Discrete n={int(space.n)} start={int(space.start)}",
                "rules " + " ".join(self.rules), f"base_slots {self.base.num_slots}"]

    # ------------------------------------------------------------------ API
    def action_masks(self) -> np.ndarray:
        """bool (H,): every rule is valid at every decision (a fresh array)."""
        return np.ones(len(self.rules), np.bool_)

    def heuristic_action(self, name: str, check: bool = True) -> int:
        """The action that lets rule ``name`` decide: its index in the field (so the
        heuristic agent ``name`` is the constant selector, which reproduces it).

        Raises:
            ConfigError: ``name`` is not a rule of the field.
        """
        if name not in self.rules:
            raise ConfigError(f"{name!r} is not a rule of the selector's field "
                              f"{list(self.rules)} (env argument rules)")
        return self.rules.index(name)

    def rule_actions(self) -> np.ndarray:
        """int64 (H,): each rule's base-env action at the open decision (a copy)."""
        return self._actions.copy()

    def rule_groups(self) -> np.ndarray:
        """int64 (H,): rules whose actions have the same effect at the open decision (the same
        job on the same GPU set, or "end round") share a group, numbered by its first rule
        (a copy). A Random candidate's set is drawn when taken: it equals only itself."""
        return self._groups.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start the base env's episode (same ``seed`` and ``options``: the same episode);
        ``info`` is the base env's plus ``rules``."""
        super().reset(seed=seed)
        observation, info = self.base.reset(seed=seed, options=options)
        self._held, self._over = None, False
        self._update()
        return self._observe(observation), {**info, "rules": self.rules}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                         dict[str, Any]]:
        """Let rule ``action`` decide, then play on up to the next choice (see the module
        docstring); the reward is the sum of the base rewards of the decisions played.

        ``info``: the last base step's, plus ``rule`` (the chosen name) and
        ``base_decisions`` (how many base decisions this step played).

        Raises:
            InvalidActionError: ``action`` is not in ``Discrete(H)``.
            PalgymError: the episode has ended (call ``reset``).
        """
        if self._over:
            raise PalgymError("the episode has ended: call reset() before step()")
        rule = self._check(action)
        self._held = (rule, self.simulator.round_index) if self.granularity == "round" else None
        base_action = int(self._actions[rule])
        total, played = 0.0, 0
        while True:
            observation, reward, terminated, truncated, info = self.base.step(base_action)
            total += reward
            played += 1
            if terminated or truncated:
                self._over = True
                break
            held = self._held_action()
            if held is not None:
                base_action = held
                continue
            self._update()
            if not self._groups.any():  # every rule has the same effect: nothing to choose
                base_action = int(self._actions[0])
                continue
            break
        info = {**info, "rule": self.rules[rule], "base_decisions": played}
        return self._observe(observation), total, terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        """The base env's frame (``render_mode`` ``"ansi"`` or ``"rgb_array"``)."""
        return self.base.render()

    def close(self) -> None:
        """Close the base env."""
        self.base.close()

    # ------------------------------------------------------------------ internals
    def _check(self, action: Any) -> int:
        space = self._space
        if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            action = int(action)
        if isinstance(action, bool) or not isinstance(action, int | np.integer):
            raise InvalidActionError(f"action {action!r} (type {type(action).__name__}) is not "
                                     f"in the action space Discrete({space.n})")
        if not 0 <= int(action) < int(space.n):
            raise InvalidActionError(f"action {int(action)} is outside the action space "
                                     f"Discrete({space.n}) (one per rule: {list(self.rules)})")
        return int(action)

    def _held_action(self) -> int | None:
        """The held rule's action while its round is open ("round" mode), else None."""
        if self._held is None:
            return None
        rule, round_index = self._held
        if self.simulator.round_index != round_index:
            self._held = None
            return None
        return self.base.heuristic_action(self.rules[rule], check=False)

    def _update(self) -> None:
        """Each rule's action at the open decision, and the rules' groups of equal effect."""
        base, codec = self.base, self.base.codec
        self._actions = actions = np.array(
            [base.heuristic_action(name, check=False) for name in self.rules], np.int64)
        candidates = base.decision.candidates
        first: dict[tuple[int, bytes], int] = {}
        for rule, action in enumerate(actions.tolist()):
            if action == codec.END_ROUND:
                key = (-1, b"")
            else:
                slot, candidate = codec.decode(action)
                gpus = (str(action).encode() if candidate == codec.RANDOM or candidates is None
                        else np.sort(candidates.gpus(slot, candidate)).tobytes())
                key = (slot, gpus)
            self._groups[rule] = first.setdefault(key, rule)

    def _observe(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._over:
            return {key: np.zeros(int(np.prod(shape)), np.float32)
                    for key, shape in self._observations.logical_shapes.items()}
        return self._observations.build(observation, self._actions, self._groups)
