"""The registered policies as Markdown tables (docs/CONCEPTS.md "Policies" holds this text)."""

from __future__ import annotations

from palgym.policies.registry import REGISTRY


def policy_table() -> str:
    """The registered policies as Markdown tables (docs/CONCEPTS.md "Policies" holds this text,
    checked by ``tests/test_registry_names.py``): one row per placement (sticky, class reorder,
    random stream, backfill modes, env form, compiled form, in the paper), per queue order
    (reads durations, compiled form) and per backfill mode (suffix, reads durations)."""
    def mark(flag: bool) -> str:
        return "yes" if flag else "no"

    lines = ["| placement | sticky | class reorder | random | backfill | env form | compiled |"
             " paper |", "|---|---|---|---|---|---|---|---|"]
    for e in REGISTRY.placements.values():
        env_form = e.candidate.value if e.candidate is not None else "its own choice"
        lines.append(f"| `{e.name}` | {mark(e.sticky)} | {mark(e.class_reorder)} | "
                     f"{mark(bool(e.streams))} | {mark(e.backfills)} | {env_form} | "
                     f"{mark(e.compiled is not None)} | {mark(e.paper)} |")
    lines += ["", "| queue order | reads durations | compiled |", "|---|---|---|"]
    for q in REGISTRY.queue_orders.values():
        lines.append(f"| `{q.name}` | {mark(q.reads_durations)} | {mark(q.compiled is not None)} |")
    lines += ["", "| backfill mode | suffix | reads durations |", "|---|---|---|"]
    for b in REGISTRY.backfills.values():
        lines.append(f"| `{b.name}` | {'`' + b.suffix + '`' if b.suffix else '(none)'} | "
                     f"{mark(b.reads_durations)} |")
    return "\n".join(lines) + "\n"
