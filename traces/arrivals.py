"""Bursty arrivals: a two-state Markov-modulated Poisson process (MMPP-2), and its moments.

The process alternates between a *burst* state (arrival rate ``lambda_1``) and a *quiet* state
(``lambda_2``); the state is a continuous-time Markov chain that leaves the burst state at rate
``r_1`` and the quiet state at rate ``r_2``. It is parameterised here by what a trace designer
chooses, the mean rate ``lambda`` (jobs/s), the rate ratio ``R = lambda_1 / lambda_2 >= 1``,
the share of time ``f`` in the burst state and the mean burst length ``M`` (s):

    lambda_2 = lambda / (f R + 1 - f),  lambda_1 = R lambda_2,
    r_1 = 1 / M,  r_2 = f / ((1 - f) M)      (so the stationary burst probability is f and the
                                             mean rate f lambda_1 + (1 - f) lambda_2 = lambda).

``R = 1`` is the Poisson process (the generator then keeps its Poisson sampler, byte for byte).

Source: W. Fischer and K. Meier-Hellstern, "The Markov-modulated Poisson process (MMPP)
cookbook", Performance Evaluation 18(2), 1993, pp. 149-171 (the MMPP-2, its interarrival
distribution as a phase-type distribution with ``D0 = Q - Lambda``, ``D1 = Lambda``, and the
variance of its counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from palgym.sim.types import FloatArray


@dataclass(frozen=True)
class Mmpp2:
    """An MMPP-2 in its natural rates (state 0 = burst, state 1 = quiet).

    Attributes:
        arrival_per_s: (lambda_1, lambda_2), arrivals per second, lambda_1 >= lambda_2 >= 0.
        leave_per_s: (r_1, r_2), rates of leaving the burst and the quiet state (1/s), > 0.
    """

    arrival_per_s: tuple[float, float]
    leave_per_s: tuple[float, float]

    @classmethod
    def from_burstiness(cls, mean_per_s: float, ratio: float, burst_share: float,
                        burst_length_s: float) -> Mmpp2:
        """The MMPP-2 of a mean rate, rate ratio, burst time share and mean burst length.

        Args:
            mean_per_s: mean arrival rate lambda (1/s), > 0.
            ratio: R = lambda_1 / lambda_2 >= 1.
            burst_share: f in (0, 1), stationary probability of the burst state.
            burst_length_s: M > 0, mean sojourn in the burst state (s).

        Returns:
            The process (formulas in the module docstring).
        """
        quiet = mean_per_s / (burst_share * ratio + 1.0 - burst_share)
        return cls((ratio * quiet, quiet),
                   (1.0 / burst_length_s, burst_share / ((1.0 - burst_share) * burst_length_s)))

    @property
    def burst_probability(self) -> float:
        """pi_1 = r_2 / (r_1 + r_2), the stationary probability of the burst state."""
        r1, r2 = self.leave_per_s
        return r2 / (r1 + r2)

    @property
    def mean_per_s(self) -> float:
        """lambda = pi_1 lambda_1 + pi_2 lambda_2 (arrivals per second)."""
        p = self.burst_probability
        return p * self.arrival_per_s[0] + (1.0 - p) * self.arrival_per_s[1]

    def count_variance(self, t_s: float) -> float:
        """Var N(t), the variance of the number of arrivals in [0, t] from the stationary state.

        ``Var N(t) = lambda t + 2 (lambda_1 - lambda_2)^2 r_1 r_2 / a^3 (t - (1 - e^{-a t}) / a)``
        with ``a = r_1 + r_2``: N(t) given the state path is Poisson with mean the integrated
        rate, whose variance follows from the state's covariance ``pi_1 pi_2 e^{-a tau}``.

        Source: Fischer & Meier-Hellstern (1993), the MMPP-2 counting variance.
        """
        (l1, l2), (r1, r2) = self.arrival_per_s, self.leave_per_s
        a = r1 + r2
        extra = 2.0 * (l1 - l2) ** 2 * r1 * r2 / a**3 * (t_s - (1.0 - math.exp(-a * t_s)) / a)
        return self.mean_per_s * t_s + extra

    def interarrival_moment(self, order: int) -> float:
        """E[X^k] of the stationary interarrival time X (s^k).

        ``E[X^k] = k! phi (-D0)^{-k} 1`` with ``D0 = Q - Lambda`` and ``phi = pi Lambda / lambda``
        the state seen by an arrival (the interarrival time is phase-type).

        Source: Fischer & Meier-Hellstern (1993), the MMPP interarrival distribution.
        """
        (l1, l2), (r1, r2) = self.arrival_per_s, self.leave_per_s
        d0 = np.array([[-r1 - l1, r1], [r2, -r2 - l2]], dtype=np.float64)
        p = self.burst_probability
        phi = np.array([p * l1, (1.0 - p) * l2]) / self.mean_per_s
        inverse = np.linalg.inv(-d0)
        return float(math.factorial(order) * phi @ np.linalg.matrix_power(inverse, order)
                     @ np.ones(2))

    def interarrival_scv(self) -> float:
        """Squared coefficient of variation of the interarrival time, E[X^2] / E[X]^2 - 1."""
        return self.interarrival_moment(2) / self.interarrival_moment(1) ** 2 - 1.0

    def sample_times(self, rng: np.random.Generator, num_jobs: int) -> FloatArray:
        """The first J arrival times (s) from t = 0, the state drawn from its stationary law.

        Competing exponentials: in state s the next event comes after Exp(lambda_s + r_s) and is
        an arrival with probability lambda_s / (lambda_s + r_s), else a switch of state. Draws,
        in order, from ``rng`` only: one uniform for the initial state, then per event one
        exponential and one uniform.

        Args:
            rng: the arrival stream.
            num_jobs: J >= 1.

        Returns:
            float64 (J,) non-decreasing arrival times (s).
        """
        state = 0 if rng.random() < self.burst_probability else 1
        now_s, times = 0.0, np.empty(num_jobs, dtype=np.float64)
        count = 0
        while count < num_jobs:
            arrival, leave = self.arrival_per_s[state], self.leave_per_s[state]
            total = arrival + leave
            now_s += rng.exponential(1.0 / total)
            if rng.random() * total < arrival:
                times[count] = now_s
                count += 1
            else:
                state = 1 - state
        return times
