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

    Alg. 3 sorts the kinks and walks them. Sorting n kinks is the slowest part of a step on
    a CPU (50,000 kinks: 11 ms, more than a product with X), so the walk is replaced by a
    bisection on F(η) = sup ∂Φ(η) = c + hη + Σ_{kinks η_j ≤ η} jump_j, which is
    nondecreasing: bisecting the bit patterns of positive floats brackets
    η* = inf {η : F(η) ≥ 0} between two neighbouring floats in at most 64 passes of O(n)
    work each. η* is then computed exactly as Alg. 3 would: the first kink past the bracket
    or the root of the quadratic piece before it (eq. 32), whichever comes first.
    """
    c = c_reg + sup_slope_at_zero(b, a)
    eta, jump = kinks(b, a)
    finite = jnp.isfinite(eta)
    eta_f = jnp.where(finite, eta, 0.0)

    def sup_slope(x):  # F(x), x ≥ 0
        return c + h * x + jnp.sum(jnp.where(finite & (eta <= x), jump, 0.0))

    last = jnp.max(eta_f)  # 0 when there is no kink ahead
    some_kink_passes = jnp.any(finite) & (sup_slope(last) >= 0)
    # Bracket: F(lo) < 0 ≤ F(hi). If no kink passes, η* lies past the last one.
    lo = _bisect_positive_floats(sup_slope, jnp.where(some_kink_passes, 0.0, last), last,
                                 active=some_kink_passes & (c < 0))
    # Every kink in (lo, ∞) is ≥ η*; the first of them bounds the quadratic piece after lo.
    after_lo = finite & (eta > lo)
    kink = jnp.where(some_kink_passes, jnp.min(jnp.where(after_lo, eta, jnp.inf)), jnp.inf)
    slope_after_lo = c + jnp.sum(jnp.where(finite & ~after_lo, jump, 0.0))
    root = jnp.where(h > 0, -slope_after_lo / jnp.where(h > 0, h, 1.0), jnp.inf)
    eta_star = jnp.where(c >= 0, 0.0, jnp.minimum(kink, jnp.maximum(root, lo)))
    # Split the slope jump of all kinks tied at η* so that the slope there is exactly 0.
    before = finite & (eta < eta_star)
    at = finite & (eta == eta_star)
    left_slope = c + h * eta_star + jnp.sum(jnp.where(before, jump, 0.0))
    jump_here = jnp.sum(jnp.where(at, jump, 0.0))
    theta = jnp.where(jump_here > 0, -left_slope / jnp.where(jump_here > 0, jump_here, 1.0), 0.5)
    theta = jnp.clip(theta, 0.0, 1.0)
    passed = jnp.sum(before).astype(jnp.int32)
    return LineSearchResult(eta_star, passed, c < 0, theta)


def _bisect_positive_floats(F, lo, hi, active):
    """Shrink [lo, hi] (0 ≤ lo < hi, F(lo) < 0 ≤ F(hi), F nondecreasing) to two
    neighbouring floats, bisecting the integer bit patterns (monotone for floats ≥ 0),
    and return the new lo. Returns lo unchanged where ``active`` is False.
    """
    itype = jnp.int64 if lo.dtype == jnp.float64 else jnp.int32

    def to_bits(x):
        return jax.lax.bitcast_convert_type(x, itype)

    def cond(bounds):
        lo_bits, hi_bits = bounds
        return active & (hi_bits - lo_bits > 1)

    def body(bounds):
        lo_bits, hi_bits = bounds
        mid_bits = lo_bits + (hi_bits - lo_bits) // 2
        up = F(jax.lax.bitcast_convert_type(mid_bits, lo.dtype)) >= 0
        return jnp.where(up, lo_bits, mid_bits), jnp.where(up, mid_bits, hi_bits)

    lo_bits, _ = jax.lax.while_loop(cond, body, (to_bits(lo), to_bits(hi)))
    return jax.lax.bitcast_convert_type(lo_bits, lo.dtype)


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
