"""A rule selector as a side-by-side contender (``evaluate.py --agent selector:PATH`` or
``selector:pretrained:NAME``; the grammar: :mod:`palgym.policies.contender_spec`).

A rule selector (:class:`agents.selection.selector.LinearSelector`) picks, at the first round
and at every round with an event, which rule ``ORDER/PLACEMENT[+SUFFIX]`` of its field
schedules the cluster. Its rules differ in queue order, which one env fixes, so it runs on the
engine's rule selection (:func:`palgym.rule_selection.run_selected_episode`), as in
``palgym bench run --agent selector:...`` (:mod:`palgym.bench.selector_entry`): on each
(trace, seed) the episode the env draws (:func:`agents.evaluation.direct.env_episodes`: the
same episode hash as every other contender's), with the env's duration knowledge. The
outcome's ``num_steps`` is the number of times the selector was asked, ``actions`` the rule
index it chose each time, ``decision_time_s`` the wall seconds spent in it; ``episode_return``
is the ``jct`` reward's (minus the censored JCT sum over the reward scale), as a direct
heuristic's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any, cast

from agents.evaluation.contenders import Contender
from agents.rollout import EpisodeOutcome
from palgym.policies.contender_spec import parse_contender
from palgym.sim.workload import Trace


@dataclass(frozen=True)
class SelectorAgent:
    """A loaded rule selector in a :class:`Contender`'s ``agent`` place: its ``name`` (the
    spec) and the loaded file (:class:`palgym.bench.selector_entry.LoadedSelector`)."""

    name: str
    loaded: Any


def selector_contender(text: str, base_kwargs: Mapping[str, Any],
                       trust_model: bool = False) -> Contender:
    """A contender of kind ``selector`` for spec ``text``, on the episode kwargs
    ``base_kwargs``.

    Args:
        text: ``selector:PATH`` or ``selector:pretrained:NAME``.
        base_kwargs: the episode kwargs (as a heuristic's).
        trust_model: import the modules the file's rules name (``MODULE:CLASS``); without it
            such a rule is refused (importing a module runs its code).

    Raises:
        ConfigError: naming the spec or file, for a bad spec, a missing file or one that is
            not a selector.
    """
    from agents.selection.entry import load_selector
    from palgym.policies.loader import no_user_imports

    spec = parse_contender(text, "--agent")
    with nullcontext() if trust_model else no_user_imports(
            "a selector file's rules import no module (importing a module runs its code); "
            "pass --trust-model if you trust the file and the module"):
        loaded = load_selector(spec)
    agent = cast(Any, SelectorAgent(text, loaded))
    return Contender(text, "selector", agent, dict(base_kwargs), model_path=str(loaded.path),
                     model_size_bytes=loaded.path.stat().st_size)


def run_selector_contender(env_id: str, contender: Contender, traces: Sequence[Trace],
                           seeds: Sequence[int],
                           on_episode: Callable[[EpisodeOutcome], None] | None = None
                           ) -> list[EpisodeOutcome]:
    """The selector's outcomes on every (trace, seed) episode of the env, trace-major
    (module docstring).

    Raises:
        ConfigError: for a rule the env's duration knowledge cannot run (SRTF under
            ``unknown``), or a rebuilt episode whose hash differs from the env's.
    """
    from agents.evaluation.direct import env_episodes, outcome_of
    from palgym.bench.selector_entry import TimedSelector
    from palgym.rule_selection import run_selected_episode

    agent: SelectorAgent = cast(Any, contender.agent)
    loaded = agent.loaded
    outcomes = []
    for drawn in env_episodes(env_id, contender.env_kwargs, traces, seeds):
        timed = TimedSelector(loaded.select)
        done = run_selected_episode(drawn.episode, loaded.rules, timed, drawn.durations)
        outcome = outcome_of(contender.label, drawn.info, done.result, drawn.reward_scale,
                             drawn.window_start)
        outcome = replace(outcome, num_steps=int(done.choices), actions=tuple(timed.choices),
                          decision_time_s=timed.seconds)
        outcomes.append(outcome)
        if on_episode is not None:
            on_episode(outcome)
    return outcomes
