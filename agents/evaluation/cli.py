"""The logic of ``evaluate.py``: parsed arguments -> one evaluation -> its report.

Three requests, one path. :func:`evaluation_of` runs what the arguments ask for and returns its
result; :func:`~agents.evaluation.report.format_result` is printed and
:func:`~agents.evaluation.report.write_result` writes ``--output``, ``--summary-output``,
``--json`` and ``--plot``:

- **the heuristic table** (no ``--agent``, ``--env``, ``--env-kwargs``, ``--trace-set``,
  ``--seeds``, ``--planner`` or ``--best-heuristic``): every ``--policy`` x ``--backfill``
  under every ``--queue-order`` on one episode per trace at ``--seed``, the comparison with no
  learned contender (:func:`agents.evaluation.comparison.heuristic_table`);
- **side by side**: learned agents, planners and heuristics (any ``[ORDER/]PLACEMENT[+SUFFIX]``
  name, :mod:`agents.evaluation.names`, and ``best``, chosen on ``--selection-split`` by
  :mod:`agents.evaluation.best_contender`) on the env's identical episodes
  (:func:`agents.evaluation.comparison.run_side_by_side`);
- **the best heuristic** (``--best-heuristic``): the field chosen on ``--selection-split``,
  measured on ``--split`` (:func:`agents.evaluation.best.run_best`).

Traces come from the one resolver (:mod:`agents.evaluation.traces`), defaults from
:mod:`agents.evaluation.defaults`; heuristic episodes run through one
:data:`palgym.sweep.Runner` (serial, ``--workers`` or ``--ray``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agents.evaluation.args import build_parser, episode_overrides
from agents.evaluation.defaults import (
    BEST_HEURISTIC_ENV_ID,
    DEFAULT_BELIEF,
    DEFAULT_DURATION_KNOWLEDGE,
    DEFAULT_ENV_ID,
    DEFAULT_PRESET,
    DEFAULT_QUEUE_ORDER,
)
from agents.evaluation.names import (
    BEST,
    load_user_classes,
    parse_heuristic,
    sort_contenders,
    table_name,
    table_policies,
)
from agents.evaluation.traces import ALL_BUNDLED, resolve_traces, split_of_sets, split_source
from palgym.errors import ConfigError, PalgymError
from palgym.io import check_destination, read_profile
from palgym.plots import require_matplotlib
from palgym.policies import (
    PLACEMENT_NAMES,
)
from palgym.policies.durations import DEFAULT_ESTIMATE_SIGMA, Durations, parse_knowledge
from palgym.progress import SweepProgress
from palgym.report import Evaluation, EvaluationSetup, policies_to_run
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.workload import Trace
from palgym.sweep import Runner

EXIT_USAGE = 2
logger = logging.getLogger("evaluate")


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


def run(args: argparse.Namespace) -> int:
    """Run the evaluation described by parsed arguments, print it and write the outputs.

    Raises:
        PalgymError: for bad input files, options, policy classes (``MODULE:CLASS``), output
            paths that could not be written or a missing plotting dependency (all checked
            before anything runs).
        OSError: if an output cannot be written after all (e.g. a full disk).
    """
    from agents.evaluation.report import Outputs, format_result, write_result

    check_outputs(args)  # fail before hours of simulation, not after
    sort_contenders(args)  # --policy / --agent specs -> the list of their kind
    load_user_classes(args)  # MODULE:CLASS names -> the names their classes register
    if args.plot is not None:
        require_matplotlib()
    if args.render:
        from agents.evaluation.enjoy import replay_from_args

        if args.selector:
            raise ConfigError(f"--render replays a contender stepping the env; rule selector "
                              f"{args.selector[0]} runs on the engine's rule selection: "
                              "evaluate it without --render")

        return replay_from_args(args, episode_overrides(args))
    result = evaluation_of(args)
    print(format_result(result))
    if isinstance(result, Evaluation):
        print(f"\nepisode seed {args.seed} (--seed: in the heuristic table the episode seed "
              "itself; side by side, --seed / --seeds are env reset seeds, each drawing the "
              "episode seed printed beside its hash)")
    outputs = Outputs(csv=args.output, summary_csv=args.summary_output, json=args.json,
                      plots=args.plot)
    for path in write_result(result, outputs):
        if not args.quiet:
            print(f"wrote {path}")
    return 0


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse ``--output``, ``--summary-output``, ``--json`` or ``--plot`` paths that could not
    be written (a folder given for a file, an unwritable folder), before anything runs.

    Raises:
        ConfigError: naming the argument and the path (:func:`palgym.io.check_destination`).
    """
    for path, argument in ((args.output, "--output"), (args.summary_output, "--summary-output"),
                           (args.json, "--json")):
        if path is not None:
            check_destination(path, argument)
    if args.plot is not None:
        check_destination(args.plot, "--plot", folder=True)


def evaluation_of(args: argparse.Namespace) -> Any:
    """The result of the evaluation ``args`` ask for (see the module docstring).

    Raises:
        PalgymError: for bad names, options, models or trace files.
    """
    if args.best_heuristic:
        return _best_heuristic(args)
    if side_by_side_mode(args):
        return _side_by_side(args)
    return _heuristic_table(args)


def side_by_side_mode(args: argparse.Namespace) -> bool:
    """True when the arguments ask for contenders on the env's episodes."""
    return bool(args.agent or args.env or args.trace_set or args.seeds or args.best_heuristic
                or args.planner or args.env_kwargs or getattr(args, "selector", None))


def runner_of(args: argparse.Namespace) -> Runner:
    """The serial runner (with a bar per long episode), a process pool or Ray."""
    from agents.evaluation.parallel import make_runner

    return make_runner(args.workers, args.ray, episode_bars=not args.quiet)


def _with_bar(total: int, quiet: bool, body: Callable[[Callable[[Any], None]], Any]) -> Any:
    """``body(step)`` under a sweep progress bar of ``total`` steps (drawn on a terminal)."""
    bar = SweepProgress(total, enabled=not quiet)
    try:
        return body(lambda _item: bar.update(1))
    finally:
        bar.close()


# --------------------------------------------------------------------------- the heuristic table
def table_setup(args: argparse.Namespace) -> EvaluationSetup:
    """What every run of the heuristic table shares."""
    overrides: dict[str, Any] = {}
    if args.locality_penalty is not None:
        overrides["locality_penalty"] = args.locality_penalty
    if args.round_duration is not None:
        overrides["round_duration_s"] = args.round_duration
    knowledge = parse_knowledge(args.duration_knowledge or DEFAULT_DURATION_KNOWLEDGE)
    sigma = DEFAULT_ESTIMATE_SIGMA if args.estimate_sigma is None else args.estimate_sigma
    return EvaluationSetup(
        cluster=args.cluster or ClusterSpec(),
        config=preset(args.preset or DEFAULT_PRESET, **overrides),
        profile=read_profile(args.profile) if args.profile is not None else None,
        variability_data=args.variability_data, seed=args.seed,
        durations=Durations(knowledge, sigma), belief=args.belief or DEFAULT_BELIEF,
    )


def _heuristic_table(args: argparse.Namespace) -> Evaluation:
    from agents.evaluation.comparison import heuristic_table

    setup = table_setup(args)
    traces = resolve_traces(args.trace or [ALL_BUNDLED], args.trace_format, args.duration_unit)
    policies = policies_to_run(table_policies(args), table_name(args.baseline, "--baseline"))
    orders = list(dict.fromkeys(args.queue_order or [DEFAULT_QUEUE_ORDER]))
    runner = runner_of(args)
    return _with_bar(len(traces) * len(orders) * len(policies), args.quiet,
                     lambda step: heuristic_table(traces, policies, orders, setup,
                                                  args.baseline, on_result=step,
                                                  runner=runner))


# --------------------------------------------------------------------------- side by side
def _comparison_traces(args: argparse.Namespace) -> tuple[list[Trace], str]:
    if args.trace and args.trace_set:
        raise ConfigError("give --trace or --trace-set, not both")
    if args.trace:
        return (resolve_traces(args.trace, args.trace_format, args.duration_unit),
                " ".join(args.trace))
    sets, source = split_source(args.trace_set, args.split)
    return split_of_sets(sets, args.split, args.duration_unit), source


def _env_id(args: argparse.Namespace) -> str:
    if args.env:
        from agents.ids import check_env_id

        check_env_id(args.env, "--env")
        return str(args.env)
    if args.agent:
        from agents.evaluation.contenders import learned_api

        _, model_config, resolve_model_path = learned_api()
        first = resolve_model_path(args.agent[0], DEFAULT_ENV_ID)
        return str(model_config(first).get("env_id", DEFAULT_ENV_ID))
    return DEFAULT_ENV_ID


def _with_checkpoints(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with each run-folder ``--agent`` replaced by its checkpoint, each named on
    stderr with its windows (:mod:`agents.evaluation.checkpoints`)."""
    from agents.evaluation.checkpoints import checkpoint_notes, chosen_checkpoint
    from agents.evaluation.contenders import learned_api

    if not args.agent:
        return args
    given = list(args.agent)
    chosen = [chosen_checkpoint(spec, args.last) for spec in given]
    if args.last:  # a folder's label becomes its model.zip; else the folder resolves to its best
        args.agent = chosen
    _, model_config, resolve_model_path = learned_api()

    def config_of(spec: str) -> dict[str, Any]:
        return dict(model_config(resolve_model_path(spec, DEFAULT_ENV_ID)))

    for line in checkpoint_notes(given, chosen, args.window, config_of):
        print(f"note: {line}", file=sys.stderr)
    return args


def _note_whole_trace_windows(window: int | None, traces: Sequence[Trace]) -> None:
    """Say once which traces a ``--window`` covers whole (it is not shorter than them)."""
    whole = [f"{t.name} ({t.num_jobs} jobs)" for t in traces
             if window is not None and window >= t.num_jobs]
    if whole:
        logger.warning("--window %d is not shorter than %s: each such episode is the whole "
                       "trace", window, ", ".join(whole))


def _side_by_side(args: argparse.Namespace) -> Any:
    from agents.evaluation.best_contender import resolve_best
    from agents.evaluation.comparison import SideBySide, heuristic_names, run_side_by_side
    from agents.evaluation.parallel import check_parallel_contenders

    check_parallel_contenders(args.workers, args.ray, args.agent or (), args.heuristics_via)
    runner = runner_of(args)
    env_id = _env_id(_with_checkpoints(args))  # checks the train extra first with agents
    if args.agent and args.num_threads > 0:
        import torch

        torch.set_num_threads(args.num_threads)
    traces, source = _comparison_traces(args)
    _note_whole_trace_windows(args.window, traces)
    seeds, overrides = tuple(args.seeds or [args.seed]), episode_overrides(args)
    choice, (heuristics, reference, baseline) = resolve_best(
        args, [*(args.policy or PLACEMENT_NAMES)], env_id, overrides, traces, seeds, runner)
    request = SideBySide(
        env_id=env_id, agents=tuple(dict.fromkeys(args.agent or [])),
        heuristics=tuple(heuristics), traces=tuple(traces),
        trace_source=source, seeds=seeds,
        overrides=overrides, reference=reference, baseline=baseline,
        confidence=args.confidence, resamples=args.bootstrap_resamples,
        bootstrap_seed=args.bootstrap_seed, bootstrap_unit=args.bootstrap_unit,
        device=args.device, heuristics_via=args.heuristics_via,
        planners=tuple(args.planner or ()), trust_model=args.trust_model,
        selectors=tuple(dict.fromkeys(getattr(args, "selector", None) or [])),
    )
    per_episode = (len(request.agents) + len(request.selectors) + len(request.planners)
                   + len(heuristic_names(request)))
    comparison = _with_bar(len(traces) * len(request.seeds) * per_episode, args.quiet,
                           lambda step: run_side_by_side(request, on_episode=step,
                                                         runner=runner))
    return comparison if choice is None else dataclasses.replace(comparison,
                                                                 best_heuristic=choice)


# --------------------------------------------------------------------------- best heuristic
def _best_heuristic(args: argparse.Namespace) -> Any:
    """``--best-heuristic``: choose on ``--selection-split`` of ``--trace-set`` (default
    ``bundled``), measure on ``--split``.

    Raises:
        ConfigError: with ``--agent``, ``--trace`` or ``--belief``, or equal splits.
    """
    from agents.evaluation.best import field_of_names, run_best
    from agents.evaluation.best_contender import check_selection_split, default_field

    if args.agent or args.trace or args.planner or getattr(args, "selector", None):
        raise ConfigError("--best-heuristic compares heuristics on trace-set splits: give "
                          "--trace-set (not --trace) and no --agent (a model, a selector) or "
                          f"--planner; to run the choice beside them: --policy {BEST}")
    if args.belief is not None:
        raise ConfigError("--belief applies to the heuristic table only (the env's heuristics "
                          "decide on the truth): leave it out with --best-heuristic")
    check_selection_split(args.selection_split, args.split)
    sets, selection_source = split_source(args.trace_set, args.selection_split)
    _, evaluation_source = split_source(args.trace_set, args.split)
    splits = {"selection": split_of_sets(sets, args.selection_split, args.duration_unit),
              "evaluation": split_of_sets(sets, args.split, args.duration_unit)}
    sources = {"selection": selection_source, "evaluation": evaluation_source}
    if args.best_field:
        if args.queue_order or args.policy or args.backfill:
            raise ConfigError("--best-field names the field's combinations: leave out "
                              "--queue-order, --policy and --backfill")
        field = field_of_names(args.best_field, "--best-field")
    else:
        placements = [table_name(text, "--policy") for text in args.policy or []]
        if any(parse_heuristic(p).backfill != "none" for p in placements):
            raise ConfigError("--best-heuristic crosses --policy with --backfill: give "
                              "placements without a backfill suffix")
        field, note = default_field(args.queue_order, placements, args.backfill,
                                    args.duration_knowledge,
                                    args.env or BEST_HEURISTIC_ENV_ID)
        if note:
            print(note)
    if args.env:
        from agents.ids import check_env_id

        check_env_id(args.env, "--env")
    return run_best(args.env or BEST_HEURISTIC_ENV_ID, episode_overrides(args, queue_order=False),
                    field, splits, sources, tuple(args.seeds or [args.seed]),
                    runner=runner_of(args))

