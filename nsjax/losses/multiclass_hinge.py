"""Multiclass hinge loss, Yu et al. (2010), eqs. 35–43 (margin rescaling) and footnote 2 (slack).

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from nsjax.losses._max_affine_certificate import Pieces, max_affine_dual_certificate
from nsjax.losses.base import Loss, Weighted, active_tol, near_max, row_argmax, snap_to_max
from nsjax.losses.labels import MulticlassLabels, checked_delta


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MulticlassHinge(MulticlassLabels, Weighted, Loss):
    """R(S) = (1/n) Σ_i max_z [Δ(z, z_i) + S_iz − S_iz_i] for scores S = X W, W of shape (d, K).

    Margin rescaling (eq. 35); with ``rescaling="slack"`` the slack-rescaled variant of
    Tsochantaridis et al. (footnote 2): max_z Δ(z, z_i) (1 + S_iz − S_iz_i). Labels are class
    indices after `Problem` maps them (any K distinct values, sorted).

    Along W + ηP each example's loss is the maximum of K lines (eq. 43), so the exact line
    search of Alg. 5 applies. The oracle (eq. 41) picks, among the maximum-loss labels
    Z_i*, the one steepest along P.

    With sample weights c (`Weighted`), (1/n) Σ_i c_i max_z [...]: since c_i ≥ 0, example
    i's pieces are scaled by c_i (its lines, subgradients and dual points with it).

    Duality: each example's loss is a maximum of K affine pieces of its scores, the piece of
    label z with offset Δ(z, z_i) and slope e_z − e_{z_i} (times Δ(z, z_i) for slack
    rescaling), so a score-space dual point is u_i = Σ_z α_iz · slope_z / n for α_i in the
    simplex (eqs. 38–39), and α is determined by u (`conjugate`). The end-of-run certificate
    (`dual_certificate`) fits α on a band around each example's maximum.

    Args:
        delta: (K, K) label loss with delta[z, z'] = Δ(z, z') ≥ 0 and zero diagonal; None
            is the uniform margin Δ = 1 off the diagonal (Crammer and Singer).
        rescaling: "margin" (eq. 35) or "slack".

    Example:
        >>> import jax.numpy as jnp, nsjax
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); y = [0, 1, 2]
        >>> prob = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(0.1),
        ...                      X, y)
        >>> W = prob.zeros(); S = prob.scores(W)
        >>> float(prob.value(W, S))  # every example loses Δ = 1 at W = 0
        1.0
        >>> lower, _ = prob.dual_certificate(W, S)
        >>> bool(lower <= prob.value(W, S))
        True
    """

    delta: jax.Array | None = None
    rescaling: str = field(default="margin", metadata=dict(static=True))
    #: Per-example weights c (``Problem(..., sample_weight=c)``), or None.
    weights: jax.Array | None = None

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
        return self.weighted_mean(jnp.max(self._values(S, y), axis=1))

    def _score_grad(self, S, y, weights):
        """Σ_z weights_z · coef_z (e_z − e_{z_i}) / n (times c_i with sample weights): a
        score-space subgradient."""
        g = weights * self._coef(S, y)
        onehot = jax.nn.one_hot(y, S.shape[1], dtype=S.dtype)
        return self.per_example(g - onehot * jnp.sum(g, axis=1, keepdims=True))

    def dscores(self, S, y):
        """The average over the maximum-loss labels Z_i* (eq. 37)."""
        # The average over the maximum-loss labels Z_i* (eq. 37): relative interior of ∂R.
        active = near_max(self._values(S, y)).astype(S.dtype)
        return self._score_grad(S, y, active / jnp.sum(active, axis=1, keepdims=True))

    def argsup(self, S, dS, y):
        """Among Z_i*, the label steepest along dS (eq. 41)."""
        # eq. 41: among Z_i*, the label steepest along the direction.
        rate = jnp.where(near_max(self._values(S, y)), self._slopes(S, dS, y), -jnp.inf)
        z = row_argmax(rate)
        # `_score_grad` of the one-hot pick, written out: coef_z (e_z − e_{z_i}) per example.
        # The same numbers, without its sum over labels (on CPUs a large part of the oracle).
        labels = jnp.arange(S.shape[1])
        e = (labels == z[:, None]).astype(S.dtype) - (labels == y[:, None]).astype(S.dtype)
        if self.rescaling == "slack":
            e = e * self._delta(S, y)[jnp.arange(S.shape[0]), z][:, None]
        return self.per_example(e)

    def lines(self, S, dS, y):
        """K lines per example along S + η dS (eq. 43)."""
        return (self.per_example(snap_to_max(self._values(S, y))),
                self.per_example(self._slopes(S, dS, y)))

    def _pieces(self, S, y):
        """The K affine pieces of each example (`Pieces`): offset Δ(z, z_i), slope
        e_z − e_{z_i} (times Δ(z, z_i) for slack); the true label's piece is neutral."""
        # With sample weights, example i's pieces scaled by c_i (c_i max = max of c_i ·).
        c = 1.0 if self.weights is None else self.weights[:, None]
        return Pieces(offsets=c * self._values(jnp.zeros_like(S), y),
                      slopes=lambda dS: c * self._slopes(S, dS, y),
                      dual=lambda weights: self._score_grad(S, y, weights),
                      neutral=jax.nn.one_hot(y, S.shape[1], dtype=bool))

    def _dual_weights(self, u, y):
        """(α, inside): the piece weights α_iz (z ≠ z_i) with u_i = Σ_z α_iz · slope_z / n,
        and whether u is in dom R* up to `active_tol`: α ≥ 0, Σ_{z≠z_i} α_iz ≤ 1, Σ_z u_iz = 0
        and, for slack rescaling, u_iz = 0 where Δ(z, z_i) = 0 (z ≠ z_i)."""
        n, K = u.shape
        # n u_i (n u_i / c_i with weights; u_i must be 0 where c_i = 0).
        nu, weighted_inside = self.per_example_inverse(u)
        off = ~jax.nn.one_hot(y, K, dtype=bool)
        eps = active_tol(jnp.ones((), u.dtype))
        if self.rescaling == "margin":
            alpha = jnp.where(off, nu, 0.0)
            flat = jnp.zeros(u.shape, bool)
        else:
            D = self._delta(u, y)
            alpha = jnp.where(off & (D > 0), nu / jnp.where(D > 0, D, 1.0), 0.0)
            flat = off & (D <= 0)  # pieces equal to the true label's: no weight to carry
        total = jnp.sum(nu, axis=1)
        inside = (weighted_inside & jnp.all(alpha >= -eps)
                  & jnp.all(jnp.sum(alpha, axis=1) <= 1 + eps)
                  & jnp.all(jnp.abs(total) <= eps * jnp.maximum(1.0, jnp.sum(jnp.abs(nu), 1)))
                  & jnp.all(jnp.where(flat, jnp.abs(nu) <= eps, True)))
        return alpha, inside

    def conjugate(self, u, y):
        """R*(u) = −Σ_i Σ_{z≠z_i} α_iz Δ(z, z_i) / n for the weights α that u determines
        (margin: α_iz = n u_iz; slack: n u_iz / Δ(z, z_i), so R*(u) = −Σ_{z≠z_i} u_iz), +inf
        outside the domain (within `active_tol`, as `Hinge.conjugate`)."""
        alpha, inside = self._dual_weights(u, y)
        loss = jnp.sum(alpha * self._delta(u, y), axis=1)
        return jnp.where(inside, -self.weighted_mean(loss), jnp.inf)

    def dual_scale_limit(self, u, y):
        """R*(s u) = s R*(u) while s Σ_{z≠z_i} α_iz ≤ 1 (the rest of the weight sits on the
        true label's piece, which is 0): the largest such s."""
        alpha, _ = self._dual_weights(u, y)
        return 1.0 / jnp.maximum(jnp.max(jnp.sum(alpha, axis=1)), jnp.finfo(u.dtype).tiny)

    def dual_certificate(self, problem, w, S):
        """A tight lower bound on min J near W, and the products with X or Xᵀ it spent: the
        band fit of `nsjax.losses._max_affine_certificate` on the K pieces per example."""
        return max_affine_dual_certificate(problem, w, S, self._pieces(S, problem.y))
