"""The command-line arguments of ``evaluate.py``, kept apart from its logic (defaults from
:mod:`agents.evaluation.defaults`), and the env kwargs they set for every contender
(:func:`episode_overrides`).

Imports only palgym's core, so ``python evaluate.py --help`` needs neither pandas' loaders nor
the ``train`` extra.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from agents.evaluation.defaults import (
    BOOTSTRAP_UNITS,
    DEFAULT_BASELINE,
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_CONFIDENCE,
    DEFAULT_DEVICE,
    DEFAULT_REFERENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SELECTION_SPLIT,
    DEFAULT_SPLIT,
    HEURISTICS_VIA,
    SPLIT_NAMES,
)
from agents.evaluation.names import BEST, contender_arg, heuristic_arg
from palgym.errors import ConfigError
from palgym.policies import BACKFILL_MODES, PLACEMENT_NAMES, QUEUE_ORDER_NAMES, queue_order_name
from palgym.policies.belief import BELIEF_NAMES
from palgym.policies.durations import DEFAULT_ESTIMATE_SIGMA, DURATION_KNOWLEDGE_NAMES
from palgym.policies.loader import SPEC_SEPARATOR
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import PRESETS

TRACE_FORMAT_NAMES = ("canonical", "sia", "pollux", "philly", "helios", "alibaba")
"""The formats of :func:`traces.load_trace` (kept here so that --help needs no pandas import;
a test checks it equals :data:`traces.TRACE_FORMATS`)."""


def _cluster(text: str) -> ClusterSpec:
    try:
        return ClusterSpec.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bounded(kind: type, name: str, low: float, strict: bool = False) -> Any:
    """An argparse type: ``kind(text)``, which must be > ``low`` (``strict``) or >= ``low``."""
    relation = ">" if strict else ">="
    name = f"{name} " if name else ""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name}must be {'an integer' if kind is int else 'a number'} {relation} "
                f"{low:g}, got {text!r}") from None
        if not (value > low if strict else value >= low):
            raise argparse.ArgumentTypeError(f"{name}must be {relation} {low:g}, got {text}")
        return value

    return parse


def open_unit_interval(name: str) -> Any:
    """An argparse type: a number in (0, 1), refused by argparse whatever else runs."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be a number in (0, 1), got {text!r}")
        return value

    return parse


def positive_int(name: str) -> Any:
    """An argparse type: an integer >= 1, else ``"{name} must be a positive integer, got X"``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be a positive integer, got {text!r}")
        return value

    return parse


def non_negative_int(name: str) -> Any:
    """An argparse type: an integer >= 0 (``"{name} must be >= 0, got X"``)."""
    return _bounded(int, name, 0)


def queue_order_arg(text: str) -> str:
    """An argparse ``type``: a registered queue order's name, or a user's ``MODULE:CLASS`` as
    it is (imported after parsing: :func:`agents.evaluation.names.load_user_classes`)."""
    if SPEC_SEPARATOR in text:
        return text
    try:
        return queue_order_name(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(
        prog="evaluate.py",
        description="Evaluate queue order x placement heuristics on job traces (palgym).",
    )
    add = parser.add_argument
    add("--trace", nargs="+", action="extend", metavar="PATH",
        help="trace file(s) of any --trace-format, bundled trace names, 'bundled' or SET:SPLIT "
             "(default: every bundled trace; side by side: the bundled set's --split)")
    add("--policy", nargs="+", action="extend", type=contender_arg(),
        metavar="NAME",
        help=f"placement(s) to run (default: all): {', '.join(PLACEMENT_NAMES)}, or your "
             "class as MODULE:CLASS (e.g. mypkg.mymodule:MyPlacement, imported and "
             "registered); side by side any heuristic [ORDER/]PLACEMENT[+backfill|+easy] "
             f"(e.g. srsf/pal+backfill, las/pm-first+easy) or '{BEST}', the --best-field "
             "combination chosen on --selection-split. Any contender spec is taken (as in "
             "--agent and palgym bench run --agent: a model, selector:PATH, planner:SPEC, "
             "a guard BASE+age=Hh:ORDER/ALT), docs/EVALUATING.md")
    add("--queue-order", nargs="+", action="extend", type=queue_order_arg, metavar="NAME",
        help=f"queue order(s) (default: fifo; --best-heuristic: all): "
             f"{', '.join(QUEUE_ORDER_NAMES)}, or your class as MODULE:CLASS")
    add("--backfill", nargs="+", action="extend", choices=BACKFILL_MODES, metavar="MODE",
        help="backfill mode(s) crossed with --policy, named NAME+backfill (first-fit) and "
             "NAME+easy (default: none; --best-heuristic: all): " + ", ".join(BACKFILL_MODES))
    add("--preset", choices=sorted(PRESETS), default=None,
        help="simulator preset (default: default; side by side: the first agent's)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--variability-data", type=Path, metavar="DIR",
                        help="PAL-style measurement folder (or its class-mapping .json) to "
                             "build the profile from")
    source.add_argument("--profile", type=Path, metavar="FILE",
                        help="per-GPU variability profile CSV (default: the bundled profile)")
    add("--cluster", type=_cluster, default=None, metavar="NxG",
        help="nodes x GPUs per node (default: 16x4; side by side: the first agent's)")
    add("--locality-penalty", type=_bounded(float, "", 1), metavar="LF",
        help="override the preset's locality penalty (>= 1; every preset uses 1.7)")
    add("--round-duration", type=_bounded(float, "", 0, strict=True), metavar="SECONDS",
        help="override the preset's round length (> 0; every preset uses 360)")
    add("--trace-format", choices=TRACE_FORMAT_NAMES, default=None,
        help="format of the --trace files (default: detected from each file's header): "
             + ", ".join(TRACE_FORMAT_NAMES))
    add("--duration-unit", choices=("iterations", "seconds"), default="iterations",
        help="what the traces' duration column counts (default: %(default)s, PAL's reading)")
    add("--seed", type=_bounded(int, "seed", 0), default=0,
        help="heuristic table: the episode seed itself (make_episode(seed=N)); side by side "
             "(no --seeds): the env's reset seed, env.reset(seed=N), which draws the episode "
             "seed printed beside each episode hash (>= 0; default: %(default)s)")
    add_duration_knowledge(add)
    add("--belief", choices=BELIEF_NAMES, default=None,
        help="heuristic table: what PAL / PM-First read (default: oracle, the truth)")
    add("--baseline", type=heuristic_arg("", allow_best=True), default=DEFAULT_BASELINE,
        metavar="NAME",
        help="placement the improvements are relative to (default: %(default)s; side by "
             f"side any heuristic name or '{BEST}', as --policy)")
    add("--output", type=Path, metavar="CSV", help="write the results CSV here (atomically)")
    add("--plot", type=Path, metavar="DIR", help="write JCT CDF and normalised-JCT PNGs here")
    add_env_kwargs(add, "env kwargs of every contender (side by side, through the env), as "
                        "train.py's, e.g. belief:stale 'belief:{mode: online, alpha: 0.5}' "
                        "max_rounds:1000000; giving it evaluates side by side")
    add("--quiet", action="store_true",
        help="no progress bars and no 'wrote' lines (bars are drawn on a terminal only)")
    _add_parallel(parser)
    _add_side_by_side(parser)
    return parser


def add_duration_knowledge(add: Any) -> None:
    """``--duration-knowledge`` and ``--estimate-sigma`` (:mod:`palgym.policies.durations`)."""
    add("--duration-knowledge", choices=DURATION_KNOWLEDGE_NAMES, default=None,
        help="what the scheduler knows of job durations: clairvoyant (default, the true work), "
             "noisy (seeded lognormal user estimates) or unknown (no remaining time; no srtf "
             "or srsf)")
    add("--estimate-sigma", type=_bounded(float, "estimate sigma", 0), default=None,
        metavar="SIGMA", help="sigma of the log of a noisy estimate's error (>= 0; default: "
                              f"{DEFAULT_ESTIMATE_SIGMA:g})")


def duration_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env kwargs ``duration_knowledge`` / ``estimate_sigma`` the flags give (if given)."""
    given = {"duration_knowledge": args.duration_knowledge, "estimate_sigma": args.estimate_sigma}
    return {key: value for key, value in given.items() if value is not None}


def add_env_kwargs(add: Any, help_text: str) -> None:
    """``--env-kwargs KEY:VALUE ...`` (train.py and evaluate.py; parsed by
    :func:`env_kwargs_arg`)."""
    add("--env-kwargs", nargs="+", action="extend", default=[], metavar="KEY:VALUE",
        help=help_text)


DURATION_FLAGS: dict[str, str] = {"duration_knowledge": "--duration-knowledge",
                                  "estimate_sigma": "--estimate-sigma"}
"""Env kwarg -> the flag that also sets it (:func:`add_duration_knowledge`)."""


def env_kwargs_arg(args: argparse.Namespace,
                   flags: dict[str, tuple[str, Any]] | None = None) -> dict[str, Any]:
    """The env kwargs of ``--env-kwargs`` (each value read as YAML:
    :func:`agents.sb3.hyperparams.parse_key_values`, names checked against the env's arguments)
    plus those the flags set: the duration flags (:data:`DURATION_FLAGS`) and ``flags``
    (``{env kwarg: (flag, value)}``; a None value: not given).

    Raises:
        ConfigError: naming ``--env-kwargs`` for a malformed item, an argument the env does
            not take, ``trace`` (give ``--trace``), or a kwarg a given flag also sets (naming
            the flag); or when PyYAML (the train extra) is missing.
    """
    parsed: dict[str, Any] = {}
    if args.env_kwargs:
        try:
            from agents.sb3.hyperparams import parse_key_values
        except ImportError as exc:
            raise ConfigError(f"--env-kwargs needs PyYAML ({exc}): pip install -e "
                              "'.[train]'") from None
        from agents.env_args import env_config

        parsed = parse_key_values(args.env_kwargs, "--env-kwargs")
        env_config(parsed, "--env-kwargs", getattr(args, "env", None))
        if "trace" in parsed:
            raise ConfigError("--env-kwargs trace: give the traces with --trace (or "
                              "--trace-set)")
    named = {**(flags or {}),
             **{key: (flag, getattr(args, key)) for key, flag in DURATION_FLAGS.items()}}
    given = {key: value for key, (_, value) in named.items() if value is not None}
    for key in given:
        if key in parsed:
            raise ConfigError(f"--env-kwargs {key} and {named[key][0]} both set the env's "
                              f"{key}: give it once")
    return {**parsed, **given}


def episode_overrides(args: argparse.Namespace, queue_order: bool = True) -> dict[str, Any]:
    """Env kwargs the command line sets for every contender (only those given).

    Args:
        args: the parsed arguments.
        queue_order: include the one ``--queue-order`` (False: the contenders bring their own,
            as in ``--best-heuristic``).

    Returns:
        ``--env-kwargs`` (:func:`agents.evaluation.args.env_kwargs_arg`, as train.py reads
        them) and the env kwargs of the flags given.

    Raises:
        ConfigError: for ``--belief`` (the env's heuristics decide on the truth: give
            ``--env-kwargs belief:...``), or, with ``queue_order``, several queue orders or
            ``--backfill``; for a bad ``--env-kwargs`` item or one a flag also sets.
    """
    if args.belief is not None:
        raise ConfigError("--belief applies to the heuristic table only (no --agent, --env, "
                          "--env-kwargs, --trace-set or --seeds); side by side, give "
                          "--env-kwargs belief:NAME")
    orders = list(dict.fromkeys(args.queue_order or []))
    if queue_order and (len(orders) > 1 or args.backfill):
        raise ConfigError("side-by-side evaluation runs one queue order and no --backfill: "
                          "name other combinations as contenders, e.g. --policy "
                          "srsf/pal+backfill las/pm-first+easy (or choose: --best-heuristic)")
    flags = {
        "preset": ("--preset", args.preset),
        "queue_order": ("--queue-order", orders[0] if orders and queue_order else None),
        "cluster": ("--cluster", f"{args.cluster.num_nodes}x{args.cluster.gpus_per_node}"
                    if args.cluster is not None else None),
        "locality_penalty": ("--locality-penalty", args.locality_penalty),
        "round_duration_s": ("--round-duration", args.round_duration),
        "window": ("--window", args.window),
        "profile": ("--profile", str(args.profile) if args.profile is not None else None),
        "variability_data": ("--variability-data", str(args.variability_data)
                             if args.variability_data is not None else None),
    }
    return env_kwargs_arg(args, flags)


def _add_parallel(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "parallel sweeps (outputs byte-identical to the serial run; heuristics on the "
        "simulator only: refused with --agent or --heuristics-via env, which run serially)")
    runners = group.add_mutually_exclusive_group()
    runners.add_argument(
        "--workers", type=_bounded(int, "", 1), default=None, metavar="N",
        help="run the episodes in N >= 1 local worker processes (default: 1, in this process)")
    runners.add_argument(
        "--ray", nargs="?", const="", default=None, metavar="ADDRESS",
        help="run the episodes as Ray tasks on the cluster at ADDRESS ('auto', host:6379, "
             "ray://host:10001), or on a local Ray started for the run when no ADDRESS is "
             "given; needs the 'ray' extra (pip install -e '.[ray]')")


def _add_side_by_side(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "learned agents and heuristics on identical episodes (through the env)")
    add = group.add_argument
    add("--agent", nargs="+", action="extend", metavar="SPEC", type=contender_arg(),
        help="model.zip, run folder (its best_model.zip, else model.zip), or 'pretrained' "
             "(agents/pretrained/<env>_maskable_ppo.zip) / 'pretrained:NAME' (NAME: a model "
             "of agents/pretrained/, not a path); a rule selector selector:PATH / "
             "selector:pretrained:NAME (agents/pretrained/rule-selector/NAME.json); "
             "planner:SPEC; or a heuristic name, as --policy (one contender spec grammar, "
             "docs/EVALUATING.md)")
    add("--last", action="store_true",
        help="for a run folder --agent: evaluate model.zip (the last model), not "
             "best_model.zip (the best evaluation checkpoint)")
    add("--trust-model", action="store_true",
        help="load the --agent zips with stable-baselines3's unpickling. A model zip can run "
             "code: use this only for files you trust. Without it palgym unpickles nothing "
             "and refuses a zip whose pickled entries it cannot supply")
    add("--planner", nargs="+", action="extend", metavar="SPEC",
        help="rollout planner contender(s) over a base heuristic, e.g. 'K=4,H=20' or "
             "'base=pal,K=6,H=end' (agents/planning/planner.py)")
    add("--env", metavar="ID", help="env id (default: the agents' or palgym/PALPlacement-v0)")
    add("--trace-set", nargs="+", action="extend", metavar="NAME_OR_DIR",
        help="trace set(s): 'bundled', a folder of traces or a manifest .json")
    add("--split", choices=SPLIT_NAMES, default=DEFAULT_SPLIT,
        help="split of the trace sets (default: %(default)s)")
    add("--best-heuristic", action="store_true",
        help="choose the best queue order x placement x backfill on --selection-split of the "
             "trace sets (geomean avg JCT), report every combination and the choice on --split")
    add("--selection-split", choices=SPLIT_NAMES, default=DEFAULT_SELECTION_SPLIT,
        help="split --best-heuristic chooses on (default: %(default)s)")
    add("--seeds", nargs="+", type=_bounded(int, "seed", 0), metavar="N",
        help="env reset seeds, each >= 0 (default: --seed): reset seed S draws an episode "
             "seed E, printed beside the episode's hash; the heuristic table's --seed E "
             "builds that episode")
    add("--window", type=_bounded(int, "window", 1), metavar="JOBS",
        help="episodes are windows of JOBS >= 1 consecutive jobs, drawn per seed (default: "
             "whole traces; a window as long as a trace or longer is that whole trace)")
    add("--reference", type=heuristic_arg("", allow_best=True), default=DEFAULT_REFERENCE,
        metavar="NAME",
        help="second policy every policy is paired with (default: %(default)s): any "
             f"heuristic name or '{BEST}', as --policy")
    add("--best-field", nargs="+", action="extend", type=heuristic_arg(""), metavar="NAME",
        help=f"the ORDER/PLACEMENT[+SUFFIX] combinations '{BEST}' is chosen among (default: "
             "every queue order x placement x backfill mode, as --best-heuristic), e.g. "
             "{fifo,srsf}/{pal,pm-first}{,+backfill,+easy}")
    add("--summary-output", type=Path, metavar="CSV", help="per-policy summary CSV")
    add("--json", type=Path, metavar="FILE",
        help="everything as JSON (also for the heuristic table)")
    add("--confidence", type=open_unit_interval("--confidence"), default=DEFAULT_CONFIDENCE,
        help="bootstrap interval level, in (0, 1)")
    add("--bootstrap-resamples", type=positive_int("--bootstrap-resamples"),
        default=DEFAULT_RESAMPLES, metavar="B")
    add("--bootstrap-seed", type=int, default=DEFAULT_BOOTSTRAP_SEED, metavar="N")
    add("--bootstrap-unit", choices=BOOTSTRAP_UNITS, default=BOOTSTRAP_UNITS[0],
        help="resample episodes (default) or whole traces with all their seeds")
    add("--heuristics-via", choices=HEURISTICS_VIA, default=HEURISTICS_VIA[0],
        help="run heuristics on the simulator on the env's episodes (default, fast, identical "
             "by parity) or step them through the env as agents")
    add("--device", default=DEFAULT_DEVICE,
        help="torch device of learned agents (default: %(default)s)")
    add("--num-threads", type=int, default=1, help="torch threads (default 1; 0: torch's)")
    add("--render", nargs="?", const="ansi", choices=("ansi", "rgb_array"),
        help="replay the first --agent (or --policy) on --seeds with rendering: ansi frames "
             "(default) or rgb_array MP4s in --video-folder (needs moviepy); "
             "agents/evaluation/enjoy.py")
    add("--video-folder", type=Path, default=None, metavar="DIR", help="default: videos/")
