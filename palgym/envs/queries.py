"""What a running env answers without changing it: the mask, a heuristic's action, frames.

:class:`EnvQueries` is a base of :class:`palgym.envs.cluster_env.ClusterEnv`, which keeps the
commands (``reset``, ``step``) and the decision cache; the queries here read the open decision
(``_current()``, computed at most once) and the episode's context, and change nothing: asking
for the mask, a heuristic's action or a frame leaves the episode as it was.
"""

from __future__ import annotations

import numpy as np

from palgym.envs.access import EnvAccess
from palgym.envs.actions import ActionCodec
from palgym.envs.conserving import conserving_action, conserving_generic
from palgym.envs.decide import Decision
from palgym.envs.episodes import EpisodeContext
from palgym.envs.heuristics import check_heuristic, window_action
from palgym.envs.observations import ObservationBuilder
from palgym.envs.policy_agent import PolicyAgent, check_generic
from palgym.envs.render import GanttRecorder, render_ansi
from palgym.errors import ConfigError, PalgymError
from palgym.policies import placement_name
from palgym.policies.backfill import split_name
from palgym.policies.contender_spec import check_placement_spec
from palgym.policies.registry import CandidateKind, placement_entry
from palgym.sim.engine import Simulator
from palgym.simulate import Episode


class EnvQueries(EnvAccess):
    """The env's read-only side: shapes and names, the engine and episode, the action mask,
    a heuristic's action and the rendered frame.

    Raises:
        PalgymError: from the episode's queries before the first ``reset()``.
    """

    codec: ActionCodec
    task: str
    sticky: bool
    class_reorder: bool
    num_slots: int
    render_mode: str | None
    work_conserving: bool
    _observations: ObservationBuilder
    _recorder: GanttRecorder | None
    _sim: Simulator | None
    _final: Decision
    _decision: Decision | None
    _checked: str | None = None  # the last heuristic name checked against the env's settings
    _forms: dict[str, CandidateKind | PolicyAgent] | None = None  # each name's env form

    @property
    def feature_names(self) -> dict[str, tuple[str, ...]]:
        """Names of the last axis of every observation key."""
        return self._observations.feature_names()

    @property
    def observation_shapes(self) -> dict[str, tuple[int, ...]]:
        """Logical shape of every observation key (the keys themselves are flat)."""
        return dict(self._observations.logical_shapes)

    @property
    def frame_shape(self) -> tuple[int, int, int] | None:
        """(H, W, 3) of every ``rgb_array`` frame (None in the other render modes)."""
        return None if self._recorder is None else self._recorder.frame_shape

    @property
    def simulator(self) -> Simulator:
        """The running engine (read only; raises before the first reset)."""
        if self._sim is None:
            raise PalgymError("call reset() first")
        return self._sim

    @property
    def episode(self) -> Episode:
        """The current episode (e.g. to run :func:`palgym.simulate.run_episode` on it)."""
        return self._context().episode

    def action_masks(self) -> np.ndarray:
        """bool (n,) (K*M+1; K*M+2 when work-conserving): valid actions now (a fresh array);
        never all False."""
        return (self._decision or self._current()).mask.copy()

    def heuristic_action(self, name: str, check: bool = True) -> int:
        """The action the named placement policy takes now.

        Always the first window slot (heuristics keep the queue's order) with the policy's own
        allocation rule (its candidate kind, or, for a placement registered without one, the
        candidate equal to its own choice: :mod:`palgym.envs.policy_agent`); in the scheduling
        task, "end round" when that job does not fit (backfilling names: a later window job;
        a work-conserving env: RESERVE first, :func:`palgym.envs.conserving.conserving_action`).

        Raises:
            ConfigError: for an unknown name, when the env's ``sticky`` / ``class_reorder``
                contradict the policy (e.g. ``pal`` in a sticky env), or when the env cannot
                express the placement's choice (naming it); for a contender spec that is no
                placement (``ORDER/PLACEMENT``, a guard, a model, ``selector:``, ``planner:``,
                ``best``), naming where it runs
                (:func:`palgym.policies.contender_spec.check_placement_spec`).
        """
        form = self._forms.get(name) if self._forms is not None else None
        if form is None or (check and name != self._checked):
            form = self._form(name, check)
        candidates = (self._decision or self._current()).candidates  # None outside an episode
        if candidates is None:
            self._context()  # raises before the first reset
            return self.codec.END_ROUND
        ctx, decision, durations = self._ctx, self._rounds.round, self._observations.durations
        if isinstance(form, PolicyAgent):
            action = form.action(decision, candidates, ctx.factors, durations, self.codec)
            if self.work_conserving:
                return conserving_generic(action, decision, self.codec, form.entry.name)
            return action
        act = conserving_action if self.work_conserving else window_action
        return act(name, form, decision, candidates, ctx.factors, ctx.pal_orders, self.codec,
                   durations)

    def _form(self, name: str, check: bool) -> CandidateKind | PolicyAgent:
        """How the env acts as placement ``name`` (looked up in the registry once per name
        and env: never per decision); checked against the env's settings if ``check``."""
        try:
            if check:  # the env's settings never change: once a name
                entry = check_heuristic(name, self.sticky, self.class_reorder, self.task,
                                        self.num_slots)
                self._checked = name
            else:
                try:
                    base, mode = split_name(placement_name(name))
                except ConfigError as exc:
                    raise ConfigError(f"heuristic: {exc}") from None
                entry = placement_entry(base)
                if entry.candidate is None:
                    check_generic(entry, mode)
        except ConfigError:  # a contender spec of another kind: say where it runs
            check_placement_spec(name, "heuristic_action")
            raise
        if self._forms is None:
            self._forms = {}
        form = self._forms[name] = entry.candidate or PolicyAgent(entry)
        return form

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: a text map of the cluster; ``"rgb_array"``: uint8 :attr:`frame_shape`."""
        ctx = self._context()
        target = self._rounds.round.target
        if self.render_mode == "ansi":
            return render_ansi(self.simulator, target)
        if self._recorder is not None:
            window = [] if self._finished else self._rounds.round.window(self.num_slots)
            return self._recorder.frame(self.simulator, target, window, ctx.factors)
        return None

    # ------------------------------------------------------------------ internals
    @property
    def _finished(self) -> bool:
        """No episode is running: before the first reset, or after its end."""
        return self._current() is self._final

    def _context(self) -> EpisodeContext:
        if self._sim is None:
            raise PalgymError("call reset() first")
        return self._ctx
