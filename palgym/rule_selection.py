"""Rule selection on the engine: at each round where something happened, a selector picks
which heuristic rule (queue order x placement x backfilling) schedules the cluster.

A *rule* is ``ORDER/PLACEMENT[+SUFFIX]`` (``srtf/pal+backfill``, ``fifo/pal+easy``): a queue
order of :data:`palgym.policies.QUEUE_ORDER_NAMES` and a placement with its backfilling
suffix. Each rule ranks the whole queue by its own order and places as
:func:`palgym.simulate.run_episode` does, so rules of different queue orders share one episode
exactly (unlike ``palgym/PALSelector-v0``, whose rules act through one env's window and share
its order).

When the selector is asked (:func:`drive_selector`): at the first round, and at every round
with an event since the last commit (an arrival, a completion, a promotion:
:attr:`palgym.sim.engine.Simulator.events_since_commit`). Between events the held rule keeps
deciding, with the heuristic loop's memo (:func:`palgym.driver.drive`): a deterministic rule
under a static order that changed nothing runs the quiet rounds up to the next event at once.
A selector that always picks rule r therefore plays rule r's episode bit for bit, with the
metrics of ``run_episode(episode, placement, order)`` (tested).

A selector that needs the engine itself (a search that simulates ahead on copies of it) has a
``start`` method: :func:`drive_selector` calls ``select.start(context)`` once, before the first
round, with a :class:`SelectorContext` (the engine, the rules, the random stream, the stall
detector and, when it changes during the episode, the rules' shared belief, which a selector
simulating ahead copies with the engine); a plain function is called as is.

What a selector reads (:func:`state_features`, :data:`STATE_FEATURES`) summarises the queue
and the cluster; the longest time queued is there because a rule that starves a job (SRTF or
first-fit backfilling passing a wide job for hours) shows it there first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from palgym.driver.rounds import RoundMemo, play_round
from palgym.errors import ConfigError
from palgym.policies import QUEUE_ORDER_NAMES, make_placement, make_queue_order
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler, WrappedPlacement
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.slowdown import SlowdownFactors
from palgym.policies.stragglers import migrate_stragglers
from palgym.sim.engine import Simulator
from palgym.sim.stall import DEFAULT_STALL_FACTOR, StallDetector
from palgym.sim.types import FloatArray, IntArray, JobStatus
from palgym.sim.views import SimView
from palgym.simulate import (
    Episode,
    EpisodeResult,
    episode_sampler,
    final_metrics,
    make_simulator,
    slowdown_factors,
)

STATE_FEATURES: tuple[str, ...] = (
    "log_max_queued_h", "longest_queued_gpus_frac", "longest_queued_log_remaining_h",
    "log_queued", "queued_gpus_frac", "free_frac", "log_mean_queued_h",
)
"""What :func:`state_features` returns, in order (Q: the queued jobs, G: the cluster's GPUs,
times in hours): ``ln(1 + max_Q queued)``, where a job's *queued* time is the time it has spent
in the system without running (now - submission - attained service, whatever the preset's
starvation accounting); the GPUs of the longest-queued job / G; ``ln(1 + its remaining ideal
run time)`` (the scheduler's total iterations minus those done, x T_it; 0 when durations are
unknown); ``ln(1 + |Q|) / 5``; the GPUs Q asks for / G; the free GPUs / G;
``ln(1 + mean_Q queued)``. Every entry is 0 for an empty queue but ``free_frac``."""

Selector = Callable[[FloatArray, SimView], int]
"""``selector(features, view) -> rule index``: :func:`state_features` of the view (float64
(F,)) and the view itself."""


@dataclass(frozen=True)
class SelectorContext:
    """What :func:`drive_selector` hands to a selector's ``start`` method before the first
    round: the live objects of the episode, which the driver keeps using (a selector that
    simulates ahead works on copies: ``copy.deepcopy`` of the engine, the stall detector and
    the sampler, never these).

    Attributes:
        sim: the engine (the one every later ``view`` is of).
        orders, placements: rule h is ``(orders[h], placements[h])``.
        sampler: the placements' random stream.
        durations: what the features and the rules read of job durations.
        stall: the stall detector checked after every advance (None: none).
        belief: the rules' shared belief when it changes during the episode (its
            ``placements`` are the ones the driver reads, replaced at refits, and its
            ``on_event`` the driver's callback; a selector that simulates ahead copies it with
            the engine), else None.
    """

    sim: Simulator
    orders: tuple[QueueOrder, ...]
    placements: tuple[PlacementPolicy, ...]
    sampler: Sampler
    durations: Durations
    stall: StallDetector | None
    belief: SharedBelief | None = None


def parse_rule(rule: str) -> tuple[str, str]:
    """``"srtf/pal+backfill"`` -> ``("srtf", "pal+backfill")``. ORDER may be a user's queue
    order as ``MODULE:CLASS`` (``agents.priority.pretrained:ResponseRatio/pal+backfill``): it is
    imported and registered (:func:`palgym.policies.loader.queue_order_name`), and its
    registered name is returned, so that a rule names its order in a form that another process
    (a replay) can import.

    Raises:
        ConfigError: naming the rule, for one without ``ORDER/`` or with an unknown order (or
            a ``MODULE:CLASS`` that does not import as a queue order).
    """
    order, sep, placement = rule.partition("/")
    if sep and placement and ":" in order:
        from palgym.policies.loader import queue_order_name

        return queue_order_name(order, f"rule {rule!r}: queue order {order!r}"), placement
    if not sep or not placement or order not in QUEUE_ORDER_NAMES:
        raise ConfigError(f"rule {rule!r}: give ORDER/PLACEMENT[+SUFFIX] with ORDER one of "
                          f"{list(QUEUE_ORDER_NAMES)} (e.g. srtf/pal+backfill)")
    return order, placement


def check_rules(rules: Sequence[str]) -> tuple[str, ...]:
    """The rules as a tuple, each checked by :func:`parse_rule`.

    Raises:
        ConfigError: for no rule, a rule given twice or a malformed rule.
    """
    names = tuple(rules)
    if not names:
        raise ConfigError("rules: give at least one ORDER/PLACEMENT rule")
    if len(set(names)) != len(names):
        raise ConfigError(f"rules: a rule is given twice in {list(names)}")
    for name in names:
        parse_rule(name)
    return names


def state_features(view: SimView, durations: Durations = CLAIRVOYANT) -> FloatArray:
    """float64 (F,) = (len(STATE_FEATURES),): the selector's view of the queue and the cluster
    (:data:`STATE_FEATURES`). Reads only what a scheduler knows: times queued, GPU counts, and the
    remaining run time through ``durations`` (0 under ``unknown``)."""
    jobs = view.jobs
    size = view.num_jobs
    queued = np.flatnonzero(jobs.status[:size] == JobStatus.QUEUED)
    num_gpus = view.cluster.num_gpus
    free = np.count_nonzero(view.job_of_gpu < 0) / num_gpus
    out = np.zeros(len(STATE_FEATURES), np.float64)
    out[5] = free
    if queued.size == 0:
        return out
    waiting_h = (view.now_s - jobs.submit_time_s[queued]
                 - jobs.attained_service_s[queued]) / 3600.0
    longest = int(np.argmax(waiting_h))
    job = int(queued[longest])
    remaining_h = 0.0
    if durations.known:
        total = durations.estimated(jobs.total_iterations, size)[job]
        remaining_h = (max(total - jobs.iterations_done[job], 0.0)
                       * jobs.iteration_time_s[job] / 3600.0)
    out[0] = math.log1p(waiting_h[longest])
    out[1] = jobs.num_gpus[job] / num_gpus
    out[2] = math.log1p(remaining_h)
    out[3] = math.log1p(queued.size) / 5.0
    out[4] = float(jobs.num_gpus[queued].sum()) / num_gpus
    out[6] = math.log1p(float(waiting_h.mean()))
    return out


@dataclass(frozen=True)
class SelectedEpisode:
    """Outcome of :func:`run_selected_episode`.

    Attributes:
        result: the episode's result (``policy`` is ``"selector"``, ``queue_order`` ``"mixed"``).
        rule_rounds: int64 (H,): rounds each rule decided (quiet rounds run at once count once).
        choices: how many times the selector was asked.
        switches: how many times the held rule changed.
    """

    result: EpisodeResult
    rule_rounds: IntArray
    choices: int
    switches: int


def drive_selector(sim: Simulator, orders: Sequence[QueueOrder],
                   placements: Sequence[PlacementPolicy], select: Selector, sampler: Sampler,
                   durations: Durations = CLAIRVOYANT, stall: StallDetector | None = None,
                   on_event: Callable[[Simulator], None] | None = None,
                   belief: SharedBelief | None = None) -> tuple[str, IntArray, int, int]:
    """Run ``sim`` to its end, rule ``select(...)`` deciding each round (module docstring).

    Args:
        sim: the engine, fresh or mid-episode.
        orders, placements: rule h is ``(orders[h], placements[h])``.
        select: the selector (:data:`Selector`); asked at the first round and after events.
            If it has a ``start`` attribute, ``select.start(SelectorContext(...))`` is called
            once before the first round (module docstring).
        sampler: the placements' random stream (one stream, as in one heuristic's episode).
        durations: what :func:`state_features` may read.
        stall: checked after every advance (None: only ``max_rounds`` truncates); any object
            with ``check(sim) -> reason`` (``""``: go on).
        on_event: called with ``sim`` after every commit and every advance, as
            :func:`palgym.driver.drive` calls it (a changing belief: it may replace entries of
            ``placements``, which the loop reads each round, and mark an event); quiet rounds
            then run one by one.
        belief: the shared belief behind ``placements`` and ``on_event`` when it changes
            (handed to a ``start`` hook in :class:`SelectorContext`).

    Returns:
        ``(reason, rule_rounds, choices, switches)``: ``""`` if every measured job completed,
        else why the episode stopped; the rounds per rule (int64 (H,)); the selector's calls;
        the changes of the held rule.

    Raises:
        InvalidActionError: the selector returned no rule index.
        PalgymError: if the held rule leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
    """
    count = len(orders)
    rule_rounds = np.zeros(count, np.int64)
    start = getattr(select, "start", None)
    if start is not None:
        start(SelectorContext(sim, tuple(orders), tuple(placements), sampler, durations, stall,
                              belief))
    held, memo, choices, switches, first = 0, RoundMemo(), 0, 0, True
    while not sim.done and not sim.truncated:
        if first or sim.events_since_commit:
            chosen = _ask(select, sim, durations, count)
            choices += 1
            if chosen != held:
                switches += 0 if first else 1
                held = chosen
                memo.reset()
            first = False
        rule_rounds[held] += 1
        play_round(sim, orders[held], placements[held], sampler, memo, on_event)
        if stall is not None and (reason := stall.check(sim)):
            return reason, rule_rounds, choices, switches
    reason = f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""
    return reason, rule_rounds, choices, switches


def _ask(select: Selector, sim: Simulator, durations: Durations, count: int) -> int:
    """The selector's rule index now (InvalidActionError unless one of 0..count-1)."""
    from palgym.errors import InvalidActionError

    view = sim.view()
    chosen = select(state_features(view, durations), view)
    if (isinstance(chosen, bool) or not isinstance(chosen, int | np.integer)
            or not 0 <= int(chosen) < count):
        raise InvalidActionError(f"the selector returned {chosen!r}, not a rule index "
                                 f"in 0..{count - 1}")
    return int(chosen)


def run_selected_episode(
    episode: Episode, rules: Sequence[str], select: Selector,
    durations: Durations = CLAIRVOYANT,
    wrap_placement: Callable[[PlacementPolicy], PlacementPolicy] | None = None,
) -> SelectedEpisode:
    """Simulate ``episode`` with ``select`` picking among ``rules`` (:func:`drive_selector`).

    Args:
        episode: from :func:`palgym.simulate.make_episode`; PAL and PM-First decide on its
            belief (:class:`SharedBelief`: one belief for every rule, as one heuristic's run
            has).
        rules: ``ORDER/PLACEMENT[+SUFFIX]`` names (:func:`parse_rule`).
        select: the selector.
        durations: what the queue orders, EASY backfilling and the features know of job
            durations (its errors: the episode seed's), as in ``run_episode``.
        wrap_placement: called once with each placement object a rule runs (a refit makes
            new ones), returns the one the loop runs (e.g. a recorder,
            :func:`palgym.schedule_record.record_episode`); None: none.

    Raises:
        ConfigError: for a malformed rule or a rule that needs durations under ``unknown``
            (naming it).
    """
    names = check_rules(rules)
    known = durations.for_seed(episode.seed)
    parsed = [parse_rule(name) for name in names]
    orders = [make_queue_order(order, known, episode.config) for order, _ in parsed]
    sim = make_simulator(episode)
    belief = SharedBelief(sim, episode, [placement for _, placement in parsed], known)
    changes = belief.fit.belief.changes
    stall = StallDetector(sim, DEFAULT_STALL_FACTOR, None)
    placements: Sequence[PlacementPolicy] = belief.placements
    if wrap_placement is not None:
        placements = _Wrapping(belief.placements, wrap_placement)
    reason, rule_rounds, choices, switches = drive_selector(
        sim, orders, placements, select, episode_sampler(episode), known, stall,
        belief.on_event if changes else None, belief if changes else None)
    result = EpisodeResult(
        trace=episode.trace.name, policy="selector", queue_order="mixed",
        metrics=final_metrics(sim, reason), records=sim.records(), num_rounds=sim.round_index,
        episode_hash=episode.episode_hash(), belief=episode.belief.mode.value,
        refits=belief.fit.refits, migrations=belief.migrations)
    return SelectedEpisode(result, rule_rounds, choices, switches)


class _Wrapping(Sequence[PlacementPolicy]):
    """The rules' current placements, each wrapped once by ``wrap`` (read at every access, so
    a placement a refit replaces is wrapped anew)."""

    def __init__(self, placements: list[PlacementPolicy],
                 wrap: Callable[[PlacementPolicy], PlacementPolicy]) -> None:
        self._placements, self._wrap = placements, wrap
        self._wrapped: dict[int, tuple[PlacementPolicy, PlacementPolicy]] = {}

    def __len__(self) -> int:
        return len(self._placements)

    def __getitem__(self, index: int) -> PlacementPolicy:  # type: ignore[override]
        inner = self._placements[index]
        kept = self._wrapped.get(id(inner))
        if kept is None or kept[0] is not inner:
            kept = (inner, self._wrap(inner))
            self._wrapped[id(inner)] = kept
        return kept[1]


class StragglerMigration(WrappedPlacement):
    """A rule's factor-reading placement with the shared belief's stragglers migrated
    (:func:`palgym.policies.stragglers.migrate_stragglers`), as
    :class:`palgym.policies.belief.BeliefPlacement` does for one heuristic."""

    def __init__(self, inner: PlacementPolicy, shared: SharedBelief) -> None:
        self.inner = inner
        self.shared = shared

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner target with the stragglers migrated (counted in the shared belief's
        ``migrations``)."""
        target = self.inner.place(view, order, sampler)
        belief = self.shared.fit.belief
        if belief.stragglers.size:
            target, moved = migrate_stragglers(view, target, belief.stragglers, belief.values)
            self.shared.migrations += moved
        return target


class SharedBelief:
    """One belief for every rule of an episode, built as :func:`palgym.simulate.run_episode`
    builds a heuristic's (the episode's belief options, its profiling stream: child 4 of the
    seed's ``SeedSequence``; :class:`palgym.policies.belief.BeliefFit`): every rule that reads
    slowdown factors (PAL, PM-First) is made from the fit's factors and made again at each
    refit, so a constant selector runs the heuristic's episode bit for bit in every world.

    Args:
        sim: the fresh engine.
        episode: its episode.
        placements: the rules' placement names.
        known: what the placements know of durations.

    Attributes:
        placements: the rules' current placements (entries replaced at a refit).
        fit: the belief's fit (``fit.refits``: fits after the first).
        migrations: stragglers migrated (``BeliefOptions.straggler_ratio``).
    """

    def __init__(self, sim: Simulator, episode: Episode, placements: Sequence[str],
                 known: Durations) -> None:
        from palgym.policies.belief import Belief, BeliefFit

        seed = np.random.SeedSequence(episode.seed).spawn(5)[4]
        process = None if sim.truth is None else sim.truth.process
        belief = Belief(sim.view(), episode.belief, np.random.default_rng(seed), process)
        self.fit = BeliefFit(belief, episode.config.slowdown_clusters, slowdown_factors(episode),
                             episode.profile.perfvar)
        self.migrations = 0
        self._names = tuple(placements)
        self._config, self._known = episode.config, known
        self.placements = [self._make(name) for name in self._names]
        self._reads = [isinstance(p, StragglerMigration)
                       or isinstance(getattr(p, "factors", None), SlowdownFactors)
                       for p in self.placements]

    def _make(self, name: str) -> PlacementPolicy:
        placement = make_placement(name, self.fit.factors, self._config, durations=self._known)
        if self.fit.belief.options.straggler_ratio is None or not isinstance(
                getattr(placement, "factors", None), SlowdownFactors):
            return placement
        return StragglerMigration(placement, self)

    def on_event(self, sim: Simulator) -> None:
        """The driver's callback: update the belief; at a refit, remake the factor-reading
        placements and mark an event; a round that flagged stragglers is an event too."""
        if self.fit.update(sim.view()):
            for index, reads in enumerate(self._reads):
                if reads:
                    self.placements[index] = self._make(self._names[index])
            sim.mark_event()
        elif self.fit.belief.flagged_now:
            sim.mark_event()
