"""The F1-score loss of Joachims' multivariate SVM (Zhang et al. 2010, Example 3, eq. 43), its exact
maximization over labelings, and its entropy smoothing by dynamic programming (Sec. 5.4,
Algorithms 5–6).

For binary labels y ∈ {−1, +1}ⁿ and a labeling y′, the contingency table counts the false
negatives b = #{yᵢ = 1, y′ᵢ = −1}, the false positives c = #{yᵢ = −1, y′ᵢ = 1} and the true
positives a = n₊ − b. The risk is the structured hinge over all 2ⁿ labelings,

    R(S) = max_{y′} θ(y′),   θ(y′) = Δ(b, c) + (1/n) Σᵢ Sᵢ (y′ᵢ − yᵢ),
    Δ(b, c) = 1 − 2a/(2a + b + c) = (b + c)/(2a + b + c)   (0 where 2a + b + c = 0),

convex in S (a max of affine functions), ≥ 0 (y′ = y gives θ = 0). The paper writes
Δ = 2a/(2a + b + c), the F1 *score*; as a loss that would make y′ = y the maximizer for every
S, so Δ here is 1 − F1 (paper typo fixed).

References: see docs/references.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.losses.base import Loss, active_tol
from nsjax.losses.labels import BinaryLabels


def _delta(b, c, npos):
    """Δ(b, c) = 1 − F1 = (b + c)/(2a + b + c), a = n₊ − b; 0 where the denominator is 0
    (no positives and no false positives). b, c float arrays, npos a float scalar."""
    # Paper typo fixed: eq. 43 needs the loss 1 − F1, not the score 2a/(2a + b + c).
    den = 2.0 * npos - b + c
    return jnp.where(den > 0, (b + c) / jnp.where(den > 0, den, 1.0), 0.0)


def _delta_step(b, c, npos):
    """Δ(b, c + 1) − Δ(b, c) = 2a/(den (den + 1)), computed without cancellation (1 where
    den = 0: Δ(0, 0) = 0, Δ(0, 1) = 1 when n₊ = 0)."""
    den = 2.0 * npos - b + c
    safe = jnp.where(den > 0, den, 1.0)
    return jnp.where(den > 0, 2.0 * (npos - b) / (safe * (safe + 1.0)), 1.0)


def _first_true(pred, lo, hi, iters):
    """Elementwise the least x in [lo, hi) with pred(x), or hi where there is none, for a
    predicate that is monotone (false, then true) on [lo, hi): bisection, ``iters`` steps
    (≥ log2 of the widest range + 1)."""

    def body(_, bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        go_left = pred(mid)
        open_ = lo < hi
        return (jnp.where(open_ & ~go_left, mid + 1, lo), jnp.where(open_ & go_left, mid, hi))

    return jax.lax.fori_loop(0, iters, body, (lo, hi))[0]


def _range_max_table(x):
    """A sparse table for range maxima of x (length m): level k holds max x[i : i + 2ᵏ]."""
    m = x.shape[0]
    levels = [x]
    step = 1
    while 2 * step <= m:
        prev = levels[-1]
        levels.append(jnp.maximum(prev, jnp.concatenate([prev[step:],
                                                         jnp.full(step, -jnp.inf, x.dtype)])))
        step *= 2
    return jnp.stack(levels)


def _range_max(table, lo, hi):
    """max x[lo..hi] (inclusive, lo ≤ hi) from `_range_max_table`, elementwise."""
    m = table.shape[1]
    log2 = jnp.asarray(np.frexp(np.arange(1, m + 1))[1] - 1, jnp.int32)  # ⌊log2 length⌋
    k = log2[jnp.clip(hi - lo, 0, m - 1)]
    return jnp.maximum(table[k, lo], table[k, jnp.maximum(hi - (1 << k) + 1, lo)])


def _packed_flip_dp(omega, code):
    """Algorithm 5 (eq. 63) in log space for both classes at once.

    ``omega``: log weight of flipping each example (−2Sᵢ/(nμ) for a positive, +2Sᵢ/(nμ) for a
    negative); ``code``: +1 positive, −1 negative. Returns v of length n + 2 with
    v[b] = log V₊(b) for b = 0..n₊ (log of the sum over the ways to flip b positives of the
    product of their weights: the elementary symmetric polynomial, in log space) and
    v[n + 1 − c] = log V₋(c) for c = 0..n₋. The two tables share one vector (positives grow
    up from index 0, negatives down from n + 1; they never meet since n₊ + n₋ = n), so one
    `jax.lax.scan` over all n examples, each step masked by its label, does both with static
    shapes: O(n²) time in logaddexp steps.

    Reverse-mode differentiation of this scan is Algorithm 6 (the backward recursion ξ). It
    would keep every state (n² floats); instead the scan runs in ⌈√n⌉ blocks under
    `jax.checkpoint`, so it keeps one state per block and recomputes a block's states during
    its backward pass: O(n^1.5) memory (about 120 MB at n = 20,000 in float64) for one
    more forward pass of time.
    """
    n = omega.shape[0]
    dtype = omega.dtype
    block = max(1, math.isqrt(n - 1) + 1) if n > 1 else 1
    blocks = -(-n // block)
    pad = blocks * block - n
    omega = jnp.concatenate([omega, jnp.zeros(pad, dtype)]).reshape(blocks, block)
    code = jnp.concatenate([code, jnp.zeros(pad, code.dtype)]).reshape(blocks, block)
    idx = jnp.arange(n + 2)
    # "log 0" is a finite floor, not −inf: the derivative of logaddexp at (−inf, −inf) is
    # NaN, and masked steps would carry it into the gradient (0·NaN). The floor drifts by at
    # most Σ|ωᵢ| + n log 2 over the scan, nothing beside a quarter of the largest float.
    floor = -0.25 * jnp.finfo(dtype).max
    ninf = jnp.full(1, floor, dtype)

    def step(carry, x):
        v, kp, kn = carry
        c, w = x
        up = jnp.concatenate([ninf, v[:-1]])  # a positive: count b − 1 → b
        down = jnp.concatenate([v[1:], ninf])  # a negative: count c − 1 → c (index falls)
        shifted = jnp.where(c > 0, up, down) + w
        mask = jnp.where(c > 0, idx <= kp + 1, (c < 0) & (idx >= n - kn))
        # logaddexp as max + log1p(exp(min − max)): JAX splits the derivative of max and
        # min evenly at a tie (equal scores make exact ties), where that of |a − b| is one-sided
        top, low = jnp.maximum(v, shifted), jnp.minimum(v, shifted)
        v = jnp.where(mask, top + jnp.log1p(jnp.exp(low - top)), v)
        return (v, kp + (c > 0), kn + (c < 0)), None

    @jax.checkpoint
    def run_block(carry, xs):
        return jax.lax.scan(step, carry, xs)[0]

    v0 = jnp.full(n + 2, floor, dtype).at[0].set(0.0).at[n + 1].set(0.0)
    zero = jnp.zeros((), jnp.int32)
    (v, _, _), _ = jax.lax.scan(lambda carry, xs: (run_block(carry, xs), None),
                                (v0, zero, zero), (code, omega))
    return v


def _grid_rows(v, npos, scale):
    """The (b, c) grid of log Z one row at a time, rows over the smaller class (so the rows
    that exist are min(n₊, n₋) + 1 of length n + 2). Returns (number of rows, whether rows
    are b (the positives), row(r)) with
    row(r) = (terms, Δ, valid): terms = scale·Δ(b, c) + log V₊(b) + log V₋(c) along the row
    (−inf off the grid)."""
    n = v.shape[0] - 2
    dtype = v.dtype
    nneg = n - npos
    rows_pos = npos <= nneg
    vrev = v[::-1]  # vrev[c] = log V₋(c)
    rowv = jnp.where(rows_pos, v, vrev)
    colv = jnp.where(rows_pos, vrev, v)
    ncols = jnp.where(rows_pos, nneg, npos)
    j = jnp.arange(n + 2)
    jf = j.astype(dtype)
    npos_f = npos.astype(dtype)

    def row(r):
        rf = r.astype(dtype)
        b = jnp.where(rows_pos, rf, jf)
        c = jnp.where(rows_pos, jf, rf)
        delta = _delta(b, c, npos_f)
        valid = j <= ncols
        terms = jnp.where(valid, scale * delta + rowv[r] + colv, -jnp.inf)
        return terms, delta, valid

    return jnp.minimum(npos, nneg) + 1, rows_pos, row


@jax.custom_vjp
def _log_sum_grid(v, npos, scale):
    """log Σ_{b ≤ n₊, c ≤ n₋} exp(scale·Δ(b, c) + log V₊(b) + log V₋(c)) from the packed
    table v of `_packed_flip_dp`: (min(n₊, n₋) + 1)(n + 2) exponentials, O(n) memory."""
    rows, _, row = _grid_rows(v, npos, scale)

    def body(r, acc):
        return jnp.logaddexp(acc, jax.nn.logsumexp(row(r)[0]))

    return jax.lax.fori_loop(0, rows, body, jnp.full((), -jnp.inf, v.dtype))


def _log_sum_grid_fwd(v, npos, scale):
    out = _log_sum_grid(v, npos, scale)
    return out, (v, npos, scale, out)


def _log_sum_grid_bwd(res, g):
    """The grid's probabilities P(b, c) = exp(term − log Z) summed over rows (∂/∂log V₊(b)),
    over columns (∂/∂log V₋(c)) and against Δ (∂/∂scale): a second pass over the rows."""
    v, npos, scale, log_z = res
    rows, rows_pos, row = _grid_rows(v, npos, scale)
    m = v.shape[0]

    def body(r, acc):
        row_sum, col_sum, d_scale = acc
        terms, delta, valid = row(r)
        p = jnp.where(valid, jnp.exp(terms - log_z), 0.0)
        return row_sum.at[r].set(jnp.sum(p)), col_sum + p, d_scale + jnp.sum(p * delta)

    zeros = jnp.zeros(m, v.dtype)
    row_sum, col_sum, d_scale = jax.lax.fori_loop(
        0, rows, body, (zeros, zeros, jnp.zeros((), v.dtype)))
    dv = jnp.where(rows_pos, row_sum + col_sum[::-1], row_sum[::-1] + col_sum)
    return g * dv, None, (g * d_scale).astype(jnp.result_type(scale))


_log_sum_grid.defvjp(_log_sum_grid_fwd, _log_sum_grid_bwd)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class F1Loss(BinaryLabels, Loss):
    """Joachims' F1 loss, R(S) = max_{y′ ∈ {−1,1}ⁿ} [Δ(y′, y) + (1/n) Σᵢ Sᵢ (y′ᵢ − yᵢ)]
    (Zhang et al. 2010, eq. 43, with Δ = 1 − F1: see the module docstring), labels y ∈ {−1, +1}
    (mapped by `Problem`).

    **The maximizing labeling** (Joachims' algorithm): for fixed (b, c) the best y′ flips the
    b positives of smallest score and the c negatives of largest score, so
    θ(b, c) = Δ(b, c) + (2/n)(N(c) − P(b)) with P, N prefix sums of the sorted scores. For
    fixed b, θ(b, ·) is concave in c (Δ(b, ·) = 1 − 2a/(2n₊ − b + c) is concave, N has
    falling increments), so its maximizer is found by bisection on the sign of its
    increment: O(n log n) time and O(n) memory for all n + 1 values of b at once, instead
    of the (n₊ + 1)(n₋ + 1) grid. ``argsup`` also finds, per b, the interval of c within
    `active_tol` of the maximum (bisection again) and the largest directional term on it
    (a sparse range-maximum table, O(n log n)).

    **The smoothing** over the 2ⁿ labelings with the entropy (``smoothed``):
    g*_μ(S) = μ log Σ_{y′} exp(θ(y′)/μ) − μ n log 2, so g*_μ ≤ R ≤ g*_μ + μ n log 2 (D = n log 2,
    μ = ε/D), with ∂g*_μ/∂Sᵢ = −2 yᵢ p(y′ᵢ = −yᵢ)/n under the Gibbs distribution α ∝ exp(θ/μ).
    log Z is the forward programme (Algorithm 5, eq. 63), in log space, for both classes in
    one masked `jax.lax.scan` (`_packed_flip_dp`), then the (b, c) grid weighted by Δ/μ, row
    by row over the smaller class ((min(n₊, n₋) + 1)(n + 2) exponentials, O(n) memory); the
    gradient is reverse-mode autodiff of that scan (which is the backward programme,
    Algorithm 6) and a hand-written pass for the grid. Time O(n²): n(n + 2) log-space
    additions (the gradient adds a forward pass and the backward one); memory O(n) for the
    value, O(n^1.5) for the gradient (block checkpointing: about 120 MB at n = 20,000 in
    float64).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from nsjax.losses import F1Loss
        >>> loss = F1Loss()
        >>> S = jnp.array([2.0, -0.5, 1.0, -2.0]); y = jnp.array([1.0, 1.0, -1.0, -1.0])
        >>> float(loss.risk(S, y))  # flip the positive at -0.5 and the negative at 1: 0.5 + 0.75
        1.25
        >>> (loss.dscores(S, y) * 4).tolist()  # n u = y' - y
        [0.0, -2.0, 2.0, 0.0]
        >>> value, grad = jax.jit(loss.smoothed)(S, 1e-3, y)  # one program, not op by op
        >>> bool(value <= loss.risk(S, y) <= value + 1e-3 * loss.smoothing_diameter(4))
        True
        >>> float(jax.jit(loss.expected_delta)(S, 1e-3, y))
        0.5
    """

    # ---- the exact maximization -----------------------------------------------------

    def _sorted(self, S, dS, y):
        """Per class, the examples in flipping order: positives by (score, dS) ascending,
        negatives by (score, dS) descending, each class first in its order. Returns the
        orders, the prefix sums P, N (length n + 1) of the scores and Pd, Nd of dS, the
        sorted negative scores and n₊ (int)."""
        pos = y > 0
        order_pos = jnp.lexsort((dS, S, ~pos))
        order_neg = jnp.lexsort((-dS, -S, pos))
        zero = jnp.zeros(1, S.dtype)

        def prefix(x):
            return jnp.concatenate([zero, jnp.cumsum(x)])

        s_neg = S[order_neg]
        return (order_pos, order_neg, prefix(S[order_pos]), prefix(s_neg),
                prefix(dS[order_pos]), prefix(dS[order_neg]), s_neg,
                jnp.sum(pos, dtype=jnp.int32))

    def _best_per_b(self, S, y, dS):
        """For every b = 0..n: the best c (bisection on the concave θ(b, ·)) and a function
        θ(b, c); plus what `_sorted` gives."""
        n = S.shape[0]
        dtype = S.dtype
        sorted_ = self._sorted(S, dS, y)
        _, _, P, N, _, _, s_neg, npos = sorted_
        nneg = n - npos
        npos_f = npos.astype(dtype)
        b = jnp.arange(n + 1)
        bf = b.astype(dtype)

        def theta(b, c):
            return (_delta(b.astype(dtype), c.astype(dtype), npos_f)
                    + (2.0 / n) * (N[c] - P[b]))

        def falls(c):  # θ(b, c + 1) < θ(b, c), from the increment itself (no cancellation)
            inc = _delta_step(bf, c.astype(dtype), npos_f) + (2.0 / n) * s_neg[
                jnp.clip(c, 0, n - 1)]
            return inc < 0

        iters = int(n + 1).bit_length() + 1
        c_best = _first_true(falls, jnp.zeros_like(b), jnp.full_like(b, nneg), iters)
        value = jnp.where(b <= npos, theta(b, c_best), -jnp.inf)
        return b, c_best, value, theta, iters, sorted_

    def risk(self, S, y):
        """R(S) = max over the n + 1 values of b of θ(b, c*(b)) (O(n log n))."""
        S, y = jnp.asarray(S), jnp.asarray(y)
        return jnp.max(self._best_per_b(S, y, jnp.zeros_like(S))[2])

    def dscores(self, S, y):
        """u = (y′* − y)/n for a maximizing labeling y′* (a vertex of ∂R(S))."""
        S = jnp.asarray(S)
        return self.argsup(S, jnp.zeros_like(S), y)

    def argsup(self, S, dS, y):
        """The vertex u = (y′ − y)/n of ∂R(S) steepest along dS, among the labelings y′
        within `active_tol` of the maximum that flip a prefix of each class's order
        (positives by score then dS ascending, negatives by score then dS descending): for
        each (b, c) that prefix is the best labeling along dS among those of equal value, so
        exact score ties are resolved along dS; scores that differ by less than the
        tolerance are not treated as tied. Ties along dS go to the larger θ (so dS = 0 gives
        an exact maximizer). O(n log n)."""
        S, dS, y = jnp.asarray(S), jnp.asarray(dS, jnp.asarray(S).dtype), jnp.asarray(y)
        n = S.shape[0]
        b, c_best, value, theta, iters, sorted_ = self._best_per_b(S, y, dS)
        order_pos, order_neg, _, _, Pd, Nd, _, npos = sorted_
        nneg = n - npos
        top = jnp.max(value)
        floor = top - active_tol(top)
        near = value >= floor
        # θ(b, ·) is concave: {c : θ(b, c) ≥ floor} is an interval around c*(b).
        lo = _first_true(lambda c: theta(b, c) >= floor, jnp.zeros_like(b), c_best, iters)
        hi = _first_true(lambda c: theta(b, c) < floor, c_best + 1,
                         jnp.full_like(b, nneg + 1), iters) - 1
        hi = jnp.maximum(hi, lo)
        slope = _range_max(_range_max_table(Nd), lo, hi) - Pd[b]
        slope = jnp.where(near, slope, -jnp.inf)
        candidates = near & (slope == jnp.max(slope))
        b_star = jnp.argmax(jnp.where(candidates, value, -jnp.inf))
        c = jnp.arange(n + 1)
        on = (c >= lo[b_star]) & (c <= hi[b_star])
        on = on & (Nd == jnp.max(jnp.where(on, Nd, -jnp.inf)))
        c_star = jnp.argmax(jnp.where(on, theta(b_star, c), -jnp.inf))
        rank = jnp.zeros(n, jnp.int32)
        rank_pos = rank.at[order_pos].set(jnp.arange(n, dtype=jnp.int32))
        rank_neg = rank.at[order_neg].set(jnp.arange(n, dtype=jnp.int32))
        flip = jnp.where(y > 0, rank_pos < b_star, rank_neg < c_star)
        return jnp.where(flip, -2.0 * y / n, 0.0).astype(S.dtype)

    # ---- the smoothing --------------------------------------------------------------

    def _log_partition(self, S, y, mu, t):
        """log Σ_{y′} exp((t Δ(y′, y) + (1/n) Σᵢ Sᵢ(y′ᵢ − yᵢ))/μ) by `_packed_flip_dp` and
        `_log_sum_grid`."""
        n = S.shape[0]
        pos = jnp.asarray(y) > 0
        omega = jnp.where(pos, -2.0, 2.0).astype(S.dtype) * S / (n * mu)
        code = jnp.where(pos, 1, -1).astype(jnp.int32)
        v = _packed_flip_dp(omega, code)
        return _log_sum_grid(v, jnp.sum(pos, dtype=jnp.int32), t / mu)

    def _smoothed_value(self, S, y, mu, t):
        n = S.shape[0]
        return mu * self._log_partition(S, y, mu, t) - mu * n * math.log(2.0)

    def smoothed(self, S, mu, y):
        """(g*_μ(S), ∇g*_μ(S)) with ∇g*_μ(S)ᵢ = −2 yᵢ p(y′ᵢ = −yᵢ)/n (μ > 0): see the class
        docstring. The gradient is the reverse-mode derivative of the log-space forward
        programme (Algorithm 6)."""
        S = jnp.asarray(S)
        mu = jnp.asarray(mu, S.dtype)
        one = jnp.ones((), S.dtype)
        return jax.value_and_grad(lambda s: self._smoothed_value(s, y, mu, one))(S)

    def smoothed_dual(self, S, mu, y):
        """(g*_μ(S), ∇g*_μ(S), E_α[Δ]) in one backward pass: `smoothed` and
        `expected_delta` together (what AGM-EF's primal scheme averages for its bound)."""
        S = jnp.asarray(S)
        mu = jnp.asarray(mu, S.dtype)
        value, (grad, expected) = jax.value_and_grad(
            lambda s, t: self._smoothed_value(s, y, mu, t), argnums=(0, 1))(
                S, jnp.ones((), S.dtype))
        return value, grad, expected

    def expected_delta(self, S, mu, y):
        """E_α[Δ(y′, y)] under the Gibbs distribution α ∝ exp(θ(y′)/μ) of ``smoothed``:
        μ ∂/∂t log Σ exp((t Δ + (1/n) Σ Sᵢ(y′ᵢ − yᵢ))/μ) at t = 1 (one backward pass over the
        (b, c) grid). With u = E_α[(y′ − y)/n] = ∇g*_μ(S), R*(u) ≤ −E_α[Δ]."""
        S = jnp.asarray(S)
        mu = jnp.asarray(mu, S.dtype)
        return jax.grad(lambda t: self._smoothed_value(S, y, mu, t))(jnp.ones((), S.dtype))

    def smoothing_diameter(self, n):
        """D = n log 2, the range of the entropy over the 2ⁿ labelings: μ = ε/D (eq. 57)."""
        return n * math.log(2.0)
