"""numba's ``njit``, or a stand-in that leaves functions as plain Python where numba is missing;
and the key that keeps numba's on-disk cache of palgym's kernels fresh.

The one place palgym imports numba. A compiled twin (``palgym.sim.step_numba``, the env's
kernels, the reward's sum) imports :func:`njit` and :data:`AVAILABLE` from here; callers choose
the compiled path only when :data:`AVAILABLE` is True. Importing this module imports numba
(slow), so modules imported by ``import palgym`` import it lazily.

The cache (``cache=True``): numba stamps a cached kernel with the source of the file that
defines it and nothing else, so a kernel kept the rule it had compiled in from another module
after that module changed. Importing this module puts three cache locators ahead of numba's
own (numba's extension point, ``numba.core.caching.CacheImpl``'s list of locators); for a
function defined in a palgym file they keep numba's folders (``NUMBA_CACHE_DIR`` if set, else
the file's ``__pycache__``, else numba's user-wide folder) and replace the stamp with
:func:`source_key`: a hash of numba's version and of the source of the defining module and of
every palgym module it imports, directly or through others, found by reading the package's
files (:func:`import_graph`). Everything a kernel compiles in (the kernels it calls, the
constants it reads) comes from those modules, so editing one of them, or checking out another
commit, recompiles on first use exactly the kernels that may depend on it. A kernel whose
stamp differs is compiled again and its index and data files are overwritten in place, so the
folders hold one version per kernel (as with numba's own stamp, a kernel moved to another line
or removed leaves its old files behind; deleting ``*.nbi`` and ``*.nbc`` under ``palgym/`` is
always safe). Functions outside palgym keep numba's locators; with
``NUMBA_CACHE_LOCATOR_CLASSES`` set, numba uses that list and this key is not applied.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

try:  # numba is a dependency; without it the numpy reference paths keep palgym usable
    import numba as _numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    _numba = None  # type: ignore[assignment]

AVAILABLE: bool = _numba is not None
"""True if numba is installed (then :func:`njit` compiles)."""

PACKAGE_DIR = Path(__file__).resolve().parent
"""The palgym package folder whose modules' kernels :func:`source_key` stamps."""

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(?P<base>palgym(?:\.\w+)*)[ \t]+import[ \t]+"
    rb"(?P<names>\([^)]*\)|(?:[^\n]*\\\n)*[^\n]*)"
    rb"|import[ \t]+(?P<modules>palgym[\w. \t,]*))",
    re.MULTILINE,
)
"""A line importing palgym modules (``from palgym.x import a, b`` with or without
parentheses, ``import palgym.x[ as y]``); palgym uses absolute imports only
(``tests/test_cache_key.py`` checks that this reading finds every import the syntax tree has)."""


def module_name(path: Path, package_dir: Path = PACKAGE_DIR) -> str:
    """The dotted module name of ``path``, a ``.py`` file in ``package_dir``
    (``palgym/sim/step_numba.py`` -> ``palgym.sim.step_numba``, ``palgym/__init__.py`` ->
    ``palgym``).

    Raises:
        ValueError: ``path`` is not inside ``package_dir``.
    """
    parts = path.resolve().relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def package_sources(package_dir: Path = PACKAGE_DIR) -> Mapping[str, bytes]:
    """Module name -> source bytes of every ``.py`` file in ``package_dir`` (read once per
    process)."""
    return {module_name(path, package_dir): path.read_bytes()
            for path in sorted(package_dir.rglob("*.py")) if "__pycache__" not in path.parts}


def imported_modules(source: bytes, modules: Mapping[str, Any]) -> frozenset[str]:
    """The modules among ``modules`` that ``source`` imports (``from P import N`` names
    ``P.N`` if that is a module, else ``P``), at module level or inside functions."""
    found: set[str] = set()
    for match in _IMPORT.finditer(source):
        if match["modules"] is not None:  # import palgym.a[ as b], palgym.c
            found.update(item.split()[0] for item in match["modules"].decode().split(",")
                         if item.strip())
            continue
        base = match["base"].decode()
        listed = re.sub(r"#[^\n]*|\\\n", " ", match["names"].decode()).strip().strip("()")
        for item in listed.split(","):  # name[ as alias]
            words = item.split()
            if words:
                found.add(f"{base}.{words[0]}" if f"{base}.{words[0]}" in modules else base)
    return frozenset(name for name in found if name in modules)


@functools.cache
def import_graph(package_dir: Path = PACKAGE_DIR) -> Mapping[str, frozenset[str]]:
    """Module -> the package's modules it imports (any import statement, anywhere in the
    file, ``TYPE_CHECKING`` blocks included: a superset of what it uses)."""
    sources = package_sources(package_dir)
    return {module: imported_modules(text, sources) for module, text in sources.items()}


def dependencies(module: str, package_dir: Path = PACKAGE_DIR) -> frozenset[str]:
    """``module`` and every package module it imports, directly or through others.

    Raises:
        KeyError: ``module`` is not a module of ``package_dir``.
    """
    graph = import_graph(package_dir)
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return frozenset(seen)


@functools.cache
def source_key(py_file: str, package_dir: Path = PACKAGE_DIR) -> str:
    """The cache stamp of the kernels defined in ``py_file``: sha256 (hex) of numba's version
    and of the name and source of each of its module's :func:`dependencies` (in name order).

    Deterministic across processes; computed once per process and file.

    Raises:
        KeyError: ``py_file`` is not a module of ``package_dir``.
    """
    digests = module_digests(package_dir)
    digest = hashlib.sha256(f"numba {_numba.__version__ if _numba else None}\n".encode())
    for name in sorted(dependencies(module_name(Path(py_file), package_dir), package_dir)):
        digest.update(f"{name}\n".encode())
        digest.update(digests[name])
    return digest.hexdigest()


@functools.cache
def module_digests(package_dir: Path = PACKAGE_DIR) -> Mapping[str, bytes]:
    """Module name -> sha256 digest of its source (:func:`package_sources`)."""
    return {name: hashlib.sha256(text).digest()
            for name, text in package_sources(package_dir).items()}


def in_package(py_file: str, package_dir: Path = PACKAGE_DIR) -> bool:
    """True if ``py_file`` is a ``.py`` module of ``package_dir`` (read by :func:`source_key`)."""
    try:
        return module_name(Path(py_file), package_dir) in package_sources(package_dir)
    except (OSError, ValueError):
        return False


if _numba is not None:  # the Random kernels' extension hooks (palgym.policies.random_*); the cache
    types = _numba.types
    overload = _numba.extending.overload
    next_uint32 = importlib.import_module("numba.np.random.generator_core").next_uint32
    numba_caching = importlib.import_module("numba.core.caching")

    class _SourceKeyed:
        """A numba cache locator for palgym's files, stamped with :func:`source_key`."""

        def get_source_stamp(self) -> str:
            return source_key(self._py_file)  # type: ignore[attr-defined]

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not in_package(py_file):
                return None  # numba's own locators take it
            return super().from_function(py_func, py_file)  # type: ignore[misc]

    class SourceKeyedUserProvided(_SourceKeyed, numba_caching.UserProvidedCacheLocator):  # type: ignore[misc, name-defined]
        """``NUMBA_CACHE_DIR``'s folder, stamped with :func:`source_key`."""

    class SourceKeyedInTree(_SourceKeyed, numba_caching.InTreeCacheLocator):  # type: ignore[misc, name-defined]
        """The defining file's ``__pycache__``, stamped with :func:`source_key`."""

    class SourceKeyedUserWide(_SourceKeyed, numba_caching.UserWideCacheLocator):  # type: ignore[misc, name-defined]
        """numba's user-wide cache folder, stamped with :func:`source_key`."""

    _LOCATORS = numba_caching.CacheImpl._locator_classes  # numba's extension point for locators
    if not any(getattr(c, "__module__", None) == __name__ for c in _LOCATORS):
        _LOCATORS[0:0] = [SourceKeyedUserProvided, SourceKeyedInTree, SourceKeyedUserWide]


def njit(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """``numba.njit(*args, **kwargs)`` as a decorator; without numba, a decorator that returns
    the function unchanged.

    Args:
        *args, **kwargs: numba's options (``cache=True``, ``nogil=True``, ``error_model=...``);
            ignored without numba.

    Returns:
        A decorator.
    """
    if _numba is None:  # pragma: no cover - exercised only where numba is missing
        return lambda function: function
    return _numba.njit(*args, **kwargs)  # type: ignore[no-any-return]


def entry_point(function: Any, args: Sequence[Any]) -> Callable[..., Any]:
    """The compiled entry of the :func:`njit` ``function`` for the types of ``args`` (loaded
    from the cache or compiled if needed, as a call would): calling it skips numba's per-call
    dispatch on the arguments' types, the largest part of a many-argument call's overhead.

    Every later call must pass arguments of exactly these numba types (dtype, dimensions and
    layout of each array, scalar kinds): the entry converts them without checking. Without
    numba, ``function`` itself.

    Args:
        function: a function decorated with :func:`njit`.
        args: arguments of the types the entry will be called with.
    """
    if _numba is None:  # pragma: no cover - exercised only where numba is missing
        return function
    return function.compile(tuple(function.typeof_pyval(a) for a in args))  # type: ignore[no-any-return]
