"""A sum of pointwise maxima of affine functions of the scores (paper 000, eq. 33)."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from nsjax.losses.base import snap_to_max


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MaxAffine:
    """R(S) = reduce_i max_j (slopes[i, j] · S_i + offsets[i, j]).

    Covers the binary hinge (r = 2), |x| terms and the toy problem (17) of paper 000:
    10|x| + |y| is X = I, slopes = [[10, −10], [1, −1]], offsets = 0, reduction="sum".
    Labels are not used (pass ``y=None`` to `Problem`).

    Args:
        slopes: (n, r) array.
        offsets: (n, r) array, or None for zeros.
        reduction: "mean" (the default, as for the empirical risk) or "sum".
    """

    slopes: jax.Array
    offsets: jax.Array | None = None
    reduction: str = field(default="mean", metadata=dict(static=True))

    binary = False

    def __post_init__(self):
        if self.reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {self.reduction!r}.")

    def _scale(self, n):
        return 1.0 / n if self.reduction == "mean" else 1.0

    def _values(self, S):
        b = self.slopes * S[:, None]
        return b if self.offsets is None else b + self.offsets

    def risk(self, S, y=None):
        return jnp.sum(jnp.max(self._values(S), axis=1)) * self._scale(S.shape[0])

    def dscores(self, S, y=None):
        # The average slope of the active pieces: a subgradient in the relative interior.
        active = self._active(S)
        slope = jnp.sum(jnp.where(active, self.slopes, 0.0), 1) / jnp.sum(active, 1)
        return slope * self._scale(S.shape[0])

    def argsup(self, S, dS, y=None):
        active = self._active(S)
        rate = jnp.where(active, self.slopes * dS[:, None], -jnp.inf)
        j = jnp.argmax(rate, axis=1)
        return jnp.take_along_axis(self.slopes, j[:, None], 1)[:, 0] * self._scale(S.shape[0])

    def lines(self, S, dS, y=None):
        scale = self._scale(S.shape[0])
        return snap_to_max(self._values(S)) * scale, self.slopes * dS[:, None] * scale

    def _active(self, S):
        v = snap_to_max(self._values(S))
        return v == jnp.max(v, axis=1, keepdims=True)
