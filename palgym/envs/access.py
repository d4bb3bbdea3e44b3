"""Read-only access to a running env's episode state, for planners and inspection tools.

:class:`EnvAccess` is a base of :class:`palgym.envs.cluster_env.ClusterEnv`: a planner that
copies the env (``copy.deepcopy``) and looks ahead reads the open decision, the round driver
and the episode's tables through these properties instead of the env's private fields. Every
value is live state: read it, never write to it.
"""

from __future__ import annotations

from palgym.envs.decide import Decision
from palgym.envs.episodes import EpisodeContext
from palgym.envs.rounds import RoundDriver
from palgym.errors import PalgymError


class EnvAccess:
    """The env's open decision, round driver and episode context (read only).

    Raises:
        PalgymError: from each property before the first ``reset()``.
    """

    _ctx: EpisodeContext
    _rounds: RoundDriver

    def _current(self) -> Decision:
        raise NotImplementedError

    def _require_episode(self) -> None:
        if getattr(self, "_sim", None) is None:
            raise PalgymError("call reset() first")

    @property
    def decision(self) -> Decision:
        """The open decision: candidates, observation and mask (computed at most once)."""
        self._require_episode()
        return self._current()

    @property
    def rounds(self) -> RoundDriver:
        """The round driver: the open round (``rounds.round``), its engine (``rounds.sim``)
        and whether the episode is over (``rounds.over``)."""
        self._require_episode()
        return self._rounds

    @property
    def episode_context(self) -> EpisodeContext:
        """The episode's tables, slowdown factors, PAL cost orders and placement sampler."""
        self._require_episode()
        return self._ctx
