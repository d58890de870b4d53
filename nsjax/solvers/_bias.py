"""The unregularized bias (`Problem(..., bias=True)`) for solvers that eliminate it:
R̃(w) = min_b R(Xw + b), found exactly along the bias coordinate.

Bundle methods model R̃ instead of R: a cut of R at (w, b*) from a subgradient u ∈ ∂R with
Σᵢ uᵢ = 0 (which exists exactly at an optimal b*, 0 ∈ Σ ∂R) is a cut of R̃, so their QP over
the simplex is unchanged (a cut with Σu ≠ 0 bounds R̃ by −inf). The Nesterov solvers use
the exact b* to evaluate J at a primal point that carries no bias.
"""

from __future__ import annotations

import jax.numpy as jnp

from nsjax.solvers.line_search import ExactLineSearch, sup_slope_at_zero


def best_bias(problem, w, S):
    """(w, S) with w's bias replaced by argmin_b J(w, b), from S = Xw + b: one exact line
    search along +b or −b from the current bias (no product with X; needs a loss with
    lines).

    J is convex in b, so at most one side descends: if its slope up the bias, sup ∂ at 0 along
    +b, is < 0, the slope down is > 0 (it is ≥ −(slope up)), and vice versa. The side is
    chosen first and searched once: the same step as searching both sides and adding (the
    side that cannot descend gives η = 0), at half the program (each search is a loop that
    XLA compiles at every call site)."""
    e = jnp.zeros_like(w).at[-1].set(1.0)
    ones = jnp.ones_like(S)
    up = problem.line(w, S, e, ones)
    side = jnp.where(up.c + sup_slope_at_zero(up.b, up.a) < 0, 1.0, -1.0).astype(w.dtype)
    eta = ExactLineSearch().search(problem, w, S, side * e, side * ones).eta
    step = side * jnp.where(jnp.isfinite(eta), eta, 0.0)
    return w.at[-1].add(step), S + step


def centered_subgradient(problem, S):
    """u ∈ ∂R(S) with Σu = 0 at an optimal bias: the mix of the steepest subgradients up
    and down the bias, u = θ u₊ + (1 − θ) u₋ with Σu₊ ≥ 0 ≥ Σu₋ (the one-sided derivatives
    in b), θ chosen so that the sum vanishes (to rounding)."""
    ones = jnp.ones_like(S)
    u_up = problem.loss.argsup(S, ones, problem.y)
    u_down = problem.loss.argsup(S, -ones, problem.y)
    up, down = jnp.sum(u_up), jnp.sum(u_down)
    spread = up - down
    theta = jnp.where(spread > 0, jnp.clip(-down / jnp.where(spread > 0, spread, 1.0), 0, 1),
                      0.5)
    return theta * u_up + (1 - theta) * u_down


def bias_cut(problem, w, S):
    """At the best bias for w's coefficients: (w, S, J(w), a, b) with the cut of R̃,
    R̃(v) ≥ ⟨a, v⟩ + b (a's bias entry 0), as `Problem.cut` gives it for R. One product
    with Xᵀ."""
    w, S = best_bias(problem, w, S)
    u = centered_subgradient(problem, S)
    # b = −R*(u) where the loss gives R* (`Problem.dual_cut`, `Problem.cut`): valid although
    # u is a subgradient only up to the kink tolerance; as Σu = 0, ⟨u, S⟩ = ⟨a, w⟩.
    a, b = problem.dual_cut(u, S, problem.rmv(u))
    return w, S, problem.value(w, S), a.at[-1].set(0.0), b
