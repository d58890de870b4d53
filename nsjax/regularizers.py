"""Regularizers Ω with strength λ: J(w) = λ Ω(w) + R(X w).

Only `L2` exists so far; L1, ElasticNet and Entropy come with their solvers.
λ is a pytree leaf, traced inside compiled code, so `nsjax.sweep` can vmap over it.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class L2:
    """λ/2 ‖w‖² (paper 000, eq. 18).

    Args:
        lam: the regularization strength λ ≥ 0. λ = 0 is allowed where the risk alone is
            bounded below; there is then no certified gap (except at an exact optimum).
    """

    lam: jax.Array | float

    def value(self, w: jax.Array) -> jax.Array:
        return 0.5 * self.lam * jnp.vdot(w, w)

    def grad(self, w: jax.Array) -> jax.Array:
        return self.lam * w

    def line(self, w: jax.Array, p: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Along w + η p the regularizer is value(w) + c η + h η²/2; returns (c, h)."""
        return self.lam * jnp.vdot(w, p), self.lam * jnp.vdot(p, p)

    def conjugate(self, v: jax.Array) -> jax.Array:
        """(λΩ)*(v) = ‖v‖² / (2λ); inf for λ = 0 unless v = 0."""
        sq = jnp.vdot(v, v)
        safe = jnp.where(self.lam > 0, self.lam, 1.0)
        return jnp.where(self.lam > 0, sq / (2 * safe), jnp.where(sq > 0, jnp.inf, 0.0))
