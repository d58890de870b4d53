"""The bundle QP of BMRM on the device: min_{α ∈ Δ} ½ αᵀQα / λ − bᵀα over the slots in use.

This is the dual of the cutting-plane model (Smola et al. 2007, Thm. 2 / Cor. 3, with the sign
flipped to a minimization). It is solved in two stages:

1. accelerated projected gradient (FISTA with adaptive restart) using the exact sort-based
   Euclidean projection onto the simplex, to find the support;
2. a primal active-set polish started from that point: equality-constrained QPs on the
   working set solved exactly (KKT systems), with blocking steps and multiplier checks, so
   the result satisfies the KKT conditions to rounding (accepted only if feasible and no
   worse than stage 1's point).

Stage 2 gives the exact optimum (the Hadamard test of Saha et al. (2009) needs ε_t = 1/(2λt)
to 1e-9, and the certified gap of BMRM is only as tight as this dual value); stage 1 makes
its working set start close to the answer, so it needs few passes.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nsjax.projections import project_simplex


def simplex_qp_objective(alpha, Q, b, lam):
    """½αᵀQα/λ − bᵀα."""
    return 0.5 * alpha @ Q @ alpha / lam - b @ alpha


def solve_simplex_qp(Q, b, lam, mask, alpha0, iterations=500):
    """Approximately minimize ½αᵀQα/λ − bᵀα over the simplex on ``mask``, then polish.

    Args:
        Q: (c, c) Gram matrix of the cuts (entries off ``mask`` are ignored).
        b: (c,) offsets.
        lam: λ > 0.
        mask: (c,) bool, the slots in use (at least one).
        alpha0: (c,) warm start (projected onto the simplex first).
        iterations: FISTA iterations (a fixed count: one compile, vmappable).
    """
    Qm = jnp.where(mask[:, None] & mask[None, :], Q, 0.0)
    bm = jnp.where(mask, b, 0.0)
    # Lipschitz constant of the gradient: the largest eigenvalue of Q/λ, bounded above by
    # the largest absolute row sum (Gershgorin), safe and cheap.
    L = jnp.max(jnp.sum(jnp.abs(Qm), axis=1)) / lam
    step = 1.0 / jnp.maximum(L, jnp.finfo(Q.dtype).tiny)

    def grad(a):
        return Qm @ a / lam - bm

    def f(a):
        return simplex_qp_objective(a, Qm, bm, lam)

    x0 = project_simplex(alpha0, mask)

    def body(_, c):
        x, y, t = c
        x_new = project_simplex(y - step * grad(y), mask)
        t_new = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
        # Adaptive restart (O'Donoghue & Candès) when the momentum points uphill.
        restart = jnp.vdot(grad(y), x_new - x) > 0
        t_new = jnp.where(restart, 1.0, t_new)
        y_new = jnp.where(restart, x_new, x_new + ((t - 1.0) / t_new) * (x_new - x))
        return x_new, y_new, t_new

    x, _, _ = jax.lax.fori_loop(0, iterations, body, (x0, x0, jnp.ones((), Q.dtype)))
    alpha = _polish(Qm, bm, lam, mask, x, f)
    # Exactly on the simplex: D(α) is a certified lower bound only there. (With λ huge
    # against ‖Q‖ the gradient steps are huge and the projection's rounding leaves it.)
    alpha = jnp.where(mask, jnp.maximum(alpha, 0.0), 0.0)
    total = jnp.sum(alpha)
    uniform = (mask / jnp.maximum(jnp.sum(mask), 1)).astype(alpha.dtype)
    return jnp.where(total > 0, alpha / jnp.where(total > 0, total, 1.0), uniform)


#: The polish solves its KKT system over at most this many slots: where the bundle is larger
#: and at most this many cuts are free, the free ones are gathered first (else into 5/4 as
#: many, and so on up to the capacity: `next_compact`). The system off the free set is the
#: identity, so the answer is the same, and an LU solve costs c³: a large bundle with few
#: free cuts solves a small system, not one of its full size (measured: docs/design.md,
#: "Measured design choices").
COMPACT_SLOTS = 128


def equality_qp(Qm, bm, lam, free, compact=None):
    """Minimize ½αᵀQα/λ − bᵀα subject to Σ_free α = 1, α = 0 off ``free`` (a KKT solve).

    Returns (α, m) with Q_FF α_F / λ + m 1 = b_F, so the gradient g = Qα/λ − b equals −m
    on the free set. Where the bundle has more than ``compact`` slots and at most that
    many are free, the system is solved over the free slots gathered together; else
    the same with 5/4 of ``compact`` (`COMPACT_SLOTS`, `next_compact`).
    """
    c = bm.shape[0]
    compact = COMPACT_SLOTS if compact is None else compact
    if c <= compact:
        return equality_qp_on_slots(Qm, bm, lam, free)

    def gathered():
        slots = jnp.nonzero(free, size=compact, fill_value=c)[0]
        used = slots < c  # the rest pad with slot 0, masked out by the solve (α = 0 there)
        slots = jnp.where(used, slots, 0)
        alpha, m = equality_qp_on_slots(Qm[slots[:, None], slots], bm[slots], lam, used)
        return jnp.zeros(c, alpha.dtype).at[slots].add(alpha), m

    return jax.lax.cond(jnp.sum(free) <= compact, gathered,
                        lambda: equality_qp(Qm, bm, lam, free, next_compact(compact)))


def next_compact(compact):
    """The next gather size: 5/4 of ``compact``, up to a multiple of 8. (Doubling would make
    the c³ solve up to 8 times dearer than it need be, for a free set just past a power of
    two; 5/4 at most about twice.)"""
    return -(-(5 * compact) // 32) * 8


def equality_qp_on_slots(Qm, bm, lam, free):
    """`equality_qp` as one KKT system over all the slots, ``free`` a boolean mask: what
    the gathered solves must equal (α = 0 off ``free``)."""
    c = bm.shape[0]
    K = jnp.where(free[:, None] & free[None, :], Qm / lam, 0.0)
    # Identity rows off the free set, and on it a ridge of relative size eps: Q is a Gram
    # matrix of rank at most the weights' dimension (and cuts repeat), so Q_FF is singular
    # once more cuts are free than that, and the KKT system with it. Unridged, the solve
    # returns garbage there: the polish is rejected (the stage-1 answer far off on
    # repeated cuts) or cycles to its pass cap.
    ridge = jnp.finfo(K.dtype).eps * jnp.maximum(jnp.max(jnp.abs(jnp.diag(K))), 1.0)
    K = K + jnp.diag(jnp.where(free, ridge, 1.0))
    ones = jnp.where(free, 1.0, 0.0)
    top = jnp.concatenate([K, ones[:, None]], axis=1)
    bottom = jnp.concatenate([ones, jnp.zeros(1, bm.dtype)])[None, :]
    rhs = jnp.concatenate([jnp.where(free, bm, 0.0), jnp.ones(1, bm.dtype)])
    sol = jnp.linalg.solve(jnp.concatenate([top, bottom], axis=0), rhs)
    return jnp.where(free, sol[:c], 0.0), sol[c]


def _polish(Qm, bm, lam, mask, x, f, max_iterations=None):
    """A primal active-set method started from the feasible x (Nocedal & Wright, Alg. 16.3).

    Each pass solves the equality-constrained QP on the free set; if that leaves the
    simplex, step to the first blocking bound and free it; else add the index whose
    multiplier g_i + m is most negative, or stop when none is (the KKT conditions hold).
    The result is used only if it is feasible and no worse than x.
    """
    c = x.shape[0]
    max_iterations = 2 * c if max_iterations is None else max_iterations
    tol = 64 * jnp.finfo(x.dtype).eps

    def cond(carry):
        return ~carry[2] & (carry[3] < max_iterations)

    def body(carry):
        alpha, free, _, it = carry
        target, m = equality_qp(Qm, bm, lam, free)
        feasible = jnp.all(target >= -tol)
        # Blocking step towards target: the largest τ ≤ 1 keeping α ≥ 0.
        shrinking = free & (target < alpha) & (target < 0)
        ratios = jnp.where(shrinking, alpha / jnp.where(shrinking, alpha - target, 1.0), 1.0)
        tau = jnp.where(feasible, 1.0, jnp.clip(jnp.min(ratios), 0.0, 1.0))
        alpha_new = jnp.where(free, alpha + tau * (target - alpha), 0.0)
        alpha_new = jnp.where(free & (alpha_new <= tol), 0.0, alpha_new)
        alpha_new = alpha_new / jnp.sum(alpha_new)
        # At a feasible EQP solution, check the multipliers of the fixed indices.
        g = Qm @ alpha_new / lam - bm
        mult = jnp.where(mask & ~free, g + m, jnp.inf)
        worst = jnp.argmin(mult)
        scale = jnp.maximum(1.0, jnp.max(jnp.abs(jnp.where(mask, g, 0.0))))
        optimal = feasible & (mult[worst] >= -tol * scale)
        free_new = jnp.where(feasible, free.at[worst].set(free[worst] | ~optimal),
                             free & (alpha_new > 0))
        return alpha_new, free_new, optimal, it + 1

    free0 = mask & (x > 0)
    alpha, _, _, _ = jax.lax.while_loop(
        cond, body, (x, free0, jnp.array(False), jnp.zeros((), jnp.int32)))
    good = (jnp.all(jnp.isfinite(alpha)) & jnp.all(alpha >= 0)
            & (f(alpha) <= f(x) + tol * jnp.maximum(1.0, jnp.abs(f(x)))))
    return jnp.where(good, alpha, x)
