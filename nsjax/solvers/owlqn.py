"""OWL-QN, the orthant-wise limited-memory quasi-Newton method of Andrew and Gao (2007), as
Yu et al. (2010) state it in Sec. 6.1.1, for J(w) = f(w) + μ‖w‖₁ with f smooth.

The L1 term is linear inside an orthant, so OWL-QN keeps an L-BFGS model of f alone and
moves orthant by orthant:

1. the pseudo-gradient ◇ = the minimum-norm subgradient of J (Keskar et al. 2016, eq. 4; Andrew and
   Gao's eq. 4): ∇f + μ sign(w) off zero; at w_i = 0 the point of [∂_i f − μ, ∂_i f + μ]
   nearest 0;
2. the quasi-Newton direction p = −B ◇, aligned with it: p_i = 0 where p_i ◇_i ≥ 0
   (the projection π(p, ◇) of Yu et al. (2010), Sec. 6.1.1);
3. the orthant ξ_i = sign(w_i), or sign(−◇_i) where w_i = 0;
4. projected backtracking: w(α) = P_ξ(w + α p), which zeroes the coordinates that leave the
   orthant, with α halved from 1 until J(w(α)) ≤ J(w) + γ ◇ᵀ(w(α) − w), γ = 1e-4;
5. the memory takes s = w_{t+1} − w_t, y = ∇f(w_{t+1}) − ∇f(w_t): the smooth part only.

``random_subgradient=True`` is OWL-QNr of Yu et al. (2010), Sec. 7.3: step 1 takes a random element
of ∂J(w) (uniform in [−μ, μ] on the zero coordinates) instead of ◇. It breaks OWL-QN, which
relies on ◇; `OWLQNStar` recovers from it.

Certified gap: u = ∇R(Xw) scaled into ‖Xᵀu‖∞ ≤ μ is a dual point (`Problem.dual_value`);
its bound costs no product with X. Stops on the gap ≤ tol·max(1, |J|), or (the paper's
rule) when J's relative decrease averaged over 5 steps falls below ``stall_tol``.

References: see docs/references.md.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.regularizers import min_norm_subgradient, orthant, project_orthant
from nsjax.results import RESULTS
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers.base import (
    STALL_WINDOW,
    Core,
    Solver,
    count,
    counters,
    terminate_or_stall,
)
from nsjax.solvers.capabilities import Takes
from nsjax.solvers.memory import LBFGSMemory


class OrthantStep(NamedTuple):
    w: jax.Array
    S: jax.Array
    value: jax.Array
    change: jax.Array  # J(w_new) − J(w), resolved below J's rounding (`Problem.value_change`)
    evaluations: jax.Array  # trial points tried
    products: jax.Array  # products with X spent on trial points that left the orthant
    ok: jax.Array  # sufficient decrease found


def orthant_backtracking(problem, w, S, p, dS, xi, g_xi, alpha0, c1, max_trials):
    """Step 4 of OWL-QN: the projected backtracking search along p in the orthant ξ.

    Trial points w(α) = P_ξ(w + α p) (coordinates whose sign differs from ξ set to 0), α
    halved from ``alpha0`` until J(w(α)) − J(w) ≤ min(0, c1 g_ξᵀ(w(α) − w)) with g_ξ = ∇f + μξ
    (the min: a clipped step can turn g_ξᵀ(w(α) − w) positive; J must not rise), at most
    ``max_trials`` trial points,
    which is ◇ᵀ(w(α) − w) for OWL-QN's aligned direction and the directional derivative of
    J along w(α) − w in general. The scores cost nothing while no coordinate is clipped
    (S + α X p), one product with X otherwise. The change of J is computed term by term
    (`Problem.value_change`): near the optimum the decrease falls below J's rounding long
    before the certified gap (which shrinks like its square root) closes.
    """

    def trial(alpha):
        x = project_orthant(w + alpha * p, xi)
        clipped = jnp.any(x != w + alpha * p)
        Sx = jax.lax.cond(clipped, lambda: problem.scores(x), lambda: S + alpha * dS)
        return x, Sx, problem.value_change(w, S, x, Sx), clipped

    def sufficient(x, change):
        return change <= jnp.minimum(0.0, c1 * jnp.vdot(g_xi, x - w))

    def cond(c):
        alpha, x, Sx, vx, n, k, ok = c
        return ~ok & (n < max_trials)

    def body(c):
        alpha, *_, n, k, _ = c
        alpha = 0.5 * alpha
        x, Sx, vx, clipped = trial(alpha)
        return alpha, x, Sx, vx, n + 1, k + clipped, sufficient(x, vx)

    x, Sx, vx, clipped = trial(alpha0)
    init = (alpha0, x, Sx, vx, jnp.ones((), jnp.int32), clipped.astype(jnp.int32),
            sufficient(x, vx))
    _, x, Sx, change, n, k, ok = jax.lax.while_loop(cond, body, init)
    return OrthantStep(x, Sx, problem.value(x, Sx), change, n, k, ok)


class OWLQNState(NamedTuple):
    core: Core  # w_t, J(w_t), the dual value of ∇R(X w_t), counters
    S: jax.Array  # X w_t
    grad: jax.Array  # ∇f(w_t)
    u: jax.Array  # ∇R(S): ∇f = Xᵀu + the regularizer's smooth gradient
    mem: tuple  # L-BFGS pairs of the smooth part f
    fresh: jax.Array  # True while the memory is empty (first step: α₀ = 1/‖◇‖)
    recent: jax.Array  # the total change of J (resolved below its rounding) at the last
    #                    STALL_WINDOW + 1 steps, oldest first: the stall rule's odometer
    status: jax.Array  # RESULTS.running, or the failure that ends the run
    t: jax.Array  # steps taken (the random_subgradient draws are keyed on it)


@solver_options
class OWLQN(Solver):
    """OWL-QN (Andrew and Gao 2007; Yu et al. 2010, Sec. 6.1.1) for a smooth loss + L1 or
    elastic net (with L2 alone it is L-BFGS with a backtracking search).

    Args:
        memory: number m of (s, y) pairs of the smooth part kept, an int >= 1 (and
            <= 2**31 - 1); `check` refuses, before compiling, an m whose 2·m·d numbers do
            not fit in the machine's memory.
        c1: the sufficient-decrease constant γ of the backtracking search, a finite number
            in (0, 1).
        max_halvings: cap on trial points per step (then ``linesearch_failed``), an int
            >= 1.
        stall_tol: stop (``stalled``) when J's relative decrease averaged over the last 5
            steps is below this (0: when J stopped decreasing; decreases are resolved below
            J's rounding): Andrew and Gao's rule, here a fallback behind the gap. A finite
            number >= 0. Their 1e-5 (Yu et al. 2010, Sec. 7.3), or even 1e-12, stops before the
            certified gap closes: the gap of the scaled gradient shrinks like ‖◇‖·‖w‖, the
            square root of J's error.
        random_subgradient: OWL-QNr (Yu et al. 2010, Sec. 7.3): start from a random subgradient
            instead of the pseudo-gradient (a robustness experiment, not for use). True or
            False.
        seed: the seed of ``random_subgradient``, an int (any that `jax.random.key` takes:
            between -2**63 and 2**63 - 1).

    Stops on the certified gap J(w) − D(s u) ≤ tol·max(1, |J|) (module docstring).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.OWLQN(), tol=1e-8)
        >>> sol.result, int((sol.w != 0).sum())    # exact zeros: a sparse model
        (<RESULTS.successful: 0>, 11)
    """

    memory: int = 10
    c1: float = 1e-4
    max_halvings: int = 50
    stall_tol: float = 0.0
    random_subgradient: bool = False
    seed: int = 0

    def __post_init__(self):
        options = Options(self)
        options.int("memory", low=1)
        options.real("c1", 0, 1, low_open=True, high_open=True)
        options.int("max_halvings", low=1)
        options.real("stall_tol", 0)
        options.bool("random_subgradient")
        options.int("seed", low=-(2**63), high=2**63 - 1)  # what jax.random.key takes

    #: It models f = R(X·) + the smooth part of λΩ and treats μ‖w‖₁ exactly.
    takes: ClassVar[Takes] = Takes(losses=("smooth",), regularizer="split")

    def check(self, problem):
        """Refuse, before compiling, a ``memory`` whose 2·m·d numbers do not fit in the
        machine's memory (`nsjax.solvers.LBFGSMemory.nbytes`)."""
        self.quasi_newton_memory().check(problem, type(self).__name__, "memory")

    def quasi_newton_memory(self):
        """The L-BFGS memory of the smooth part."""
        return LBFGSMemory(self.memory)

    # -- the algorithm ----------------------------------------------------------------
    def init(self, problem, w0) -> OWLQNState:
        S = problem.scores(w0)
        grad, u = problem.smooth_grad(w0, S)
        stats = counters(matvecs=2, linesearch_evaluations=0, skipped_updates=0,
                         direction_iterations=0, restarts=0)
        core = Core(w0, problem.value(w0, S), problem.smooth_dual_value(w0, grad, u), stats)
        return OWLQNState(core, S, grad, u, self.quasi_newton_memory().init(w0),
                          jnp.array(True),
                          jnp.full(STALL_WINDOW + 1, jnp.nan, problem.dtype).at[-1].set(0.0),
                          jnp.asarray(RESULTS.running, jnp.int32), jnp.zeros((), jnp.int32))

    def start_subgradient(self, problem, state: OWLQNState):
        """The pseudo-gradient ◇, or for ``random_subgradient`` an element of ∂J(w) drawn
        uniformly on the zero coordinates."""
        w, mu = state.core.w, problem.mu
        if not self.random_subgradient:
            return min_norm_subgradient(w, state.grad, mu)
        key = jax.random.fold_in(jax.random.key(self.seed), state.t)
        r = jax.random.uniform(key, w.shape, w.dtype, -1.0, 1.0)
        return state.grad + mu * jnp.where(w != 0, jnp.sign(w), r)

    def direction(self, problem, state: OWLQNState, g):
        """(p, X p, ξ, direction-finding iterations): steps 2–3 (`OWLQNStar` replaces them)."""
        p = -self.quasi_newton_memory().apply(state.mem, g)
        p = jnp.where(p * g < 0, p, 0.0)  # π(p, ◇): keep the components that descend
        xi = orthant(state.core.w, g)
        return p, problem.scores(p), xi, jnp.zeros((), jnp.int32)

    def step(self, problem, state: OWLQNState) -> OWLQNState:
        w, S, value, mu = state.core.w, state.S, state.core.value, problem.mu
        g = self.start_subgradient(problem, state)
        p, dS, xi, iterations = self.direction(problem, state, g)
        # Components that would leave ξ at a zero coordinate never move (OWL-QN* has such
        # components; OWL-QN's aligned p has none): drop them, so that the search's scores
        # stay S + αXp (one product here) instead of a product at every trial point.
        moves = (w != 0) | (jnp.sign(p) == xi)
        removed = jnp.any((p != 0) & ~moves)
        p = jnp.where(moves, p, 0.0)
        dS = jax.lax.cond(removed, lambda: problem.scores(p), lambda: dS)
        # J's directional derivative along p in ξ.
        descent = jnp.vdot(state.grad + mu * xi, p) < 0
        # Andrew and Gao's first step: α₀ = 1/‖◇‖ while B = I.
        norm = jnp.sqrt(jnp.vdot(g, g))
        alpha0 = jnp.where(state.fresh, 1.0 / jnp.where(norm > 0, norm, 1.0), 1.0)
        ls = orthant_backtracking(problem, w, S, p, dS, xi, state.grad + mu * xi,
                                  alpha0.astype(w.dtype), self.c1, self.max_halvings)
        move = descent & ls.ok
        w_new = jnp.where(move, ls.w, w)
        S_new = jnp.where(move, ls.S, S)
        value_new = jnp.where(move, ls.value, value)
        grad, u = problem.smooth_grad(w_new, S_new)
        memory = self.quasi_newton_memory()
        mem, skipped = memory.update(state.mem, w_new - w, grad - state.grad, accept=move)
        # No descent direction under the learned metric: forget it (B = I, from which the
        # pseudo-gradient always descends) and try again before giving up, as SubLBFGS.
        restart = ~descent & ~state.fresh
        mem = memory.reset(mem, restart)
        status = jnp.where(restart, RESULTS.running,
                           jnp.where(~descent, RESULTS.direction_failed,
                                     jnp.where(~ls.ok, RESULTS.linesearch_failed,
                                               RESULTS.running)))
        stats = count(state.core.stats, matvecs=2 + removed + ls.products + 2 * iterations,
                      linesearch_evaluations=ls.evaluations, skipped_updates=move & skipped,
                      direction_iterations=iterations, restarts=restart)
        core = Core(w_new, value_new, problem.smooth_dual_value(w_new, grad, u), stats)
        return OWLQNState(core, S_new, grad, u, mem, (state.fresh & ~(move & ~skipped)) | restart,
                          jnp.concatenate([state.recent[1:], state.recent[-1:] +
                                           jnp.where(move, ls.change, 0.0)]),
                          status.astype(jnp.int32), state.t + 1)

    def terminate(self, problem, state: OWLQNState, best, tol):
        """(done, result): the certified gap, then failures, then the stall rule."""
        return terminate_or_stall(state.core.value, state.recent, state.status, best, tol,
                                  self.stall_tol, floor=0.0)
