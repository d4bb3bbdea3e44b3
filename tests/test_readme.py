"""The front page (README.md): short, its set-up commands the ones CI runs, its links alive, its
code runnable.

- Size: at most :data:`MAX_README_BYTES` bytes (a five-minute read; the rest lives in docs/).
- Set-up: the README's second command (install, then the test command) is what ``.ci/run`` runs,
  line for line and in that order; the first installs and runs ``evaluate.py``.
- Links: every relative link of README.md names an existing file, and every ``#anchor`` one of
  that Markdown file's headings, slugged as GitHub slugs them (lower case, punctuation other than
  ``-`` and ``_`` dropped, each space one ``-``, repeats suffixed ``-1``, ``-2``, ...). The site
  build (tests/test_docs_site.py) checks the same links through ``docs/index.md``, with
  ``pymdownx.slugs.slugify``; this test needs no mkdocs.
- Code: every ``python`` block runs as printed from the repository root; the env snippet trains
  on the bundled *training* split (``sia-philly-gen-0..2``, docs/TRACES.md), never on the
  validation or test trace.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
MAX_README_BYTES = 12_288
BUNDLED_TRAIN = {"sia-philly-gen-0", "sia-philly-gen-1", "sia-philly-gen-2"}

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def without_code(markdown: str) -> str:
    """The Markdown with fenced blocks and inline code spans removed."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", markdown))


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (before de-duplication)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading anchor of a Markdown document, as GitHub numbers repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for match in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", FENCE.sub("", markdown), re.M):
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_github_slug_matches_hand_worked_examples() -> None:
    assert (github_slug("Parallel sweeps: `--workers` and Ray")
            == "parallel-sweeps---workers-and-ray")
    assert (github_slug("7. Reference numbers (FIFO, R = 360 s)")
            == "7-reference-numbers-fifo-r--360-s")
    assert github_slug("Another cluster's measurements") == "another-clusters-measurements"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n### A b_c\n") == {"a", "a-1", "a-b_c"}


def test_readme_is_short() -> None:
    size = README.stat().st_size
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes, more than {MAX_README_BYTES}"


def setup_commands() -> list[str]:
    """The command lines of the README's set-up block (comments dropped)."""
    section = readme_text().split("## Set-up: two commands", 1)[1]
    block = re.search(r"```bash\n(.*?)\n```", section, re.S)
    assert block, "README.md: no bash block in the set-up section"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_setup_commands_are_what_ci_runs() -> None:
    main_job, tests = setup_commands()
    install, evaluate = (shlex.split(part) for part in main_job.split(" && "))
    assert install[:4] == ["python", "-m", "pip", "install"] and evaluate == ["python",
                                                                            "evaluate.py"]
    ci_lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()]
    steps = tests.split(" && ")
    assert len(steps) == 2 and steps[0].startswith("python -m pip install -e ")
    assert all(step in ci_lines for step in steps), (steps, ".ci/run")
    assert ci_lines.index(steps[0]) < ci_lines.index(steps[1])


def test_readme_relative_links_and_anchors_resolve() -> None:
    text = readme_text()
    targets = [t for t in LINK.findall(without_code(text))
               if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # http:, https:, mailto:
    assert any(t.startswith("docs/") for t in targets)  # the map of docs/ is there
    broken = []
    for target in targets:
        path, _, anchor = target.partition("#")
        file = REPO_ROOT / path if path else README
        if not file.is_file():
            broken.append(f"{target}: no file {file.relative_to(REPO_ROOT)}")
        elif anchor and anchor not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path or 'README.md'}")
    assert not broken, "README.md: " + "; ".join(broken)


def test_readme_links_every_docs_page() -> None:
    linked = {t.split("#")[0] for t in LINK.findall(without_code(readme_text()))}
    pages = {f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md") if p.name != "index.md"}
    assert pages <= linked, f"not in README's map of docs/: {sorted(pages - linked)}"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)\n```", readme_text(), re.M | re.S)


def run_block(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_block"}
    cwd = Path.cwd()
    try:
        os.chdir(REPO_ROOT)  # the blocks' paths are relative to the repository root
        exec(compile(code, "README.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    return namespace


@pytest.mark.parametrize("index", range(2))
def test_readme_python_blocks_run(index: int) -> None:
    blocks = python_blocks()
    assert len(blocks) == 2
    namespace = run_block(blocks[index])
    if "env" in namespace:  # the env snippet: made on the bundled training split
        env = namespace["env"]
        assert namespace["info"]["invalid_action"] is False
        drawn = {env.reset(seed=seed)[1]["trace"] for seed in range(12)}
        env.close()
        assert drawn <= BUNDLED_TRAIN, drawn
    else:  # run_episode: every job of the 160-job trace completed, a positive average JCT
        result = namespace["result"]
        assert result.metrics.num_completed == 160 and result.metrics.avg_jct_s > 0
