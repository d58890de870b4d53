"""The kinks of each example's maximum of lines, for the exact line search (paper 000, Alg. 4's
task), found by walking along the envelope, all examples at once.

For each example, ϱ(η) = max_p (b_p + η a_p) on η ≥ 0 is convex and piecewise linear. Its
active line at 0⁺ is the steepest of the lines maximal at 0 (the right derivative, as in
Alg. 4's tie rule, lines 10 and 16). From the active line c at η₀, the next segment belongs
to the steeper line that overtakes c first: the line q with a_q > a_c minimizing the
crossing (b_c − b_q)/(a_q − a_c) ≥ η₀, the steepest of them on a tie (several lines through
one point: the steepest is active after it). Each step of the walk is O(r) per example and
the walk takes as many steps as the envelope has kinks.

Why not Alg. 4 itself: its sweep (sort the lines at L, then push and pop a stack) is
sequential per example, and vmapped over examples every push, pop and stack write became a
masked update of an (n, r) array, in a `while_loop` nested in a `fori_loop` over all r
lines. The walk does O(n r) fused work per kink instead, and its loop runs only as many
times as the most kinked example has kinks (on Letter-like data, n = 16,000 and r = 26 with
at most 6 kinks per example: 18 ms against 260 ms; `benchmarks/RESULTS.md`). The worst case,
O(r²) per example, is the case where every line is on the envelope.

Parallel lines never cross (no kink); coincident lines and masked lines (b = −inf) are never
steeper-and-finite candidates, so they are skipped.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def envelope_kinks(b, a):
    """Kinks in η > 0 of every example's max of lines, and the slope jump at each.

    Args:
        b, a: (n, r) offsets and slopes (masked lines have b = −inf).

    Returns:
        (eta, jump, rows): eta and jump are (r, n), rank-major: example i's kinks in
        ascending order in eta[:k_i, i], with the jumps a[ξ_j] − a[ξ_{j−1}] > 0 of its
        active line's slope there; eta = inf and jump = 0 in the unused slots. Rows from
        `rows` on hold no kink, so sums over all kinks need only the first `rows` rows. The
        slope at 0⁺ is that of the steepest line maximal at 0.

    Example:
        >>> import jax.numpy as jnp
        >>> b = jnp.array([[0.0, -1.0, -3.0]])  # max(0, η − 1, 2η − 3)
        >>> a = jnp.array([[0.0, 1.0, 2.0]])
        >>> eta, jump, rows = envelope_kinks(b, a)
        >>> eta[:, 0].tolist(), jump[:, 0].tolist(), int(rows)
        ([1.0, 2.0, inf], [1.0, 1.0, 0.0], 3)
    """
    n, r = b.shape
    finite = jnp.isfinite(b)
    top = jnp.max(b, axis=1, keepdims=True)
    active = jnp.argmax(jnp.where(b == top, a, -jnp.inf), axis=1)  # steepest maximal at 0

    def gather(v, line):
        return jnp.take_along_axis(v, line[:, None], axis=1)[:, 0]

    def more_kinks(state):
        t, _, _, walking, _, _ = state
        return (t < r) & jnp.any(walking)

    def next_kink(state):
        t, active, at, walking, eta, jump = state
        b_c, a_c = gather(b, active), gather(a, active)
        rise = a - a_c[:, None]
        steeper = finite & (rise > 0)
        cross = jnp.where(steeper, (b_c[:, None] - b) / jnp.where(steeper, rise, 1.0), jnp.inf)
        first = jnp.min(cross, axis=1)
        overtaker = jnp.argmax(jnp.where(steeper & (cross == first[:, None]), a, -jnp.inf),
                               axis=1)
        walking = walking & jnp.isfinite(first)
        at = jnp.where(walking, jnp.maximum(first, at), at)  # rounding cannot step back
        eta = eta.at[t].set(jnp.where(walking, at, jnp.inf))
        jump = jump.at[t].set(jnp.where(walking, gather(a, overtaker) - a_c, 0.0))
        return t + 1, jnp.where(walking, overtaker, active), at, walking, eta, jump

    # Kink t of every example is row t: each step writes one contiguous row.
    state = (jnp.zeros((), jnp.int32), active, jnp.zeros(n, b.dtype), jnp.ones(n, bool),
             jnp.full((r, n), jnp.inf, b.dtype), jnp.zeros((r, n), b.dtype))
    rows, *_, eta, jump = jax.lax.while_loop(more_kinks, next_kink, state)
    return eta, jump, rows
