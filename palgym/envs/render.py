"""Rendering of the cluster env: a text map (``"ansi"``) and a GPU x time Gantt image
(``"rgb_array"``), both pure numpy / text (no plotting library needed).

Every ``rgb_array`` frame of an env has the same shape, fixed at construction from the cluster
size G and the window size K (:class:`GanttRecorder`), as ``gymnasium.wrappers.RecordVideo``
needs.
"""

from __future__ import annotations

import math

import numpy as np

from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, IntArray

_PALETTE = np.array([
    [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189],
    [140, 86, 75], [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207],
], dtype=np.float64)
HISTORY_ROUNDS: int = 63
"""Past rounds a frame shows (the columns left of the current round)."""
_TARGET_PIXELS = 256
_BLOCK = 16  # frame sides are multiples of 16 (video encoders' macro-block size)


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


class GanttRecorder:
    """The allocations of the last :data:`HISTORY_ROUNDS` rounds, drawn as fixed-size frames.

    A frame is a grid of cells: G rows of H + 1 columns (one row per GPU, one column per round,
    oldest left, the current round's tentative allocation right), a blank row, then the K window
    slots in rows of H + 1 cells (the jobs still to place this round, in slot order). Each
    cell is ``scale`` x ``scale`` pixels, ``scale = max(1, 256 // max(rows, H + 1))``, and the
    frame is padded with white to multiples of 16 pixels.

    Args:
        num_gpus: G.
        num_slots: K.

    Attributes:
        frame_shape: (height, width, 3) of every frame (uint8).
    """

    def __init__(self, num_gpus: int, num_slots: int) -> None:
        self.num_gpus = num_gpus
        self.num_slots = num_slots
        self.columns = HISTORY_ROUNDS + 1
        self.queue_rows = math.ceil(num_slots / self.columns)
        rows = num_gpus + 1 + self.queue_rows
        self.scale = max(1, _TARGET_PIXELS // max(rows, self.columns))
        height = -(-rows * self.scale // _BLOCK) * _BLOCK
        width = -(-self.columns * self.scale // _BLOCK) * _BLOCK
        self.frame_shape: tuple[int, int, int] = (height, width, 3)
        self._history = np.full((num_gpus, HISTORY_ROUNDS), FREE, np.int64)

    def reset(self) -> None:
        """Forget the past rounds (a new episode)."""
        self._history[:] = FREE

    def record(self, job_of_gpu: IntArray) -> None:
        """Append a committed round's allocation, int64 (G,)."""
        self._history[:, :-1] = self._history[:, 1:]
        self._history[:, -1] = job_of_gpu

    def frame(
        self, sim: Simulator, target: IntArray, window: list[int], factors: SlowdownFactors
    ) -> np.ndarray:
        """uint8 :attr:`frame_shape`: a job has a palette colour, darkened by its slowdown
        factor on that GPU (Gantt part); free GPUs and empty slots are white.

        Args:
            sim: the engine (read only). target: int64 (G,) this round's tentative allocation.
            window: the window's jobs, slot order. factors: the episode's slowdown factors.
        """
        grid = np.full((self.num_gpus + 1 + self.queue_rows, self.columns), FREE, np.int64)
        grid[: self.num_gpus, :-1] = self._history
        grid[: self.num_gpus, -1] = target
        slots = np.full(self.queue_rows * self.columns, FREE, np.int64)
        slots[: len(window)] = window[: slots.size]
        grid[self.num_gpus + 1 :] = slots.reshape(self.queue_rows, self.columns)
        image = np.full((*grid.shape, 3), 255.0)
        busy = grid != FREE
        jobs = grid[busy]
        shade = np.ones(jobs.size)
        rows = np.broadcast_to(np.arange(grid.shape[0])[:, None], grid.shape)[busy]
        on_gpu = rows < self.num_gpus
        classes = sim.jobs.perf_class[jobs[on_gpu]]
        shade[on_gpu] = np.clip(1.0 / factors.sf[classes, rows[on_gpu]], 0.4, 1.0)
        image[busy] = _PALETTE[jobs % len(_PALETTE)] * shade[:, None]
        pixels = np.repeat(np.repeat(image, self.scale, axis=0), self.scale, axis=1)
        frame = np.full(self.frame_shape, 255, np.uint8)
        frame[: pixels.shape[0], : pixels.shape[1]] = pixels.astype(np.uint8)
        return frame
