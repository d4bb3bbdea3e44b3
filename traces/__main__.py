"""Command line: ``python -m traces COMMAND`` (convert, describe, split, generate, regimes, bundle,
profile, model-profile).

Examples::

    python -m traces convert philly.csv --vc 6214e9 --output philly-6214e9.csv
    python -m traces describe philly.csv --cluster-gpus 64
    python -m traces split philly.csv --num-jobs 160 --cluster-gpus 64 --oversize drop \\
        --output-dir windows/
    python -m traces generate --kind sia-philly --num-jobs 160 --seed 0 --output trace.csv
    python -m traces generate --kind gavel --num-jobs 100 --seed 0 --output gavel.csv
    python -m traces generate --seed 0 --regime wide --load 1.5 --output wide.csv
    python -m traces regimes --output-dir regimes/ --train 8 --validation 4 --test 4
    python -m traces bundle [--output-dir DIR] [--variability-data LONGHORN_DIR]
    python -m traces profile --variability-data LONGHORN_DIR --num-gpus 64 \\
        --sampling single-run --seed 42 --output profile.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from palgym.errors import ConfigError, PalgymError
from palgym.io.pipes import run_cli
from traces.bundle import write_bundle
from traces.canonical_io import write_canonical
from traces.cli_data import DATA_COMMANDS, add_data_commands, command_text, run_data_command
from traces.cli_regimes import (
    add_knob_arguments,
    add_regimes_command,
    any_knob_given,
    knobs_from_args,
    run_regimes,
)
from traces.generate import write_sia_philly_like
from traces.model_profile import write_model_profile
from traces.profiles import ProfileSampling, write_longhorn_profile
from traces.sia_philly_fit import SIA_PHILLY_JOBS_PER_HOUR, SiaPhillyParams
from traces.synthetic import GENERATOR_KINDS, generate_gavel, generate_philly_poisson

MAX_GENERATED_JOBS = 1_000_000
"""The most jobs ``generate --num-jobs`` writes without ``--allow-large`` (the public Philly
trace has about 100,000 jobs; palgym's bundled traces have 160)."""
MAX_PROFILE_GPUS = 100_000
"""The most GPUs ``profile`` and ``model-profile --num-gpus`` draw without ``--allow-large``
(the largest cluster of the paper has 512 GPUs)."""
LARGE_FACTOR = 1000
"""``--allow-large`` multiplies the limits by this (and no further: a size that would not fit
in memory still gets a clear error)."""

COMMANDS: tuple[str, ...] = ("generate", "convert", "describe", "split", "regimes", "bundle",
                             "profile", "model-profile")
"""The subcommands (:func:`build_parser`)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with its sub-commands.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(prog="python -m traces", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add_data_commands(commands)
    generate = commands.add_parser("generate", help="write one generated trace")
    generate.add_argument(
        "--kind", choices=GENERATOR_KINDS, default="sia-philly",
        help="sia-philly: Sia / PAL CSV (iterations); philly-poisson, gavel: canonical CSV",
    )
    generate.add_argument("--num-jobs", type=int, default=160)
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument(
        "--jobs-per-hour", type=float, default=None,
        help="default: 32 (sia-philly, gavel), 31.47 (philly-poisson)",
    )
    generate.add_argument(
        "--independent-models", action="store_true",
        help="sia-philly: draw the model from the model mix, independently of the GPU count",
    )
    generate.add_argument("--output", required=True, help="file to write")
    _allow_large(generate)
    add_knob_arguments(generate)
    add_regimes_command(commands)
    bundle = commands.add_parser("bundle", help="regenerate the files bundled in palgym/data")
    bundle.add_argument("--output-dir", default=None, help="default: palgym/data of the package")
    bundle.add_argument(
        "--variability-data", default=None,
        help="Longhorn measurement folder; the profiles are regenerated only when given",
    )
    profile = commands.add_parser("profile", help="build a variability profile")
    profile.add_argument("--variability-data", required=True,
                         help="PAL-style measurement folder or class-mapping .json")
    profile.add_argument("--num-gpus", type=int, required=True)
    profile.add_argument(
        "--sampling", choices=[s.value for s in ProfileSampling],
        default=ProfileSampling.GPU_MEDIAN.value,
    )
    profile.add_argument(
        "--seed", type=int, default=None, help="default: 42 for single-run, 0 for gpu-median"
    )
    profile.add_argument("--output", required=True, help="CSV file to write")
    _allow_large(profile)
    model = commands.add_parser(
        "model-profile", help="draw a profile from the fitted Longhorn variability model"
    )
    model.add_argument("--num-gpus", type=int, required=True)
    model.add_argument("--seed", type=int, default=0)
    model.add_argument("--output", required=True, help="CSV file to write")
    _allow_large(model)
    return parser


def _allow_large(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-large", action="store_true",
                        help=f"allow sizes up to {LARGE_FACTOR}x the limits (--num-jobs "
                             f"{MAX_GENERATED_JOBS}, --num-gpus {MAX_PROFILE_GPUS})")


def check_size(args: argparse.Namespace, option: str, value: int | None, limit: int) -> None:
    """``value`` of ``option`` is an integer in [1, limit] (x :data:`LARGE_FACTOR` under
    ``--allow-large``); None (the command has no such option) passes.

    Raises:
        ConfigError: naming the option, the limit and how to lift it.
    """
    if value is None:
        return
    allowed = limit * (LARGE_FACTOR if getattr(args, "allow_large", False) else 1)
    if value < 1:
        raise ConfigError(f"{option} must be >= 1, got {value}")
    if value > allowed:
        lift = ("" if getattr(args, "allow_large", False)
                else f"; --allow-large allows up to {limit * LARGE_FACTOR}")
        raise ConfigError(f"{option} {value} is larger than the limit of {allowed}{lift}")


def run(args: argparse.Namespace, argv_text: str = "python -m traces") -> list[str]:
    """Execute a parsed command.

    Args:
        args: parsed arguments of :func:`build_parser`.
        argv_text: the command line (recorded by ``convert`` / ``split``).

    Returns:
        The lines to print (``wrote PATH``, summaries, load reports).

    Raises:
        PalgymError: for invalid arguments or input files.
        OSError: if a file cannot be written.
    """
    if args.command in DATA_COMMANDS:
        return run_data_command(args, argv_text)
    check_size(args, "--num-jobs", getattr(args, "num_jobs", None), MAX_GENERATED_JOBS)
    if args.command in ("profile", "model-profile"):
        check_size(args, "--num-gpus", getattr(args, "num_gpus", None), MAX_PROFILE_GPUS)
    if args.command == "regimes":
        return run_regimes(args)
    if args.command == "generate":
        return [f"wrote {_generate(args)}"]
    if args.command == "model-profile":
        return [f"wrote {write_model_profile(args.output, args.num_gpus, args.seed)}"]
    if args.command == "bundle":
        return [f"wrote {p}" for p in write_bundle(args.output_dir, args.variability_data)]
    if args.command == "profile":
        path = write_longhorn_profile(
            args.variability_data, args.output, args.num_gpus, args.sampling, args.seed
        )
        return [f"wrote {path}"]
    raise ConfigError(f"command must be one of {list(COMMANDS)}, got {args.command!r}")


def _generate(args: argparse.Namespace) -> Path:
    rate = args.jobs_per_hour
    if args.kind == "sia-philly":
        params = SiaPhillyParams(
            jobs_per_hour=SIA_PHILLY_JOBS_PER_HOUR if rate is None else rate,
            model_given_gpus=not args.independent_models,
        )
        knobs = knobs_from_args(args)
        return write_sia_philly_like(args.output, args.num_jobs, args.seed, params, knobs)
    if args.independent_models:
        raise ConfigError("--independent-models applies to --kind sia-philly only")
    generators = {"philly-poisson": generate_philly_poisson, "gavel": generate_gavel}
    if args.kind not in generators:
        raise ConfigError(f"--kind must be one of {list(GENERATOR_KINDS)}, got {args.kind!r}")
    if any_knob_given(args):
        raise ConfigError(f"--regime and the knob flags apply to --kind sia-philly only, "
                          f"not --kind {args.kind}")
    make = generators[args.kind]
    trace = (make(args.num_jobs, args.seed) if rate is None
             else make(args.num_jobs, args.seed, rate))
    return write_canonical(trace, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success, 2 on an error in the arguments or input files.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    try:
        messages = run(args, command_text(arguments))
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # a size under --allow-large that does not fit in memory
        print(f"error: out of memory ({type(exc).__name__}: {exc}); use smaller sizes",
              file=sys.stderr)
        return 2
    for message in messages:
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
