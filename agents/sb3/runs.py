"""Run folders and their files: numbering, YAML records, the saved model, the learning curve.

Run folders are ``<log folder>/<env id with / as _>_<algo>_<N>`` (rl-baselines3-zoo style): a
fresh run takes the next free run id ``N`` (0 in an empty folder, else 1 + the highest id of
that env and algo there), so a second run never fails on an existing folder; ``--resume``
continues the highest id, or the one ``--run-id`` names. The seed is recorded in ``args.yml``.

A run that fails (an error after its folder was claimed, or Ctrl-C outside the training loop)
leaves ``FAILED`` in its folder (:func:`recording_failure`): the error on its first line, then
the traceback. The folder is kept, since its ``config.yml``, ``args.yml`` and logs show what was
attempted; a fresh run's folder then has no ``model.zip``, a resume's keeps the model from
before the attempt. A later successful resume of the folder removes ``FAILED``. ``RUNNING``
and ``INTERRUPTED`` mark a run that has not finished or was stopped (:mod:`agents.run_markers`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from agents.data_dir import resolve_config
from agents.ids import canonical_env_id
from agents.run_markers import (
    INTERRUPTED_FILE,
    RUNNING_FILE,
    mark,
    sigterm_as_interrupt,
)
from palgym.errors import ConfigError
from palgym.io import atomic_write_text

logger = logging.getLogger(__name__)

FAILED_FILE = "FAILED"
"""The file a failed run leaves in its folder (:func:`recording_failure`)."""


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
    """A YAML mapping file (empty dict for an empty file).

    Raises:
        ConfigError: naming the file and the YAML problem (line, column), or if it is not a
            mapping.
    """
    import yaml

    try:
        content = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: expected a YAML mapping, got {type(content).__name__}")
    return content


def yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: its problem and where (1-based line and column)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}" + (f" ({context})" if context else "")


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
    """Save ``model`` to ``path`` atomically (temporary zip in the same folder, then rename).

    Raises:
        OSError: naming ``path`` (not the temporary zip), with the original errno and reason
            (e.g. a full disk); the temporary zip is removed.
    """
    tmp = path.with_name(f".{path.stem}.tmp.zip")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno is None:
            raise OSError(f"cannot write {path}: {exc}") from exc
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


@contextmanager
def recording_failure(run_dir: Path, resume: bool) -> Iterator[None]:
    """Run the body; if it raises, write ``run_dir/FAILED`` (the error, a note on what the
    folder holds, the traceback) and re-raise; if it succeeds, remove a stale ``FAILED``.

    Args:
        run_dir: the run folder (exists).
        resume: the body resumes the folder's model (its ``model.zip`` is from before).
    """
    mark(run_dir, RUNNING_FILE, "the run has not finished")
    (run_dir / INTERRUPTED_FILE).unlink(missing_ok=True)
    try:
        with sigterm_as_interrupt():
            yield
    except BaseException as exc:
        (run_dir / RUNNING_FILE).unlink(missing_ok=True)
        kept = ("model.zip is the model from before this resume" if resume
                else "no model.zip was written")
        if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM outside the training loop
            mark(run_dir, INTERRUPTED_FILE, f"interrupted ({exc or 'Ctrl-C'}); {kept}")
            raise
        text = (f"{type(exc).__name__}: {exc}\n"
                f"this training run failed ({kept}); the traceback follows\n\n"
                + "".join(traceback.format_exception(exc)))
        try:
            atomic_write_text(run_dir / FAILED_FILE, text)
        except OSError as write_error:
            logger.warning("could not write %s: %s", run_dir / FAILED_FILE, write_error)
        logger.warning("the run failed: see %s", run_dir / FAILED_FILE)
        raise
    (run_dir / FAILED_FILE).unlink(missing_ok=True)
    (run_dir / RUNNING_FILE).unlink(missing_ok=True)


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


def run_prefix(env_id: str, algo: str) -> str:
    """``<env id without module prefix, / as _>_<algo>`` (run folders add ``_<N>``)."""
    return f"{canonical_env_id(env_id).replace('/', '_')}_{algo}"


def run_ids(log_folder: str | Path, env_id: str, algo: str) -> list[int]:
    """The run ids ``N`` of the folders ``<prefix>_<N>`` in ``log_folder``, ascending."""
    folder = Path(log_folder)
    if not folder.is_dir():
        return []
    pattern = re.compile(re.escape(run_prefix(env_id, algo)) + r"_(\d+)")
    return sorted(int(m.group(1)) for entry in folder.iterdir()
                  if entry.is_dir() and (m := pattern.fullmatch(entry.name)))


def run_folder(log_folder: str | Path, env_id: str, algo: str, run_id: int) -> Path:
    """``<log_folder>/<prefix>_<run_id>``."""
    return Path(log_folder) / f"{run_prefix(env_id, algo)}_{run_id}"


def next_run_dir(log_folder: str | Path, env_id: str, algo: str) -> Path:
    """The folder a fresh run would take: id 0 in an empty folder, else highest + 1."""
    ids = run_ids(log_folder, env_id, algo)
    return run_folder(log_folder, env_id, algo, ids[-1] + 1 if ids else 0)


def claim_run_dir(log_folder: str | Path, env_id: str, algo: str) -> Path:
    """Create and return the next free run folder (``mkdir`` without ``exist_ok``, so two
    runs started at once never share one)."""
    Path(log_folder).mkdir(parents=True, exist_ok=True)
    while True:
        run_dir = next_run_dir(log_folder, env_id, algo)
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        mark(run_dir, RUNNING_FILE, "claimed; the run has not finished")
        return run_dir


def resume_dir(log_folder: str | Path, env_id: str, algo: str, run_id: int | None) -> Path:
    """The run folder a resume continues: ``run_id``, or the highest id.

    Raises:
        ConfigError: if that folder holds no ``model.zip``.
    """
    ids = run_ids(log_folder, env_id, algo)
    if run_id is None and not ids:
        raise ConfigError(f"--resume: no {run_prefix(env_id, algo)}_<N> run in {log_folder}")
    run_dir = run_folder(log_folder, env_id, algo, ids[-1] if run_id is None else run_id)
    if not (run_dir / "model.zip").is_file():
        failed = (f" (its training failed: see {run_dir / FAILED_FILE})"
                  if (run_dir / FAILED_FILE).is_file() else "")
        raise ConfigError(f"--resume: no model.zip in {run_dir}{failed}")
    return run_dir


EVAL_SETTINGS: tuple[tuple[str, str], ...] = (
    ("episodes", "--eval-episodes"), ("seed", "--eval-seed (default: --seed + 10000)"),
)


def check_evaluation_set(run_dir: Path, evaluation: Mapping[str, Any],
                         eval_env_kwargs: Mapping[str, Any]) -> None:
    """Refuse a resume that would evaluate on other episodes than the run's record.

    The learning curve (``evaluations.npz``) and ``references.yml`` of a run are measured on
    one evaluation set: ``evaluation`` (``episodes``, ``seed``) and the evaluation env's
    kwargs, as recorded in ``config.yml`` (older runs: ``args.yml``'s ``eval_episodes`` and
    ``seeds.eval``). Changing any of them on resume would mix two sets in one curve.

    Raises:
        ConfigError: naming the first differing setting, its recorded and its new value.
    """
    config = read_yaml(run_dir / "config.yml") if (run_dir / "config.yml").is_file() else {}
    recorded = dict(config.get("evaluation") or {})
    if not recorded and (run_dir / "args.yml").is_file():
        args = read_yaml(run_dir / "args.yml")
        recorded = {"episodes": args.get("eval_episodes"),
                    "seed": dict(args.get("seeds") or {}).get("eval")}
    new_kwargs = plain(dict(eval_env_kwargs))
    old_kwargs = resolve_config(config).get("eval_env_kwargs")
    differences = [(flag, recorded[key], evaluation[key]) for key, flag in EVAL_SETTINGS
                   if recorded.get(key) is not None and recorded[key] != evaluation[key]]
    if old_kwargs is not None:
        differences += [(f"evaluation env kwarg {key!r} (--eval-trace, --trace, --trace-set, "
                         "--eval-split, --window, --env-kwargs)", old_kwargs.get(key),
                         new_kwargs.get(key))
                        for key in sorted(set(old_kwargs) | set(new_kwargs))
                        if old_kwargs.get(key) != new_kwargs.get(key)]
    if differences:
        name, old, new = differences[0]
        raise ConfigError(
            f"--resume would change the evaluation set of {run_dir}: {name} was {old!r} when "
            f"the run started, now {new!r}; its learning curve and references.yml were measured "
            f"on the recorded episodes, so resume with the recorded value or start a new run")


def tensorboard_available() -> bool:
    """True if the ``tensorboard`` package is importable (SB3 needs it for TB logs)."""
    return importlib.util.find_spec("tensorboard") is not None


def make_logger(run_dir: Path, start: int, verbose: int) -> tuple[Any, bool]:
    """CSV (+ TensorBoard if importable, + stdout if verbose) logger of the run folder.

    TensorBoard event files go to ``run_dir/tensorboard`` (a resume adds a file there), so
    ``tensorboard --logdir <log folder>`` shows every run of the folder by its name.
    """
    from stable_baselines3.common.logger import Logger, make_output_format

    suffix = f"-resume-{start}" if start else ""
    formats = [make_output_format("csv", str(run_dir), log_suffix=suffix)]
    tensorboard = tensorboard_available()
    if tensorboard:
        formats.append(make_output_format("tensorboard", str(run_dir / "tensorboard")))
    else:
        logger.info("tensorboard is not installed: no TensorBoard logs (progress%s.csv only)",
                    suffix)
    if verbose >= 1:
        formats.append(make_output_format("stdout", str(run_dir)))
    return Logger(folder=str(run_dir), output_formats=formats), tensorboard
