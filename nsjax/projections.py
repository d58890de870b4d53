"""Exact Euclidean projections: pure functions, jit- and vmap-able, on the device.

Each follows the pattern of the exact line search (DESIGN.md): find the kinks of a
piecewise-linear dual function, sort them, accumulate with `cumsum`, locate the root and
solve the linear piece there. The simplex is here now; the box with one linear equality
and the elastic-net ball come with the Nesterov solvers.
"""

from __future__ import annotations

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
