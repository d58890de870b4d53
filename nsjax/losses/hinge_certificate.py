"""A tight dual point for the L2-regularized binary hinge, for the certified gap at the end.

The dual of eq. 18 with the hinge is max_{β∈[0,1]ⁿ} D(β) = mean(β) − ‖Xᵀ(β∘y)/n‖²/(2λ), and
every β in the box gives D(β) ≤ J*. Direction finding's aggregated subgradient gives a β
that is fractional only where the iterate sits exactly on a hinge; near the optimum the
true margin set is wider than that, so its gap stalls well above the suboptimality. Here,
for a few widths δ, the examples with |1 − y_i x_iᵀw| ≤ δ are freed and their β fitted
by CGLS to the optimality condition λw = Xᵀ(β∘y)/n (the others keep β = 1 on errors,
0 on well-classified points); the clipped result is a feasible dual point. The widths
cover the scales a margin point at distance ‖w − w*‖ from the optimum can have.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: Widths δ of the freed margin band, relative to max(1, |x_iᵀw|).
BAND_WIDTHS = (1e-1, 1e-3, 1e-5, 1e-7)
#: CGLS iterations per width: each costs one product with X and one with Xᵀ.
CGLS_ITERATIONS = 50


def hinge_dual_certificate(problem, w, S, iterations=CGLS_ITERATIONS):
    """The best D(β) over the band widths: a lower bound on min J (paper 000, eq. 21).

    Returns (D, number of products with X or Xᵀ spent).
    """
    best = jnp.asarray(-jnp.inf, S.dtype)
    products = jnp.zeros((), jnp.int32)
    for delta in BAND_WIDTHS:
        u, steps = _band_dual_point(problem, w, S, delta, iterations)
        best = jnp.maximum(best, problem.dual_value(u, S=S))
        products = products + 2 * steps + 3
    return best, products


def _band_dual_point(problem, w, S, delta, iterations):
    """Score-space dual point u = −β∘y/n with β fitted by CGLS on the band |margin| ≤ δ,
    and the number of CGLS iterations taken."""
    y = problem.y
    n = S.shape[0]
    margin = 1.0 - y * S
    free = jnp.abs(margin) <= delta * jnp.maximum(1.0, jnp.abs(S))
    fixed = jnp.where(free, 0.0, jnp.where(margin > 0, 1.0, 0.0))
    # The optimality condition ∇(λΩ)(w) = Xᵀ(β∘y)/n (λw = … for L2, eq. 21).
    target = problem.reg.subgradient(w) - problem.rmv(fixed * y) / n

    def A(z):
        return problem.rmv(jnp.where(free, z, 0.0) * y) / n

    def At(q):
        return jnp.where(free, y * problem.scores(q), 0.0) / n

    z = jnp.where(free, 0.5, 0.0)
    s = At(target - A(z))
    gamma0 = jnp.vdot(s, s)
    # Stop where the normal-equation residual has fallen to rounding level: past that, the
    # ratios below are 0/0 in the making.
    floor = (jnp.finfo(S.dtype).eps ** 2) * gamma0

    def cgls(c):
        z, res, s, p, gamma, it = c
        q = A(p)
        qq = jnp.vdot(q, q)
        live = (gamma > floor) & (qq > 0)
        alpha = jnp.where(live, gamma / jnp.where(live, qq, 1.0), 0.0)
        z, res = z + alpha * p, res - alpha * q
        s = At(res)
        gamma_new = jnp.vdot(s, s)
        beta = jnp.where(live, gamma_new / jnp.where(live, gamma, 1.0), 0.0)
        return z, res, s, jnp.where(live, s + beta * p, 0.0 * p), gamma_new, it + 1

    def running(c):
        return (c[5] < iterations) & (c[4] > floor)

    init = (z, target - A(z), s, s, gamma0, jnp.zeros((), jnp.int32))
    out = jax.lax.while_loop(running, cgls, init)
    z = jnp.where(jnp.isfinite(out[0]), out[0], 0.5)
    beta = fixed + jnp.where(free, jnp.clip(z, 0.0, 1.0), 0.0)
    return -beta * y / n, out[5]
