"""The rollout search on the known jobs only (``RolloutSearch(arrivals="known")``): costs
worked out by hand on a toy, its choices independent of the jobs submitted later (the online
property), the engine's closed arrivals, the cost of the known jobs, rules that name a user's
queue order as ``MODULE:CLASS``, and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

from agents.planning.search import state_cost
from agents.selection.search import RolloutSearch, run_search_episode
from agents.selection.selector import LinearSelector, StarvationFloor
from palgym import ClusterSpec, make_episode, preset
from palgym.errors import ConfigError
from palgym.rule_selection import check_rules, parse_rule, run_selected_episode
from palgym.sim.workload import Trace
from palgym.simulate import Episode, make_simulator
from palgym.tracesets.manifest import split_traces
from palgym.tracesets.sets import job_range
from tests.toys import A, R, toy_profile, toy_trace

FIFO_SRTF = ["fifo/pal", "srtf/pal"]


def fifo(features: np.ndarray, view: object) -> int:
    """The constant base: rule 0."""
    return 0


def toy(*jobs: tuple[int, float, float, int]) -> Episode:
    """Toy jobs on one node of 4 GPUs, rounds of R = 100 s, T_it 1 s, all GPUs 1.0."""
    return make_episode(toy_trace(*jobs), cluster=ClusterSpec(num_nodes=1, gpus_per_node=4),
                        config=preset("default", round_duration_s=R),
                        profile=toy_profile(4), seed=0)


def test_toy_known_costs_by_hand() -> None:
    # J0 (4 GPUs, 300 s) and J1 (4 GPUs, 100 s) submitted at 0, J2 (4 GPUs, 50 s) at 150 s;
    # base FIFO, H = None. At the first ask (t = 0) only J0 and J1 are known:
    #   fifo/pal: J0 runs 0-300, then FIFO runs J1 300-400: 300 + 400 = 700 s;
    #   srtf/pal: J1 runs 0-100, then FIFO runs J0 100-400: 100 + 400 = 500 s.
    # J2 is neither admitted nor charged in either rollout (with the episode's future a
    # rollout charges J2 as well, so its costs are higher).
    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A), (4, 150.0, 50, A))
    known = run_search_episode(episode, FIFO_SRTF, fifo, H=None, arrivals="known")
    assert known.stats.costs[0] == ((0, 700.0), (1, 500.0))
    assert known.stats.choices[0] == 1
    seen = run_search_episode(episode, FIFO_SRTF, fifo, H=None)
    assert all(cost > known_cost for (_, cost), (_, known_cost)
               in zip(seen.stats.costs[0], known.stats.costs[0], strict=True))


class _Times:
    """A selector wrapper that keeps the time of every ask."""

    def __init__(self, search: RolloutSearch) -> None:
        self.search, self.times = search, []  # type: ignore[var-annotated]

    def start(self, context: object) -> None:
        self.search.start(context)  # type: ignore[arg-type]

    def __call__(self, features: np.ndarray, view: object) -> int:
        self.times.append(view.now_s)  # type: ignore[attr-defined]
        return self.search(features, view)  # type: ignore[arg-type]


def _later_jobs_changed(trace: Trace, after_s: float) -> Trace:
    """The trace with every job submitted after ``after_s`` given 8 GPUs and 10x its
    iterations."""
    later = trace.submit_time_s > after_s
    return Trace.from_columns(
        trace.name, job_id=trace.job_id, submit_time_s=trace.submit_time_s,
        num_gpus=np.where(later, 8, trace.num_gpus),
        total_iterations=np.where(later, trace.total_iterations * 10, trace.total_iterations),
        iteration_time_s=trace.iteration_time_s, model=trace.model,
        perf_class=trace.perf_class)


def _choices_until(trace: Trace, arrivals: str, until_s: float) -> list[tuple[object, ...]]:
    """(time, choice, rollout costs) of every ask before ``until_s``."""
    episode = make_episode(trace, config=preset("pal-artifact"), seed=0)
    rules = ["srtf/pal+backfill", "fifo/pal+easy", "srsf/pal"]
    recorder = _Times(RolloutSearch(rules, LinearSelector.constant(rules, 0), H=4,
                                    arrivals=arrivals))
    run_selected_episode(episode, rules, recorder)
    stats = recorder.search.stats
    return [(t, c, costs) for t, c, costs in zip(recorder.times, stats.choices, stats.costs,
                                                 strict=True) if t < until_s]


def test_known_choices_do_not_depend_on_later_jobs() -> None:
    # The online property: change every job submitted after t (GPUs and durations); the
    # known-jobs search makes the same choices, from the same rollout costs, at every ask
    # before t. The search that sees the future prices its rollouts differently there, so the
    # check can fail.
    trace = job_range(split_traces("bundled", "train")[0], 0, 30, "window")
    cut = float(np.sort(trace.submit_time_s)[15])
    changed = _later_jobs_changed(trace, cut)
    until = cut  # asks before the first changed job's submission see none of it
    known = _choices_until(trace, "known", until)
    assert known and known == _choices_until(changed, "known", until)
    assert _choices_until(trace, "all", until) != _choices_until(changed, "all", until)


def test_close_arrivals_keeps_later_jobs_pending() -> None:
    episode = toy((4, 0.0, 100, A), (4, 250.0, 100, A))
    sim = make_simulator(episode)
    assert sim.close_arrivals() == 1 and not sim.has_future_arrivals()
    sim.commit(np.array([0, 0, 0, 0]))
    for _ in range(5):
        sim.advance()
    assert sim.active_jobs().size == 0 and not sim.done  # J1 never arrives
    assert sim.view().num_admitted == 1
    # the cost of the known job alone is its JCT; with every job, J1's wait since 250 s too
    assert state_cost(sim, None, jobs=1) == 100.0
    assert state_cost(sim, None) == 100.0 + (sim.now_s - 250.0)
    with pytest.raises(ConfigError, match="queue estimate"):
        state_cost(sim, "queue", jobs=1)


def test_module_class_rules() -> None:
    rule = "agents.priority.pretrained:ResponseRatioA3/pal+backfill"
    assert parse_rule(rule) == ("response-ratio-a3", "pal+backfill")
    assert check_rules([rule, "fifo/pal+easy"]) == (rule, "fifo/pal+easy")
    with pytest.raises(ConfigError, match="NoSuchOrder"):
        parse_rule("agents.priority.pretrained:NoSuchOrder/pal")
    # the family's member (a = 3, 96 h floor) as a selector plays the aging guard's episode
    trace = job_range(split_traces("bundled", "train")[0], 0, 30, "window")
    episode = make_episode(trace, config=preset("pal-artifact"), seed=0)
    member = LinearSelector.constant([rule, "fifo/pal+easy"], 0).with_floor(
        StarvationFloor(96.0, 1))
    from palgym.simulate import run_episode

    guard = run_episode(episode, "pal+backfill+age=96h:fifo/pal+easy",
                        "agents.priority.pretrained:ResponseRatioA3")
    selected = run_selected_episode(episode, member.rules, member)
    assert selected.result.metrics == guard.metrics


def test_known_refusals() -> None:
    with pytest.raises(ConfigError, match="'later'"):
        RolloutSearch(FIFO_SRTF, fifo, arrivals="later")
    with pytest.raises(ConfigError, match="estimate='ideal'"):
        RolloutSearch(FIFO_SRTF, fifo, arrivals="known", estimate="queue")
    from palgym.policies.durations import DurationKnowledge, Durations

    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A))
    noisy = Durations(DurationKnowledge.NOISY, 0.2)
    with pytest.raises(ConfigError, match="clairvoyant"):
        run_selected_episode(episode, FIFO_SRTF, RolloutSearch(FIFO_SRTF, fifo,
                                                               arrivals="known"), noisy)
    trace = job_range(split_traces("bundled", "train")[0], 0, 20, "window")
    from palgym.policies.belief import BeliefMode, BeliefOptions

    online = make_episode(trace, config=preset("dynamic"), seed=1,
                          belief=BeliefOptions(BeliefMode.ONLINE))
    with pytest.raises(ConfigError, match="static truth"):
        run_selected_episode(online, FIFO_SRTF, RolloutSearch(FIFO_SRTF, fifo,
                                                              arrivals="known"))


def test_rounds_bound_and_a_value_price_the_rest_by_hand() -> None:
    # J0 (4 GPUs, 300 s) and J1 (4 GPUs, 100 s) at 0; rounds of 100 s; each rollout plays
    # one round (rounds=1), then the value prices the rest: here J0's iterations left (T_it
    # 1 s). After one round (now 100 s) both rules have cost 100 + 100 = 200 s so far:
    #   fifo/pal: J0 ran 0-100 (200 left), J1 waits 100 s: 200 + 200 = 400 s;
    #   srtf/pal: J1 ran 0-100 and completed (JCT 100), J0 waited: 200 + 300 = 500 s.
    calls: list[tuple[float, int]] = []

    def j0_left(sim: object, n: int) -> float:
        calls.append((sim.now_s, n))  # type: ignore[attr-defined]
        jobs = sim.jobs  # type: ignore[attr-defined]
        return float(jobs.total_iterations[0] - jobs.iterations_done[0])

    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A))
    cut = run_search_episode(episode, FIFO_SRTF, fifo, H=None, estimate=j0_left,
                             arrivals="known", rounds=1)
    assert cut.stats.costs[0] == ((0, 400.0), (1, 500.0))
    assert cut.stats.choices[0] == 0
    assert calls[:2] == [(100.0, 2), (100.0, 2)]
    # unbounded, the same field prices the whole episode (the hand costs above: 700, 500)
    whole = run_search_episode(episode, FIFO_SRTF, fifo, H=None, arrivals="known")
    assert whole.stats.costs[0] == ((0, 700.0), (1, 500.0))
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="rounds"):
            RolloutSearch(FIFO_SRTF, fifo, rounds=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="value"):
        RolloutSearch(FIFO_SRTF, fifo, estimate="fancy")


def test_budget_shares_the_rounds_of_a_decision_by_hand() -> None:
    # The toy above (J0 300 s, J1 100 s at 0; rounds of 100 s), the value J0's iterations
    # left. budget=3 over the two rules: 3 // 2 = 1 round each, the costs of rounds=1
    # (400, 500 s). budget=4: 2 rounds each (to t = 200 s):
    #   fifo/pal: J0 ran 0-200 (100 left), J1 waits 200 s: 200 + 200 + 100 = 500 s;
    #   srtf/pal: J1 ran 0-100 (JCT 100), then J0 100-200 (200 left): 100 + 200 + 200 = 500 s.
    # budget=4 with rounds=1: the lesser bound, one round each (400, 500 s).
    def j0_left(sim: object, n: int) -> float:
        jobs = sim.jobs  # type: ignore[attr-defined]
        return float(jobs.total_iterations[0] - jobs.iterations_done[0])

    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A))
    for budget, rounds, costs in ((3, None, (400.0, 500.0)), (4, None, (500.0, 500.0)),
                                  (4, 1, (400.0, 500.0))):
        cut = run_search_episode(episode, FIFO_SRTF, fifo, H=None, estimate=j0_left,
                                 arrivals="known", rounds=rounds, budget=budget)
        assert cut.stats.costs[0] == ((0, costs[0]), (1, costs[1])), (budget, rounds)
        assert cut.stats.choices[0] == (0 if costs[0] <= costs[1] else 1)
    for bad in (1, 0, True, 2.5):
        with pytest.raises(ConfigError, match="budget"):
            RolloutSearch(FIFO_SRTF, fifo, budget=bad)  # type: ignore[arg-type]


def test_successive_halving_by_hand() -> None:
    # J0 (4 GPUs, 300 s), J1 (4 GPUs, 100 s), J2 (1 GPU, 200 s) at 0 on 4 GPUs; rounds of
    # 100 s; the value is J0's iterations left. fifo runs J0, srtf J1, srsf J2 (its least
    # GPU-time; J1 then does not fit): three rules disagree. budget=6, halving: each plays
    # 6 // 6 = 1 round (t = 100 s; 3 jobs in the system 100 s each, 300 s so far):
    #   fifo 300 + 200 = 500, srtf 300 + 300 = 600, srsf 300 + 300 = 600;
    # the two least (fifo; srtf, the earlier of the tie) play on to 1 + (6 - 3) // 2 = 2 rounds:
    #   fifo keeps J0 (no event): 3 x 200 + 100 = 700 s;
    #   srtf: J1 completed at 100 s (an event): the base (FIFO) runs J0 100-200 s:
    #   100 + 200 + 200 + 200 = 700 s.
    # srsf keeps its first cost (600 s) but is out: the tie 700 = 700 goes to fifo.
    # Without halving, budget=6 gives each 2 rounds: srsf runs J2 to its end at 200 s:
    #   200 + 200 + 200 + J0's 300 = 900 s.
    def j0_left(sim: object, n: int) -> float:
        jobs = sim.jobs  # type: ignore[attr-defined]
        return float(jobs.total_iterations[0] - jobs.iterations_done[0])

    rules = ["fifo/pal", "srtf/pal", "srsf/pal"]
    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A), (1, 0.0, 200, A))
    halved = run_search_episode(episode, rules, fifo, H=None, estimate=j0_left,
                                arrivals="known", budget=6, halving=True)
    assert halved.stats.costs[0] == ((0, 700.0), (1, 700.0), (2, 600.0))
    assert halved.stats.choices[0] == 0
    equal = run_search_episode(episode, rules, fifo, H=None, estimate=j0_left,
                               arrivals="known", budget=6)
    assert equal.stats.costs[0] == ((0, 700.0), (1, 700.0), (2, 900.0))
