"""A tight dual point for losses that are per-example maxima of affine pieces of the scores.

The multiclass hinge (Yu et al. 2010, eq. 35, and its slack-rescaled variant) and the
multilabel hinge (eq. 51) are

    R(S) = (1/n) Σ_i max_j (c_ij + ⟨V_ij, S_i⟩),

with K pieces per example for the multiclass hinge (c_iz = Δ(z, z_i), V_iz = e_z − e_{z_i},
times Δ(z, z_i) for slack rescaling) and up to K² for the multilabel hinge (the label pairs
(z, z'), c = Δ(z', z), V = e_z' − e_z; pairs outside the label structure are masked with
c = −inf). Their subdifferentials are the images of the simplices over each example's
maximal pieces (eqs. 38–39, 53). Any α with each row α_i in the simplex over the example's
pieces gives a score-space dual point U(α) = Σ_j α_ij V_ij / n, and by Fenchel–Young
R(S) ≥ ⟨U(α), S⟩ + Σ_ij α_ij c_ij / n for every S, so

    D(α) = Σ_ij α_ij c_ij / n − (λΩ)*(−Xᵀ U(α)) ≤ min J,

exactly (no tolerance: it is computed from α, not from a conjugate of U, which for the
multilabel hinge would be a linear program). Where every example has a neutral piece
(c = 0, V = 0: the true label z_i, the pairs (z, z)), moving mass from the other pieces to
it scales (U, Σαc) by the same s, so the best scalar multiple is taken at no extra product
(`nsjax.regularizers.Regularizer.scaled_dual`), as for the binary hinge.

The fit mirrors the binary hinge's (`nsjax.losses._hinge_certificate`): for a few band widths
δ, the pieces within δ of their example's maximum are active and α starts at the uniform
weights on them. A pass parametrizes each α_i on the face of its support relative to its
heaviest piece ref, α_i = e_ref + Σ_{j ≠ ref} z_ij (e_j − e_ref) (so Σ_j α_ij = 1), fits
the free coefficients z by CGLS (`nsjax.losses._cgls`) to the optimality condition
∇(λΩ)(w) + Xᵀ U(α) = 0 (λW = −Xᵀ U for L2: eq. 38 with 0 ∈ ∂J), projects each α_i onto
the simplex over its support (`nsjax.projections.project_simplex`) and evaluates D.
Examples with one active piece keep that vertex. Unlike the binary hinge's box, the
simplex often cuts the least-squares fit where pieces tie in threes or more (at W* = 0
every wrong label ties), so the pieces the projection set to 0 leave the support and the
next pass refits on the rest, an active-set iteration that stops when the support no
longer shrinks. The best D over all passes is the certificate.

References: see docs/references.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.losses._cgls import cgls
from nsjax.losses._hinge_certificate import CGLS_ITERATIONS
from nsjax.projections import project_simplex

#: Widths δ of the band of active pieces, relative to max(1, max_j |c_ij + ⟨V_ij, S_i⟩|):
#: a factor 10 apart (the binary hinge's factor 100 leaves the gap 10–100 times the
#: suboptimality at distances 1e-4–1e-3 from the optimum here); the loop stops once the gap
#: has closed, so the finer grid costs little at the optimum.
BAND_WIDTHS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
#: Fitting passes per band width, each on the support the last projection left.
ROUNDS = 8


class Pieces(NamedTuple):
    """A loss R(S) = (1/n) Σ_i max_j (c_ij + ⟨V_ij, S_i⟩) as its affine pieces.

    Attributes:
        offsets: (n, r) the offsets c, −inf on masked pieces (each example has at least
            one piece that is not masked).
        slopes: dS ↦ (n, r) the pieces' slopes ⟨V_ij, dS_i⟩ along dS (any finite value on
            masked pieces).
        dual: weights (n, r) ↦ U = Σ_j weights_ij V_ij / n, a score-shaped array (linear).
        neutral: (n, r) bool, pieces with c = 0 and V = 0, or None; where given, every
            example must have one.
    """

    offsets: jax.Array
    slopes: Callable
    dual: Callable
    neutral: jax.Array | None = None


def max_affine_dual_certificate(problem, w, S, pieces: Pieces, iterations=CGLS_ITERATIONS,
                                rounds=ROUNDS):
    """The best D(α) over the band widths and fitting passes: a lower bound on min J (see
    the module docstring).

    One `lax.while_loop` over (width, pass): each pass fits α on its support by CGLS,
    projects it and evaluates D; the pieces whose weight the projection set to 0 leave the
    support, and a width ends when its support stops shrinking or after ``rounds`` passes.
    The loop ends early where D has reached J(w) to rounding.

    Args:
        problem: the `nsjax.Problem`.
        w: the weights near which the dual point is fitted.
        S: their scores X w.
        pieces: the loss as its affine pieces at S (`Pieces`).
        iterations: CGLS iterations per pass.
        rounds: passes per width.

    Returns:
        (D, number of products with X or Xᵀ spent).
    """
    c = pieces.offsets
    valid = jnp.isfinite(c)
    v = jnp.where(valid, c + pieces.slopes(S), -jnp.inf)
    top = jnp.max(v, axis=1, keepdims=True)
    scale = jnp.maximum(1.0, jnp.max(jnp.where(valid, jnp.abs(v), 0.0), axis=1, keepdims=True))
    widths = jnp.asarray(BAND_WIDTHS, S.dtype)
    value = problem.value(w, S)
    closed = 4 * jnp.finfo(S.dtype).eps * jnp.maximum(1.0, jnp.abs(value))

    def band(k):
        """The band of width k: its pieces, and the uniform weights on them."""
        active = valid & (top - v <= widths[jnp.minimum(k, len(BAND_WIDTHS) - 1)] * scale)
        weights = active.astype(S.dtype)
        return weights / jnp.sum(weights, axis=1, keepdims=True), active

    def running(carry):
        k, _, _, _, best, _ = carry
        return (k < len(BAND_WIDTHS)) & (value - best > closed)

    def one_pass(carry):
        k, rnd, alpha, support, best, products = carry
        alpha, steps = _fit(problem, w, pieces, alpha, support, iterations)
        best = jnp.maximum(best, piece_dual_value(problem, pieces, alpha))
        # The start's Xᵀ and Aᵀ, two per CGLS step, the dual value's Xᵀ.
        products = products + 2 * steps + 3
        kept = support & (alpha > 0)
        done = jnp.all(kept == support) | (rnd + 1 >= rounds)
        k = jnp.where(done, k + 1, k)
        alpha0, support0 = band(k)
        return (k, jnp.where(done, 0, rnd + 1), jnp.where(done, alpha0, alpha),
                jnp.where(done, support0, kept), best, products)

    alpha0, support0 = band(0)
    zero = jnp.zeros((), jnp.int32)
    init = (zero, zero, alpha0, support0, jnp.asarray(-jnp.inf, S.dtype), zero)
    out = jax.lax.while_loop(running, one_pass, init)
    return out[4], out[5]


def piece_dual_value(problem, pieces: Pieces, alpha):
    """D(α) = Σ α c / n − (λΩ)*(−Xᵀ U(α)) ≤ min J for α with rows in the simplex over each
    example's pieces, improved by the best scalar multiple where `Pieces.neutral` is given.
    One product with Xᵀ."""
    c = pieces.offsets
    n = c.shape[0]
    valid = jnp.isfinite(c)
    # Masked pieces have α = 0 and c = −inf: 0·(−inf) is NaN, so they are summed as 0.
    lin = jnp.sum(jnp.where(valid, alpha * jnp.where(valid, c, 0.0), 0.0)) / n
    Xtu = problem.rmv(pieces.dual(alpha))
    base = lin - problem.reg.conjugate(-Xtu)
    if pieces.neutral is None:
        return base
    # s·α on the other pieces and the rest on a neutral one stays in the simplex while
    # s · (mass off the neutral pieces) ≤ 1 in every example.
    mass = jnp.max(jnp.sum(jnp.where(pieces.neutral, 0.0, alpha), axis=1))
    s_max = 1.0 / jnp.maximum(mass, jnp.finfo(c.dtype).tiny)
    return jnp.maximum(base, problem.reg.scaled_dual(-lin, Xtu, s_max))


def _fit(problem, w, pieces: Pieces, alpha, support, iterations):
    """α fitted by CGLS to ∇(λΩ)(w) + Xᵀ U(α) = 0 on the face of ``support`` from ``alpha``
    (rows in the simplex over it), then projected onto that face; and the CGLS iterations.

    Each row is parametrized relative to its heaviest piece ref:
    α_i = e_ref + Σ_{j ∈ support, j ≠ ref} z_ij (e_j − e_ref), so that Σ_j α_ij = 1 always.
    """
    n, r = alpha.shape
    valid = jnp.isfinite(pieces.offsets)
    ref = jax.nn.one_hot(jnp.argmax(jnp.where(support, alpha, -1.0), axis=1), r, dtype=bool)
    free = support & ~ref
    onehot = ref.astype(alpha.dtype)

    def spread(z):
        """M z: the free coefficients on their pieces, their sum taken off the reference."""
        zf = jnp.where(free, z, 0.0)
        return zf - onehot * jnp.sum(zf, axis=1, keepdims=True)

    def A(z):
        return problem.rmv(pieces.dual(spread(z)))

    def At(q):
        a = jnp.where(valid, pieces.slopes(problem.scores(q)), 0.0) / n
        a_ref = jnp.sum(jnp.where(ref, a, 0.0), axis=1, keepdims=True)
        return jnp.where(free, a - a_ref, 0.0)

    z0 = jnp.where(free, alpha, 0.0)
    r0 = -problem.reg.subgradient(w) - problem.rmv(pieces.dual(onehot + spread(z0)))
    z, steps = cgls(A, At, z0, r0, iterations)
    z = jnp.where(jnp.isfinite(z), z, z0)
    return jax.vmap(project_simplex)(onehot + spread(z), support), steps
