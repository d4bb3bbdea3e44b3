"""Which checkpoint of a run folder ``evaluate.py --agent`` evaluates, and on which windows.

A run folder (``train.py``'s ``<log>/<env>_<algo>_<n>/``) holds ``model.zip``, the model at
the end of training, and ``best_model.zip``, the checkpoint with the best evaluation on the
run's validation episodes (``agents/sb3/training.py``). Given the folder, ``evaluate.py`` takes
``best_model.zip`` when it exists (the one model selection chose), ``model.zip`` with
``--last`` or when there is no best. :func:`checkpoint_notes` says which file each ``--agent``
is and what it trained on against what it is evaluated on (windows of N jobs or whole traces).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

BEST_FILE = "best_model.zip"
LAST_FILE = "model.zip"


def chosen_checkpoint(spec: str, last: bool = False) -> str:
    """``spec`` with a run folder replaced by its checkpoint: ``best_model.zip`` if it exists
    and not ``last``, else ``model.zip``; any other spec (a zip, ``pretrained[:NAME]``) as
    given."""
    folder = Path(spec)
    if not folder.is_dir():
        return spec
    best = folder / BEST_FILE
    return str(best if best.is_file() and not last else folder / LAST_FILE)


def _window_text(window: Any) -> str:
    return "whole traces" if window is None else f"{window}-job windows"


def checkpoint_notes(given: Sequence[str], chosen: Sequence[str], window: int | None,
                     config_of: Any) -> list[str]:
    """One line per ``--agent``: the file evaluated (and why, for a run folder), the windows
    it trained on (its run config's ``env_kwargs.window``) and the ones it is evaluated on
    (``window``: ``--window``; None: whole traces).

    Args:
        given: the ``--agent`` specs as given.
        chosen: the same after :func:`chosen_checkpoint`.
        window: the evaluation's ``--window``.
        config_of: a model path -> its run config (``agents.sb3.learned.model_config``).
    """
    lines = []
    for spec, path in zip(given, chosen, strict=True):
        if spec != path:
            name = Path(path).name
            why = ("the best evaluation checkpoint; --last evaluates model.zip, the last"
                   if name == BEST_FILE else
                   "the last model" + ("" if (Path(spec) / BEST_FILE).is_file()
                                       else f" (no {BEST_FILE} in the folder)"))
            what = f"--agent {spec}: evaluating {path} ({why})"
        else:
            what = f"--agent {spec}"
        try:
            config = config_of(path)
        except Exception:  # noqa: BLE001 - the contender's own load names the problem
            config = {}
        trained = dict(config.get("env_kwargs") or {}).get("window") if config else None
        where = f"evaluated on {_window_text(window)}"
        if config:
            where += f", trained on {_window_text(trained)}"
            if trained != window and trained is not None:
                where += f" (--window {trained} evaluates on windows like those)"
        lines.append(f"{what}; {where}")
    return lines


__all__ = ["BEST_FILE", "LAST_FILE", "checkpoint_notes", "chosen_checkpoint"]
