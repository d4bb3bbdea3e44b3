"""Command line: ``python -m traces {generate,bundle,profile}``.

Examples::

    python -m traces generate --kind sia-philly --num-jobs 160 --seed 0 --output trace.csv
    python -m traces bundle [--output-dir DIR] [--variability-data LONGHORN_DIR]
    python -m traces profile --variability-data LONGHORN_DIR --num-gpus 64 \\
        --sampling single-run --seed 42 --output profile.csv
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from palgym.errors import PalgymError
from traces.bundle import write_bundle
from traces.generate import write_sia_philly_like
from traces.profiles import ProfileSampling, write_longhorn_profile
from traces.sia_philly_fit import SIA_PHILLY_JOBS_PER_HOUR, SiaPhillyParams


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with its three sub-commands.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(prog="python -m traces", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write one generated trace")
    generate.add_argument("--kind", choices=["sia-philly"], default="sia-philly")
    generate.add_argument("--num-jobs", type=int, default=160)
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--jobs-per-hour", type=float, default=SIA_PHILLY_JOBS_PER_HOUR)
    generate.add_argument(
        "--independent-models", action="store_true",
        help="draw the model from the model mix, independently of the GPU count",
    )
    generate.add_argument("--output", required=True, help="CSV file to write")
    bundle = commands.add_parser("bundle", help="regenerate the files bundled in palgym/data")
    bundle.add_argument("--output-dir", default=None, help="default: palgym/data of the package")
    bundle.add_argument(
        "--variability-data", default=None,
        help="Longhorn measurement folder; the profiles are regenerated only when given",
    )
    profile = commands.add_parser("profile", help="build a variability profile")
    profile.add_argument("--variability-data", required=True, help="Longhorn measurement folder")
    profile.add_argument("--num-gpus", type=int, required=True)
    profile.add_argument(
        "--sampling", choices=[s.value for s in ProfileSampling],
        default=ProfileSampling.GPU_MEDIAN.value,
    )
    profile.add_argument(
        "--seed", type=int, default=None, help="default: 42 for single-run, 0 for gpu-median"
    )
    profile.add_argument("--output", required=True, help="CSV file to write")
    return parser


def run(args: argparse.Namespace) -> list[str]:
    """Execute a parsed command.

    Args:
        args: parsed arguments of :func:`build_parser`.

    Returns:
        The paths written.

    Raises:
        PalgymError: for invalid arguments or input files.
        OSError: if a file cannot be written.
    """
    if args.command == "generate":
        params = SiaPhillyParams(
            jobs_per_hour=args.jobs_per_hour, model_given_gpus=not args.independent_models
        )
        return [str(write_sia_philly_like(args.output, args.num_jobs, args.seed, params))]
    if args.command == "bundle":
        return [str(p) for p in write_bundle(args.output_dir, args.variability_data)]
    path = write_longhorn_profile(
        args.variability_data, args.output, args.num_gpus, args.sampling, args.seed
    )
    return [str(path)]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success, 2 on an error in the arguments or input files.
    """
    args = build_parser().parse_args(argv)
    try:
        written = run(args)
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
