"""Pragam and Pragam-b: primal–adjoint gap minimization for the linear SVM (Saha et al. 2009,
Sec. 4, Alg. 1), and for max-margin Markov networks on chains (App. E.1).

The binary hinge with L2, J(w) = λ/2 ‖w‖² + (1/n) Σᵢ max(0, 1 − yᵢ⟨xᵢ, w⟩), has the adjoint
(eq. 21)

    D(α) = Σᵢ αᵢ − ‖Xᵀ(y∘α)‖² / (2λ),   α ∈ Q₂ = [0, 1/n]ⁿ,

and with an unregularized bias (Pragam-b: `Problem(..., bias=True)`, J(w) = λ/2‖w‖² +
min_b (1/n) Σᵢ max(0, 1 − yᵢ(⟨xᵢ, w⟩ + b)), eq. 20) the same D on Q₂ ∩ {Σᵢ yᵢαᵢ = 0}
(eq. 22), where Π_{Q₂} is the exact projection onto a box cut by a hyperplane
(`nsjax.projections.project_box_section`, Saha et al. 2009, App. B),

concave with an L-Lipschitz gradient ∇D(α) = 1 − y∘X w(α), L = σ_max(X)²/λ. Nesterov's
excessive-gap method runs on the pair (w, α) with three maps (eqs. 23–25):

    α_μ(w) = Π_{Q₂}((1 − y∘Xw)/μ)           (23: the dual point of J smoothed by μ‖α‖²/2)
    w(α)   = Xᵀ(y∘α)/λ                      (24)
    v(α)   = Π_{Q₂}(α + ∇D(α)/L)             (25: a projected gradient step on D)

and, with μ₀ = 2L, α₀ = v(α₋₁), w₀ = w(α₋₁), for k = 0, 1, …: τ = 2/(k + 3),
β = (1 − τ)α_k + τ α_{μ_k}(w_k), w_{k+1} = (1 − τ)w_k + τ w(β), α_{k+1} = v(β),
μ_{k+1} = (1 − τ)μ_k. Every α_k is dual feasible, so J(w_k) − D(α_k) is a certified gap at
every step; with L ≥ the true constant it is ≤ 4 L D₂ / ((k+1)(k+2)) (eq. 26; σ₂ = 1,
D₂ = max_{Q₂} ‖α‖²/2 = 1/(2n)).

The same Alg. 1 runs on M³N (`nsjax.losses.ChainHinge`): α is then the chains' pairwise
marginals, Q₂ their local marginal polytope (exact projection onto it: App. E.3.1,
`nsjax.projections.project_chain_marginals`), and the maps above are those of
`nsjax.solvers._chain_dual` (`Adjoint` below names the pieces either dual gives). Eq. 26
holds with D₂ = (L − 1)/(2N²) for N chains of L tokens and that dual's Lipschitz constant
‖XᵀB‖²/λ (B: marginals to score rows), which the backtracking below reaches from σ_max(X)²/λ.

Where this departs from the paper, and why:

- α₋₁: the paper picks it at random in Q₂; here α₋₁ = α_{μ₀}(w⁰) for the caller's start w⁰
  (any point of Q₂ keeps the excessive-gap condition), so a warm start is used.
- L: the paper (Sec. 5) estimates it by Nesterov's backtracking ([14]) without details. Here
  L starts from a power-iteration estimate of σ_max(X)²/λ (from below), and each step checks
  the one inequality the method needs, D(v) ≥ D(β) + ⟨∇D(β), v − β⟩ − L/2 ‖v − β‖², which for
  this quadratic D reads λ‖w(v) − w(β)‖² ≤ L‖v − β‖² and costs nothing extra; where it
  fails, L grows (at least doubles) and v is recomputed (one more product with Xᵀ). L never
  shrinks. μ_k is held as a multiple of L (μ_k = c_k L, c₀ = 2, c_{k+1} = (1 − τ)c_k), so it
  follows L's growth. With ``spectral_norm_sq`` given (σ_max(X)², e.g.
  ``numpy.linalg.norm(X, 2)**2``), L = σ²/λ exactly, as in eq. 26.
- Scores: X w_k is carried by the same recurrence as w_k (no product for J(w_k)); w(α_{k+1})
  is computed afresh each step for D(α_{k+1}). Three products with X or Xᵀ a step.
- The bias of w_k (Pragam-b): Alg. 1's w_k has none (J takes the min over b); its value
  J(w_k) is evaluated at b_k = argmin_b, found by two exact line searches along ±b from
  b_{k−1} (`nsjax.solvers.line_search`, no product with X), and ``Solution.w`` ends with b_k.

References:
    Saha et al. (2009): Ankan Saha, Xinhua Zhang and S.V.N. Vishwanathan, "Lower Bounds for BMRM
    and Faster Rates for Training SVMs", arXiv:0909.1334, 2009. The other works cited here:
    docs/references.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers import _chain_dual as chain_dual
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers._svm_dual import (
    SVM_TAKES,
    check_lipschitz_options,
    primal_of,
    project_dual,
    spectral_norm_sq,
    svm_dual_value,
    with_best_bias,
)
from nsjax.solvers.base import Core, Solver, count, counters
from nsjax.solvers.capabilities import Takes


class Adjoint(NamedTuple):
    """The pieces of an adjoint D(α) = ⟨ℓ, α⟩ − ‖Xᵀu(α)‖²/(2λ) on a set Q₂ that Alg. 1
    uses: ``gradient(problem, S)`` = ∇D(α) from S = X w(α) (also α_μ(w)'s argument times μ,
    eq. 23), ``project`` = Π_{Q₂}, ``primal`` = w(α) (eq. 24), ``value`` = D(α) given w(α);
    ``check(problem, name)`` refuses, before compiling, data the adjoint cannot take
    (beyond `Pragam.takes`)."""

    check: Callable
    gradient: Callable
    project: Callable
    primal: Callable
    value: Callable


#: The linear SVM (eq. 21): ∇D(α) = 1 − y∘X w(α), Q₂ the box (cut by Σyα = 0 with a bias).
SVM = Adjoint(lambda problem, name: None, lambda problem, S: 1.0 - problem.y * S, project_dual,
              primal_of, svm_dual_value)
#: M³N on chains (Saha et al. 2009, App. E.1): α the pairwise marginals (`chain_dual`).
CHAIN = Adjoint(chain_dual.check_chain_problem, chain_dual.gradient, chain_dual.project,
                chain_dual.primal, chain_dual.value)


def adjoint_of(problem) -> Adjoint:
    """The adjoint Pragam runs on for this problem's loss."""
    return CHAIN if problem.loss.dual_form == "chain" else SVM


class PragamState(NamedTuple):
    core: Core  # w_k (and b_k with a bias), J(w_k), D(α_k), counters (at init: w⁰)
    w: jax.Array  # w_k of Alg. 1 (no bias)
    S: jax.Array  # X w_k (by the recurrence of w_k)
    alpha: jax.Array  # α_k ∈ Q₂
    lipschitz: jax.Array  # L, the current estimate of the Lipschitz constant of ∇D
    mu_scale: jax.Array  # c_k: μ_k = c_k L
    k: jax.Array  # the step index of Alg. 1


@solver_options
class Pragam(Solver):
    """Pragam (Saha et al. 2009, Alg. 1): O(1/k²) on the duality gap of the linear SVM; Pragam-b
    on a problem with ``bias=True``; M³N on chains (`nsjax.losses.ChainHinge`, App. E).

    Args:
        spectral_norm_sq: σ_max(X)², if known, a finite number > 0 (then L = σ²/λ exactly,
            as in eq. 26); default None: a power-iteration estimate, raised by backtracking
            (module docstring). Independent of λ, so one value serves a whole sweep.
        power_iterations: power iterations of the estimate of σ_max(X)² (two products
            with X each, at init), an int >= 1.

    Stops on the certified gap J(w_k) − max_{k'≤k} D(α_{k'}) ≤ tol·max(1, |J|). Its steps
    are cheap (three products with X or Xᵀ) but many: O(√(L/ε)) of them, thousands at
    tol = 1e-6 on real data, so raise ``max_steps`` (default 500 in `nsjax.solve`).

    ``stats``: ``matvecs`` (products with X or Xᵀ, the power iterations included),
    ``lipschitz_increases`` (backtracking steps that raised L).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.Pragam(), tol=1e-6, max_steps=10_000)
        >>> sol.result, bool(sol.gap <= 1e-6)  # tol · max(1, |J|), J < 1 here
        (<RESULTS.successful: 0>, True)
    """

    spectral_norm_sq: float | None = None
    power_iterations: int = 20

    #: The binary hinge (the adjoint SVM) or ChainHinge (CHAIN), otherwise as `SVM_TAKES`.
    takes: ClassVar[Takes] = dataclasses.replace(SVM_TAKES, losses=("svm", "chain"))

    #: The a-priori bound on the recorded gap (with L ≥ the true constant).
    bound: ClassVar[str] = ("eq. 26: J(w_k) − D(α_k) ≤ 4 L D₂ / ((k+1)(k+2)), D₂ = 1/(2n), "
                            "σ₂ = 1")

    def __post_init__(self):
        check_lipschitz_options(Options(self))

    def check(self, problem):
        adjoint_of(problem).check(problem, "Pragam")

    # -- the maps of eqs. 23–25 ---------------------------------------------------------
    def smoothed_dual(self, problem, S, mu):
        """α_μ(w) = Π_{Q₂}((1 − y∘Xw)/μ) (eq. 23; M³N: the edge potentials over μ), from
        the scores S = Xw."""
        dual = adjoint_of(problem)
        return dual.project(problem, dual.gradient(problem, S) / mu)

    def gradient_step(self, problem, beta, w_beta, S_beta, lipschitz):
        """v(β) (eq. 25) with L checked on the step and raised until it holds (module
        docstring): returns (v, w(v), L, raises)."""
        lam, dual = problem.lam, adjoint_of(problem)
        grad = dual.gradient(problem, S_beta)  # ∇D(β)
        slack = 1.0 + jnp.sqrt(jnp.finfo(beta.dtype).eps)  # rounding of both sides

        def trial(L):
            v = dual.project(problem, beta + grad / L)
            w_v = dual.primal(problem, v)
            dw, da = w_v - w_beta, v - beta
            curvature = lam * jnp.vdot(dw, dw)  # = ‖Xᵀ(y∘(v − β))‖²/λ
            step = jnp.vdot(da, da)
            return v, w_v, curvature, step

        def too_small(c):
            _, _, curvature, step, L, _ = c
            return curvature > slack * L * step

        def raise_L(c):
            _, _, curvature, step, L, raises = c
            L = jnp.maximum(2.0 * L, curvature / jnp.maximum(step, jnp.finfo(L.dtype).tiny))
            return (*trial(L), L, raises + 1)

        v, w_v, _, _, L, raises = jax.lax.while_loop(
            too_small, raise_L, (*trial(lipschitz), lipschitz, jnp.zeros((), jnp.int32)))
        return v, w_v, L, raises

    # -- Alg. 1 --------------------------------------------------------------------------
    def init(self, problem, w0) -> PragamState:
        dt = problem.dtype
        sq, products = spectral_norm_sq(problem, self.spectral_norm_sq, self.power_iterations)
        L = sq / problem.lam
        # α₋₁ = α_μ₀(w⁰); with a bias, b⁰ only shifts the projection's multiplier.
        S0 = problem.scores(w0)
        alpha_start = self.smoothed_dual(problem, S0, 2.0 * L)
        w = adjoint_of(problem).primal(problem, alpha_start)
        S = problem.X.mv(w)
        alpha, w_alpha, L, raises = self.gradient_step(problem, alpha_start, w, S, L)
        stats = counters(matvecs=products + 4 + raises, lipschitz_increases=raises)
        # The recorded start is the caller's w⁰ (so a warm start is never lost), with the
        # bound D(α₀); w₀ of Alg. 1 is recorded after the first step.
        core = Core(w0, problem.value(w0, S0), adjoint_of(problem).value(problem, alpha, w_alpha),
                    stats)
        return PragamState(core, w, S, alpha, L, jnp.asarray(2.0, dt),
                           jnp.zeros((), jnp.int32))

    def step(self, problem, state: PragamState) -> PragamState:
        k, L = state.k, state.lipschitz
        tau = (2.0 / (k + 3)).astype(L.dtype)
        alpha_hat = self.smoothed_dual(problem, state.S, state.mu_scale * L)
        beta = (1 - tau) * state.alpha + tau * alpha_hat
        w_beta = adjoint_of(problem).primal(problem, beta)
        S_beta = problem.X.mv(w_beta)
        alpha, w_alpha, L, raises = self.gradient_step(problem, beta, w_beta, S_beta, L)
        bias = problem.split_bias(state.core.w)[1]
        w = (1 - tau) * state.w + tau * w_beta
        S = (1 - tau) * state.S + tau * S_beta
        stats = count(state.core.stats, matvecs=3 + raises, lipschitz_increases=raises)
        w_b, value = with_best_bias(problem, w, S, bias)
        core = Core(w_b, value, adjoint_of(problem).value(problem, alpha, w_alpha), stats)
        return PragamState(core, w, S, alpha, L, (1 - tau) * state.mu_scale, k + 1)
