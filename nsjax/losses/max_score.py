"""The largest score, R(S) = max_i S_i: entropy-regularized LPBoost's loss (Zhang et al.
2010, Example 5, eq. 51: g*(s) = max over the t edge vectors) and that of the Hadamard
problem of Saha et al. (2009), eq. 14, with its soft-max smoothing (Zhang et al. 2010,
Sec. 5.1, Example 2).

References: see docs/references.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from nsjax.losses.base import Loss, active_tol


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MaxScore(Loss):
    """R(S) = max_i S_i over the n scores (no labels: pass ``y=None`` to `Problem`).

    For LPBoost the rows of X are the edge vectors uᵢ (uᵢⱼ = yⱼ hᵢ(xⱼ) for hypothesis i and
    example j) and w is the distribution over the examples, so R(Xw) = maxᵢ⟨uᵢ, w⟩ (eq. 51);
    with `nsjax.regularizers.Entropy` (λ, cap ν) that is entropy-regularized LPBoost, solved
    by `AGMEF(scheme="primal")` (the default there) on the soft-max smoothing below.

    R is the support function of the simplex: ∂R(S) is the simplex on the largest scores,
    R*(u) = 0 on the simplex (+inf off it), and the smoothing with the entropy prox-function
    d(α) = Σ αᵢ log αᵢ + log n (0 ≤ d ≤ log n on the simplex) is
    g*_μ(S) = μ log Σᵢ exp(Sᵢ/μ) − μ log n, with g*_μ ≤ R ≤ g*_μ + μ log n (so μ = ε/log n for
    an ε-accurate smoothing, eq. 57 with D = log n) and ∇g*_μ = soft-max(S/μ).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.losses import MaxScore
        >>> loss = MaxScore()
        >>> float(loss.risk(jnp.array([0.5, 2.0, -1.0])))
        2.0
        >>> loss.dscores(jnp.array([0.5, 2.0, -1.0])).tolist()
        [0.0, 1.0, 0.0]
    """

    def risk(self, S, y=None):
        return jnp.max(S)

    def dscores(self, S, y=None):
        """A vertex of ∂R(S): the first largest score's indicator."""
        return self.argsup(S, jnp.zeros_like(S))

    def argsup(self, S, dS, y=None):
        """The vertex of ∂R(S) steepest along dS: among the scores within `active_tol` of
        the largest, the one with the largest dS."""
        top = jnp.max(S)
        active = top - S <= active_tol(top)
        return jax.nn.one_hot(jnp.argmax(jnp.where(active, dS, -jnp.inf)), S.shape[0],
                              dtype=S.dtype)

    def conjugate(self, u, y=None):
        """0 where u is in the simplex, +inf elsewhere. Points that the solvers average from
        simplex points are in it only to rounding: entries ≥ −n·eps and |Σu − 1| ≤ n·eps
        count as in it (the bound then errs by at most that much times max |S|)."""
        tol = u.shape[0] * jnp.finfo(u.dtype).eps
        inside = (jnp.min(u) >= -tol) & (jnp.abs(jnp.sum(u) - 1.0) <= tol)
        return jnp.where(inside, 0.0, jnp.inf).astype(u.dtype)

    def smoothing_diameter(self, n):
        """D = max of the prox-function over the simplex, log n: μ = ε/D (eq. 57)."""
        return math.log(n) if n > 1 else 1.0

    def smoothed(self, S, mu, y=None):
        """(g*_μ(S), its gradient soft-max(S/μ)): the soft-max smoothing of Example 2
        (μ > 0)."""
        n = S.shape[0]
        value = mu * (jax.nn.logsumexp(S / mu) - math.log(n))
        return value, jax.nn.softmax(S / mu)

    def smoothing_term(self, alpha, mu):
        """μ d(α) = μ(Σ αᵢ log αᵢ + log n): what the smoothing adds to the dual."""
        n = alpha.shape[0]
        return mu * (jnp.sum(jax.scipy.special.xlogy(alpha, alpha)) + math.log(n))
