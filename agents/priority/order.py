"""A linear priority order: each active job's key is ``w . phi(job)``, lower keys first.

The features phi (float64, one row per active job, :data:`FEATURES`), all known to a
scheduler that knows job durations (``duration_knowledge`` ``clairvoyant`` or ``noisy``):

- ``ln_remaining_gpu_h``: ln(1 + remaining GPU-hours), the remaining time (s, the order's
  ``remaining`` rule: :func:`palgym.policies.durations.remaining_time_s`, clipped at 0) x the
  job's GPU count / 3600; alone it is SRSF's order (Gu et al., "Tiresias", NSDI'19, Section 2.2);
- ``ln_remaining_h``: ln(1 + remaining hours), alone SRTF's order;
- ``ln_queued_h``: ln(1 + hours queued), hours queued = (now - submit - attained wall-clock
  service) / 3600, clipped at 0 (the aging term; as the rule-selection state's first feature);
- ``ln_gpus``: ln(GPU count);
- ``queued_days``: hours queued / 24 (a linear aging term).

Every key starts with the job's starvation priority, as palgym's orders do
(:mod:`palgym.policies.ordering`), and ties keep admission order (``np.lexsort`` is stable).
With weights (1, 0, 0, 0, 0) the order is SRSF's; (1, 0, -a, 0, 0) ranks by
(1 + remaining GPU-h) / (1 + hours queued)^a, a response-ratio rule (HRRN's family: P. Brinch
Hansen, *Operating System Principles*, 1973).

A trained order is a JSON file (:data:`FORMAT`: the weights, the placement it was trained
with, how it was trained); :class:`PretrainedPriorityOrder` subclasses bind one file each, so
that a trained order has a ``MODULE:CLASS`` name that every palgym command accepts
(:mod:`palgym.policies.loader`; :mod:`agents.priority.pretrained`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from palgym.errors import ConfigError
from palgym.policies.durations import CLAIRVOYANT, Durations, remaining_time_s
from palgym.sim.config import PolicyOptions, RemainingTime
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.views import SimView

FORMAT = "palgym-priority-order/1"
"""The ``format`` of a saved order (:func:`save_order`)."""
FEATURES: tuple[str, ...] = ("ln_remaining_gpu_h", "ln_remaining_h", "ln_queued_h", "ln_gpus",
                             "queued_days")
"""The features' names, in the weights' order (the module docstring defines each)."""
SRSF_WEIGHTS: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0)
"""The weights whose order is SRSF's (the training's start)."""


def job_features(sim: SimView, active: IntArray, durations: Durations = CLAIRVOYANT,
                 remaining: RemainingTime = RemainingTime.IDEAL) -> FloatArray:
    """float64 (len(active), len(FEATURES)): the features of the jobs ``active`` (int64 job
    indices) at the view's time (the module docstring).

    Raises:
        ConfigError: under ``unknown`` duration knowledge (no remaining time).
    """
    jobs = sim.jobs
    rem_h = np.maximum(remaining_time_s(sim, active, durations, remaining), 0.0) / 3600.0
    gpus = jobs.num_gpus[active].astype(np.float64)
    queued_h = np.maximum(sim.now_s - jobs.submit_time_s[active]
                          - jobs.attained_service_s[active], 0.0) / 3600.0
    return np.column_stack((np.log1p(rem_h * gpus), np.log1p(rem_h), np.log1p(queued_h),
                            np.log(gpus), queued_h / 24.0))


@dataclass(frozen=True)
class LinearPriorityOrder:
    """A queue order (:class:`palgym.policies.base.QueueOrder`) by the key ``w . phi``.

    Attributes:
        weights: float (len(FEATURES),), the key's weights.
        durations: what the order knows of job durations (not ``unknown``).
        remaining: the remaining-time rule (the episode's ``srtf_remaining``, as SRTF's).

    Raises:
        ConfigError: for weights of the wrong length or not finite, or durations withheld.
    """

    weights: tuple[float, ...] = SRSF_WEIGHTS
    durations: Durations = CLAIRVOYANT
    remaining: RemainingTime = RemainingTime.IDEAL
    name: str = "linear-priority"
    static: bool = False
    _w: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != (len(FEATURES),) or not np.all(np.isfinite(w)):
            raise ConfigError(f"priority weights: {len(FEATURES)} finite numbers "
                              f"({', '.join(FEATURES)}), got {self.weights!r}")
        self.durations.require_known(f"queue order {self.name!r}")
        object.__setattr__(self, "_w", w)

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, key)."""
        active = sim.active()
        key = job_features(sim, active, self.durations, self.remaining) @ self._w
        return active[np.lexsort((key, sim.jobs.priority[active]))]


def save_order(path: str | Path, weights: FloatArray, placement: str,
               training: dict[str, Any]) -> Path:
    """Write a trained order's JSON file atomically (:data:`FORMAT`: ``weights`` by feature
    name, the ``placement`` it was trained with, the ``training`` record)."""
    from palgym.io.atomic import atomic_write_text

    doc = {"format": FORMAT, "features": list(FEATURES),
           "weights": {name: float(w) for name, w in zip(FEATURES, weights, strict=True)},
           "placement": placement, "training": training}
    return atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def read_order(path: str | Path) -> tuple[tuple[float, ...], dict[str, Any]]:
    """(weights in :data:`FEATURES` order, the whole document) of a trained order's file.

    Raises:
        ConfigError: naming the file and field, for a file that is missing, not JSON, of
            another format, or whose weights are not exactly :data:`FEATURES` as numbers.
    """
    where = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the priority order: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: not a JSON priority order ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigError(f"{where}: field 'format': expected {FORMAT!r}")
    weights = doc.get("weights")
    if not isinstance(weights, dict) or set(weights) != set(FEATURES):
        raise ConfigError(f"{where}: field 'weights': one number per feature "
                          f"({', '.join(FEATURES)})")
    values = tuple(weights[name] for name in FEATURES)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               and np.isfinite(v) for v in values):
        raise ConfigError(f"{where}: field 'weights': finite numbers expected")
    return tuple(float(v) for v in values), doc


class PretrainedPriorityOrder:
    """Base of the classes that bind one trained file (:attr:`path`) to a ``MODULE:CLASS``
    queue-order name (a subclass sets ``name`` and ``path``; palgym fills ``durations`` and
    ``options``, :mod:`palgym.policies.loader`).

    Raises:
        ConfigError: as :func:`read_order`, or durations withheld.
    """

    name: ClassVar[str] = ""
    static: ClassVar[bool] = False
    path: ClassVar[Path]

    def __init__(self, durations: Durations = CLAIRVOYANT,
                 options: PolicyOptions | None = None) -> None:
        weights, _ = read_order(self.path)
        remaining = RemainingTime.IDEAL if options is None else options.srtf_remaining
        self._order = LinearPriorityOrder(weights, durations, remaining, name=self.name)

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, key) (:meth:`LinearPriorityOrder.order`)."""
        return self._order.order(sim)
