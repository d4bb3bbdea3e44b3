"""The committed leaderboard is the one the committed results files give.

``docs/LEADERBOARD.md`` must equal, byte for byte, what ``python -m palgym.bench.leaderboard
benchmarks/leaderboard --output docs/LEADERBOARD.md --plots docs/leaderboard`` writes from the
results files under ``benchmarks/leaderboard/``; the profile SVGs must be the same files and
show the same data (their title carries the sha256 of the plotted ratios: the drawing itself
may differ between matplotlib versions, the data may not).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from palgym.bench.leaderboard import write_leaderboard
from palgym.bench.leaderboard_page import REGENERATE

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmarks" / "leaderboard"
PAGE = REPO_ROOT / "docs" / "LEADERBOARD.md"
PLOTS = REPO_ROOT / "docs" / "leaderboard"


def svg_titles(folder: Path) -> dict[str, str]:
    """File name -> the ``<dc:title>`` of every SVG in ``folder``."""
    titles = {}
    for path in sorted(folder.glob("*.svg")) if folder.is_dir() else []:
        found = re.search(r"<dc:title>(.*?)</dc:title>", path.read_text(encoding="utf-8"))
        titles[path.name] = found.group(1) if found else ""
    return titles


def test_committed_leaderboard_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the profile plots need the viz extra")
    docs = tmp_path / "docs"
    write_leaderboard([RESULTS] if RESULTS.is_dir() else [], docs / "LEADERBOARD.md",
                      docs / "leaderboard")
    stale = f"stale: regenerate with `{REGENERATE}`"
    assert (docs / "LEADERBOARD.md").read_bytes() == PAGE.read_bytes(), f"{PAGE} is {stale}"
    assert svg_titles(docs / "leaderboard") == svg_titles(PLOTS), f"{PLOTS} is {stale}"


def test_regenerate_command_names_these_paths() -> None:
    # The command printed on the page writes the files this test compares.
    assert f" {RESULTS.relative_to(REPO_ROOT)} " in REGENERATE
    assert f"--output {PAGE.relative_to(REPO_ROOT)} " in REGENERATE
    assert REGENERATE.endswith(f"--plots {PLOTS.relative_to(REPO_ROOT)}")
