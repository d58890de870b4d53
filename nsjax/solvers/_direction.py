"""Direction finding of Yu et al. (2010), Alg. 2 (derivation in their Appendix A, eqs. 56–78).

Given a subgradient g⁽¹⁾ ∈ ∂J(w) and the quasi-Newton memory B, find p that (nearly)
minimizes the pseudo-quadratic model M(p) = ½ pᵀB⁻¹p + sup_{g∈∂J(w)} gᵀp (eq. 8). Each
iteration asks the oracle for the violating subgradient g⁽ⁱ⁺¹⁾ = argsup gᵀp⁽ⁱ⁾ (eq. 12),
mixes it into the aggregated subgradient ḡ (line 8, a convex combination, so ḡ ∈ ∂J(w)),
and sets p = −B ḡ (line 9). Everything runs in score space where it can:
g⁽ⁱ⁺¹⁾ᵀp⁽ⁱ⁾ = λwᵀp + ⟨u, X p⟩ costs no product with Xᵀ, and M(p⁽ʲ⁾) = −½ p⁽ʲ⁾ᵀḡ⁽ʲ⁾ +
g⁽ʲ⁺¹⁾ᵀp⁽ʲ⁾ needs no B⁻¹. The common case (no kink in the way, Table 2's k = 0) costs one
product X p and no product with Xᵀ.

References: see docs/references.md.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Direction(NamedTuple):
    p: jax.Array  # the search direction argmin_j M(p⁽ʲ⁾) (line 17)
    dS: jax.Array  # X p, reused by the line search
    sup: jax.Array  # sup_{g∈∂J(w)} gᵀp; < 0 iff p is a descent direction (eq. 10)
    gbar: jax.Array  # the aggregated subgradient ḡ ∈ ∂J(w) (eq. 68)
    ubar: jax.Array  # its score part ū ∈ ∂R(Xw), a dual point
    rbar: jax.Array  # its regularizer part: ḡ = rbar + Xᵀū
    iterations: jax.Array  # passes through the loop (lines 6–13): Table 2's k
    ok: jax.Array  # True iff sup < 0


def find_direction(problem, memory, mem, w, S, g, u, g_reg, eps, k_max) -> Direction:
    """Alg. 2 of Yu et al. (2010): descentDirection(g⁽¹⁾, ε, k_max).

    Args:
        problem: the `Problem`.
        memory, mem: the quasi-Newton memory object and its state (B).
        w, S: the iterate and its scores.
        g, u, g_reg: the starting subgradient g⁽¹⁾ = g_reg + Xᵀu, its score part u and
            its regularizer part g_reg.
        eps: the tolerance ε on the model gap ε⁽ⁱ⁾ (eq. 14).
        k_max: the cap on loop iterations.
    """
    p = -memory.apply(mem, g)
    dS = problem.scores(p)
    greg_next, u_next, sup = problem.oracle(w, S, p, dS)
    pg = jnp.vdot(p, g)
    # ε⁽ⁱ⁾ = min_j [p⁽ʲ⁾ᵀg⁽ʲ⁺¹⁾ − ½p⁽ʲ⁾ᵀḡ⁽ʲ⁾] − ½p⁽ⁱ⁾ᵀḡ⁽ⁱ⁾ (eq. 77): keep the running min.
    min_term = sup - 0.5 * pg

    class Carry(NamedTuple):
        p: jax.Array
        dS: jax.Array
        sup: jax.Array
        pg: jax.Array
        gbar: jax.Array
        ubar: jax.Array
        rbar: jax.Array
        greg_next: jax.Array
        u_next: jax.Array
        min_term: jax.Array
        best: tuple  # (p, dS, M, sup) of the best model value so far (eq. 78)
        i: jax.Array

    def gap(c):
        return c.min_term - 0.5 * c.pg

    def cond(c):
        return ((c.sup > 0) | (gap(c) > eps)) & (c.i < k_max)

    def body(c):
        xtu_next = problem.rmv(c.u_next)
        g_next = c.greg_next + xtu_next
        Bg_next = memory.apply(mem, g_next)
        diff = c.gbar - g_next
        # μ* of line 7 / eq. 70, with B ḡ = −p.
        num = -jnp.vdot(diff, c.p)
        den = jnp.vdot(diff, -c.p - Bg_next)
        mu = jnp.clip(num / jnp.where(den > 0, den, 1.0), 0.0, 1.0)
        mu = jnp.where(den > 0, mu, 0.0)
        gbar = (1 - mu) * c.gbar + mu * g_next
        ubar = (1 - mu) * c.ubar + mu * c.u_next
        # Written so that rbar stays bit-exact where every part is the same (smooth Ω).
        rbar = c.rbar + mu * (c.greg_next - c.rbar)
        p = (1 - mu) * c.p - mu * Bg_next
        dS = problem.scores(p)
        greg_next, u_next, sup = problem.oracle(w, S, p, dS)
        pg = jnp.vdot(p, gbar)
        model = sup - 0.5 * pg
        better = model < c.best[2]
        best = jax.tree_util.tree_map(
            lambda new, old: jnp.where(better, new, old), (p, dS, model, sup), c.best
        )
        return Carry(p, dS, sup, pg, gbar, ubar, rbar, greg_next, u_next,
                     jnp.minimum(c.min_term, sup - 0.5 * pg), best, c.i + 1)

    init = Carry(p, dS, sup, pg, g, u, g_reg, greg_next, u_next, min_term,
                 (p, dS, sup - 0.5 * pg, sup),
                 jnp.ones((), jnp.int32))
    out = jax.lax.while_loop(cond, body, init)
    p, dS, _, sup = out.best
    return Direction(p, dS, sup, out.gbar, out.ubar, out.rbar, out.i - 1, sup < 0)
