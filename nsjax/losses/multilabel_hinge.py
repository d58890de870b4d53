"""Multilabel hinge loss, Yu et al. (2010), eqs. 50–54.

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from nsjax.losses._max_affine_certificate import Pieces, max_affine_dual_certificate
from nsjax.losses.base import Loss, near_max, row_argmax, snap_to_max
from nsjax.losses.labels import MultilabelLabels, checked_delta


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MultilabelHinge(MultilabelLabels, Loss):
    """R(S) = (1/n) Σ_i max_{z ∈ Z_i, z' ∉ Z_i \\ {z}} [Δ(z', z) + S_iz' − S_iz]   (eq. 51).

    Labels are sets Z_i ⊆ {0, …, K−1}, given to `Problem` as a list of lists, a scipy sparse
    indicator matrix or a dense 0/1 matrix; inside they are an (n, K) mask. For a uniform
    Δ = τ this is the decoupled loss (50); with one label per example it is the multiclass
    hinge (35). Each example's loss along W + ηP is the maximum of up to K² lines (eq. 54;
    pairs outside the label structure are masked with offset −inf), and the oracle (eq. 53)
    picks a single steepest worst pair.

    Duality: a score-space dual point is u_i = Σ_{(z,z')} γ_izz' (e_z' − e_z) / n with γ_i in
    the simplex over the example's pairs (eq. 53), but u does not determine γ: R*(u) is the
    least −Σ γ Δ / n over the decompositions of u, a linear program, so this loss gives no
    ``conjugate`` (`Problem.dual_value` then needs the scores at which u is a subgradient).
    The cut of a bundle method knows its γ (`score_cut`), so its intercept is exact.
    The end-of-run certificate (`dual_certificate`) keeps γ and computes its dual value
    from γ directly (`nsjax.losses._max_affine_certificate`).

    Args:
        delta: (K, K) label loss, delta[z', z] = Δ(z', z) ≥ 0, zero diagonal; None is the
            uniform margin τ = 1.

    Example:
        >>> import jax.numpy as jnp, nsjax
        >>> X = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> prob = nsjax.Problem(nsjax.losses.MultilabelHinge(), nsjax.regularizers.L2(0.1),
        ...                      X, [[0], [1, 2], [2]])
        >>> W = prob.zeros(); S = prob.scores(W)
        >>> float(prob.value(W, S))  # every example's worst pair loses τ = 1 at W = 0
        1.0
        >>> lower, _ = prob.dual_certificate(W, S)
        >>> bool(lower <= prob.value(W, S))
        True
    """

    delta: jax.Array | None = None

    def prepare(self, n, num_outputs, dtype):
        return checked_delta(self, num_outputs, dtype)

    def _pairs(self, Y):
        """valid[i, z, z'] for z ∈ Z_i and (z' ∉ Z_i or z' = z); shape (n, K, K)."""
        K = Y.shape[1]
        eye = jnp.eye(K, dtype=bool)
        return Y[:, :, None] & (~Y[:, None, :] | eye[None])

    def _values(self, S, Y):
        K = S.shape[1]
        D = (1.0 - jnp.eye(K, dtype=S.dtype)) if self.delta is None else self.delta
        v = D.T[None] + S[:, None, :] - S[:, :, None]  # [i, z, z'] = Δ(z', z) + S_z' − S_z
        return jnp.where(self._pairs(Y), v, -jnp.inf).reshape(S.shape[0], K * K)

    def _slopes(self, dS, Y):
        K = dS.shape[1]
        a = dS[:, None, :] - dS[:, :, None]
        return jnp.where(self._pairs(Y), a, 0.0).reshape(dS.shape[0], K * K)

    def risk(self, S, Y):
        """R(S) = mean_i of the worst pair (eq. 51)."""
        return jnp.mean(jnp.max(self._values(S, Y), axis=1))

    def _score_grad(self, S, weights):
        """Σ_{(z,z')} weights · (e_z' − e_z) / n for pair weights of shape (n, K·K)."""
        n, K = S.shape
        w = weights.reshape(n, K, K)
        return (jnp.sum(w, axis=1) - jnp.sum(w, axis=2)) / n

    def dscores(self, S, Y):
        """The average over the worst pairs of each example."""
        return self.score_cut(S, Y)[0]

    def score_cut(self, S, Y):
        """(u, c): `dscores`' u and the exact intercept of its plane,
        R(S′) ≥ ⟨u, S′⟩ + c for every S′: with γ the pair weights of u, c = Σ γ Δ(z′, z) / n,
        the same mixture of the pairs' offsets. Exact where R(S) − ⟨u, S⟩ is not: the worst
        pairs are decided within `active_tol`."""
        active = near_max(self._values(S, Y))
        gamma = active / jnp.sum(active, axis=1, keepdims=True).astype(S.dtype)
        offsets = jnp.where(active, self._values(jnp.zeros_like(S), Y), 0.0)
        return self._score_grad(S, gamma), jnp.sum(gamma * offsets) / S.shape[0]

    def argsup(self, S, dS, Y):
        """A single steepest worst pair per example (eq. 53)."""
        rate = jnp.where(near_max(self._values(S, Y)), self._slopes(dS, Y), -jnp.inf)
        # `_score_grad` of the one-hot pick of pair (z, z'), written out: e_z' − e_z (the
        # same numbers, without its two sums over (n, K, K)).
        z, z_prime = jnp.divmod(row_argmax(rate), S.shape[1])
        labels = jnp.arange(S.shape[1])
        return ((labels == z_prime[:, None]).astype(S.dtype)
                - (labels == z[:, None]).astype(S.dtype)) / S.shape[0]

    def lines(self, S, dS, Y):
        """Up to K² lines per example along S + η dS (eq. 54), masked pairs at −inf."""
        n = S.shape[0]
        return snap_to_max(self._values(S, Y)) / n, self._slopes(dS, Y) / n

    def _pieces(self, S, Y):
        """The K² pair pieces of each example (`Pieces`): offset Δ(z', z), slope e_z' − e_z,
        masked outside the label structure; the pairs (z, z), z ∈ Z_i, are neutral."""
        n, K = S.shape
        return Pieces(offsets=self._values(jnp.zeros_like(S), Y),
                      slopes=lambda dS: self._slopes(dS, Y),
                      dual=lambda weights: self._score_grad(S, weights),
                      neutral=(Y[:, :, None] & jnp.eye(K, dtype=bool)[None]).reshape(n, K * K))

    def dual_certificate(self, problem, w, S):
        """A tight lower bound on min J near W, and the products with X or Xᵀ it spent: the
        band fit of `nsjax.losses._max_affine_certificate` on the pairs of each example."""
        return max_affine_dual_certificate(problem, w, S, self._pieces(S, problem.y))
