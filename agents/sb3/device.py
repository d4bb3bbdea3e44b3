"""The torch device of a training run, and the rule of ``--device auto``.

``auto`` picks ``cuda`` when CUDA is available and the update's minibatch is large
(``batch_size`` >= :data:`AUTO_CUDA_MIN_BATCH`, as with ``--fast``), else ``cpu``. The rule
follows where the time goes: with small minibatches (the YAML default of 128, one env's 64)
a step is env stepping and small matrix products, which the CPU does without copies to and
from the GPU; with ``--fast``'s 1,024-sample minibatches the gradient steps dominate and the GPU
wins: on a 16-core machine with an H200, ``--fast`` ran 3,604 env steps/s with ``--device
cuda`` against 2,264 with ``--device cpu`` (docs/TRAINING.md "Devices"). Any other value
(``cpu``, ``cuda``, ``cuda:1``, ``mps``) is torch's and is used as given.

A run on ``cuda`` is not bit-identical to one on ``cpu`` (GPU kernels sum in other orders),
so the default stays ``cpu``: same seed, same model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

logger = logging.getLogger(__name__)

AUTO = "auto"
AUTO_CUDA_MIN_BATCH = 1024
"""The smallest minibatch (``batch_size``) for which ``--device auto`` picks ``cuda``:
``--fast``'s, measured faster on the GPU (module docstring)."""
SB3_DEFAULT_BATCH = 64
"""stable-baselines3's ``batch_size`` when the hyperparameters name none (PPO's default)."""


def cuda_available() -> bool:
    """Whether torch sees a CUDA device."""
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(requested: str, hyperparams: Mapping[str, Any],
                   has_cuda: Callable[[], bool] = cuda_available) -> str:
    """The device to train on: ``requested``, or for ``auto`` the rule of the module
    docstring on ``hyperparams["batch_size"]`` (SB3's default 64 when absent).

    Args:
        requested: ``--device``: ``auto`` or a torch device string.
        hyperparams: the run's resolved hyperparameters.
        has_cuda: asked only for ``auto`` (tests pass their own).

    Returns:
        ``cpu``, ``cuda`` or ``requested`` unchanged.
    """
    if requested != AUTO:
        return requested
    batch = hyperparams.get("batch_size", SB3_DEFAULT_BATCH)
    large = isinstance(batch, int) and batch >= AUTO_CUDA_MIN_BATCH
    device = "cuda" if large and has_cuda() else "cpu"
    logger.info("--device auto: %s (batch_size %s %s %d; CUDA %s)", device, batch,
                ">=" if large else "<", AUTO_CUDA_MIN_BATCH,
                "asked, available" if large and device == "cuda" else
                ("asked, not available" if large else "not asked"))
    return device
