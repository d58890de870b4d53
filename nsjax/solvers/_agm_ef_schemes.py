"""AGM-EF's schemes as objects: the composite F = f + Ψ that `nsjax.solvers.AGMEF` (Zhang et al.
2010, Alg. 1–2) and `nsjax.solvers.AGMEF1` (Alg. 3–4) minimize, with the maps their loops
call, one class per scheme of Sec. 5.1 (the formulas: `nsjax.solvers.agm_ef`'s docstring).

The option ``scheme`` names the scheme (`SCHEMES`); `Scheme.of` builds its object for a
problem once, from the problem's structure alone (the regularizer's ``geometry`` and
``constraint``, the loss's declared capabilities), so the loops never branch on the
scheme, the regularizer or the loss:

- `DualScheme` (Sec. 5.1.2 and 5.3): x = α ∈ Q₂, f(α) = −Σα + ‖Xᵀ(y∘α)‖²/(2λ),
  Ψ = μ/2‖α‖² + ι_{Q₂}; the primal points are averaged (eq. 22 with the roles swapped).
- `PrimalScheme` (Sec. 5.1.1): x = w, f(w) = g(Xw) (`PrimalRisk`), Ψ = λΩ with a
  Euclidean prox (L2 in closed form; L1 and the elastic net through ``prox``).
- `EntropyScheme`: the primal scheme in the entropy geometry (`nsjax.regularizers.Entropy`,
  Assumption 2): Δ the relative entropy, the model minimizer ``bregman_prox``, and the
  prox centre moved off the simplex's boundary.
- `ConstrainedScheme`: the primal scheme under a constraint
  (`nsjax.regularizers.ElasticNetBall`, Example 6): Ψ's prox is the projection, and Ψ's
  value leaves out the indicator the iterates satisfy by construction.

The primal scheme's f comes from the loss, one `PrimalRisk` each:

- `SmoothedHinge` (Sec. 5.1.1): the hinge's g*_μ over the box Q₂ (eq. 53), μ = ε/D₂ = 2nε
  (eq. 57); a loss with ``dual_form == "svm"``. `OptimizedHinge`: the same with the
  optimized prox-function of §5.6 (a vector μ).
- `SmoothRisk`: a smooth loss (``Loss.smooth``): R itself, no smoothing.
- `OwnSmoothing`: a loss that gives its own smoothing (``smoothed``, μ = ε / its
  ``smoothing_diameter``: `nsjax.losses.MaxScore`'s soft-max), whose averaged dual points
  are simplex points; `GibbsSmoothing`: one that also gives ``smoothed_dual``
  (`nsjax.losses.F1Loss`), whose bound comes from the expected Δ it averages.

The contract of a scheme, in the arguments the loops pass (``problem``; x a point of the
scheme's variable; Kx its image; μ the smoothing, a scalar or a vector; ``other`` the other
side's averaged point, eq. 22):

- ``start(problem, coef, S0)``: x₀ from the caller's coefficients and scores;
- ``image(problem, x)``: K x (one product: X w, or Xᵀ(y∘α));
- ``smooth_part(problem, x, Kx, mu)``: f(x) from its image (no product);
- ``gradient(problem, u, Ku, mu)``: (f(u), ∇f(u), the other side's point at u), one product;
- ``regularizer(problem, x, mu)``: Ψ(x) on its domain;
- ``divergence(problem, x, centre)``: Δ(x, centre) of the prox-function;
- ``strong_convexity(problem, mu)``: λ₂ of Ψ with respect to Δ (λ₁ = 0);
- ``prox_step(problem, centre, weight, linear, mu)``: argmin weight·Δ(·, centre) +
  ⟨linear, ·⟩ + Ψ (Alg. 1 step 9, Alg. 3 step 10);
- ``smoothing_and_norm(problem, given, iterations)``: (μ, the norm ``first_lipschitz``
  takes, products spent), with ``given`` σ_max(X)² or None (then ``iterations`` power
  iterations);
- ``first_lipschitz(problem, sq, mu, Kx0)``: the first estimate of f's L;
- ``certificate(problem, x, Kx, G, other, bias)``: (the primal point with its best bias,
  J there, D of the dual point), the true certified gap's two sides;
- ``smoothed_gap(problem, state)``: F's own gap (Sec. 3.3, eq. 23);
- ``bound(target)`` and ``default_epsilon``, on the class: the a-priori bound the scheme's
  gaps obey, and ε where the caller gives none.

References: see docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp

from nsjax.solvers._svm_dual import (
    project_dual,
    smoothed_hinge,
    spectral_norm_sq,
    svm_dual_value,
    top_eigenpair,
    with_best_bias,
)

#: The optimized prox-function's weights bᵢ² = |xᵢᵀv*| are floored at this fraction of their
#: mean: an example orthogonal to v* would get bᵢ = 0, a hinge left unsmoothed (L = ∞).
WEIGHT_FLOOR = 1e-2


def _euclidean(x, centre):
    """½‖x − centre‖²."""
    d = x - centre
    return 0.5 * jnp.vdot(d, d)


# -- the primal scheme's f = g(Xw), by loss ---------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PrimalRisk:
    """f(w) = g(S), S = Xw, for the primal scheme, and what its dual points give.

    ``target`` is ε of the smoothing (unused where the loss is smooth). Methods, in score
    space S (``point`` is what the scheme averages by eq. 22 into ``other``):

    - ``value(problem, S, mu)``: g(S);
    - ``gradient(problem, S, mu)``: (g(S), ∇_w g = Xᵀ∇g(S), the dual point at S);
    - ``smoothing(problem)``: μ;
    - ``first_lipschitz(problem, sq, mu, S0)``: L from sq = σ_max(X)² (or the norm
      `smoothing_and_norm` gives);
    - ``lower(problem, other, G)``: D of the averaged dual point ``other``, whose image
      Xᵀ(∇g) average is G = Ḡ;
    - ``smoothing_term(problem, other, mu)``: what the smoothing takes off D for D_μ.
    """

    target: float | None = None

    def smoothing_and_norm(self, problem, given, iterations):
        """(μ, σ_max(X)², products spent)."""
        mu = self.smoothing(problem)
        sq, products = spectral_norm_sq(problem, given, iterations)
        return mu, sq, products

    def first_lipschitz(self, problem, sq, mu, S0):
        """σ_max(X)²/μ: g*_μ's L is ‖X‖²/μ with a prox-function 1-strongly convex on Q₂."""
        return sq / mu


@dataclasses.dataclass(frozen=True)
class SmoothedHinge(PrimalRisk):
    """The binary hinge smoothed over its dual box Q₂ (Sec. 5.1.1, eq. 53): g*_μ(Xw) =
    max_{α∈Q₂} Σαᵢ(1 − yᵢxᵢᵀw) − μ/2‖α‖², μ = ε/D₂ = 2nε (eq. 57); the dual points are α
    (`nsjax.solvers._svm_dual.smoothed_hinge`, with a bias too)."""

    def value(self, problem, S, mu):
        return smoothed_hinge(problem, 1.0 - problem.y * S, mu)[0]

    def gradient(self, problem, S, mu):
        value, alpha = smoothed_hinge(problem, 1.0 - problem.y * S, mu)
        return value, -problem.X.rmv(problem.y * alpha), alpha

    def smoothing(self, problem):
        return jnp.asarray(2.0 * problem.X.shape[0] * self.target, problem.dtype)

    def lower(self, problem, other, G):
        """D(ᾱ) with Xᵀ(y∘ᾱ) = −Ḡ: in closed form for L2; else D(α) = Σα where
        ‖Xᵀ(y∘α)‖∞ ≤ μ, the dual point scaled into it (`Problem.dual_value`)."""
        y = problem.y
        if problem.coefficient_reg.quadratic:
            return jnp.sum(other) - 0.5 * jnp.vdot(G, G) / problem.lam
        return problem.dual_value(-y * other, Xtu=None if problem.bias else G)

    def smoothing_term(self, problem, other, mu):
        # (With L1 the dual point is scaled by s ≤ 1 into D's domain; μ/2‖α‖² ≥ its
        # μ/2‖sα‖², so this D_μ is a lower bound on the scaled point's.)
        return 0.5 * jnp.sum(mu * other * other)


@dataclasses.dataclass(frozen=True)
class OptimizedHinge(SmoothedHinge):
    """`SmoothedHinge` with the optimized prox-function of §5.6 (without a bias): μ a
    vector, μᵢ = (ε/D) bᵢ² with bᵢ² = |xᵢᵀv*| (v* the top eigenvector of XᵀX, floored at
    `WEIGHT_FLOOR` times their mean) and D = max_{Q₂} d = Σbᵢ²/(2n²) (eq. 70)."""

    def smoothing_and_norm(self, problem, given, iterations):
        """(μ, λ_max(Xᵀ diag(1/μ) X), products spent): the norm is the L of g*_μ(Xw)
        (Sec. 5.6's H₁), both by power iteration (``given`` is not used)."""
        X, n = problem.X, problem.X.shape[0]
        _, v = top_eigenpair(X, iterations)
        b2 = jnp.abs(X.mv(v))
        b2 = jnp.maximum(b2, WEIGHT_FLOOR * jnp.mean(b2) + jnp.finfo(b2.dtype).tiny)
        diameter = jnp.sum(b2) / (2.0 * n * n)
        mu = (self.target / diameter) * b2
        sq, _ = top_eigenpair(X, iterations, weights=1.0 / mu)
        return mu, jnp.maximum(sq, jnp.finfo(sq.dtype).tiny), 4 * iterations + 1

    def first_lipschitz(self, problem, sq, mu, S0):
        """sq itself: already λ_max(Xᵀ diag(1/μ) X) (`smoothing_and_norm`)."""
        return sq


@dataclasses.dataclass(frozen=True)
class SmoothRisk(PrimalRisk):
    """A smooth loss (``Loss.smooth``: Logistic, Squared): f(w) = R(Xw) itself, μ = 0; the
    dual points are u = ∇R(Xw), and the bound `Problem.dual_value` of their average."""

    def _at(self, problem, S):
        u = problem.loss.dscores(S, problem.y)
        return problem.loss.risk(S, problem.y), u, u

    def value(self, problem, S, mu):
        return self._at(problem, S)[0]

    def gradient(self, problem, S, mu):
        value, u, point = self._at(problem, S)
        return value, problem.X.rmv(u), point

    def smoothing(self, problem):
        return jnp.zeros((), problem.dtype)

    def first_lipschitz(self, problem, sq, mu, S0):
        """σ_max(X)² times R's largest curvature at the start (the largest diagonal entry
        of ∇²R there: 1/(4n) at zero scores for Logistic, 1/n for Squared)."""
        curvature = jnp.max(problem.loss.curvature(S0, problem.y))
        return sq * jnp.maximum(curvature, jnp.finfo(problem.dtype).tiny)

    def lower(self, problem, other, G):
        return problem.dual_value(other, Xtu=G)

    def smoothing_term(self, problem, other, mu):
        return jnp.zeros_like(mu)


@dataclasses.dataclass(frozen=True)
class OwnSmoothing(PrimalRisk):
    """A loss that gives its own smoothing, ``smoothed(S, μ, y)`` = (g*_μ(S), ∇g*_μ(S)),
    with μ = ε / its ``smoothing_diameter(n)`` (eq. 57; `nsjax.losses.MaxScore`'s
    soft-max). Its dual points are the gradients, points of the simplex, on which R* is
    finite: their average, which drifts off Σū = 1 by rounding, is rescaled onto it."""

    def _at(self, problem, S, mu):
        value, u = problem.loss.smoothed(S, mu, problem.y)
        return value, u, u

    def value(self, problem, S, mu):
        return self._at(problem, S, mu)[0]

    def gradient(self, problem, S, mu):
        value, u, point = self._at(problem, S, mu)
        return value, problem.X.rmv(u), point

    def smoothing(self, problem):
        n = problem.X.shape[0]
        return jnp.asarray(self.target / problem.loss.smoothing_diameter(n), problem.dtype)

    def lower(self, problem, other, G):
        # A simplex point averaged over many steps drifts off Σū = 1 by rounding, and R* is
        # finite only on the simplex: rescale (Xᵀū too).
        total = jnp.sum(other)
        other, G = other / total, G / total
        return problem.dual_value(other, Xtu=G)

    def smoothing_term(self, problem, other, mu):
        """μ d(ū), the loss's ``smoothing_term``, or 0 where it gives none."""
        if problem.loss.provides("smoothing_term"):
            return problem.loss.smoothing_term(other, mu)
        return jnp.zeros_like(mu)


@dataclasses.dataclass(frozen=True)
class GibbsSmoothing(OwnSmoothing):
    """A loss without a conjugate that gives ``smoothed_dual(S, μ, y)`` = (g*_μ(S), u,
    E_α[Δ]) (`nsjax.losses.F1Loss`: u = E_α[(y′ − y)/n] under the Gibbs distribution α,
    R*(u) ≤ −E_α[Δ]): the dual point averaged is (u, E_α[Δ]), and the bound is
    D(sū) ≥ sĒ[Δ] − (λΩ)*(−sXᵀū) (s ≤ 1 where the regularizer's dual points are scaled);
    no smoothing term."""

    def _at(self, problem, S, mu):
        value, u, expected = problem.loss.smoothed_dual(S, mu, problem.y)
        return value, u, (u, expected)

    def lower(self, problem, other, G):
        reg, expected = problem.coefficient_reg, other[1]
        lower = expected - reg.conjugate(-G)
        if reg.dual_points != "as is":  # sū mixes in y′ = y (Δ = 0), s ≤ 1
            s = reg.feasible_scale(-G)
            lower = jnp.fmax(lower, s * expected - reg.conjugate(-s * G))
        return lower

    def smoothing_term(self, problem, other, mu):
        return jnp.zeros_like(mu)


def risk_for(problem, target, optimized=False) -> PrimalRisk:
    """The primal scheme's f for the problem's loss (module docstring), from the loss's
    declared capabilities: the hinge's box dual (``dual_form == "svm"``; ``optimized``: the
    prox-function of §5.6), smooth, or its own smoothing (``smoothed``, ``smoothed_dual``)."""
    loss = problem.loss
    if loss.dual_form == "svm":
        return OptimizedHinge(target) if optimized else SmoothedHinge(target)
    if loss.smooth:
        return SmoothRisk(target)
    if loss.provides("smoothed_dual"):
        return GibbsSmoothing(target)
    return OwnSmoothing(target)


# -- the schemes ------------------------------------------------------------------------------
class Scheme:
    """The maps of one scheme (module docstring: the contract). Subclasses are frozen
    dataclasses, built by `of`."""

    #: ε where the caller gives none (None: no smoothing).
    default_epsilon: ClassVar[float | None] = None

    @classmethod
    def of(cls, problem, target, optimized=False) -> Scheme:
        """The scheme's object for ``problem``, with ε = ``target`` (None: no smoothing)
        and, for the hinge in the primal, the optimized prox-function (§5.6) or not."""
        raise NotImplementedError

    @staticmethod
    def bound(target) -> str:
        """The a-priori bound the scheme's gaps obey with ε = ``target``."""
        raise NotImplementedError

    def divergence(self, problem, x, centre):
        """Δ(x, centre) = ½‖x − centre‖² (the Euclidean prox-function)."""
        return _euclidean(x, centre)


@dataclasses.dataclass(frozen=True)
class DualScheme(Scheme):
    """Sec. 5.1.2 (and 5.3 with ``target`` None): AGM-EF on −D, x = α ∈ Q₂ (the box, cut by
    Σyα = 0 with a bias), f(α) = −Σα + ‖Xᵀ(y∘α)‖²/(2λ), L = σ_max(X)²/λ, Ψ = μ/2‖α‖² +
    ι_{Q₂} with μ = ε/D₂ = 2nε (or 0). The image is Xᵀ(y∘α); the primal points are
    w_k = Σ aᵢ w(uᵢ)/A_k with w(α) = Xᵀ(y∘α)/λ, and X w_k = y∘(Ḡ + 1) costs nothing."""

    target: float | None = None

    @classmethod
    def of(cls, problem, target, optimized=False) -> DualScheme:
        return cls(target)

    @staticmethod
    def bound(target) -> str:
        if target is None:
            return ("Sec. 5.3 / Theorem 10: J(w_k) − D(α_k) ≤ max_{Q₂} ½‖α − α₀‖² / A_k, "
                    "A_k ~ k² (no smoothing).")
        return ("Theorem 10 (eq. 23) for the smoothed pair: J_μ(w_k) − D_μ(α_k) ≤ "
                "max_{Q₂} ½‖α − α₀‖² / A_k, linear (μ > 0); J(w_k) − D(α_k) ≤ that + ε "
                "(Theorem 20).")

    def start(self, problem, coef, S0):
        """A start in Q₂ from w⁰: β = clip(1 − yᵢ sᵢ, 0, 1), the hinge's dual at w⁰."""
        margin = 1.0 - problem.y * S0
        return project_dual(problem, jnp.clip(margin, 0.0, 1.0) / problem.X.shape[0])

    def image(self, problem, x):
        return problem.X.rmv(problem.y * x)

    def smooth_part(self, problem, x, Kx, mu):
        return -jnp.sum(x) + 0.5 * jnp.vdot(Kx, Kx) / problem.lam

    def gradient(self, problem, u, Ku, mu):
        lam, y = problem.lam, problem.y
        w = Ku / lam  # w(α) = Xᵀ(y∘α)/λ
        return -jnp.sum(u) + 0.5 * lam * jnp.vdot(w, w), y * problem.X.mv(w) - 1.0, w

    def regularizer(self, problem, x, mu):
        return 0.5 * mu * jnp.vdot(x, x)

    def strong_convexity(self, problem, mu):
        return mu

    def prox_step(self, problem, centre, weight, linear, mu):
        # Written without 1/weight, which overflows once A_k (1/weight) has grown
        # geometrically: Ψ is μ/2‖·‖² on Q₂.
        return project_dual(problem, (weight * centre - linear) / (weight + mu))

    def smoothing(self, problem):
        """μ = ε/D₂ = 2nε (eq. 57), or 0 without smoothing."""
        if self.target is None:
            return jnp.zeros((), problem.dtype)
        return jnp.asarray(2.0 * problem.X.shape[0] * self.target, problem.dtype)

    def smoothing_and_norm(self, problem, given, iterations):
        mu = self.smoothing(problem)
        sq, products = spectral_norm_sq(problem, given, iterations)
        return mu, sq, products

    def first_lipschitz(self, problem, sq, mu, Kx0):
        """σ_max(X)²/λ."""
        return sq / problem.lam

    def certificate(self, problem, x, Kx, G, other, bias):
        """α = x_k, w_k = other, X w_k = y∘(Ḡ + 1)."""
        w, S = other, problem.y * (G + 1.0)
        lower = svm_dual_value(problem, x, Kx / problem.lam)
        w_b, value = with_best_bias(problem, w, S, bias)
        return w_b, value, lower

    def smoothed_gap(self, problem, state):
        """−D_μ(α_k) − (−J_μ(w_k)) (without a bias: J_μ needs the scores of w_k; one
        product)."""
        mu, y, lam = state.mu, problem.y, problem.lam
        alpha, w = state.x, state.other
        minus_D_mu = (self.smooth_part(problem, alpha, state.Kx, mu)
                      + 0.5 * mu * jnp.vdot(alpha, alpha))
        margin = 1.0 - y * problem.X.mv(w)
        smoothed = smoothed_hinge(problem, margin, jnp.maximum(mu, jnp.finfo(mu.dtype).tiny))[0]
        risk = jnp.where(mu > 0, smoothed, jnp.mean(jnp.maximum(margin, 0.0)))
        J_mu = risk + 0.5 * lam * jnp.vdot(w, w)
        return J_mu + minus_D_mu


@dataclasses.dataclass(frozen=True)
class PrimalScheme(Scheme):
    """Sec. 5.1.1: AGM-EF on J_μ, x = w, f(w) = g(Xw) (``risk``, a `PrimalRisk`), Ψ = λΩ
    of the coefficients with a Euclidean prox: L2 in closed form (λ₂ = λ: a linear rate),
    L1 (Example 2, λ₂ = 0) and the elastic net through the regularizer's ``prox``. The
    image is X w; the dual points are ᾱ_k = Σ aᵢ α(uᵢ)/A_k (eq. 22), whose image is Ḡ."""

    risk: PrimalRisk
    default_epsilon: ClassVar[float | None] = 1e-6

    @classmethod
    def of(cls, problem, target, optimized=False) -> PrimalScheme:
        """`EntropyScheme` in the entropy geometry, `ConstrainedScheme` under a constraint,
        else `PrimalScheme`, with the loss's `risk_for`."""
        reg = problem.coefficient_reg
        if getattr(reg, "geometry", "euclidean") == "entropy":
            kind = EntropyScheme
        elif getattr(reg, "constraint", False):
            kind = ConstrainedScheme
        else:
            kind = PrimalScheme
        return kind(risk_for(problem, target, optimized))

    @staticmethod
    def bound(target) -> str:
        return ("Theorem 6: J_μ(w_k) − min J_μ ≤ Δ(w*, w₀)/A_k (linear: λ > 0; J_μ = J "
                "for a smooth loss); Theorem 19: 2ε-accurate once the smoothed gap is ≤ ε. "
                "No a-priori bound on J(w_k) − D(α_k) where dom Ψ is unbounded "
                "(Sec. 5.1.1).")

    def start(self, problem, coef, S0):
        """The caller's coefficients, as they are."""
        return coef

    def image(self, problem, x):
        return problem.X.mv(x)

    def smooth_part(self, problem, x, Kx, mu):
        return self.risk.value(problem, Kx, mu)

    def gradient(self, problem, u, Ku, mu):
        return self.risk.gradient(problem, Ku, mu)

    def regularizer(self, problem, x, mu):
        """λΩ(x) of the coefficients."""
        return problem.coefficient_reg.value(x)

    def strong_convexity(self, problem, mu):
        """The curvature of λΩ's smooth part: λ for L2 and the elastic net, 0 for L1."""
        return problem.coefficient_reg.smooth_hvp(jnp.ones((), mu.dtype))

    def prox_step(self, problem, centre, weight, linear, mu):
        reg = problem.coefficient_reg
        if reg.quadratic:
            # Written without 1/weight, which overflows once A_k (1/weight) has grown
            # geometrically: Ψ is λ₂/2‖·‖².
            lam2 = self.strong_convexity(problem, mu)
            return (weight * centre - linear) / (weight + lam2)
        return reg.prox(centre - linear / weight, 1.0 / weight)  # L1, elastic net, a set

    def smoothing_and_norm(self, problem, given, iterations):
        return self.risk.smoothing_and_norm(problem, given, iterations)

    def first_lipschitz(self, problem, sq, mu, Kx0):
        return self.risk.first_lipschitz(problem, sq, mu, Kx0)

    def certificate(self, problem, x, Kx, G, other, bias):
        """w = x_k; the dual point ᾱ_k = other, whose image is Ḡ."""
        lower = self.risk.lower(problem, other, G)
        w_b, value = with_best_bias(problem, x, Kx, bias)
        return w_b, value, lower

    def smoothed_gap(self, problem, state):
        """J_μ(w_k) − D_μ(ᾱ_k), D_μ = D − the smoothing's term."""
        mu = state.mu
        F = (self.smooth_part(problem, state.x, state.Kx, mu)
             + self.regularizer(problem, state.x, mu))
        D = self.risk.lower(problem, state.other, state.G)
        return F - (D - self.risk.smoothing_term(problem, state.other, mu))


@dataclasses.dataclass(frozen=True)
class EntropyScheme(PrimalScheme):
    """The primal scheme in the entropy geometry (`nsjax.regularizers.Entropy`, Assumption 2):
    d = Σ wᵢ log wᵢ on the capped simplex, σ = 1 in ‖·‖₁, Δ the relative entropy, Ψ =
    λΔ(·, w⁰) λ-strongly convex with respect to d, and the model minimizer a capped
    soft-max (``bregman_prox``). The iterates are in the simplex by construction: Ψ's value
    leaves out its indicator (which rounding could trip, and fail (15) for ever)."""

    def start(self, problem, coef, S0):
        """The prox centre x₀: the caller's w⁰ moved towards the uniform weights by 1e-3
        where it has zero weights (there the entropy geometry cannot leave the boundary)."""
        delta = jnp.where(jnp.min(coef) > 0, 0.0, 1e-3)
        return (1 - delta) * coef + delta / coef.shape[0]

    def regularizer(self, problem, x, mu):
        return problem.coefficient_reg.smooth_value(x)

    def divergence(self, problem, x, centre):
        """The relative entropy Σ xᵢ log(xᵢ/cᵢ) (both sum to 1)."""
        return problem.coefficient_reg.divergence(x, centre)

    def prox_step(self, problem, centre, weight, linear, mu):
        return problem.coefficient_reg.bregman_prox(centre, weight, linear)


@dataclasses.dataclass(frozen=True)
class ConstrainedScheme(PrimalScheme):
    """The primal scheme under a constraint (`nsjax.regularizers.ElasticNetBall`, Example 6):
    Ψ's prox is the projection onto the set, so the iterates are in it by construction and
    Ψ's value leaves out the indicator (which rounding could trip, and fail (15) for ever).
    Ψ is not strongly convex: O(1/k²)."""

    def regularizer(self, problem, x, mu):
        return problem.coefficient_reg.smooth_value(x)


#: The option ``scheme``'s values and their classes.
SCHEMES: dict[str, type[Scheme]] = {"dual": DualScheme, "primal": PrimalScheme}

__all__ = ["SCHEMES", "WEIGHT_FLOOR", "ConstrainedScheme", "DualScheme", "EntropyScheme",
           "GibbsSmoothing", "OptimizedHinge", "OwnSmoothing", "PrimalRisk", "PrimalScheme",
           "Scheme", "SmoothRisk", "SmoothedHinge", "risk_for"]
