"""Best-known schedules by hindsight search: a local search over job priority orders that sees
the whole trace, the true durations and the true speeds, and uses the simulator as a black box.

A candidate is a priority order over the trace's jobs (a permutation, :class:`PriorityOrder`)
and a placement from a short list (:data:`DEFAULT_PLACEMENTS`: PAL, PM-First and
Packed-Non-Sticky with first-fit backfilling, PAL and PM-First also deciding on the true
speeds, :data:`TRUE_SPEEDS`): each round the placement walks the active jobs in
priority order (backfilling past those that do not fit), so the order decides which jobs run
and the placement which GPUs they get. Its value is the engine's average JCT of the episode
played that way (:func:`palgym.simulate.run_episode`).

The search (iterated local search with a seeded ``numpy`` generator; Lourenco, Martin and
Stuetzle, "Iterated Local Search", Handbook of Metaheuristics, 2003):

1. start from the best of the field's heuristics (``srsf``, ``srtf``, ``fifo`` x the
   registry placements among ``placements``) (their completion order becomes the first
   priority order) and from the orders by submit time, by SRSF's and SRTF's initial keys;
2. move: take one job to another position (within ``window`` places), or swap two jobs, or
   change the placement; keep the candidate if it is no worse (ties accepted, so the search
   walks plateaus);
3. after ``patience`` evaluations without improvement, perturb the best order (a few random
   moves) and continue from there;
4. stop after ``evaluations`` candidates; if no priority order beat the best start
   heuristic's own run (a dynamic order such as SRTF is no fixed priority order), the result
   is that run: the search is never worse than the best heuristic of its start field.

The best candidate found is recorded as a :class:`~palgym.schedule_record.ScheduleRecord`
(:func:`palgym.schedule_record.record_episode`), which replays to the same value. The search
is a reference that knows the future, never a scheduler.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from palgym.errors import ConfigError
from palgym.policies.slowdown import SlowdownFactors
from palgym.schedule_record import ScheduleRecord, record_episode
from palgym.sim.types import IntArray
from palgym.sim.views import SimView
from palgym.simulate import Episode, EpisodeResult, run_episode, slowdown_factors

TRUE_SPEEDS = "@true-speeds"
"""A candidate placement with this suffix decides on the true speeds (``perfvar`` itself, one
tier per distinct value: :func:`true_speed_factors`) instead of the binned slowdown factors:
the search sees what no scheduler sees, and a set whose slowest GPU is 0.5% faster can save a
round."""
DEFAULT_PLACEMENTS: tuple[str, ...] = (
    "pal+backfill", "pm-first+backfill", "packed-non-sticky+backfill",
    "pal+backfill" + TRUE_SPEEDS, "pm-first+backfill" + TRUE_SPEEDS)
"""The placements a candidate may use."""
START_FIELD: tuple[tuple[str, str], ...] = tuple(
    (order, placement) for order in ("srsf", "srtf", "fifo") for placement in DEFAULT_PLACEMENTS
    if not placement.endswith(TRUE_SPEEDS))
"""The heuristics (queue order, placement) whose best run seeds the search."""


def true_speed_factors(perfvar: np.ndarray) -> SlowdownFactors:
    """Slowdown factors that are the profile itself: ``sf = perfvar`` (float64 (C, G)), each
    distinct value its own tier (what PAL and PM-First decide on under :data:`TRUE_SPEEDS`)."""
    sf = np.array(perfvar, dtype=np.float64)
    labels = np.empty(sf.shape, np.int64)
    tiers = []
    for c in range(sf.shape[0]):
        values, labels[c] = np.unique(sf[c], return_inverse=True)
        tiers.append(values)
    return SlowdownFactors(sf=sf, labels=labels, tiers=tuple(tiers))


@dataclass(frozen=True)
class SearchFactors:
    """The factors a candidate placement decides on: ``fitted`` (the episode's slowdown
    factors) or ``true`` (:func:`true_speed_factors`) for a :data:`TRUE_SPEEDS` name."""

    fitted: SlowdownFactors
    true: SlowdownFactors

    @classmethod
    def of(cls, episode: Episode) -> SearchFactors:
        """The episode's two kinds of factors."""
        return cls(slowdown_factors(episode), true_speed_factors(episode.profile.perfvar))

    def resolve(self, placement: str) -> tuple[str, SlowdownFactors]:
        """``(placement name, its factors)`` of a candidate placement."""
        if placement.endswith(TRUE_SPEEDS):
            return placement[: -len(TRUE_SPEEDS)], self.true
        return placement, self.fitted


@dataclass(frozen=True)
class PriorityOrder:
    """A static queue order by a fixed priority per job (the :class:`QueueOrder` protocol).

    Attributes:
        rank: int64 (J,), the rank of each trace job (engine index); lower runs first. A
            background copy (engine index k >= J, a copy of trace row k mod J,
            docs/PAL_MODEL.md section 2) shares its row's rank, after the row itself.
    """

    rank: IntArray
    name: str = "priority"
    static: bool = True

    def order(self, sim: SimView) -> IntArray:
        """int64 (A,): active job indices by (priority class, rank, index)."""
        active = sim.active()
        rank = self.rank[active % self.rank.size]
        keys = (active, rank, sim.jobs.priority[active])
        return active[np.lexsort(keys)]


def rank_of(order: Sequence[int] | IntArray) -> IntArray:
    """int64 (J,): the rank array of a permutation of job indices (first = rank 0)."""
    perm = np.asarray(order, dtype=np.int64)
    rank = np.empty(perm.size, np.int64)
    rank[perm] = np.arange(perm.size)
    return rank


@dataclass
class SearchResult:
    """The outcome of :func:`hindsight_search`.

    Attributes:
        avg_jct_s: the best candidate's average JCT (s), as its schedule replays.
        order: int64 (J,), its priority order (job indices, first = highest).
        placement: its placement name (the start heuristic's ``ORDER/PLACEMENT`` when no
            priority order beat that heuristic's own run: its schedule is then that run's).
        schedule: its schedule's record (:mod:`palgym.schedule_record`).
        start_avg_jct_s: the best start's average JCT (s).
        start: the best start's label (``"srsf/pal+backfill"``, ``"completion order"``, ...).
        evaluations: candidates evaluated.
        wall_s: seconds spent.
        history: (evaluation, best average JCT) at each improvement.
    """

    avg_jct_s: float
    order: IntArray
    placement: str
    schedule: ScheduleRecord
    start_avg_jct_s: float
    start: str
    evaluations: int
    wall_s: float
    history: list[tuple[int, float]] = field(default_factory=list)


def _value(result: EpisodeResult) -> float:
    metrics = result.metrics
    return float(metrics.censored_avg_jct_s if metrics.truncated else metrics.avg_jct_s)


class _RoundCapError(Exception):
    """A candidate ran past the search's round cap."""


def _cap_at(rounds: int | None) -> Callable[[Any], int] | None:
    """A ``run_episode`` progress hook that stops a run at round ``rounds`` (None: no cap)."""
    if rounds is None:
        return None

    def hook(sim: Any) -> int:
        if sim.round_index >= rounds:
            raise _RoundCapError
        return rounds

    return hook


def evaluate_order(episode: Episode, order: IntArray, placement: str,
                   factors: SearchFactors | None = None, round_cap: int | None = None) -> float:
    """The average JCT (s; censored if unfinished) of ``episode`` under ``placement`` (a name,
    or one with :data:`TRUE_SPEEDS`) with the priority ``order`` (job indices, first =
    highest); ``factors``: :meth:`SearchFactors.of` the episode (computed if None);
    ``round_cap``: a run that reaches this round is stopped and scores ``inf`` (None: none)."""
    name, chosen = (factors or SearchFactors.of(episode)).resolve(placement)
    try:
        result = run_episode(episode, policy=name, queue_order=PriorityOrder(rank_of(order)),
                             factors=chosen, driver="python", progress=_cap_at(round_cap))
    except _RoundCapError:
        return math.inf
    return _value(result)


def hindsight_search(episode: Episode, *, evaluations: int = 2000, seed: int = 0,
                     placements: Sequence[str] = DEFAULT_PLACEMENTS, window: int = 8,
                     patience: int = 200, time_limit_s: float | None = None,
                     round_cap_factor: float | None = None,
                     report: Callable[[int, float], None] | None = None) -> SearchResult:
    """Search priority orders for the lowest average JCT of ``episode`` (module docstring).

    Args:
        episode: the episode (its trace's jobs are what the orders rank).
        evaluations: candidates to evaluate (>= 1; the starts count).
        seed: the search's ``numpy`` seed.
        placements: the placements a candidate may use.
        window: a job moves at most this many places.
        patience: evaluations without improvement before a perturbation.
        time_limit_s: stop after this many seconds as well (None: no limit; with a limit the
            result depends on the machine's speed).
        round_cap_factor: stop a candidate's run once it reaches this many times the rounds
            of the longest start (it scores ``inf``): a bad order can run an episode with
            background jobs for hundreds of thousands of rounds (None: no cap).
        report: called with (candidates evaluated, best average JCT so far, s) after every
            25th candidate (e.g. a progress line).

    Returns:
        The best candidate, its schedule and the search's record.

    Raises:
        ConfigError: for ``evaluations`` < 1, an empty ``placements`` or ``window`` < 1.
    """
    if evaluations < 1 or not placements or window < 1:
        raise ConfigError("hindsight search: need evaluations >= 1, a placement and window >= 1")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    factors = SearchFactors.of(episode)
    starts, count, longest = _starts(episode, placements, factors)
    cap = None if round_cap_factor is None else int(math.ceil(round_cap_factor * longest))
    start_value, start_label = starts[0][0], starts[0][3]
    best_value, best_order, best_placement, count = _best_start(episode, starts, factors, count,
                                                                cap)
    history = [(count, best_value)]
    current_value, current_order, current_placement = best_value, best_order, best_placement
    stale = 0
    while count < evaluations:
        if time_limit_s is not None and time.perf_counter() - started > time_limit_s:
            break
        order, placement = _neighbour(rng, current_order, current_placement, placements, window)
        value = evaluate_order(episode, order, placement, factors, cap)
        count += 1
        if report is not None and count % 25 == 0:
            report(count, best_value)
        if value <= current_value:
            stale = 0 if value < current_value else stale + 1
            current_value, current_order, current_placement = value, order, placement
            if value < best_value:
                best_value, best_order, best_placement = value, order, placement
                history.append((count, best_value))
        else:
            stale += 1
        if stale >= patience:
            current_order = best_order
            for _ in range(3):
                current_order, _ = _neighbour(rng, current_order, best_placement, (), window)
            current_placement = best_placement
            current_value = evaluate_order(episode, current_order, current_placement, factors,
                                           cap)
            count += 1
            stale = 0
    if start_value < best_value and "/" in start_label:  # no order beat the best start itself
        order_name, placement = start_label.split("/", 1)
        run = record_episode(episode, placement, order_name, factors=factors.fitted,
                             driver="python")
        return SearchResult(_value(run.result), starts[0][1], start_label, run.record,
                            start_value, start_label, count, time.perf_counter() - started,
                            history)
    name, chosen = factors.resolve(best_placement)
    run = record_episode(episode, name, PriorityOrder(rank_of(best_order)),  # type: ignore[arg-type]
                         factors=chosen, driver="python")
    return SearchResult(_value(run.result), best_order, best_placement, run.record, start_value,
                        start_label, count, time.perf_counter() - started, history)


Start = tuple[float, IntArray, str, str]
"""A start: (average JCT, priority order, placement, label)."""


def _starts(episode: Episode, placements: Sequence[str],
            factors: SearchFactors) -> tuple[list[Start], int, int]:
    """The search's starts, best first, the evaluations they took and the most rounds a field
    heuristic ran: each field heuristic's run (its completion order as a priority order), the
    submit order and the order by SRSF's initial key."""
    trace = episode.trace
    jobs = trace.num_jobs
    count = longest = 0
    starts: list[Start] = []
    for order_name, placement in START_FIELD:
        if placement not in placements:
            continue
        result = run_episode(episode, policy=placement, queue_order=order_name,
                             factors=factors.fitted)
        count += 1
        longest = max(longest, result.num_rounds)
        completion = np.nan_to_num(result.records.completion_time_s, nan=np.inf)
        by_completion = np.lexsort((np.arange(jobs), completion)).astype(np.int64)
        starts.append((_value(result), by_completion, placement, f"{order_name}/{placement}"))
    ideal_gpu_s = trace.num_gpus * trace.total_iterations * trace.iteration_time_s
    for label, key in (("submit order", trace.submit_time_s), ("srsf key", ideal_gpu_s)):
        order = np.lexsort((np.arange(jobs), key)).astype(np.int64)
        value = evaluate_order(episode, order, placements[0], factors)
        starts.append((value, order, placements[0], label))
        count += 1
    starts.sort(key=lambda start: start[0])
    return starts, count, longest


def _best_start(episode: Episode, starts: list[Start], factors: SearchFactors,
                count: int, cap: int | None) -> tuple[float, IntArray, str, int]:
    """The best start as a priority order (a heuristic's completion order re-evaluated)."""
    best_value, best_order, best_placement = np.inf, starts[0][1], starts[0][2]
    for value, order, placement, label in starts:
        if label.endswith(placement) and "/" in label:
            value = evaluate_order(episode, order, placement, factors, cap)
            count += 1
        if value < best_value:
            best_value, best_order, best_placement = value, order, placement
    return best_value, best_order, best_placement, count


def _neighbour(rng: np.random.Generator, order: IntArray, placement: str,
               placements: Sequence[str], window: int) -> tuple[IntArray, str]:
    """One random move: a job moved within ``window`` places, two jobs swapped, or (if more
    than one placement) another placement."""
    jobs = order.size
    kind = int(rng.integers(3 if len(placements) > 1 else 2))
    if kind == 2 or jobs < 2:
        others = [p for p in placements if p != placement] or [placement]
        return order, others[int(rng.integers(len(others)))]
    i = int(rng.integers(jobs))
    j = int(np.clip(i + rng.integers(-window, window + 1), 0, jobs - 1))
    if i == j:
        j = (i + 1) % jobs
    new = order.copy()
    if kind == 0:
        job = new[i]
        new = np.insert(np.delete(new, i), j, job)
    else:
        new[i], new[j] = new[j], new[i]
    return new, placement
