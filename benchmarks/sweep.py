"""Benchmark: one heuristic sweep of ``evaluate.py`` serially, with ``--workers N`` and on Ray.

Runs the same ``evaluate.py`` command (default: every placement x the given queue orders on
the bundled traces) as a whole process, serially, with ``--workers N`` and, if ray is
installed, with ``--ray [ADDRESS]`` (a local Ray started by the command when no address is
given: its start-up is counted), each ``--repeats`` times; prints each one's median wall
seconds, its CPU seconds (with the workers it reaped) and peak memory (the largest process,
as ``/usr/bin/time -v`` reports them), its speed-up over the serial median and whether its
results CSV is byte-identical to the serial one (``--keep PATH`` writes the serial one).
Worker start-up (``spawn``: each process imports palgym) is counted too, so tiny sweeps gain
nothing. It asserts nothing; the exit status is 1 if any output differs.

    python benchmarks/sweep.py [--trace PATH ...] [--queue-order fifo las] [--preset NAME]
        [--variability-data DIR] [--workers 2] [--ray-address ADDRESS] [--repeats 1]
        [--keep PATH]
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
from typing import NamedTuple

EVALUATE = Path(__file__).resolve().parents[1] / "evaluate.py"


class Timing(NamedTuple):
    """One whole-process run: wall and CPU seconds (the process and the workers it reaped)
    and the peak resident memory of the largest of them (MiB)."""

    wall_s: float
    cpu_s: float
    peak_mib: float


def timed_run(argv: list[str], output: Path) -> Timing:
    """Time ``evaluate.py argv --output output --quiet`` (raises SystemExit on failure)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [sys.executable, str(EVALUATE), *argv, "--output", str(output), "--quiet"],
            stdout=subprocess.DEVNULL, stderr=errors,
            env={**os.environ, "OMP_NUM_THREADS": "1"})
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"evaluate.py {' '.join(argv)} failed:\n"
                             f"{errors.read().decode(errors='replace')}")
    return Timing(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


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
    parser.add_argument("--keep", type=Path, help="also write the serial results CSV here")
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
    print(f"{'runner':<14} {'median_s':>9} {'min_s':>8} {'max_s':>8} {'cpu_s':>8} "
          f"{'peak_MiB':>9} {'speed-up':>9} {'identical':>10}")
    differ = False
    with tempfile.TemporaryDirectory() as folder:
        serial_median, reference = 0.0, b""
        for index, (name, extra) in enumerate(runners):
            output = Path(folder) / f"results-{index}.csv"
            runs = [timed_run([*base, *extra], output) for _ in range(args.repeats)]
            times = [run.wall_s for run in runs]
            median = statistics.median(times)
            if not extra:
                serial_median, reference = median, output.read_bytes()
            same = output.read_bytes() == reference
            differ |= not same
            if args.keep and not extra:
                args.keep.write_bytes(reference)
            print(f"{name:<14} {median:>9.2f} {min(times):>8.2f} {max(times):>8.2f} "
                  f"{statistics.median(run.cpu_s for run in runs):>8.1f} "
                  f"{max(run.peak_mib for run in runs):>9.0f} "
                  f"{serial_median / median:>8.2f}x {'yes' if same else 'NO':>10}", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
