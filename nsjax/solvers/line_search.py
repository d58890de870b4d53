"""Line searches along w + η p, in score space (no matvec per trial step).

`exact_line_search` is Alg. 3 of paper 000 (eqs. 26–32) generalised to any loss that gives
its lines, done the sort-and-cumsum way: the kinks of Φ(η) = J(w + η p) are sorted once,
the slope jumps accumulated, the first kink with sup ∂Φ ≥ 0 located, and η* is that kink or
the root of the quadratic piece to its left. `wolfe_line_search` finds a step satisfying the
subgradient Wolfe conditions (16) by bracketing, for losses without lines.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers.envelope import envelope_kinks


class LineSearchResult(NamedTuple):
    eta: jax.Array  # the step (inf: Φ decreases without bound)
    evaluations: jax.Array  # kinks passed (exact) or trial steps (Wolfe)
    ok: jax.Array  # False if no acceptable step was found
    # Where η* is a kink: the weight θ ∈ [0, 1] on the steeper side of the kinks at η*
    # for which θ·(sup ∂Φ) + (1 − θ)·(inf ∂Φ) = 0, i.e. the subgradient that certifies
    # optimality along the line. ½ where it does not matter.
    theta: jax.Array


def kinks(b, a):
    """All examples' kinks in η > 0 and slope jumps, flattened: the closed form for two
    lines per example (binary hinge), Alg. 4 (`envelope.py`) for more."""
    if b.shape[-1] == 2:
        return kinks_of_two_lines(b, a)
    eta, jump = envelope_kinks(b, a)
    return eta.ravel(), jump.ravel()


def kinks_of_two_lines(b, a):
    """Kinks in η > 0 of max(b₀ + η a₀, b₁ + η a₁) per example, and their slope jumps.

    For r = 2 lines the envelope has at most one kink, where the lines cross; there the
    slope jumps from min(a) to max(a). Parallel lines (Δa = 0, e.g. Δf = 0 in eq. 28)
    have no kink. Kinks at η ≤ 0 are already part of sup ∂Φ(0). Returns (eta, jump) with
    eta = inf and jump = 0 where there is no kink ahead.
    """
    da = a[:, 1] - a[:, 0]
    safe = jnp.where(da != 0, da, 1.0)
    eta = (b[:, 0] - b[:, 1]) / safe
    ahead = (da != 0) & (eta > 0)
    return jnp.where(ahead, eta, jnp.inf), jnp.where(ahead, jnp.abs(da), 0.0)


def sup_slope_at_zero(b, a):
    """Σ_i max{a_ij : line j active at η = 0}: the risk part of sup ∂Φ(0) (eq. 30)."""
    top = jnp.max(b, axis=-1, keepdims=True)
    return jnp.sum(jnp.max(jnp.where(b == top, a, -jnp.inf), axis=-1))


def exact_line_search(b, a, c_reg, h) -> LineSearchResult:
    """argmin_{η ≥ 0} Φ(η) for Φ(η) = const + c_reg η + h η²/2 + Σ_i max_j (b_ij + η a_ij).

    Args:
        b, a: (n, r) offsets and slopes of each example's lines (a loss's ``lines``).
        c_reg, h: the regularizer's slope and curvature along the line (λwᵀp, λ‖p‖²).

    Returns:
        η* with 0 ∈ ∂Φ(η*) (eq. 29): 0 if p is not a descent direction, inf if Φ decreases
        without bound (h = 0 and no kink ahead), and the number of kinks passed.
    """
    c = c_reg + sup_slope_at_zero(b, a)
    eta, jump = kinks(b, a)
    order = jnp.argsort(eta)
    eta, jump = eta[order], jump[order]
    cum = jnp.cumsum(jump)
    finite = jnp.isfinite(eta)
    # sup ∂Φ at each kink: everything up to and including it (ties are handled because the
    # first index that passes gives the same η; see the module docstring).
    sup_at = c + h * jnp.where(finite, eta, 0.0) + cum
    passed = finite & (sup_at >= 0)
    any_passed = jnp.any(passed)
    k = jnp.argmax(passed)
    last = jnp.sum(finite)  # index just after the last finite kink
    k = jnp.where(any_passed, k, last)
    slope_before = c + jnp.where(k > 0, cum[jnp.maximum(k - 1, 0)], 0.0)
    # The quadratic piece to the left of kink k has slope slope_before + h η (eq. 32).
    root = jnp.where(h > 0, -slope_before / jnp.where(h > 0, h, 1.0), jnp.inf)
    kink = jnp.where(any_passed, eta[jnp.minimum(k, eta.shape[0] - 1)], jnp.inf)
    eta_star = jnp.where(c >= 0, 0.0, jnp.minimum(kink, root))
    # Split the slope jump of all kinks tied at η* so that the slope there is exactly 0.
    lo = jnp.searchsorted(eta, eta_star, side="left")
    hi = jnp.searchsorted(eta, eta_star, side="right")
    cum0 = jnp.concatenate([jnp.zeros(1, cum.dtype), cum])
    left_slope = c + h * eta_star + cum0[lo]
    jump_here = cum0[hi] - cum0[lo]
    theta = jnp.where(jump_here > 0, -left_slope / jnp.where(jump_here > 0, jump_here, 1.0), 0.5)
    theta = jnp.clip(theta, 0.0, 1.0)
    return LineSearchResult(eta_star, k.astype(jnp.int32), c < 0, theta)


def wolfe_line_search(phi, c1=1e-4, c2=0.9, eta0=1.0, max_evals=50) -> LineSearchResult:
    """A step satisfying the subgradient Wolfe conditions (16) by bracketing and bisection.

    Args:
        phi: η ↦ (Φ(η), sup ∂Φ(η)); sup ∂Φ(0) must be < 0 (a descent direction).
        c1, c2: 0 < c1 < c2 < 1.
        eta0: the first trial step.
        max_evals: cap on trial steps; past it ``ok`` is False.
    """
    f0, g0 = phi(jnp.zeros_like(eta0))

    class Carry(NamedTuple):
        lo: jax.Array
        hi: jax.Array
        eta: jax.Array
        n: jax.Array
        done: jax.Array

    def cond(c):
        return ~c.done & (c.n < max_evals)

    def body(c):
        f, g = phi(c.eta)
        decrease = f <= f0 + c1 * c.eta * g0
        curvature = g >= c2 * g0
        accept = decrease & curvature
        hi = jnp.where(decrease, c.hi, c.eta)
        lo = jnp.where(decrease & ~curvature, c.eta, c.lo)
        nxt = jnp.where(jnp.isfinite(hi), 0.5 * (lo + hi), 2.0 * c.eta)
        return Carry(lo, hi, jnp.where(accept, c.eta, nxt), c.n + 1, accept)

    eta0 = jnp.asarray(eta0, f0.dtype)
    init = Carry(jnp.zeros_like(eta0), jnp.full_like(eta0, jnp.inf), eta0,
                 jnp.zeros((), jnp.int32), g0 >= 0)
    out = jax.lax.while_loop(cond, body, init)
    return LineSearchResult(jnp.where(out.done, out.eta, 0.0), out.n, out.done & (g0 < 0),
                            jnp.asarray(0.5, f0.dtype))
