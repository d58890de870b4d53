"""The linear SVM's dual, shared by the Nesterov solvers (`Pragam`, `AGMEF`).

J(w) = λ/2 ‖w‖² + (1/n) Σᵢ max(0, 1 − yᵢ(⟨xᵢ, w⟩ + b)) (b = 0, or free with a bias) has the
dual (Saha et al. 2009, eqs. 21–22; Zhang et al. 2010, Example 1)

    D(α) = Σᵢ αᵢ − ‖Xᵀ(y∘α)‖² / (2λ) ≤ min J   for α ∈ Q₂ = [0, 1/n]ⁿ (∩ {Σ yᵢαᵢ = 0}),

with w(α) = Xᵀ(y∘α)/λ and ∇D(α) = 1 − y∘X w(α), Lipschitz with L = σ_max(X)²/λ.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nsjax.projections import box_section_in_range
from nsjax.solvers._bias import best_bias
from nsjax.solvers.capabilities import Takes


def estimate_spectral_norm_sq(X, iterations: int = 20, key=None):
    """A lower estimate of σ_max(X)² = λ_max(XᵀX) by ``iterations`` power iterations on
    XᵀX from a seeded random start (two products with X each): the Rayleigh quotient
    ‖Xv‖²/‖v‖² never exceeds σ_max², and approaches it.

    Args:
        X: a `nsjax.DesignMatrix` (``problem.X``).
        iterations: power iterations (≥ 1).
        key: a `jax.random` key for the start; default ``jax.random.key(0)``.

    Example:
        >>> import numpy as np, nsjax
        >>> from nsjax.solvers._svm_dual import estimate_spectral_norm_sq
        >>> X = nsjax.DesignMatrix.from_any(np.diag([3.0, 1.0]))
        >>> round(float(estimate_spectral_norm_sq(X, 30)), 10)
        9.0
    """
    return top_eigenpair(X, iterations, key=key)[0]


def top_eigenpair(X, iterations: int = 20, weights=None, key=None):
    """(λ, v): power iterations on Xᵀ diag(weights) X (XᵀX without weights, two products
    with X each) from a seeded random start; λ is the Rayleigh quotient of the last v, a
    lower estimate of the largest eigenvalue, and v (unit norm) estimates its eigenvector."""
    d = X.shape[1]
    key = jax.random.key(0) if key is None else key
    v = jax.random.normal(key, (d,), X.dtype)
    tiny = jnp.finfo(X.dtype).tiny
    weights = jnp.ones((), X.dtype) if weights is None else weights

    def body(_, carry):
        v, _, _ = carry
        v = v / jnp.maximum(jnp.sqrt(jnp.vdot(v, v)), tiny)
        Xv = X.mv(v)
        return X.rmv(weights * Xv), jnp.vdot(Xv, weights * Xv), v

    _, rayleigh, v = jax.lax.fori_loop(0, iterations, body,
                                       (v, jnp.zeros((), X.dtype), jnp.zeros_like(v)))
    return rayleigh, v


#: What the Nesterov SVM solvers take on the adjoint (21): the binary hinge with L2
#: (w(α) = Xᵀ(y∘α)/λ, eq. 24), λ > 0 (the dual's Lipschitz constant is σ_max(X)²/λ) and a
#: bias; not sample weights (they work on the hinge's dual box itself).
SVM_TAKES = Takes(losses=("svm",), regularizer="l2", bias=True, sample_weight=False,
                  positive_strength=True)


def check_lipschitz_options(options):
    """The options ``spectral_norm_sq`` (σ_max(X)², a finite number > 0, or None) and
    ``power_iterations`` (an int >= 1), checked and normalized by ``options``
    (`nsjax.solvers.Options` of the solver)."""
    options.real("spectral_norm_sq", 0, low_open=True, none=True, example=1.0)
    options.int("power_iterations", low=1)


def spectral_norm_sq(problem, given, iterations):
    """(σ_max(X)², products with X spent): ``given`` if not None, else the power-iteration
    estimate (from below)."""
    dt = problem.dtype
    if given is None:
        sq = estimate_spectral_norm_sq(problem.X, iterations)
        return jnp.maximum(sq, jnp.finfo(dt).tiny), 2 * iterations
    return jnp.asarray(given, dt), 0


def project_dual(problem, alpha):
    """Π_{Q₂}: the Euclidean projection onto the box [0, 1/n]ⁿ, cut by Σᵢ yᵢαᵢ = 0 with a
    bias (exactly, `project_box_section`)."""
    cap = 1.0 / alpha.shape[0]
    if problem.bias:
        return box_section_in_range(alpha, problem.y, 0.0, 0.0, cap).x
    return jnp.clip(alpha, 0.0, cap)


def smoothed_hinge(problem, margin, mu):
    """g*_μ at the margins m = 1 − y∘Xw: max_{α∈Q₂} ⟨α, m⟩ − μ/2‖α‖² (Zhang et al. 2010, eq. 53),
    and its maximizer α. Returns (value, α). A vector μ (no bias) is the optimized
    prox-function of §5.6: max ⟨α, m⟩ − ½Σᵢ μᵢαᵢ², μᵢ = μ bᵢ².

    With a bias the maximizer is α = clip((m + c y)/μ, 0, 1/n) for the shift c = μν of the
    projection's multiplier ν, and the value is summed per example at the shifted margins,
    Σᵢ φ_μ(mᵢ + c yᵢ) with φ_μ(t) = max_{0≤a≤1/n} a t − μa²/2 (= min over c, so an error in
    c changes it only to second order); ⟨α, m⟩ − μ/2‖α‖² instead is first-order in the
    rounding of Σ yᵢαᵢ, which at μ ~ 1e-6 is ~1e-10 (α = m/μ + νy cancels two numbers of
    size 1/μ) and hides the decrease AGM-EF's checks look for."""
    n = margin.shape[0]
    if problem.bias:
        shift = mu * box_section_in_range(margin / mu, problem.y, 0.0, 0.0, 1.0 / n).multiplier
        margin = margin + shift * problem.y
    alpha = jnp.clip(margin / mu, 0.0, 1.0 / n)
    return jnp.sum(alpha * margin - 0.5 * mu * alpha * alpha), alpha


def primal_of(problem, alpha):
    """w(α) = Xᵀ(y∘α)/λ (Saha et al. 2009, eq. 24): one product with Xᵀ."""
    return problem.X.rmv(problem.y * alpha) / problem.lam


def svm_dual_value(problem, alpha, w_alpha):
    """D(α) = Σα − λ/2 ‖w(α)‖², given w(α)."""
    return jnp.sum(alpha) - 0.5 * problem.lam * jnp.vdot(w_alpha, w_alpha)


def with_best_bias(problem, w, S, bias):
    """(the solver's iterate, J there) for coefficients w with scores S = Xw: w itself, or,
    with a bias, (w, b) with b = argmin J(w, ·) found from ``bias`` (`best_bias`)."""
    if not problem.bias:
        return w, problem.value(w, S)
    w_b, S_b = best_bias(problem, jnp.concatenate([w, bias[None]]), S + bias)
    return w_b, problem.value(w_b, S_b)
