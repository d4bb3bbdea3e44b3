"""Errors that name the next step: a ``MODULE:CLASS`` that cannot be imported says where
Python looks and how to add a folder (PYTHONPATH); a ``class_reorder`` mismatch says it is an
argument of the env (``gym.make``); the rule selector's objective lines say lower is better."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from palgym.envs.heuristics import check_heuristic
from palgym.errors import ConfigError
from palgym.policies.loader import placement_name


def test_a_module_not_found_names_pythonpath_and_the_folder(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        placement_name("no_such_module_here.sub:Mine", "--policy")
    text = str(caught.value)
    assert "cannot import module 'no_such_module_here.sub'" in text
    assert "no_such_module_here.py" in text and "PYTHONPATH=/path/to/folder" in text
    assert f"({os.getcwd()})" in text


def test_an_error_inside_the_users_module_gets_no_path_hint(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # the module is found; what it imports is not: the path is not the problem
    (tmp_path / "broken_user_module.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        placement_name("broken_user_module:Mine", "--policy")
    assert "no_such_dependency_xyz" in str(caught.value)
    assert "PYTHONPATH" not in str(caught.value)


def test_a_class_reorder_mismatch_names_the_env_argument() -> None:
    # PAL walks class-reordered rounds (registry trait class_reorder=True)
    with pytest.raises(ConfigError) as caught:
        check_heuristic("pal", sticky=False, class_reorder=False)
    text = str(caught.value)
    assert "pal needs class_reorder=True (the env has False)" in text
    assert "gym.make(ENV_ID, ..., class_reorder=True)" in text
    assert "--env-kwargs class_reorder:true" in text


def test_the_selector_objective_lines_say_lower_is_better() -> None:
    pytest.importorskip("stable_baselines3", reason="agents needs the train extra")
    from agents.selection.cli import OBJECTIVE_TEXT, iteration_line

    line = iteration_line(0, 5, 0.0123, -0.25, -0.0456, 12.7)
    assert line == ("iteration 1/5: train objective of the mean before it +0.0123, best sample "
                    "-0.2500, validation of the new mean -0.0456 (lower is better; 13 s "
                    "elapsed)")
    text = OBJECTIVE_TEXT.format(base="fifo/pal")
    assert "lower is better" in text and "log(avg JCT / avg JCT of the base rule fifo/pal)" in text
