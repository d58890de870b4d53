"""The squared loss (least squares; with `nsjax.regularizers.L1` the lasso): smooth, real
targets, R(S) = (1/2n) ‖S − y‖², scikit-learn's `Lasso` scaling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.losses.base import Loss, Weighted
from nsjax.losses.labels import _check_1d, _needs, is_traced


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Squared(Weighted, Loss):
    """R(S) = (1/2n) Σ_i (S_i − y_i)², y real (regression); with sample weights c,
    (1/2n) Σ_i c_i (S_i − y_i)² (`Weighted`).

    Example:
        >>> import numpy as np, nsjax
        >>> X = np.array([[1.0], [2.0]]); y = np.array([1.0, 2.0])
        >>> prob = nsjax.Problem(nsjax.losses.Squared(), nsjax.regularizers.L1(0.0), X, y)
        >>> float(prob.objective(np.array([1.0])))  # an exact fit
        0.0
    """

    smooth: ClassVar[bool] = True
    #: Per-example weights c (``Problem(..., sample_weight=c)``), or None.
    weights: jax.Array | None = None

    def encode_labels(self, y, n, dtype, classes=None):
        """Real targets, cast to ``dtype`` (finite; ``classes`` must be None)."""
        _needs(y, self)
        if classes is not None:
            raise ValueError("Squared is a regression loss: y holds real targets, so "
                             f"classes must be None; got classes={classes!r}.")
        _check_1d(y, n)
        if not is_traced(y):
            arr = np.asarray(y)
            if arr.dtype.kind not in "iuf":
                raise TypeError(f"Squared needs real-valued targets y; got dtype {arr.dtype}.")
            held = arr.astype(dtype)
            if not np.all(np.isfinite(held)):
                raise ValueError(f"y has {int(np.sum(~np.isfinite(held)))} NaN or inf targets "
                                 f"as held in {np.dtype(dtype).name}; drop or impute them.")
        return jnp.asarray(y, dtype), None

    def risk(self, S, y):
        """(1/2n) ‖S − y‖²."""
        r = S - y
        if self.weights is not None:
            return 0.5 * self.weighted_mean(r * r)
        return 0.5 * jnp.vdot(r, r) / S.shape[0]

    def risk_change(self, S, S_new, y):
        """R(S_new) − R(S) = ⟨S_new − S, S_new + S − 2y⟩ / 2n, without cancellation."""
        if self.weights is not None:
            return 0.5 * self.weighted_mean((S_new - S) * (S_new + S - 2 * y))
        return 0.5 * jnp.vdot(S_new - S, S_new + S - 2 * y) / S.shape[0]

    def dscores(self, S, y):
        """The gradient (S − y)/n."""
        return self.per_example(S - y)

    def argsup(self, S, dS, y):
        """The gradient: R is smooth."""
        return self.dscores(S, y)

    def curvature(self, S, y):
        """The diagonal of ∇²R(S): 1/n everywhere (cᵢ/n with weights)."""
        if self.weights is None:
            return jnp.full_like(S, 1.0 / S.shape[0])
        return self.per_example(jnp.ones_like(S))

    def center_dual(self, u, y):
        """u − mean(u): the nearest point with Σu = 0 (R* is finite everywhere), for a
        bias. With weights, u − c Σu / Σc: zero where cᵢ = 0, as R*'s domain needs (the
        nearest such point in the metric of R*'s quadratic, Σ n uᵢ²/2cᵢ)."""
        if self.weights is None:
            return u - jnp.mean(u)
        return u - self.weights * jnp.sum(u) / jnp.sum(self.weights)

    def conjugate(self, u, y):
        """R*(u) = ⟨u, y⟩ + (n/2) ‖u‖² (weights: ⟨u, y⟩ + Σ n uᵢ²/2cᵢ, +inf where
        uᵢ ≠ 0 = cᵢ)."""
        n = u.shape[0]
        if self.weights is None:
            return jnp.vdot(u, y) + 0.5 * n * jnp.vdot(u, u)
        c = self.weights
        inside = jnp.all(jnp.where(c > 0, True, u == 0))
        quad = jnp.sum(jnp.where(c > 0, u * u / jnp.where(c > 0, c, 1.0), 0.0))
        return jnp.where(inside, jnp.vdot(u, y) + 0.5 * n * quad, jnp.inf)
