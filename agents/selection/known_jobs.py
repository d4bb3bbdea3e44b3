"""What a rollout of the rollout search may admit (:class:`agents.selection.search.RolloutSearch`'s
``arrivals``), and where a search on the known jobs only is an online scheduler.

``known``: each rollout's engine copy admits nothing more
(:meth:`palgym.sim.engine.Simulator.close_arrivals`) and is priced on the jobs submitted by
the ask (:func:`agents.planning.search.state_cost` with ``jobs``); the search module's
docstring, "Known jobs only", says what that search reads.
"""

from __future__ import annotations

from palgym.errors import ConfigError
from palgym.policies.durations import DurationKnowledge
from palgym.rule_selection import SelectorContext

KNOWN_DONE = "known jobs done"
"""The reason a rollout on the known jobs (``arrivals="known"``) stopped: every job known at
the ask has completed (its cost is then exact)."""
ARRIVALS = ("all", "known")
"""What a rollout admits: ``all`` (the episode's future arrivals) or ``known`` (none: the
jobs submitted by the ask only)."""


def check_known(context: SelectorContext) -> None:
    """Refuse a search on the known jobs (``arrivals="known"``) where its rollouts would read
    what a scheduler does not know: durations not clairvoyant (a rollout runs the true
    iterations), a belief that changes (an ``online`` belief: the rollout runs the truth's
    speeds), a dynamic truth (its future draws). Background copies (the preset's unmeasured
    stream after the trace's last submission) are arrivals like any other: a rollout admits
    none, and plays those already admitted.

    Raises:
        ConfigError: naming what the episode has.
    """
    sim = context.sim
    if context.durations.knowledge is not DurationKnowledge.CLAIRVOYANT:
        raise ConfigError(f"arrivals='known' plans on the true durations of the known jobs: "
                          f"it needs duration_knowledge clairvoyant, got "
                          f"{context.durations.knowledge.value}")
    if context.belief is not None or sim.truth is not None:
        raise ConfigError("arrivals='known' plans on the engine's speeds: it needs a static "
                          "truth and the oracle belief (this episode's belief changes)")


__all__ = ["ARRIVALS", "KNOWN_DONE", "check_known"]
