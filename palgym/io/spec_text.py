"""Comma-separated ``key=value`` specs, e.g. ``planner:K=4,H=end``: the one parser.

A spec is an optional ``PREFIX:`` (e.g. ``planner:``) and then items separated by commas;
each item is ``key=value`` with a key among the known ones. White space around an item and
around a value is dropped; an empty item and the word ``default`` stand for no key (so
``default`` and an empty spec take every default). A key given twice keeps its last value.
What a value means is the caller's to check.
"""

from __future__ import annotations

from collections.abc import Sequence

from palgym.errors import ConfigError

DEFAULT_WORD = "default"
"""An item that stands for no key: ``default`` (every default)."""


def parse_key_values(text: str, known_keys: Sequence[str], where: str,
                     prefix: str = "") -> dict[str, str]:
    """``"K=4,H=end"`` -> ``{"K": "4", "H": "end"}``.

    Args:
        text: the spec, as given (quoted as such in an error).
        known_keys: the keys a spec may give, in the order an error lists them.
        where: what the spec is, e.g. ``"planner spec"``: an error starts with it.
        prefix: a head to drop when the spec starts with it, e.g. ``"planner:"``.

    Returns:
        The values by key (str, stripped), in the order given; keys not given are absent.

    Raises:
        ConfigError: ``"{where} {text!r}: {item!r} is not key=value with a key among
            [...]"`` for an item without ``=`` or with an unknown key.
    """
    body = text.strip()
    if prefix and body.startswith(prefix):
        body = body[len(prefix):]
    values: dict[str, str] = {}
    for item in (part.strip() for part in body.split(",")):
        if item in ("", DEFAULT_WORD):
            continue
        key, sep, value = item.partition("=")
        if not sep or key not in known_keys:
            raise ConfigError(f"{where} {text!r}: {item!r} is not key=value with a key among "
                              f"{list(known_keys)}")
        values[key] = value.strip()
    return values
