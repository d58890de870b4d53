"""A toy solver written against the public solver contract only: the "done when" check of
the contract (a new solver is one file plus one registry line).

Subgradient descent on J(w) = λ/2‖w‖² + R(Xw) with step 1/(λt) (Shalev-Shwartz et al.'s
Pegasos step, without projection), reporting the averaged iterate. With that step,
w_{t+1} = w_t − (λw_t + Xᵀu_t)/(λt) = −Xᵀū_t/λ for ū_t the average of the score
subgradients u_1..u_t, so ū_t is a dual point and D(ū_t) ≤ min J certifies the gap.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers import Core, Solver, Takes, solver_options
from nsjax.solvers.base import count, counters


class ToyState(NamedTuple):
    core: Core  # the averaged iterate w̄_t, J(w̄_t), D(ū_t), counters
    w: jax.Array  # the plain iterate w_{t+1}
    S: jax.Array  # X w_{t+1}
    S_avg: jax.Array  # X w̄_t, averaged alongside w̄ (no extra product)
    u_avg: jax.Array  # ū_t
    xtu_avg: jax.Array  # Xᵀū_t
    t: jax.Array  # steps taken, as a float


@solver_options
class AveragedSubgradient(Solver):
    """Subgradient descent with step 1/(λt) and the averaged iterate (a test solver)."""

    #: The L2 regularizer with λ > 0 (its step is 1/(λt)), declared once.
    takes: ClassVar[Takes] = Takes(regularizer="l2", positive_strength=True)

    def check(self, problem):
        if not problem.has_conjugate:
            raise ValueError("AveragedSubgradient needs a loss with a conjugate (for its dual "
                             "point).")

    def init(self, problem, w0):
        S = problem.scores(w0)
        zero = jnp.zeros((), problem.dtype)
        core = Core(w0, problem.value(w0, S), zero - jnp.inf, counters(matvecs=1))
        return ToyState(core, w0, S, S, jnp.zeros_like(S), jnp.zeros_like(w0), zero)

    def step(self, problem, state):
        g, u, g_reg = problem.subgradient(state.w, state.S)
        xtu = g - g_reg
        t = state.t + 1
        w = state.w - g / (problem.lam * t)
        S = problem.scores(w)
        # Running averages: ū_t of the score subgradients, w̄_t of the iterates w_2..w_{t+1}.
        u_avg = state.u_avg + (u - state.u_avg) / t
        xtu_avg = state.xtu_avg + (xtu - state.xtu_avg) / t
        w_avg = state.core.w + (w - state.core.w) / t
        S_avg = state.S_avg + (S - state.S_avg) / t
        core = Core(w_avg, problem.value(w_avg, S_avg), problem.dual_value(u_avg, Xtu=xtu_avg),
                    count(state.core.stats, matvecs=2))
        return ToyState(core, w, S, S_avg, u_avg, xtu_avg, t)
