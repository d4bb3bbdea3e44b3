"""A candidate-scoring actor-critic policy for the palgym envs (MaskablePPO).

The env's action ``k * M + m`` gives window slot k its placement candidate m, and every
candidate comes with its own feature row (``candidates`` observation), next to its job's row
(``jobs``) and the cluster summary (``cluster``); with ``observed_rates=True`` also one row per
GPU (``gpus``: belief per class, last observed slowdown, its age). A flat MLP must learn the
same judgement K x M times over; this policy scores every (slot, candidate) with one shared MLP
over ``[candidate row, job row, cluster row]`` and gives "end the round" a logit from the
cluster row, so the actor is equivariant to the order of slots and candidates (as pointer /
per-action scoring policies for combinatorial choices are; Source: Vinyals et al., "Pointer
Networks", NeurIPS 2015; Mao et al., "Learning Scheduling Algorithms for Data Processing
Clusters" (Decima), SIGCOMM 2019, per-node scoring). The critic is SB3's MLP on the flat
observation.

The observation does not say which GPUs a candidate uses, so the ``gpus`` rows enter as one
pooled summary: a shared per-GPU encoder (one tanh layer, ``gpu_arch`` wide), mean- and
max-pooled over the G GPUs (order-free, as Deep Sets are; Source: Zaheer et al., "Deep Sets",
NeurIPS 2017), added to every candidate's first layer and read by the end-round logit like the
cluster row. A space without ``gpus`` builds exactly the network (and parameters) it always did.

A work-conserving scheduling env (``work_conserving=True``, ``Discrete(K * M + 2)``: action
K * M + 1 is RESERVE, EASY's reservation for the round's head job, docs/ENV.md) gets one more
logit: an MLP of its own (as the end-round one) over the cluster row (with the GPU summary) and
the head's job row, window slot 0 (the head is the first job of the round's queue order still
waiting, the window's first). The action mask covers it as every other action. An action space
of K * M + 1 actions builds no such MLP, so the network (and parameters) of the other envs are
unchanged.

Use: ``MaskablePPO(CandidateScoringPolicy, env)``, or ``policy: CandidateScoringPolicy`` in the
hyperparameter YAML (:mod:`agents.sb3.factory`; the MaskablePPO default). ``policy_kwargs``:
``scorer_arch`` (hidden sizes of the shared scorer, default [64, 64]), ``gpu_arch`` (width of
the per-GPU encoder, default 16; used only with a ``gpus`` key) and SB3's usual ones
(``net_arch`` sets the critic's layers; the actor's MLP extractor is the identity).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from torch import nn

from palgym.envs.features import CANDIDATE, CANDIDATE_FEATURES, GPU_FEATURES, JOB_FEATURES

INFEASIBLE_LOGIT = -1e8
"""The logit of a candidate the scorer skips (``skip_infeasible``): sb3-contrib's
``MaskableCategorical`` gives masked actions the same value."""


@dataclass(frozen=True)
class ObservationLayout:
    """Where each observation key lies in SB3's flattened features (keys in Dict order).

    Attributes:
        num_slots: K. num_candidates: M. offsets: key -> (start, stop) in the flat vector.
        num_gpus: G, the rows of the ``gpus`` key (0: no such key).
    """

    num_slots: int
    num_candidates: int
    offsets: dict[str, tuple[int, int]]
    num_gpus: int = 0

    @classmethod
    def of(cls, space: spaces.Dict) -> ObservationLayout:
        """The layout of a palgym observation space.

        Raises:
            ValueError: if the keys are not ``jobs`` / ``candidates`` / ``cluster`` (and
                optionally ``gpus``), or ``gpus`` is not G rows of GPU_FEATURES.
        """
        keys = set(space.spaces)
        if keys - {"gpus"} != {"jobs", "candidates", "cluster"}:
            raise ValueError(f"not a palgym observation space: keys {sorted(space.spaces)}")
        num_gpus = 0
        if "gpus" in keys:  # the env's flat (G * F_g,) box, or (G, F_g)
            shape = tuple(space.spaces["gpus"].shape or ())
            size = int(np.prod(shape))
            if len(shape) > 2 or size % len(GPU_FEATURES) or (
                    len(shape) == 2 and shape[1] != len(GPU_FEATURES)):
                raise ValueError(f"observation key 'gpus': shape {shape}, expected "
                                 f"(G * {len(GPU_FEATURES)},) or (G, {len(GPU_FEATURES)})")
            num_gpus = size // len(GPU_FEATURES)
        offsets: dict[str, tuple[int, int]] = {}
        start = 0
        for key, box in space.spaces.items():  # CombinedExtractor's concatenation order
            size = int(np.prod(box.shape))
            offsets[key] = (start, start + size)
            start += size
        num_slots = (offsets["jobs"][1] - offsets["jobs"][0]) // len(JOB_FEATURES)
        per_slot = (offsets["candidates"][1] - offsets["candidates"][0]) // num_slots
        return cls(num_slots, per_slot // len(CANDIDATE_FEATURES), offsets, num_gpus)

    def split(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """(candidates (B, K, M, F_c), jobs (B, K, F_j), cluster (B, F_k)) views of (B, F)."""
        batch = features.shape[0]
        a, b = self.offsets["candidates"]
        candidates = features[:, a:b].reshape(batch, self.num_slots, self.num_candidates, -1)
        a, b = self.offsets["jobs"]
        jobs = features[:, a:b].reshape(batch, self.num_slots, -1)
        a, b = self.offsets["cluster"]
        return candidates, jobs, features[:, a:b]

    def gpus(self, features: th.Tensor) -> th.Tensor:
        """The ``gpus`` rows (B, G, F_g) of (B, F).

        Raises:
            ValueError: if the layout has no ``gpus`` key.
        """
        if not self.num_gpus:
            raise ValueError("this observation layout has no 'gpus' key")
        a, b = self.offsets["gpus"]
        return features[:, a:b].reshape(features.shape[0], self.num_gpus, -1)


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(n_in, n_out), nn.Tanh()]
    return nn.Sequential(*layers[:-1])  # linear output


class GpuSummary(nn.Module):
    """Pooled summary (B, 2W) of the ``gpus`` rows (B, G, F_g): a shared tanh layer per GPU,
    then its mean and its max over the G GPUs (so the summary ignores GPU order).

    Args:
        width: W, the encoder's width (>= 1).
    """

    def __init__(self, width: int) -> None:
        super().__init__()
        if width < 1:
            raise ValueError(f"gpu_arch must be >= 1, got {width}")
        self.encode = nn.Linear(len(GPU_FEATURES), width)
        self.size = 2 * width

    def forward(self, gpus: th.Tensor) -> th.Tensor:
        """``[mean_g tanh(W x_g + b), max_g tanh(W x_g + b)]``."""
        hidden = th.tanh(self.encode(gpus))
        return th.cat([hidden.mean(dim=1), hidden.amax(dim=1)], dim=1)


class CandidateScorer(nn.Module):
    """Logits (B, K * M + 1), or (B, K * M + 2) with ``reserve``, from flat palgym features
    (B, F).

    The scorer's first layer on ``[candidate, job, cluster(, gpu summary)]`` is applied as
    linear maps added with broadcasting (the same function as one layer on the concatenation,
    without copying the job and cluster rows K x M times).

    With ``skip_infeasible`` the scorer runs on the feasible candidates alone (the rows whose
    ``feasible`` feature is 1: a superset of the action mask's valid ones, ``docs/ENV.md``)
    and gives every other candidate :data:`INFEASIBLE_LOGIT`, the value masking gives it
    anyway: the same distribution over the valid actions (up to float rounding: the layers run
    on fewer rows) at the cost of the feasible rows alone, about 8% of the K x M rows in the
    placement task and 15% in the scheduling task on the bundled traces.

    Args:
        layout: the observation layout.
        arch: hidden sizes of the shared scorer (at least one).
        gpu_width: width of the per-GPU encoder (:class:`GpuSummary`; only with ``gpus``).
        skip_infeasible: score the feasible candidates only (see above).
        reserve: add the RESERVE logit (a work-conserving env's action K * M + 1) from the
            cluster row (with the GPU summary) and slot 0's job row.
    """

    def __init__(self, layout: ObservationLayout, arch: list[int], gpu_width: int = 16,
                 skip_infeasible: bool = False, reserve: bool = False) -> None:
        super().__init__()
        self.skip_infeasible = skip_infeasible
        if not arch:
            raise ValueError("scorer_arch needs at least one hidden layer")
        self.layout = layout
        cluster_size = layout.offsets["cluster"][1] - layout.offsets["cluster"][0]
        self.candidate_in = nn.Linear(len(CANDIDATE_FEATURES), arch[0])
        self.job_in = nn.Linear(len(JOB_FEATURES), arch[0], bias=False)
        self.cluster_in = nn.Linear(cluster_size, arch[0], bias=False)
        self.score = nn.Sequential(nn.Tanh(), _mlp([*arch, 1]))
        summary = GpuSummary(gpu_width) if layout.num_gpus else None
        self.end_round = _mlp([cluster_size + (summary.size if summary else 0), *arch, 1])
        self.gpu_summary = summary
        self.gpus_in = nn.Linear(summary.size, arch[0], bias=False) if summary else None
        self.reserve = (_mlp([cluster_size + (summary.size if summary else 0)
                              + len(JOB_FEATURES), *arch, 1]) if reserve else None)

    def forward(self, features: th.Tensor) -> th.Tensor:
        """Logits: ``[score(k, m) for k, m] + [end_round]`` (``+ [reserve]`` with
        ``reserve``)."""
        candidates, jobs, cluster = self.layout.split(features)
        batch, slots, cands, _ = candidates.shape
        context = self.cluster_in(cluster)
        if self.gpu_summary is not None and self.gpus_in is not None:
            summary = self.gpu_summary(self.layout.gpus(features))
            context = context + self.gpus_in(summary)
            cluster = th.cat([cluster, summary], dim=1)
        if self.skip_infeasible:
            rows = (candidates[..., CANDIDATE.feasible] > 0.5).nonzero(as_tuple=True)
            hidden = (self.candidate_in(candidates[rows]) + self.job_in(jobs[rows[:2]])
                      + context[rows[0]])
            scores = candidates.new_full((batch, slots, cands), INFEASIBLE_LOGIT)
            scores = scores.index_put(rows, self.score(hidden).squeeze(-1))
            logits = scores.reshape(batch, slots * cands)
        else:
            hidden = (self.candidate_in(candidates) + self.job_in(jobs)[:, :, None, :]
                      + context[:, None, None, :])
            logits = self.score(hidden).reshape(batch, slots * cands)
        if self.reserve is None:
            return th.cat([logits, self.end_round(cluster)], dim=1)
        head = th.cat([cluster, jobs[:, 0]], dim=1)
        return th.cat([logits, self.end_round(cluster), self.reserve(head)], dim=1)

    def output_layers(self) -> list[nn.Module]:
        """The last linear layers (initialised with a small gain, as SB3 does for logits)."""
        last = [self.score[-1][-1], self.end_round[-1]]
        return last if self.reserve is None else [*last, self.reserve[-1]]


def scores_reserve(layout: ObservationLayout, action_space: spaces.Space[Any]) -> bool:
    """Whether the action space has RESERVE after END_ROUND: ``Discrete(K * M + 2)`` (a
    work-conserving env) rather than ``Discrete(K * M + 1)``.

    Raises:
        ValueError: any other action space (naming it and the two sizes the layout allows).
    """
    places = layout.num_slots * layout.num_candidates
    n = int(action_space.n) if isinstance(action_space, spaces.Discrete) else -1
    if n not in (places + 1, places + 2):
        k, m = layout.num_slots, layout.num_candidates
        raise ValueError(f"CandidateScoringPolicy: action space {action_space} for K={k}, M={m}:"
                         f" expected Discrete({places + 1}) or Discrete({places + 2}) (with "
                         "RESERVE)")
    return n == places + 2


def critic_only(net_arch: list[int] | dict[str, list[int]] | None) -> dict[str, list[int]]:
    """SB3 ``net_arch`` with an identity actor extractor: the scorer reads the flat features.

    A list (shared layers in SB3) or a dict's ``vf`` becomes the critic's layers; ``pi`` layers
    would hide the observation layout from the scorer, so they are not allowed.

    Raises:
        ValueError: for a non-empty ``pi`` entry.
    """
    if net_arch is None:
        return dict(pi=[], vf=[64, 64])
    if isinstance(net_arch, dict):
        if net_arch.get("pi"):
            raise ValueError("CandidateScoringPolicy: net_arch 'pi' must be empty (the actor is "
                             "the candidate scorer; set its layers with scorer_arch)")
        return dict(pi=[], vf=list(net_arch.get("vf", [64, 64])))
    return dict(pi=[], vf=list(net_arch))


class CandidateScoringPolicy(MaskableMultiInputActorCriticPolicy):  # type: ignore[misc]
    """MaskablePPO policy whose actor is a :class:`CandidateScorer` (see module docstring).

    Args:
        *args: SB3's policy arguments.
        scorer_arch: hidden sizes of the shared scorer (default [64, 64]).
        gpu_arch: width of the per-GPU encoder (default 16; only with a ``gpus`` key).
        skip_infeasible: score only the feasible candidates (:class:`CandidateScorer`;
            default False, as the committed models were trained; the training recipes set
            it, about 5x faster training).
        **kwargs: SB3's policy keyword arguments; ``net_arch`` sets the critic's layers
            (:func:`critic_only`; default [64, 64]).
    """

    def __init__(self, *args: Any, scorer_arch: list[int] | None = None,
                 gpu_arch: int = 16, skip_infeasible: bool = False, **kwargs: Any) -> None:
        object.__setattr__(self, "_scorer_arch", list(scorer_arch or [64, 64]))
        object.__setattr__(self, "_gpu_arch", int(gpu_arch))
        object.__setattr__(self, "_skip_infeasible", bool(skip_infeasible))
        kwargs["net_arch"] = critic_only(kwargs.get("net_arch"))
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        layout = ObservationLayout.of(self.observation_space)
        self.action_net = CandidateScorer(layout, self._scorer_arch, self._gpu_arch,
                                          self._skip_infeasible,
                                          reserve=scores_reserve(layout, self.action_space))
        if self.ortho_init:
            self.action_net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            for layer in self.action_net.output_layers():
                layer.apply(partial(self.init_weights, gain=0.01))
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        data["scorer_arch"] = self._scorer_arch
        data["gpu_arch"] = self._gpu_arch
        data["skip_infeasible"] = self._skip_infeasible
        return data
