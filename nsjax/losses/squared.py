"""The squared loss (least squares; with `nsjax.regularizers.L1` the lasso): smooth, real
targets, R(S) = (1/2n) ‖S − y‖², scikit-learn's `Lasso` scaling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.losses.base import Loss
from nsjax.losses.labels import _check_1d, _needs, is_traced


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Squared(Loss):
    """R(S) = (1/2n) Σ_i (S_i − y_i)², y real (regression).

    Example:
        >>> import numpy as np, nsjax
        >>> X = np.array([[1.0], [2.0]]); y = np.array([1.0, 2.0])
        >>> prob = nsjax.Problem(nsjax.losses.Squared(), nsjax.regularizers.L1(0.0), X, y)
        >>> float(prob.objective(np.array([1.0])))  # an exact fit
        0.0
    """

    smooth: ClassVar[bool] = True

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
        return 0.5 * jnp.vdot(r, r) / S.shape[0]

    def risk_change(self, S, S_new, y):
        """R(S_new) − R(S) = ⟨S_new − S, S_new + S − 2y⟩ / 2n, without cancellation."""
        return 0.5 * jnp.vdot(S_new - S, S_new + S - 2 * y) / S.shape[0]

    def dscores(self, S, y):
        """The gradient (S − y)/n."""
        return (S - y) / S.shape[0]

    def argsup(self, S, dS, y):
        """The gradient: R is smooth."""
        return self.dscores(S, y)

    def curvature(self, S, y):
        """The diagonal of ∇²R(S): 1/n everywhere."""
        return jnp.full_like(S, 1.0 / S.shape[0])

    def center_dual(self, u, y):
        """u − mean(u): the nearest point with Σu = 0 (R* is finite everywhere), for a
        bias."""
        return u - jnp.mean(u)

    def conjugate(self, u, y):
        """R*(u) = ⟨u, y⟩ + (n/2) ‖u‖²."""
        return jnp.vdot(u, y) + 0.5 * u.shape[0] * jnp.vdot(u, u)
