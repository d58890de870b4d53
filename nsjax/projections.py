"""Exact Euclidean projections: pure functions, jit- and vmap-able, on the device.

Each finds the root of a monotone piecewise-linear function of one multiplier exactly: the
kinks are located, g is known in closed form between neighbouring kinks, and the root is the
zero of the linear piece that holds it (no tolerance).

- `project_simplex`: the probability simplex (sort, cumsum, locate).
- `project_box_section`: a weighted projection onto a box cut by one hyperplane, the QP of
  Zhang et al. (2010), §5.5.1 (Alg. 7–8) and Saha et al. (2009), App. B; the piece is found
  by Newton steps on the kinks, with sorting as the fallback.
- `project_capped_simplex`: {x ∈ [0, cap]ⁿ, Σx = 1}, LPBoost's domain.
- `entropic_capped_simplex`: the same set in the entropy geometry (a Bregman projection:
  the soft-max, capped), the prox of the `nsjax.regularizers.Entropy` regularizer.
- `project_elastic_net_ball`: {γ‖w‖₁ + ½‖w‖² ≤ r} (Zhang et al. 2010, §5.5.2; sort-based, exact),
  with `elastic_net_ball_support`, its support function.

One is not of that kind: `project_chain_marginals`, onto the local marginal polytope of a
chain (Saha et al. 2009, App. E.3.1, M³N's dual domain), has one multiplier per edge and token, and
is found by semismooth Newton steps to a tolerance, then made exactly feasible.

The contract every function here keeps (each docstring says what it means for its own
arguments):

- Domain: real inputs of any floating dtype (integers and bools are promoted to the
  default float), across the whole floating-point range. Nothing is summed or squared
  before it is scaled: inputs are shifted or scaled by powers of two (exact) so that no
  intermediate overflows, and constants such as the simplex's 1 are kept (a sum of 1 for
  float32 entries of size 3e7 or 3e38). XLA on CPUs flushes subnormal numbers to zero:
  subnormal inputs count as zero there, and results are exact to that.
- Wrong arguments are refused before anything is traced or compiled, with a TypeError
  (complex, string or object dtypes; a mask that is not bool) or a ValueError (shapes: an
  empty or mismatched argument; values: NaN or ±inf where a finite number is needed, bounds
  the wrong way round, an infeasible right-hand side or cap, a nonpositive weight or
  radius) that names the argument as the caller spelled it and says what to pass instead.
  The value checks need the values: under `jax.jit`, `jax.vmap` or a derivative (traced
  arguments) they are skipped, and the result says it instead: NaN where an input was
  NaN or out of its domain (with ``feasible`` False where there is such a flag), and the
  documented infeasible result where the constraints cannot be met.
- ``feasible`` (`BoxSection`) is computed on the returned point itself, after the search:
  True only when that point is finite, inside the box and meets the equality to the
  rounding of its sums; never True for NaN or inf.
- Derivatives: `project_simplex`, `project_box_section`, `project_capped_simplex`,
  `entropic_capped_simplex`, `project_elastic_net_ball` and `elastic_net_ball_support` have
  a custom JVP, the analytic Jacobian of the projection (on the free coordinates the
  projection onto the constraint's tangent space, zero on the active bounds), so
  `jax.jvp`, `jax.jacfwd`, `jax.grad` and `jax.jacrev` all work (also under jit and vmap).
  At a kink (a coordinate exactly at a bound with a zero multiplier) it is one of the
  one-sided derivatives. `project_chain_marginals` is differentiable in forward mode only
  (through its solver's loop).

References: see docs/references.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.fused_sum import fused_reduce

# ---------------------------------------------------------------------------------------
# Argument checks: in Python and numpy, before anything is traced or compiled. Shapes and
# dtypes are always checked; values only where they are concrete (not under jit or vmap).
# ---------------------------------------------------------------------------------------


def _traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def _dtype_of(fn: str, name: str, x) -> np.dtype:
    """The dtype of argument ``name``; a TypeError unless it is real (float, int or bool)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(x).dtype
        except (TypeError, ValueError) as e:  # ragged nesting and the like
            raise TypeError(f"{fn}: {name} must be a real number or array; got a "
                            f"{type(x).__name__} that is neither ({e})") from None
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"{fn}: {name} must be real; got the complex dtype {dtype}. Pass its "
                        f"real part ({name}.real) or its modulus (abs({name})), whichever you "
                        "mean.")
    if not any(jnp.issubdtype(dtype, t) for t in (jnp.floating, jnp.integer, jnp.bool_)):
        raise TypeError(f"{fn}: {name} must be a real number or array (a float, int or bool "
                        f"dtype); got dtype {dtype}. Convert it first, e.g. "
                        f"numpy.asarray({name}, dtype=float).")
    return np.dtype(dtype)


def _arrays(*xs):
    """Lists and tuples as numpy arrays (a jitted function would take them as pytrees of
    scalars); anything else as it is (Python scalars stay weakly typed)."""
    return tuple(np.asarray(x) if isinstance(x, (list, tuple)) else x for x in xs)


def _host(x) -> np.ndarray:
    """A concrete argument's values in float64 on the host (exact for every float dtype)."""
    return np.asarray(x).astype(np.float64)


def _at(bad: np.ndarray) -> str:
    """'[i]' for the first True of ``bad`` (nothing for a scalar)."""
    if np.ndim(bad) == 0:
        return ""
    i = tuple(int(j) for j in np.argwhere(bad)[0])
    return f"[{i[0]}]" if len(i) == 1 else str(list(i))


def _first(values: np.ndarray, bad: np.ndarray):
    return values[tuple(np.argwhere(bad)[0])] if np.ndim(bad) else values


def _check_vector(fn: str, name: str, shape) -> int:
    """n for a nonempty vector (n,); else a ValueError naming ``name``."""
    if len(shape) != 1:
        raise ValueError(f"{fn}: {name} must be a vector, shape (n,); got shape {tuple(shape)}. "
                         f"For a batch of rows, use jax.vmap({fn}).")
    if shape[0] == 0:
        raise ValueError(f"{fn}: {name} is empty (shape (0,)); pass at least one entry (there "
                         "is nothing to project in zero dimensions).")
    return shape[0]


def _check_like(fn: str, name: str, shape, ref: str, n: int) -> None:
    if tuple(shape) not in ((), (n,)):
        raise ValueError(f"{fn}: {name} has shape {tuple(shape)} but {ref} has shape ({n},): "
                         f"{name} must be a scalar or have {ref}'s shape ({n},).")


def _check_scalar(fn: str, name: str, shape) -> None:
    if tuple(shape) != ():
        raise ValueError(f"{fn}: {name} must be a scalar; got shape {tuple(shape)}. For one "
                         f"value per row of a batch, use jax.vmap({fn}).")


def _check_finite(fn: str, name: str, x, what: str = "finite") -> np.ndarray:
    """x's values (float64) if concrete and finite; a ValueError at the first NaN or ±inf."""
    h = _host(x)
    bad = ~np.isfinite(h)
    if bad.any():
        raise ValueError(f"{fn}: {name} must be {what}; {name}{_at(bad)} is "
                         f"{_first(h, bad)}. Replace or drop the non-finite entries (NaN and "
                         "±inf have no projection).")
    return h


def _check_steps(fn: str, newton_steps) -> None:
    dtype = _dtype_of(fn, "newton_steps", newton_steps)
    if not jnp.issubdtype(dtype, jnp.integer) or np.ndim(newton_steps) != 0:
        raise TypeError(f"{fn}: newton_steps must be an int (the most Newton passes before "
                        f"sorting); got {newton_steps!r}.")
    if not _traced(newton_steps) and int(newton_steps) < 0:
        raise ValueError(f"{fn}: newton_steps must be >= 0 (0: sort at once); got "
                         f"{int(newton_steps)}.")


def _eps(*values) -> float:
    """The machine epsilon of the dtype the arguments compute in (Python scalars are weakly
    typed: float32 data with b = 1.0 compute in float32)."""
    return float(jnp.finfo(jnp.result_type(float, *_arrays(*values))).eps)


# ---------------------------------------------------------------------------------------
# Powers of two: exact scalings (XLA has no ldexp; jnp.ldexp goes through pow).
# ---------------------------------------------------------------------------------------

_NO_EXPONENT = -(1 << 14)  # "⌊log2 0⌋": below every float's exponent range


def _ilogb(x):
    """⌊log2 x⌋ (int32) for x ≥ the smallest normal number; `_NO_EXPONENT` for 0 and the
    subnormal numbers (which XLA on CPUs flushes to 0). x ≥ 0 and finite."""
    tiny = jnp.finfo(x.dtype).tiny
    _, e = jnp.frexp(jnp.where(x >= tiny, x, 1))
    return jnp.where(x >= tiny, e - 1, _NO_EXPONENT).astype(jnp.int32)


def _pow2(k, dtype):
    """2^k exactly, for integer k in the normal range of ``dtype`` (by its bits)."""
    fi = jnp.finfo(dtype)
    itype = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[jnp.dtype(dtype).itemsize]
    k = jnp.clip(k, fi.minexp, fi.maxexp - 1).astype(itype)
    return jax.lax.bitcast_convert_type((k + (fi.maxexp - 1)) << fi.nmant, dtype)


def _times_pow2(x, k):
    """x·2^k (k an int32 scalar), exact unless the result over- or underflows: in three
    factors, each a normal number, applied in turn (the partial products lie between x and
    the result, so none over- or underflows before the result would)."""
    fi = jnp.finfo(x.dtype)
    k1 = jnp.clip(k, fi.minexp, fi.maxexp - 1)
    k2 = jnp.clip(k - k1, fi.minexp, fi.maxexp - 1)
    return x * _pow2(k1, x.dtype) * _pow2(k2, x.dtype) * _pow2(k - k1 - k2, x.dtype)


def _nan_unless(ok, dtype):
    """1 where ok, NaN elsewhere: a factor that makes a value (or a tangent: it is linear)
    NaN where its input was invalid."""
    return jnp.where(ok, 1, jnp.nan).astype(dtype)


def _float0_like(x):
    return np.zeros(np.shape(x), dtype=jax.dtypes.float0)


# ---------------------------------------------------------------------------------------
# The probability simplex
# ---------------------------------------------------------------------------------------


def project_simplex(v: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """argmin_x ‖x − v‖² over {x ≥ 0, Σx = 1, x = 0 off ``mask``} (sort-based, exact).

    The entries in use are first shifted by their largest (the projection does not change)
    and those more than 2 below it raised to −2 (no such entry is in the support, as the
    shift θ below is ≥ −1): every sum is then of numbers in [−2, 0], which neither
    overflows nor loses the 1, whatever the size of v (float32 entries of 3e7 or 3e38 give a
    sum of 1 to rounding), and an entry of the support is shifted exactly. Sort those in
    decreasing order u_1 ≥ u_2 ≥ …, take the largest k with u_k − (Σ_{j≤k} u_j − 1)/k > 0,
    and shift every entry by θ = (Σ_{j≤k} u_j − 1)/k before clipping at 0. For a batch,
    `jax.vmap` it over the rows.

    Differentiable (a custom JVP): on the support S the Jacobian is I − 11ᵀ/|S|, zero off it.

    Args:
        v: (n,), n ≥ 1, real; finite on ``mask`` (entries off it are ignored, NaN included).
        mask: (n,) bool, the entries allowed to be nonzero (at least one); default all.

    Returns:
        x, shaped like v, in v's floating dtype (the default float for integer v).

    Raises:
        TypeError: v complex or not numeric; mask not bool.
        ValueError: v not a nonempty vector; mask of another shape; and, for concrete
            values, v not finite on the mask or a mask with no True entry. Under jit or
            vmap those give x = NaN instead.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_simplex
        >>> project_simplex(jnp.array([0.5, 0.5, 2.0])).tolist()
        [0.0, 0.0, 1.0]
        >>> project_simplex(jnp.array([1.0, 0.0]), mask=jnp.array([False, True])).tolist()
        [0.0, 1.0]
        >>> project_simplex(jnp.array([3e7, 3e7 + 2, 3e7 - 2], jnp.float32)).tolist()
        [0.0, 1.0, 0.0]
    """
    fn = "project_simplex"
    _dtype_of(fn, "v", v)
    v = jnp.asarray(v)
    _check_vector(fn, "v", v.shape)
    if mask is not None:
        if _dtype_of(fn, "mask", mask) != np.bool_:
            raise TypeError(f"{fn}: mask must be a bool array (True where x may be nonzero); "
                            f"got dtype {_dtype_of(fn, 'mask', mask)}. Pass mask != 0 (or "
                            "mask.astype(bool)).")
        mask = jnp.asarray(mask)
        if mask.shape != v.shape:
            raise ValueError(f"{fn}: mask has shape {mask.shape} but v has shape {v.shape}: "
                             "mask must have v's shape.")
    if not _traced(v, mask):
        use = np.ones(v.shape, bool) if mask is None else np.asarray(mask)
        if not use.any():
            raise ValueError(f"{fn}: mask has no True entry, so the set is empty; allow at "
                             "least one entry.")
        h = _host(v)
        bad = use & ~np.isfinite(h)
        if bad.any():
            raise ValueError(f"{fn}: v must be finite where mask is True; v{_at(bad)} is "
                             f"{_first(h, bad)}. Replace the non-finite entries, or mask "
                             "them out.")
    return _simplex_jit(v, mask)


def _in_float(x, *scalars):
    """x in a floating dtype (float for integers), and ``scalars`` in that dtype: what the
    jitted entry points below compute in."""
    x = jnp.asarray(x)
    x = x.astype(jnp.result_type(float, x.dtype))
    return (x, *(jnp.asarray(c, x.dtype) for c in scalars))


@jax.jit
def _simplex_jit(v, mask):
    (v,) = _in_float(v)
    return _simplex(v, jnp.ones(v.shape, bool) if mask is None else mask)


def _simplex_parts(v, mask):
    """(x, whether the input was valid: finite on a nonempty mask)."""
    n, dt = v.shape[0], v.dtype
    vm = jnp.where(mask, v, -jnp.inf)
    top = jnp.max(vm)
    valid = jnp.isfinite(top) & jnp.all(jnp.isfinite(v) | ~mask)
    d = vm - top  # ≤ 0 on the mask; exact within 1 of the top for |top| ≥ 2 (Sterbenz)
    u = jnp.sort(jnp.maximum(d, -2.0))[::-1]  # −inf (off the mask, or overflow): −2
    css = jnp.cumsum(u)
    k = jnp.arange(1, n + 1, dtype=dt)
    ok = u - (css - 1.0) / k > 0
    rho = jnp.max(jnp.where(ok, jnp.arange(n), 0))
    theta = (css[rho] - 1.0) / (rho + 1.0)
    x = jnp.where(mask, jnp.maximum(d - theta, 0.0), 0.0)
    return x * _nan_unless(valid, dt), valid


@jax.custom_jvp
def _simplex(v, mask):
    return _simplex_parts(v, mask)[0]


@_simplex.defjvp
def _simplex_jvp(primals, tangents):
    v, mask = primals
    dv = tangents[0]
    x, valid = _simplex_parts(v, mask)
    support = x > 0
    count = jnp.maximum(jnp.sum(support), 1).astype(x.dtype)
    mean = jnp.sum(jnp.where(support, dv, 0)) / count
    return x, jnp.where(support, dv - mean, 0) * _nan_unless(valid, x.dtype)


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


def project_capped_simplex(v, cap, *, newton_steps: int = 32) -> BoxSection:
    """argmin_x ‖x − v‖² over {x ∈ [0, cap]ⁿ, Σx = 1} (LPBoost's domain), exactly.

    `project_box_section` with a = 1, b = 1 and the box [0, cap] (Zhang et al. 2010, §5.5.1;
    Saha et al. 2009, App. B), with its scaling, its ``feasible`` and its derivatives (in v and
    cap).
    ``cap`` may be traced (a scalar; per row under vmap). The set is empty when n·cap < 1
    (beyond rounding): concrete, that is a ValueError; traced, ``feasible`` is False and
    x = cap·1, the box point with the largest sum (x = clip(v, cap, 0) if cap < 0). With
    cap ≥ 1 this is the simplex projection (`project_simplex`), from O(n) passes instead
    of a sort.

    Args:
        v: (n,), n ≥ 1, the point to project; finite.
        cap: scalar, the upper bound of every coordinate, n·cap ≥ 1 (inf: no cap).
        newton_steps: as in `project_box_section`.

    Returns:
        `BoxSection` (x, multiplier ν: x = clip(v + ν, 0, cap), feasible).

    Raises:
        TypeError, ValueError: as `project_box_section`, naming v and cap: v not a
            nonempty finite vector, cap not a scalar, NaN, or (concrete) below 1/n.

    Example:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_capped_simplex
        >>> project_capped_simplex(jnp.array([3.0, 1.0, 0.0, 0.0]), 0.5).x.tolist()
        [0.5, 0.5, 0.0, 0.0]
        >>> sol = jax.jit(project_capped_simplex)(jnp.array([3.0, 1.0, 0.0, 0.0]), 0.125)
        >>> sol.x.tolist(), bool(sol.feasible)
        ([0.125, 0.125, 0.125, 0.125], False)
    """
    fn = "project_capped_simplex"
    _dtype_of(fn, "v", v)
    _dtype_of(fn, "cap", cap)
    n = _check_vector(fn, "v", np.shape(v))
    _check_scalar(fn, "cap", np.shape(cap))
    _check_steps(fn, newton_steps)
    if not _traced(v):
        _check_finite(fn, "v", v)
    if not _traced(cap):
        c = float(_host(cap))
        eps = _eps(v, cap)
        if math.isnan(c) or not n * c >= 1 - (n + 8) * eps * (n * abs(c) + 1):
            raise ValueError(f"{fn}: cap = {c!r} is below 1/n = 1/{n}, so no x in [0, cap]^n "
                             "sums to 1. Use cap >= 1/n (inf for no cap).")
    v, cap = _arrays(v, cap)
    return _box_section_jit(v, 1, 1, 0, cap, None, newton_steps=newton_steps)[0]


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


# ---------------------------------------------------------------------------------------
# The capped simplex in the entropy geometry
# ---------------------------------------------------------------------------------------


def entropic_capped_simplex(logits: jax.Array, cap=1.0) -> jax.Array:
    """argmax_x ⟨logits, x⟩ − Σ xᵢ log xᵢ over {x ∈ [0, cap]ⁿ, Σx = 1} (sort-based, exact).

    Without the cap (cap ≥ 1) this is the soft-max of ``logits``; with it, the relative-
    entropy (KL) projection of the soft-max onto the capped simplex, which scales the
    uncapped entries by one constant: xᵢ = min(cap, c·pᵢ) with p the soft-max (the KKT
    conditions of the concave objective; the Ω* of Zhang et al. (2010), Example 5, where the
    multipliers βᵢ of the caps are positive exactly on the capped entries). With the logits
    sorted in decreasing order and the k largest entries capped, c·p_j = exp(l_j − lse_{>k} +
    log(1 − k·cap)), lse_{>k} the log-sum-exp of the others; k is the smallest count at which the
    largest uncapped entry is ≤ cap. All in log space relative to the largest logit, so
    logits of any size give no overflow and no 0/0. For a batch, `jax.vmap` it over the
    rows.

    The set is empty in this geometry when fewer than 1/cap logits are finite (an entry
    with logit −inf stays 0): then the result is NaN, concrete or traced (a documented
    result, not an error). NaN or +inf logits (or a NaN cap) under jit or vmap give NaN.

    Differentiable (a custom JVP): on the uncapped entries U, dxᵢ = xᵢ(dlᵢ − Σ_U xⱼ dlⱼ/F)
    − xᵢ k dcap/F with F = 1 − k·cap their mass and k the number capped; dcap on the
    capped ones.

    Args:
        logits: (n,), n ≥ 1, reals or −inf (weight 0), at least one finite; no NaN or +inf.
        cap: ν, a scalar (not NaN); n·ν ≥ 1 for a nonempty set (else NaN); ν ≥ 1 is no cap.

    Raises:
        TypeError: complex or non-numeric arguments.
        ValueError: logits not a nonempty vector, cap not a scalar; and, for concrete
            values, NaN or +inf logits, all logits −inf, or a NaN cap.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import entropic_capped_simplex
        >>> [round(v, 6) for v in entropic_capped_simplex(jnp.log(jnp.array([1.0, 1, 2]))).tolist()]
        [0.25, 0.25, 0.5]
        >>> [round(v, 6) for v in entropic_capped_simplex(jnp.array([0.0, 0, 5]), 0.4).tolist()]
        [0.3, 0.3, 0.4]
    """
    fn = "entropic_capped_simplex"
    _dtype_of(fn, "logits", logits)
    _dtype_of(fn, "cap", cap)
    logits = jnp.asarray(logits)
    _check_vector(fn, "logits", logits.shape)
    _check_scalar(fn, "cap", np.shape(cap))
    if not _traced(logits):
        h = _host(logits)
        bad = np.isnan(h) | (h == np.inf)
        if bad.any():
            raise ValueError(f"{fn}: logits must be real numbers or -inf; logits{_at(bad)} is "
                             f"{_first(h, bad)}. Replace NaN and +inf entries.")
        if not (h > -np.inf).any():
            raise ValueError(f"{fn}: every entry of logits is -inf, so no point has finite "
                             "entropy; give at least one finite logit.")
    if not _traced(cap) and math.isnan(float(_host(cap))):
        raise ValueError(f"{fn}: cap is NaN; pass a number (>= 1/n; >= 1 for no cap).")
    return _entropic_jit(logits, *_arrays(cap))


@jax.jit
def _entropic_jit(logits, cap):
    return _entropic(*_in_float(logits, cap))


def _entropic_parts(logits, cap):
    """(x, capped entries, whether the input was valid and the set nonempty)."""
    n, dt = logits.shape[0], logits.dtype
    top = jnp.max(logits)
    valid = (top > -jnp.inf) & (top < jnp.inf) & ~jnp.any(jnp.isnan(logits)) & ~jnp.isnan(cap)
    # Relative to the largest: exp's argument is then exact where it matters (near 0).
    logits = logits - top
    lsorted = jnp.sort(logits)[::-1]
    # lse of the entries after the k largest, k = 0 … n−1 (a reversed running log-sum-exp).
    rest = jax.lax.cumlogsumexp(lsorted, reverse=True)
    k = jnp.arange(n, dtype=dt)
    free = 1.0 - k * cap  # the mass left to the uncapped entries
    log_free = jnp.log(jnp.where(free > 0, free, 1.0))
    # With k capped, the largest uncapped entry (sorted index k) is below the cap. (NaN,
    # never true, once only −inf logits are left: then too few are finite for the cap.)
    ok = (free > 0) & (lsorted - rest + log_free <= jnp.log(cap) + 4 * jnp.finfo(dt).eps)
    first = jnp.argmax(ok)  # the smallest such k (k = 0 where cap ≥ 1)
    # (l − lse) first: near the entries that matter the two are close, so it is exact.
    y = jnp.exp((logits - rest[first]) + log_free[first])
    x = jnp.minimum(y, cap)
    valid = valid & (n * cap >= 1.0) & jnp.any(ok)
    return x * _nan_unless(valid, dt), y >= cap, valid


@jax.custom_jvp
def _entropic(logits, cap):
    return _entropic_parts(logits, cap)[0]


@_entropic.defjvp
def _entropic_jvp(primals, tangents):
    logits, cap = primals
    dl, dcap = tangents
    x, capped, valid = _entropic_parts(logits, cap)
    dt = x.dtype
    uncapped = ~capped
    mass = jnp.sum(jnp.where(uncapped, x, 0))  # F = 1 − k·cap
    k = jnp.sum(capped).astype(dt)
    safe = jnp.where(mass > 0, mass, 1)
    dl = jnp.where(x > 0, dl, 0)  # entries at 0 (logit −inf) stay there
    mean = jnp.sum(jnp.where(uncapped, x * dl, 0)) / safe
    dx = jnp.where(uncapped, x * (dl - mean) - x * (k / safe) * dcap, dcap)
    return x, dx * _nan_unless(valid, dt)


# ---------------------------------------------------------------------------------------
# The elastic-net ball {γ‖w‖₁ + ½‖w‖² ≤ r} and its support function
# ---------------------------------------------------------------------------------------


def _check_ball(fn, name, g, r, gamma):
    """The elastic-net ball's argument checks; returns n."""
    _dtype_of(fn, name, g)
    _dtype_of(fn, "r", r)
    _dtype_of(fn, "gamma", gamma)
    n = _check_vector(fn, name, np.shape(g))
    _check_scalar(fn, "r", np.shape(r))
    _check_scalar(fn, "gamma", np.shape(gamma))
    if not _traced(g):
        _check_finite(fn, name, g)
    if not _traced(r):
        h = float(_host(r))
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"{fn}: r must be finite and > 0 (the ball's radius); got {h!r}.")
    if not _traced(gamma):
        h = float(_host(gamma))
        if not (math.isfinite(h) and h >= 0):
            raise ValueError(f"{fn}: gamma must be finite and >= 0 (the weight of the l1 "
                             f"norm; 0 for the Euclidean ball); got {h!r}.")
    return n


def _ball_valid(v, r, gamma):
    return jnp.all(jnp.isfinite(v)) & jnp.isfinite(r) & (r > 0) & jnp.isfinite(gamma) & (
        gamma >= 0)


class _Ratio(NamedTuple):
    """ρ_k = D_k / N_k as ρ̂_k·2^(e_d − e_n): ρ itself may be far below the normal range
    (‖g‖ ≫ sqrt(r)) while xρ is not."""

    hat: jax.Array
    e_n: jax.Array
    e_d: jax.Array

    def times(self, x):
        """xρ for 0 ≤ x ≤ 2^e_n (or its entries at one k: ``hat`` indexed first)."""
        return _times_pow2(_times_pow2(x, -self.e_n) * self.hat, self.e_d)

    def value(self):
        return _times_pow2(self.hat, self.e_d - self.e_n)


def _scaled_norms(s, gamma, r, plus_gamma: bool) -> _Ratio:
    """For s sorted decreasing (≥ 0): N_k = sqrt(Σ_{i≤k} (sᵢ + γ)²) (or of sᵢ² alone) and
    D_k = sqrt(2r + kγ²), k = 1 … n, returned as the ratio D_k / N_k, each computed from
    terms scaled by powers of two so that nothing squared overflows or underflows first."""
    dt = s.dtype
    n = s.shape[0]
    top = jnp.maximum(s[0], gamma) if plus_gamma else s[0]
    e1 = _ilogb(top) + 1
    e1 = jnp.where(e1 < _NO_EXPONENT // 2, 0, e1)
    t = _times_pow2(s, -e1) + (_times_pow2(gamma, -e1) if plus_gamma else 0)
    num = jnp.sqrt(jnp.cumsum(t * t))
    e2 = jnp.maximum(_ilogb(r) // 2, _ilogb(gamma)) + 1
    e2 = jnp.where(e2 < _NO_EXPONENT // 2, 0, e2)
    k = jnp.arange(1, n + 1, dtype=dt)
    gh = _times_pow2(gamma, -e2)
    den = jnp.sqrt(2 * _times_pow2(r, -2 * e2) + k * gh * gh)
    return _Ratio(den / num, e1, e2)


def _ball_parts(g, r, gamma):
    """The projection w, ρ = 1/(1 + λ) (λ the multiplier of the constraint), and validity.

    The root λ ≥ 0 of h(λ) = Σ_{aᵢ > γλ} ((aᵢ + γ)² − γ²(1 + λ)²) − 2r(1 + λ)², a = |g|
    (Zhang et al. 2010, §5.5.2, with its typos fixed: the paper's h carries −2γr and its H −rλγ; the
    envelope theorem gives H′(λ) = γ‖w(λ)‖₁ + ½‖w(λ)‖² − r, whence −2r). On the piece where
    the k largest aᵢ are active, (1 + λ)² = Σ_k (aᵢ + γ)² / (2r + kγ²), so ρ is one of
    `_scaled_norms`' ratios; the piece is the one where the k-th entry is active,
    (a_k + γ)ρ ≥ γ, and the next is not, (a_{k+1} + γ)ρ ≤ γ (to 8 ulps). Then
    wᵢ = sign(gᵢ) max(aᵢρ − γ(1 − ρ), 0), which is (aᵢ − λγ)₊/(1 + λ) without forming
    1 + λ (it overflows where ‖g‖ ≫ sqrt(r)); aᵢρ from ρ's mantissa and exponent apart
    (`_Ratio`: ρ itself may underflow). ρ = 1 where g is in the ball: γ‖a‖₁ + ½‖a‖² ≤ r,
    summed as Σ âᵢ(γ + aᵢ/2) ≤ r/c for â = a/c, c a power of two above max a."""
    dt = g.dtype
    a = jnp.abs(g)
    s = jnp.sort(a)[::-1]
    ratio = _scaled_norms(s, gamma, r, plus_gamma=True)
    rho = ratio.value()
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    ulps = 8 * jnp.finfo(dt).eps
    ok = ((ratio.times(s) >= gamma * (1 - rho))
          & (ratio.times(nxt) * (1 - ulps) <= gamma * (1 - rho)))
    ratio = ratio._replace(hat=ratio.hat[jnp.argmax(ok)])
    e = _ilogb(s[0]) + 1
    e = jnp.where(e < _NO_EXPONENT // 2, 0, e)
    inside = jnp.sum(_times_pow2(a, -e) * (gamma + a / 2)) <= _times_pow2(r, -e)
    keep = inside | (ratio.value() >= 1)  # λ = 0
    rho = jnp.where(keep, 1.0, ratio.value())
    t = jnp.maximum(jnp.where(keep, a, ratio.times(a)) - gamma * (1 - rho), 0.0)
    valid = _ball_valid(g, r, gamma)
    return jnp.sign(g) * t * _nan_unless(valid, dt), rho, inside, valid


def project_elastic_net_ball(g: jax.Array, r, gamma) -> jax.Array:
    """argmin_w ½‖w − g‖² s.t. γ‖w‖₁ + ½‖w‖² ≤ r (Zhang et al. 2010, §5.5.2, eqs. 67–69), exact.

    For the multiplier λ of the constraint, wᵢ = sign(gᵢ) max(|gᵢ| − λγ, 0)/(1 + λ) (69);
    λ = 0 where g is in the ball, else the root of a decreasing piecewise function whose
    pieces are located by sorting |g| (no bisection; `_ball_parts`). Computed through
    ρ = 1/(1 + λ) ∈ (0, 1] and with every sum of squares scaled by a power of two, so g of
    any size (float32 near 3e38, or tiny) with any r and γ gives no overflow. For a batch,
    `jax.vmap` it over the rows.

    Differentiable in g, r and γ (a custom JVP): the identity inside the ball; outside,
    on the active entries S (wᵢ ≠ 0), dwᵢ = sign(gᵢ)(ρ daᵢ − (1 − ρ) dγ − (γ + |wᵢ|) dμ),
    daᵢ = sign(gᵢ) dgᵢ, with dμ = ρ dλ from the constraint, 0 off S.

    Args:
        g: (n,), n ≥ 1, the point; finite.
        r: the radius, finite, r > 0.
        gamma: γ, finite, ≥ 0 (γ = 0: the Euclidean ball of radius sqrt(2r)).

    Raises:
        TypeError: complex or non-numeric arguments.
        ValueError: g not a nonempty vector, r or gamma not scalars; and, for concrete
            values, g not finite, r ≤ 0 or not finite, gamma < 0 or not finite. Under jit or
            vmap those give NaN.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_elastic_net_ball
        >>> project_elastic_net_ball(jnp.array([3.0, -1.0, 0.1]), 1.5, 1.0).tolist()
        [1.0, -0.0, 0.0]
    """
    _check_ball("project_elastic_net_ball", "g", g, r, gamma)
    return _ball_jit(*_arrays(g, r, gamma))


@jax.jit
def _ball_jit(g, r, gamma):
    return _ball(*_in_float(g, r, gamma))


@jax.custom_jvp
def _ball(g, r, gamma):
    return _ball_parts(g, r, gamma)[0]


@_ball.defjvp
def _ball_jvp(primals, tangents):
    """Outside the ball, with tᵢ = |wᵢ| on S: Σ_S ½tᵢ² + γtᵢ = r, tᵢ = (aᵢ + γ)ρ − γ. So
    dtᵢ = ρ daᵢ − (1 − ρ) dγ − (γ + tᵢ) dμ with dμ = ρ dλ, and Σ_S (γ + tᵢ) dtᵢ + tᵢ dγ = dr
    gives dμ. The sums are scaled by a power of two c above max(γ + tᵢ)."""
    g, r, gamma = primals
    dg, dr, dgamma = tangents
    w, rho, inside, valid = _ball_parts(g, r, gamma)
    dt = w.dtype
    t = jnp.abs(w)
    active = t > 0
    sgn = jnp.sign(g)
    da = sgn * dg
    e = _ilogb(jnp.max(t) + gamma) + 1
    e = jnp.where(e < _NO_EXPONENT // 2, 0, e)
    q = jnp.where(active, _times_pow2(gamma + t, -e), 0)  # (γ + t)/c
    dtq = jnp.where(active, rho * da - (1 - rho) * dgamma, 0)
    num = (jnp.sum(q * dtq) + jnp.sum(jnp.where(active, _times_pow2(t, -e), 0)) * dgamma
           - _times_pow2(dr, -e))
    den = jnp.sum(q * (gamma + t))  # Σ (γ + t)²/c
    dmu = jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 0)
    dw_out = jnp.where(active, sgn * (dtq - (gamma + t) * dmu), 0)
    dw = jnp.where(inside, dg, dw_out)
    return w, dw * _nan_unless(valid, dt)


def elastic_net_ball_support(v: jax.Array, r, gamma) -> jax.Array:
    """sup_w ⟨v, w⟩ over {γ‖w‖₁ + ½‖w‖² ≤ r}: the conjugate of the ball's indicator.

    By duality it is min_{t ≥ 0} t r + Σᵢ (|vᵢ| − tγ)₊²/(2t), whose minimizer solves the same
    piecewise equation as the projection's multiplier (with 1 + λ replaced by t): t =
    sqrt(Σ_k vᵢ² / (2r + kγ²)) on the piece of the k largest |vᵢ|. The sup is attained at
    wᵢ = sign(vᵢ)(|vᵢ| − tγ)₊/t, where it is evaluated. Through 1/t and scaled sums, as
    `project_elastic_net_ball`: no overflow short of a value that itself overflows (then
    inf).

    Differentiable (a custom JVP, Danskin's theorem): dσ = ⟨w, dv⟩ + t dr − Σ(|vᵢ| − tγ)₊ dγ.

    Args:
        v: (n,), n ≥ 1, finite.
        r, gamma: as in `project_elastic_net_ball`.

    Raises:
        TypeError, ValueError: as `project_elastic_net_ball`, naming v.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import elastic_net_ball_support
        >>> round(float(elastic_net_ball_support(jnp.array([3.0, -4.0]), 12.5, 0.0)), 12)
        25.0
    """
    _check_ball("elastic_net_ball_support", "v", v, r, gamma)
    return _support_jit(*_arrays(v, r, gamma))


@jax.jit
def _support_jit(v, r, gamma):
    return _support(*_in_float(v, r, gamma))


def _support_parts(v, r, gamma):
    """(σ, the maximizer w, t, validity)."""
    dt = v.dtype
    a = jnp.abs(v)
    s = jnp.sort(a)[::-1]
    inv_t = _scaled_norms(s, gamma, r, plus_gamma=False)  # 1/t_k (inf where s_≤k = 0)
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    ulps = 8 * jnp.finfo(dt).eps
    ok = (gamma <= inv_t.times(s)) & (inv_t.times(nxt) * (1 - ulps) <= gamma)
    inv_t = inv_t._replace(hat=inv_t.hat[jnp.argmax(ok)])
    zero = s[0] < jnp.finfo(dt).tiny  # v = 0 (or flushed): σ = 0, w = 0
    w = jnp.where(zero, 0.0, jnp.sign(v) * jnp.maximum(inv_t.times(a) - gamma, 0.0))
    e = inv_t.e_n
    sigma = _times_pow2(jnp.sum(_times_pow2(a, -e) * jnp.abs(w)), e)
    # t = 1/(1/t), from the mantissa (the exponent apart: t may be out of range).
    t = jnp.where(zero, 0.0, _times_pow2(1 / inv_t.hat, inv_t.e_n - inv_t.e_d))
    valid = _ball_valid(v, r, gamma)
    nan = _nan_unless(valid, dt)
    return jnp.where(zero, 0.0, sigma) * nan, w, t, valid


@jax.custom_jvp
def _support(v, r, gamma):
    return _support_parts(v, r, gamma)[0]


@_support.defjvp
def _support_jvp(primals, tangents):
    v, r, gamma = primals
    dv, dr, dgamma = tangents
    sigma, w, t, valid = _support_parts(v, r, gamma)
    slack = jnp.sum(jnp.maximum(jnp.abs(v) - t * gamma, 0.0))
    d = jnp.sum(w * dv) + t * dr - jnp.where(t > 0, slack, 0.0) * dgamma
    return sigma, d * _nan_unless(valid, sigma.dtype)


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
