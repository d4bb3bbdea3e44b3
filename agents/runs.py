"""Files of a run folder: YAML records, the saved model, the learning curve."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import ConfigError
from palgym.io import atomic_write_text


def plain(value: Any) -> Any:
    """``value`` with tuples, Paths and numpy scalars turned into YAML-safe types."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def write_yaml(path: Path, content: Mapping[str, Any]) -> None:
    """Write ``content`` as YAML atomically (key order kept)."""
    import yaml

    atomic_write_text(path, yaml.safe_dump(plain(content), sort_keys=False))


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping file (empty dict for an empty file)."""
    import yaml

    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def record_args(run_dir: Path, args: Mapping[str, Any], seeds: Mapping[str, Any],
                resume: bool, start: int) -> None:
    """Write ``args.yml``: the creating run's args and seeds, plus one entry per resume."""
    entry = {**plain(args), "seeds": plain(seeds)}
    if not resume:
        write_yaml(run_dir / "args.yml", entry)
        return
    path = run_dir / "args.yml"
    content = read_yaml(path) if path.is_file() else {}
    content.setdefault("resumes", []).append({**entry, "start_timestep": start})
    write_yaml(path, content)


def save_model(model: Any, path: Path) -> None:
    """Save ``model`` to ``path`` atomically (temporary zip in the same folder, then rename)."""
    tmp = path.with_name(f".{path.stem}.tmp.zip")
    model.save(tmp)
    os.replace(tmp, path)


def read_evaluations(run_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The learning curve of a run: (timesteps (E,), mean evaluation return (E,)).

    Raises:
        ConfigError: if the run folder has no ``evaluations.npz``.
    """
    path = Path(run_dir) / "evaluations.npz"
    if not path.is_file():
        raise ConfigError(f"no evaluations.npz in {run_dir}")
    with np.load(path) as data:
        return np.asarray(data["timesteps"]), np.asarray(data["results"]).mean(axis=1)
