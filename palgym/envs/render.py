"""Rendering of the cluster env: a text map (``"ansi"``) and a GPU x time Gantt image
(``"rgb_array"``), both pure numpy / text (no plotting library needed)."""

from __future__ import annotations

import numpy as np

from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, IntArray

_PALETTE = np.array([
    [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
    [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207],
], dtype=np.float64)


def render_ansi(sim: Simulator, target: IntArray) -> str:
    """One line per node: each GPU shows its job index (this round's tentative allocation) or
    ``.`` when free; a header gives the time and the queue."""
    lines = [
        f"t={sim.now_s / 3600:.2f} h  round {sim.round_index}  active {sim.active_jobs().size}"
        f"  running {sim.running_jobs().size}"
    ]
    width = max(len(str(int(target.max()))), 1) if target.size else 1
    for node, gpus in enumerate(target.reshape(-1, sim.cluster.gpus_per_node)):
        cells = " ".join("." * width if g == FREE else str(int(g)).rjust(width) for g in gpus)
        lines.append(f"node {node:>3} | {cells}")
    return "\n".join(lines) + "\n"


def render_rgb(
    sim: Simulator, target: IntArray, factors: SlowdownFactors, history: list[IntArray]
) -> np.ndarray:
    """uint8 (G x scale, rounds x scale, 3): one row per GPU, one column per round; a job has a
    palette colour, darkened by its slowdown factor on that GPU; free GPUs are white."""
    columns = [*history[-200:], target]
    grid = np.stack(columns, axis=1)
    image = np.full((*grid.shape, 3), 255.0)
    busy = grid != FREE
    jobs = grid[busy]
    colours = _PALETTE[jobs % len(_PALETTE)]
    gpu_index = np.broadcast_to(np.arange(grid.shape[0])[:, None], grid.shape)[busy]
    classes = sim.jobs.perf_class[jobs]
    shade = np.clip(1.0 / factors.sf[classes, gpu_index], 0.4, 1.0)
    image[busy] = colours * shade[:, None]
    scale = max(1, 256 // max(grid.shape))
    return np.repeat(np.repeat(image, scale, axis=0), scale, axis=1).astype(np.uint8)
