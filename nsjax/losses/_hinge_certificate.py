"""A tight dual point for the L2-regularized binary hinge, for the certified gap at the end.

The dual of eq. 18 with the hinge is max_{β∈[0,1]ⁿ} D(β) = mean(β) − ‖Xᵀ(β∘y)/n‖²/(2λ), and
every β in the box gives D(β) ≤ J*. Direction finding's aggregated subgradient gives a β
that is fractional only where the iterate sits exactly on a hinge; near the optimum the
true margin set is wider than that, so its gap stalls well above the suboptimality. Here,
for a few widths δ, the examples with |1 − y_i x_iᵀw| ≤ δ are freed and their β fitted
by CGLS (`nsjax.losses._cgls`) to the optimality condition λw = Xᵀ(β∘y)/n (the others keep
β = 1 on errors, 0 on well-classified points); the clipped result is a feasible dual
point. The multiclass and multilabel hinge do the same on the faces of their
subdifferentials (`nsjax.losses._max_affine_certificate`). The widths
cover the scales a margin point at distance ‖w − w*‖ from the optimum can have.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nsjax.losses._cgls import cgls
from nsjax.projections import box_section_in_range

#: Widths δ of the freed margin band, relative to max(1, |x_iᵀw|).
BAND_WIDTHS = (1e-1, 1e-3, 1e-5, 1e-7)
#: With a bias: the weight, relative to the band's, of moving a fixed β in the projection
#: onto Σ yᵢβᵢ = 0.
BIAS_FIXED_WEIGHT = 1e6
#: CGLS iterations per width: each costs one product with X and one with Xᵀ.
CGLS_ITERATIONS = 50


def hinge_dual_certificate(problem, w, S, iterations=CGLS_ITERATIONS):
    """The best D(β) over the band widths: a lower bound on min J (Yu et al. 2010, eq. 21).

    Returns (D, number of products with X or Xᵀ spent).
    """
    # One compiled body for all widths (a Python loop would compile the fit four times).
    def width(carry, delta):
        best, products = carry
        u, steps = _band_dual_point(problem, w, S, delta, iterations)
        # With a bias, u is on Σu = 0 already (`_band_dual_point`).
        best = jnp.maximum(best, problem.dual_value(u, S=S, centered=True))
        # The fixed part's Xᵀ, A z0 and Aᵀ of the start, two per CGLS step, the dual's Xᵀ.
        return (best, products + 2 * steps + 4), None

    start = (jnp.asarray(-jnp.inf, S.dtype), jnp.zeros((), jnp.int32))
    (best, products), _ = jax.lax.scan(width, start, jnp.asarray(BAND_WIDTHS, S.dtype))
    return best, products


def _band_dual_point(problem, w, S, delta, iterations):
    """Score-space dual point u = −β∘y/n with β fitted by CGLS on the band |margin| ≤ δ,
    and the number of CGLS iterations taken."""
    y = problem.y
    # yᵢ cᵢ / n: each example's signed mass (yᵢ / n without sample weights).
    q = problem.loss.per_example(y)
    margin = 1.0 - y * S
    free = jnp.abs(margin) <= delta * jnp.maximum(1.0, jnp.abs(S))
    fixed = jnp.where(free, 0.0, jnp.where(margin > 0, 1.0, 0.0))
    # The optimality condition ∇(λΩ)(w) = Xᵀ(β∘y)/n (λw = … for L2, eq. 21).
    target = problem.reg.subgradient(w) - problem.rmv(fixed * q)

    def A(z):
        return problem.rmv(jnp.where(free, z, 0.0) * q)

    def At(v):
        return jnp.where(free, q * problem.scores(v), 0.0)

    z0 = jnp.where(free, 0.5, 0.0)
    z, steps = cgls(A, At, z0, target - A(z0), iterations)
    z = jnp.where(jnp.isfinite(z), z, 0.5)
    beta = fixed + jnp.where(free, jnp.clip(z, 0.0, 1.0), 0.0)
    if problem.bias:
        # Back onto Σ qᵢβᵢ = 0 (which the fit aims at, and clipping breaks) by moving the
        # band's β first: a weighted projection that moves the fixed β only if it must.
        beta = box_section_in_range(beta, q, 0.0, 0.0, 1.0,
                                   weights=jnp.where(free, 1.0, BIAS_FIXED_WEIGHT)).x
    return -beta * q, steps
