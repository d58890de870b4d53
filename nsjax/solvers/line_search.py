"""Line searches along w + η p, in score space (no matvec per trial step).

`exact_line_search` is Alg. 3 of Yu et al. (2010), eqs. 26–32, generalised to any loss that gives
its lines: the kinks of Φ(η) = J(w + η p) and their slope jumps are found for all examples at
once, the first kink where sup ∂Φ ≥ 0 is located (by sorting and accumulating the jumps, or
by bisection on CPUs and multisection on GPUs), and η* is that kink or the root of the
quadratic piece to its left.
`wolfe_line_search` finds a step satisfying the subgradient Wolfe conditions (16) by
bracketing, for losses without lines.

References: see docs/references.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax._fused_sum import fused_reduce
from nsjax.solvers._envelope import envelope_kinks
from nsjax.solvers._options import Options, check_choice, check_constants


@dataclass(frozen=True)
class ExactLineSearch:
    """The exact line search along w + η p (Yu et al. 2010, Alg. 3 generalised) on the
    problem's `Line` (the loss's lines and the regularizer's pieces).

    Args:
        bracket: "auto", "sort", "bisect" or "multisect" (see `exact_line_search`).

    Example:
        >>> import nsjax
        >>> solver = nsjax.solvers.SubLBFGS(line_search=nsjax.solvers.ExactLineSearch("sort"))
    """

    bracket: str = "auto"

    def __post_init__(self):
        Options(self).choice("bracket", BRACKETS)

    def check(self, problem):
        """Refuse a problem whose loss gives no lines."""
        if not problem.has_lines:
            raise ValueError(
                f"the exact line search needs a loss that gives its lines; the loss of "
                f"{problem!r} does not. Use the Wolfe line search."
            )

    def search(self, problem, w, S, p, dS) -> LineSearchResult:
        """argmin_{η ≥ 0} J(w + η p), from the scores S = X w and dS = X p."""
        line = problem.line(w, S, p, dS)
        return exact_line_search(line.b, line.a, line.c, line.h, self.bracket)


@dataclass(frozen=True)
class WolfeLineSearch:
    """A step satisfying the subgradient Wolfe conditions (16) of Yu et al. (2010), for any loss.

    Args:
        c1, c2: the constants of (16), finite numbers with 0 < c1 < c2 < 1.
        max_evals: cap on trial steps, an int >= 1 (and <= 2**31 - 1).

    Example:
        >>> import nsjax
        >>> solver = nsjax.solvers.SubLBFGS(line_search=nsjax.solvers.WolfeLineSearch(c2=0.5))
    """

    c1: float = 1e-4
    c2: float = 0.9
    max_evals: int = 50

    def __post_init__(self):
        options = Options(self)
        c1 = options.real("c1", 0, 1, low_open=True, high_open=True)
        c2 = options.real("c2", 0, 1, low_open=True, high_open=True)
        check_constants(options.owner, c1, c2)
        options.int("max_evals", low=1)

    def check(self, problem):
        """Every problem has Φ and sup ∂Φ: nothing to refuse."""

    def search(self, problem, w, S, p, dS) -> LineSearchResult:
        """A Wolfe step along p, from the scores S = X w and dS = X p."""
        return wolfe_line_search(problem.restrict(w, S, p, dS), self.c1, self.c2,
                                 max_evals=self.max_evals)


class LineSearchResult(NamedTuple):
    eta: jax.Array  # the step (inf: Φ decreases without bound)
    evaluations: jax.Array  # kinks passed (exact) or trial steps (Wolfe)
    ok: jax.Array  # False if no acceptable step was found
    # Where η* is a kink: the weight θ ∈ [0, 1] on the steeper side of the kinks at η*
    # for which θ·(sup ∂Φ) + (1 − θ)·(inf ∂Φ) = 0, i.e. the subgradient that certifies
    # optimality along the line. ½ where it does not matter.
    theta: jax.Array


def kinks(b, a):
    """All examples' kinks in η > 0 and slope jumps, as (eta, jump, rows): (m, n) arrays
    whose rows from `rows` on hold no kink. The closed form for two lines per example
    (binary hinge: one row), the envelope walk (`_envelope.py`, row t = kink t of each
    example) for more."""
    if b.shape[-1] == 2:
        eta, jump = kinks_of_two_lines(b, a)
        return eta[None], jump[None], jnp.ones((), jnp.int32)
    return envelope_kinks(b, a)


def kinks_of_two_lines(b, a):
    """Kinks in η > 0 of max(b₀ + η a₀, b₁ + η a₁) per example, and their slope jumps.

    For r = 2 lines the envelope has at most one kink, where the lines cross; there the
    slope jumps from min(a) to max(a). Parallel lines (Δa = 0, e.g. Δf = 0 in eq. 28)
    have no kink. Kinks at η ≤ 0 are already part of sup ∂Φ(0). Returns (eta, jump) with
    eta = inf and jump = 0 where there is no kink ahead.
    """
    da = a[:, 1] - a[:, 0]
    safe = jnp.where(da != 0, da, 1.0)
    eta = (b[:, 0] - b[:, 1]) / safe
    ahead = (da != 0) & (eta > 0)
    return jnp.where(ahead, eta, jnp.inf), jnp.where(ahead, jnp.abs(da), 0.0)


def sup_slope_at_zero(b, a):
    """Σ_i max{a_ij : line j active at η = 0}: the risk part of sup ∂Φ(0) (eq. 30)."""
    if b.shape[-1] == 2:  # elementwise: a reduction over a minor axis of 2 is slow on CPUs
        b0, b1, a0, a1 = b[:, 0], b[:, 1], a[:, 0], a[:, 1]
        return jnp.sum(jnp.where(b0 > b1, a0, jnp.where(b1 > b0, a1, jnp.maximum(a0, a1))))
    top = jnp.max(b, axis=-1, keepdims=True)
    return jnp.sum(jnp.max(jnp.where(b == top, a, -jnp.inf), axis=-1))


def exact_line_search(b, a, c_reg, h, bracket="auto") -> LineSearchResult:
    """argmin_{η ≥ 0} Φ(η) for Φ(η) = const + c_reg η + h η²/2 + Σ_i max_j (b_ij + η a_ij).

    Args:
        b, a: (n, r) offsets and slopes of each example's lines (a loss's ``lines``).
        c_reg, h: the regularizer's slope and curvature along the line (λwᵀp, λ‖p‖²).
        bracket: how the kink before η* is found: "sort" (Alg. 3's way: sort all kinks,
            cumsum the slope jumps), "bisect" (`bracket_by_bisection`, no sort), or
            "multisect" (`bracket_by_multisection`: the bisection with 16 pieces a pass
            instead of two), or "auto": bisect on CPUs, elsewhere `auto_bracket`. All
            give the same η*, unless the sum and the cumsum of the slope jumps round to
            opposite signs of F at a kink.

    Returns:
        η* with 0 ∈ ∂Φ(η*) (eq. 29): 0 if p is not a descent direction, inf if Φ decreases
        without bound (h = 0 and no kink ahead), and the number of kinks passed.

    With F(η) = sup ∂Φ(η) = c + hη + Σ_{kinks η_j ≤ η} jump_j (nondecreasing; c = sup ∂Φ(0)),
    η* = inf {η : F(η) ≥ 0}. Each bracket returns lo with F(lo) < 0 and no kink between lo
    and the first kink where F ≥ 0 (lo = the last kink if there is none); η* is then that
    kink or the root of the quadratic piece after lo (eq. 32), whichever comes first.
    On a CPU, sorting the kinks can cost more than the step's products with X, and the
    bisection's O(n) passes far less. On a GPU a pass costs its launch more than its bytes,
    and the multisection's few passes beat both.
    """
    _check_bracket(bracket)
    c = c_reg + sup_slope_at_zero(b, a)
    eta, jump, rows = kinks(b, a)
    if bracket == "auto":
        lo = jax.lax.platform_dependent(eta, jump, rows, c, h, cpu=bracket_by_bisection,
                                        default=_BRACKETS[auto_bracket(b.shape, b.dtype)])
    else:
        lo = _BRACKETS[bracket](eta, jump, rows, c, h)
    eta, jump = eta.ravel(), jump.ravel()
    finite = jnp.isfinite(eta)
    after_lo = finite & (eta > lo)
    kink = jnp.min(jnp.where(after_lo, eta, jnp.inf))
    slope_after_lo = c + jnp.sum(jnp.where(finite & ~after_lo, jump, 0.0))
    root = jnp.where(h > 0, -slope_after_lo / jnp.where(h > 0, h, 1.0), jnp.inf)
    # The root can round below lo; clamp it to the last kink ≤ lo (or 0), which both
    # brackets agree on (the bisection's lo itself need not be a kink).
    kink_before = jnp.max(jnp.where(finite & ~after_lo, eta, 0.0))
    eta_star = jnp.where(c >= 0, 0.0, jnp.minimum(kink, jnp.maximum(root, kink_before)))
    # Split the slope jump of all kinks tied at η* so that the slope there is exactly 0.
    before = finite & (eta < eta_star)
    left_slope = c + h * eta_star + jnp.sum(jnp.where(before, jump, 0.0))
    jump_here = jnp.sum(jnp.where(finite & (eta == eta_star), jump, 0.0))
    theta = jnp.where(jump_here > 0, -left_slope / jnp.where(jump_here > 0, jump_here, 1.0), 0.5)
    theta = jnp.clip(theta, 0.0, 1.0)
    passed = jnp.sum(before).astype(jnp.int32)
    return LineSearchResult(eta_star, passed, c < 0, theta)


#: Off CPUs "auto" bisects float64 lines from this many examples with two lines each, and
#: multisects otherwise: the multisection's few passes win while a pass costs its launch
#: more than its work, the bisection's lighter passes once float64 work on this many
#: examples outweighs the launches (`auto_bracket`; measured: docs/design.md, "Measured
#: design choices").
BISECT_FROM = 2**22


def auto_bracket(shape, dtype) -> str:
    """The bracket "auto" uses off CPUs for lines of this (n, r) shape and dtype: the
    multisection (few passes, for a device where a pass costs its launch and sync more
    than its bytes), or the bisection for very many two-line examples in float64 (each of
    its passes does 1/15 of the multisection's work, and float64 work is dear on GPUs)."""
    n, r = shape[-2:]
    wide = jnp.dtype(dtype).itemsize == 8
    return "bisect" if wide and r == 2 and n >= BISECT_FROM else "multisect"


#: The brackets of `exact_line_search`.
BRACKETS = ("auto", "sort", "bisect", "multisect")


def _check_bracket(bracket):
    check_choice(bracket, "bracket", "exact_line_search", BRACKETS)


def bracket_by_sort(eta, jump, rows, c, h):
    """lo for `exact_line_search`: sort the kinks, cumsum the jumps, find the first kink
    with F ≥ 0 and return the kink value just below it (0 if none is below)."""
    eta, jump = eta.ravel(), jump.ravel()
    order = jnp.argsort(eta)
    eta, cum = eta[order], jnp.cumsum(jump[order])
    finite = jnp.isfinite(eta)
    passes = finite & (c + h * jnp.where(finite, eta, 0.0) + cum >= 0)
    first = jnp.searchsorted(eta, eta[jnp.argmax(passes)], side="left")  # its tie group
    below = jnp.where(first > 0, eta[jnp.maximum(first - 1, 0)], 0.0)
    last = jnp.max(jnp.where(finite, eta, 0.0))
    return jnp.where(jnp.any(passes), below, last)


def bracket_by_bisection(eta, jump, rows, c, h):
    """lo for `exact_line_search` without sorting: bisect [0, last kink] on F.

    The integer bit patterns of floats ≥ 0 are in the floats' order, so bisecting them
    shrinks the bracket F(lo) < 0 ≤ F(hi) towards two neighbouring floats, one O(n) pass
    per halving. Each pass also counts the kinks ≤ its midpoint (one reduction with two
    sums), and the bisection stops as soon as at most one kink is left in (lo, hi]: then
    one more pass at that kink κ moves lo to κ where F(κ) < 0, so that no kink lies between
    lo and the first kink where F ≥ 0, as if the bracket had shrunk to neighbouring floats.
    That takes ~10 + log₂(kinks) passes instead of up to 64 in float64. Each pass reads only
    the first `rows` rows of kinks (the rest are empty: few examples have many kinks).
    """
    finite = jnp.isfinite(eta)

    # Sums of float16 jumps in float32, as jnp.sum does (the multisection's F).
    wide = jnp.promote_types(jump.dtype, jnp.float32)

    def F_and_count(x):  # F(x) and the number of kinks ≤ x, in one pass over the rows
        def row(t, total):
            below = eta[t] <= x
            (passed, count), _, _ = fused_reduce(sums=(
                jnp.where(below, jump[t], 0.0).astype(wide), below.astype(jnp.int32)))
            return total[0] + passed.astype(jump.dtype), total[1] + count

        zero = (jnp.zeros((), jump.dtype), jnp.zeros((), jnp.int32))
        passed, count = (row(0, zero) if eta.shape[0] == 1
                         else jax.lax.fori_loop(0, rows, row, zero))
        return c + h * x + passed, count

    last = jnp.max(jnp.where(finite, eta, 0.0))  # 0 when there is no kink ahead
    F_last, count_last = F_and_count(last)
    searching = jnp.any(finite) & (F_last >= 0) & (c < 0)
    start = jnp.where(searching, 0.0, last).astype(eta.dtype)
    to_bits, to_float = _bit_patterns(eta.dtype)

    class Bracket(NamedTuple):
        lo: jax.Array  # bit patterns, F(lo) < 0 ≤ F(hi)
        hi: jax.Array
        lo_count: jax.Array  # kinks ≤ lo, ≤ hi
        hi_count: jax.Array

    def cond(b):
        return searching & (b.hi - b.lo > 1) & (b.hi_count - b.lo_count > 1)

    def body(b):
        mid = b.lo + (b.hi - b.lo) // 2
        F, count = F_and_count(to_float(mid))
        below = F < 0
        return Bracket(jnp.where(below, mid, b.lo), jnp.where(below, b.hi, mid),
                       jnp.where(below, count, b.lo_count), jnp.where(below, b.hi_count, count))

    # Every kink is > 0 (`kinks`), so none is ≤ start = 0 while searching.
    b = jax.lax.while_loop(cond, body, Bracket(to_bits(start), to_bits(last),
                                               jnp.zeros((), jnp.int32), count_last))
    lo = to_float(b.lo)
    kink = jnp.min(jnp.where(finite & (eta > lo), eta, jnp.inf))  # the one left, if any
    step_over = searching & jnp.isfinite(kink) & (F_and_count(kink)[0] < 0)
    return jnp.where(step_over, kink, lo)


def _bit_patterns(dtype):
    """(to_bits, to_float): floats ≥ 0 to their integer bit patterns (in the same order)
    and back."""
    itype = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[jnp.dtype(dtype).itemsize]
    return (lambda x: jax.lax.bitcast_convert_type(x, itype),
            lambda bits: jax.lax.bitcast_convert_type(bits, dtype))


#: The multisection's pieces per pass: it evaluates F at MULTISECT_WAYS − 1 points at once.
#: 16 ways: 8 passes in float32, 16 in float64. Fewer ways take more passes; more make each
#: pass dearer than the passes they save (measured: docs/design.md, "Measured design
#: choices").
MULTISECT_WAYS = 16


def bracket_by_multisection(eta, jump, rows, c, h):
    """lo for `exact_line_search`: the bisection's bracket, cut into `MULTISECT_WAYS`
    pieces per pass instead of two, down to two neighbouring floats. F at 15 points costs
    one read of the kinks like F at one, and the passes drop from ≤ 32 to 8 in float32
    (≤ 64 to 16 in float64): for a GPU, where a pass costs its launch and sync more than
    its bytes. The passes are a fixed number, unrolled (a pass on a bracket already down to
    two neighbouring floats leaves it), because a GPU's while loop reads its condition back
    to the host after every pass. Same η* as the bisection, up to the
    rounding of F's sum where there are several rows of kinks (it sums them in one go: a
    loop over rows would cost a GPU one sync per row and pass)."""
    ways = MULTISECT_WAYS
    finite = jnp.isfinite(eta)
    kinks, jumps = eta.ravel(), jump.ravel()  # unused slots: eta = inf, jump = 0

    def F(x):  # at each point x
        return c + h * x + jnp.sum(jnp.where(kinks <= x[:, None], jumps, 0.0), axis=-1)

    last = jnp.max(jnp.where(finite, eta, 0.0))  # 0 when there is no kink ahead
    searching = jnp.any(finite) & (F(last[None])[0] >= 0) & (c < 0)
    start = jnp.where(searching, 0.0, last).astype(eta.dtype)
    to_bits, to_float = _bit_patterns(eta.dtype)
    lo, hi = to_bits(start), to_bits(last)
    j = jnp.arange(1, ways, dtype=lo.dtype)
    # The floats ≥ 0 have 8·itemsize − 1 bits of pattern; each pass takes log₂(ways) off.
    for _ in range(math.ceil((8 * eta.dtype.itemsize - 1) / math.log2(ways))):
        gap = hi - lo
        # lo + gap·j/ways without overflowing the integer type; nondecreasing in j.
        points = lo + (gap // ways) * j + ((gap % ways) * j) // ways
        below = jnp.sum(F(to_float(points)) < 0)  # F is nondecreasing: a prefix is < 0
        ends = jnp.concatenate([lo[None], points, hi[None]])
        moving = searching & (gap > 1)
        lo, hi = jnp.where(moving, ends[below], lo), jnp.where(moving, ends[below + 1], hi)
    return to_float(lo)


_BRACKETS = {"sort": bracket_by_sort, "bisect": bracket_by_bisection,
             "multisect": bracket_by_multisection}


def wolfe_line_search(phi, c1=1e-4, c2=0.9, eta0=1.0, max_evals=50) -> LineSearchResult:
    """A step satisfying the subgradient Wolfe conditions (16) by bracketing and bisection.

    Args:
        phi: η ↦ (Φ(η), sup ∂Φ(η)); sup ∂Φ(0) must be < 0 (a descent direction).
        c1, c2: 0 < c1 < c2 < 1.
        eta0: the first trial step.
        max_evals: cap on trial steps; past it ``ok`` is False.
    """
    f0, g0 = phi(jnp.zeros_like(eta0))

    class Carry(NamedTuple):
        lo: jax.Array
        hi: jax.Array
        eta: jax.Array
        n: jax.Array
        done: jax.Array

    def cond(c):
        return ~c.done & (c.n < max_evals)

    def body(c):
        f, g = phi(c.eta)
        decrease = f <= f0 + c1 * c.eta * g0
        curvature = g >= c2 * g0
        accept = decrease & curvature
        hi = jnp.where(decrease, c.hi, c.eta)
        lo = jnp.where(decrease & ~curvature, c.eta, c.lo)
        nxt = jnp.where(jnp.isfinite(hi), 0.5 * (lo + hi), 2.0 * c.eta)
        return Carry(lo, hi, jnp.where(accept, c.eta, nxt), c.n + 1, accept)

    eta0 = jnp.asarray(eta0, f0.dtype)
    init = Carry(jnp.zeros_like(eta0), jnp.full_like(eta0, jnp.inf), eta0,
                 jnp.zeros((), jnp.int32), g0 >= 0)
    out = jax.lax.while_loop(cond, body, init)
    return LineSearchResult(jnp.where(out.done, out.eta, 0.0), out.n, out.done & (g0 < 0),
                            jnp.asarray(0.5, f0.dtype))
