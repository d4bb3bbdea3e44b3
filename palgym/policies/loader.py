"""A user's policy classes in the registry: :func:`register_placement` /
:func:`register_queue_order` (a call or a class decorator), and ``MODULE:CLASS`` names
(:func:`placement_name`, :func:`queue_order_name`: the module is imported and its class
registered, e.g. ``evaluate.py --policy mypkg.mymodule:MyPlacement``).

A registered class is made as palgym's factories make their own policies: its constructor's
parameters named ``factors``, ``config``, ``durations`` or ``backfill`` are filled from the
episode (:class:`palgym.policies.registry.PolicyContext`; a queue order gets ``durations`` and
``options``, the episode's :class:`~palgym.sim.config.PolicyOptions`), every other parameter
keeps its default. Its traits are its class attributes: ``name`` (str), ``sticky`` and
``deterministic`` (bool) for a placement, with an optional ``class_reorder`` (bool, default
False: whether the env's rounds class-reorder for it); ``name`` and ``static`` for a queue
order. Each object it makes is checked as ``run_episode``
checks a policy object (:func:`palgym.policies.base.check_placement`), and must carry the
registered name and traits.

A registered class runs everywhere a name runs: ``run_episode``, the heuristic table and
side-by-side comparisons of ``evaluate.py`` (its sweeps' worker processes import the class by
its ``MODULE:QUALNAME``, :func:`origins_of` / :func:`load_origins`), ``--best-field``, and the
env as a heuristic agent (:mod:`palgym.envs.policy_agent`). Without a compiled form it runs on
the Python loop.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from palgym.errors import ConfigError
from palgym.policies.backfill import split_name, with_backfill
from palgym.policies.base import (
    PLACEMENT_MEMBERS,
    QUEUE_ORDER_MEMBERS,
    PlacementPolicy,
    QueueOrder,
    check_placement,
    check_queue_order,
)
from palgym.policies.durations import Durations
from palgym.policies.registry import (
    PLACEMENT_STREAM,
    REGISTRY,
    CandidateKind,
    CompiledOrder,
    CompiledPlacement,
    PlacementEntry,
    PolicyContext,
    QueueOrderEntry,
    placement_entry,
    queue_order_entry,
)
from palgym.sim.config import PolicyOptions

T = TypeVar("T", bound=type)
SPEC_SEPARATOR = ":"
"""Between the module and the class of a ``MODULE:CLASS`` name."""
PLACEMENT_FILLS = ("factors", "config", "durations", "backfill")
"""Constructor parameters of a placement class that palgym fills from the episode."""
QUEUE_ORDER_FILLS = ("durations", "options")
"""Constructor parameters of a queue-order class that palgym fills."""


def register_placement(cls: T | None = None, /, *, name: str | None = None,
                       sticky: bool | None = None, deterministic: bool | None = None,
                       class_reorder: bool | None = None,
                       candidate: CandidateKind | None = None,
                       compiled: CompiledPlacement | None = None) -> Any:
    """Register a placement class (or, without ``cls``, return a class decorator that does).

    Args:
        cls: the class (see the module docstring for its members and constructor).
        name, sticky, deterministic, class_reorder: its traits, when not class attributes.
        candidate: its env form, only if its rule is exactly that candidate's for every job
            (None: the env asks the placement, :mod:`palgym.envs.policy_agent`).
        compiled: its compiled form (:mod:`palgym.policies.compiled_forms`; None: the
            Python loop runs it).

    Returns:
        ``cls`` (or the decorator).

    Raises:
        ConfigError: naming the class and the member or parameter at fault: a missing
            member, a trait of the wrong type, a constructor parameter palgym cannot fill, or
            a name already taken.
    """
    def register(klass: T) -> T:
        traits = _traits(klass, "placement policy", PLACEMENT_MEMBERS,
                         {"name": name, "sticky": sticky, "deterministic": deterministic})
        reorder = class_reorder if class_reorder is not None else getattr(
            klass, "class_reorder", False)
        _check_bool(klass, "class_reorder", reorder)
        fills = _fills(klass, PLACEMENT_FILLS)
        entry = PlacementEntry(
            name=traits["name"], make=_placement_maker(klass, fills, traits),
            sticky=bool(traits["sticky"]), class_reorder=bool(reorder),
            streams=() if traits["deterministic"] else (PLACEMENT_STREAM,),
            backfills="backfill" in fills, candidate=candidate, compiled=compiled,
            kinds=(klass,), origin=origin_of(klass))
        REGISTRY.add(entry)
        return klass

    return register if cls is None else register(cls)


def register_queue_order(cls: T | None = None, /, *, name: str | None = None,
                         static: bool | None = None,
                         compiled: CompiledOrder | None = None) -> Any:
    """Register a queue-order class (or return a decorator), as :func:`register_placement`.

    Raises:
        ConfigError: as :func:`register_placement`.
    """
    def register(klass: T) -> T:
        traits = _traits(klass, "queue order", QUEUE_ORDER_MEMBERS,
                         {"name": name, "static": static})
        fills = _fills(klass, QUEUE_ORDER_FILLS)
        made = {"name": traits["name"], "static": traits["static"]}

        def make(durations: Durations, options: PolicyOptions) -> QueueOrder:
            values = {"durations": durations, "options": options}
            order = check_queue_order(klass(**{p: values[p] for p in fills}))
            return _same_traits(order, made, klass)

        REGISTRY.add(QueueOrderEntry(
            name=traits["name"], make=make, reads_durations="durations" in fills,
            compiled=compiled, kinds=(klass,), origin=origin_of(klass)))
        return klass

    return register if cls is None else register(cls)


def unregister(name: str) -> None:
    """Forget the user's placement or queue order called ``name``.

    Raises:
        ConfigError: for an unknown name or one of palgym's own.
    """
    REGISTRY.remove(name)


def placement_name(text: str, where: str | None = None) -> str:
    """The registered name of placement ``text`` (``NAME[+SUFFIX]`` or
    ``MODULE:CLASS[+SUFFIX]``, whose class it imports and registers), with its suffix.

    Args:
        text: the name.
        where: what gave it, at the head of an error (default ``placement 'TEXT'``; e.g.
            ``--policy 'TEXT'``).

    Raises:
        ConfigError: ``"{where}: ..."`` for a class that cannot be imported or registered, or
            a suffix on a placement that takes no backfill mode; for an unknown name, listing
            the known ones.
    """
    where = where or f"placement {text!r}"
    base, mode = split_name(text)
    if SPEC_SEPARATOR in base:
        klass = _import(base, where)
        entry = _registered(klass, REGISTRY.placements.values())
        base = str(entry.name if entry else _checked(register_placement, klass, where).name)
    entry = placement_entry(base)
    if mode != "none" and not entry.backfills:
        raise ConfigError(f"{where}: placement {base!r} takes no backfill mode (its "
                          "constructor has no 'backfill' parameter)")
    return with_backfill(base, mode)


def queue_order_name(text: str, where: str | None = None) -> str:
    """The registered name of queue order ``text`` (``NAME`` or ``MODULE:CLASS``).

    Raises:
        ConfigError: as :func:`placement_name` (``where`` default ``queue order 'TEXT'``).
    """
    where = where or f"queue order {text!r}"
    if SPEC_SEPARATOR in text:
        klass = _import(text, where)
        entry = _registered(klass, REGISTRY.queue_orders.values())
        return str(entry.name if entry else _checked(register_queue_order, klass, where).name)
    return queue_order_entry(text).name


def origin_of(klass: type) -> str:
    """``MODULE:QUALNAME`` of ``klass``."""
    return f"{klass.__module__}{SPEC_SEPARATOR}{klass.__qualname__}"


def origins_of(placements: Iterable[str], queue_orders: Iterable[str]) -> tuple[str, ...]:
    """The ``MODULE:QUALNAME`` of every user class among the named placements (with or
    without a backfill suffix) and queue orders: what another process imports to run them.

    Raises:
        ConfigError: for an unknown name, or a user class another process cannot import
            (defined in ``__main__`` or inside a function), naming it.
    """
    entries: list[PlacementEntry | QueueOrderEntry] = [
        *(placement_entry(split_name(p)[0]) for p in placements),
        *(queue_order_entry(q) for q in queue_orders)]
    origins = dict.fromkeys(e.origin for e in entries if e.origin is not None)
    for origin in origins:
        module, _, qualname = origin.partition(SPEC_SEPARATOR)
        if module == "__main__" or "<locals>" in qualname:
            raise ConfigError(f"policy class {origin} cannot be imported by another process: "
                              "define it at the top level of an importable module")
    return tuple(origins)


def load_origins(origins: Iterable[str]) -> None:
    """Import and register the user classes named by :func:`origins_of` (in a worker).

    Raises:
        ConfigError: as :func:`placement_name`.
    """
    for origin in origins:
        where = f"policy class {origin!r}"
        if _is_placement(_import(origin, where)):
            placement_name(origin, where)
        else:
            queue_order_name(origin, where)


_NO_IMPORT: ContextVar[str] = ContextVar("palgym_no_user_import", default="")


@contextmanager
def no_user_imports(why: str) -> Iterator[None]:
    """Within the block, a ``MODULE:CLASS`` name that is not registered yet is refused instead
    of imported (importing a module runs its code): for names that come from a file, e.g. a
    results file's header in ``python -m palgym.bench validate``. ``why`` ends the error."""
    token = _NO_IMPORT.set(why)
    try:
        yield
    finally:
        _NO_IMPORT.reset(token)


# ----------------------------------------------------------------------------- internals
def _import(spec: str, where: str) -> type:
    """The class ``MODULE:QUALNAME`` names.

    Raises:
        ConfigError: ``"{where}: ..."``, if the module cannot be imported, has no such
            attribute, or the attribute is not a class.
    """
    module_name, _, qualname = spec.partition(SPEC_SEPARATOR)
    if not module_name or not qualname or SPEC_SEPARATOR in qualname:
        raise ConfigError(f"{where}: expected MODULE:CLASS (e.g. mypkg.mymodule:MyPlacement)")
    if _NO_IMPORT.get():
        raise ConfigError(f"{where}: module {module_name!r} not imported: "
                          f"{_NO_IMPORT.get()}")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is named
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
                module_name == exc.name or module_name.startswith(exc.name + ".")):
            top = module_name.split(".")[0]
            hint = (f": Python looks for {top}.py (or the package {top}/) in the current "
                    f"folder ({os.getcwd()}) and on PYTHONPATH; run from the folder that "
                    f"holds it, or put that folder on PYTHONPATH (PYTHONPATH=/path/to/folder "
                    "python ...)")
        raise ConfigError(f"{where}: cannot import module {module_name!r} "
                          f"({type(exc).__name__}: {exc}){hint}") from None
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{where}: module {module_name!r} has no attribute {qualname!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ConfigError(f"{where}: {qualname} is a {type(obj).__name__}, not a class")
    return obj


def _checked(register: Callable[..., Any], klass: type, where: str) -> Any:
    """Register ``klass`` and return its entry; errors start with ``where``."""
    try:
        register(klass)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    found = _registered(klass, [*REGISTRY.placements.values(), *REGISTRY.queue_orders.values()])
    assert found is not None
    return found


def _registered(klass: type, entries: Iterable[Any]) -> Any:
    """The entry that makes ``klass`` objects (None: none)."""
    return next((e for e in entries if klass in e.kinds), None)


def _is_placement(klass: type) -> bool:
    return callable(getattr(klass, "place", None))


def _traits(klass: type, kind: str, members: tuple[str, ...],
            given: dict[str, Any]) -> dict[str, Any]:
    """The class's traits (``given`` first, else its class attributes), checked.

    Raises:
        ConfigError: naming the class and the missing or ill-typed member.
    """
    what = klass.__name__
    *fields, method = members
    if not callable(getattr(klass, method, None)):
        raise ConfigError(f"{what} is not a {kind}: it lacks the {method}() method (a {kind} "
                          f"has {', '.join(members)})")
    traits: dict[str, Any] = {}
    for field in fields:
        value = given.get(field)
        if value is None:
            value = getattr(klass, field, None)
        if value is None or isinstance(value, property):
            raise ConfigError(f"{what} is not a {kind}: it lacks {field} as a class attribute "
                              f"(a {kind} has {', '.join(members)}; or pass {field}= when "
                              "registering it)")
        if field == "name":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{what}.name must be a non-empty str, got {value!r}")
        else:
            _check_bool(klass, field, value)
        traits[field] = value
    return traits


def _check_bool(klass: type, field: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{klass.__name__}.{field} must be a bool, got {value!r}")


def _fills(klass: type, fillable: tuple[str, ...]) -> tuple[str, ...]:
    """The constructor parameters of ``klass`` palgym fills.

    Raises:
        ConfigError: for a required parameter palgym cannot fill, or a positional-only one.
    """
    try:
        parameters = inspect.signature(klass).parameters.values()
    except (TypeError, ValueError):
        return ()
    fills = []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name in fillable and parameter.kind is not parameter.POSITIONAL_ONLY:
            fills.append(parameter.name)
        elif parameter.default is parameter.empty:
            raise ConfigError(
                f"{klass.__name__}() needs {parameter.name!r}, which palgym cannot fill: it "
                f"fills {', '.join(fillable)} by name and leaves every other parameter at its "
                "default")
    return tuple(fills)


def _placement_maker(klass: type, fills: tuple[str, ...], traits: dict[str, Any]
                     ) -> Callable[[PolicyContext], PlacementPolicy]:
    def make(ctx: PolicyContext) -> PlacementPolicy:
        placement = check_placement(klass(**{p: getattr(ctx, p) for p in fills}))
        return _same_traits(placement, traits, klass)

    return make


P = TypeVar("P")


def _same_traits(policy: P, traits: dict[str, Any], klass: type) -> P:
    """``policy``, once its name and traits are the registered ones.

    Raises:
        ConfigError: naming the member that differs.
    """
    for field, value in traits.items():
        got = getattr(policy, field)
        if got != value:
            raise ConfigError(f"{klass.__name__}(...).{field} is {got!r} but the class was "
                              f"registered with {field}={value!r}")
    return policy
