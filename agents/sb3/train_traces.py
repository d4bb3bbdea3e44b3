"""The traces and env kwargs of a training run (its training and evaluation envs).

``trace_set`` (set specs, :mod:`palgym.tracesets`) trains on their ``split`` and evaluates on
their ``eval_split``, each the union over the sets of their non-empty splits; ``trace`` /
``eval_trace`` name traces directly instead. Neither given: the ``bundled`` set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from palgym.errors import ConfigError
from palgym.tracesets import BUNDLED_SET, load_trace_set, split_specs


class TraceSettings(Protocol):
    """The fields of a run's settings that name its traces
    (:class:`agents.sb3.train_settings.TrainSettings` has them)."""

    @property
    def trace(self) -> str | Sequence[str] | None: ...
    @property
    def trace_set(self) -> Sequence[str]: ...
    @property
    def eval_trace(self) -> str | Sequence[str] | None: ...
    @property
    def split(self) -> str: ...
    @property
    def eval_split(self) -> str: ...
    @property
    def window(self) -> Any: ...
    @property
    def env_kwargs(self) -> Mapping[str, Any]: ...


TraceArg = str | Sequence[str]


def trace_sets_of(settings: TraceSettings) -> tuple[str, ...]:
    """The trace sets the run uses: ``trace_set``, or ``bundled`` when no trace is given.

    Raises:
        ConfigError: if both ``trace`` and ``trace_set`` are given.
    """
    if settings.trace is not None and settings.trace_set:
        raise ConfigError("give traces (--trace) or trace sets (--trace-set), not both")
    if settings.trace is None and not settings.trace_set:
        return (BUNDLED_SET,)
    return tuple(settings.trace_set)


def trace_of(settings: TraceSettings, evaluation: bool) -> TraceArg:
    """The env's ``trace`` kwarg: explicit traces, or the union of the sets' split.

    Raises:
        TraceSetError: for an unloadable set, or a split empty in every set.
    """
    if evaluation and settings.eval_trace:
        return settings.eval_trace
    sets = trace_sets_of(settings)
    if not sets:
        assert settings.trace is not None
        return settings.trace
    specs = split_specs(sets, settings.eval_split if evaluation else settings.split)
    return specs[0] if len(specs) == 1 else specs


def trace_set_hashes(settings: TraceSettings) -> dict[str, Any]:
    """``{set spec: {name, rule, members: {trace: sha256}, splits: {split: [trace ids]}}}`` of
    the run's trace sets (the training and evaluation splits only)."""
    described = {}
    for spec in trace_sets_of(settings):
        trace_set = load_trace_set(spec)
        used = dict.fromkeys((settings.split, settings.eval_split))
        described[spec] = {
            "name": trace_set.name, "rule": trace_set.rule,
            "members": {m.trace: m.sha256 for m in trace_set.members},
            "splits": {s: trace_set.labels(s) if trace_set.splits.get(s) else [] for s in used},
        }
    return described


def env_kwargs_of(settings: TraceSettings, evaluation: bool = False) -> dict[str, Any]:
    """Env kwargs of the training (or evaluation) env: trace, window, then ``env_kwargs``."""
    trace = trace_of(settings, evaluation)
    kwargs: dict[str, Any] = {"trace": trace if isinstance(trace, str) else list(trace)}
    if settings.window is not None:
        kwargs["window"] = settings.window
    kwargs.update(settings.env_kwargs)
    return kwargs
