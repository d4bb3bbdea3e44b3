"""Benchmark: env steps per second of MaskablePPO's ``learn()`` in steady state.

Trains the committed models' network (``CandidateScoringPolicy``, scorer [64, 64], critic
[64, 64]) with MaskablePPO for ``--iterations`` rollout-and-update iterations on one of three
tasks, one torch thread, and prints for the iterations after the first (the first pays
imports, kernel loads and profile fits):

- collection: env steps/s while collecting rollouts (policy forward + env steps);
- learn: env steps/s of whole iterations (collection + PPO update);
- CPU-s per 1k env steps of the process over those iterations, in all and in collection
  (steadier than wall-clock rates on a shared machine).

Tasks: ``placement`` (``PALPlacement-v0``, default preset, bundled training traces, 60-job
windows), ``scheduling`` (``PALScheduling-v0``, the same) and ``dynamic-online`` (placement,
``dynamic`` preset, online belief, observed rates, relative reward vs PAL). ``--vec-env`` and
``--n-envs`` choose the vector env; ``--hyperparams`` overrides PPO's (``key:value``).

Side by side with another tree (an older commit checked out with ``git worktree add``):
``--old PATH`` runs this same file's measurement in a subprocess with ``PATH`` first on
``sys.path`` for each repeat, alternating with this tree, so both see the same machine load;
the old tree runs with its own defaults for the vector env (``--old-vec-env``, default
``dummy``) and ``--old-n-envs``.

    python benchmarks/train_speed.py --task placement --n-envs 64 --vec-env native
    python benchmarks/train_speed.py --task placement --old /tmp/old --old-n-envs 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "placement": ("palgym/PALPlacement-v0", {"trace": "bundled:train", "window": 60}),
    "scheduling": ("palgym/PALScheduling-v0", {"trace": "bundled:train", "window": 60}),
    "dynamic-online": ("palgym/PALPlacement-v0", {
        "trace": "bundled:train", "window": 60, "preset": "dynamic", "belief": "online",
        "max_tiers": 6, "observed_rates": True, "reward": "relative", "baseline_policy": "pal"}),
}
POLICY_KWARGS = ("dict(scorer_arch=[64, 64], net_arch=dict(pi=[], vf=[64, 64]), "
                 "activation_fn=nn.Tanh)")
"""The committed models' network (``policy_kwargs:...`` in ``--hyperparams`` overrides it)."""
FAST_POLICY_KWARGS = POLICY_KWARGS[:-1] + ", skip_infeasible=True)"


def parse_value(text: str) -> Any:
    """``key:value`` values: int, float, else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def measure(task: str, n_envs: int, vec_env: str, iterations: int,
            hyperparams: dict[str, Any], seed: int) -> dict[str, float]:
    """Train for ``iterations`` iterations; the steady-state figures (module docstring)."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from agents.sb3.envs import make_vec_env
    from agents.sb3.factory import make_model

    torch.set_num_threads(1)
    env_id, env_kwargs = TASKS[task]
    marks: list[tuple[str, float, float]] = []

    class Marks(BaseCallback):  # type: ignore[misc]
        def _on_rollout_start(self) -> None:
            marks.append(("start", time.perf_counter(), time.process_time()))

        def _on_rollout_end(self) -> None:
            marks.append(("end", time.perf_counter(), time.process_time()))

        def _on_step(self) -> bool:
            return True

    venv = make_vec_env(env_id, n_envs, seed, env_kwargs, vec_env)
    params = {"policy": "CandidateScoringPolicy", "policy_kwargs": POLICY_KWARGS,
              "n_steps": 512, "batch_size": 128, "n_epochs": 10, "gamma": 0.999,
              "ent_coef": 0.01, **hyperparams}
    from agents.sb3.hyperparams import model_kwargs

    params = {**params, **model_kwargs(params)}
    model = make_model("maskable_ppo", venv, params, seed)
    per_iteration = int(params["n_steps"]) * n_envs
    model.learn(per_iteration * iterations, callback=Marks())
    venv.close()
    end = time.perf_counter(), time.process_time()
    starts = [m for m in marks if m[0] == "start"]
    ends = [m for m in marks if m[0] == "end"]
    steady = len(starts) - 1
    collect = sum(e[1] - s[1] for s, e in zip(starts[1:], ends[1:], strict=True))
    collect_cpu = sum(e[2] - s[2] for s, e in zip(starts[1:], ends[1:], strict=True))
    wall, cpu = end[0] - starts[1][1], end[1] - starts[1][2]
    steps = per_iteration * steady
    return {"collection": steps / collect, "learn": steps / wall,
            "cpu_per_1k": cpu / steps * 1000, "collection_cpu_per_1k": collect_cpu / steps * 1000,
            "steps": steps}


def run_in(tree: Path, args: argparse.Namespace, n_envs: int, vec_env: str,
           hyperparams: dict[str, Any]) -> dict[str, float]:
    """:func:`measure` in a subprocess importing ``tree``'s packages."""
    call = (f"t.measure({args.task!r}, {n_envs}, {vec_env!r}, {args.iterations}, "
            f"{hyperparams!r}, {args.seed})")
    code = (f"import json, sys; sys.path.insert(0, {str(tree)!r}); "
            f"sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import train_speed as t; print(json.dumps({call}))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=tree, env=dict(os.environ, PYTHONHASHSEED="0"))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=list(TASKS), default="placement")
    parser.add_argument("--n-envs", type=int, default=64)
    parser.add_argument("--vec-env", default="native")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--hyperparams", nargs="*", default=[], metavar="KEY:VALUE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--old", type=Path, default=None, help="another tree, side by side")
    parser.add_argument("--old-n-envs", type=int, default=1)
    parser.add_argument("--old-vec-env", default="dummy")
    parser.add_argument("--old-hyperparams", nargs="*", default=None, metavar="KEY:VALUE",
                        help="the old tree's (default: --hyperparams)")
    args = parser.parse_args()
    args.hyperparams = [(k, parse_value(v)) for k, v in
                        (item.split(":", 1) for item in args.hyperparams)]
    old_hyperparams = args.hyperparams if args.old_hyperparams is None else [
        (k, parse_value(v)) for k, v in (item.split(":", 1) for item in args.old_hyperparams)]
    here = Path(__file__).resolve().parent.parent
    print(f"task {args.task}, {args.iterations} iterations (the first excluded), "
          f"hyperparams {dict(args.hyperparams) or 'n_steps 512, batch 128, 10 epochs'}")
    print(f"{'tree':<8} {'n_envs':>6} {'vec_env':>8} {'collect/s':>10} {'learn/s':>9} "
          f"{'CPU-s/1k':>9} {'collect CPU-s/1k':>16}")
    for _ in range(args.repeat):
        runs = [("new", here, args.n_envs, args.vec_env, dict(args.hyperparams))]
        if args.old is not None:
            runs.append(("old", args.old.resolve(), args.old_n_envs, args.old_vec_env,
                         dict(old_hyperparams)))
        for name, tree, n_envs, vec_env, hyperparams in runs:
            r = run_in(tree, args, n_envs, vec_env, hyperparams)
            print(f"{name:<8} {n_envs:>6} {vec_env:>8} {r['collection']:>10.0f} "
                  f"{r['learn']:>9.0f} {r['cpu_per_1k']:>9.3f} {r['collection_cpu_per_1k']:>16.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
