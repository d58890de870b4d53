"""The capped simplex in the entropy geometry: `entropic_capped_simplex`, the capped
soft-max (a Bregman projection, sort-based and exact; the Ω* of Zhang et al. 2010,
Example 5), the prox of the `nsjax.regularizers.Entropy` regularizer.

References: see docs/references.md.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.projections._common import (
    _arrays,
    _at,
    _check_scalar,
    _check_vector,
    _dtype_of,
    _first,
    _host,
    _in_float,
    _nan_unless,
    _traced,
)

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

