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
at most 6 kinks per example: 12 ms against 264 ms; `benchmarks/RESULTS.md`). The worst case,
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
    top = jnp.max(b, axis=1, keepdims=True)
    active = jnp.argmax(jnp.where(b == top, a, -jnp.inf), axis=1)  # steepest maximal at 0
    # Kink t of every example is row t: each step writes one contiguous row.
    state = (jnp.zeros((), jnp.int32), active, jnp.zeros(n, b.dtype), jnp.ones(n, bool),
             jnp.full((r, n), jnp.inf, b.dtype), jnp.zeros((r, n), b.dtype))

    # Every example walks while more than a quarter of them still do ...
    few = max(n // 4, 1)

    def step_all(state):
        t, active, at, walking, eta, jump = state
        active, at, walking, kink, rise = _next_kink(b, a, active, at, walking)
        return t + 1, active, at, walking, eta.at[t].set(kink), jump.at[t].set(rise)

    state = jax.lax.while_loop(lambda s: (s[0] < r) & (jnp.sum(s[3]) > few), step_all, state)

    # ... then only those still walking, gathered into `few` rows (most examples have one
    # or two kinks, a few have many: on Letter-like data 2,410 of 16,000 have 3 or more).
    t, active, at, walking, eta, jump = state
    rows = jnp.nonzero(walking, size=few, fill_value=n)[0]  # n: a padding row
    b_few = b.at[rows].get(mode="fill", fill_value=-jnp.inf)
    a_few = a.at[rows].get(mode="fill", fill_value=0.0)

    def step_few(state):
        t, active, at, walking, eta, jump = state
        active, at, walking, kink, rise = _next_kink(b_few, a_few, active, at, walking)
        return (t + 1, active, at, walking, eta.at[t, rows].set(kink, mode="drop"),
                jump.at[t, rows].set(rise, mode="drop"))

    state = (t, active.at[rows].get(mode="fill", fill_value=0), at.at[rows].get(mode="fill",
             fill_value=0.0), walking.at[rows].get(mode="fill", fill_value=False), eta, jump)
    used, *_, eta, jump = jax.lax.while_loop(lambda s: (s[0] < r) & jnp.any(s[3]), step_few,
                                             state)
    return eta, jump, used


def _next_kink(b, a, active, at, walking):
    """One step of the walk for every example: (active, at, walking, kink, jump), where the
    kink is at `at`, and kink = inf and jump = 0 for examples that no longer walk."""
    b_c, a_c = _gather(b, active), _gather(a, active)
    rise = a - a_c[:, None]
    steeper = jnp.isfinite(b) & (rise > 0)
    cross = jnp.where(steeper, (b_c[:, None] - b) / jnp.where(steeper, rise, 1.0), jnp.inf)
    first = jnp.min(cross, axis=1)
    overtaker = jnp.argmax(jnp.where(steeper & (cross == first[:, None]), a, -jnp.inf), axis=1)
    walking = walking & jnp.isfinite(first)
    at = jnp.where(walking, jnp.maximum(first, at), at)  # rounding cannot step back
    return (jnp.where(walking, overtaker, active), at, walking, jnp.where(walking, at, jnp.inf),
            jnp.where(walking, _gather(a, overtaker) - a_c, 0.0))


def _gather(v, line):
    return jnp.take_along_axis(v, line[:, None], axis=1)[:, 0]
