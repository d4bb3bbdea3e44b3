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
``--plot DIR`` adds JCT CDFs, normalised bars and learning curves (torch and SB3 load only
for ``--agent``).

**Best heuristic** (``--best-heuristic``): every ``--queue-order`` x ``--policy`` x
``--backfill`` (default: all) on the trace sets' ``--selection-split`` (default validation) and
``--split``; the combination with the lowest geomean avg JCT on the former is reported on the
latter. ``--backfill`` also crosses ``--policy`` in the
heuristic table (``pal+backfill`` first-fit, ``pal+easy`` EASY).

**Names** (:mod:`palgym.policies.contender_spec`, one grammar with ``palgym bench run
--agent``): ``[ORDER/]PLACEMENT[+backfill|+easy]``, e.g. ``srsf/pal+backfill``; side by side any
such name is a contender, ``--reference`` or ``--baseline``, and ``best`` is the
``--best-field`` combination chosen on ``--selection-split`` (never ``test``), run beside the
others on ``--split``. ``--agent`` and ``--policy`` take any contender spec: a heuristic name,
a guard, ``MODULE:CLASS``, a model, ``selector:PATH`` / ``selector:pretrained:NAME`` (a rule
selector, run on the engine's rule selection), ``planner:SPEC`` or ``best``; a kind that does
not run here (``field``) is refused naming where it runs.

Examples::

    python evaluate.py
    python evaluate.py --trace workload-1.csv --preset pal-artifact \\
        --variability-data /path/to/variability/longhorn_pal --output results.csv --plot figures
    python evaluate.py --agent runs/palgym_PALPlacement-v0_maskable_ppo_0/model.zip \\
        --trace-set bundled --split test --seeds 0 1 2 --output episodes.csv --json results.json

**Model zips can run code** (stable-baselines3 stores some attributes pickled): ``--agent``
zips are loaded without unpickling anything, and one whose pickled entries palgym cannot
supply itself is refused; ``--trust-model`` loads it with stable-baselines3's unpickling (only
for files you trust). ``pretrained:NAME`` takes the plain name of a zip in agents/pretrained/.

``--workers N`` (a local process pool) or ``--ray [ADDRESS]`` (Ray tasks) run a sweep's
heuristic episodes in parallel, output byte-identical to the serial run.

Exit codes: 0 on success, 2 on bad arguments or bad input files (``error: <message>``).
The logic lives in :mod:`agents.evaluation` (:mod:`agents.evaluation.cli`).
"""

from __future__ import annotations

import sys

from agents.evaluation.cli import main
from palgym.io.pipes import run_cli

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(run_cli(main))
