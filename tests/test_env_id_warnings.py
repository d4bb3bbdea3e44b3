"""No Gymnasium "out of date" note on the documented path: ``-v0`` is a supported id beside
``-v1`` (another layout, not its successor), so the README's env snippet runs with every
DeprecationWarning turned into an error, and the tests' own filters (pyproject.toml) hide the
note as palgym does."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym

from tests.test_readme import python_blocks

ROOT = Path(__file__).resolve().parents[1]


def test_the_env_snippet_warns_nothing_with_deprecations_as_errors() -> None:
    [snippet] = [b for b in python_blocks() if "gym.make(" in b]
    assert '"palgym/PALPlacement-v0"' in snippet
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", snippet],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "out of date" not in done.stderr


def test_making_v0_under_pytest_records_no_out_of_date_note() -> None:
    with warnings.catch_warnings(record=True) as caught:
        env = gym.make("palgym/PALScheduling-v0", trace="bundled:train", window=8)
        env.close()
    assert not [w for w in caught if "out of date" in str(w.message)]
