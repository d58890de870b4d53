"""AGM-EF-∞ with adaptive L (Zhang et al. 2010, Alg. 1–2, Sec. 3.3) for the linear SVM, in the
primal (smoothed hinge, Sec. 5.1.1) or in the dual (Sec. 5.1.2 / 5.3).

AGM-EF minimizes a composite F(x) = f(x) + Ψ(x), f L-smooth, Ψ λ₂-strongly convex with an
easy prox, by keeping the estimate function (eq. 16)

    ψ_k(x) = ½‖x − x₀‖² + Σᵢ≤k aᵢ [Ψ(x) + f(uᵢ) + ⟨∇f(uᵢ), x − uᵢ⟩]

and the invariant A_k F(x_k) ≤ min ψ_k (15), A_k = Σ aᵢ; F(x_k) − F* ≤ ½‖x* − x₀‖²/A_k (17),
with A_k ~ k² for λ = λ₁ + λ₂ = 0 and growing geometrically for λ > 0 (Theorem 6). Here
λ₁ = 0 (f is treated as merely convex). The geometry is Euclidean (d = ½‖·‖², σ = 1), or in
the primal scheme with `nsjax.regularizers.Entropy` the entropy one: d = Σ wᵢ log wᵢ on the
(capped) simplex, σ = 1 in ‖·‖₁, Δ the relative entropy, Ψ = λΔ(·, w⁰) λ-strongly convex
with respect to d, and the model minimizer of step 9 a capped soft-max (Assumption 2;
`Entropy.bregman_prox`).

Memory is constant (Sec. 3.1): ψ_k is kept as Ḡ = Σ aᵢ∇f(uᵢ)/A_k and C̄ = Σ aᵢ(f(uᵢ) −
⟨∇f(uᵢ), uᵢ⟩)/A_k, so z_k = argmin ψ_k = prox of Ψ at a known point (step 9). Everything is
held divided by A_k (1/A_k is carried, not A_k, which overflows after a few thousand steps
when it grows geometrically): step 5's root is solved for ρ = a_{k+1}/A_k.

Adaptive L (Alg. 2): each step starts from L_k/γ_d and multiplies by γ_u until (15) holds at
the new point, A_{k+1}F(x_{k+1}) ≤ ψ_{k+1}(z_{k+1}) (to rounding); the first estimate is a
power-iteration estimate of σ_max(X)² (from below, as Alg. 2 asks: L̃ ≤ L). Each trial costs
two products with X (∇f at u, and the image of z).

The two schemes, on J(w) = λ/2‖w‖² + (1/n)Σᵢ max(0, 1 − yᵢ(⟨xᵢ, w⟩ + b)) with the dual
D(α) = Σα − ‖Xᵀ(y∘α)‖²/(2λ) over Q₂ = [0, 1/n]ⁿ (∩ {Σyᵢαᵢ = 0} with a bias):

- ``scheme="primal"`` (Sec. 5.1.1): x = w, f(w) = g*_μ(Aw) = max_{α∈Q₂} Σαᵢ(1 − yᵢxᵢᵀw) −
  μ/2‖α‖² (the smoothed hinge), Ψ = λ/2‖w‖² (λ₂ = λ > 0: linear rate) — or any regularizer
  with a prox: L1 (Example 2, the L1-SVM; λ₂ = 0) and the elastic net, whose dual point is
  scaled into ‖Xᵀ(y∘α)‖∞ ≤ μ for the bound (`Problem.dual_value`) —, L = σ_max(X)²/μ and
  μ = ε/D₂ (eq. 57) with D₂ = max_{Q₂} ½‖α‖² = 1/(2n), ε = ``epsilon``: J_μ ≤ J ≤ J_μ + ε, so
  an ε-accurate minimizer of J_μ is 2ε-accurate for J (Theorem 19). The dual points are
  (22): α_k = Σ aᵢ α(uᵢ)/A_k, and Xᵀ(y∘α_k) = −Ḡ costs nothing.
- ``scheme="primal"`` with a smooth loss (Logistic, Squared): the composite J = f + Ψ itself,
  f(w) = R(Xw) (no smoothing, ``epsilon`` unused), L first estimated as σ_max(X)² times R's
  largest curvature at the start; the dual points are (22) with ∇R(Xuᵢ) for α(uᵢ), and
  the bound is `Problem.dual_value` of their average.
- ``scheme="dual"`` (Sec. 5.1.2, and 5.3 with ``epsilon=None``): x = α, f(α) = −Σα +
  ‖Xᵀ(y∘α)‖²/(2λ), Ψ = μ/2‖α‖² + ι_{Q₂} (μ = ε/D₂, or 0 without smoothing), L = σ_max(X)²/λ.
  The primal points are (22) with the roles swapped: w_k = Σ aᵢ w(uᵢ)/A_k, w(α) = Xᵀ(y∘α)/λ,
  and X w_k = y∘(Ḡ + 1) costs nothing either.

The certified gap recorded at every step is the true one, J(w_k) − D(α_k) (α_k ∈ Q₂ always),
not the smoothed problem's: with smoothing it stops near ε (J − D ≤ J_μ − D_μ + ε, since
D_μ = D − μ/2‖α‖² ≥ D − ε), without it closes as O(1/k²). `smoothed_gap` gives F's own gap
J_μ(w_k) − D_μ(α_k), the quantity of Theorem 10 that decays linearly when λ₁ + λ₂ > 0.

The third scheme of Sec. 5, decreasing smoothness (Sec. 5.2: the excessive gap technique),
is `nsjax.solvers.Pragam`; AGM-EF-1 (Alg. 3–4) is `nsjax.solvers.AGMEF1`.

Each scheme is an object holding its maps (`nsjax.solvers._agm_ef_schemes`, where their
contract is written): `DualScheme`, and `PrimalScheme` with its variants in the entropy
geometry (`EntropyScheme`) and under a constraint (`ConstrainedScheme`), the primal
scheme's f chosen by the loss's declared capabilities (`PrimalRisk`: the smoothed hinge, a
smooth loss, a loss's own smoothing). The option ``scheme`` names the class (`SCHEMES`),
`AGMEF.scheme_for` builds its object for a problem, and the loops of Alg. 1–4 call its maps
without branching on the scheme, the regularizer or the loss.

In the entropy geometry the first L is σ_max(X)²/μ, an upper bound on the constant in
‖·‖₁ (max_j ‖X_{:j}‖²/μ ≤ σ_max(X)²/μ), not the optimistic estimate Alg. 2 asks for: each
step divides it by γ_d, so it falls to the right scale within a few steps. A caller's w⁰
with zero weights (where the entropy geometry cannot leave the boundary) is moved towards
the uniform weights by 1e-3 to give the prox centre x₀; the recorded start is w⁰ itself.
Each step's backtracking on L stops after `MAX_RAISES` raises (a factor γ_u^64).

References:
    Zhang et al. (2010): Xinhua Zhang, Ankan Saha and S.V.N. Vishwanathan, "Regularized Risk
    Minimization by Nesterov's Accelerated Gradient Methods: Algorithmic Extensions and
    Empirical Studies", arXiv:1011.0472, 2010. The other works cited here: docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.problem import is_traced
from nsjax.solvers._agm_ef_schemes import SCHEMES, Scheme
from nsjax.solvers._agm_ef_schemes import WEIGHT_FLOOR as WEIGHT_FLOOR  # (re-exported)
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers._svm_dual import SVM_TAKES, check_lipschitz_options
from nsjax.solvers.base import Core, Solver, count, counters
from nsjax.solvers.capabilities import Takes

PROX_FUNCTIONS = ("uniform", "optimized")
MAX_RAISES = 64  # raises of L within one step (Alg. 2, steps 8–11): a factor γ_u^64


def _average(old_w, old, new_w, new):
    """old_w·old + new_w·new for a dual point (an array, or a tuple of arrays)."""
    return jax.tree_util.tree_map(lambda a, b: old_w * a + new_w * b, old, new)


def _entropy_geometry(problem):
    return getattr(problem.coefficient_reg, "geometry", "euclidean") == "entropy"


class AGMEFState(NamedTuple):
    core: Core  # the primal point w_k (and b_k), J(w_k), D(α_k), counters
    x: jax.Array  # x_k: w (primal scheme) or α (dual scheme)
    z: jax.Array  # z_k = argmin ψ_k
    Kx: jax.Array  # the image of x_k: X w (primal) or Xᵀ(y∘α) (dual)
    Kz: jax.Array  # the image of z_k
    x0: jax.Array  # the prox centre of ψ₀
    G: jax.Array  # Ḡ_k = Σ aᵢ ∇f(uᵢ) / A_k
    C: jax.Array  # C̄_k = Σ aᵢ (f(uᵢ) − ⟨∇f(uᵢ), uᵢ⟩) / A_k
    other: Any  # the other side's average (22): α_k (primal scheme), w_k (dual)
    inv_A: jax.Array  # 1/A_k (inf before the first step)
    lipschitz: jax.Array  # L_k, the last accepted estimate
    mu: jax.Array  # μ, the smoothing (0: none)


class _Trial(NamedTuple):
    """One attempt at step k+1 with a given L (Alg. 2, steps 8–11)."""

    x: Any
    z: Any
    Kx: Any
    Kz: Any
    G: Any
    C: Any
    other: Any
    inv_A: Any
    holds: Any  # (15) holds at x_{k+1}


@solver_options
class AGMEF(Solver):
    """AGM-EF-∞ with adaptive L (Zhang et al. 2010, Alg. 2) for the linear SVM (binary hinge + L2,
    with or without a bias), in the primal or the dual (module docstring). The primal scheme
    also takes L1, ElasticNet (Euclidean prox), `nsjax.regularizers.Entropy` (the entropy
    geometry: Bregman prox steps on the capped simplex) and the constraint
    `nsjax.regularizers.ElasticNetBall` (prox = projection), and, without a bias, in place
    of the smoothed hinge the smooth losses Logistic and Squared, or a loss with its own
    smoothing (`nsjax.losses.MaxScore`'s soft-max, `nsjax.losses.F1Loss`'s Gibbs
    distribution over labelings; μ = ε / the loss's ``smoothing_diameter``).

    Args:
        scheme: "dual" (default: Sec. 5.1.2 / 5.3, AGM-EF on −D) or "primal" (Sec. 5.1.1,
            AGM-EF on the smoothed primal J_μ).
        epsilon: the smoothing target ε, a finite number > 0 (μ = 2nε, eq. 57), or None:
            needed by "primal" (default 1e-6: its certified gap on J then stops near ε, so
            set ε below the accuracy you want); optional for "dual" (None: no smoothing,
            Sec. 5.3).
        gamma_d, gamma_u: Alg. 2's down and up factors of L, finite numbers in (1, 1e6).
        spectral_norm_sq: σ_max(X)², if known (a finite number > 0); default None: a
            power-iteration estimate.
        power_iterations: power iterations of that estimate, an int >= 1.
        prox_function: the primal scheme's prox-function on Q₂ for the hinge: "uniform"
            (d = ½‖α‖², the default) or "optimized" (Zhang et al. 2010, §5.6: d = ½Σ bᵢ²αᵢ² with
            bᵢ² = |xᵢᵀv*|, v* the top eigenvector of XᵀX by power iteration, floored at
            `WEIGHT_FLOOR` times their mean; the paper's bound on L·D is lower on rows of
            very different sizes, but the adaptive L follows the local curvature, not
            that bound, so the steps need not fall, and the bound exchanges a min and a
            max, so the true first L can be larger). Without a bias.

    Stops on the certified gap J(w_k) − D(α_k) ≤ tol·max(1, |J|) (best so far of both).
    ``bound`` names the a-priori bound the scheme obeys (Theorem 6/19, 10 or 20).

    ``stats``: ``matvecs`` (products with X or Xᵀ), ``lipschitz_increases`` (trials that
    failed (15) and raised L).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.AGMEF(), tol=1e-6, max_steps=10_000)
        >>> sol.result, bool(sol.gap <= 1e-6)
        (<RESULTS.successful: 0>, True)
    """

    scheme: str = "dual"
    epsilon: float | None = None
    gamma_d: float = 2.0
    gamma_u: float = 2.0
    spectral_norm_sq: float | None = None
    power_iterations: int = 20
    prox_function: str = "uniform"

    @property
    def takes(self) -> Takes:
        """The dual scheme: the binary hinge with L2 (`SVM_TAKES`); the primal scheme needs
        only Ψ's prox and ∇f (Zhang et al. 2010, Examples 2 and 5): any regularizer, the
        entropy geometry and constraints too, and a smooth loss (f = R(Xw) itself) or one
        that gives its own smoothing, a bias with the hinge only (its b comes from exact
        line searches on the hinge's lines)."""
        if self.scheme != "primal":
            return SVM_TAKES
        return dataclasses.replace(SVM_TAKES, losses=("svm", "smooth", "smoothed"),
                                   regularizer="any", bias="svm",
                                   geometries=("euclidean", "entropy"), constraints=True)

    @classmethod
    def variants(cls) -> tuple:
        """The dual and the primal scheme (they take different problems)."""
        return (cls(), cls(scheme="primal"))

    def __post_init__(self):
        options = Options(self)
        try:
            options.choice("scheme", SCHEMES)
        except ValueError as error:
            raise type(error)(f"{error} (Decreasing smoothness, Sec. 5.2, is "
                              "nsjax.solvers.Pragam.)") from None
        options.real("epsilon", 0, low_open=True, none=True, example=1e-6)
        for name in ("gamma_d", "gamma_u"):
            options.real(name, 1, 1e6, low_open=True, high_open=True)
        check_lipschitz_options(options)
        options.choice("prox_function", PROX_FUNCTIONS)

    @property
    def optimized(self) -> bool:
        """The optimized prox-function of §5.6 (a vector μ, one per example)."""
        return self.prox_function == "optimized"

    @property
    def bound(self) -> str:
        """Which a-priori bound the run's gaps obey (the recorded gap is always the true
        J(w_k) − D(α_k), valid whatever the bound)."""
        return SCHEMES[self.scheme].bound(self.target)

    @property
    def target(self):
        """ε of the smoothing (None: none): ``epsilon``, or the scheme's default."""
        if self.epsilon is None:
            return SCHEMES[self.scheme].default_epsilon
        return self.epsilon

    def scheme_for(self, problem) -> Scheme:
        """The object of the scheme ``scheme`` for this problem (module docstring)."""
        return SCHEMES[self.scheme].of(problem, self.target, self.optimized)

    def check(self, problem):
        name = type(self).__name__
        if self.optimized and not (self.scheme == "primal" and problem.loss.dual_form == "svm"
                                   and not problem.bias):
            raise ValueError(f"{name}(prox_function='optimized') smooths the hinge in the "
                             "primal scheme, without a bias (Zhang et al. 2010, §5.6): use "
                             "scheme='primal', Hinge and bias=False, or prox_function="
                             "'uniform'.")
        if not _entropy_geometry(problem):
            return
        if problem.bias:
            raise ValueError(f"{name} takes Entropy without a bias only (the bias would be "
                             "a free coordinate outside the simplex): use bias=False.")
        cap, d = problem.reg.cap, problem.X.shape[1]
        if not is_traced(cap) and not float(cap) * d >= 1:
            raise ValueError(f"Entropy's cap must be >= 1/d = {1 / d:.3g} for the capped "
                             f"simplex in R^{d} to be non-empty; got cap={float(cap):.3g}.")

    # -- the scheme's maps that callers use (`nsjax.solvers._agm_ef_schemes`) --------------
    def smoothing_and_norm(self, problem):
        """(μ, the σ_max² that `first_lipschitz` takes, products spent). With the optimized
        prox-function (§5.6) μ is a vector, μᵢ = (ε/D) bᵢ² with D = max_{Q₂} d = Σbᵢ²/(2n²)
        (eq. 70), and the norm is λ_max(Xᵀ diag(1/μ) X), the L of g*_μ(Xw) (Sec. 5.6's
        H₁), both by power iteration."""
        return self.scheme_for(problem).smoothing_and_norm(problem, self.spectral_norm_sq,
                                                           self.power_iterations)

    def first_lipschitz(self, problem, sq, mu, Kx0):
        """The first estimate of f's L: σ_max(X)²/λ (dual), σ_max(X)²/μ (smoothed hinge), or
        σ_max(X)² times R's curvature at the start (a smooth loss: the largest diagonal
        entry of ∇²R there; 1/(4n) at zero scores for Logistic, 1/n for Squared)."""
        return self.scheme_for(problem).first_lipschitz(problem, sq, mu, Kx0)

    def smoothed_gap(self, problem, state: AGMEFState):
        """F's own duality gap (Sec. 3.3, eq. 23): J_μ(w_k) − D_μ(α_k) for "primal",
        −D_μ(α_k) − (−J_μ(w_k)) for "dual" (without a bias: J_μ needs the scores of w_k).
        For diagnostics and the linear-rate test; one product for the dual scheme."""
        return self.scheme_for(problem).smoothed_gap(problem, state)

    # -- Alg. 1–2 ------------------------------------------------------------------------
    def init(self, problem, w0) -> AGMEFState:
        dt, scheme = problem.dtype, self.scheme_for(problem)
        mu, sq, products = self.smoothing_and_norm(problem)
        coef, bias = problem.split_bias(w0)
        S0 = problem.scores(w0)
        x0 = scheme.start(problem, coef, S0)
        Kx0 = scheme.image(problem, x0)
        L = scheme.first_lipschitz(problem, sq, mu, Kx0)
        _, grad, other = scheme.gradient(problem, x0, Kx0, mu)
        zero = jnp.zeros((), dt)
        # The recorded start is the caller's w⁰ (a warm start is never lost), with the bound
        # of the dual point at x₀ (α(x₀) for the primal scheme, α₀ itself for the dual).
        lower = scheme.certificate(problem, x0, Kx0, grad, other, bias)[2]
        stats = counters(matvecs=products + 3, lipschitz_increases=0)
        return AGMEFState(
            core=Core(w0, problem.value(w0, S0), lower, stats), x=x0, z=x0, Kx=Kx0, Kz=Kx0, x0=x0,
            G=jnp.zeros_like(grad), C=zero, other=jax.tree_util.tree_map(jnp.zeros_like, other),
            inv_A=jnp.asarray(jnp.inf, dt), lipschitz=L * self.gamma_d, mu=mu)

    def attempt(self, problem, state: AGMEFState, L) -> _Trial:
        """Steps 5–10 of Alg. 1 with the estimate L, and whether (15) holds after them."""
        scheme = self.scheme_for(problem)
        lam2 = scheme.strong_convexity(problem, state.mu)
        lam = lam2  # λ = λ₁ + λ₂ with λ₁ = 0
        eps = state.inv_A
        first = jnp.isinf(eps)
        # Step 5 divided by A_k²: L ρ² − ρ(λ + 1/A + λ₂) − (λ + 1/A) = 0, ρ = a/A_k.
        safe_eps = jnp.where(first, 0.0, eps)
        b = lam + safe_eps + lam2
        rho = (b + jnp.sqrt(b * b + 4 * L * (lam + safe_eps))) / (2 * L)
        new_w = jnp.where(first, 1.0, rho / (1 + rho))  # a_{k+1}/A_{k+1}
        old_w = 1.0 - new_w  # A_k/A_{k+1}
        inv_A = jnp.where(first, L, safe_eps / (1 + rho))  # A₁ = a₁ = 1/L (λ₁ = 0)
        # Step 6–7 divided by A_k: τ₁ = 1/A + λ, τ₃ = λ₂ a/A_{k+1}, u = θ z + (1 − θ) x.
        tau1 = safe_eps + lam
        tau3 = lam2 * new_w
        theta = jnp.where(first, 1.0, new_w * tau1 / jnp.where(tau1 + tau3 > 0,
                                                                 tau1 + tau3, 1.0))
        u = theta * state.z + (1 - theta) * state.x
        Ku = theta * state.Kz + (1 - theta) * state.Kx
        f_u, grad, other_u = scheme.gradient(problem, u, Ku, state.mu)
        # Step 8: ψ_{k+1} = ψ_k + a_{k+1}[Ψ + ℓ_f(·; u)], kept as averages.
        G = old_w * state.G + new_w * grad
        C = old_w * state.C + new_w * (f_u - jnp.vdot(grad, u))
        other = _average(old_w, state.other, new_w, other_u)
        # Step 9: z = argmin_x (1/A)Δ(x, x₀) + Ψ(x) + ⟨Ḡ, x⟩ (divided by A).
        z = scheme.prox_step(problem, state.x0, inv_A, G, state.mu)
        Kz = scheme.image(problem, z)
        x = old_w * state.x + new_w * z  # step 10
        Kx = old_w * state.Kx + new_w * Kz
        # (15) at k+1, divided by A_{k+1}: F(x) ≤ ψ(z)/A.
        F = (scheme.smooth_part(problem, x, Kx, state.mu)
             + scheme.regularizer(problem, x, state.mu))
        psi = (inv_A * scheme.divergence(problem, z, state.x0)
               + scheme.regularizer(problem, z, state.mu) + C + jnp.vdot(G, z))
        slack = 64 * jnp.finfo(F.dtype).eps * (jnp.abs(F) + jnp.abs(psi) + jnp.abs(C))
        return _Trial(x, z, Kx, Kz, G, C, other, inv_A, F <= psi + slack)

    def step(self, problem, state: AGMEFState) -> AGMEFState:
        L0 = state.lipschitz / self.gamma_d  # Alg. 2, step 6 (and 8 once)

        def fails(carry):
            return ~carry[0].holds & (carry[2] < MAX_RAISES)

        def raise_L(carry):
            _, L, raises = carry
            L = L * self.gamma_u
            return self.attempt(problem, state, L), L, raises + 1

        trial, L, raises = jax.lax.while_loop(
            fails, raise_L, (self.attempt(problem, state, L0), L0, jnp.zeros((), jnp.int32)))
        bias = problem.split_bias(state.core.w)[1]
        w_b, value, lower = self.scheme_for(problem).certificate(
            problem, trial.x, trial.Kx, trial.G, trial.other, bias)
        stats = count(state.core.stats, matvecs=2 * (1 + raises), lipschitz_increases=raises)
        return AGMEFState(
            core=Core(w_b, value, lower, stats), x=trial.x, z=trial.z, Kx=trial.Kx,
            Kz=trial.Kz, x0=state.x0, G=trial.G, C=trial.C, other=trial.other,
            inv_A=trial.inv_A, lipschitz=L, mu=state.mu)
