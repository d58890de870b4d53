"""ls-BMRM: the line-search variant of BMRM (Smola et al. 2007, Sec. 5, eq. 15 and Alg. 2).

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

References: see docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers._options import solver_options
from nsjax.solvers.base import Core, Solver, count, counters
from nsjax.solvers.bmrm import BUNDLE_TAKES
from nsjax.solvers.capabilities import Takes


class LineSearchBMRMState(NamedTuple):
    core: Core  # w_t, J(w_t), D(α_t) = −λ/2‖w_t‖² + r_t ≤ min J, counters
    cut_a: jax.Array  # the cut at w_t
    cut_b: jax.Array
    r: jax.Array  # bᵀα_t
    started: jax.Array  # False until the first cut is in


@solver_options
class LineSearchBMRM(Solver):
    """ls-BMRM (Smola et al. 2007, Sec. 5): O(d) memory, one product with X and Xᵀ per step.

    Stops on the certified gap ≤ tol · max(1, |J|); `solve` returns the best iterate.

    Example:
        >>> import nsjax
        >>> prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(1.0),
        ...                      *nsjax.datasets.breast_cancer())
        >>> sols = nsjax.sweep(prob, [1.0, 0.1], nsjax.solvers.LineSearchBMRM(), tol=1e-4)
        >>> [nsjax.RESULTS(int(r)).name for r in sols.result]
        ['successful', 'successful']
    """

    #: `BUNDLE_TAKES`, without a bias.
    takes: ClassVar[Takes] = dataclasses.replace(BUNDLE_TAKES, bias=False)

    def init(self, problem, w0) -> LineSearchBMRMState:
        dt = problem.dtype
        value, a, b = problem.cut(w0, problem.scores(w0))
        return LineSearchBMRMState(
            core=Core(w0, value, jnp.asarray(-jnp.inf, dt), counters(matvecs=2)), cut_a=a,
            cut_b=b, r=jnp.zeros((), dt), started=jnp.array(False),
        )

    def step(self, problem, state: LineSearchBMRMState) -> LineSearchBMRMState:
        lam = problem.lam
        w, a = state.core.w, state.cut_a
        dual_now = -0.5 * lam * jnp.vdot(w, w) + state.r
        eps = state.core.value - dual_now
        g = lam * w + a  # ∂J(w_t) ∋ λ w_t + a_{t+1}
        gg = jnp.vdot(g, g)
        eta = jnp.clip(lam * eps / jnp.where(gg > 0, gg, 1.0), 0.0, 1.0)
        eta = jnp.where(gg > 0, eta, 0.0)
        eta = jnp.where(state.started, eta, 1.0)
        w_new = (1 - eta) * w - (eta / lam) * a
        r = (1 - eta) * state.r + eta * state.cut_b
        dual = -0.5 * lam * jnp.vdot(w_new, w_new) + r
        value, a_new, b_new = problem.cut(w_new, problem.scores(w_new))
        return LineSearchBMRMState(
            core=Core(w_new, value, dual, count(state.core.stats, matvecs=2)), cut_a=a_new,
            cut_b=b_new, r=r, started=jnp.array(True),
        )
