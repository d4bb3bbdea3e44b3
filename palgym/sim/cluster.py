"""Cluster shape: N nodes x G_n GPUs, GPU ids global and contiguous per node.

Node n owns GPUs ``n * G_n .. n * G_n + G_n - 1`` (PAL_MODEL section 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import IntArray


@dataclass(frozen=True)
class ClusterSpec:
    """Homogeneous cluster shape.

    Attributes:
        num_nodes: N >= 1.
        gpus_per_node: G_n >= 1.

    Raises:
        ConfigError: on a non-positive count.
    """

    num_nodes: int = 16
    gpus_per_node: int = 4

    def __post_init__(self) -> None:
        if self.num_nodes < 1 or self.gpus_per_node < 1:
            raise ConfigError(f"cluster must have >= 1 node and >= 1 GPU per node, got {self}")

    @classmethod
    def parse(cls, text: str) -> ClusterSpec:
        """Parse ``"NxG"`` (e.g. ``"16x4"``: 16 nodes of 4 GPUs).

        Raises:
            ConfigError: if the text is not of that form.
        """
        match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
        if match is None:
            raise ConfigError(
                f"cluster must look like '16x4' (nodes x GPUs per node), got {text!r}"
            )
        return cls(int(match.group(1)), int(match.group(2)))

    @property
    def num_gpus(self) -> int:
        """G = N x G_n."""
        return self.num_nodes * self.gpus_per_node

    def node_of_gpu(self) -> IntArray:
        """int64 (G,): the node id of every GPU."""
        return np.arange(self.num_gpus, dtype=np.int64) // self.gpus_per_node

    def __str__(self) -> str:
        return f"{self.num_nodes}x{self.gpus_per_node}"
