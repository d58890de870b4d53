"""Exact Euclidean projections: pure functions, jit- and vmap-able, on the device.

Each finds the root of a monotone piecewise-linear function of one multiplier exactly: the
kinks are located, g is known in closed form between neighbouring kinks, and the root is the
zero of the linear piece that holds it (no tolerance).

- `project_simplex`: the probability simplex (sort, cumsum, locate).
- `project_box_section`: a weighted projection onto a box cut by one hyperplane, the QP of
  paper 003 §5.5.1 (Alg. 7–8) and paper 004 App. B; the piece is found by Newton steps on
  the kinks, with sorting as the fallback.
- `project_capped_simplex`: {x ∈ [0, cap]ⁿ, Σx = 1}, LPBoost's domain.
- `entropic_capped_simplex`: the same set in the entropy geometry (a Bregman projection:
  the soft-max, capped), the prox of the `nsjax.regularizers.Entropy` regularizer.
- `project_elastic_net_ball`: {γ‖w‖₁ + ½‖w‖² ≤ r} (paper 003 §5.5.2; sort-based, exact),
  with `elastic_net_ball_support`, its support function.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp


def project_simplex(v: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """argmin_x ‖x − v‖² over {x ≥ 0, Σx = 1, x = 0 off ``mask``} (sort-based, exact).

    Sort the entries in use in decreasing order u_1 ≥ u_2 ≥ …, take the largest k with
    u_k − (Σ_{j≤k} u_j − 1)/k > 0, and shift every entry by θ = (Σ_{j≤k} u_j − 1)/k before
    clipping at 0. For a batch, `jax.vmap` it over the rows.

    Args:
        v: (c,) point to project.
        mask: (c,) bool, the entries allowed to be nonzero (at least one); default all.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_simplex
        >>> project_simplex(jnp.array([0.5, 0.5, 2.0])).tolist()
        [0.0, 0.0, 1.0]
        >>> project_simplex(jnp.array([1.0, 0.0]), mask=jnp.array([False, True])).tolist()
        [0.0, 1.0]
    """
    if mask is None:
        mask = jnp.ones(v.shape, bool)
    big = jnp.finfo(v.dtype).max
    u = jnp.sort(jnp.where(mask, v, -big))[::-1]
    css = jnp.cumsum(jnp.where(u > -big, u, 0.0))
    k = jnp.arange(1, v.shape[0] + 1, dtype=v.dtype)
    ok = (u > -big) & (u - (css - 1.0) / k > 0)
    rho = jnp.max(jnp.where(ok, jnp.arange(v.shape[0]), 0))
    theta = (css[rho] - 1.0) / (rho + 1.0)
    return jnp.where(mask, jnp.maximum(v - theta, 0.0), 0.0)


class BoxSection(NamedTuple):
    """The result of `project_box_section` and `project_capped_simplex`.

    Attributes:
        x: the projection, shaped like the point projected (see `project_box_section` for
            what it is when ``feasible`` is False).
        multiplier: ν, the multiplier of the equality: x = clip(m + ν a / w, lower, upper)
            to rounding. Where g (below) is zero on a whole interval, one ν of it (all give
            the same x).
        feasible: False iff the set is empty: some lᵢ > uᵢ or an interval with no real
            point (lᵢ = +inf or uᵢ = −inf), or b outside [min, max] of aᵀx over the box
            (beyond the rounding of those sums).
    """

    x: jax.Array
    multiplier: jax.Array
    feasible: jax.Array


def project_box_section(m, a, b, lower, upper, weights=None, *,
                        newton_steps: int = 32) -> BoxSection:
    """argmin_x Σᵢ wᵢ/2 (xᵢ − mᵢ)² subject to lᵢ ≤ xᵢ ≤ uᵢ and Σᵢ aᵢxᵢ = b, exactly.

    The QP (64) of paper 003 §5.5.1 (= paper 004 App. B) with wᵢ = dᵢ², σᵢ = aᵢ, z = b.
    By the KKT conditions x = x(ν) = clip(m + ν a / w, l, u), where ν is a root of

        g(ν) = Σᵢ aᵢ xᵢ(ν) − b,

    nondecreasing and piecewise linear, with kinks where a moving coordinate meets a bound
    (its slope aᵢ²/wᵢ switches on or off there). The root is found exactly: once the piece
    of g that holds it is known, the zero of that piece's line is the root, to rounding.

    The papers find that piece by a median search over the kinks (Alg. 7–8, O(n)) or by
    sorting them (O(n log n)). Neither pays with XLA: a median is a sort there, and on a
    CPU sorting the 2n kinks costs hundreds of passes over the data (n = 10⁶: ~0.7 s, a
    pass ~1.5 ms; a bisection like jaxopt's makes 30 to a tolerance). So the search
    pivots as Alg. 7–8 do, with cheaper pivots: Newton steps on g (one pass each for g and
    its slope; regula falsi with Illinois' rule when a step would leave the bracket) until
    the pivot seems to be in the root's piece; one more pass finds the two kinks around the
    pivot, and if the zero of the pivot's line lies between them it is the root (else the
    Newton steps go on). Random instances take 3–16 passes and a check or two (a flat,
    staircase-like g takes the most). Should that not happen within ``newton_steps``
    passes, the kinks are sorted and g found at all of them by cumulative sums (the
    papers' O(n log n) method), which settles any instance.

    Handled: ties among kinks, aᵢ = 0 (xᵢ = clip(mᵢ, lᵢ, uᵢ)), infinite bounds (their
    kinks are at ∓inf and never crossed), lᵢ = uᵢ, and a flat g at the root.

    Infeasible input gives ``feasible=False`` and no NaN (for finite m, a, b, w):

    - an empty interval (lᵢ > uᵢ, lᵢ = +inf or uᵢ = −inf): no search; x = clip(m, min(l, u),
      max(l, u)) and ν = 0;
    - b outside [min, max] of aᵀx over the box: x is the box point nearest to b in aᵀx
      (each coordinate with aᵢ ≠ 0 at the bound that brings aᵀx closest to b, the others at
      clip(mᵢ, lᵢ, uᵢ)), and ν the first (last) kink, where x(ν) reaches it.

    Args:
        m: (n,) the point to project.
        a: (n,) or scalar, the equality's coefficients (any sign, zeros allowed).
        b: scalar, its right-hand side.
        lower, upper: (n,) or scalars, the box; ±inf allowed.
        weights: (n,) or scalar, wᵢ > 0 (dᵢ² in the papers); default 1.
        newton_steps: the most Newton passes before the kinks are sorted (0: sort at
            once). An int, or a traced one.

    Returns:
        `BoxSection` (x, multiplier ν, feasible) in the inputs' floating dtype. Pure and
        jit/vmap-able (vmap over rows solves many small blocks in one call).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_box_section
        >>> m = jnp.array([0.75, 0.25, -1.0])
        >>> sol = project_box_section(m, jnp.ones(3), 1.5, 0.0, 1.0)
        >>> sol.x.tolist(), sol.multiplier.tolist(), bool(sol.feasible)
        ([1.0, 0.5, 0.0], 0.25, True)
        >>> sol = project_box_section(m, jnp.ones(3), 4.0, 0.0, 1.0)  # aᵀx ≤ 3 on the box
        >>> sol.x.tolist(), bool(sol.feasible)
        ([1.0, 1.0, 1.0], False)
    """
    return _box_section(m, a, b, lower, upper, weights, newton_steps=newton_steps)[0]


def project_capped_simplex(v, cap, *, newton_steps: int = 32) -> BoxSection:
    """argmin_x ‖x − v‖² over {x ∈ [0, cap]ⁿ, Σx = 1} (LPBoost's domain), exactly.

    `project_box_section` with a = 1, b = 1 and the box [0, cap] (paper 003 §5.5.1, paper
    004 App. B). ``cap`` may be traced (a scalar; per row under vmap). The set is empty when
    n·cap < 1 (beyond rounding): then ``feasible`` is False and x = cap·1, the box point
    with the largest sum (x = clip(v, cap, 0) if cap < 0). With cap ≥ 1 this is the simplex
    projection (`project_simplex`), from O(n) passes instead of a sort.

    Args:
        v: (n,) the point to project.
        cap: scalar, the upper bound of every coordinate.
        newton_steps: as in `project_box_section`.

    Returns:
        `BoxSection` (x, multiplier ν: x = clip(v + ν, 0, cap), feasible).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_capped_simplex
        >>> project_capped_simplex(jnp.array([3.0, 1.0, 0.0, 0.0]), 0.5).x.tolist()
        [0.5, 0.5, 0.0, 0.0]
        >>> sol = project_capped_simplex(jnp.array([3.0, 1.0, 0.0, 0.0]), 0.125)
        >>> sol.x.tolist(), bool(sol.feasible)
        ([0.125, 0.125, 0.125, 0.125], False)
    """
    return project_box_section(v, 1, 1, 0, cap, newton_steps=newton_steps)


# ---------------------------------------------------------------------------------------
# The parts of project_box_section.
#
# In the papers' variables (paper 003 §5.5.1: βᵢ = aᵢ(xᵢ − mᵢ), d̄ᵢ² = wᵢ/aᵢ², λ = ν),
# g(ν) = Σᵢ hᵢ(ν) − z′ with hᵢ(λ) = clip(λ/d̄ᵢ², l′ᵢ, u′ᵢ), whose kinks are d̄ᵢ²l′ᵢ and
# d̄ᵢ²u′ᵢ. Paper 004 writes hᵢ in (30) without its λ/d̄ᵢ² term (it follows from (27):
# βᵢ = d̄ᵢ⁻²(ρᵢ⁺ − ρᵢ⁻ + λ)), and its Alg. 2 sorts dᵢ²l′ᵢ where d̄ᵢ²l′ᵢ is meant: typos, paper
# 003 has both right. (Paper 003's (65) starts from min_λ max_β; the saddle problem of the
# primal is min_β max_λ, which its next line's swap then gets right.)
#
# Nothing of size n is stored between passes: each pass recomputes what it needs from the
# inputs. On CPUs every n-sized temporary of a compiled program is fresh memory on each
# call, and its page faults cost more than recomputing (n = 10⁶: ~2 ms per array, about
# as much as a whole pass); for the same reason the data are kept unbroadcast.
# ---------------------------------------------------------------------------------------


class _Section(NamedTuple):
    """The problem's data, each (n,) or a scalar, in one floating dtype."""

    m: jax.Array
    a: jax.Array
    b: jax.Array
    lower: jax.Array
    upper: jax.Array
    w: jax.Array


def _section(m, a, b, lower, upper, weights) -> _Section:
    w = 1 if weights is None else weights
    dtype = jnp.result_type(float, m, a, b, lower, upper, w)
    return _Section(*(jnp.asarray(v, dtype) for v in (m, a, b, lower, upper, w)))


def _kink_distances(p: _Section, y):
    """lowᵢ − ν and highᵢ − ν, the distances to coordinate i's kinks, from yᵢ = mᵢ + ν aᵢ/wᵢ.

    Coordinate i sits at its a-low bound (where aᵢxᵢ is least) for ν ≤ lowᵢ, at the other
    one for ν ≥ highᵢ, and moves in between (min/max order the two by the sign of aᵢ, as
    lᵢ ≤ uᵢ). With aᵢ = 0 the kinks are ∓inf (never crossed), or NaN where yᵢ is at a
    bound (0/0); the callers' comparisons make NaN harmless, as aᵢ = 0 adds nothing to g.
    (No select on the sign of a: a select of the bounds alone would be the same in every
    pass, and XLA would hoist it out of the loop into arrays.)
    """
    to_lower = (p.lower - y) * p.w / p.a
    to_upper = (p.upper - y) * p.w / p.a
    return jnp.minimum(to_lower, to_upper), jnp.maximum(to_lower, to_upper)


def _reduce(sums=(), maxima=(), minima=()):
    """Sums, maxima and minima of same-shaped arrays in one pass, one variadic XLA reduce.

    On CPUs, separate reductions of masked arrays cost several times more: each is its own
    loop, not fused with the others, and XLA may keep their shared parts as arrays.
    """
    ops = (*sums, *maxima, *minima)
    dtype = ops[0].dtype
    init = tuple(jnp.array(v, dtype) for v in
                 [0] * len(sums) + [-jnp.inf] * len(maxima) + [jnp.inf] * len(minima))
    kinds = (jnp.add,) * len(sums) + (jnp.maximum,) * len(maxima) + (jnp.minimum,) * len(minima)

    def combine(x, y):
        return tuple(f(p, q) for f, p, q in zip(kinds, x, y, strict=True))

    out = jax.lax.reduce(ops, init, combine, (ops[0].ndim - 1,))
    i, j = len(sums), len(sums) + len(maxima)
    return out[:i], out[i:j], out[j:]


class _Range(NamedTuple):
    """What one pass over the data tells before the search."""

    box_ok: jax.Array  # every lᵢ ≤ uᵢ, lᵢ < inf, uᵢ > −inf
    least: jax.Array  # min aᵀx over the box (−inf if unbounded)
    largest: jax.Array  # max aᵀx (inf if unbounded)
    rounding: jax.Array  # the rounding error of such sums, of g too: 8 eps (Σ|aᵢxᵢ| + |b|)
    feasible: jax.Array


def _range_of_ax(p: _Section) -> _Range:
    """min and max of aᵀx over the box (aᵀm + Σ l′ᵢ and aᵀm + Σ u′ᵢ in the papers' terms),
    checked against b up to the rounding of those sums, and whether the box is nonempty."""
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in p))
    moves = p.a != 0
    at_low = jnp.where(moves, p.a * jnp.where(p.a > 0, p.lower, p.upper), 0)  # never +inf
    at_high = jnp.where(moves, p.a * jnp.where(p.a > 0, p.upper, p.lower), 0)  # never −inf
    bad = ~((p.lower <= p.upper) & (p.lower < jnp.inf) & (p.upper > -jnp.inf))
    # Σ|aᵢxᵢ| over the finite ends: the scale of the sums' rounding (NaN flags a bad box).
    scale = (jnp.where(jnp.isfinite(at_low), jnp.abs(at_low), 0)
             + jnp.where(jnp.isfinite(at_high), jnp.abs(at_high), 0) + jnp.where(bad, jnp.nan, 0))
    # With a, l and u scalars the n terms are equal: no reduction (XLA would fold one of
    # constants at compile time, for seconds at n = 10⁶).
    if at_low.ndim == 0:
        least, largest, scale = (v * shape[-1] for v in (at_low, at_high, scale))
    else:
        (least, largest, scale), _, _ = _reduce(
            sums=tuple(jnp.broadcast_to(v, shape) for v in (at_low, at_high, scale)))
    box_ok = ~jnp.isnan(scale)
    rounding = 8 * jnp.finfo(p.b.dtype).eps * (scale + jnp.abs(p.b))
    feasible = box_ok & (least - rounding <= p.b) & (p.b <= largest + rounding)
    return _Range(box_ok, least, largest, rounding, feasible)


def _end_kinks(p: _Section):
    """g's first and last kink (inf, −inf if none): where every coordinate with aᵢ ≠ 0
    is still at its a-low bound, and where all have reached their a-high one."""
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in p))
    moves = p.a != 0
    x_low = jnp.where(p.a > 0, p.lower, p.upper)
    x_high = jnp.where(p.a > 0, p.upper, p.lower)
    # One division per kink: XLA keeps a division with two users as an array.
    low = jnp.where(moves & jnp.isfinite(x_low), (x_low - p.m) * p.w / p.a, jnp.inf)
    high = jnp.where(moves & jnp.isfinite(x_high), (x_high - p.m) * p.w / p.a, -jnp.inf)
    _, (last,), (first,) = _reduce(maxima=(jnp.broadcast_to(high, shape),),
                                   minima=(jnp.broadcast_to(low, shape),))
    return first, last


def _lazily(pred, compute, otherwise):
    """compute() if pred else otherwise, evaluated only when needed: a while_loop run at
    most once rather than a cond, which vmap turns into both branches."""
    def body(carry):
        return jnp.zeros_like(carry[0]), compute()
    return jax.lax.while_loop(lambda c: c[0], body, (pred, otherwise))[1]


class _Search(NamedTuple):
    """The state of the root search: the next pivot ν (the root once done), a bracket
    lo < root < hi with g(lo) < 0 < g(hi) (∓inf: nothing known on that side yet), and g
    and its slope at the last pivot evaluated."""

    nu: jax.Array
    lo: jax.Array
    hi: jax.Array
    g_lo: jax.Array
    g_hi: jax.Array
    done: jax.Array
    steps: jax.Array  # cheap passes made
    checks: jax.Array  # _certify passes made
    ready: jax.Array  # the cheap passes think the last pivot is in the root's piece
    side: jax.Array  # +1 / −1: which end the last pass moved (for Illinois' halving)
    at: jax.Array  # the last pivot evaluated (nan: none yet)
    g: jax.Array  # g there
    slope: jax.Array  # g's slope there (−1: none yet)
    step: jax.Array  # the step from the last pivot to ν (inf: none yet)
    rounding: jax.Array  # |g| below this on a flat piece: that piece is the root's


def _multiplier(p: _Section, r: _Range, newton_steps: int):
    """A root ν of g: cheap Newton passes (`_steer`: g and its slope), safeguarded by
    regula falsi on a bracket, until the pivot seems to be in the root's piece; then one
    pass for the two kinks around that pivot (`_certify`): the zero of the pivot's line is
    the root, exactly, if it lies between them; else on with cheap passes. If that has
    not happened within ``newton_steps`` cheap passes, the kinks are sorted
    (`_sort_pass`, the papers' way), which settles any instance.

    No search where the box is empty (ν = 0) or b is at or past an end of the range of
    aᵀx (ν = that end's kink, 0 if there is none).
    """
    dtype = p.b.dtype
    at_least, at_largest = p.b <= r.least, p.b >= r.largest
    settled = ~r.box_ok | at_least | at_largest
    g_lo, g_hi = r.least - p.b, r.largest - p.b
    # b in the outer 1/√n of its range: the root is among the first or last few kinks,
    # where Newton steps from ν = 0 would crawl; the secant over [first, last] lands by
    # it. (g = least − b and largest − b there.) Elsewhere ν = 0 does better.
    spread = jnp.minimum(-g_lo, g_hi) / (g_hi - g_lo)
    near_end = (~settled & jnp.isfinite(g_lo) & jnp.isfinite(g_hi)
                & (spread < 1 / math.sqrt(p.m.shape[-1])))
    inf = jnp.full_like(p.b, jnp.inf)
    first, last = _lazily(r.box_ok & (at_least | at_largest | near_end),
                          lambda: _end_kinks(p), (inf, -inf))
    end = jnp.where(at_least, first, last)
    lo = jnp.where(near_end, first, -inf)
    hi = jnp.where(near_end, last, inf)
    g_lo, g_hi = jnp.where(near_end, g_lo, -inf), jnp.where(near_end, g_hi, inf)
    nu = jnp.where(settled, jnp.where(r.box_ok & jnp.isfinite(end), end, 0),
                   jnp.where(near_end, _regula_falsi(lo, hi, g_lo, g_hi), 0))
    search = _Search(nu=nu.astype(dtype), lo=lo, hi=hi, g_lo=g_lo, g_hi=g_hi, done=settled,
                     steps=jnp.zeros((), jnp.int32), checks=jnp.zeros((), jnp.int32),
                     ready=settled,
                     side=jnp.zeros((), jnp.int32),
                     at=jnp.full_like(p.b, jnp.nan), g=jnp.full_like(p.b, jnp.nan),
                     slope=jnp.full_like(p.b, -1), step=inf, rounding=r.rounding)

    def cheap_round(s):
        s = jax.lax.while_loop(lambda s: ~s.ready & (s.steps < newton_steps),
                               lambda s: _steer(p, s), s)
        return _certify(p, s)

    search = jax.lax.while_loop(lambda s: ~s.done & (s.steps < newton_steps), cheap_round,
                                search)
    passes = _Passes(search.steps, search.checks, ~search.done)
    search = _lazily(~search.done, lambda: _sort_pass(p, search), search)
    return search.nu, passes


class _Passes(NamedTuple):
    """How a root was found (for tests and benchmarks)."""

    cheap: jax.Array  # cheap passes (g and slope)
    checks: jax.Array  # passes for the kinks around a pivot
    sorted: jax.Array  # the kinks were sorted


def _box_section(m, a, b, lower, upper, weights=None, *, newton_steps: int = 32):
    """`project_box_section`, and the passes it made (for tests and benchmarks)."""
    p = _section(m, a, b, lower, upper, weights)
    r = _range_of_ax(p)
    nu, passes = _multiplier(p, r, newton_steps)
    return BoxSection(_box_point(p, r, nu), nu, r.feasible), passes


def _slope_and_g(p: _Section, nu):
    """g(ν) and its slope Σ aᵢ²/wᵢ over the coordinates strictly inside their bounds (the
    slope on either side of ν, if ν is no kink). One cheap pass: both sums in one loop
    (n = 10⁶: about 1.5 times a bisection's clip-and-dot pass; two separate sums cost more
    inside the search loop, where XLA then keeps their shared parts as arrays)."""
    y = p.m + nu * p.a / p.w
    (ax, slope), _, _ = _reduce(sums=(
        jnp.broadcast_to(p.a * jnp.clip(y, p.lower, p.upper), y.shape),
        jnp.where((y > p.lower) & (y < p.upper), p.a, 0) * p.a / p.w))
    return slope, ax - p.b


def _steer(p: _Section, s: _Search) -> _Search:
    """One cheap pass at the pivot: then Newton's step if it stays inside the bracket, else
    regula falsi with Illinois' halving of an end kept twice (so the chord cannot crawl).

    Ready for `_certify` to check the pivot when it seems to be in the root's piece: the
    Newton step that led to it kept the slope (the same coordinates move) and the next
    step is below 1/8 of it (within a piece it is rounding); or when g(ν) = 0, or g is
    flat there and zero to rounding, or the step or the bracket is below rounding.
    """
    slope, g = _slope_and_g(p, s.nu)
    rising = slope > 0
    newton = s.nu - g / jnp.where(rising, slope, 1)
    below, above = g < 0, g > 0
    lo, g_lo = jnp.where(below, s.nu, s.lo), jnp.where(below, g, s.g_lo)
    hi, g_hi = jnp.where(above, s.nu, s.hi), jnp.where(above, g, s.g_hi)
    g_hi = jnp.where(below & (s.side == -1), g_hi / 2, g_hi)
    g_lo = jnp.where(above & (s.side == 1), g_lo / 2, g_lo)
    side = jnp.where(below, -1, 1).astype(s.side.dtype)
    ulps = 4 * jnp.finfo(g.dtype).eps
    step = jnp.abs(newton - s.nu)
    same_piece = rising & (slope == s.slope) & (step < s.step / 8)
    width = hi - lo  # inf until both ends are known
    ready = ((jnp.abs(g) <= jnp.where(rising, 0, s.rounding)) | same_piece
             | rising & (step <= ulps * jnp.abs(s.nu))
             | (width <= ulps * jnp.maximum(jnp.abs(lo), jnp.abs(hi))) & jnp.isfinite(width))
    pivot = jnp.where(rising & (newton > lo) & (newton < hi), newton,
                      _regula_falsi(lo, hi, g_lo, g_hi))
    return s._replace(nu=pivot, lo=lo, hi=hi, g_lo=g_lo, g_hi=g_hi, steps=s.steps + 1,
                      ready=ready, side=side, at=s.nu, g=g, slope=slope,
                      step=jnp.abs(pivot - s.nu))


def _certify(p: _Section, s: _Search) -> _Search:
    """The root, exactly, if the last cheap pivot's line has its zero between the kinks
    around that pivot (one pass, for those two kinks); else the cheap passes go on.

    A zero past a kink by rounding only (4 ulps), or past the piece but not past the
    bracket, is that kink: the root is there. At a kink the cheap pass's slope is not the
    piece's, so no verdict there, unless g is 0 at it. A flat piece where g is 0 to
    rounding holds the root (every ν of it gives the same x).
    """
    left, right = _kinks_around(p, s.at)
    newton = s.at - s.g / jnp.where(s.slope > 0, s.slope, 1)
    ulps = 4 * jnp.finfo(s.g.dtype).eps
    reach_left = jnp.minimum(left, left - ulps * jnp.abs(left))
    reach_right = jnp.maximum(right, right + ulps * jnp.abs(right))
    in_piece = (newton >= reach_left) & (newton <= reach_right)
    stuck = (newton > right) & (right >= s.hi) | (newton < left) & (left <= s.lo)
    # g = 0 at the pivot, or flat there and 0 to rounding: the pivot is a root.
    at_root = (s.g == 0) | (s.slope == 0) & (jnp.abs(s.g) <= s.rounding)
    ok = at_root | ((left < s.at) & (s.at < right) & (s.slope > 0) & (in_piece | stuck))
    root = jnp.where(at_root, s.at, jnp.clip(newton, left, right))
    return s._replace(nu=jnp.where(ok, root, s.nu), done=ok, ready=ok, checks=s.checks + 1)


def _kinks_around(p: _Section, nu):
    """The largest kink ≤ ν and the smallest kink > ν (∓inf if none). One pass.

    The sign of aᵢ(bound − yᵢ) tells on which side of ν that bound's kink lies, and
    kink − ν = (bound − yᵢ)·wᵢ/aᵢ. The two divisions are written differently on purpose:
    XLA keeps a division with two users as an array, not fused into the pass.
    """
    y = p.m + nu * p.a / p.w
    to_lower, to_upper = p.lower - y, p.upper - y
    ahead_lower, ahead_upper = p.a * to_lower > 0, p.a * to_upper > 0
    moves = p.a != 0  # aᵢ = 0: no kinks (a mask: XLA keeps it as one byte per coordinate)
    behind = jnp.maximum(
        jnp.where(moves & ~ahead_lower, to_lower * p.w / p.a, -jnp.inf),
        jnp.where(moves & ~ahead_upper, to_upper * p.w / p.a, -jnp.inf))
    ahead = jnp.minimum(
        jnp.where(ahead_lower, -((y - p.lower) * p.w / p.a), jnp.inf),
        jnp.where(ahead_upper, -((y - p.upper) * p.w / p.a), jnp.inf))
    shape = y.shape
    _, (left,), (right,) = _reduce(maxima=(jnp.broadcast_to(behind, shape),),
                                   minima=(jnp.broadcast_to(ahead, shape),))
    return nu + left, nu + right


def _regula_falsi(lo, hi, g_lo, g_hi):
    """The zero of the chord of g over [lo, hi] if it is inside, else a point of (lo, hi)."""
    chord = lo - g_lo * (hi - lo) / (g_hi - g_lo)
    inside = jnp.isfinite(lo) & jnp.isfinite(hi) & (chord > lo) & (chord < hi)
    return jnp.where(inside, chord, _between(lo, hi))


def _between(lo, hi):
    """A point of (lo, hi) (lo itself if they are neighbouring floats); a step of
    1 + |end| past the finite end if the other is infinite, 0 if both are."""
    finite_lo, finite_hi = jnp.isfinite(lo), jnp.isfinite(hi)
    step = 1 + jnp.abs(jnp.where(finite_lo, lo, jnp.where(finite_hi, hi, 0)))
    return jnp.where(finite_lo & finite_hi, lo / 2 + hi / 2,
                     jnp.where(finite_lo, lo + step, jnp.where(finite_hi, hi - step, 0 * step)))


def _sort_pass(p: _Section, s: _Search) -> _Search:
    """The papers' O(n log n) way: sort all 2n kinks, get g at each by cumulative sums of
    the slope and intercept changes, and solve the piece before the first kink with g ≥ 0."""
    lo, hi = _bracket_by_sorting(p, s.nu)
    inside = _between(lo, hi)  # no kink between lo and hi: the slope there is the piece's
    slope, g = _slope_and_g(p, inside)
    nu = jnp.where(slope > 0, jnp.clip(inside - g / jnp.where(slope > 0, slope, 1), lo, hi),
                   inside)
    return s._replace(nu=nu, lo=lo, hi=hi, done=jnp.ones_like(s.done))


def _bracket_by_sorting(p: _Section, nu):
    """Neighbouring kinks lo ≤ hi with g(lo) < 0 ≤ g(hi) (−inf / inf past the ends).

    With t = ν′ − ν measured from the last pivot ν (so that nothing here repeats the
    setup's arrays, which XLA would then keep): g(ν′) = Σᵢ sᵢ·clip(t, lowᵢ − ν, highᵢ − ν)
    + Σᵢ aᵢyᵢ − b, with yᵢ = mᵢ + ν aᵢ/wᵢ and sᵢ = aᵢ²/wᵢ.
    """
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in p))
    y = jnp.broadcast_to(p.m + nu * p.a / p.w, shape)
    low, high = (jnp.broadcast_to(d, shape) for d in _kink_distances(p, y))
    s = jnp.broadcast_to(p.a * p.a / p.w, shape)
    # Kinks that are not finite are never crossed: −inf (moving from the start), +inf, or
    # NaN (aᵢ = 0, where sᵢ = 0 and nothing changes anyway).
    enters = jnp.isfinite(low)  # the coordinate starts to move at a finite kink
    exits = jnp.isfinite(high)  # and stops at one
    # Below every finite kink, the coordinates that never enter move, the others are low.
    slope0 = jnp.sum(jnp.where(enters, 0, s))
    intercept0 = jnp.sum(jnp.where(enters, s * low, 0) + p.a * y) - p.b
    # Crossing low: slope += sᵢ, intercept −= sᵢ·low; crossing high: the reverse.
    key = jnp.concatenate([jnp.where(enters, low, jnp.inf), jnp.where(exits, high, jnp.inf)])
    d_slope = jnp.concatenate([jnp.where(enters, s, 0), jnp.where(exits, -s, 0)])
    d_intercept = jnp.concatenate([jnp.where(enters, -s * low, 0), jnp.where(exits, s * high, 0)])
    key, d_slope, d_intercept = jax.lax.sort((key, d_slope, d_intercept), num_keys=1)
    slope, intercept = jnp.cumsum(jnp.stack([d_slope, d_intercept]), axis=1)  # one scan
    slope, intercept = slope0 + slope, intercept0 + intercept
    # g at each kink from the piece after it (g is continuous: ties need no care).
    g = jnp.where(key < jnp.inf, intercept + slope * key, jnp.inf)
    n2 = key.shape[0]
    first = jnp.sum(g < 0)  # g is nondecreasing along the sorted kinks
    lo = jnp.where(first > 0, key[jnp.maximum(first - 1, 0)], -jnp.inf)
    hi = jnp.where(first < n2, key[jnp.minimum(first, n2 - 1)], jnp.inf)
    return nu + lo, nu + hi


def _box_point(p: _Section, r: _Range, nu):
    """x(ν) = clip(m + ν a / w, l, u); at an end of the range of aᵀx, that end's corner
    exactly (x(ν) alone could leave it an ulp inside); clip(m, min(l, u), max(l, u)) for an
    empty box."""
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in p))
    moves = p.a != 0
    x = jnp.clip(p.m + nu * p.a / p.w, p.lower, p.upper)
    # The corners as clips of ∓inf, not as _range_of_ax's selects of the bounds: XLA would
    # share those between the two passes and keep them as arrays.
    at_least, at_largest = p.b <= r.least, p.b >= r.largest
    towards = jnp.where(at_least, -p.a, p.a) * jnp.inf
    x = jnp.where(moves & (at_least | at_largest), jnp.clip(towards, p.lower, p.upper), x)
    x = jnp.where(r.box_ok, x,
                  jnp.clip(p.m, jnp.minimum(p.lower, p.upper), jnp.maximum(p.lower, p.upper)))
    return jnp.broadcast_to(x, shape)


def entropic_capped_simplex(logits: jax.Array, cap=1.0) -> jax.Array:
    """argmax_x ⟨logits, x⟩ − Σ xᵢ log xᵢ over {x ∈ [0, cap]ⁿ, Σx = 1} (sort-based, exact).

    Without the cap (cap ≥ 1) this is the soft-max of ``logits``; with it, the relative-
    entropy (KL) projection of the soft-max onto the capped simplex, which scales the
    uncapped entries by one constant: xᵢ = min(cap, c·pᵢ) with p the soft-max (the KKT
    conditions of the concave objective; paper 003, Example 5's Ω*, where the multipliers βᵢ
    of the caps are positive exactly on the capped entries). With the logits sorted in
    decreasing order and the k largest entries capped, c·p_j = exp(l_j − lse_{>k} + log(1 −
    k·cap)), lse_{>k} the log-sum-exp of the others; k is the smallest count at which the
    largest uncapped entry is ≤ cap. All in log space, so logits of any size give no
    overflow and no 0/0. For a batch, `jax.vmap` it over the rows.

    Args:
        logits: (n,) finite reals.
        cap: ν with n·ν ≥ 1 (else the set is empty and the result is NaN); ν ≥ 1 is no cap.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import entropic_capped_simplex
        >>> [round(v, 6) for v in entropic_capped_simplex(jnp.log(jnp.array([1.0, 1, 2]))).tolist()]
        [0.25, 0.25, 0.5]
        >>> [round(v, 6) for v in entropic_capped_simplex(jnp.array([0.0, 0, 5]), 0.4).tolist()]
        [0.3, 0.3, 0.4]
    """
    n, dt = logits.shape[0], logits.dtype
    cap = jnp.asarray(cap, dt)
    # Relative to the largest: exp's argument is then exact where it matters (near 0).
    logits = logits - jnp.max(logits)
    lsorted = jnp.sort(logits)[::-1]
    # lse of the entries after the k largest, k = 0 … n−1 (a reversed running log-sum-exp).
    rest = jax.lax.cumlogsumexp(lsorted, reverse=True)
    k = jnp.arange(n, dtype=dt)
    free = 1.0 - k * cap  # the mass left to the uncapped entries
    log_free = jnp.log(jnp.where(free > 0, free, 1.0))
    # With k capped, the largest uncapped entry (sorted index k) is below the cap.
    ok = (free > 0) & (lsorted - rest + log_free <= jnp.log(cap) + 4 * jnp.finfo(dt).eps)
    first = jnp.argmax(ok)  # the smallest such k (k = 0 where cap ≥ 1)
    # (l − lse) first: near the entries that matter the two are close, so it is exact.
    x = jnp.minimum(jnp.exp((logits - rest[first]) + log_free[first]), cap)
    return jnp.where(n * cap >= 1.0, x, jnp.nan)


def _elastic_net_multiplier(a, r, gamma):
    """The root λ ≥ 0 of h(λ) = Σ_{aᵢ > γλ} ((aᵢ + γ)² − γ²(1 + λ)²) − 2r(1 + λ)², a = |g|
    (paper 003 §5.5.2, with its typos fixed: the paper's h carries −2γr and its H −rλγ; the
    envelope theorem gives H′(λ) = γ‖w(λ)‖₁ + ½‖w(λ)‖² − r, whence −2r). On the piece where
    the k largest aᵢ are active, h = Σ_k (aᵢ + γ)² − (1 + λ)²(2r + kγ²): its root is
    1 + λ = sqrt(Σ_k (aᵢ + γ)² / (2r + kγ²)), valid where it falls between the k-th and
    (k+1)-th kinks aᵢ/γ. 0 where g is in the ball."""
    n, dt = a.shape[0], a.dtype
    s = jnp.sort(a)[::-1]
    k = jnp.arange(1, n + 1, dtype=dt)
    one_plus = jnp.sqrt(jnp.cumsum((s + gamma) ** 2) / (2 * r + k * gamma * gamma))
    lam = one_plus - 1.0
    # The piece's range: λ < s_k/γ (the k-th entry active) and λ ≥ s_{k+1}/γ.
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    upper = jnp.where(gamma > 0, s / jnp.where(gamma > 0, gamma, 1.0), jnp.inf)
    lower = jnp.where(gamma > 0, nxt / jnp.where(gamma > 0, gamma, 1.0),
                      jnp.where(nxt > 0, jnp.inf, 0.0))
    lower = jnp.where(gamma > 0, lower, jnp.where(k == jnp.sum(a > 0), 0.0, jnp.inf))
    ok = (lam <= upper) & (lam >= lower * (1 - 8 * jnp.finfo(dt).eps))
    lam = jnp.maximum(lam[jnp.argmax(ok)], 0.0)
    inside = gamma * jnp.sum(a) + 0.5 * jnp.vdot(a, a) <= r
    return jnp.where(inside, 0.0, lam)


def project_elastic_net_ball(g: jax.Array, r, gamma) -> jax.Array:
    """argmin_w ½‖w − g‖² s.t. γ‖w‖₁ + ½‖w‖² ≤ r (paper 003 §5.5.2, eqs. 67–69), exact.

    For the multiplier λ of the constraint, wᵢ = sign(gᵢ) max(|gᵢ| − λγ, 0)/(1 + λ) (69);
    λ = 0 where g is in the ball, else the root of a decreasing piecewise function whose
    pieces are located by sorting |g| (no bisection; `_elastic_net_multiplier`). For a
    batch, `jax.vmap` it over the rows.

    Args:
        g: (n,) the point.
        r: the radius r > 0.
        gamma: γ ≥ 0 (γ = 0: the Euclidean ball of radius sqrt(2r)).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_elastic_net_ball
        >>> project_elastic_net_ball(jnp.array([3.0, -1.0, 0.1]), 1.5, 1.0).tolist()
        [1.0, -0.0, 0.0]
    """
    dt = g.dtype
    r, gamma = jnp.asarray(r, dt), jnp.asarray(gamma, dt)
    a = jnp.abs(g)
    lam = _elastic_net_multiplier(a, r, gamma)
    return jnp.sign(g) * jnp.maximum(a - lam * gamma, 0.0) / (1.0 + lam)


def elastic_net_ball_support(v: jax.Array, r, gamma) -> jax.Array:
    """sup_w ⟨v, w⟩ over {γ‖w‖₁ + ½‖w‖² ≤ r}: the conjugate of the ball's indicator.

    By duality it is min_{t ≥ 0} t r + Σᵢ (|vᵢ| − tγ)₊²/(2t), whose minimizer solves the same
    piecewise equation as the projection's multiplier (with 1 + λ replaced by t): t =
    sqrt(Σ_k vᵢ² / (2r + kγ²)) on the piece of the k largest |vᵢ|. The sup is attained at
    wᵢ = sign(vᵢ)(|vᵢ| − tγ)₊/t, where it is evaluated.
    """
    dt = v.dtype
    r, gamma = jnp.asarray(r, dt), jnp.asarray(gamma, dt)
    a = jnp.abs(v)
    s = jnp.sort(a)[::-1]
    k = jnp.arange(1, a.shape[0] + 1, dtype=dt)
    t = jnp.sqrt(jnp.cumsum(s * s) / (2 * r + k * gamma * gamma))
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    ok = (t * gamma <= s) & (t * gamma >= nxt * (1 - 8 * jnp.finfo(dt).eps))
    t = t[jnp.argmax(ok)]
    safe = jnp.where(t > 0, t, 1.0)
    w = jnp.sign(v) * jnp.maximum(a - t * gamma, 0.0) / safe
    return jnp.where(t > 0, jnp.vdot(v, w), 0.0)
