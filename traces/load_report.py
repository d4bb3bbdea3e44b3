"""What a loader (or a window / cluster-fit step) dropped or changed, and why."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from palgym.sim.types import BoolArray, IntArray

MAX_EXAMPLE_LINES: int = 10
"""Lines listed per report entry (the count is always exact)."""


@dataclass(frozen=True)
class ReportEntry:
    """One reason for dropping or changing rows.

    Attributes:
        action: ``"dropped"`` or ``"changed"``.
        reason: why, in words (e.g. ``"state FAILED not kept"``).
        field: the column the decision looked at.
        count: number of rows affected.
        lines: up to :data:`MAX_EXAMPLE_LINES` physical lines (0 = not from a file).
    """

    action: str
    reason: str
    field: str
    count: int
    lines: tuple[int, ...]

    def __str__(self) -> str:
        where = ", ".join(str(x) for x in self.lines)
        more = ", ..." if self.count > len(self.lines) else ""
        return (f"{self.action} {self.count} row(s) [{self.field}]: {self.reason} "
                f"(lines {where}{more})")


@dataclass
class LoadReport:
    """A running record of a load: rows read, kept, and every drop or change with its reason.

    Attributes:
        source: the file (or trace) the report is about.
        rows_read: data rows in the input.
        entries: the drops and changes, in the order they were decided.
    """

    source: str
    rows_read: int = 0
    entries: list[ReportEntry] = field(default_factory=list)

    @property
    def rows_dropped(self) -> int:
        """Rows removed (each row is dropped at most once)."""
        return sum(e.count for e in self.entries if e.action == "dropped")

    @property
    def rows_kept(self) -> int:
        """``rows_read - rows_dropped``."""
        return self.rows_read - self.rows_dropped

    def record(self, action: str, mask: BoolArray, lines: IntArray, reason: str,
               field_name: str) -> None:
        """Add an entry for the rows where ``mask`` is True (nothing if none).

        Args:
            action: ``"dropped"`` or ``"changed"``.
            mask: bool (R,) rows affected (R = rows still alive at this step).
            lines: int64 (R,) their physical lines.
            reason: why.
            field_name: the column looked at.
        """
        hits = np.flatnonzero(mask)
        if hits.size:
            example = tuple(int(x) for x in lines[hits[:MAX_EXAMPLE_LINES]])
            self.entries.append(ReportEntry(action, reason, field_name, int(hits.size), example))

    def summary(self) -> str:
        """Multi-line text: counts, then one line per entry."""
        head = f"{self.source}: read {self.rows_read} rows, kept {self.rows_kept}"
        return "\n".join([head, *(f"  {entry}" for entry in self.entries)])
