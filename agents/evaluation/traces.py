"""The one trace resolver of the command lines: trace specs -> traces.

A spec is, tried in this order:

- a trace-set split ``SET:SPLIT`` (``bundled:test``, ``/data/sia_philly_pal:validation``,
  ``sets.json:train``; :mod:`palgym.tracesets`), or ``{"set": ..., "split": ...}``: the split's
  traces (an empty split gives none);
- ``bundled``: every bundled trace, in natural name order;
- the name of a bundled trace (``sia-philly-gen-0``);
- a trace file of any format of :data:`traces.TRACE_FORMATS` (``trace_format``, or detected
  from the header; Sia / PAL CSVs are read by :func:`palgym.io.read_sia_trace` and need no
  pandas), durations read as ``duration_unit`` (``iterations``, PAL's reading, or ``seconds``);
- a :class:`~palgym.sim.workload.Trace`, as it is.

These are the specs the env's ``trace`` argument takes (:mod:`palgym.envs.episodes`), plus the
other file formats. ``evaluate.py`` (``--trace``, ``--trace-set``, the bundled default) and
``train.py`` (``--trace``, checked before training) read traces through here only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.evaluation.defaults import DEFAULT_TRACE_SET
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError, TraceFormatError
from palgym.io.sia import has_sia_header, read_sia_trace
from palgym.sim.workload import Trace
from palgym.tracesets import load_trace_set, parse_split_spec

TraceSpec = str | Path | Trace | Mapping[str, str]
ALL_BUNDLED = "bundled"
"""The spec naming every bundled trace."""


def resolve_traces(
    specs: Sequence[TraceSpec],
    trace_format: str | None = None,
    duration_unit: str = "iterations",
) -> list[Trace]:
    """The traces ``specs`` name (see the module docstring), in order.

    Args:
        specs: trace specs.
        trace_format: format of the trace files (None: detected per file; ``sia``: the env's
            reader only).
        duration_unit: what the duration column counts (files and folder-rule sets).

    Returns:
        The traces, ids unique.

    Raises:
        ConfigError: for a spec that names nothing, no trace at all, or two traces with one id.
        TraceSetError: for an unloadable set or a changed member.
        TraceFormatError: naming file, line and field of a malformed file.
    """
    traces: list[Trace] = []
    seen: dict[str, str] = {}
    for spec in specs:
        for trace in _resolve_one(spec, trace_format, duration_unit):
            if trace.name in seen:
                raise ConfigError(
                    f"two traces are named {trace.name!r} ({seen[trace.name]} and {spec}): "
                    "trace ids are file stems and must be unique")
            seen[trace.name] = str(spec)
            traces.append(trace)
    if not traces:
        raise ConfigError(f"no trace in {[str(s) for s in specs]}")
    return traces


def split_of_sets(set_specs: Sequence[str], split: str, duration_unit: str = "iterations"
                  ) -> list[Trace]:
    """The union of ``split`` over the trace sets (sets where it is empty contribute nothing).

    Raises:
        ConfigError: if the split is empty in every set.
        TraceSetError: for an unloadable set or changed member.
    """
    traces: list[Trace] = []
    for spec in set_specs:
        traces.extend(_resolve_one({"set": spec, "split": split}, None, duration_unit))
    if not traces:
        raise ConfigError(f"split {split!r} is empty in every trace set {list(set_specs)}")
    return traces


def split_source(set_specs: Sequence[str] | None, split: str) -> tuple[list[str], str]:
    """The set specs (default :data:`~agents.evaluation.defaults.DEFAULT_TRACE_SET`) and the
    report's source text ``SET:SPLIT ...``."""
    sets = list(set_specs or [DEFAULT_TRACE_SET])
    return sets, " ".join(f"{spec}:{split}" for spec in sets)


def env_trace_arg(values: Sequence[str] | None) -> Any:
    """Trace specs for the env's ``trace`` kwarg: one spec as a string, several as a list
    (None for none), each checked now by reading it as the env will (:func:`resolve_traces`
    with the env's Sia reader), so a bad spec fails before any training starts.

    Raises:
        ConfigError, TraceSetError, TraceFormatError: as :func:`resolve_traces`.
    """
    if values is None:
        return None
    resolve_traces(list(values), trace_format="sia")
    return values[0] if len(values) == 1 else list(values)


def _resolve_one(spec: TraceSpec, trace_format: str | None, duration_unit: str
                 ) -> list[Trace]:
    if isinstance(spec, Trace):
        return [spec]
    split = None if isinstance(spec, Path) else parse_split_spec(spec)
    if split is not None:
        trace_set = load_trace_set(split[0], duration_unit)
        return trace_set.traces(split[1]) if trace_set.splits.get(split[1]) else []
    bundled = bundled_trace_paths()
    text = str(spec)
    if text == ALL_BUNDLED and not isinstance(spec, Path):
        return [read_sia_trace(path, duration_unit) for path in bundled.values()]
    if text in bundled and not isinstance(spec, Path):
        return [read_sia_trace(bundled[text], duration_unit)]
    if isinstance(spec, Mapping) or not (Path(spec).exists() or _looks_like_a_path(text)):
        raise ConfigError(
            f"trace {text!r} is neither a file nor a bundled trace ({', '.join(bundled)}, or "
            f"'{ALL_BUNDLED}') nor a trace-set split ('<set>:<split>', e.g. 'bundled:test')")
    return [read_trace_file(spec, trace_format, duration_unit)]


def _looks_like_a_path(text: str) -> bool:
    """True for a spec written as a file path (a folder part or a suffix): its reader then
    names the file that cannot be read."""
    path = Path(text)
    return bool(path.suffix) or path.parent != Path(".")


def read_trace_file(path: str | Path, trace_format: str | None = None,
                    duration_unit: str = "iterations") -> Trace:
    """One trace file: a Sia / PAL CSV by palgym's reader, any other format of
    :data:`traces.TRACE_FORMATS` by :func:`traces.load_trace` (``trace_format``, or detected
    from the header; a header no format matches is read as Sia, whose reader names the
    missing column).

    Raises:
        TraceFormatError: naming file, line and field.
        ConfigError: for an unknown ``trace_format``.
    """
    if trace_format in (None, "sia") and has_sia_header(path):
        return read_sia_trace(path, duration_unit)
    name = trace_format
    if name is None:
        from traces import detect_format

        try:
            name = detect_format(path)
        except TraceFormatError:
            name = "sia"
    if name == "sia":
        return read_sia_trace(path, duration_unit)
    from traces import load_trace

    return load_trace(path, name, duration_unit=duration_unit)
