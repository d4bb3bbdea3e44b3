"""Gymnasium adapter of the palgym simulator (imported only by ``gymnasium.make``)."""

from palgym.envs.cluster_env import ClusterEnv

__all__ = ["ClusterEnv"]
