"""Multiclass hinge loss, paper 000 eqs. 35–43 (margin rescaling) and footnote 2 (slack)."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from nsjax.losses.base import Loss, snap_to_max
from nsjax.losses.labels import MulticlassLabels, checked_delta


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MulticlassHinge(MulticlassLabels, Loss):
    """R(S) = (1/n) Σ_i max_z [Δ(z, z_i) + S_iz − S_iz_i] for scores S = X W, W of shape (d, K).

    Margin rescaling (eq. 35); with ``rescaling="slack"`` the slack-rescaled variant of
    Tsochantaridis et al. (footnote 2): max_z Δ(z, z_i) (1 + S_iz − S_iz_i). Labels are class
    indices after `Problem` maps them (any K distinct values, sorted).

    Along W + ηP each example's loss is the maximum of K lines (eq. 43), so the exact line
    search of Alg. 5 applies. The oracle (eq. 41) picks, among the maximum-loss labels
    Z_i*, the one steepest along P.

    Args:
        delta: (K, K) label loss with delta[z, z'] = Δ(z, z') ≥ 0 and zero diagonal; None
            is the uniform margin Δ = 1 off the diagonal (Crammer and Singer).
        rescaling: "margin" (eq. 35) or "slack".
    """

    delta: jax.Array | None = None
    rescaling: str = field(default="margin", metadata=dict(static=True))

    def __post_init__(self):
        if self.rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {self.rescaling!r}.")

    def prepare(self, n, num_outputs, dtype):
        return checked_delta(self, num_outputs, dtype)

    def _delta(self, S, y):
        """Δ(z, z_i) for every example and label, (n, K)."""
        K = S.shape[1]
        if self.delta is None:
            return 1.0 - jax.nn.one_hot(y, K, dtype=S.dtype)
        return self.delta[:, y].T

    def _coef(self, S, y):
        """∂(piece z)/∂(S_z − S_{z_i}): 1 for margin rescaling, Δ(z, z_i) for slack."""
        return jnp.ones_like(S) if self.rescaling == "margin" else self._delta(S, y)

    def _values(self, S, y):
        diff = S - jnp.take_along_axis(S, y[:, None], 1)
        D = self._delta(S, y)
        return D + diff if self.rescaling == "margin" else D * (1.0 + diff)

    def _slopes(self, S, dS, y):
        return self._coef(S, y) * (dS - jnp.take_along_axis(dS, y[:, None], 1))

    def risk(self, S, y):
        """R(S) = mean_i max_z [Δ(z, z_i) + S_iz − S_iz_i] (eq. 35; slack: footnote 2)."""
        return jnp.mean(jnp.max(self._values(S, y), axis=1))

    def _score_grad(self, S, y, weights):
        """Σ_z weights_z · coef_z (e_z − e_{z_i}) / n: a score-space subgradient."""
        g = weights * self._coef(S, y)
        onehot = jax.nn.one_hot(y, S.shape[1], dtype=S.dtype)
        return (g - onehot * jnp.sum(g, axis=1, keepdims=True)) / S.shape[0]

    def dscores(self, S, y):
        """The average over the maximum-loss labels Z_i* (eq. 37)."""
        # The average over the maximum-loss labels Z_i* (eq. 37): relative interior of ∂R.
        v = snap_to_max(self._values(S, y))
        active = (v == jnp.max(v, axis=1, keepdims=True)).astype(S.dtype)
        return self._score_grad(S, y, active / jnp.sum(active, axis=1, keepdims=True))

    def argsup(self, S, dS, y):
        """Among Z_i*, the label steepest along dS (eq. 41)."""
        # eq. 41: among Z_i*, the label steepest along the direction.
        v = snap_to_max(self._values(S, y))
        rate = jnp.where(v == jnp.max(v, axis=1, keepdims=True), self._slopes(S, dS, y),
                         -jnp.inf)
        pick = jax.nn.one_hot(jnp.argmax(rate, axis=1), S.shape[1], dtype=S.dtype)
        return self._score_grad(S, y, pick)

    def lines(self, S, dS, y):
        """K lines per example along S + η dS (eq. 43)."""
        n = S.shape[0]
        return snap_to_max(self._values(S, y)) / n, self._slopes(S, dS, y) / n
