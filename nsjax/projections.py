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

One is not of that kind: `project_chain_marginals`, onto the local marginal polytope of a
chain (paper 004 App. E.3.1, M³N's dual domain), has one multiplier per edge and token, and
is found by semismooth Newton steps to a tolerance, then made exactly feasible.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.fused_sum import fused_reduce


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
        (least, largest, scale), _, _ = fused_reduce(
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
    _, (last,), (first,) = fused_reduce(maxima=(jnp.broadcast_to(high, shape),),
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
    (ax, slope), _, _ = fused_reduce(sums=(
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
    _, (left,), (right,) = fused_reduce(maxima=(jnp.broadcast_to(behind, shape),),
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


# ---------------------------------------------------------------------------------------
# Projection onto the local marginal polytope of a chain (paper 004, App. E.3.1).
#
# Inside, a batch of B instances is laid out (E, K, K, B): E = L − 1 edges, K labels, the
# batch last, so that every operation is elementwise over the batch (XLA on CPUs
# vectorizes those; a vmap would put the batch first). Sums over the K labels are written
# out as K-term sums: XLA fuses them with their operands into one loop, where a reduce
# over a middle axis is a loop of its own (about 3x slower here).
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
    by rows: XLA fuses the row updates into a few loops (a 3-D update per pivot is 3x
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
    # Adding a constant to an edge's m leaves the projection as it is (the edge's sum is
    # fixed), and m / total projects to α / total: so each edge's max is 0, total 1.
    x = (x - jnp.max(x, (1, 2), keepdims=True)) / total
    alpha, info = _chain_solve(x, max_steps, jnp.asarray(tol, dtype))
    alpha = total * _chain_repair(alpha)
    info = info._replace(**{f: getattr(info, f).reshape(batch)
                            for f in ("steps", "residual", "converged")})
    return jnp.moveaxis(alpha, -1, 0).reshape(m.shape), info


# One compilation per shape, dtype, max_steps and tol, also when called outside jit.
_chain_marginals_jit = jax.jit(_chain_marginals, static_argnames=("max_steps", "tol"))


def project_chain_marginals(m: jax.Array, total=1.0, *, max_steps: int = 50,
                            tol: float | None = None) -> jax.Array:
    """Euclidean projection onto the local marginal polytope of a chain (paper 004,
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
    500 instances with L = 10, K = 5 in float64 took 6–8 ms on one CPU core for the
    Pragam-like m above, 15–20 ms for Gaussian m.

    Args:
        m: (..., L − 1, K, K), m[..., t, a, b] for edge t and labels (a, b); any leading
            batch dimensions. Floating dtypes are kept (integers become the default
            float).
        total: the mass of every edge, > 0; a scalar (traced is fine).
        max_steps: the most Newton steps. An instance that has not converged by then
            (or that crawls, five steps in a row within 10 ``tol`` without halving its
            residual) is still repaired to be exactly feasible, only not optimal to
            ``tol``.
        tol: the residual at which to stop, in units of total (a Python float, or None
            for max(1e-10, 8 eps)). Never below the rounding of the sums: 2 K eps times
            1 + the spread of m / total.

    Returns:
        α, shaped and typed like m.

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
    m = jnp.asarray(m)
    if m.ndim < 3 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"m must have shape (..., L - 1, K, K) with L ≥ 2 and K ≥ 1 (the "
                         f"pairwise marginals of each edge of the chain); got {m.shape}")
    if isinstance(total, (int, float)) and not total > 0:
        raise ValueError(f"total must be positive; got {total}")
    return _chain_marginals_jit(m, total, max_steps=max_steps, tol=tol)[0]
