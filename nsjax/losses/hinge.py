"""Binary hinge loss, Yu et al. (2010), eqs. 19–23 and 25–28.

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from nsjax.losses._hinge_certificate import hinge_dual_certificate
from nsjax.losses.base import Loss, Weighted, active_tol
from nsjax.losses.labels import BinaryLabels


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Hinge(BinaryLabels, Weighted, Loss):
    """R(S) = (1/n) Σ_i max(0, 1 − y_i S_i), labels y ∈ {−1, +1} (mapped by `Problem`);
    with sample weights c, (1/n) Σ_i c_i max(0, 1 − y_i S_i) (`Weighted`).

    The subgradient coefficients β of eq. 21 are 1 on the error set E, 0 on the
    well-classified set W and free in [0, 1] on the margin set M (eq. 20); in score space
    u = −β ∘ y / n (−β ∘ y ∘ c / n with weights).

    Example:
        >>> import nsjax, numpy as np
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([1, -1])
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y)
    """

    #: Per-example weights c (``Problem(..., sample_weight=c)``), or None.
    weights: jax.Array | None = None
    #: The dual the Nesterov solvers run on: the box of eq. 21 of Saha et al. (2009).
    dual_form: ClassVar[str] = "svm"

    def margins(self, S, y):
        """1 − y S, snapped to exactly 0 within `active_tol` (the margin set M)."""
        m = 1.0 - y * S
        return jnp.where(jnp.abs(m) <= active_tol(S), 0.0, m)

    def risk(self, S, y):
        """R(S) = mean(max(0, 1 − y S)) (eq. 19)."""
        return self.weighted_mean(jnp.maximum(0.0, 1.0 - y * S))

    def dscores(self, S, y):
        """u = −β∘y/n with β = 1 on E, ½ on M, 0 on W (eq. 21)."""
        # β = 1/2 on the margin: a subgradient in the relative interior of ∂R.
        m = self.margins(S, y)
        beta = jnp.where(m > 0, 1.0, jnp.where(m == 0, 0.5, 0.0))
        return -self.per_example(beta * y)

    def argsup(self, S, dS, y):
        """The score subgradient steepest along dS (eq. 23)."""
        # eq. 23: on M take β = 1 exactly where y xᵀp < 0.
        m = self.margins(S, y)
        beta = jnp.where(m > 0, 1.0, jnp.where((m == 0) & (y * dS < 0), 1.0, 0.0))
        return -self.per_example(beta * y)

    def lines(self, S, dS, y):
        """Per example the zero line and the active line along S + η dS (eq. 25)."""
        # Each term is max(0, m_i − η y_i dS_i): the zero line and the active line (eq. 25).
        m = self.margins(S, y)
        zeros = jnp.zeros_like(m)
        b = self.per_example(jnp.stack([zeros, m], axis=-1))
        a = self.per_example(jnp.stack([zeros, -y * dS], axis=-1))
        return b, a

    def center_dual(self, u, y):
        """The nearest dual point with Σu = 0 (`center_binary_dual`), for a bias."""
        return self.center_binary_dual(u, y)

    def conjugate(self, u, y):
        """R*(u) = −mean(β) for β = −n u∘y in [0, 1]ⁿ, +inf outside (weights:
        −(1/n) Σ cᵢβᵢ for u = −β∘y∘c/n)."""
        beta, inside = self.dual_coefficients(u, y)
        eps = active_tol(jnp.ones((), u.dtype))
        inside = inside & jnp.all((beta >= -eps) & (beta <= 1 + eps))
        return jnp.where(inside, -self.weighted_mean(beta), jnp.inf)

    def dual_scale_limit(self, u, y):
        """R*(s u) = s R*(u) while s β stays in [0, 1]: the largest such s."""
        beta, _ = self.dual_coefficients(u, y)
        return 1.0 / jnp.maximum(jnp.max(beta), jnp.finfo(u.dtype).tiny)

    def dual_certificate(self, problem, w, S):
        """A tight lower bound on min J near w by the band fit of `hinge_dual_certificate`,
        and the number of products with X or Xᵀ it spent."""
        return hinge_dual_certificate(problem, w, S)
