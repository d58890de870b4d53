"""Binary logistic loss (smooth): no lines, so solvers use the Wolfe line search (16)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp

from nsjax.losses.base import Loss, Weighted
from nsjax.losses.labels import BinaryLabels


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Logistic(BinaryLabels, Weighted, Loss):
    """R(S) = (1/n) Σ_i log(1 + exp(−y_i S_i)), labels y ∈ {−1, +1} (mapped by `Problem`);
    with sample weights c, (1/n) Σ_i c_i log(1 + exp(−y_i S_i)) (`Weighted`)."""

    smooth: ClassVar[bool] = True
    #: Per-example weights c (``Problem(..., sample_weight=c)``), or None.
    weights: jax.Array | None = None

    def risk(self, S, y):
        """R(S) = mean(log(1 + exp(−y S)))."""
        return self.weighted_mean(jax.nn.softplus(-y * S))

    def risk_change(self, S, S_new, y):
        """R(S_new) − R(S) term by term: softplus(a) − softplus(b) =
        log1p(σ(b) expm1(a − b)) for a = −y S_new, b = −y S, accurate far below R's
        rounding (the L1 methods' sufficient-decrease tests near the optimum)."""
        terms = jnp.log1p(jax.nn.sigmoid(-y * S) * jnp.expm1(-y * (S_new - S)))
        return self.weighted_mean(terms)

    def dscores(self, S, y):
        """The gradient −y σ(−y S)/n."""
        return -self.per_example(y * jax.nn.sigmoid(-y * S))

    def curvature(self, S, y):
        """The diagonal of ∇²R(S): σ(y S) σ(−y S) / n (the D of Xᵀ D X)."""
        return self.per_example(jax.nn.sigmoid(y * S) * jax.nn.sigmoid(-y * S))

    def argsup(self, S, dS, y):
        """The gradient: ∂R(S) is a single point."""
        return self.dscores(S, y)  # smooth: ∂R(S) is a single point

    def center_dual(self, u, y):
        """The nearest dual point with Σu = 0 (`center_binary_dual`), for a bias."""
        return self.center_binary_dual(u, y)

    def conjugate(self, u, y):
        """R*(u) = mean(β log β + (1 − β) log(1 − β)) for β = −n u∘y ∈ [0, 1]ⁿ."""
        # ℓ*(−β) = β log β + (1 − β) log(1 − β) for β = −n u y ∈ [0, 1].
        # With weights: u = −β∘y∘c/n and R*(u) = (1/n) Σ cᵢ ℓ*(−βᵢ).
        beta, inside = self.dual_coefficients(u, y)
        inside = inside & jnp.all((beta >= 0) & (beta <= 1))
        b = jnp.clip(beta, 0.0, 1.0)
        ent = jax.scipy.special.xlogy(b, b) + jax.scipy.special.xlogy(1 - b, 1 - b)
        return jnp.where(inside, self.weighted_mean(ent), jnp.inf)
