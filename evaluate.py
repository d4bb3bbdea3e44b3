"""Evaluate heuristic schedulers (queue order x placement) and learned agents on job traces.

**Heuristics** (no ``--agent``, ``--env``, ``--trace-set`` or ``--seeds``): runs every
placement (default: all six) under every queue order (default: FIFO) on one episode per trace
(default: the traces bundled in ``palgym/data/traces``), prints a table of JCT,
makespan, utilization and the improvement over a baseline (default: Packed-Sticky), the geomean
improvement across traces (PAL, SC24, Figure 10 style) and each trace's episode hash.

**Side by side** (any of ``--agent``, ``--env``, ``--trace-set``, ``--seeds``): learned
agents and heuristics act through the env on identical episodes (every trace of the chosen
split, whole, once per seed; default: the ``bundled`` set's ``test`` split, seed ``--seed``).
Prints per-episode results, then per policy the geomean avg-JCT ratio vs PAL and vs the
baseline with paired percentile bootstrap intervals and the invalid-action count; ``--output``
(per-episode CSV), ``--summary-output`` (per-policy CSV) and ``--json`` are written atomically,
``--plot DIR`` adds JCT CDFs, normalised bars and learning curves. The logic lives in
:mod:`agents.side_by_side` (torch and SB3 load only for ``--agent``).

**Best heuristic** (``--best-heuristic``): every ``--queue-order`` x ``--policy`` x
``--backfill`` (default: all) on the trace sets' ``--selection-split`` (default validation) and
``--split``; the combination with the lowest geomean avg JCT on the former is reported on the
latter (:mod:`agents.best_heuristic`). ``--backfill`` also crosses ``--policy`` in the
heuristic table (``pal+backfill`` first-fit, ``pal+easy`` EASY).

Examples::

    python evaluate.py
    python evaluate.py --trace workload-1.csv --preset pal-artifact \\
        --variability-data /path/to/variability/longhorn_pal --output results.csv --plot figures
    python evaluate.py --agent runs/palgym_PALPlacement-v0_maskable_ppo_0/model.zip \\
        --trace-set bundled --split test --seeds 0 1 2 --output episodes.csv --json results.json

``--workers N`` (a local process pool) or ``--ray [ADDRESS]`` (Ray tasks) run a sweep's
heuristic episodes in parallel, output byte-identical to the serial run (:mod:`agents.parallel`).

Exit codes: 0 on success, 2 on bad arguments or bad input files (``error: <message>``).
The logic lives in :mod:`palgym.report`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.evaluate_args import build_parser, duration_kwargs
from palgym.errors import ConfigError, PalgymError, TraceFormatError
from palgym.io import read_profile
from palgym.io.pipes import run_cli
from palgym.io.sia import has_sia_header, read_sia_trace
from palgym.plots import require_matplotlib, write_plots
from palgym.policies import PLACEMENT_NAMES
from palgym.policies.backfill import with_backfill
from palgym.policies.durations import DEFAULT_ESTIMATE_SIGMA, Durations, parse_knowledge
from palgym.progress import SweepProgress
from palgym.report import (
    Evaluation,
    EvaluationSetup,
    evaluate,
    find_trace_files,
    load_traces,
    policies_to_run,
)
from palgym.report_output import format_report, write_results_csv, write_results_json
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.workload import Trace
from palgym.simulate import EpisodeResult
from palgym.sweep import Runner

EXIT_USAGE = 2


def _setup(args: argparse.Namespace) -> EvaluationSetup:
    overrides: dict[str, Any] = {}
    if args.locality_penalty is not None:
        overrides["locality_penalty"] = args.locality_penalty
    if args.round_duration is not None:
        overrides["round_duration_s"] = args.round_duration
    return EvaluationSetup(
        cluster=args.cluster or ClusterSpec(),
        config=preset(args.preset or "default", **overrides),
        profile=read_profile(args.profile) if args.profile is not None else None,
        variability_data=args.variability_data,
        seed=args.seed,
        durations=Durations(parse_knowledge(args.duration_knowledge or "clairvoyant"),
                            DEFAULT_ESTIMATE_SIGMA if args.estimate_sigma is None
                            else args.estimate_sigma),
        belief=args.belief or "oracle",
    )


def _runner(args: argparse.Namespace) -> Runner:
    """The serial runner (with a bar per long episode), a process pool or Ray."""
    from agents.parallel import make_runner

    return make_runner(args.workers, args.ray, episode_bars=not args.quiet)


def _load_traces(paths: Sequence[str | Path], duration_unit: str,
                 trace_format: str | None = None) -> list[Trace]:
    """Read trace files (the one place evaluate.py reads traces from paths).

    Sia / PAL CSV files are read by palgym's own reader (``duration_unit``: ``iterations`` or
    ``seconds``); any other format of :data:`traces.TRACE_FORMATS` (``trace_format``, or
    detected from the header when None) by :func:`traces.load_trace`.

    Raises:
        TraceFormatError: naming file, line and field.
        ConfigError: for duplicate trace ids or an unknown ``trace_format``.
    """
    if trace_format in (None, "sia") and all(has_sia_header(path) for path in paths):
        return load_traces(paths, duration_unit)
    from traces import detect_format, load_trace

    def read(path: str | Path, unit: str) -> Trace:
        name = trace_format
        if name is None:
            try:
                name = detect_format(path)
            except TraceFormatError:
                name = "sia"  # no format matches: palgym's reader names the missing column
        if name == "sia":
            return read_sia_trace(path, unit)
        return load_trace(path, name, duration_unit=unit)

    return load_traces(paths, duration_unit, reader=read)


def _run_all(args: argparse.Namespace, setup: EvaluationSetup) -> Evaluation:
    traces = _load_traces(args.trace or find_trace_files(), args.duration_unit,
                          args.trace_format)
    policies = policies_to_run([with_backfill(name, mode) for mode in args.backfill or ["none"]
                                for name in args.policy or PLACEMENT_NAMES], args.baseline)
    orders = list(dict.fromkeys(args.queue_order or ["fifo"]))
    runner = _runner(args)
    bar = SweepProgress(len(traces) * len(orders) * len(policies), enabled=not args.quiet)

    def step(_result: EpisodeResult) -> None:
        bar.update(1)

    try:
        return evaluate(traces, policies, orders, setup, args.baseline, on_result=step,
                        runner=runner)
    finally:
        bar.close()


def _side_by_side_mode(args: argparse.Namespace) -> bool:
    return bool(args.agent or args.env or args.trace_set or args.seeds or args.best_heuristic
                or args.planner)


def _episode_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Env kwargs the command line sets for every policy (only those given)."""
    orders = list(dict.fromkeys(args.queue_order or []))
    if args.belief is not None:
        raise ConfigError("--belief applies to the heuristic table only (no --agent, --env, "
                          "--trace-set or --seeds)")
    if len(orders) > 1 or args.backfill:
        raise ConfigError("side-by-side evaluation runs one queue order and no --backfill; "
                          "several of each: --best-heuristic")
    given = {
        "preset": args.preset, "queue_order": orders[0] if orders else None,
        "cluster": (f"{args.cluster.num_nodes}x{args.cluster.gpus_per_node}"
                    if args.cluster is not None else None),
        "locality_penalty": args.locality_penalty, "round_duration_s": args.round_duration,
        "window": args.window,
        "profile": str(args.profile) if args.profile is not None else None,
        "variability_data": (str(args.variability_data) if args.variability_data is not None
                             else None),
        **duration_kwargs(args),
    }
    return {key: value for key, value in given.items() if value is not None}


def _side_by_side_traces(args: argparse.Namespace) -> tuple[list[Trace], str]:
    from agents.side_by_side import set_split_traces

    if args.trace and args.trace_set:
        raise ConfigError("give --trace or --trace-set, not both")
    if args.trace:
        return (_load_traces(args.trace, args.duration_unit, args.trace_format),
                " ".join(args.trace))
    sets = args.trace_set or ["bundled"]
    source = " ".join(f"{spec}:{args.split}" for spec in sets)
    return set_split_traces(sets, args.split, args.duration_unit), source


def _env_id(args: argparse.Namespace) -> str:
    if args.env:
        return str(args.env)
    if args.agent:
        from agents.evaluation import learned_api
        from agents.side_by_side import DEFAULT_ENV_ID

        _, model_config, resolve_model_path = learned_api()
        first = resolve_model_path(args.agent[0], DEFAULT_ENV_ID)
        return str(model_config(first).get("env_id", DEFAULT_ENV_ID))
    return "palgym/PALPlacement-v0"


def _note_whole_trace_windows(window: int | None, traces: Sequence[Trace]) -> None:
    """Say once which traces a ``--window`` covers whole (it is not shorter than them)."""
    whole = [f"{t.name} ({t.num_jobs} jobs)" for t in traces
             if window is not None and window >= t.num_jobs]
    if whole:
        logging.getLogger("evaluate").warning(
            "--window %d is not shorter than %s: each such episode is the whole trace",
            window, ", ".join(whole))


def _run_side_by_side(args: argparse.Namespace) -> list[Path]:
    """Learned agents and heuristics on identical episodes; returns the files written."""
    from agents.evaluation_report import format_comparison, write_outputs
    from agents.parallel import check_parallel_contenders
    from agents.side_by_side import SideBySide, run_side_by_side

    check_parallel_contenders(args.workers, args.ray, args.agent or (), args.heuristics_via)
    runner = _runner(args)
    env_id = _env_id(args)  # checks the train extra first when there are agents
    if args.agent and args.num_threads > 0:
        import torch

        torch.set_num_threads(args.num_threads)
    traces, source = _side_by_side_traces(args)
    _note_whole_trace_windows(args.window, traces)
    request = SideBySide(
        env_id=env_id, agents=tuple(dict.fromkeys(args.agent or [])),
        heuristics=tuple(args.policy or PLACEMENT_NAMES), traces=tuple(traces),
        trace_source=source, seeds=tuple(args.seeds or [args.seed]),
        overrides=_episode_overrides(args), reference=args.reference, baseline=args.baseline,
        confidence=args.confidence, resamples=args.bootstrap_resamples,
        bootstrap_seed=args.bootstrap_seed, bootstrap_unit=args.bootstrap_unit,
        device=args.device,
        heuristics_via=args.heuristics_via, planners=tuple(args.planner or ()),
    )
    heuristics = {*policies_to_run(request.heuristics, request.baseline), request.reference}
    episodes = len(request.agents) + len(request.planners) + len(heuristics)
    bar = SweepProgress(len(traces) * len(request.seeds) * episodes, enabled=not args.quiet)
    try:
        comparison = run_side_by_side(request, on_episode=lambda _outcome: bar.update(1),
                                      runner=runner)
    finally:
        bar.close()
    print(format_comparison(comparison))
    if request.planners:
        from agents.planner import format_planner_costs

        print(format_planner_costs(comparison.contenders, comparison.outcomes))
    written = write_outputs(comparison, args.output, args.summary_output, args.json)
    if args.plot is not None:
        from agents.evaluation_plots import write_plots as write_side_by_side_plots

        written.extend(write_side_by_side_plots(comparison, args.plot))
    return written


def _run_best(args: argparse.Namespace) -> list[Path]:
    """The best heuristic combination, chosen on one split and measured on another."""
    from agents.best_heuristic import run_from_args

    return run_from_args(args)


def run(args: argparse.Namespace) -> int:
    """Run the evaluation described by parsed arguments, print it and write the outputs.

    Raises:
        PalgymError: for bad input files, options or a missing plotting dependency.
        OSError: if an output cannot be written.
    """
    if args.plot is not None:
        require_matplotlib()  # fail before hours of simulation, not after
    if args.render:
        from agents.enjoy import replay_from_args

        return replay_from_args(args, _episode_overrides(args))
    if _side_by_side_mode(args):
        for path in _run_best(args) if args.best_heuristic else _run_side_by_side(args):
            if not args.quiet:
                print(f"wrote {path}")
        return 0
    evaluation = _run_all(args, _setup(args))
    print(format_report(evaluation))
    for path in _write_heuristic_outputs(args, evaluation):
        if not args.quiet:
            print(f"wrote {path}")
    return 0


def _write_heuristic_outputs(args: argparse.Namespace, evaluation: Evaluation) -> list[Path]:
    """Write the heuristic table's CSV, JSON and plots that ``args`` asks for; their paths."""
    written: list[Path] = []
    if args.output is not None:
        written.append(write_results_csv(evaluation, args.output))
    if args.json is not None:
        written.append(write_results_json(evaluation, args.json))
    if args.plot is not None:
        written.extend(write_plots(evaluation, args.plot))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv``, run, and turn palgym errors into ``error: ...`` (exit 2)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        return run(args)
    except PalgymError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run_cli(main))
