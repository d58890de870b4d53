"""The Euclidean projection onto the local marginal polytope of a chain (Saha et al. 2009,
App. E.3.1; M³N's dual domain): `project_chain_marginals`, by semismooth Newton steps on
the dual, then a repair that makes the result exactly feasible.

References: see docs/references.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.projections._common import (
    _check_finite,
    _check_scalar,
    _dtype_of,
    _host,
    _nan_unless,
    _traced,
)

# ---------------------------------------------------------------------------------------
# Projection onto the local marginal polytope of a chain (Saha et al. 2009, App. E.3.1).
#
# Inside, a batch of B instances is laid out (E, K, K, B): E = L − 1 edges, K labels, the
# batch last, so that every operation is elementwise over the batch (XLA on CPUs
# vectorizes those; a vmap would put the batch first). Sums over the K labels are written
# out as K-term sums: XLA fuses them with their operands into one loop, where a reduce
# over a middle axis is a loop of its own (slower).
#
# The dual variables of an instance are y (E, K): y[t, 0] = λ_t (edge t sums to total),
# y[t, 1 + b] = μ_t(b) for b < K − 1 (nodes t + 1 of edges t and t + 1 agree at label b).
# μ_t(K − 1) is fixed at 0 and y[E − 1, 1:] stays 0 (no node after the last edge): the
# consistency at one label follows from the others and the two edge sums, and dropping it
# removes the gauge freedom (μ_t + c, λ_t − c, λ_{t+1} + c) the dual would otherwise have.
#
# The paper's (37) has α_t(i, j) = m_t(i, j) + d_t⁻²(λ_t + ξ_t(i, j) + μ_t(j) − μ_{t−1}(i)),
# the signs used here (with d_t = 1). Its dual (38) carries ½ Σ d_t² (…)², where
# ½ Σ d_t⁻² (…)² follows from (37) (the ξ formula after it has d_t⁻² right); the Lagrangian
# before (37) lacks the ½ of the primal; and in ∂D/∂μ_t(i) the edge-(t + 1) term
# d_{t+1}⁻² Σ_j (…) should be subtracted (μ_t enters edge t + 1 with a minus sign; the m
# terms there have the right signs). With ξ eliminated (ξ = [−m − λ_t − μ_t(j) +
# μ_{t−1}(i)]_+, (36)), D becomes f(y) = ½ Σ [m + Aᵀy]_+² − Σ_t λ_t (up to a constant),
# convex, piecewise quadratic, with gradient A α − b (α = [m + Aᵀy]_+; b: 1 for each edge
# sum, 0 for each consistency) and generalized Hessian A diag(α > 0) Aᵀ.
# ---------------------------------------------------------------------------------------


class _ChainInfo(NamedTuple):
    """How `project_chain_marginals` went, per instance (for tests and benchmarks)."""

    steps: jax.Array  # Newton steps taken
    residual: jax.Array  # max |A α − b| before the repair, in units of total
    converged: jax.Array  # residual ≤ the tolerance
    passes: jax.Array  # line-search passes over the whole batch (one number)


def _chain_shift(y):
    """Aᵀy: λ_t + μ_t(b) − μ_{t−1}(a) for every edge t and labels (a, b), y (E, K, B)."""
    mu = jnp.concatenate([y[:, 1:], jnp.zeros_like(y[:, :1])], 1)  # μ_t(K − 1) = 0
    mu_prev = jnp.concatenate([jnp.zeros_like(mu[:1]), mu[:-1]])  # μ_{−1} = 0
    return y[:, 0, None, None] + mu[:, None, :] - mu_prev[:, :, None]


def _chain_sums(a):
    """Row and column sums Σ_b a[t, a, b] and Σ_a a[t, a, b], each (E, K, B)."""
    K = a.shape[1]
    return sum(a[:, :, j] for j in range(K)), sum(a[:, i] for i in range(K))


def _chain_residual(rows, cols):
    """A α − b from α's row and column sums: per edge its sum − 1; per node t + 1 and
    label b < K − 1, edge t's column sum minus edge t + 1's row sum (as y is laid out)."""
    E, K = rows.shape[:2]
    edge = sum(rows[:, i] for i in range(K)) - 1
    node = jnp.concatenate([cols[:E - 1, :K - 1] - rows[1:, :K - 1],
                            jnp.zeros_like(rows[:1, :K - 1])])
    return jnp.concatenate([edge[:, None], node], 1)


def _gauss_jordan(a, n, tiny):
    """X = S⁻¹R for [S | R] = a (n, n + r, B), S positive definite (no pivoting needed),
    by rows: XLA fuses the row updates into a few loops (a 3-D update per pivot is
    slower)."""
    rows = [a[i] for i in range(n)]
    for j in range(n):
        pivot = rows[j] / jnp.maximum(rows[j][j], tiny)
        rows = [pivot if i == j else rows[i] - rows[i][j] * pivot for i in range(n)]
    return jnp.stack(rows)[:, n:]


def _chain_newton(z, g, eps, tiny):
    """v = (H + εI)⁻¹ g for the generalized Hessian H = A diag(z > 0) Aᵀ of the dual.

    H is block tridiagonal along the chain. λ_t meets only μ_{t−1} (through edge t's
    active row counts rc_t) and μ_t (its column counts cc_t), so the λ's go first (scalar
    pivots n_t + ε, n_t edge t's active entries); what is left is block tridiagonal in the
    μ's, blocks (K − 1) × (K − 1), solved by block elimination (Thomas) in a `lax.scan`
    over the nodes and back; then the λ's.
    """
    E, K = z.shape[:2]
    k = K - 1
    active = (z > 0).astype(z.dtype)
    rc, cc = _chain_sums(active)
    pivot = sum(rc[:, i] for i in range(K)) + eps  # (E, B)
    g_lam = g[:, 0]
    if E == 1 or K == 1:  # no μ
        return jnp.concatenate([(g_lam / pivot)[:, None], jnp.zeros_like(g[:, 1:])], 1)
    # Node t + 1 (t < E − 1) holds μ_t: + cc_t with λ_t, − rc_{t+1} with λ_{t+1}.
    c_in, r_out = cc[:E - 1, :k], rc[1:, :k]
    p_in, p_out = pivot[:E - 1, None], pivot[1:, None]
    eye = jnp.eye(k, dtype=z.dtype)[:, :, None]
    diag = (eye * (c_in + r_out + eps)[:, :, None]
            - c_in[:, :, None] * (c_in / p_in)[:, None]
            - r_out[:, :, None] * (r_out / p_out)[:, None])  # (E − 1, k, k, B)
    # Nodes t + 1 and t + 2 meet through edge t + 1: −active + rc ccᵀ / (n + ε).
    off = (-active[1:E - 1, :k, :k]
           + rc[1:E - 1, :k, None] * (cc[1:E - 1, :k] / pivot[1:E - 1, None])[:, None])
    rhs = g[:E - 1, 1:] - c_in * (g_lam[:E - 1, None] / p_in) + r_out * (g_lam[1:, None] / p_out)
    none = jnp.zeros_like(diag[:1])

    def forward(carry, blocks):
        gain, h = carry  # S⁻¹C and S⁻¹r of the node before
        d, c_before, c_after, r = blocks
        s = d - sum(c_before[j][:, None] * gain[j][None] for j in range(k))  # Schur compl.
        r = r - sum(c_before[j] * h[j] for j in range(k))
        x = _gauss_jordan(jnp.concatenate([s, c_after, r[:, None]], 1), k, tiny)
        return (x[:, :k], x[:, k]), (x[:, :k], x[:, k])

    _, (gains, hs) = jax.lax.scan(
        forward, (jnp.zeros_like(diag[0]), jnp.zeros_like(rhs[0])),
        (diag, jnp.concatenate([none, off]), jnp.concatenate([off, none]), rhs))

    def backward(v_after, gh):
        gain, h = gh
        v = h - sum(gain[:, j] * v_after[j] for j in range(k))
        return v, v

    _, v_mu = jax.lax.scan(backward, jnp.zeros_like(rhs[0]), (gains, hs), reverse=True)
    v_mu = jnp.concatenate([v_mu, jnp.zeros_like(v_mu[:1])])  # (E, k, B)
    mu = jnp.concatenate([v_mu, jnp.zeros_like(v_mu[:, :1])], 1)
    mu_prev = jnp.concatenate([jnp.zeros_like(mu[:1]), mu[:-1]])
    v_lam = (g_lam - sum(cc[:, i] * mu[:, i] for i in range(K))
             + sum(rc[:, i] * mu_prev[:, i] for i in range(K))) / pivot
    return jnp.concatenate([v_lam[:, None], v_mu], 1)


class _ChainSearch(NamedTuple):
    """The line search along d, per instance: φ(t) = f(y + t d) is convex and piecewise
    quadratic, φ′ nondecreasing and piecewise linear."""

    t: jax.Array  # the next step to try
    lo: jax.Array  # the longest step tried with Armijo's decrease and φ′ < 0 (0 at first)
    hi: jax.Array  # the shortest step tried that was too long (inf at first)
    dphi_lo: jax.Array  # φ′(lo)
    dphi_hi: jax.Array  # φ′(hi)
    g_lo: jax.Array  # the dual gradient at y + lo d
    step: jax.Array  # the accepted step (0: none yet)
    g: jax.Array  # the dual gradient there
    done: jax.Array
    passes: jax.Array


class _ChainState(NamedTuple):
    y: jax.Array  # (E, K, B) the dual variables
    g: jax.Array  # (E, K, B) the gradient there, A α − b
    residual: jax.Array  # (B,) max |g|
    crawl: jax.Array  # (B,) steps in a row that did not halve it, within 10 tol
    active: jax.Array  # (B,) still iterating
    steps: jax.Array  # (B,) Newton steps taken
    k: jax.Array  # iterations of the batch
    passes: jax.Array  # line-search passes of the batch


# Armijo's and the (strong Wolfe) curvature constants, the line search's passes at most,
# the Levenberg–Marquardt factor, and the crawling steps allowed near the end.
_ARMIJO, _CURVATURE, _SEARCH_PASSES, _LM, _CRAWL = 1e-4, 0.5, 16, 0.3, 5


def _chain_search(x, y, d, gd, s: _ChainSearch) -> _ChainSearch:
    """One pass of the line search: accept t if it meets the strong Wolfe conditions,
    else choose the next t.

    φ(t) − φ(0) is summed from per-entry pieces, each exact to rounding (½(tw)² where an
    entry stays active, w = Aᵀd, and so on), not taken as a difference of two values of f:
    near the optimum the decrease is far below the rounding of f. φ′(t) = ⟨d, g(y + t d)⟩.
    The next t: Newton's step on φ′ (φ″ = Σ w² over the active entries) when it stays
    inside the bracket [lo, hi]; else, before any step was too long, the secant's root
    through φ′(0) and φ′(t) (kept in [1.5t, 10t]); else regula falsi in the bracket, or
    its middle if that lands within 1% of an end.
    """
    t = s.t
    z = x + _chain_shift(y)  # recomputed from x: cheaper than reading a stored z
    w = _chain_shift(d)
    zt = z + t * w
    tw = t * w
    change = jnp.where(z > 0, 0.5 * tw * tw - 0.5 * jnp.minimum(zt, 0) ** 2,
                       0.5 * jnp.maximum(zt, 0) ** 2)
    curvature = jnp.where(zt > 0, w * w, 0)
    K = x.shape[1]
    decrease = t * gd + jnp.sum(sum(change[:, :, j] for j in range(K)), (0, 1))
    ddphi = jnp.sum(sum(curvature[:, :, j] for j in range(K)), (0, 1))
    g = _chain_residual(*_chain_sums(jnp.maximum(zt, 0)))
    dphi = jnp.sum(d * g, (0, 1))
    armijo = decrease <= _ARMIJO * t * gd
    ok = armijo & (jnp.abs(dphi) <= -_CURVATURE * gd)
    long = ~armijo | (dphi > 0)
    lo, dphi_lo = jnp.where(long, s.lo, t), jnp.where(long, s.dphi_lo, dphi)
    hi, dphi_hi = jnp.where(long, t, s.hi), jnp.where(long, dphi, s.dphi_hi)
    g_lo = jnp.where(long, s.g_lo, g)
    tiny = jnp.finfo(t.dtype).tiny
    grow = jnp.clip(t * gd / jnp.minimum(gd - dphi, -tiny), 1.5 * t, 10 * t)
    width = hi - lo
    falsi = lo - dphi_lo * width / (dphi_hi - dphi_lo)
    inside = (dphi_hi > 0) & (falsi > lo + 0.01 * width) & (falsi < hi - 0.01 * width)
    nxt = jnp.where(jnp.isfinite(hi), jnp.where(inside, falsi, lo + 0.5 * width), grow)
    newton = t - dphi / jnp.where(ddphi > 0, ddphi, 1)
    nxt = jnp.where((ddphi > 0) & (newton > lo) & (newton < hi), newton, nxt)
    accept = ok & ~s.done
    return _ChainSearch(
        t=jnp.where(s.done | ok, t, nxt), lo=lo, hi=hi, dphi_lo=dphi_lo, dphi_hi=dphi_hi,
        g_lo=g_lo, step=jnp.where(accept, t, s.step), g=jnp.where(accept, g, s.g),
        done=s.done | ok, passes=s.passes + 1)


def _chain_solve(x, max_steps, tol):
    """The dual's semismooth Newton iteration for x (E, K, K, B), each edge's max 0, total
    1; returns α = [x + Aᵀy]_+ (not yet repaired) and `_ChainInfo`."""
    E, K, _, B = x.shape
    dtype = x.dtype
    eps = jnp.finfo(dtype).eps
    tiny = eps ** 0.75
    spread = -jnp.min(x, (0, 1, 2))  # (B,): the largest max − min of an edge
    # Below this the residual is rounding (of sums of K² terms up to the spread in size).
    tol = jnp.maximum(tol, 2 * K * eps * (1 + spread))
    # Start: λ_t with Σ_ab (x_t + λ_t) = 1, μ = 0.
    y0 = jnp.concatenate([((1 - jnp.sum(x, (1, 2))) / (K * K))[:, None],
                          jnp.zeros((E, K - 1, B), dtype)], 1)
    g0 = _chain_residual(*_chain_sums(jnp.maximum(x + _chain_shift(y0), 0)))
    r0 = jnp.max(jnp.abs(g0), (0, 1))

    def step(s: _ChainState) -> _ChainState:
        z = x + _chain_shift(s.y)
        # Levenberg–Marquardt: H is singular wherever the active entries leave a dual
        # direction free (a degenerate, vertex-like α does). ε shrinks with the gradient
        # (fast local convergence) and with the spread of x (the dual moves that far).
        norm = jnp.sqrt(jnp.sum(s.g * s.g, (0, 1)))
        lm = _LM * jnp.minimum(norm, 1) / (1 + spread) + tiny
        d = -_chain_newton(z, s.g, lm, tiny)
        gd = jnp.sum(s.g * d, (0, 1))
        zero = jnp.zeros((B,), dtype)
        search = _ChainSearch(t=zero + 1, lo=zero, hi=zero + jnp.inf, dphi_lo=gd,
                              dphi_hi=zero + jnp.inf, g_lo=s.g, step=zero, g=s.g,
                              done=~s.active, passes=jnp.zeros((), jnp.int32))
        search = jax.lax.while_loop(
            lambda c: jnp.any(~c.done) & (c.passes < _SEARCH_PASSES),
            lambda c: _chain_search(x, s.y, d, gd, c), search)
        # Out of passes: the longest step with Armijo's decrease, if there was one.
        fallback = ~search.done & (search.lo > 0)
        t = jnp.where(fallback, search.lo, search.step)
        moved = s.active & (t > 0)
        y = jnp.where(moved, s.y + t * d, s.y)
        g = jnp.where(moved, jnp.where(fallback, search.g_lo, search.g), s.g)
        residual = jnp.max(jnp.abs(g), (0, 1))
        # Within 10 tol, steps that do not halve the residual, _CRAWL of them in a row, are
        # a crawl along a degenerate face (a few in a thousand instances at large
        # spreads): stop there.
        crawl = (residual > 0.5 * s.residual) & (residual <= 10 * tol)
        crawl = jnp.where(crawl, s.crawl + 1, 0)
        return _ChainState(y=y, g=g, residual=residual, crawl=crawl,
                           active=moved & (residual > tol) & (crawl < _CRAWL),
                           steps=s.steps + s.active, k=s.k + 1,
                           passes=s.passes + search.passes)

    state = _ChainState(y=y0, g=g0, residual=r0, crawl=jnp.zeros((B,), jnp.int32),
                        active=r0 > tol,
                        steps=jnp.zeros((B,), jnp.int32), k=jnp.zeros((), jnp.int32),
                        passes=jnp.zeros((), jnp.int32))
    state = jax.lax.while_loop(lambda s: jnp.any(s.active) & (s.k < max_steps), step, state)
    alpha = jnp.maximum(x + _chain_shift(state.y), 0)
    return alpha, _ChainInfo(steps=state.steps, residual=state.residual,
                             converged=state.residual <= tol, passes=state.passes)


def _chain_repair(alpha):
    """The pairwise marginals of the Markov chain that α (E, K, K, B) defines: p_1(a) ∝
    Σ_b α_1(a, b), P_t(a, b) = α_t(a, b) / Σ_c α_t(a, c) (uniform where that is 0),
    p_{t+1} = p_t P_t; returns p_t(a) P_t(a, b). Nonnegative, each edge sums to 1 and
    neighbours agree, to rounding, whatever α was."""
    K = alpha.shape[1]
    rows, _ = _chain_sums(alpha)
    trans = jnp.where(rows[:, :, None] > 0,
                      alpha / jnp.where(rows > 0, rows, 1)[:, :, None], 1 / K)
    first = sum(rows[0, i] for i in range(K))
    p = jnp.where(first > 0, rows[0] / jnp.where(first > 0, first, 1), 1 / K)

    def edge(p, trans_t):
        joint = p[:, None] * trans_t
        return sum(joint[i] for i in range(K)), joint

    return jax.lax.scan(edge, p, trans)[1]


def _chain_marginals(m, total=1.0, *, max_steps: int = 50, tol=None):
    """`project_chain_marginals`, and how it went (`_ChainInfo`, shaped like the batch)."""
    m = jnp.asarray(m)
    dtype = jnp.result_type(m.dtype, float)
    *batch, E, K, _ = m.shape
    B = math.prod(batch)
    if tol is None:
        tol = max(1e-10, 8 * float(jnp.finfo(dtype).eps))
    total = jnp.asarray(total, dtype)
    x = jnp.moveaxis(m.astype(dtype).reshape(B, E, K, K), 0, -1)
    # NaN or ±inf in an instance, or a total that is not finite and > 0: NaN out (and
    # zeros in, so that the loop does not wait for it).
    bad = jnp.any(~jnp.isfinite(x), (0, 1, 2)) | ~jnp.isfinite(total) | ~(total > 0)
    x = jnp.where(bad, 0, x)
    # Adding a constant to an edge's m leaves the projection as it is (the edge's sum is
    # fixed), and m / total projects to α / total: so each edge's max is 0, total 1. In
    # halves, doubled after the division (exact): m − max overflows where m spans ±max.
    x = (0.5 * x - 0.5 * jnp.max(x, (1, 2), keepdims=True)) / total * 2
    # An entry further below its edge's max than max/(64 K²) (in units of total; −inf
    # where that overflowed) is taken as that far: the solver's sums of K² entries stay
    # finite.
    x = jnp.maximum(x, -jnp.finfo(dtype).max / (64 * K * K))
    alpha, info = _chain_solve(x, max_steps, jnp.asarray(tol, dtype))
    alpha = total * _chain_repair(alpha) * _nan_unless(~bad, dtype)
    info = info._replace(**{f: getattr(info, f).reshape(batch)
                            for f in ("steps", "residual", "converged")})
    return jnp.moveaxis(alpha, -1, 0).reshape(m.shape), info


# One compilation per shape, dtype, max_steps and tol, also when called outside jit.
_chain_marginals_jit = jax.jit(_chain_marginals, static_argnames=("max_steps", "tol"))


def project_chain_marginals(m: jax.Array, total=1.0, *, max_steps: int = 50,
                            tol: float | None = None) -> jax.Array:
    """Euclidean projection onto the local marginal polytope of a chain (Saha et al. 2009,
    App. E.3.1): for y_1 − y_2 − … − y_L with labels in [K], the pairwise marginals

        argmin_α ½ Σ_t Σ_ab (α_t(a, b) − m_t(a, b))²
        s.t. α ≥ 0,  Σ_ab α_t(a, b) = total (t = 1 … L − 1),
             Σ_a α_t(a, b) = Σ_c α_{t+1}(b, c) (t = 1 … L − 2, every b),

    the primal before eq. (37) with d_t = 1 and mass ``total`` (Pragam projects onto
    1/n of it). On a chain (a tree) these are exactly the marginals of joint distributions.
    One edge (L = 2) is the simplex projection, scaled by ``total``.

    Method. The dual of eqs. (37)–(38) with ξ eliminated by (36),
    f(λ, μ) = ½ Σ [m + λ_t + μ_t(b) − μ_{t−1}(a)]_+² − total Σ_t λ_t, is convex and
    piecewise quadratic, with α = [m + λ_t + μ_t(b) − μ_{t−1}(a)]_+ at its minimum. It is
    minimized by a semismooth Newton method: each step solves with the generalized Hessian,
    block tridiagonal along the chain (λ's eliminated first, then block Thomas over the
    nodes in a `lax.scan`), regularized Levenberg–Marquardt style (degenerate, vertex-like
    α leave it singular), with a strong-Wolfe line search whose decrease is summed exactly
    from per-entry pieces. It stops when every constraint residual of α is ≤ ``tol`` ·
    total. Steps seen (batches of 500 random instances, L − 1 = 9, K = 5): 4–5 on
    average and at most 5–7 for m a feasible point plus noise of 3–10% of its size (as in
    Pragam); 7–9 on average, at most 12–25, for Gaussian m with a spread of 1 to 100 times
    total; at most ~45 for 1000 times. Then α is repaired to be exactly
    feasible: the Markov chain p_1(a) ∝ Σ_b α_1(a, b), P_t(a, b) = α_t(a, b) / Σ_c α_t(a, c)
    (a uniform row where that is 0) has pairwise marginals total · p_t(a) P_t(a, b),
    p_{t+1} = p_t P_t, which are ≥ 0 and meet every equality to rounding; they differ
    from α by about the residual.

    Departure: Algorithm 3 of the paper is block coordinate descent (conjugate gradients in
    (λ, μ) with ξ fixed, then ξ by (36)), whose convergence is linear at best and slow to
    the ~1e-10 accuracy wanted here, and whose result is feasible only in the limit; the
    Newton method on the same dual (ξ eliminated) gets there in a few steps of
    O((L − 1) K³) each, and the repair makes the result feasible. The paper's typos (the
    d_t² of (38) for d_t⁻², the sign of the d_{t+1}⁻² term of ∂D/∂μ_t, a missing ½) are
    noted in the code.

    A batch is solved in one loop: instances that have converged wait for the slowest.

    Args:
        m: (..., L − 1, K, K), m[..., t, a, b] for edge t and labels (a, b); any leading
            batch dimensions. Floating dtypes are kept (integers become the default
            float).
        total: the mass of every edge, finite and > 0; a scalar (traced is fine).
        max_steps: the most Newton steps. An instance that has not converged by then
            (or that crawls, five steps in a row within 10 ``tol`` without halving its
            residual) is still repaired to be exactly feasible, only not optimal to
            ``tol``.
        tol: the residual at which to stop, in units of total (a Python float, or None
            for max(1e-10, 8 eps)). Never below the rounding of the sums: 2 K eps times
            1 + the spread of m / total.

    Returns:
        α, shaped and typed like m (integer m: the default float). Each edge sums to total
        and neighbours agree, to rounding, for any finite m: the result is always feasible.

    Raises:
        TypeError: complex or non-numeric m or total; max_steps not an int >= 0; tol not a
            positive float.
        ValueError: m not shaped (..., L − 1, K, K) or empty, total not a scalar; and, for
            concrete values, m not finite or total not finite and > 0. Under jit or vmap an
            instance with NaN or ±inf (or a bad total) gives NaN.

    Range: m of any size. The problem is solved in units of total relative to each edge's
    largest entry (exact shifts and scalings, no overflow); an entry more than
    finfo.max/(64 K²) below its edge's largest (in units of total) is taken as that far
    below.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_chain_marginals
        >>> m = jnp.array([[[0.6, 0.1], [0.0, 0.3]], [[0.2, 0.5], [0.0, 0.1]]])  # L = 3, K = 2
        >>> alpha = project_chain_marginals(m)
        >>> (100 * alpha).round(9).tolist()
        [[[65.0, 5.0], [5.0, 25.0]], [[20.0, 50.0], [10.0, 20.0]]]
        >>> alpha.sum(axis=(1, 2)).round(12).tolist()  # each edge sums to total
        [1.0, 1.0]
        >>> float(jnp.abs(alpha[0].sum(axis=0) - alpha[1].sum(axis=1)).max()) < 1e-15  # node 2
        True
    """
    fn = "project_chain_marginals"
    _dtype_of(fn, "m", m)
    _dtype_of(fn, "total", total)
    m = jnp.asarray(m)
    if m.ndim < 3 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"{fn}: m must have shape (..., L - 1, K, K) with L ≥ 2 and K ≥ 1 "
                         f"(the pairwise marginals of each edge of the chain); got {m.shape}")
    if m.size == 0:
        raise ValueError(f"{fn}: m is empty (shape {m.shape}): every dimension must be >= 1 "
                         "(at least one instance, one edge and one label).")
    _check_scalar(fn, "total", np.shape(total))
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 0:
        raise TypeError(f"{fn}: max_steps must be an int >= 0; got {max_steps!r}.")
    if tol is not None and not (isinstance(tol, (int, float)) and tol > 0):
        raise TypeError(f"{fn}: tol must be a Python float > 0, or None; got {tol!r}.")
    if not _traced(total):
        t = float(_host(total))
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"{fn}: total must be finite and positive (the mass of each edge); "
                             f"got {t!r}.")
    if not _traced(m):
        _check_finite(fn, "m", m)
    return _chain_marginals_jit(m, total, max_steps=max_steps, tol=tol)[0]
