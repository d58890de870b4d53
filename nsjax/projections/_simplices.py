"""Euclidean projections onto the probability simplex and onto the capped simplex.

`project_simplex` sorts (sort, cumsum, locate: exact). `project_capped_simplex`,
{x ∈ [0, cap]ⁿ, Σx = 1} (LPBoost's domain), is `project_box_section` with a = 1, b = 1 and
the box [0, cap] (Zhang et al. 2010, §5.5.1; Saha et al. 2009, App. B).

References: see docs/references.md.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.projections._box_hyperplane import BoxSection, _box_section_jit
from nsjax.projections._common import (
    _arrays,
    _at,
    _check_finite,
    _check_scalar,
    _check_steps,
    _check_vector,
    _dtype_of,
    _eps,
    _first,
    _host,
    _in_float,
    _nan_unless,
    _traced,
)

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
# The capped simplex: a box section
# ---------------------------------------------------------------------------------------


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

