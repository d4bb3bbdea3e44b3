"""Benchmark: one heuristic sweep of ``evaluate.py`` serially, with ``--workers N`` and on Ray.

Runs the same ``evaluate.py`` command (default: every placement x the given queue orders on
the bundled traces) as a whole process, serially, with ``--workers N`` and, if ray is
installed, with ``--ray [ADDRESS]`` (a local Ray started by the command when no address is
given: its start-up is counted), each ``--repeats`` times; prints each one's median wall
seconds, its speed-up over the serial median and whether its results CSV is byte-identical to
the serial one. Worker start-up (``spawn``: each process imports palgym) is counted too, so
tiny sweeps gain nothing. It asserts nothing; the exit status is 1 if any output differs.

    python benchmarks/sweep.py [--trace PATH ...] [--queue-order fifo las] [--preset NAME]
        [--variability-data DIR] [--workers 2] [--ray-address ADDRESS] [--repeats 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVALUATE = Path(__file__).resolve().parents[1] / "evaluate.py"


def timed_run(argv: list[str], output: Path) -> float:
    """Wall seconds of ``evaluate.py argv --output output --quiet`` (raises on failure)."""
    start = time.perf_counter()
    process = subprocess.run(
        [sys.executable, str(EVALUATE), *argv, "--output", str(output), "--quiet"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"evaluate.py {' '.join(argv)} failed:\n{process.stderr}")
    return seconds


def sweep_args(args: argparse.Namespace) -> list[str]:
    """The ``evaluate.py`` arguments of the sweep (without runner options)."""
    argv = ["--queue-order", *args.queue_order]
    if args.trace:
        argv += ["--trace", *map(str, args.trace)]
    if args.preset:
        argv += ["--preset", args.preset]
    if args.variability_data:
        argv += ["--variability-data", str(args.variability_data)]
    return argv


def main() -> int:
    """Run the benchmark and print one line per runner."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="+", type=Path)
    parser.add_argument("--queue-order", nargs="+", default=["fifo"])
    parser.add_argument("--preset")
    parser.add_argument("--variability-data", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray-address", default="", help="default: a local Ray")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    base = sweep_args(args)
    runners: list[tuple[str, list[str]]] = [
        ("serial", []), (f"--workers {args.workers}", ["--workers", str(args.workers)])]
    if importlib.util.find_spec("ray") is not None:
        runners.append((f"--ray {args.ray_address}".strip(), ["--ray", *(
            [args.ray_address] if args.ray_address else [])]))
    else:
        print("--ray: skipped, ray is not installed (pip install -e '.[ray]')")
    print(f"sweep: evaluate.py {' '.join(base)}; {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'runner':<14} {'median_s':>9} {'min_s':>8} {'max_s':>8} {'speed-up':>9} "
          f"{'identical':>10}")
    differ = False
    with tempfile.TemporaryDirectory() as folder:
        serial_median, reference = 0.0, b""
        for index, (name, extra) in enumerate(runners):
            output = Path(folder) / f"results-{index}.csv"
            times = [timed_run([*base, *extra], output) for _ in range(args.repeats)]
            median = statistics.median(times)
            if not extra:
                serial_median, reference = median, output.read_bytes()
            same = output.read_bytes() == reference
            differ |= not same
            print(f"{name:<14} {median:>9.2f} {min(times):>8.2f} {max(times):>8.2f} "
                  f"{serial_median / median:>8.2f}x {'yes' if same else 'NO':>10}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
