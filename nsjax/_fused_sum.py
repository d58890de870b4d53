"""A sum that XLA's CPU backend computes in one pass with the operations feeding it.

XLA's CPU backend (jaxlib 0.10) hands every large sum whose reducer is a plain addition to
YNNPACK, which cannot take in the operations computing the summed array when they are
gathers: XLA then writes that array out in full and YNNPACK reads it back. The row sums of
nsjax's sparse products, Σ_w value·v[index] over each chunk, are such sums (X w at 2.5 M
nonzeros: 2.9 M gathered terms, 23 MB in float64, written and read again).

`fused_sum` adds with the reducer a − (−b) instead: the same sum, rounding for rounding
(negation is exact, and a − (−b) is a + b in IEEE arithmetic), which YNNPACK does not
take, so XLA's own loop emitter sums while it gathers: one pass, with no write and read
of the gathered terms (measured: docs/design.md, "Measured design choices").
Other platforms sum as `jnp.sum` does.

Only for sums within one device: XLA's collectives take no reducer but the plain ones, so
a sum over an axis that `Problem.shard` splits (the examples) fails to compile with it.
The order of the additions is XLA's, not YNNPACK's, so results differ from `jnp.sum` in
the last bits. Derivatives are `jnp.sum`'s (a custom JVP): the sum is linear.

`fused_reduce` is the other one-pass helper: several sums, maxima and minima over the last
axis in one variadic reduce (the projections' passes, the line search's bisection).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def _sum_fused_on_cpu(x, axis):
    return jax.lax.reduce(x, jnp.zeros((), x.dtype), lambda a, b: a - (-b), (axis,))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _fused_sum(x, axis):
    return jax.lax.platform_dependent(x, cpu=lambda x: _sum_fused_on_cpu(x, axis),
                                      default=lambda x: jnp.sum(x, axis=axis))


@_fused_sum.defjvp
def _fused_sum_jvp(axis, primals, tangents):
    (x,), (dx,) = primals, tangents
    return _fused_sum(x, axis), jnp.sum(dx, axis=axis)


def fused_sum(x, axis: int = -1):
    """``jnp.sum(x, axis)`` for a float array, in one pass with the operations computing
    x on CPUs (module docstring).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax._fused_sum import fused_sum
        >>> fused_sum(jnp.arange(6.0).reshape(2, 3), axis=1).tolist()
        [3.0, 12.0]
    """
    return _fused_sum(x, axis % jnp.ndim(x))


def fused_reduce(sums=(), maxima=(), minima=()):
    """Sums, maxima and minima of same-shaped arrays over their last axis, in one pass: one
    variadic XLA reduce. Each result has its array's dtype. Returns (sums, maxima, minima),
    tuples in the order given.

    On CPUs, separate reductions of masked arrays cost several times more: each is its own
    loop, not fused with the others, and XLA may keep their shared parts as arrays.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax._fused_sum import fused_reduce
        >>> x = jnp.array([3.0, -1.0, 2.0])
        >>> (total, count), (top,), _ = fused_reduce(sums=(x, (x > 0).astype(jnp.int32)),
        ...                                         maxima=(x,))
        >>> float(total), int(count), float(top)
        (4.0, 2, 3.0)
    """
    ops = (*sums, *maxima, *minima)
    starts = [0] * len(sums) + [-jnp.inf] * len(maxima) + [jnp.inf] * len(minima)
    init = tuple(jnp.array(v, op.dtype) for v, op in zip(starts, ops, strict=True))
    kinds = (jnp.add,) * len(sums) + (jnp.maximum,) * len(maxima) + (jnp.minimum,) * len(minima)

    def combine(x, y):
        return tuple(f(a, b) for f, a, b in zip(kinds, x, y, strict=True))

    out = jax.lax.reduce(ops, init, combine, (ops[0].ndim - 1,))
    i, j = len(sums), len(sums) + len(maxima)
    return out[:i], out[i:j], out[j:]
