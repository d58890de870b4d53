"""subBFGS and subLBFGS: Yu et al. (2010), Alg. 1 (Sec. 2) and its limited-memory variant
(Sec. 2.5).

One outer step: find a descent direction p (Alg. 2, `_direction.py`), search the line w + ηp
(exactly, Alg. 3 generalised, for losses that give their lines; else by the subgradient Wolfe
conditions (16)), move, take a subgradient at the new point and update the quasi-Newton
memory with s = ηp, y = g_{t+1} − g_t (skipped, and counted, when sᵀy is too small). The
two methods are one class: the memory object (`LBFGSMemory` or `DenseBFGSMemory`) and the
line search object (`ExactLineSearch` or `WolfeLineSearch`) are its parts.

Stopping. The paper stops on relative change only and names the missing stopping rule as
future work (Sec. 8). Here every step yields a dual point for free: direction finding's
aggregated subgradient ḡ = ∂(λΩ) part + Xᵀū is a convex combination of elements of ∂J(w),
so ū is a dual-feasible point whose coefficients are fractional on the margin set (exactly
where an exact line search puts the iterates). Its dual value (`Problem.dual_value`) is the
step's lower bound; the loop keeps the best, and the solver stops when the certified gap
is ≤ tol · max(1, |J|). As a fallback the paper's rule also applies: the relative decrease
of J averaged over the last 5 steps below ``stall_tol`` stops with `RESULTS.stalled`.

References:
    Yu et al. (2010): Jin Yu, S.V.N. Vishwanathan, Simon Günter and Nicol N. Schraudolph, "A
    Quasi-Newton Approach to Nonsmooth Convex Optimization Problems in Machine Learning",
    Journal of Machine Learning Research 11:1145–1200, 2010. The other works cited here:
    docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.results import RESULTS
from nsjax.solvers._direction import find_direction
from nsjax.solvers._options import Options, check_constants, int_rule, solver_options
from nsjax.solvers.base import (
    STALL_WINDOW,
    Core,
    converged,
    count,
    counters,
    terminate_or_stall,
)
from nsjax.solvers.capabilities import Takes
from nsjax.solvers.line_search import ExactLineSearch, WolfeLineSearch
from nsjax.solvers.memory import DenseBFGSMemory, LBFGSMemory, curvature_ok
from nsjax.solvers.phases import QuasiNewtonPhase


class PendingUpdate(NamedTuple):
    """A memory update left for `SubLBFGS.commit`: store (s, y) if ``accept`` (and the
    curvature allows), then forget every pair if ``restart``."""

    s: jax.Array
    y: jax.Array
    accept: jax.Array
    restart: jax.Array


#: The line searches `SubLBFGS` takes by name.
LINE_SEARCHES = ("auto", "exact", "wolfe")


class SubQNState(NamedTuple):
    core: Core  # w_t, J(w_t), the dual value of this step's ū, counters
    S: jax.Array  # scores X w, updated as S + η X p (no extra matvec)
    g: jax.Array  # the subgradient g_t used to start direction finding
    u: jax.Array  # its score part
    g_reg: jax.Array  # its regularizer part: g = g_reg + Xᵀu
    mem: tuple
    fresh: jax.Array  # True while the memory holds no pair (B = I)
    recent: jax.Array  # the last STALL_WINDOW + 1 values of J, oldest first
    status: jax.Array  # RESULTS.running, or the failure that ends the run


@solver_options
class SubLBFGS(QuasiNewtonPhase):
    """subLBFGS (Yu et al. 2010, Alg. 1 with the L-BFGS memory of Sec. 2.5).

    Args:
        memory: number m of (s, y) pairs kept (Sec. 7.1: m = 15), an int >= 1 (and
            <= 2**31 - 1; `check` refuses, before compiling, an m whose 2·m·d numbers do
            not fit in the machine's memory), or a memory object (`LBFGSMemory(m, scaling)`,
            or `DenseBFGSMemory()`, which is `SubBFGS`).
        eps: direction-finding tolerance ε on the model gap ε⁽ⁱ⁾ (Alg. 2; Sec. 7: 1e-5), a
            finite number > 0.
        k_max: cap on direction-finding iterations per step (Alg. 2), an int >= 1.
        line_search: "exact" (Alg. 3 generalised; losses with lines), "wolfe" (16), "auto"
            (exact where possible), or an `ExactLineSearch` / `WolfeLineSearch` object.
        c1, c2: the subgradient Wolfe constants of (16), for "wolfe" and "auto": finite
            numbers with 0 < c1 < c2 < 1.
        stall_tol: stop (RESULTS.stalled) when J's relative decrease averaged over the last
            5 steps is below this (the paper's rule, Sec. 7, footnote 6), a finite
            number >= 0.
        scaling: for an int ``memory``: start B from B₀ = (sᵀy / yᵀy) I
            (Nocedal and Wright); False keeps B₀ = I as Alg. 1 does, which behaves better
            when memory is large and the problem small and very nonsmooth.
        certified_subgradient: take g_{t+1} as the subgradient the exact line search
            certifies (g_{t+1}ᵀp_t = 0), which keeps sᵀy > 0; False takes the loss's
            default subgradient (β = ½ on hinges).
        certify: where the loss has a tight certificate (the hinges) and the loop ends
            without a certified gap ≤ tol, spend at most 4 · (2 · 50 + 3) products with X or
            Xᵀ on one tighter dual point (`nsjax.losses._hinge_certificate`; counted in
            stats["matvecs"]).

    ``scaling``, ``certified_subgradient`` and ``certify`` are True or False (not 1 or
    "yes"). A bad option raises at construction: a TypeError (also a ValueError) for a
    wrong type, a ValueError for a value out of range, both naming the option.

    Stops on the certified duality gap ``J(w) − max D ≤ tol · max(1, |J|)``.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(memory=15), tol=1e-3)
        >>> sol.result, bool(sol.gap <= 1e-3 * max(1.0, float(sol.value)))
        (<RESULTS.successful: 0>, True)
    """

    memory: int | LBFGSMemory | DenseBFGSMemory = 15
    eps: float = 1e-5
    k_max: int = 100
    line_search: str | ExactLineSearch | WolfeLineSearch = "auto"
    c1: float = 1e-4
    c2: float = 0.9
    stall_tol: float = 1e-12
    scaling: bool = True
    certified_subgradient: bool = True
    certify: bool = True

    def __post_init__(self):
        options = Options(self)
        memory = self.memory
        if not isinstance(memory, (LBFGSMemory, DenseBFGSMemory)):
            memory = options.int("memory", low=1, example=15, rule=int_rule(1) + (
                " or a memory object (LBFGSMemory(m), DenseBFGSMemory())"))
        options.real("eps", 0, low_open=True)
        options.int("k_max", low=1)
        options.choice("line_search", LINE_SEARCHES, (ExactLineSearch, WolfeLineSearch))
        c1 = options.real("c1", 0, 1, low_open=True, high_open=True)
        c2 = options.real("c2", 0, 1, low_open=True, high_open=True)
        check_constants(options.owner, c1, c2)
        options.real("stall_tol", 0)
        for name in ("scaling", "certified_subgradient", "certify"):
            options.bool(name)
        # An option that the chosen part ignores is a mistake, not a no-op.
        defaults = {f.name: f.default for f in dataclasses.fields(SubLBFGS)}
        if not isinstance(memory, int) and self.scaling != defaults["scaling"]:
            raise ValueError("scaling applies to an int memory; set it on the memory object "
                             "instead, e.g. LBFGSMemory(15, scaling=False).")
        if not isinstance(self.line_search, str) and (self.c1, self.c2) != (
                defaults["c1"], defaults["c2"]):
            raise ValueError("c1 and c2 apply to line_search='wolfe' or 'auto'; set them on the "
                             "line search object instead, e.g. WolfeLineSearch(c1, c2).")

    # -- parts ------------------------------------------------------------------------
    def quasi_newton_memory(self):
        """The memory object (B of Alg. 1)."""
        if isinstance(self.memory, int):
            return LBFGSMemory(self.memory, self.scaling)
        return self.memory

    def line_search_for(self, problem):
        """The line search object this solver uses on ``problem``."""
        ls = self.line_search
        if ls == "auto":
            ls = "exact" if problem.has_lines else "wolfe"
        if ls == "exact":
            return ExactLineSearch()
        if ls == "wolfe":
            return WolfeLineSearch(self.c1, self.c2)
        return ls

    @property
    def takes(self) -> Takes:
        """Any loss and regularizer in R^d, and a bias (only the problem's oracles are used:
        the bias row is one more coordinate); with the exact line search, a loss that
        gives its lines."""
        exact = self.line_search == "exact" or isinstance(self.line_search, ExactLineSearch)
        return Takes(losses=("lines",) if exact else ("any",), bias=True)

    def check(self, problem):
        """Refuse, before compiling, a memory whose buffers do not fit in the memory of the
        machine (`LBFGSMemory.nbytes`: 2·m·d numbers for d weights;
        `DenseBFGSMemory.nbytes`: 3·d²)."""
        self.check_memory(problem)

    def check_memory(self, problem, reserved=(0, ""), owner=None):
        """The size check of `check`, with ``reserved`` = (bytes, what) taken by other
        buffers; ``owner``: the solver named in the message (default this class)."""
        memory = self.quasi_newton_memory()
        name = owner or type(self).__name__
        if isinstance(self.memory, LBFGSMemory):  # the m of the user's memory object
            memory.check(problem, f"{name}(memory=LBFGSMemory(...))", "m", reserved)
        else:
            memory.check(problem, name, "memory", reserved)

    # -- the algorithm ----------------------------------------------------------------
    def init(self, problem, w0) -> SubQNState:
        S = problem.scores(w0)
        g, u, g_reg = problem.subgradient(w0, S)
        value = problem.value(w0, S)
        # u ∈ ∂R(S), so it is already a dual point.
        lower = problem.dual_value(u, S=S, Xtu=g - g_reg)
        stats = counters(matvecs=2, direction_iterations=0, linesearch_evaluations=0,
                         skipped_updates=0, restarts=0)
        return SubQNState(
            core=Core(w0, value, lower, stats), S=S, g=g, u=u, g_reg=g_reg,
            mem=self.quasi_newton_memory().init(w0), fresh=jnp.array(True),
            recent=jnp.full(STALL_WINDOW + 1, jnp.nan, problem.dtype),
            status=jnp.asarray(RESULTS.running, jnp.int32),
        )

    def step(self, problem, state: SubQNState) -> SubQNState:
        return self.advance(problem, state)[0]

    def advance(self, problem, state: SubQNState):
        """One step of Alg. 1: (the next state, the `Direction` found at w_t), so that a
        caller can reuse direction finding's aggregated subgradient."""
        new, d, pending = self.propose(problem, state)
        return self.commit(new, pending), d

    def commit(self, state: SubQNState, pending: PendingUpdate) -> SubQNState:
        """The memory update that `propose` left pending."""
        memory = self.quasi_newton_memory()
        mem, _ = memory.update(state.mem, pending.s, pending.y, accept=pending.accept)
        return state._replace(mem=memory.reset(mem, pending.restart))

    def propose(self, problem, state: SubQNState):
        """One step of Alg. 1 up to the memory update: (the next state, still with the old
        memory; the `Direction`; the `PendingUpdate`). Split so that a caller that runs
        the step inside a branch (the hybrid) can write the (m, d) memory outside it: a
        branch that returns it makes XLA copy it at every step."""
        memory = self.quasi_newton_memory()
        w, S = state.core.w, state.S
        d = find_direction(problem, memory, state.mem, w, S, state.g, state.u, state.g_reg,
                           self.eps, self.k_max)
        lower = problem.dual_value(d.ubar, S=S, Xtu=d.gbar - d.rbar)
        ls = self.line_search_for(problem).search(problem, w, S, d.p, d.dS)
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
            g_new, u_new, g_reg_new = problem.certified_subgradient(w_new, S_new, d.p, d.dS,
                                                                  ls.theta)
        else:
            g_new, u_new, g_reg_new = problem.subgradient(w_new, S_new)
        pair = (w_new - w, g_new - state.g)
        skipped = ~curvature_ok(*pair)  # the memory skips such a pair
        fresh = state.fresh & ~(move & ~skipped)
        # No descent direction under the learned metric: forget it (B = I) and try again
        # before giving up; a kink-polluted memory is the usual cause near the optimum.
        restart = ~d.ok & ~state.fresh
        fresh = fresh | restart

        status = jnp.where(
            restart, RESULTS.running,
            jnp.where(~d.ok, RESULTS.direction_failed,
            jnp.where(~jnp.isfinite(eta), RESULTS.unbounded,
                      jnp.where(~move, RESULTS.linesearch_failed, RESULTS.running))))
        stats = count(state.core.stats, matvecs=2 + 2 * d.iterations,
                      direction_iterations=d.iterations,
                      linesearch_evaluations=ls.evaluations,
                      skipped_updates=move & skipped, restarts=restart)
        return SubQNState(
            core=Core(w_new, value, lower, stats), S=S_new, g=g_new, u=u_new, g_reg=g_reg_new,
            mem=state.mem, fresh=fresh,
            recent=jnp.concatenate([state.recent[1:], value[None]]),
            status=status.astype(jnp.int32),
        ), d, PendingUpdate(*pair, move, restart)

    # -- the rest of the phase's seam (`QuasiNewtonPhase`: the hybrid's phase 1) ------------
    @staticmethod
    def no_update(state: SubQNState) -> PendingUpdate:
        """The `PendingUpdate` that `commit` skips."""
        w = state.core.w
        return PendingUpdate(jnp.zeros_like(w), jnp.zeros_like(w), jnp.array(False),
                             jnp.array(False))

    @staticmethod
    def subgradient_cut(problem, state: SubQNState):
        """(a, b): the cut of the risk from the subgradient at w_t, g = g_reg + Xᵀu."""
        return problem.dual_cut(state.u, state.S, state.g - state.g_reg)

    @staticmethod
    def direction_cut(problem, state: SubQNState, direction):
        """(a, b): the cut of the risk from direction finding's ū at ``state``'s w_t."""
        return problem.dual_cut(direction.ubar, state.S, direction.gbar - direction.rbar)

    @staticmethod
    def take_buffers(state: SubQNState):
        """(the state without its memory, the memory: (m, d) pairs, or d × d)."""
        return state._replace(mem=None), state.mem

    @staticmethod
    def give_buffers(state: SubQNState, buffers) -> SubQNState:
        """The state with its memory ``buffers`` back in."""
        return state._replace(mem=buffers)

    def terminate(self, problem, state: SubQNState, best, tol):
        """(done, result): the certified gap, then failures, then the stall rule."""
        return terminate_or_stall(state.core.value, state.recent, state.status, best, tol,
                                  self.stall_tol)

    def postprocess(self, problem, state: SubQNState, best, result, tol):
        """Where the loss has a tight certificate (the hinges) and the run is not yet
        certified, tighten the lower bound with it (``certify``). Reads and changes only
        ``state.core``: also the hybrid's end (`QuasiNewtonPhase.postprocess`)."""
        if not (self.certify and problem.has_dual_certificate):
            return state, best, result
        return certify_at_end(problem, state, best, result, tol)


def certify_at_end(problem, state, best, result, tol):
    """The loss's tight certificate at the best iterate (`Problem.dual_certificate`) where
    the run is not yet certified to tol; its products are counted in stats["matvecs"].
    Returns (state, best, result) with the raised lower bound (and `RESULTS.successful`
    where that closes the gap)."""
    done = converged(best.value, best.gap, tol)
    lower, products = jax.lax.cond(
        done, lambda: (best.lower, jnp.zeros((), jnp.int32)),
        lambda: problem.dual_certificate(best.w))
    best = best.raise_lower(lower)
    stats = count(state.core.stats, matvecs=products)
    state = state._replace(core=state.core._replace(stats=stats))
    ok = converged(best.value, best.gap, tol) & (result != RESULTS.nonfinite)
    return state, best, jnp.where(ok, RESULTS.successful, result).astype(jnp.int32)


@solver_options
class SubBFGS(SubLBFGS):
    """subBFGS (Yu et al. 2010, Alg. 1) with a dense d × d matrix B: for small d only.

    The same solver as `SubLBFGS` with ``memory=DenseBFGSMemory()``; options as there.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.SubBFGS(), max_steps=2000, tol=1e-8)
        >>> sol.result
        <RESULTS.successful: 0>
    """

    memory: int | LBFGSMemory | DenseBFGSMemory = DenseBFGSMemory()

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.memory, DenseBFGSMemory):
            raise ValueError(f"SubBFGS: memory must be DenseBFGSMemory() (SubBFGS keeps a "
                             f"dense matrix); for memory={self.memory!r} use SubLBFGS.")
