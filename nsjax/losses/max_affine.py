"""Sums (or the maximum) of pointwise maxima of affine functions of the scores.

Yu et al. (2010), eq. 33 for the per-example maxima; Saha et al. (2009), eq. 14 for the single
maximum.

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.losses.base import Loss, active_tol, near_max, row_argmax, snap_to_max
from nsjax.losses.labels import is_traced


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MaxAffine(Loss):
    """R(S) = reduce_i max_j (slopes[i, j] · S_i + offsets[i, j]).

    Covers the binary hinge (r = 2), |x| terms and the toy problem (17) of Yu et al. (2010):
    10|x| + |y| is X = I, slopes = [[10, −10], [1, −1]], offsets = 0, reduction="sum".
    With reduction="max" the risk is one maximum over all n·r affine pieces, as in the
    Hadamard problem of Saha et al. (2009), R(w) = max_i ⟨a_i, w⟩ (X = Aᵀ, slopes = 1).
    Labels are not used (pass ``y=None`` to `Problem`).

    Subgradients: for "mean"/"sum", `dscores` averages the active pieces (a point in the
    relative interior of ∂R); for "max" it takes the first active piece (a vertex of ∂R,
    the "argmax" subgradient that the lower-bound construction of Saha et al. (2009) assumes). The
    exact line search needs per-example maxima, so "max" has no lines.

    Args:
        slopes: (n, r) array.
        offsets: (n, r) array, or None for zeros.
        reduction: "mean" (the default, as for the empirical risk), "sum" or "max".
    """

    slopes: jax.Array
    offsets: jax.Array | None = None
    reduction: str = field(default="mean", metadata=dict(static=True))

    def __post_init__(self):
        if self.reduction not in ("mean", "sum", "max"):
            raise ValueError(
                f"reduction must be 'mean', 'sum' or 'max'; got {self.reduction!r}."
            )

    @property
    def has_lines(self) -> bool:
        return self.reduction != "max"

    def prepare(self, n, num_outputs, dtype):
        """Check the shapes (n, r) and finiteness of slopes and offsets; cast to dtype."""
        if is_traced(self.slopes) or is_traced(self.offsets):
            return self
        a = np.asarray(self.slopes)
        if a.ndim != 2 or a.shape[0] != n:
            raise ValueError(f"MaxAffine slopes must have shape (n={n}, r); got {a.shape}.")
        b = None if self.offsets is None else np.asarray(self.offsets)
        if b is not None and b.shape != a.shape:
            raise ValueError(f"MaxAffine offsets must have shape {a.shape}; got {b.shape}.")
        for name, arr in (("slopes", a), ("offsets", b)):
            if arr is not None and not np.all(np.isfinite(arr)):
                raise ValueError(f"MaxAffine {name} contain NaN or inf.")
        return type(self)(jnp.asarray(a, dtype), None if b is None else jnp.asarray(b, dtype),
                          self.reduction)

    def _scale(self, n):
        return 1.0 / n if self.reduction == "mean" else 1.0

    def _values(self, S):
        b = self.slopes * S[:, None]
        return b if self.offsets is None else b + self.offsets

    def risk(self, S, y=None):
        """Σ, mean or max over examples of max_j (slopes S + offsets)."""
        if self.reduction == "max":
            return jnp.max(self._values(S))
        return jnp.sum(jnp.max(self._values(S), axis=1)) * self._scale(S.shape[0])

    def dscores(self, S, y=None):
        """The average active slope per example (a vertex for "max")."""
        return self.score_cut(S, y)[0]

    def score_cut(self, S, y=None):
        """(u, c): `dscores`' u and the exact intercept of its plane,
        R(S′) ≥ ⟨u, S′⟩ + c for every S′: the same mixture of the pieces' offsets as u is of
        their slopes. Exact where R(S) − ⟨u, S⟩ is not: the active pieces are decided
        within `active_tol`."""
        offsets = jnp.zeros_like(self.slopes) if self.offsets is None else self.offsets
        if self.reduction == "max":
            i, j = self._vertex_index(S, jnp.zeros_like(S))
            return jnp.zeros_like(S).at[i].set(self.slopes[i, j]), offsets[i, j]
        # The average of the active pieces: a subgradient in the relative interior.
        active = self._active(S)
        count = jnp.sum(active, 1)
        slope = jnp.sum(jnp.where(active, self.slopes, 0.0), 1) / count
        offset = jnp.sum(jnp.where(active, offsets, 0.0), 1) / count
        scale = self._scale(S.shape[0])
        return slope * scale, jnp.sum(offset) * scale

    def argsup(self, S, dS, y=None):
        """The active slope steepest along dS, per example."""
        if self.reduction == "max":
            return self._vertex(S, dS)
        active = self._active(S)
        rate = jnp.where(active, self.slopes * dS[:, None], -jnp.inf)
        j = row_argmax(rate)
        return jnp.take_along_axis(self.slopes, j[:, None], 1)[:, 0] * self._scale(S.shape[0])

    def lines(self, S, dS, y=None):
        """The pieces of each example along S + η dS (eq. 33)."""
        scale = self._scale(S.shape[0])
        return snap_to_max(self._values(S)) * scale, self.slopes * dS[:, None] * scale

    def _vertex(self, S, dS):
        """One-hot score subgradient of the single max: the active piece with the largest
        slope along dS, the first such piece on ties."""
        i, j = self._vertex_index(S, dS)
        return jnp.zeros_like(S).at[i].set(self.slopes[i, j])

    def _vertex_index(self, S, dS):
        """(i, j) of `_vertex`'s piece."""
        v = self._values(S).ravel()
        v = jnp.where(jnp.max(v) - v <= active_tol(jnp.max(v)), jnp.max(v), v)
        rate = jnp.where(v == jnp.max(v), (self.slopes * dS[:, None]).ravel(), -jnp.inf)
        return jnp.divmod(jnp.argmax(rate), self.slopes.shape[1])

    def _active(self, S):
        return near_max(self._values(S))
