"""The documentation site (``mkdocs.yml``, pages in ``docs/``) builds with no warning.

``mkdocs build --strict`` with the ``validation`` settings of ``mkdocs.yml`` turns every link
problem into an error: a relative link to a file that is not a page, a missing ``#anchor`` (on
another page or the same one), an absolute link, a page left out of the nav. The front page,
``docs/index.md``, includes README.md (``include-markdown`` rewrites its ``docs/X.md`` links to
``X.md``), so README's links to the pages are checked too, and its text is not copied by hand.
Also: the env quick start of docs/ENV.md runs as printed, on the bundled training split only.
Needs the ``dev`` extra (mkdocs, mkdocs-material, mkdocs-include-markdown-plugin); skips without.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
BUNDLED_TRAIN = {"sia-philly-gen-0", "sia-philly-gen-1", "sia-philly-gen-2"}


def nav_pages(nav: list[Any]) -> list[str]:
    """The page files a ``nav`` entry list names, depth first."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def mkdocs_config() -> dict[str, Any]:
    """mkdocs.yml without its Python tags (the slugify function), which ``safe_load`` refuses."""
    text = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return yaml.safe_load(re.sub(r"!!python/\S+", "", text))


def test_nav_lists_every_page_once() -> None:
    pages = nav_pages(mkdocs_config()["nav"])
    assert len(pages) == len(set(pages))
    assert set(pages) == {p.name for p in DOCS.glob("*.md")}
    assert pages[0] == "index.md"


def build(root: Path, out: Path) -> tuple[int, list[str], str]:
    """``mkdocs build --strict`` of the project at ``root``: exit status, warning lines, log."""
    for module in ("mkdocs", "material", "mkdocs_include_markdown_plugin", "pymdownx"):
        pytest.importorskip(module, reason=f"the dev extra ({module}) is not installed")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    warnings = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    return done.returncode, warnings, log


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    status, warnings, log = build(REPO_ROOT, out)
    assert status == 0 and not warnings, log
    return out


def test_broken_links_fail_the_build(tmp_path: Path) -> None:
    """A copy of the docs with one broken link of each kind: the build fails, naming each."""
    root = tmp_path / "repo"
    shutil.copytree(DOCS, root / "docs")
    shutil.copy(REPO_ROOT / "mkdocs.yml", root)
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    (root / "README.md").write_text(readme + "\n[a](docs/NO_SUCH_PAGE.md)\n", encoding="utf-8")
    with (root / "docs" / "SCALE.md").open("a", encoding="utf-8") as page:
        page.write("\n[b](ENV.md#no-such-anchor) [c](#no-such-local-anchor) [d](../train.py)\n")
    status, warnings, log = build(root, tmp_path / "site")
    assert status != 0, log
    for broken in ("NO_SUCH_PAGE.md", "#no-such-anchor", "#no-such-local-anchor", "train.py"):
        assert any(broken in line for line in warnings), (broken, warnings)


def test_site_builds_strict_with_every_page(site: Path) -> None:
    for page in DOCS.glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), built


def test_front_page_is_the_readme(site: Path) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    for heading in re.findall(r"^##+ (.+)$", re.sub(r"```.*?```", "", readme, flags=re.S), re.M):
        assert f">{heading}<" in html or heading in re.sub(r"<[^>]+>", "", html), heading
    # README's links into docs/ now point at the built pages
    assert 'href="RESULTS/"' in html and 'href="docs/' not in html


def test_env_quick_start_runs_on_training_traces() -> None:
    text = (DOCS / "ENV.md").read_text(encoding="utf-8").split("## Using the env", 1)[1]
    code = re.search(r"```python\n(.*?)\n```", text, re.S)
    assert code, "docs/ENV.md: no python block in 'Using the env'"
    namespace: dict[str, Any] = {"__name__": "env_quick_start"}
    exec(compile(code.group(1), "docs/ENV.md", "exec"), namespace)
    env, info = namespace["env"], namespace["info"]
    metrics = info["episode_metrics"]
    assert metrics["num_completed"] == metrics["num_jobs"] and not metrics["truncated"]
    drawn = {env.reset(seed=seed)[1]["trace"] for seed in range(12)}
    env.close()
    assert drawn <= BUNDLED_TRAIN, drawn
