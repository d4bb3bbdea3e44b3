"""Beside a clone named ``palgym`` the README's env snippet works: the README's install
(``--config-settings editable_mode=compat``) puts the clone's root on ``sys.path`` (a ``.pth``
path entry in site-packages), and a regular package on a path entry wins over the namespace
portion the clone's folder makes in the current folder (importlib's PathFinder). The
meta-path finder of the default editable mode is asked only after PathFinder has returned that
namespace package: the "Namespace palgym not found" trap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.test_readme import python_blocks, setup_commands

ROOT = Path(__file__).resolve().parents[1]
COMPAT = "--config-settings editable_mode=compat"


def test_the_readme_and_ci_install_a_path_entry() -> None:
    main_job, tests = setup_commands()
    assert COMPAT in main_job.split(" && ")[0] and COMPAT in tests.split(" && ")[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"pip install -e \S+ " + re.escape(COMPAT), ci)


def test_the_env_snippet_runs_beside_a_clone_named_palgym(tmp_path: Path) -> None:
    (tmp_path / "palgym").symlink_to(ROOT, target_is_directory=True)
    # what the compat install writes into site-packages: the clone's root, one line
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    (site_dir / "__editable__.palgym-0.1.0.pth").write_text(f"{tmp_path / 'palgym'}\n")
    [snippet] = [b for b in python_blocks() if "gym.make(" in b]
    code = (f"import site; site.addsitedir({str(site_dir)!r})\n{snippet}\n"
            "import palgym; print(palgym.__file__); print(info['invalid_action'])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    where, invalid = done.stdout.split()[-2:]
    # the regular package (the clone's, through the link or an installed path entry of the
    # same clone), never the namespace portion of the folder (its __file__ would be None)
    assert Path(where).resolve() == (ROOT / "palgym" / "__init__.py").resolve()
    assert invalid == "False"
