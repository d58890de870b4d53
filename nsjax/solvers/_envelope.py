"""The kinks of each example's maximum of lines, for the exact line search (the task of
Alg. 4 of Yu et al. 2010), found by walking along the envelope, all examples at once.

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
times as the most kinked example has kinks, typically far fewer than r (measured:
docs/design.md, "Measured design choices"). The worst case, O(r²) per example, is the case
where every line is on the envelope.

Layout: the walk reads the lines in blocks of `BLOCK` examples, (blocks, r, BLOCK), and
reduces over the middle axis, so that each reduction over an example's r lines runs for
`BLOCK` examples side by side (XLA's CPU reductions over the minor axis of (n, r) handle one
example at a time, which is slower). The carried state is each example's
active line (its offset and slope), not its index: no gather per step.

Parallel lines never cross (no kink); coincident lines and masked lines (b = −inf) are never
steeper-and-finite candidates, so they are skipped.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: Examples per block of the walk's layout (see the module docstring); n is padded to a
#: multiple of it with masked lines. Its size matters little once a block is wide enough
#: for the reductions to run side by side.
BLOCK = 64


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
    padded = -(-n // BLOCK) * BLOCK
    b = jnp.concatenate([b, jnp.full((padded - n, r), -jnp.inf, b.dtype)])
    a = jnp.concatenate([a, jnp.zeros((padded - n, r), a.dtype)])
    lines = _blocked(b), _blocked(a)
    # The active line at 0⁺, by its offset and slope: the steepest of those maximal at 0.
    offset = jnp.max(lines[0], axis=1)
    slope = jnp.max(jnp.where(lines[0] == offset[:, None], lines[1], -jnp.inf), axis=1)
    # The walk's state: (step t, offset, slope, last kink, walking, eta, jump). Kink t of
    # every example is row t of eta and jump: each step writes one contiguous row.
    state = (jnp.zeros((), jnp.int32), offset, slope, jnp.zeros_like(offset),
             jnp.ones(offset.shape, bool), jnp.full((r, padded), jnp.inf, b.dtype),
             jnp.zeros((r, padded), b.dtype))

    # Every example walks while more than a quarter of them still do ...
    few = max(n // 4, 1)

    def step_all(state):
        t, *walk, eta, jump = state
        *walk, kink, rise = _next_kink(*lines, *walk)
        return t + 1, *walk, _put_row(eta, t, kink), _put_row(jump, t, rise)

    state = jax.lax.while_loop(lambda s: (s[0] < r) & (jnp.sum(s[4]) > few), step_all, state)

    # ... then only those still walking, gathered into their own blocks (most examples
    # have one or two kinks, a few have many).
    t, offset, slope, at, walking, eta, jump = state
    size = -(-few // BLOCK) * BLOCK
    rows = jnp.nonzero(walking.ravel(), size=size, fill_value=padded)[0]  # padded: no row

    def gather(v, fill):
        return v.at[rows].get(mode="fill", fill_value=fill)

    lines_few = _blocked(gather(b, -jnp.inf)), _blocked(gather(a, 0.0))

    def step_few(state):
        t, *walk, eta, jump = state
        *walk, kink, rise = _next_kink(*lines_few, *walk)
        return (t + 1, *walk, eta.at[t, rows].set(kink.ravel(), mode="drop"),
                jump.at[t, rows].set(rise.ravel(), mode="drop"))

    walk = [gather(v.ravel(), fill).reshape(-1, BLOCK)
            for v, fill in ((offset, 0.0), (slope, 0.0), (at, 0.0), (walking, False))]
    used, *_, eta, jump = jax.lax.while_loop(lambda s: (s[0] < r) & jnp.any(s[4]), step_few,
                                             (t, *walk, eta, jump))
    return eta[:, :n], jump[:, :n], used


def _blocked(v):
    """(m, r) → (m / BLOCK, r, BLOCK): example j of block k at [k, :, j]."""
    m, r = v.shape
    return v.reshape(m // BLOCK, BLOCK, r).transpose(0, 2, 1)


def _put_row(v, t, row):
    """v with row t replaced, by an in-place dynamic_update_slice. (`.at[t].set` lowers to a
    scatter, for which XLA's CPU backend copies v at every step.)"""
    return jax.lax.dynamic_update_slice(v, row.reshape(1, -1), (t, jnp.zeros_like(t)))


def _next_kink(b, a, offset, slope, at, walking):
    """One step of the walk for every example, on blocked lines b, a (blocks, r, BLOCK)
    and per-example (blocks, BLOCK) arrays: the active line's ``offset`` and ``slope``, the
    last kink ``at``, ``walking``. Returns the same four after the step, then the kink (inf
    where the example no longer walks) and the slope's jump there (0)."""
    rise = a - slope[:, None]
    steeper = jnp.isfinite(b) & (rise > 0)
    cross = jnp.where(steeper, (offset[:, None] - b) / jnp.where(steeper, rise, 1.0), jnp.inf)
    first = jnp.min(cross, axis=1)
    # The overtaker: the steepest line crossing first (its offset: the largest among equal
    # slopes, which rounding alone can tell apart).
    tie = steeper & (cross == first[:, None])
    a_next = jnp.max(jnp.where(tie, a, -jnp.inf), axis=1)
    b_next = jnp.max(jnp.where(tie & (a == a_next[:, None]), b, -jnp.inf), axis=1)
    walking = walking & jnp.isfinite(first)
    at = jnp.where(walking, jnp.maximum(first, at), at)  # rounding cannot step back
    return (jnp.where(walking, b_next, offset), jnp.where(walking, a_next, slope), at,
            walking, jnp.where(walking, at, jnp.inf), jnp.where(walking, a_next - slope, 0.0))
