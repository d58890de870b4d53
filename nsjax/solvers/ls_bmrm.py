"""ls-BMRM: the line-search variant of BMRM (paper 001, Sec. 5, eq. 15 and Alg. 2).

Instead of re-solving the bundle QP, each step moves the dual point along the segment from
the current α_t to the newest cut, ((1 − η) α_t, η), by the closed-form maximizer of the
concave quadratic D(η): with ε_t = J(w_t) − D(α_t), D'(0) = ε_t and D''(0) = −‖λw_t + a‖²/λ,

    η = min(1, λ ε_t / ‖λ w_t + a_{t+1}‖²)                                   (eq. 15)
    w_{t+1} = (1 − η) w_t − (η/λ) a_{t+1},   r_{t+1} = (1 − η) r_t + η b_{t+1},

where r_t = bᵀα_t is all that is kept of the bundle. The dual value is
D(α_t) = −λ/2 ‖w_t‖² + r_t (since w_t = −Aα_t/λ), a lower bound on J*, so the certified gap
is min_{t'≤t} J(w_{t'}) − max_{t'≤t} D(α_{t'}).

Start: the paper's w_0 = 0, r_0 = 0 is the dual point on the cut (0, 0), a minorant only when
R ≥ 0. Here the first step takes η = 1 on the first real cut instead (w_1 = −a_1/λ,
r_1 = b_1), valid for any risk and any w_0.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.results import RESULTS
from nsjax.solvers._options import solver_options
from nsjax.solvers.bmrm import check_strongly_regularized, take_cut


class LineSearchBMRMState(NamedTuple):
    w: jax.Array  # best iterate
    value: jax.Array
    w_now: jax.Array
    value_now: jax.Array
    cut_a: jax.Array
    cut_b: jax.Array
    r: jax.Array  # bᵀα_t
    started: jax.Array  # False until the first cut is in
    lower: jax.Array
    gap: jax.Array
    num_steps: jax.Array
    result: jax.Array
    stats: dict


@solver_options
class LineSearchBMRM:
    """ls-BMRM (paper 001, Sec. 5): O(d) memory, one product with X and Xᵀ per step.

    Stops on the certified gap ≤ tol · max(1, |J|).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-1), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=2000, tol=1e-3)
    """

    def check(self, problem):
        check_strongly_regularized(problem, "LineSearchBMRM")

    def init(self, problem, w0) -> LineSearchBMRMState:
        dt = problem.dtype
        value, a, b = take_cut(problem, w0, problem.scores(w0))
        zero = jnp.zeros((), jnp.int32)
        return LineSearchBMRMState(
            w=w0, value=value, w_now=w0, value_now=value, cut_a=a, cut_b=b,
            r=jnp.zeros((), dt), started=jnp.array(False), lower=jnp.asarray(-jnp.inf, dt),
            gap=jnp.asarray(jnp.inf, dt), num_steps=zero, result=zero + RESULTS.running,
            stats=dict(matvecs=zero + 2),
        )

    def step(self, problem, state: LineSearchBMRMState) -> LineSearchBMRMState:
        lam = problem.lam
        w, a = state.w_now, state.cut_a
        dual_now = -0.5 * lam * jnp.vdot(w, w) + state.r
        eps = state.value_now - dual_now
        g = lam * w + a  # ∂J(w_t) ∋ λ w_t + a_{t+1}
        gg = jnp.vdot(g, g)
        eta = jnp.clip(lam * eps / jnp.where(gg > 0, gg, 1.0), 0.0, 1.0)
        eta = jnp.where(gg > 0, eta, 0.0)
        eta = jnp.where(state.started, eta, 1.0)
        w_new = (1 - eta) * w - (eta / lam) * a
        r = (1 - eta) * state.r + eta * state.cut_b
        lower = jnp.maximum(state.lower, -0.5 * lam * jnp.vdot(w_new, w_new) + r)
        value, a_new, b_new = take_cut(problem, w_new, problem.scores(w_new))
        better = value < state.value
        best = jnp.where(better, value, state.value)
        return LineSearchBMRMState(
            w=jnp.where(better, w_new, state.w), value=best, w_now=w_new, value_now=value,
            cut_a=a_new, cut_b=b_new, r=r, started=jnp.array(True), lower=lower,
            gap=best - lower, num_steps=state.num_steps + 1, result=state.result,
            stats=dict(matvecs=state.stats["matvecs"] + 2),
        )

    def record(self, state: LineSearchBMRMState):
        return state.value_now, state.gap

    def terminate(self, problem, state: LineSearchBMRMState, tol):
        converged = state.gap <= tol * jnp.maximum(1.0, jnp.abs(state.value))
        return converged, jnp.where(converged, RESULTS.successful, RESULTS.running).astype(
            jnp.int32)
