"""Contender specs: the one grammar of what may run as a contender, parsed here alone.

A contender spec is the text of ``evaluate.py --agent`` / ``--policy``, of
``palgym bench run --agent`` (``python -m palgym.bench run --agent``) and, where it names a
placement, of an env's ``heuristic_action``. :func:`parse_contender` reads its kind
(:data:`KINDS`, tried in this order)::

    best | field                              best / field      the task's heuristic field
    best-known[:OPTIONS] | lower-bound        best-known /      the room's references
                                              lower-bound       (palgym.bench.reference_entry)
    planner:BODY                              planner           e.g. planner:base=pal,K=6,H=end
    selector:PATH | selector:pretrained:NAME  selector          a rule selector file (JSON)
    pretrained[:NAME] | PATH.zip | RUN_FOLDER learned           a saved SB3 model
    [ORDER/]BASE+age=Hh:ALT_ORDER/ALT         guard             palgym.policies.guards
    [ORDER/]PLACEMENT[+SUFFIX], either part   module            a user's class, imported
        as MODULE:CLASS
    [ORDER/]PLACEMENT[+SUFFIX]                heuristic         e.g. srtf/pal+backfill

(a folder counts as a run folder only when its name is not a heuristic name). ``ORDER`` is a
queue order, ``PLACEMENT`` a registered placement, ``SUFFIX`` a backfill mode (``+backfill``
first-fit, ``+easy`` EASY); :func:`parse_heuristic` parses the heuristic names (and the
heuristic part of a guard or a ``MODULE:CLASS`` name). Parsing reads no model and imports no
module, except that a heuristic name with ``MODULE:CLASS`` is imported and registered when
:func:`parse_heuristic` is asked for its label.

Where each kind runs (:data:`RUNS_IN`; :meth:`ContenderSpec.require` refuses the others with
an error naming where the kind does run): the ``agents`` package says how each kind runs
(``agents.evaluation.contenders``, ``agents.bench.runner``); an env acts only as a placement.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from palgym.errors import ConfigError
from palgym.policies.backfill import SUFFIXES, split_name, with_backfill
from palgym.policies.guards import GUARD_TOKEN, is_guard, parse_guard
from palgym.policies.loader import SPEC_SEPARATOR as MODULE_SEPARATOR

KINDS: tuple[str, ...] = ("best", "field", "best-known", "lower-bound", "planner", "selector",
                          "learned", "guard", "module", "heuristic")
"""The kinds of a contender spec, in the order :func:`parse_contender` tries them."""
BEST = "best"
"""The best heuristic combination of a field, chosen on a selection split."""
FIELD = "field"
"""Every member of a bench task's heuristic field."""
BEST_KNOWN, LOWER_BOUND = "best-known", "lower-bound"
"""The room's references: the best-known schedule per episode and a lower bound."""
PLANNER_PREFIX = "planner:"
SELECTOR_PREFIX = "selector:"
PRETRAINED_PREFIX = "pretrained:"
PRETRAINED = "pretrained"
ORDER_SEPARATOR = "/"
"""Between the queue order and the placement: ``srsf/pal+backfill``."""

PLACES: dict[str, str] = {
    "evaluate": "evaluate.py --agent / --policy",
    "bench": "palgym bench run --agent",
    "env": "an env's heuristic_action",
}
"""Where a contender spec is read, as named in errors."""
RUNS_IN: dict[str, tuple[str, ...]] = {
    "heuristic": ("evaluate", "bench", "env"),
    "module": ("evaluate", "bench", "env"),
    "guard": ("evaluate", "bench"),
    "learned": ("evaluate", "bench"),
    "selector": ("evaluate", "bench"),
    "planner": ("evaluate", "bench"),
    "best": ("evaluate", "bench"),
    "field": ("bench",),
    "best-known": ("bench",),
    "lower-bound": ("bench",),
}
"""The places (:data:`PLACES`) where each kind runs. An env acts as a placement alone (its
queue order is its own: no ``ORDER/`` there); a guard runs on the engine's rule selection (in
the bench on the engine, its schedule recorded); ``field`` and the room's references are the
bench's."""
DESCRIPTIONS: dict[str, str] = {
    "heuristic": "a heuristic name",
    "module": "a heuristic name with a MODULE:CLASS",
    "guard": "an aging guard (it runs on the engine's rule selection)",
    "learned": "a saved model",
    "selector": "a rule selector (it runs on the engine's rule selection)",
    "planner": "a rollout planner",
    "best": "the best heuristic of a field, chosen on a selection split",
    "field": "a bench task's heuristic field",
    "best-known": "the room's best-known schedules (a reference that sees the whole trace)",
    "lower-bound": "the room's lower bound (a reference)",
}


@dataclass(frozen=True)
class ContenderSpec:
    """A parsed contender spec.

    Attributes:
        kind: one of :data:`KINDS`.
        text: the spec as given.
        body: what the kind's runner reads: a planner's text after ``planner:``; a
            selector's file path, or its pretrained NAME; a model's spec as given (a zip, a
            run folder, ``pretrained[:NAME]``); a heuristic, module or guard name as given;
            ``best`` / ``field``.
        pretrained: a pretrained model (``pretrained[:NAME]``) or selector
            (``selector:pretrained:NAME``).
    """

    kind: str
    text: str
    body: str
    pretrained: bool = False

    def runs_in(self, place: str) -> bool:
        """Whether this kind runs at ``place`` (a key of :data:`PLACES`)."""
        return place in RUNS_IN[self.kind]

    def require(self, place: str, where: str) -> ContenderSpec:
        """This spec, if its kind runs at ``place``.

        Raises:
            ConfigError: naming ``where``, the spec, its kind and the places where it runs.
        """
        if not self.runs_in(place):
            raise ConfigError(f"{where} {self.text!r} is {DESCRIPTIONS[self.kind]}: it runs in "
                              f"{places_text(RUNS_IN[self.kind])}, not in {PLACES[place]}")
        return self

    @property
    def is_heuristic(self) -> bool:
        """A heuristic name (plain, with a ``MODULE:CLASS``, or a guard)."""
        return self.kind in ("heuristic", "module", "guard")


def parse_contender(text: str, where: str = "--agent") -> ContenderSpec:
    """The kind and body of contender spec ``text`` (module docstring).

    Args:
        text: the spec.
        where: what gave it (``--agent``, a file and field, ...), named in errors.

    Raises:
        ConfigError: naming ``where`` and ``text``, for an empty spec, ``selector:`` without
            a path, or ``selector:pretrained:NAME`` whose NAME is not a plain file name (a
            separator, ``..``, absolute, empty). A model's ``pretrained:NAME`` is checked
            where it is loaded (:func:`agents.sb3.learned.resolve_model_path`).
    """
    if not text:
        raise ConfigError(f"{where}: an empty contender spec")
    head = text.split(":", 1)[0]
    if text in (BEST, FIELD) or head in (BEST_KNOWN, LOWER_BOUND):
        return ContenderSpec(head, text, text)
    if text.startswith(PLANNER_PREFIX):
        return ContenderSpec("planner", text, text[len(PLANNER_PREFIX):])
    if text.startswith(SELECTOR_PREFIX):
        return _selector_spec(text, where)
    if text == PRETRAINED or text.startswith(PRETRAINED_PREFIX):
        return ContenderSpec("learned", text, text, True)
    if text.endswith(".zip"):
        return ContenderSpec("learned", text, text)
    if GUARD_TOKEN in text:
        return ContenderSpec("guard", text, text)
    if MODULE_SEPARATOR in text:
        return ContenderSpec("module", text, text)
    if Path(text).is_dir() and not _is_heuristic_name(text):
        return ContenderSpec("learned", text, text)
    return ContenderSpec("heuristic", text, text)


def _selector_spec(text: str, where: str) -> ContenderSpec:
    """``selector:PATH`` or ``selector:pretrained:NAME`` (NAME a plain file name)."""
    rest = text[len(SELECTOR_PREFIX):]
    pretrained = rest.startswith(PRETRAINED_PREFIX)
    body = rest[len(PRETRAINED_PREFIX):] if pretrained else rest
    if pretrained and not _is_plain_name(body):
        raise ConfigError(f"{where} {text}: 'selector:pretrained:NAME' takes the plain name of "
                          "a selector file, not a path")
    if not body:
        raise ConfigError(f"{where} {text}: give selector:PATH (a selector JSON file)")
    return ContenderSpec("selector", text, body, pretrained)


def _is_plain_name(name: str) -> bool:
    """A file name alone: not empty, no separator, no ``..``, not absolute."""
    return not (not name or Path(name).is_absolute()
                or any(part in name for part in ("/", "\\", "..", "\0")))


def _is_heuristic_name(text: str) -> bool:
    try:
        parse_heuristic(text)
    except ConfigError:
        return False
    return True


def check_placement_spec(text: str, where: str) -> None:
    """Refuse ``text`` where a placement is read (an env's ``heuristic_action``) when it is
    a contender spec of another kind, or names a queue order (the env's is its own).

    Raises:
        ConfigError: naming ``where``, the spec and where it runs (:meth:`ContenderSpec.require`).
    """
    spec = parse_contender(text, where).require("env", where)
    if ORDER_SEPARATOR in text:  # a guard, a model path: refused above
        order, placement = text.split(ORDER_SEPARATOR, 1)
        raise ConfigError(f"{where} {spec.text!r}: an env acts as a placement under its own "
                          f"queue order: give {placement!r} here, in an env made with "
                          f"queue_order={order!r}; {spec.text!r} as one contender runs in "
                          f"{places_text(('evaluate', 'bench'))}")


def places_text(places: tuple[str, ...]) -> str:
    """``A``, ``A and B``, ``A, B and C`` of the :data:`PLACES` named."""
    names = [PLACES[p] for p in places]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


# --------------------------------------------------------------------------- heuristic names
@dataclass(frozen=True)
class HeuristicName:
    """A parsed heuristic name.

    Attributes:
        queue_order: its own queue order, or None (the episode's).
        placement: the placement without suffix (one of :data:`palgym.policies.PLACEMENT_NAMES`),
            or a guard's placement text (``pal+backfill+age=32h:fifo/pal+easy``).
        backfill: the backfill mode (``none``, ``first-fit``, ``easy``).
    """

    queue_order: str | None
    placement: str
    backfill: str

    @property
    def placement_name(self) -> str:
        """The placement with its backfill suffix (``pal+backfill``)."""
        return with_backfill(self.placement, self.backfill)

    @property
    def label(self) -> str:
        """The canonical name: ``ORDER/PLACEMENT+SUFFIX`` (no ``ORDER/`` without an order)."""
        return format_label(self.queue_order, self.placement_name)


def format_label(queue_order: str | None, placement_name: str) -> str:
    """``ORDER/PLACEMENT_NAME``, or ``PLACEMENT_NAME`` when ``queue_order`` is None."""
    return placement_name if queue_order is None else (
        f"{queue_order}{ORDER_SEPARATOR}{placement_name}")


def known_names_text() -> str:
    """What a heuristic name may be, for error messages."""
    from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES

    return (f"[ORDER/]PLACEMENT[{'|'.join(SUFFIXES.values())}] with ORDER one of "
            f"{', '.join(QUEUE_ORDER_NAMES)} and PLACEMENT one of {', '.join(PLACEMENT_NAMES)} "
            "(or either as MODULE:CLASS)")


def parse_heuristic(text: str, argument: str = "heuristic") -> HeuristicName:
    """Parse a heuristic name ``[ORDER/]PLACEMENT[+backfill|+easy]`` (or a guard,
    :mod:`palgym.policies.guards`).

    Args:
        text: the name, e.g. ``srsf/pal+backfill``.
        argument: what gave it (``--policy``, a file and field, ...), named in the error.

    Returns:
        The parsed name (its :attr:`~HeuristicName.label` equals ``text``, with a user's
        ``MODULE:CLASS`` replaced by the name it registers).

    Raises:
        ConfigError: naming ``argument`` and ``text``, for an unknown queue order, placement
            or suffix, an empty part, or a ``MODULE:CLASS`` that cannot be imported or
            registered.
    """
    from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES, placement_name, queue_order_name
    from palgym.policies.registry import BACKFILLING_PLACEMENT_NAMES

    order: str | None = None
    rest = text
    where = f"{argument} {text!r}".strip()
    if ORDER_SEPARATOR in text and not is_guard(text.split(ORDER_SEPARATOR, 1)[0]):
        order, rest = text.split(ORDER_SEPARATOR, 1)
        if MODULE_SEPARATOR in order:  # a user's class: imported and registered
            order = queue_order_name(order, where)
        if order not in QUEUE_ORDER_NAMES:
            raise ConfigError(f"{where}: unknown queue order {order!r}; expected "
                              f"{known_names_text()}")
    if is_guard(rest):  # BASE+age=Hh:ALT_ORDER/ALT (palgym.policies.guards)
        return HeuristicName(order, parse_guard(rest, argument or "guard").placement, "none")
    if MODULE_SEPARATOR in rest:
        rest = placement_name(rest, where)
    placement, backfill = split_name(rest)
    if placement not in PLACEMENT_NAMES:
        raise ConfigError(f"{where}: unknown placement {placement!r}; expected "
                          f"{known_names_text()}")
    if backfill != "none" and placement not in BACKFILLING_PLACEMENT_NAMES:
        raise ConfigError(f"{where}: placement {placement!r} takes no backfill mode")
    return HeuristicName(order, placement, backfill)


__all__ = ["BEST", "BEST_KNOWN", "DESCRIPTIONS", "FIELD", "KINDS", "LOWER_BOUND", "PLACES",
           "RUNS_IN", "ContenderSpec", "HeuristicName", "check_placement_spec", "format_label",
           "known_names_text", "parse_contender", "parse_heuristic", "places_text"]
