"""The one registry of placements, queue orders and backfill modes, by the names used in CLIs
and result tables.

Each policy is registered once, with its traits and its optional forms:

- a **placement** (:class:`PlacementEntry`): how to make it from an episode's
  :class:`PolicyContext`, whether it is sticky, whether the env's rounds class-reorder for it,
  the random streams it draws from, whether it takes a backfill mode, and two optional forms: a
  **compiled form** for the compiled heuristic loop (:mod:`palgym.driver.plan`; without one the
  Python loop runs it) and a **candidate kind** for the env (the candidate its heuristic agent
  takes, :mod:`palgym.envs.heuristics`; without one the env asks the placement itself and
  takes the candidate equal to its choice, :mod:`palgym.envs.policy_agent`);
- a **queue order** (:class:`QueueOrderEntry`): how to make it, whether it reads job
  durations, and an optional compiled form;
- a **backfill mode** (:class:`BackfillEntry`): its name suffix and whether it reads job
  durations.

Every list of names is a live view of the registry (:class:`NameView`:
:data:`palgym.policies.PLACEMENT_NAMES` and the others); the paper's placements and queue
orders keep their own views (``paper=True``: :data:`palgym.policies.PAPER_PLACEMENT_NAMES`).
palgym's own policies are registered by :mod:`palgym.policies.catalog`; a user's class by
:func:`palgym.policies.loader.register_placement` (or ``MODULE:CLASS`` on a command line).
A name is looked up when a policy is made or an env checks it, never per decision.

The registry is the core's one mutable module-level object: policy definitions, added at
import or start-up time; :meth:`Registry.snapshot` and :meth:`Registry.restore` put it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar, overload

from palgym.errors import ConfigError
from palgym.policies.backfill import NO_BACKFILL, Backfill
from palgym.policies.base import PlacementPolicy, QueueOrder
from palgym.policies.compiled_rules import ClassTables
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import Choice, PolicyOptions, SimConfig
from palgym.sim.views import SimView

PLACEMENT_STREAM = "placement"
"""The episode's placement random stream (``Episode.placement_rng``, drawn through the
sampler): the one stream a placement may draw from."""


class CandidateKind(Choice):
    """The env's form of a placement: the candidate its heuristic agent takes for a job
    (:func:`palgym.envs.heuristics.heuristic_candidate`)."""

    PAL_MATRIX = "pal-matrix"
    """The first feasible entry of PAL's cost order (``within[t]`` / ``best[t]``)."""
    BEST_FACTOR = "best-factor"
    """PM-First's best-factor candidate at the class's top tier."""
    PACKED = "packed"
    """The Packed candidate."""
    RANDOM = "random"
    """The Random candidate (drawn from the placement stream when taken)."""


class PolicyContext(NamedTuple):
    """What a placement's maker may read of an episode (the factories fill it).

    Attributes:
        factors: the slowdown factors it decides on.
        config: the episode's configuration (its policy options).
        backfill: the walk's backfilling (placements that take one).
        durations: what it knows of job durations.
    """

    factors: SlowdownFactors
    config: SimConfig
    backfill: Backfill = NO_BACKFILL
    durations: Durations = CLAIRVOYANT


class CompiledRule(NamedTuple):
    """A placement's compiled form for one episode (:mod:`palgym.policies.place_kernel`).

    Attributes:
        rule: (rule code, sticky, strict total, keep victims stopped), int each.
        tables: the class tables the rule reads (None: none).
    """

    rule: tuple[int, int, int, int]
    tables: ClassTables | None


CompiledPlacement = Callable[[SimView, Any], "CompiledRule | str"]
"""A placement's compiled form: ``(view, placement) -> CompiledRule`` or the reason (a
phrase) it does not serve this episode."""
CompiledOrder = Callable[[Any], "int | str"]
"""A queue order's compiled form: ``order -> key code`` (:mod:`palgym.policies.order_kernel`)
or the reason it has none."""


@dataclass(frozen=True)
class PlacementEntry:
    """One registered placement.

    Attributes:
        name: its name in CLIs and tables (without a backfill suffix).
        make: builds it for an episode.
        sticky: running jobs keep their GPUs (the env's ``sticky``).
        class_reorder: the env's rounds class-reorder the fitting prefix for it (PM-First, PAL).
        streams: the random streams it draws from (:data:`PLACEMENT_STREAM`; empty: none).
        backfills: it takes a backfill mode (``NAME+backfill``, ``NAME+easy``).
        candidate: its env form (None: the env asks :attr:`make`'s object for its choice).
        compiled: its compiled form (None: the Python loop runs it).
        kinds: the classes of the objects :attr:`make` returns (the compiled form's lookup).
        paper: one of the paper's six (PAL, SC24, Section IV).
        origin: ``MODULE:QUALNAME`` of a user's class, importable by other processes (None:
            palgym's own, registered on import).
    """

    name: str
    make: Callable[[PolicyContext], PlacementPolicy]
    sticky: bool
    class_reorder: bool = False
    streams: tuple[str, ...] = ()
    backfills: bool = False
    candidate: CandidateKind | None = None
    compiled: CompiledPlacement | None = None
    kinds: tuple[type, ...] = ()
    paper: bool = False
    origin: str | None = None

    @property
    def deterministic(self) -> bool:
        """It draws no random numbers."""
        return not self.streams


@dataclass(frozen=True)
class QueueOrderEntry:
    """One registered queue order.

    Attributes:
        name: its name in CLIs and tables.
        make: builds it from what the scheduler knows of durations and the episode's policy
            options.
        reads_durations: it reads job durations (refused under ``duration_knowledge='unknown'``).
        compiled: its compiled form (None: the Python loop runs it).
        kinds: the classes of the objects :attr:`make` returns.
        paper: one of the orders the paper's artifact runs.
        origin: as :attr:`PlacementEntry.origin`.
    """

    name: str
    make: Callable[[Durations, PolicyOptions], QueueOrder]
    reads_durations: bool = False
    compiled: CompiledOrder | None = None
    kinds: tuple[type, ...] = ()
    paper: bool = False
    origin: str | None = None


@dataclass(frozen=True)
class BackfillEntry:
    """One registered backfill mode (:mod:`palgym.policies.backfill`).

    Attributes:
        name: the mode (``none``, ``first-fit``, ``easy``).
        suffix: its placement-name suffix (``+backfill``; empty for ``none``).
        reads_durations: it reads job durations (EASY's reservation).
    """

    name: str
    suffix: str = ""
    reads_durations: bool = False


Entry = PlacementEntry | QueueOrderEntry | BackfillEntry


class Registry:
    """Placements, queue orders and backfill modes by name, in registration order."""

    def __init__(self) -> None:
        self.placements: dict[str, PlacementEntry] = {}
        self.queue_orders: dict[str, QueueOrderEntry] = {}
        self.backfills: dict[str, BackfillEntry] = {}

    def add(self, entry: Entry) -> Entry:
        """Register ``entry`` and return it; registering the same policy again (the same
        classes, or a user's class of the same origin: a re-imported module) replaces its
        entry in place (e.g. now with a compiled form).

        Raises:
            ConfigError: for a name (or a placement name ending in a backfill suffix) taken
                by another entry of its kind, or a name with ``/``, ``:`` or spaces at its
                ends.
        """
        table: dict[str, Any] = self._table(entry)
        taken = table.get(entry.name)
        if taken is not None:
            if taken == entry or (not isinstance(entry, BackfillEntry) and (
                    (entry.kinds and taken.kinds == entry.kinds)
                    or (entry.origin is not None and taken.origin == entry.origin))):
                table[entry.name] = entry
                return entry
            raise ConfigError(f"{_KIND[type(entry)]} name {entry.name!r} is already registered"
                              f" ({taken.origin or 'palgym'}): choose another name")
        if isinstance(entry, PlacementEntry):
            for mode in self.backfills.values():
                if mode.suffix and entry.name.endswith(mode.suffix):
                    raise ConfigError(f"placement name {entry.name!r} ends in the backfill "
                                      f"suffix {mode.suffix!r}: choose another name")
        if (not entry.name or entry.name != entry.name.strip()
                or any(c in entry.name for c in "/:")):
            raise ConfigError(f"{_KIND[type(entry)]} name {entry.name!r}: a non-empty name "
                              "without spaces at its ends, '/' or ':'")
        table[entry.name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Forget the user's placement or queue order called ``name``.

        Raises:
            ConfigError: for an unknown name or one of palgym's own.
        """
        for table in (self.placements, self.queue_orders):
            entry = table.get(name)
            if entry is not None:
                if entry.origin is None:
                    raise ConfigError(f"{name!r} is one of palgym's own policies")
                del table[name]
                return
        raise ConfigError(f"no user policy {name!r} is registered")

    def snapshot(self) -> tuple[dict[str, PlacementEntry], dict[str, QueueOrderEntry],
                                dict[str, BackfillEntry]]:
        """The registry's contents, for :meth:`restore`."""
        return dict(self.placements), dict(self.queue_orders), dict(self.backfills)

    def restore(self, state: tuple[dict[str, PlacementEntry], dict[str, QueueOrderEntry],
                                   dict[str, BackfillEntry]]) -> None:
        """Put back the contents of a :meth:`snapshot`."""
        placements, queue_orders, backfills = state
        self.placements, self.queue_orders = dict(placements), dict(queue_orders)
        self.backfills = dict(backfills)

    def _table(self, entry: Entry) -> dict[str, Any]:
        if isinstance(entry, PlacementEntry):
            return self.placements
        if isinstance(entry, QueueOrderEntry):
            return self.queue_orders
        return self.backfills


_KIND: dict[type, str] = {PlacementEntry: "placement", QueueOrderEntry: "queue order",
                          BackfillEntry: "backfill mode"}

REGISTRY = Registry()
"""The registry (see the module docstring)."""


_Entry = TypeVar("_Entry")


def known(names: Sequence[str]) -> str:
    """``names`` joined for an error message."""
    return ", ".join(names)


def placement_entry(name: str) -> PlacementEntry:
    """The placement registered as ``name`` (no backfill suffix).

    Raises:
        ConfigError: for an unknown name, listing the known ones.
    """
    return _entry(REGISTRY.placements, "placement", name, PLACEMENT_NAMES,
                  " (each also as NAME+backfill or NAME+easy; or MODULE:CLASS)")


def queue_order_entry(name: str) -> QueueOrderEntry:
    """The queue order registered as ``name``; raises as :func:`placement_entry`."""
    return _entry(REGISTRY.queue_orders, "queue order", name, QUEUE_ORDER_NAMES,
                  " (or MODULE:CLASS)")


def backfill_entry(mode: str) -> BackfillEntry:
    """The backfill mode ``mode``; raises as :func:`placement_entry`."""
    return _entry(REGISTRY.backfills, "backfill", mode, BACKFILL_MODES, "")


def _entry(table: Mapping[str, _Entry], kind: str, name: str, names: Sequence[str],
           alternatives: str) -> _Entry:
    """``table[name]``, or a ConfigError naming the ``kind``, the known ``names`` and the
    ``alternatives`` (text appended to the message)."""
    entry = table.get(name)
    if entry is None:
        raise ConfigError(f"unknown {kind} {name!r}; known: {known(names)}{alternatives}")
    return entry


def entry_of(policy: object) -> PlacementEntry | QueueOrderEntry | None:
    """The entry whose maker returns objects of ``policy``'s exact class (None: none; a
    wrapper such as a checked user placement is its own class)."""
    kind = type(policy)
    for table in (REGISTRY.placements, REGISTRY.queue_orders):
        for entry in table.values():
            if kind in entry.kinds:
                return entry
    return None


class NameView(Sequence[str]):
    """A live, read-only view of registered names (equal to the tuple of its names).

    Args:
        names: gives the names now.
    """

    def __init__(self, names: Callable[[], tuple[str, ...]]) -> None:
        self._names = names

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:
        return self._names() + tuple(other)

    def __radd__(self, other: Sequence[str]) -> tuple[str, ...]:
        return tuple(other) + self._names()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NameView | tuple | list):
            return self._names() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a live view: equal to tuples, not hashable

    def __repr__(self) -> str:
        return repr(self._names())


def _view(table: str, keep: Callable[[Any], bool] | None = None) -> NameView:
    """The names of ``table``'s entries that ``keep`` keeps (all: None), in registration
    order."""
    def names() -> tuple[str, ...]:
        entries = getattr(REGISTRY, table).values()
        return tuple(e.name for e in entries if keep is None or keep(e))

    return NameView(names)


def _backfilled() -> tuple[str, ...]:
    """Every placement that takes a backfill mode, with each mode's suffix (mode-major)."""
    return tuple(placement.name + mode.suffix for mode in REGISTRY.backfills.values()
                 if mode.suffix for placement in REGISTRY.placements.values()
                 if placement.backfills)


PLACEMENT_NAMES = _view("placements")
"""Every registered placement (palgym's six first; :mod:`palgym.policies.catalog`)."""
PAPER_PLACEMENT_NAMES = _view("placements", lambda e: e.paper)
"""The paper's six placements (PAL, SC24, Section IV): the fidelity tests' set."""
QUEUE_ORDER_NAMES = _view("queue_orders")
"""Every registered queue order."""
DURATION_ORDER_NAMES = _view("queue_orders", lambda e: e.reads_durations)
"""The queue orders that read job durations (refused under ``duration_knowledge='unknown'``)."""
BACKFILL_MODES = _view("backfills")
"""Every backfill mode (``none`` first)."""
DURATION_BACKFILL_MODES = _view("backfills", lambda e: e.reads_durations)
"""The backfill modes that read job durations."""
STICKY_PLACEMENT_NAMES = _view("placements", lambda e: e.sticky)
"""The sticky placements."""
CLASS_REORDER_PLACEMENT_NAMES = _view("placements", lambda e: e.class_reorder)
"""The placements whose env rounds class-reorder (PM-First, PAL)."""
DRAWING_PLACEMENT_NAMES = _view("placements", lambda e: bool(e.streams))
"""The placements that draw random numbers."""
BACKFILLING_PLACEMENT_NAMES = _view("placements", lambda e: e.backfills)
"""The placements that take a backfill mode."""
COMPILED_PLACEMENT_NAMES = _view("placements", lambda e: e.compiled is not None)
"""The placements with a compiled form."""
COMPILED_QUEUE_ORDER_NAMES = _view("queue_orders", lambda e: e.compiled is not None)
"""The queue orders with a compiled form."""
BACKFILL_PLACEMENT_NAMES = NameView(_backfilled)
"""Every placement that backfills with first-fit, then with EASY (``pal+backfill``, ...)."""

