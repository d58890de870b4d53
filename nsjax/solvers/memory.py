"""Quasi-Newton memories: products B v with the inverse-Hessian estimate B, and updates.

`LBFGSMemory` keeps the last m pairs (s, y) and applies B by the two-loop recursion
(Nocedal and Wright, Alg. 7.4) with the usual scaling B₀ = (sᵀy / yᵀy) I; `DenseBFGSMemory`
stores B itself and applies the rank-two update (6) of paper 000. Both skip the update, and
report it, when the curvature sᵀy is too small to keep B positive definite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

#: sᵀy must exceed this many machine epsilons times ‖s‖ ‖y‖ for an update to be taken.
CURVATURE_EPS = 16.0


def curvature_ok(s, y):
    """Whether sᵀy is large enough (relative to ‖s‖‖y‖) to update B."""
    sy = jnp.vdot(s, y)
    eps = jnp.finfo(sy.dtype).eps
    return sy > CURVATURE_EPS * eps * jnp.sqrt(jnp.vdot(s, s) * jnp.vdot(y, y))


class LBFGSState(NamedTuple):
    s: jax.Array  # (m, *w.shape), oldest overwritten first
    y: jax.Array
    rho: jax.Array  # (m,), 1 / sᵀy, 0 for empty slots
    head: jax.Array  # index of the slot the next pair goes to
    count: jax.Array  # number of pairs stored (≤ m)


@dataclass(frozen=True)
class LBFGSMemory:
    """Limited-memory B from the last ``m`` pairs (paper 000, Sec. 2.5).

    ``scaling=False`` keeps B₀ = I (Alg. 1) instead of the secant scaling: on small, very
    nonsmooth problems the ratio sᵀy / yᵀy jumps with every kink crossed and shrinks steps.

    Example:
        >>> import nsjax
        >>> solver = nsjax.solvers.SubLBFGS(memory=nsjax.solvers.LBFGSMemory(5, scaling=False))
    """

    m: int = 15
    scaling: bool = True

    def __post_init__(self):
        if not (isinstance(self.m, int) and self.m >= 1):
            raise ValueError(f"memory must be an int >= 1; got {self.m!r}.")

    def check(self, problem):
        """Any weight shape works."""

    def init(self, w):
        """The empty memory (B = I) for weights shaped like w."""
        z = jnp.zeros((self.m,) + w.shape, w.dtype)
        return LBFGSState(z, z, jnp.zeros(self.m, w.dtype), jnp.zeros((), jnp.int32),
                          jnp.zeros((), jnp.int32))

    def apply(self, mem: LBFGSState, v):
        """B v by the two-loop recursion; empty slots have rho = 0 and contribute nothing."""
        m = self.m
        newest_first = (mem.head - 1 - jnp.arange(m)) % m
        newest = newest_first[0]

        def backward(q, i):
            a = mem.rho[i] * jnp.vdot(mem.s[i], q)
            return q - a * mem.y[i], a

        q, alphas = jax.lax.scan(backward, v, newest_first)
        sy = jnp.vdot(mem.s[newest], mem.y[newest])
        yy = jnp.vdot(mem.y[newest], mem.y[newest])
        gamma = jnp.where(mem.count > 0, sy / jnp.where(yy > 0, yy, 1.0), 1.0)
        if not self.scaling:
            gamma = jnp.ones_like(gamma)  # B₀ = I, as in Alg. 1 of paper 000

        def forward(r, ia):
            i, a = ia
            b = mem.rho[i] * jnp.vdot(mem.y[i], r)
            return r + (a - b) * mem.s[i], None

        r, _ = jax.lax.scan(forward, gamma * q, (newest_first[::-1], alphas[::-1]))
        return r

    def update(self, mem: LBFGSState, s, y, accept):
        """Store (s, y) if ``accept`` and the curvature is large enough.

        Returns (mem, curvature_too_small). Only the written slot is selected on, so a
        step costs O(d), not a copy of the whole (m, d) memory.
        """
        curvature = curvature_ok(s, y)
        ok = accept & curvature
        head = mem.head
        new = LBFGSState(
            mem.s.at[head].set(jnp.where(ok, s, mem.s[head])),
            mem.y.at[head].set(jnp.where(ok, y, mem.y[head])),
            mem.rho.at[head].set(jnp.where(ok, 1.0 / jnp.where(ok, jnp.vdot(s, y), 1.0),
                                           mem.rho[head])),
            jnp.where(ok, (head + 1) % self.m, head),
            jnp.where(ok, jnp.minimum(mem.count + 1, self.m), mem.count),
        )
        return new, ~curvature

    def reset(self, mem: LBFGSState, when):
        """Forget every pair (B = I) where ``when``: zero weights, nothing copied."""
        zero = jnp.zeros((), jnp.int32)
        return mem._replace(rho=jnp.where(when, 0.0, mem.rho),
                            head=jnp.where(when, zero, mem.head),
                            count=jnp.where(when, zero, mem.count))


class DenseBFGSState(NamedTuple):
    B: jax.Array  # (d, d) inverse-Hessian estimate
    count: jax.Array


@dataclass(frozen=True)
class DenseBFGSMemory:
    """Full-matrix B for subBFGS (Alg. 1 of paper 000), for small d; w must be 1-D."""

    def check(self, problem):
        """Refuse (d, K) weights: B would be a (d·K)² matrix."""
        if len(problem.w_shape) != 1:
            raise ValueError("SubBFGS keeps a dense (d, d) matrix and needs 1-D weights; use "
                             "SubLBFGS for multiclass or multilabel problems.")

    def init(self, w):
        """The empty memory (B = I) for weights shaped like w."""
        if w.ndim != 1:
            raise ValueError("SubBFGS stores a dense (d, d) matrix and needs 1-D weights.")
        return DenseBFGSState(jnp.eye(w.shape[0], dtype=w.dtype), jnp.zeros((), jnp.int32))

    def apply(self, mem: DenseBFGSState, v):
        """B v."""
        return jnp.matmul(mem.B, v, precision=jax.lax.Precision.HIGHEST)

    def update(self, mem: DenseBFGSState, s, y, accept):
        """The BFGS update (6) if ``accept`` and the curvature is large enough; before the
        first one B₀ = (sᵀy / yᵀy) I (N&W eq. 6.20). Returns (mem, curvature_too_small)."""
        curvature = curvature_ok(s, y)
        ok = accept & curvature
        sy = jnp.where(ok, jnp.vdot(s, y), 1.0)
        rho = 1.0 / sy
        gamma = sy / jnp.maximum(jnp.vdot(y, y), jnp.finfo(s.dtype).tiny)
        B = jnp.where(mem.count == 0, gamma * jnp.eye(s.shape[0], dtype=s.dtype), mem.B)
        By = B @ y
        # (I − ρ s yᵀ) B (I − ρ y sᵀ) + ρ s sᵀ, expanded to avoid forming I − ρ s yᵀ.
        B_new = (B - rho * (jnp.outer(s, By) + jnp.outer(By, s))
                 + (rho * rho * jnp.vdot(y, By) + rho) * jnp.outer(s, s))
        new = DenseBFGSState(B_new, mem.count + 1)
        mem = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, mem)
        return mem, ~curvature

    def reset(self, mem: DenseBFGSState, when):
        """B = I where ``when``."""
        eye = jnp.eye(mem.B.shape[0], dtype=mem.B.dtype)
        return DenseBFGSState(jnp.where(when, eye, mem.B),
                              jnp.where(when, jnp.zeros((), jnp.int32), mem.count))
