"""``python -m agents.evaluation.plot_curve MODEL --output FILE.png|FILE.svg`` (``palgym plot``):
a run's learning curve beside PAL's line.

MODEL is a run folder (its ``evaluations.npz`` and ``references.yml``, written by
``train.py``), a model zip ``NAME.zip`` (``NAME-evaluations.npz`` and ``NAME-references.yml``
beside it) or ``pretrained[:NAME]``. The figure plots the mean evaluation return against
timesteps, with the mean return of each heuristic reference the run evaluated on the same
episodes (PAL's, Packed-Non-Sticky's, ...) as a horizontal line: the curve above PAL's line is
a model that beats PAL on those episodes (under the run's reward). The format follows the
output's suffix; equal inputs give equal bytes.

Exit codes: 0; 2 for a missing curve file, an unknown suffix or no matplotlib (one ``error:``
line).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from pathlib import Path

from palgym.errors import ConfigError, PalgymError
from palgym.policies.contender_spec import parse_contender

FORMATS = (".png", ".svg")


def curve_files(spec: str) -> tuple[Path, Path, str]:
    """``(evaluations.npz, references.yml, label)`` of a model spec (module docstring).

    Raises:
        ConfigError: naming the spec and the file when there is no learning curve.
    """
    path = Path(spec)
    parsed = parse_contender(spec, "model")
    if parsed.kind == "learned" and parsed.pretrained:  # pretrained[:NAME]
        from agents.sb3.learned import pretrained_path

        path = pretrained_path(spec, "palgym/PALPlacement-v0")
    if path.is_dir():
        files = (path / "evaluations.npz", path / "references.yml")
        label = path.name
    else:
        files = (path.with_name(f"{path.stem}-evaluations.npz"),
                 path.with_name(f"{path.stem}-references.yml"))
        label = path.stem
    if not files[0].is_file():
        raise ConfigError(f"{spec}: no learning curve ({files[0]} does not exist; train.py "
                          "writes evaluations.npz in the run folder)")
    return files[0], files[1], label


def curve_bytes(spec: str, suffix: str) -> bytes:
    """The figure of ``spec`` as PNG or SVG bytes (``suffix``: ``.png`` / ``.svg``).

    Raises:
        ConfigError: for an unknown suffix or no learning curve.
        PlotDependencyError: without matplotlib (the ``viz`` extra).
    """
    from agents.evaluation.plots import learning_curve_figure
    from palgym.plots import figure_png, require_matplotlib

    if suffix not in FORMATS:
        raise ConfigError(f"--output: a {' or '.join(FORMATS)} file, got {suffix!r}")
    evaluations, references, label = curve_files(spec)
    require_matplotlib()
    figure = learning_curve_figure(evaluations, references, label)
    if suffix == ".png":
        return figure_png(figure)
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "palgym"}):  # fixed ids: equal bytes
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """Write the figure (module docstring)."""
    from palgym.io.atomic import atomic_write_bytes, check_destination

    parser = argparse.ArgumentParser(prog="python -m agents.evaluation.plot_curve",
                                     description="a run's learning curve beside PAL's line")
    parser.add_argument("model", help="run folder, model zip or pretrained[:NAME]")
    parser.add_argument("--output", required=True, help="the figure (.png or .svg)")
    args = parser.parse_args(argv)
    try:
        output = check_destination(args.output, "--output")
        data = curve_bytes(args.model, output.suffix.lower())
        written = atomic_write_bytes(output, data)
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
