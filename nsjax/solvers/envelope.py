"""Segmenting a pointwise maximum of lines, paper 000 Alg. 4, vectorised over examples.

For each example, ϱ(η) = max_p (b_p + η a_p) on [L, U] is convex and piecewise linear. Alg. 4
sorts the lines by their value at L, then sweeps them with a stack of (breakpoint, active
line) pairs: a new line either pops lines it dominates (their breakpoints move left of its
crossing) or becomes active at its crossing with the top line. Each line is pushed and popped
at most once: O(r log r) per example, dominated by the sort. Here the sweep is a
`fori_loop` over the r lines with a bounded `while_loop` for the pops, and `vmap` runs it
over all examples at once; the stack is a fixed-size array (r slots) and a top index.

Ties follow lines 10 and 16 of Alg. 4: a line crossing the top line exactly at L replaces it
when it is steeper, so the first active line is the steepest of those maximal at L (the
right derivative). Parallel lines never cross (their crossing is ±inf, never pushed), and
coincident or masked (b = −inf) lines are skipped (their crossing is NaN or infinite).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Envelope(NamedTuple):
    eta: jax.Array  # (r,) breakpoints: eta[0] = L, then ascending; +inf past `count`
    line: jax.Array  # (r,) index of the line active on [eta[j], eta[j+1]]; -1 past `count`
    count: jax.Array  # number of segments


def envelope(b, a, L=0.0, U=jnp.inf) -> Envelope:
    """Alg. 4 for one example: the breakpoints of max_p (b_p + η a_p) in [L, U]."""
    r = b.shape[0]
    y = b + L * a
    order = jnp.argsort(-y)
    etas = jnp.full(r, jnp.inf, b.dtype).at[0].set(L)
    lines = jnp.full(r, -1, jnp.int32).at[0].set(order[0].astype(jnp.int32))

    def crossing(new, old):
        return (b[new] - b[old]) / (a[old] - a[new])

    def add_line(q, stack):
        etas, lines, top = stack
        new = order[q]

        def should_pop(s):
            etas, lines, top = s
            x = crossing(new, lines[top])
            return (top >= 0) & (((L < x) & (x <= etas[top]))
                                 | ((x == L) & (a[new] > a[lines[top]])))

        def pop(s):
            etas, lines, top = s
            return etas.at[top].set(jnp.inf), lines.at[top].set(-1), top - 1

        etas, lines, top = jax.lax.while_loop(should_pop, pop, (etas, lines, top))
        x = jnp.where(top >= 0, crossing(new, lines[jnp.maximum(top, 0)]), L)
        steeper_at_L = (x == L) & ((top < 0) | (a[new] > a[lines[jnp.maximum(top, 0)]]))
        push = (top < 0) | ((L < x) & (x <= U) & jnp.isfinite(x)) | steeper_at_L
        push = push & jnp.isfinite(b[new])
        slot = top + 1
        etas = jnp.where(push, etas.at[slot].set(jnp.where(top < 0, L, x)), etas)
        lines = jnp.where(push, lines.at[slot].set(new.astype(jnp.int32)), lines)
        return etas, lines, jnp.where(push, slot, top)

    etas, lines, top = jax.lax.fori_loop(1, r, add_line, (etas, lines, jnp.zeros((), jnp.int32)))
    return Envelope(etas, lines, top + 1)


def envelope_kinks(b, a):
    """Kinks in η > 0 of every example's max of lines, and the slope jump at each.

    Args:
        b, a: (n, r) offsets and slopes (masked lines have b = −inf).

    Returns:
        (eta, jump), each (n, r): breakpoints η_j > 0 with jump a[ξ_j] − a[ξ_{j−1}] ≥ 0;
        eta = inf and jump = 0 in unused slots. The slope at 0⁺ is a[ξ_0].
    """
    env = jax.vmap(envelope)(b, a)
    slope = jnp.take_along_axis(a, jnp.maximum(env.line, 0), axis=1)
    prev = jnp.concatenate([slope[:, :1], slope[:, :-1]], axis=1)
    used = (env.line >= 0) & (jnp.arange(b.shape[1])[None, :] >= 1)
    return jnp.where(used, env.eta, jnp.inf), jnp.where(used, slope - prev, 0.0)
