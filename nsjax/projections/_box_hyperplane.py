"""A weighted Euclidean projection onto a box cut by one hyperplane, exactly: the QP (64) of
Zhang et al. (2010), §5.5.1 (Alg. 7–8), and of Saha et al. (2009), App. B.

`project_box_section` (its result: `BoxSection`) finds the root of the multiplier's
monotone piecewise-linear g by Newton passes on its kinks, each candidate piece checked
exactly, with the papers' sort of the kinks as the fallback; the problem is rescaled by
powers of two first, the returned point is checked, and the derivatives are a custom JVP.
`box_section_in_range` is the search alone, for nsjax's own dual points.

References: see docs/references.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax._fused_sum import fused_reduce
from nsjax.projections._common import (
    _NO_EXPONENT,
    _arrays,
    _at,
    _check_finite,
    _check_like,
    _check_scalar,
    _check_steps,
    _check_vector,
    _dtype_of,
    _eps,
    _first,
    _float0_like,
    _host,
    _ilogb,
    _nan_unless,
    _pow2,
    _times_pow2,
    _traced,
)

# ---------------------------------------------------------------------------------------
# A box cut by a hyperplane
# ---------------------------------------------------------------------------------------


class BoxSection(NamedTuple):
    """The result of `project_box_section` and `project_capped_simplex`.

    Attributes:
        x: the projection, shaped like the point projected (see `project_box_section` for
            what it is when ``feasible`` is False).
        multiplier: ν, the multiplier of the equality: x = clip(m + ν a / w, lower, upper)
            to rounding. Where g (below) is zero on a whole interval, one ν of it (all give
            the same x). ±inf if the multiplier itself is beyond the dtype's range.
        feasible: True iff the returned x is feasible to rounding: finite, inside the box,
            and |aᵀx − b| ≤ (n + 8) eps (Σᵢ |aᵢ|(|xᵢ| + |mᵢ| where xᵢ is strictly inside its
            bounds) + |b|), the worst-case rounding of those sums; and b is inside [min, max]
            of aᵀx over the box to the rounding of those sums. So False where the set is
            empty (some lᵢ > uᵢ, an interval with no real point: lᵢ = +inf or uᵢ = −inf, or b
            outside that range), where an input was NaN or out of its domain (then x and ν
            are NaN), and should the search fail on data beyond its range (a multiplier
            that does not fit the dtype); never True for a NaN or inf x.
    """

    x: jax.Array
    multiplier: jax.Array
    feasible: jax.Array


def project_box_section(m, a, b, lower, upper, weights=None, *,
                        newton_steps: int = 32) -> BoxSection:
    """argmin_x Σᵢ wᵢ/2 (xᵢ − mᵢ)² subject to lᵢ ≤ xᵢ ≤ uᵢ and Σᵢ aᵢxᵢ = b, exactly.

    The QP (64) of Zhang et al. (2010), §5.5.1 (= Saha et al. 2009, App. B) with wᵢ = dᵢ²,
    σᵢ = aᵢ, z = b.
    By the KKT conditions x = x(ν) = clip(m + ν a / w, l, u), where ν is a root of

        g(ν) = Σᵢ aᵢ xᵢ(ν) − b,

    nondecreasing and piecewise linear, with kinks where a moving coordinate meets a bound
    (its slope aᵢ²/wᵢ switches on or off there). The root is found exactly: once the piece
    of g that holds it is known, the zero of that piece's line is the root, to rounding.

    The papers find that piece by a median search over the kinks (Alg. 7–8, O(n)) or by
    sorting them (O(n log n)). Neither pays with XLA: a median is a sort there, and on a
    CPU sorting the 2n kinks costs far more than a few passes over the data (a bisection
    like jaxopt's makes ~30, to a tolerance only). So the search
    pivots as Alg. 7–8 do, with cheaper pivots: Newton steps on g (one pass each for g and
    its slope; regula falsi with Illinois' rule when a step would leave the bracket) until
    the pivot seems to be in the root's piece; one more pass finds the two kinks around the
    pivot, and if the zero of the pivot's line lies between them it is the root (else the
    Newton steps go on). Random instances take 3–16 passes and a check or two (a flat,
    staircase-like g takes the most). Should that not happen within ``newton_steps``
    passes, the kinks are sorted and g found at all of them by cumulative sums (the
    papers' O(n log n) method), which settles any instance.

    Scaling. Before the search the problem is rescaled by powers of two, exactly (the
    search runs on the same numbers, only their exponents move): a by its largest |aᵢ|, w
    by the geometric middle of its largest and smallest entries, and m, the bounds and b
    only where their largest magnitude is within n·2⁶ of overflow, or so small that n eps
    times it would underflow, as far as keeps every sum of n terms in range. The data may
    then span the dtype's range (float32 near 3e38, weights from 1e-300 to 1e300 in
    float64): what is left is the multiplier itself, which must fit the dtype once scaled;
    where it cannot (kinks more than the dtype's range apart), the search fails and says
    so (``feasible`` False). The scales cost one pass over the data, the scaled copy of m
    (and of a, the bounds and w where they are arrays) one write, and the check of the
    result one pass.

    Handled: ties among kinks, aᵢ = 0 (xᵢ = clip(mᵢ, lᵢ, uᵢ)), infinite bounds (their
    kinks are at ∓inf and never crossed), lᵢ = uᵢ, and a flat g at the root.

    Infeasible input (only reaches the search under jit or vmap: concrete values are
    checked first, below) gives ``feasible=False`` and no NaN (for finite m, a, b, w):

    - an empty interval (lᵢ > uᵢ, lᵢ = +inf or uᵢ = −inf): no search; x = clip(m, min(l, u),
      max(l, u)) and ν = 0;
    - b outside [min, max] of aᵀx over the box: x is the box point nearest to b in aᵀx
      (each coordinate with aᵢ ≠ 0 at the bound that brings aᵀx closest to b, the others at
      clip(mᵢ, lᵢ, uᵢ)), and ν the first (last) kink, where x(ν) reaches it.

    NaN or ±inf in m, a, b or weights, NaN bounds, or weights ≤ 0, under jit or vmap: x and
    ν are NaN and ``feasible`` is False.

    Differentiable in m, a, b, lower, upper and weights (a custom JVP: on the free
    coordinates F, dxᵢ = dmᵢ + dν aᵢ/wᵢ + ν d(aᵢ/wᵢ), with dν from d(aᵀx) = db; at an
    active bound, that bound's tangent), in forward and reverse mode.

    Args:
        m: (n,), n ≥ 1, the point to project; finite.
        a: (n,) or scalar, the equality's coefficients (any sign, zeros allowed); finite.
        b: scalar, its right-hand side; finite, with min aᵀx ≤ b ≤ max aᵀx over the box.
        lower, upper: (n,) or scalars, the box, lower ≤ upper; ±inf allowed (lower < inf,
            upper > −inf), NaN not.
        weights: (n,) or scalar, finite wᵢ > 0 (dᵢ² in the papers); default 1.
        newton_steps: the most Newton passes before the kinks are sorted (0: sort at
            once). An int ≥ 0, or a traced one.

    Returns:
        `BoxSection` (x, multiplier ν, feasible) in the inputs' floating dtype. Pure and
        jit/vmap-able (vmap over rows solves many small blocks in one call).

    Raises:
        TypeError: a complex or non-numeric argument; newton_steps not an int.
        ValueError: m not a nonempty vector, b not a scalar, a/lower/upper/weights neither
            scalars nor shaped like m; and, for concrete values: NaN or ±inf in m, a, b or
            weights, NaN bounds, weights ≤ 0, lower > upper (or lower = +inf, upper =
            −inf), b outside [min, max] of aᵀx over the box (beyond rounding), or
            newton_steps < 0.

    Example:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_box_section
        >>> m = jnp.array([0.75, 0.25, -1.0])
        >>> sol = project_box_section(m, jnp.ones(3), 1.5, 0.0, 1.0)
        >>> sol.x.tolist(), sol.multiplier.tolist(), bool(sol.feasible)
        ([1.0, 0.5, 0.0], 0.25, True)
        >>> sol = jax.jit(project_box_section)(m, jnp.ones(3), 4.0, 0.0, 1.0)  # aᵀx ≤ 3
        >>> sol.x.tolist(), bool(sol.feasible)
        ([1.0, 1.0, 1.0], False)
        >>> project_box_section(m, jnp.ones(3), 4.0, 0.0, 1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: project_box_section: b = 4.0 is outside [0.0, 3.0], the range of aᵀx ...
    """
    fn = "project_box_section"
    _check_box_section(fn, m, a, b, lower, upper, weights)
    m, a, b, lower, upper, weights = _arrays(m, a, b, lower, upper, weights)
    _check_steps(fn, newton_steps)
    return _box_section_jit(m, a, b, lower, upper, weights, newton_steps=newton_steps)[0]


def _check_box_section(fn, m, a, b, lower, upper, weights):
    """`project_box_section`'s argument checks (shapes and dtypes; values if concrete)."""
    for name, v in (("m", m), ("a", a), ("b", b), ("lower", lower), ("upper", upper),
                    ("weights", weights)):
        if v is not None:
            _dtype_of(fn, name, v)
    n = _check_vector(fn, "m", np.shape(m))
    _check_scalar(fn, "b", np.shape(b))
    for name, v in (("a", a), ("lower", lower), ("upper", upper), ("weights", weights)):
        if v is not None:
            _check_like(fn, name, np.shape(v), "m", n)
    eps = _eps(*(v for v in (m, a, b, lower, upper, weights) if v is not None))
    if not _traced(m):
        _check_finite(fn, "m", m)
    if not _traced(a):
        _check_finite(fn, "a", a)
    if not _traced(b):
        _check_finite(fn, "b", b)
    if weights is not None and not _traced(weights):
        h = _host(weights)
        bad = ~(np.isfinite(h) & (h > 0))
        if bad.any():
            raise ValueError(f"{fn}: weights must be finite and > 0; weights{_at(bad)} is "
                             f"{_first(h, bad)}. Give every coordinate a positive weight "
                             "(a coordinate that must not move: lower = upper = its value).")
    if _traced(lower, upper):
        return
    lo, up = np.broadcast_arrays(_host(lower), _host(upper))
    for name, h in (("lower", lo), ("upper", up)):
        if np.isnan(h).any():
            raise ValueError(f"{fn}: {name} must not be NaN; {name}{_at(np.isnan(h))} is "
                             "nan. Use -inf / inf for no bound.")
    bad = ~((lo <= up) & (lo < np.inf) & (up > -np.inf))
    if bad.any():
        i = _at(bad)
        raise ValueError(f"{fn}: the box is empty: lower{i} = {_first(lo, bad)} and upper{i} = "
                         f"{_first(up, bad)}. Every lower must be <= its upper (and lower < "
                         "inf, upper > -inf).")
    if not _traced(a, b):
        least, largest, scale = _host_range(_host(a), lo, up, n)
        b_ = float(_host(b))
        slack = (n + 8) * eps * (scale + abs(b_))
        if not least - slack <= b_ <= largest + slack:
            raise ValueError(f"{fn}: b = {b_!r} is outside [{least!r}, {largest!r}], the "
                             "range of aᵀx over the box [lower, upper], so no x meets the "
                             "constraints. Choose b in that range (or widen the box).")


def _host_range(a, lower, upper, n):
    """(min, max) of aᵀx over the box, and Σ|aᵢ| |boundᵢ| over the finite ends, in float64
    on the host, without overflow (a and the bounds scaled by powers of two first: for the
    comparison with b only, which is scaled alike, the sums are returned unscaled and may
    then be ±inf)."""
    a, lower, upper = (np.broadcast_to(v, (n,)) for v in (a, lower, upper))
    moves = a != 0
    x_low = np.where(a > 0, lower, upper)[moves]
    x_high = np.where(a > 0, upper, lower)[moves]
    a = a[moves]
    if a.size == 0:
        return 0.0, 0.0, 0.0
    ends = np.concatenate([x_low, x_high])
    finite = np.isfinite(ends)
    ea = np.frexp(np.max(np.abs(a)))[1]
    eb = np.frexp(np.max(np.abs(ends[finite]), initial=0.0))[1]
    sa = np.ldexp(a, -ea)
    lo = np.sum(sa * np.ldexp(x_low, -eb)) if np.isfinite(x_low).all() else -np.inf
    hi = np.sum(sa * np.ldexp(x_high, -eb)) if np.isfinite(x_high).all() else np.inf
    scale = np.sum(np.abs(np.concatenate([sa, sa]) * np.where(finite, np.ldexp(ends, -eb), 0)))
    with np.errstate(over="ignore"):
        return tuple(float(np.ldexp(v, ea + eb)) for v in (lo, hi, scale))


# ---------------------------------------------------------------------------------------
# The parts of project_box_section.
#
# In the papers' variables (Zhang et al. 2010, §5.5.1: βᵢ = aᵢ(xᵢ − mᵢ), d̄ᵢ² = wᵢ/aᵢ², λ = ν),
# g(ν) = Σᵢ hᵢ(ν) − z′ with hᵢ(λ) = clip(λ/d̄ᵢ², l′ᵢ, u′ᵢ), whose kinks are d̄ᵢ²l′ᵢ and
# d̄ᵢ²u′ᵢ. Saha et al. (2009) write hᵢ in (30) without its λ/d̄ᵢ² term (it follows from
# (27): βᵢ = d̄ᵢ⁻²(ρᵢ⁺ − ρᵢ⁻ + λ)), and their Alg. 2 sorts dᵢ²l′ᵢ where d̄ᵢ²l′ᵢ is meant:
# typos; Zhang et al. (2010) have both right. (Eq. (65) of Zhang et al. (2010) starts from
# min_λ max_β; the saddle problem of the primal is min_β max_λ, which its next line's swap
# then gets right.)
#
# Nothing of size n is stored between passes: each pass recomputes what it needs from the
# inputs. On CPUs every n-sized temporary of a compiled program is fresh memory on each
# call, and its page faults cost more than recomputing (about as much as a whole pass
# per array); for the same reason the data are kept unbroadcast.
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

    box_ok: jax.Array  # every lᵢ ≤ uᵢ, lᵢ < inf, uᵢ > −inf (and the data valid)
    least: jax.Array  # min aᵀx over the box (−inf if unbounded)
    largest: jax.Array  # max aᵀx (inf if unbounded)
    rounding: jax.Array  # the rounding error of such sums, of g too: 8 eps (Σ|aᵢxᵢ| + |b|)
    feasible: jax.Array


def _range_of_ax(p: _Section, valid=True) -> _Range:
    """min and max of aᵀx over the box (aᵀm + Σ l′ᵢ and aᵀm + Σ u′ᵢ in the papers' terms),
    checked against b up to the rounding of those sums, and whether the box is nonempty
    (and the data ``valid``: else no search either)."""
    shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in p))
    moves = p.a != 0
    at_low = jnp.where(moves, p.a * jnp.where(p.a > 0, p.lower, p.upper), 0)  # never +inf
    at_high = jnp.where(moves, p.a * jnp.where(p.a > 0, p.upper, p.lower), 0)  # never −inf
    bad = ~((p.lower <= p.upper) & (p.lower < jnp.inf) & (p.upper > -jnp.inf))
    # Σ|aᵢxᵢ| over the finite ends: the scale of the sums' rounding (NaN flags a bad box).
    scale = (jnp.where(jnp.isfinite(at_low), jnp.abs(at_low), 0)
             + jnp.where(jnp.isfinite(at_high), jnp.abs(at_high), 0) + jnp.where(bad, jnp.nan, 0))
    # With a, l and u scalars the n terms are equal: no reduction (XLA would fold one of
    # constants at compile time, slowly for large n).
    if at_low.ndim == 0:
        least, largest, scale = (v * shape[-1] for v in (at_low, at_high, scale))
    else:
        (least, largest, scale), _, _ = fused_reduce(
            sums=tuple(jnp.broadcast_to(v, shape) for v in (at_low, at_high, scale)))
    box_ok = ~jnp.isnan(scale) & valid
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


def _multiplier(p: _Section, r: _Range, newton_steps: int, reach=jnp.inf):
    """A root ν of g: cheap Newton passes (`_steer`: g and its slope), safeguarded by
    regula falsi on a bracket, until the pivot seems to be in the root's piece; then one
    pass for the two kinks around that pivot (`_certify`): the zero of the pivot's line is
    the root, exactly, if it lies between them; else on with cheap passes. If that has
    not happened within ``newton_steps`` cheap passes, the kinks are sorted
    (`_sort_pass`, the papers' way), which settles any instance.

    No search where the box is empty (ν = 0) or b is at or past an end of the range of
    aᵀx (ν = that end's kink, 0 if there is none).

    ``reach``: the largest |ν| at which every yᵢ = mᵢ + ν aᵢ/wᵢ is sure to be finite. The
    sort measures its kinks from the last pivot only within it, else from 0 (a pivot far
    out, where the cheap passes failed on kinks many orders of magnitude apart, would
    overflow y or round the kinks near the root away).
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
    search = _lazily(~search.done, lambda: _sort_pass(p, search, reach), search)
    return search.nu, passes


class _Passes(NamedTuple):
    """How a root was found (for tests and benchmarks)."""

    cheap: jax.Array  # cheap passes (g and slope)
    checks: jax.Array  # passes for the kinks around a pivot
    sorted: jax.Array  # the kinks were sorted


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


def _sort_pass(p: _Section, s: _Search, reach=jnp.inf) -> _Search:
    """The papers' O(n log n) way: sort all 2n kinks, get g at each by cumulative sums of
    the slope and intercept changes, and solve the piece before the first kink with g ≥ 0.
    (Measured from the last pivot if it is within ``reach``, else from 0.)"""
    lo, hi = _bracket_by_sorting(p, jnp.where(jnp.abs(s.nu) <= reach, s.nu, 0))
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
    # Below every finite kink, the coordinates that never enter move, the others are low;
    # past every finite kink, those that never exit move, the others are high.
    slope0 = jnp.sum(jnp.where(enters, 0, s))
    intercept0 = jnp.sum(jnp.where(enters, s * low, 0) + p.a * y) - p.b
    slope_end = jnp.sum(jnp.where(exits, 0, s))
    intercept_end = jnp.sum(jnp.where(exits, s * high, 0) + p.a * y) - p.b
    # Crossing low: slope += sᵢ, intercept −= sᵢ·low; crossing high: the reverse.
    key = jnp.concatenate([jnp.where(enters, low, jnp.inf), jnp.where(exits, high, jnp.inf)])
    d_slope = jnp.concatenate([jnp.where(enters, s, 0), jnp.where(exits, -s, 0)])
    d_intercept = jnp.concatenate([jnp.where(enters, -s * low, 0), jnp.where(exits, s * high, 0)])
    key, d_slope, d_intercept = jax.lax.sort((key, d_slope, d_intercept), num_keys=1)
    # The running sums from the left and from the right (one scan each). A slope sᵢ that
    # is large next to the others (weights many orders of magnitude apart) swamps them
    # while it moves and leaves rounding error after it stops (the left sums past its
    # exit, the right ones before its entry), and that error times a large kink can turn
    # g's sign: at each kink the side whose sums are the smaller in magnitude (their
    # rounding bound) is used.
    left = jnp.cumsum(jnp.stack([d_slope, d_intercept, jnp.abs(d_slope),
                                 jnp.abs(d_intercept)]), axis=1)
    right = jnp.cumsum(jnp.stack([d_slope, d_intercept])[:, ::-1], axis=1)[:, ::-1]
    right = jnp.concatenate([right[:, 1:], jnp.zeros_like(right[:, :1])], axis=1)  # Σ_{>j}
    size = jnp.abs(key)
    from_left = (left[2] * size + left[3]
                 <= (left[2, -1] - left[2]) * size + (left[3, -1] - left[3]))
    slope = jnp.where(from_left, slope0 + left[0], slope_end - right[0])
    intercept = jnp.where(from_left, intercept0 + left[1], intercept_end - right[1])
    # g at each kink from the piece after it (g is continuous: ties need no care).
    g = jnp.where(key < jnp.inf, intercept + slope * key, jnp.inf)
    n2 = key.shape[0]
    # g is nondecreasing along the sorted kinks: the first kink where it is ≥ 0 (no count
    # of the negative ones: a rounding error far from the root cannot move the bracket).
    first = jnp.where(jnp.any(g >= 0), jnp.argmax(g >= 0), n2)
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


# ---------------------------------------------------------------------------------------
# project_box_section's scaling, its check of the result and its derivatives.
# ---------------------------------------------------------------------------------------


class _Scales(NamedTuple):
    """Powers of two (int32 exponents) that put the problem in range: x = 2^x x′ (m, the
    bounds alike), a = 2^a a′, b = 2^(a + x) b′, w = 2^w w′, hence ν = 2^(w + x − a) ν′."""

    x: jax.Array
    a: jax.Array
    w: jax.Array
    valid: jax.Array  # m, a, b, w finite, w > 0, no NaN bound
    reach: jax.Array  # |ν′| up to which m′ + ν′ a′/w′ is finite (`_multiplier`)


def _extremes(maxima=(), minima=()):
    """The maxima and minima of (n,) arrays and scalars: the arrays in one pass, a scalar
    as it is (no reduction of a broadcast scalar: XLA would fold it at compile time)."""
    mx = [v for v in maxima if jnp.ndim(v)]
    mn = [v for v in minima if jnp.ndim(v)]
    rmx, rmn = (), ()
    if mx or mn:
        shape = jnp.broadcast_shapes(*(jnp.shape(v) for v in (*mx, *mn)))
        _, rmx, rmn = fused_reduce(maxima=tuple(jnp.broadcast_to(v, shape) for v in mx),
                                   minima=tuple(jnp.broadcast_to(v, shape) for v in mn))
    rmx, rmn = iter(rmx), iter(rmn)
    return ([next(rmx) if jnp.ndim(v) else v for v in maxima],
            [next(rmn) if jnp.ndim(v) else v for v in minima])


def _scales(p: _Section) -> _Scales:
    """One pass: the scales, chosen from the largest |aᵢ|, the largest and smallest wᵢ and
    the largest of |mᵢ|, the finite |lᵢ|, |uᵢ| and |b|/2^a (see `project_box_section`)."""
    dt = p.m.dtype
    fi = jnp.finfo(dt)
    n = p.m.shape[-1]
    w_ok = (p.w > 0) & (p.w < jnp.inf)
    bad = (~jnp.isfinite(p.m) | ~jnp.isfinite(p.a) | ~w_ok | jnp.isnan(p.lower)
           | jnp.isnan(p.upper))

    def finite_abs(v):
        return jnp.where(jnp.isfinite(v), jnp.abs(v), 0)

    (size_m, size_l, size_u, size_a, w_max), (w_min,) = _extremes(
        maxima=(jnp.where(bad, jnp.inf, jnp.abs(p.m)), finite_abs(p.lower),
                finite_abs(p.upper), finite_abs(p.a), jnp.where(w_ok, p.w, 0)),
        minima=(jnp.where(w_ok, p.w, jnp.inf),))
    valid = (size_m < jnp.inf) & jnp.isfinite(p.b)
    e_a = _ilogb(size_a)
    e_a = jnp.where(e_a == _NO_EXPONENT, 0, e_a)
    e_w_max, e_w_min = _ilogb(w_max), _ilogb(jnp.where(w_min < jnp.inf, w_min, 0))
    e_w = jnp.where((e_w_max == _NO_EXPONENT) | (e_w_min == _NO_EXPONENT), 0,
                    (e_w_max + e_w_min) // 2)
    top = jnp.maximum(jnp.maximum(_ilogb(size_m), _ilogb(size_l)),
                      jnp.maximum(_ilogb(size_u), _ilogb(finite_abs(p.b)) - e_a))
    # Moved only where needed (ordinary data keep their exponents, so the search sees the
    # same numbers): down, so that sums of up to 2n terms |a′ᵢ x′ᵢ| < 2·2^(top − e_x + 1)
    # stay below 2^(maxexp − 2); up to 1, where n eps times the data would underflow.
    guard = math.ceil(math.log2(max(n, 1))) + 4
    e_x = jnp.where(top < _NO_EXPONENT // 2, 0,
                    jnp.where(top < fi.minexp + fi.nmant + guard, top,
                              jnp.maximum(0, top + guard - (fi.maxexp - 2))))
    # |a′/w′| < 2^(1 − ilogb(w′_min)), |m′| < 2^(maxexp − 2 − guard): |ν′ a′/w′| within
    # 2^(maxexp − 3) keeps y finite.
    e_reach = fi.maxexp - 4 + jnp.where(e_w_min == _NO_EXPONENT, 0, e_w_min - e_w)
    reach = jnp.where(e_reach >= fi.maxexp - 1, jnp.inf, _pow2(e_reach, dt))
    return _Scales(x=e_x.astype(jnp.int32), a=e_a, w=e_w.astype(jnp.int32), valid=valid,
                   reach=reach)


def _scaled(p: _Section, s: _Scales) -> _Section:
    neg = jnp.negative
    return _Section(m=_times_pow2(p.m, neg(s.x)), a=_times_pow2(p.a, neg(s.a)),
                    b=_times_pow2(p.b, neg(s.a + s.x)), lower=_times_pow2(p.lower, neg(s.x)),
                    upper=_times_pow2(p.upper, neg(s.x)), w=_times_pow2(p.w, neg(s.w)))


def _point_is_feasible(q: _Section, x, e_x):
    """One pass over the returned (scaled) point: finite, in the box, and aᵀx = b to the
    worst-case rounding of the sums involved, (n + 8) eps (Σ|aᵢxᵢ| + Σ_free |aᵢmᵢ| + |b|) (a
    free coordinate xᵢ = mᵢ + ν aᵢ/wᵢ carries the rounding of mᵢ); and x stays finite
    once scaled back."""
    shape = x.shape
    n = shape[-1]
    inside = (x >= q.lower) & (x <= q.upper)  # False for NaN
    free = (x > q.lower) & (x < q.upper)
    ax = q.a * x
    size = jnp.abs(ax) + jnp.where(free, jnp.abs(q.a * q.m), 0)
    (total, scale), (top,), _ = fused_reduce(
        sums=(jnp.broadcast_to(ax, shape), jnp.broadcast_to(size, shape)),
        maxima=(jnp.where(inside, jnp.abs(x), jnp.inf),))
    eps = jnp.finfo(x.dtype).eps
    limit = _times_pow2(jnp.asarray(jnp.finfo(x.dtype).max, x.dtype), -e_x)
    return ((jnp.abs(total - q.b) <= (n + 8) * eps * (scale + jnp.abs(q.b)))
            & jnp.isfinite(scale) & (top < jnp.inf) & (top <= limit))


def _box_solve(m, a, b, lower, upper, w, newton_steps):
    """(x, ν, feasible, passes), and what the derivatives need: the scaled problem, its x′,
    ν′ and range, and the scales."""
    p = _Section(m, a, b, lower, upper, w)
    s = _scales(p)
    q = _scaled(p, s)
    r = _range_of_ax(q, s.valid)
    nu, passes = _multiplier(q, r, newton_steps, s.reach)
    x = _box_point(q, r, nu)
    feasible = r.feasible & _point_is_feasible(q, x, s.x)
    nan = _nan_unless(s.valid, x.dtype)
    out = (_times_pow2(x, s.x) * nan, _times_pow2(nu, s.w + s.x - s.a) * nan, feasible,
           passes)
    return out, (q, x, nu, r, s)


@jax.custom_jvp
def _box_core(m, a, b, lower, upper, w, newton_steps):
    return _box_solve(m, a, b, lower, upper, w, newton_steps)[0]


@_box_core.defjvp
def _box_core_jvp(primals, tangents):
    """The derivative of x(m, a, b, l, u, w) on the piece of g that holds the root (in the
    scaled problem, so nothing overflows): free coordinates F (strictly inside their
    bounds) move as dxᵢ = dmᵢ + dν dᵢ + ν ddᵢ with dᵢ = aᵢ/wᵢ; a coordinate at a bound
    follows that bound; dν makes d(aᵀx) = db. Where no coordinate with aᵢ ≠ 0 is free (a
    vertex, or b at or past an end of its range) or the box is empty, dν = 0."""
    out, (q, x, nu, r, s) = _box_solve(*primals)
    dm, da, db, dl, du, dw = tangents[:6]
    neg = jnp.negative
    dm, dl, du = (_times_pow2(t, neg(s.x)) for t in (dm, dl, du))
    da, db, dw = _times_pow2(da, neg(s.a)), _times_pow2(db, neg(s.a + s.x)), _times_pow2(
        dw, neg(s.w))
    shape = x.shape
    free = (x > q.lower) & (x < q.upper)
    at_lower = ~free & (x <= q.lower)
    d = q.a / q.w
    dd = (da - d * dw) / q.w
    slope = jnp.sum(jnp.broadcast_to(jnp.where(free, q.a * d, 0), shape))
    moving = jnp.where(free, dm + nu * dd, 0)
    bound = jnp.where(free, 0, jnp.where(at_lower, dl, du))
    rest = jnp.sum(jnp.broadcast_to(da * x + q.a * (moving + bound), shape))
    solvable = r.box_ok & (slope > 0)
    dnu = jnp.where(solvable, (db - rest) / jnp.where(solvable, slope, 1), 0)
    dx = jnp.where(free, dm + dnu * d + nu * dd, jnp.where(at_lower, dl, du))
    nan = _nan_unless(s.valid, x.dtype)
    dx = _times_pow2(jnp.broadcast_to(dx, shape), s.x) * nan
    dnu = _times_pow2(dnu, s.w + s.x - s.a) * nan
    _, _, feasible, passes = out
    return out, (dx, dnu, _float0_like(feasible), type(passes)(*map(_float0_like, passes)))


def _box_section(m, a, b, lower, upper, weights=None, *, newton_steps: int = 32):
    """`project_box_section` without its argument checks, and the passes it made (for tests
    and benchmarks)."""
    p = _section(m, a, b, lower, upper, weights)
    x, nu, feasible, passes = _box_core(*p, jnp.asarray(newton_steps, jnp.int32))
    return BoxSection(x, nu, feasible), passes


# One compilation per shape and dtype, also when called outside jit (newton_steps traced).
_box_section_jit = jax.jit(_box_section)


def box_section_in_range(m, a, b, lower, upper, weights=None, *,
                         newton_steps: int = 32) -> BoxSection:
    """`project_box_section` for data known to be finite and well inside the dtype's range
    (nsjax's own dual points: β in a box of width ≤ 1, labels ±1, weights of a checked
    problem): the search alone, with no rescaling, no check of the returned point
    (``feasible`` is the range test before the search) and no custom derivative, so that
    the solvers' programs stay small. Traced arguments only; no argument checks."""
    p = _section(m, a, b, lower, upper, weights)
    r = _range_of_ax(p)
    nu, _ = _multiplier(p, r, jnp.asarray(newton_steps, jnp.int32))
    return BoxSection(_box_point(p, r, nu), nu, r.feasible)

