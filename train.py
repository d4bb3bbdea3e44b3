"""Train a learned scheduler (SB3 / sb3-contrib) on a palgym env.

Writes ``<folder>/<env id with / as _>_<algo>_<N>/`` (``N``: the next free run id, 0 in an
empty folder; ``--resume`` continues the highest, or ``--run-id N``) with ``model.zip``,
``config.yml`` (resolved hyperparameters), ``args.yml`` (these arguments and the seeds),
``evaluations.npz``, ``references.yml`` (heuristic returns on the evaluation episodes),
``throughput.yml`` (env steps/s, CPU-seconds per 1k steps), ``progress.csv`` and
``tensorboard/`` (``tensorboard --logdir <folder>``; when the ``tensorboard`` package is
installed, as the ``train`` extra does). A run that fails after its folder was made leaves
``FAILED`` there (the error, then its traceback) and no ``model.zip`` (a failed ``--resume``
keeps the model from before); bad arguments fail before any folder is made. The parser and
logic live in :mod:`agents.sb3.cli` and :mod:`agents.sb3.training`.

Examples::

    python train.py --env palgym/PALPlacement-v0 --algo maskable_ppo -n 200000 --seed 0 \\
        --trace-set bundled --split train --window 40 -f runs/   # evaluates on 'validation'
    python train.py --trace-set /data/traces/sia_philly_pal bundled --window 40
    python train.py --trace bundled --n-envs 2 --hyperparams n_steps:256 learning_rate:lin_3e-4
    python train.py --trace sia-philly-gen-0 --window 40 -n 50000 --resume   # 50k more steps
    python train.py --window 60 --env-kwargs reward:relative baseline_policy:pal \
        --input-driven 4   # 4 episodes of one window per update, time-aligned baselines
    python train.py --optimize --n-trials 20 -n 20000 --window 40   # Optuna search (optuna extra)

The default maskable_ppo / ppo recipe (``agents/hyperparams/*.yml``) steps 8 envs in palgym's
batched env, 64 steps each per update (512 env steps, minibatches of 128, 10 epochs: the update
schedule of the one-env recipe ``--n-envs 1 --hyperparams n_steps:512``, at 3-4x fewer CPU-s
per env step); ``--input-driven`` runs one env, ``--resume`` the run's recorded number of envs.

``--resume`` loads the run's ``model.zip`` without unpickling anything (a model zip can run
code); ``--trust-model`` loads it with stable-baselines3's unpickling, for a file you trust.

Exit codes: 0 on success, 2 on bad arguments or input, or a file that cannot be written
(``error: <message>``), 130 on Ctrl-C (the model is saved first).
"""

from __future__ import annotations

import sys

from agents.sb3.cli import build_parser, main
from palgym.io.pipes import run_cli

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(run_cli(main))
