"""The env's heuristic agent for a placement without a candidate kind (e.g. a user's
Python-only class, :mod:`palgym.policies.loader`): the placement itself chooses.

At a round's first decision the agent asks the placement for the round's target, once:
``place(view, order, sampler)`` on the engine's view at the round's start and the env's queue
order, as :func:`palgym.simulate.run_episode`'s loop asks it. At every decision of the round it
then takes, for the job in the window's first slot, the candidate whose GPU set equals the
job's GPUs in that target (the env's rounds decide jobs one at a time in queue order, so the
round it builds is the target, and the episode is ``run_episode``'s bit for bit); when the
target leaves that job waiting, it ends the round (scheduling task).

What the env's actions cannot express is an error naming the placement, never a silent
substitute (:class:`palgym.errors.ConfigError`): a sticky placement (the env's sticky rounds
stop victims by their own rule) or one that draws random numbers (:func:`check_generic`), and,
during the episode, a job's GPUs that no candidate holds, a job the target leaves waiting in the
placement task (whose rounds place their whole fitting prefix), or a target that places a job
behind one it leaves waiting, or one the round does not decide.
"""

from __future__ import annotations

import numpy as np

from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import WindowCandidates
from palgym.envs.decisions import DecisionRound
from palgym.errors import ConfigError, PalgymError
from palgym.policies.base import CheckedPlacement, PlacementPolicy
from palgym.policies.durations import Durations
from palgym.policies.registry import PlacementEntry, PolicyContext
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.types import FREE, IntArray


def check_generic(entry: PlacementEntry, backfill: str) -> None:
    """Check that the env can act as ``entry``'s placement by asking it (the module docstring).

    Raises:
        ConfigError: for a sticky placement, one that draws random numbers, or a backfill
            mode, naming the placement.
    """
    if entry.sticky:
        raise ConfigError(f"{entry.name} is sticky and has no candidate kind: the env's sticky "
                          "rounds stop running jobs by their own rule, so the env cannot act "
                          "as it (run it with run_episode or evaluate.py on the simulator)")
    if not entry.deterministic:
        raise ConfigError(f"{entry.name} draws random numbers and has no candidate kind: the "
                          "env cannot replay its draws (run it on the simulator)")
    if backfill != "none":
        raise ConfigError(f"{entry.name}+{backfill}: the env asks a placement without a "
                          "candidate kind for its own target; give its name without a suffix")


class _NoDraws:
    """The sampler of a deterministic placement asked by the env: drawing is an error."""

    def __init__(self, name: str) -> None:
        self.name = name

    def sample(self, population: object, k: int) -> list[int]:
        raise PalgymError(f"placement {self.name!r} drew random numbers though it is "
                          "registered as deterministic")


class PolicyAgent:
    """Acts as one placement without a candidate kind in one env (the module docstring).

    Args:
        entry: the placement's registry entry (checked by :func:`check_generic`).
    """

    def __init__(self, entry: PlacementEntry) -> None:
        self.entry = entry
        self._factors: SlowdownFactors | None = None
        self._durations: Durations | None = None
        self._placement: PlacementPolicy | None = None
        self._round: DecisionRound | None = None
        self._target: IntArray = np.empty(0, np.int64)

    def action(self, decision: DecisionRound, candidates: WindowCandidates,
               factors: SlowdownFactors, durations: Durations, codec: ActionCodec) -> int:
        """The placement's action in the open round.

        Args:
            decision: the open round (non-sticky).
            candidates: the window's candidates.
            factors: the slowdown factors the env decides on (the placement is made from them).
            durations: what the env's scheduler knows of job durations.
            codec: the action codec.

        Returns:
            ``codec.encode(0, m)`` for the candidate m holding the first slot's job's GPUs in
            the placement's target, or ``codec.END_ROUND`` when the target leaves it waiting.

        Raises:
            ConfigError: naming the placement, the job and what the env cannot express.
            PolicyTypeError: if ``place()`` returns something other than a target.
        """
        target = self._round_target(decision, factors, durations)
        head = decision.pending[0]
        gpus = np.flatnonzero(target == head)
        if gpus.size == 0:
            return self._end_round(decision, head, target, codec)
        need = decision.sim.jobs.num_gpus.item(head)
        if gpus.size != need:
            raise ConfigError(f"placement {self.entry.name!r} gives job {head} {gpus.size} "
                              f"GPUs; it needs {need}")
        shape = candidates.shape_of_slot.item(0)
        feasible = candidates.feasible[shape]
        for candidate in range(codec.num_candidates):
            if (candidate != codec.RANDOM and feasible.item(candidate)
                    and np.array_equal(candidates.gpus(0, candidate), gpus)):
                return codec.encode(0, candidate)
        raise ConfigError(f"placement {self.entry.name!r} gives job {head} GPUs "
                          f"{gpus.tolist()}, which no env candidate holds (the env's actions "
                          "are its candidates, palgym.envs.candidates): the env cannot act as "
                          f"this placement; run it on the simulator. {self._likely_causes()}")

    def _likely_causes(self) -> str:
        """What usually makes a placement's GPUs differ from every candidate: the env's
        ``class_reorder`` (from the class's trait) or a rule that is sticky in fact."""
        reorder = self.entry.class_reorder
        hint = ("" if reorder else "a rule that delegates to PAL or PM-First needs "
                "class_reorder = True on its class (the env's rounds then class-reorder the "
                "jobs that fit, as those rules do; this env has class_reorder=False, the "
                "class's trait); ")
        return (f"Likely causes: {hint}a rule that keeps running jobs on their GPUs is sticky "
                "(the env's non-sticky rounds start from an empty cluster) "
                "(docs/CUSTOM_POLICY.md)")

    def _round_target(self, decision: DecisionRound, factors: SlowdownFactors,
                      durations: Durations) -> IntArray:
        """The placement's target of the open round (asked once per round)."""
        if self._round is decision:
            return self._target
        sim = decision.sim
        if (self._placement is None or self._factors is not factors
                or self._durations is not durations):  # a new episode or belief fit
            self._placement = CheckedPlacement(self.entry.make(PolicyContext(
                factors, sim.config, durations=durations)))
            self._factors, self._durations = factors, durations
        target = self._placement.place(sim.view(), decision.order, _NoDraws(self.entry.name))
        held = np.unique(target[target != FREE])
        outside = np.setdiff1d(held, np.asarray(decision.start, dtype=np.int64))
        if outside.size:
            raise ConfigError(f"placement {self.entry.name!r} places job {int(outside[0])}, "
                              "which the env's round does not decide (the placement task "
                              "decides the longest prefix of the queue order that fits)")
        self._round, self._target = decision, target
        return target

    def _end_round(self, decision: DecisionRound, head: int, target: IntArray,
                   codec: ActionCodec) -> int:
        """End the round the target leaves ``head`` waiting in, if nothing it places is
        still pending."""
        if decision.task != "scheduling":
            raise ConfigError(f"placement {self.entry.name!r} leaves job {head} waiting, but the "
                              "placement task places every job of the round's fitting prefix: "
                              "use the scheduling task")
        behind = np.intersect1d(target[target != FREE], np.asarray(decision.pending))
        if behind.size:
            raise ConfigError(f"placement {self.entry.name!r} places job {int(behind[0])} but "
                              f"leaves job {head}, before it in the window, waiting: the env's "
                              "heuristic agents place the window's first job or end the round")
        return codec.END_ROUND
