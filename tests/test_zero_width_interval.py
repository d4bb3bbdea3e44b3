"""A zero-width interval is printed as such with a note: in a static world every seed of a
trace gives the same schedule under deterministic heuristics, so a ratio is the same on every
episode and no resample moves it."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_errors import EVALUATE, run
from tests.test_cli_errors import small as small  # noqa: F401  (the fixture)


def test_identical_episodes_give_a_marked_zero_width_interval(small: Path) -> None:  # noqa: F811
    done = run([EVALUATE, "--trace", str(small), "--seeds", "0", "1", "2", "--policy", "pal",
                "pm-first", "--bootstrap-resamples", "50", "--quiet"], small.parent)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.split("geomean over episodes")[1]
    rows = {line.split()[0]: line for line in summary.splitlines()
            if line.split() and line.split()[0] in ("pal", "pm-first")}
    # every policy has the same ratio on every seed (one schedule per seed of a static
    # world): the bounds equal the point and the cell is marked; pal against itself is not
    point = rows["pm-first"].split("[")[0].split()[-1]
    assert f"{point} [{point}, {point}]*" in rows["pm-first"]
    pal_cells = rows["pal"].split("heuristic")[1]
    assert pal_cells.count("]*") == 1  # pal / packed-sticky only, not pal / pal
    note = next(line for line in done.stdout.splitlines() if line.startswith("NOTE: * zero"))
    assert "pm-first / pal" in note and "pal / pal," not in note and "not a measured" in note
