"""subBFGS and subLBFGS: paper 000, Alg. 1 (Sec. 2) and its limited-memory variant (Sec. 2.5).

One outer step: find a descent direction p (Alg. 2, `direction.py`), search the line w + ηp
(exactly, Alg. 3 generalised, for losses that give their lines; else by the subgradient Wolfe
conditions (16)), move, take a subgradient at the new point and update the quasi-Newton
memory with s = ηp, y = g_{t+1} − g_t (skipped, and counted, when sᵀy is too small).

Stopping. The paper stops on relative change only and names the missing stopping rule as
future work (Sec. 8). Here every step yields a dual point for free: direction finding's
aggregated subgradient ḡ = λw + Xᵀū is a convex combination of elements of ∂J(w), so ū is
a dual-feasible point whose coefficients are fractional on the margin set (exactly where an
exact line search puts the iterates). The certified gap is J(w_t) − max_{t'≤t} D(ū_{t'})
(`Problem.dual_value`); the solver stops when it is ≤ tol · max(1, |J|). As a fallback the
paper's rule also applies: the relative decrease of J averaged over the last 5 steps below
``stall_tol`` stops with `RESULTS.stalled`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.losses.hinge import Hinge
from nsjax.results import RESULTS
from nsjax.solvers._options import solver_options
from nsjax.solvers.certificate import hinge_dual_certificate
from nsjax.solvers.direction import find_direction
from nsjax.solvers.line_search import exact_line_search, wolfe_line_search
from nsjax.solvers.memory import DenseBFGSMemory, LBFGSMemory

STALL_WINDOW = 5


class SubQNState(NamedTuple):
    w: jax.Array
    S: jax.Array  # scores X w, updated as S + η X p (no extra matvec)
    g: jax.Array  # the subgradient g_t used to start direction finding
    u: jax.Array  # its score part
    value: jax.Array
    gap: jax.Array
    best_dual: jax.Array
    mem: tuple
    fresh: jax.Array  # True while the memory holds no pair (B = I)
    recent: jax.Array  # the last STALL_WINDOW + 1 values of J, oldest first
    num_steps: jax.Array
    result: jax.Array
    stats: dict


class _SubQuasiNewton:
    """Shared code of `SubLBFGS` and `SubBFGS`; they differ in the memory only."""

    def _memory(self):
        raise NotImplementedError

    def _check(self):
        if self.line_search not in ("auto", "exact", "wolfe"):
            raise ValueError(
                f"line_search must be 'auto', 'exact' or 'wolfe'; got {self.line_search!r}."
            )
        if not (self.eps > 0 and self.k_max >= 1):
            raise ValueError(f"need eps > 0 and k_max >= 1; got {self.eps}, {self.k_max}.")
        if not 0 < self.c1 < self.c2 < 1:
            raise ValueError(f"need 0 < c1 < c2 < 1; got c1={self.c1}, c2={self.c2}.")

    def check(self, problem):
        if isinstance(self._memory(), DenseBFGSMemory) and len(problem.w_shape) != 1:
            raise ValueError("SubBFGS keeps a dense (d, d) matrix and needs 1-D weights; use "
                             "SubLBFGS for multiclass or multilabel problems.")
        self.uses_exact_line_search(problem)

    def uses_exact_line_search(self, problem) -> bool:
        if self.line_search == "exact" and not problem.has_lines:
            raise ValueError(
                f"line_search='exact' needs a loss that gives its lines; "
                f"{type(problem.loss).__name__} does not. Use 'wolfe' or 'auto'."
            )
        return problem.has_lines and self.line_search != "wolfe"

    def init(self, problem, w0) -> SubQNState:
        dt = problem.dtype
        S = problem.scores(w0)
        g, u = problem.subgradient(w0, S)
        value = problem.value(w0, S)
        # u ∈ ∂R(S), so it is already a dual point.
        best_dual = problem.dual_value(w0, S, u, g - problem.reg.grad(w0))
        zero = jnp.zeros((), jnp.int32)
        stats = dict(matvecs=zero + 2, direction_iterations=zero, linesearch_evaluations=zero,
                     skipped_updates=zero, restarts=zero)
        return SubQNState(
            w=w0, S=S, g=g, u=u, value=value, gap=value - best_dual, best_dual=best_dual,
            mem=self._memory().init(w0), fresh=jnp.array(True),
            recent=jnp.full(STALL_WINDOW + 1, jnp.nan, dt),
            num_steps=zero, result=zero + RESULTS.running, stats=stats,
        )

    def step(self, problem, state: SubQNState) -> SubQNState:
        memory = self._memory()
        w, S = state.w, state.S
        d = find_direction(problem, memory, state.mem, w, S, state.g, state.u,
                           self.eps, self.k_max)
        dual = problem.dual_value(w, S, d.ubar, d.gbar - problem.reg.grad(w))
        best_dual = jnp.maximum(state.best_dual, dual)

        c_reg, h = problem.reg.line(w, d.p)
        if self.uses_exact_line_search(problem):
            b, a = problem.loss.lines(S, d.dS, problem.y)
            ls = exact_line_search(b, a, c_reg, h)
        else:
            reg0 = problem.reg.value(w)

            def phi(eta):
                S_eta = S + eta * d.dS
                f = reg0 + c_reg * eta + 0.5 * h * eta**2 + problem.loss.risk(S_eta, problem.y)
                u_eta = problem.loss.argsup(S_eta, d.dS, problem.y)
                return f, c_reg + h * eta + jnp.vdot(u_eta, d.dS)

            ls = wolfe_line_search(phi, self.c1, self.c2)
        eta = ls.eta
        move = d.ok & ls.ok & jnp.isfinite(eta) & (eta > 0)
        step_len = jnp.where(move, eta, 0.0)
        w_new = w + step_len * d.p
        S_new = S + step_len * d.dS
        value = problem.value(w_new, S_new)
        # The new subgradient: the one the line search certifies (g_{t+1}ᵀp = 0 at an exact
        # η*), mixing the steepest and the flattest choice along p on the kinks at η*.
        # Alg. 1 allows any element of ∂J(w_{t+1}); this one makes sᵀy = −η g_tᵀp > 0.
        if self.certified_subgradient:
            u_up = problem.loss.argsup(S_new, d.dS, problem.y)
            u_down = problem.loss.argsup(S_new, -d.dS, problem.y)
            u_new = ls.theta * u_up + (1 - ls.theta) * u_down
        else:
            u_new = problem.loss.dscores(S_new, problem.y)
        g_new = problem.reg.grad(w_new) + problem.X.rmv(u_new)
        mem, skipped = memory.update(state.mem, w_new - w, g_new - state.g, accept=move)
        fresh = state.fresh & ~(move & ~skipped)
        # No descent direction under the learned metric: forget it (B = I) and try again
        # before giving up; a kink-polluted memory is the usual cause near the optimum.
        restart = ~d.ok & ~state.fresh
        mem = memory.reset(mem, restart)
        fresh = fresh | restart

        result = jnp.where(
            restart, RESULTS.running,
            jnp.where(~d.ok, RESULTS.direction_failed,
            jnp.where(~jnp.isfinite(eta), RESULTS.unbounded,
                      jnp.where(~move, RESULTS.linesearch_failed, RESULTS.running))))
        recent = jnp.concatenate([state.recent[1:], value[None]])
        s = state.stats
        stats = dict(
            matvecs=s["matvecs"] + 2 + 2 * d.iterations,
            direction_iterations=s["direction_iterations"] + d.iterations,
            linesearch_evaluations=s["linesearch_evaluations"] + ls.evaluations,
            skipped_updates=s["skipped_updates"] + (move & skipped).astype(jnp.int32),
            restarts=s["restarts"] + restart.astype(jnp.int32),
        )
        return SubQNState(
            w=w_new, S=S_new, g=g_new, u=u_new, value=value, gap=value - best_dual,
            best_dual=best_dual, mem=mem, fresh=fresh, recent=recent, num_steps=state.num_steps + 1,
            result=result.astype(jnp.int32), stats=stats,
        )

    def finalize(self, problem, state: SubQNState, tol):
        """After the loop: for the hinge, tighten the gap with `hinge_dual_certificate`."""
        if not (self.certify and isinstance(problem.loss, Hinge)):
            return state
        done = state.gap <= tol * jnp.maximum(1.0, jnp.abs(state.value))
        dual, products = jax.lax.cond(
            done, lambda: (state.best_dual, jnp.zeros((), jnp.int32)),
            lambda: hinge_dual_certificate(problem, state.w, state.S))
        dual = jnp.maximum(state.best_dual, dual)
        stats = dict(state.stats, matvecs=state.stats["matvecs"] + products)
        return state._replace(best_dual=dual, gap=state.value - dual, stats=stats)

    def terminate(self, problem, state: SubQNState, tol):
        """(done, result): the certified gap, then failures, then the stall rule."""
        scale = jnp.maximum(1.0, jnp.abs(state.value))
        converged = state.gap <= tol * scale
        eps = jnp.finfo(state.value.dtype).eps
        decrease = (state.recent[0] - state.recent[-1]) / STALL_WINDOW
        stall_tol = jnp.maximum(self.stall_tol, eps)
        stalled = decrease <= stall_tol * jnp.maximum(jnp.abs(state.value),
                                                      jnp.finfo(state.value.dtype).tiny)
        result = jnp.where(
            converged, RESULTS.successful,
            jnp.where(state.result != RESULTS.running, state.result,
                      jnp.where(stalled, RESULTS.stalled, RESULTS.running)))
        return result != RESULTS.running, result.astype(jnp.int32)


@solver_options
class SubLBFGS(_SubQuasiNewton):
    """subLBFGS (paper 000, Alg. 1 with the L-BFGS memory of Sec. 2.5).

    Args:
        memory: number m of (s, y) pairs kept (Sec. 7.1: m = 15).
        eps: direction-finding tolerance ε on the model gap ε⁽ⁱ⁾ (Alg. 2; Sec. 7: 1e-5).
        k_max: cap on direction-finding iterations per step (Alg. 2).
        line_search: "exact" (Alg. 3 generalised; losses with lines), "wolfe" (16), or
            "auto" (exact where possible).
        c1, c2: the subgradient Wolfe constants of (16).
        stall_tol: stop (RESULTS.stalled) when J's relative decrease averaged over the last
            5 steps is below this (the paper's rule, Sec. 7, footnote 6).
        certified_subgradient: take g_{t+1} as the subgradient the exact line search
            certifies (g_{t+1}ᵀp_t = 0), which keeps sᵀy > 0; False takes the loss's
            default subgradient (β = ½ on hinges).
        certify: for the hinge, if the loop ends without a certified gap ≤ tol, spend at
            most 4 · (2 · 50 + 3) products with X or Xᵀ on one tighter dual point
            (`certificate.py`; counted in stats["matvecs"]).
        scaling: start the two-loop recursion from (sᵀy / yᵀy) I (Nocedal and Wright); False
            keeps B₀ = I as Alg. 1 does, which behaves better when memory is large and the
            problem small and very nonsmooth.

    Stops on the certified duality gap ``J(w) − max D ≤ tol · max(1, |J|)``.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.digits_binary()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(memory=15), tol=1e-6)
        >>> bool(sol.gap <= 1e-6 * max(1.0, abs(float(sol.value))))
        True
    """

    memory: int = 15
    eps: float = 1e-5
    k_max: int = 100
    line_search: str = "auto"
    c1: float = 1e-4
    c2: float = 0.9
    stall_tol: float = 1e-12
    scaling: bool = True
    certified_subgradient: bool = True
    certify: bool = True

    def __post_init__(self):
        if not (isinstance(self.memory, int) and self.memory >= 1):
            raise ValueError(f"memory must be an int >= 1; got {self.memory!r}.")
        self._check()

    def _memory(self):
        return LBFGSMemory(self.memory, self.scaling)


@solver_options
class SubBFGS(_SubQuasiNewton):
    """subBFGS (paper 000, Alg. 1) with a dense d × d matrix B: for small d only.

    Options as for `SubLBFGS`, without ``memory``.
    """

    eps: float = 1e-5
    k_max: int = 100
    line_search: str = "auto"
    c1: float = 1e-4
    c2: float = 0.9
    stall_tol: float = 1e-12
    certified_subgradient: bool = True
    certify: bool = True

    def __post_init__(self):
        self._check()

    def _memory(self):
        return DenseBFGSMemory()
