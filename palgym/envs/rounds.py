"""The env's dynamics between decisions: open a round, and when it is decided commit it and
advance the engine until the next round offers a decision (or the episode ends).

A round that offered no decision (none placed, not deferred) and changed nothing is repeated
while nothing happens (no arrival, completion or promotion) under a static queue order, in one
call (:meth:`palgym.sim.engine.Simulator.idle_rounds`); a static order and the round's start are
reused until an event. A belief that changes during the episode (``on_event``,
:meth:`palgym.policies.belief.BeliefFit.update`) watches every commit and every advance, as in
:func:`palgym.simulate.drive`: idle rounds then run one by one.
"""

from __future__ import annotations

from collections.abc import Callable

from palgym.envs.decisions import DecisionRound
from palgym.envs.render import GanttRecorder
from palgym.envs.rewards import RewardTracker
from palgym.policies.base import QueueOrder
from palgym.sim.engine import Simulator
from palgym.sim.types import IntArray


class RoundDriver:
    """Drives one episode's rounds.

    Args:
        sim: the engine, at the episode's start.
        order: the queue order.
        task: ``"placement"`` or ``"scheduling"``.
        sticky: running jobs keep their GPUs.
        class_reorder: rounds are class-reordered (PAL / PM-First).
        rewards: the episode's reward tracker (reset on ``sim``).
        recorder: the Gantt recorder of ``render_mode="rgb_array"`` (every round is then
            recorded, without fast-forwarding idle rounds), else None.
        on_event: called with ``sim`` after every commit and every advance (a changing
            belief; idle rounds are then not fast-forwarded), or None.

    Attributes:
        round: the open round.
        over: the episode has ended (terminated or truncated), as of the last advance.
    """

    def __init__(  # noqa: PLR0913
        self,
        sim: Simulator,
        order: QueueOrder,
        task: str,
        sticky: bool,
        class_reorder: bool,
        rewards: RewardTracker,
        recorder: GanttRecorder | None,
        on_event: Callable[[Simulator], object] | None = None,
    ) -> None:
        self.sim = sim
        self.order = order
        self.task = task
        self.sticky = sticky
        self.class_reorder = class_reorder
        self.rewards = rewards
        self.recorder = recorder
        self.on_event = on_event
        self._fast_idle = recorder is None and on_event is None
        self._memo: tuple[IntArray, tuple[int, ...]] | None = None
        self.round = self._new_round()
        self.over = sim.ended

    def _new_round(self) -> DecisionRound:
        sim, memo = self.sim, self._memo
        order = memo[0] if memo is not None else self.order.order(sim.view())
        decision = DecisionRound(sim, order, self.task, self.sticky, self.class_reorder,
                                 start=memo[1] if memo is not None and memo[1] else None)
        if self.order.static:
            self._memo = (order, decision.start)
        return decision

    def advance_until_decision(self, terms: dict[str, float] | None = None) -> dict[str, float]:
        """Commit and advance rounds until one has a decision (or the episode ends).

        Args:
            terms: reward terms accrued before (added to in place, in round order, so the
                sums keep their bits); a new dict if None.

        Returns:
            The reward terms accrued (by name), summed over the rounds advanced.
        """
        sim = self.sim
        terms = {} if terms is None else terms
        static, on_event = self.order.static, self.on_event
        while self.round.done and not sim.ended:
            changed = sim.commit(self.round.target)
            if on_event is not None:
                on_event(sim)
            if self.recorder is not None:
                self.recorder.record(sim.job_of_gpu)
            sim.advance()
            if on_event is not None:
                on_event(sim)
            idle = not (changed or self.round.acted or sim.events_since_commit)
            if idle and static and self._fast_idle:
                sim.idle_rounds()  # the same round again up to the next event, in one call
                idle = False
            if sim.events_since_commit:  # an arrival, completion or promotion
                self._memo = None
            self.rewards.add_step(sim, terms)
            if not (idle and static or sim.ended):
                self.round = self._new_round()
        self.over = sim.ended
        return terms
