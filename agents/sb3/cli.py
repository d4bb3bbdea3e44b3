"""``python train.py`` / ``palgym train``: the parser of a training run's flags, their
:class:`~agents.sb3.train_settings.TrainSettings`, and the command's output (the run's summary,
or an Optuna search's trials). ``train.py`` documents the command and its examples; the run
itself is :func:`agents.sb3.training.train`.

Exit codes: 0 on success, 2 on bad arguments or input, or a file that cannot be written
(``error: <message>``), 130 on Ctrl-C (the model is saved first).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser (dash-case flags, rl-baselines3-zoo names where they exist)."""
    from agents.evaluation.args import (
        add_duration_knowledge,
        add_env_kwargs,
        non_negative_int,
        positive_int,
    )

    parser = argparse.ArgumentParser(prog="train.py",
                                     description="Train an agent on a palgym env (SB3).")
    add = parser.add_argument
    add("--env", default="palgym/PALPlacement-v0", help="Gymnasium env id")
    add("--algo", default="maskable_ppo", choices=["maskable_ppo", "ppo", "dqn"])
    add("-n", "--n-timesteps", type=positive_int("n_timesteps"), default=None,
        help="timesteps to train (more timesteps with --resume); default: the YAML's")
    add("--seed", type=non_negative_int("seed"), default=0,
        help="seed of the model and training envs (>= 0)")
    add("--trace", nargs="+", default=None,
        help="trace spec(s): CSV path, bundled name (sia-philly-gen-0), 'bundled' (all five) "
             "or SET:SPLIT (instead of --trace-set)")
    add("--trace-set", nargs="+", default=None, metavar="NAME_OR_DIR",
        help="trace set(s): 'bundled', a folder of traces or a manifest .json (default: "
             "bundled, when no --trace is given); see python -m palgym.tracesets")
    add("--split", default="train", choices=["train", "validation", "test"],
        help="split of the trace sets to train on (default: %(default)s)")
    add("--eval-split", default="validation", choices=["train", "validation", "test"],
        help="split of the trace sets the evaluation callback uses (default: %(default)s)")
    add("--window", type=positive_int("window"), default=None,
        help="jobs per episode (a window of the trace)")
    add("--eval-trace", nargs="+", default=None,
        help="trace spec(s) of the evaluation env (default: --trace, or the sets' --eval-split)")
    add("-f", "--log-folder", default="runs", help="folder of the run folders")
    add_env_kwargs(add, "extra env kwargs, e.g. preset:pal-artifact reward:relative "
                        "(each value read as YAML)")
    add("--n-envs", type=positive_int("n_envs"), default=None,
        help="training envs (default: the YAML's, 8 on the batched env; 1 with --input-driven; "
             "a --resume's recorded number); see --vec-env")
    add("--eval-freq", type=int, default=10_000, help="evaluate every N timesteps (<= 0: off)")
    add("--eval-episodes", type=positive_int("eval_episodes"), default=5,
        help="episodes per evaluation")
    add("--eval-seed", type=non_negative_int("eval_seed"), default=None,
        help="evaluation env seed (default seed+10000)")
    add("--save-freq", type=int, default=-1, help="checkpoint every N timesteps (<= 0: off)")
    add("--hyperparams", "-params", nargs="+", default=[], metavar="KEY:VALUE",
        help="hyperparameter overrides, e.g. n_steps:256 'policy_kwargs:dict(net_arch=[64])'")
    add("--resume", action="store_true",
        help="continue the model.zip of the latest run folder (or of --run-id); the evaluation "
             "settings must be the run's")
    add("--run-id", type=int, default=None, metavar="N",
        help="with --resume: the run folder <env>_<algo>_N to continue (default: the latest)")
    add("--trust-model", action="store_true",
        help="with --resume: load model.zip with stable-baselines3's unpickling. A model zip "
             "can run code: use this only for a file you trust. Without it palgym unpickles "
             "nothing and refuses a zip whose pickled entries it cannot supply")
    add("--progress-bar", action="store_true",
        help="kept for old command lines: progress is on unless --quiet")
    add("--quiet", action="store_true",
        help="no progress (a bar on a terminal, else a line with the ETA every 15 s on stderr)")
    add("--references", nargs="*", default=None,
        help="heuristics run on the evaluation episodes for comparison (none: skip; default: "
             "pal packed-non-sticky, or the selector env's rules)")
    add("--device", default="cpu",
        help="torch device: cpu (default; bit-identical runs), cuda, cuda:N, or auto: cuda when "
             "CUDA is available and batch_size >= 1024 (as with --fast, measured faster on a "
             "GPU), else cpu; docs/TRAINING.md \"Devices\"")
    add("--num-threads", type=int, default=1,
        help="torch threads (default 1: fastest for these small MLPs; 0: torch's default)")
    add("--fast", action="store_true",
        help="maskable_ppo's throughput recipe (about 3x fewer CPU-s per env step than the "
             "default, 16x fewer gradient steps per env step): 64 envs on the "
             "batched env, n_steps 64, batch_size 1024, n_epochs 5, the scorer on feasible "
             "candidates only; --n-envs and --hyperparams still override it")
    add("--vec-env", default="auto", choices=["auto", "native", "dummy", "subproc"],
        help="native: the N envs stepped by one call in this process (palgym's batched env, "
             "fastest); dummy: SB3's DummyVecEnv; subproc: one worker process per env; auto "
             "(default): native for several envs, dummy for one env, the selector env or "
             "--curriculum (config.yml records the choice)")
    add("--verbose", type=int, default=1, choices=[0, 1], help="SB3 log tables on stdout")
    add("--imitate", default=None, metavar="HEURISTIC",
        help="first clone this heuristic (e.g. pal) by behaviour cloning (maskable_ppo only)")
    add("--imitate-decisions", type=int, default=30_000,
        help="decisions of the heuristic to clone (complete episodes; default %(default)s)")
    add("--imitate-epochs", type=int, default=10, help="behaviour-cloning epochs")
    add("--imitate-explore", type=float, default=0.3,
        help="probability of stepping a random valid action while recording (labels stay the "
             "heuristic's; default %(default)s)")
    add("--input-driven", type=int, default=0, metavar="K",
        help="input-driven baselines: every rollout is K episodes on one input (same trace "
             "window and seeds) and a step's baseline is the K-mean return from the same "
             "simulated time (maskable_ppo, one env: the default with it; 0: off, PPO's GAE)")
    add("--curriculum", type=float, default=None, metavar="FLOOR",
        help="draw training windows (half-overlapping, per trace) more often where the last "
             "relative return trails the baseline; FLOOR in (0, 1] is the uniform share "
             "(needs reward:relative; curriculum.yml records each window's visits)")
    add_duration_knowledge(add)
    _add_search(parser)
    return parser


def _add_search(parser: argparse.ArgumentParser) -> None:
    """Flags of ``--optimize`` (Optuna hyperparameter search, rl-baselines3-zoo names)."""
    group = parser.add_argument_group("hyperparameter search (optuna extra)")
    add = group.add_argument
    add("--optimize", "--optimize-hyperparameters", action="store_true",
        help="search hyperparameters with Optuna: each trial trains -n steps and is scored by "
             "its mean return on the evaluation episodes; trials go to trials.csv / .json")
    add("--n-trials", type=int, default=10, help="trials of the search (default %(default)s)")
    add("--sampler", default="tpe", choices=["tpe", "random"],
        help="Optuna sampler, seeded with --seed (default %(default)s)")
    add("--pruner", default="median", choices=["median", "none"],
        help="stop trials below the median of earlier ones at an evaluation (default "
             "%(default)s)")
    add("--n-startup-trials", type=int, default=5,
        help="trials before TPE and the pruner start to judge (default %(default)s)")
    add("--n-evaluations", type=int, default=2,
        help="evaluations per trial, evenly spaced, the last at the end (default %(default)s)")


def trace_arg(values: Sequence[str] | None) -> Any:
    """One spec as a string, several as a list (the env accepts both), each checked by the
    evaluation's trace resolver before training starts."""
    from agents.evaluation.traces import env_trace_arg

    return env_trace_arg(values)


def settings_from(args: argparse.Namespace) -> Any:
    """TrainSettings from the parsed arguments."""
    from agents.evaluation.args import env_kwargs_arg
    from agents.sb3.hyperparams import parse_key_values
    from agents.sb3.training import TrainSettings

    return TrainSettings(
        env_id=args.env, algo=args.algo, n_timesteps=args.n_timesteps, seed=args.seed,
        trace=trace_arg(args.trace), window=args.window, eval_trace=trace_arg(args.eval_trace),
        trace_set=tuple(args.trace_set or ()), split=args.split, eval_split=args.eval_split,
        log_folder=args.log_folder, run_id=args.run_id,
        env_kwargs=env_kwargs_arg(args),
        n_envs=args.n_envs, eval_freq=args.eval_freq, eval_episodes=args.eval_episodes,
        eval_seed=args.eval_seed, save_freq=args.save_freq,
        hyperparams=parse_key_values(args.hyperparams, "--hyperparams"), resume=args.resume,
        progress_bar=not args.quiet,
        references=None if args.references is None else tuple(args.references),
        device=args.device, num_threads=args.num_threads, vec_env=args.vec_env, fast=args.fast,
        verbose=args.verbose, imitate=args.imitate, imitate_decisions=args.imitate_decisions,
        imitate_epochs=args.imitate_epochs, imitate_explore=args.imitate_explore,
        input_driven=args.input_driven, curriculum=args.curriculum,
        trust_model=args.trust_model,
    )


def report(result: Any) -> None:
    """Print the run's summary and learning curve."""
    from agents.sb3.runs import read_evaluations

    print(f"run folder: {result.run_dir}")
    print(f"timesteps: {result.num_timesteps}   wall time: {result.wall_time_s:.1f} s"
          + ("   (interrupted)" if result.interrupted else ""))
    print(f"model.zip: {result.model_path.stat().st_size / 1000:.1f} kB")
    rate = result.throughput
    if rate:
        print(f"throughput: {rate['steps_per_s']:.1f} env steps/s, "
              f"{rate['cpu_s_per_1k_steps']:.2f} CPU-s per 1k steps, "
              f"{rate['steps_in_2h']:.0f} steps in 2 h (throughput.yml)")
    if result.tensorboard:
        print(f"TensorBoard: tensorboard --logdir {result.run_dir.parent}")
    else:
        print("note: tensorboard is not installed, no TensorBoard logs (see progress*.csv)")
    if (result.run_dir / "evaluations.npz").is_file():
        steps, returns = read_evaluations(result.run_dir)
        print("evaluation (mean return on the same episodes):")
        for step, value in zip(steps, returns, strict=True):
            print(f"  {int(step):>9d}  {value:.6f}")
    else:
        print("note: no evaluation ran (no --eval-freq step was reached), so there is no "
              "best_model.zip or evaluations.npz; lower --eval-freq (default 10000)")
    for name, value in result.references.items():
        print(f"  reference {name}: {value:.6f}")


def search(settings: Any, args: argparse.Namespace) -> int:
    """``--optimize``: run the search and print its trials and the best hyperparameters."""
    from agents.sb3.optimize import SearchSettings, optimize

    result = optimize(settings, SearchSettings(
        n_trials=args.n_trials, sampler=args.sampler, pruner=args.pruner,
        n_startup_trials=args.n_startup_trials, n_evaluations=args.n_evaluations))
    print(f"search folder: {result.run_dir} (trials.csv, trials.json, study.yml)")
    states = [r["state"] for r in result.trials]
    print("trials: " + ", ".join(f"{states.count(s)} {s.lower()}" for s in sorted(set(states))))
    for record in result.trials:
        value = "-" if record["value"] is None else f"{record['value']:.6f}"
        print(f"  trial {record['number']:>3}  {record['state']:<8}  {value}  {record['error']}")
    if result.best is None or result.best_hyperparams is None:
        print("note: no trial completed, so there are no best hyperparameters")
        return 1
    sampled = [f"{name}:{result.best_hyperparams[name]}" for name in
               (k.removeprefix("params_") for k in result.best if k.startswith("params_"))]
    print(f"best: trial {result.best['number']}, mean return {result.best['value']:.6f} "
          f"(best_hyperparams.yml); train with: --hyperparams {' '.join(sampled)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        from agents.sb3.training import train
        from palgym.errors import PalgymError
    except ImportError as exc:
        print(f"error: {exc}: install the training extra (pip install -e '.[train]')",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.optimize:
            return search(settings_from(args), args)
        result = train(settings_from(args), args=vars(args))
    except BrokenPipeError:  # stdout's reader went away: run_cli ends quietly
        raise
    except (PalgymError, OSError) as exc:  # OSError: e.g. a full disk, naming the file
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    report(result)
    return EXIT_INTERRUPTED if result.interrupted else 0

