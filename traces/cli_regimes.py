"""The knob flags of ``python -m traces generate`` and the ``regimes`` sub-command.

Examples::

    python -m traces generate --seed 0 --load 2 --wide-share 0.75 --output t.csv
    python -m traces generate --seed 0 --regime bursty --output t.csv
    python -m traces regimes --output-dir regimes/ --train 8 --validation 4 --test 4
    python -m traces regimes --list
"""

from __future__ import annotations

import argparse
from dataclasses import fields, replace
from typing import Any

from palgym.errors import ConfigError
from palgym.io.atomic import check_destination
from palgym.tracesets import SPLITS
from traces.knobs import KNOB_FLAGS, NO_KNOBS, Knobs
from traces.regimes import DEFAULT_COUNTS, REGIMES, regime, regime_table, write_regimes

KNOB_HELP: dict[str, str] = {
    "load": "arrival-rate scale (> 0; default 1)",
    "wide_share": "share of multi-GPU jobs (0..1; default: the fitted 0.576)",
    "wide_mean_gpus": "mean GPU count of multi-GPU jobs (4 < w < 48; default: the fitted 10.29)",
    "burst_ratio": "burst / quiet arrival-rate ratio of a two-state MMPP (>= 1; 1 = Poisson)",
    "burst_share": "share of time in bursts (0..1 exclusive; default 0.2)",
    "burst_length_s": "mean burst length in seconds (> 0; default 1800)",
    "duration_spread": "log-duration spread scale around the same medians (0 < s <= 4; "
                       "default 1)",
    "wide_groups": "groups of long wide jobs (>= 24 GPUs, duration above its group's median; "
                   "whole number >= 0; default 0: none)",
    "wide_group_size": "long wide jobs per group (whole number >= 1; default 3)",
    "wide_group_window_s": "the arrivals of a group are less than this many seconds apart "
                           "(> 0; default 1200)",
}
"""The help text of each knob flag (:data:`traces.knobs.KNOB_FLAGS`)."""


def add_knob_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--regime`` option and one flag per :class:`~traces.knobs.Knobs` field (sia-philly
    only; a flag given with ``--regime`` overrides the regime's value)."""
    group = parser.add_argument_group("regime knobs (--kind sia-philly; traces/knobs.py)")
    group.add_argument("--regime", default=None, metavar="NAME",
                       help=f"start from a named regime: {', '.join(r.name for r in REGIMES)}")
    for name, flag in KNOB_FLAGS.items():
        group.add_argument(flag, dest=f"knob_{name}", type=float, default=None,
                           metavar="X", help=KNOB_HELP[name])


def knobs_from_args(args: argparse.Namespace) -> Knobs:
    """The knobs of parsed arguments: the ``--regime``'s (or the defaults), then the flags.

    Raises:
        ConfigError: naming the flag and value, for an unknown regime or a bad knob value.
    """
    base = NO_KNOBS if args.regime is None else regime(args.regime).knobs
    given: dict[str, Any] = {f.name: getattr(args, f"knob_{f.name}") for f in fields(Knobs)}
    return replace(base, **{k: v for k, v in given.items() if v is not None})


def any_knob_given(args: argparse.Namespace) -> bool:
    """Whether ``--regime`` or a knob flag was given (an absent attribute counts as not
    given)."""
    return getattr(args, "regime", None) is not None or any(
        getattr(args, f"knob_{name}", None) is not None for name in KNOB_FLAGS)


def add_regimes_command(commands: Any) -> None:
    """The ``regimes`` sub-command (``commands``: the sub-parsers action)."""
    parser = commands.add_parser(
        "regimes", help="write the regime trace collection and its trace-set manifests")
    parser.add_argument("--output-dir", default=None, help="folder to write (required "
                        "unless --list)")
    parser.add_argument("--regime", nargs="+", default=None, metavar="NAME",
                        help="regimes to write (default: all)")
    for split in SPLITS:
        parser.add_argument(f"--{split}", type=int, default=DEFAULT_COUNTS[split], metavar="N",
                            help=f"{split} traces per regime (default {DEFAULT_COUNTS[split]})")
    parser.add_argument("--num-jobs", type=int, default=160, help="jobs per trace")
    parser.add_argument("--list", action="store_true", help="print the regimes and stop")


def run_regimes(args: argparse.Namespace) -> list[str]:
    """Run ``regimes``; returns the lines to print.

    Raises:
        ConfigError: for bad arguments (naming the flag).
        OSError: if a file cannot be written.
    """
    if args.list:
        return [regime_table()]
    if args.output_dir is None:
        raise ConfigError("--output-dir is required (or give --list)")
    check_destination(args.output_dir, "--output-dir", folder=True)
    if args.num_jobs < 1:
        raise ConfigError(f"--num-jobs must be >= 1, got {args.num_jobs}")
    counts = {split: getattr(args, split) for split in SPLITS}
    manifests = write_regimes(args.output_dir, args.regime, counts, args.num_jobs)
    num_regimes = len(manifests) - 1
    return [f"wrote {num_regimes * sum(counts.values())} traces of {num_regimes} regime(s) "
            f"to {args.output_dir}"] + [f"wrote {path}" for path in manifests]
