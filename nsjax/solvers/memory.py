"""Quasi-Newton memories: products B v with the inverse-Hessian estimate B, and updates.

`LBFGSMemory` keeps the last m pairs (s, y) and applies B by the two-loop recursion
(Nocedal and Wright, Alg. 7.4) with the usual scaling B₀ = (sᵀy / yᵀy) I; `DenseBFGSMemory`
stores B itself and applies the rank-two update (6) of Yu et al. (2010). Both skip the update, and
report it, when the curvature sᵀy is too small to keep B positive definite.

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.solvers._options import Options, check_fits, weights_of

#: How `LBFGSMemory` computes B v (see there).
FORMS = ("auto", "two-loop", "compact")

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
    sy: jax.Array  # (m, m): s_iᵀ y_j, for the compact form
    yy: jax.Array  # (m, m): y_iᵀ y_j


@dataclass(frozen=True)
class LBFGSMemory:
    """Limited-memory B from the last ``m`` pairs (Yu et al. 2010, Sec. 2.5).

    ``scaling=False`` keeps B₀ = I (Alg. 1) instead of the secant scaling: on small, very
    nonsmooth problems the ratio sᵀy / yᵀy jumps with every kink crossed and shrinks steps.

    Args:
        m: the number of pairs kept, an int >= 1 (and <= 2**31 - 1); `check` refuses, before
            anything is allocated, an m whose 2·m·d numbers do not fit in memory.
        scaling: True or False (not 1 or "yes"): the secant scaling B₀ = (sᵀy / yᵀy) I, or
            B₀ = I.
        form: "auto", "two-loop" or "compact" (below).

    ``form`` says how B v is computed: "two-loop" (`apply_two_loop`, 4m dependent vector
    operations), "compact" (`apply_compact`, two products with the memories and a small
    triangular solve; its update keeps SᵀY and YᵀY, one more pass over the memories), or
    "auto": the two-loop on CPUs, the compact form elsewhere, where the two-loop's many
    small kernels cost their launches. Both give B v to rounding.

    Example:
        >>> import nsjax
        >>> solver = nsjax.solvers.SubLBFGS(memory=nsjax.solvers.LBFGSMemory(5, scaling=False))
    """

    m: int = 15
    scaling: bool = True
    form: str = "auto"

    def __post_init__(self):
        options = Options(self)
        options.int("m", low=1)
        options.bool("scaling")
        options.choice("form", FORMS)

    def nbytes(self, problem, m=None) -> int:
        """The bytes of the memory for ``problem`` (with ``m`` pairs; default this one's):
        2·m·D numbers for the pairs (s, y) of its D weights, 2·m² for the products SᵀY,
        YᵀY and m for ρ, in the problem's dtype (what XLA allocates for the memory of a
        SubLBFGS run, to 1 %)."""
        m = self.m if m is None else m
        D, _ = weights_of(problem)
        return np.dtype(problem.dtype).itemsize * (2 * m * D + 2 * m * m + m)

    def check(self, problem, owner=None, option=None, reserved=(0, "")):
        """Refuse (ValueError, before anything is allocated) an ``m`` whose pairs do not fit
        in the memory of the machine (`nsjax.solvers.check_fits`), naming the
        ``option`` of the solver ``owner`` that set it. Any weight shape works."""
        D, dtype = weights_of(problem)
        m = self.m
        check_fits(owner or type(self).__name__, option or "m", m,
                   lambda k: self.nbytes(problem, k),
                   f"2 x {m} x {D} + 2 x {m}^2 {dtype} numbers for this problem's {D} "
                   "weights (the pairs (s, y) and their products)", low=1, reserved=reserved)

    def init(self, w):
        """The empty memory (B = I) for weights shaped like w."""
        z = jnp.zeros((self.m,) + w.shape, w.dtype)
        zm = jnp.zeros((self.m, self.m), w.dtype)
        return LBFGSState(z, z, jnp.zeros(self.m, w.dtype), jnp.zeros((), jnp.int32),
                          jnp.zeros((), jnp.int32), zm, zm)

    def _gamma(self, mem, sy, yy):
        """B₀ = γ I: γ = sᵀy / yᵀy of the newest pair (1 without pairs or scaling)."""
        if not self.scaling:
            return jnp.ones((), mem.rho.dtype)  # B₀ = I, as in Alg. 1 of Yu et al. (2010)
        return jnp.where(mem.count > 0, sy / jnp.where(yy > 0, yy, 1.0), 1.0)

    def apply(self, mem: LBFGSState, v):
        """B v, in this memory's ``form``."""
        if self.form == "auto":
            return jax.lax.platform_dependent(mem, v, cpu=self.apply_two_loop,
                                              default=self.apply_compact)
        return {"two-loop": self.apply_two_loop, "compact": self.apply_compact}[self.form](
            mem, v)

    def apply_two_loop(self, mem: LBFGSState, v):
        """B v by the two-loop recursion (Nocedal and Wright, Alg. 7.4); empty slots have
        rho = 0 and contribute nothing."""
        m = self.m
        newest_first = (mem.head - 1 - jnp.arange(m)) % m
        newest = newest_first[0]

        def backward(q, i):
            a = mem.rho[i] * jnp.vdot(mem.s[i], q)
            return q - a * mem.y[i], a

        q, alphas = jax.lax.scan(backward, v, newest_first)

        def forward(r, ia):
            i, a = ia
            b = mem.rho[i] * jnp.vdot(mem.y[i], r)
            return r + (a - b) * mem.s[i], None

        gamma = self._gamma(mem, jnp.vdot(mem.s[newest], mem.y[newest]),
                            jnp.vdot(mem.y[newest], mem.y[newest]))
        r, _ = jax.lax.scan(forward, gamma * q, (newest_first[::-1], alphas[::-1]))
        return r

    def apply_compact(self, mem: LBFGSState, v):
        """B v by the compact representation of the inverse BFGS matrix (Byrd, Nocedal
        and Schnabel, Math. Programming 63, 1994): B = γI + [S γY] M [S γY]ᵀ with the
        2m × 2m middle matrix M from R = triu(SᵀY) and D = diag(SᵀY), in chronological
        order (checked against the dense BFGS recursion in tests/test_memory.py).

        With p = Sᵀv, q = Yᵀv and r = R⁻¹p: B v = γ(v − Y r) + S R⁻ᵀ((D + γYᵀY) r − γq).
        Two products with the (m, d) memories and O(m²) work between them, where the
        two-loop recursion makes 4m dependent vector operations: on a GPU each of those
        costs a launch. Empty slots are masked out of p, q, R and D (their R block is the
        identity, so they stay decoupled from the rest)."""
        m = self.m
        hi = jax.lax.Precision.HIGHEST
        S, Y = mem.s.reshape(m, -1), mem.y.reshape(m, -1)
        order = (mem.head + jnp.arange(m)) % m  # oldest first; empty slots come first
        valid = (mem.rho != 0)[order]
        both = valid[:, None] & valid[None, :]
        p = jnp.where(valid, jnp.matmul(S, v.ravel(), precision=hi)[order], 0.0)
        q = jnp.where(valid, jnp.matmul(Y, v.ravel(), precision=hi)[order], 0.0)
        sy, yy = mem.sy[order][:, order], mem.yy[order][:, order]
        R = jnp.where(both & (jnp.arange(m)[:, None] <= jnp.arange(m)), sy, 0.0)
        R = R + jnp.diag(jnp.where(valid, 0.0, 1.0).astype(R.dtype))
        D = jnp.where(valid, jnp.diagonal(sy), 0.0)
        YY = jnp.where(both, yy, 0.0)
        gamma = self._gamma(mem, sy[-1, -1], yy[-1, -1])  # the newest pair is last
        solve = jax.scipy.linalg.solve_triangular
        r = solve(R, p, lower=False)
        a = solve(R, D * r + gamma * (jnp.matmul(YY, r, precision=hi) - q), trans="T",
                  lower=False)
        back = (jnp.arange(m) - mem.head) % m  # slot i's place in `order`
        Bv = gamma * v.ravel() + jnp.matmul(a[back], S, precision=hi) - gamma * jnp.matmul(
            r[back], Y, precision=hi)
        return Bv.reshape(v.shape)

    def update(self, mem: LBFGSState, s, y, accept):
        """Store (s, y) if ``accept`` and the curvature is large enough.

        Returns (mem, curvature_too_small). Only the written slot is selected on, so a
        step costs O(d), not a copy of the whole (m, d) memory. For the compact form the
        products SᵀY and YᵀY get the new pair's row and column (one pass over the memories;
        the two-loop form leaves them alone).
        """
        curvature = curvature_ok(s, y)
        ok = accept & curvature
        head = mem.head
        S = mem.s.at[head].set(jnp.where(ok, s, mem.s[head]))
        Y = mem.y.at[head].set(jnp.where(ok, y, mem.y[head]))
        args = (mem.sy, mem.yy, S, Y, s, y, head)
        if self.form == "auto":
            sy, yy = jax.lax.platform_dependent(*args, cpu=lambda sy, yy, *_: (sy, yy),
                                                default=self._products)
        elif self.form == "compact":
            sy, yy = self._products(*args)
        else:
            sy, yy = mem.sy, mem.yy
        new = LBFGSState(
            S, Y,
            mem.rho.at[head].set(jnp.where(ok, 1.0 / jnp.where(ok, jnp.vdot(s, y), 1.0),
                                           mem.rho[head])),
            jnp.where(ok, (head + 1) % self.m, head),
            jnp.where(ok, jnp.minimum(mem.count + 1, self.m), mem.count),
            jnp.where(ok, sy, mem.sy), jnp.where(ok, yy, mem.yy),
        )
        return new, ~curvature

    def _products(self, sy, yy, S, Y, s, y, head):
        """SᵀY and YᵀY with the new pair (s, y) in slot ``head`` of S and Y."""
        hi = jax.lax.Precision.HIGHEST
        Sy = jnp.matmul(S.reshape(self.m, -1), y.ravel(), precision=hi)  # s_iᵀ y
        Ys, Yy = jnp.matmul(Y.reshape(self.m, -1), jnp.stack([s.ravel(), y.ravel()], 1),
                            precision=hi).T  # y_iᵀ s, y_iᵀ y
        return (sy.at[:, head].set(Sy).at[head, :].set(Ys),
                yy.at[:, head].set(Yy).at[head, :].set(Yy))

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
    """Full-matrix B for subBFGS (Yu et al. 2010, Alg. 1), for small d; w must be 1-D."""

    def nbytes(self, problem) -> int:
        """The bytes of B for ``problem``: 3·d² numbers in its dtype for d weights (B, its
        update and a working copy: what XLA allocates for a SubBFGS run, to 5 %)."""
        D, _ = weights_of(problem)
        return 3 * np.dtype(problem.dtype).itemsize * D * D

    def check(self, problem, owner="SubBFGS", option="memory", reserved=(0, "")):
        """Refuse (d, K) weights (B would be a (d·K)² matrix), and d whose d × d matrices
        do not fit in the memory of the machine (`nsjax.solvers.check_fits`)."""
        if len(problem.w_shape) != 1:
            raise ValueError("SubBFGS keeps a dense (d, d) matrix and needs 1-D weights; use "
                             "SubLBFGS for multiclass or multilabel problems.")
        D, dtype = weights_of(problem)
        check_fits(owner, option, self, lambda _: self.nbytes(problem),
                   f"3 x {D}^2 {dtype} numbers for this problem's {D} weights (the dense "
                   "matrix B, its update and a working copy)", reserved=reserved,
                   instead="use SubLBFGS, whose memory of m pairs keeps 2 x m x d numbers")

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
