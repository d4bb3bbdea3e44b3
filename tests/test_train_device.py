"""``--device auto`` (agents/sb3/device.py): cuda for large minibatches when CUDA is there."""

from __future__ import annotations

import pytest

from agents.sb3.device import AUTO_CUDA_MIN_BATCH, resolve_device
from agents.sb3.hyperparams import FAST_HYPERPARAMS, load_hyperparams


def never_asked() -> bool:
    raise AssertionError("CUDA is asked about only for a large minibatch under auto")


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps"])
def test_a_named_device_is_used_as_given(device: str) -> None:
    assert resolve_device(device, {"batch_size": 4096}, never_asked) == device


def test_auto_takes_cuda_for_a_large_minibatch_when_there_is_one() -> None:
    large = {"batch_size": AUTO_CUDA_MIN_BATCH}
    assert resolve_device("auto", large, lambda: True) == "cuda"
    assert resolve_device("auto", large, lambda: False) == "cpu"
    # one sample short of the threshold, or SB3's default batch: the CPU, CUDA not asked
    assert resolve_device("auto", {"batch_size": AUTO_CUDA_MIN_BATCH - 1}, never_asked) == "cpu"
    assert resolve_device("auto", {}, never_asked) == "cpu"


def test_auto_follows_the_recipes() -> None:
    # --fast's minibatch is the one measured faster on the GPU; the YAML defaults stay on CPU
    assert resolve_device("auto", FAST_HYPERPARAMS, lambda: True) == "cuda"
    for algo in ("maskable_ppo", "ppo", "dqn"):
        assert resolve_device("auto", load_hyperparams(algo, "palgym/PALPlacement-v0"),
                              never_asked) == "cpu"
