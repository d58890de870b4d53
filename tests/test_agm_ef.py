"""AGM-EF-∞ and AGM-EF-1 with adaptive L (Zhang et al. 2010, Alg. 1–4) on the linear SVM: the
linear decay of the smoothed gap (Theorems 6 / 10 and 14), Theorem 10's bound with a fixed
L, Theorem 19 (primal smoothing to ε gives a 2ε-accurate w), and their options. The cvxpy
optimum, gap validity, jit, dtypes and sweeps are in the registry's invariant tests, the
bias in test_bias.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import cvxpy_optimum, random_binary

import nsjax
from nsjax.solvers import AGMEF, AGMEF1

N, D, LAM = 60, 6, 0.1
STEPS = 300


@functools.cache
def svm(seed=0):
    X, y, _ = random_binary(seed + 400, N, D)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y)
    return X, y, prob


@functools.partial(jax.jit, static_argnames=("solver",))
def trace(problem, solver):
    """Per step: the smoothed gap (Theorem 10's δ_k), the true certified gap, J(w_k), 1/A_k
    (AGM-EF-∞; AGM-EF-1 has no A_k) and L_k."""
    state = solver.init(problem, problem.zeros())

    def body(state, _):
        state = solver.step(problem, state)
        return state, (solver.smoothed_gap(problem, state), state.core.gap, state.core.value,
                       getattr(state, "inv_A", state.core.gap), state.lipschitz)

    return jax.lax.scan(body, state, None, length=STEPS)[1]


def tail_slope(gaps):
    """The slope of log(gap) against k over the steps before rounding (gap > 1e-12)."""
    k = np.arange(len(gaps))
    keep = (k >= 20) & (gaps > 1e-12)
    return np.polyfit(k[keep], np.log(gaps[keep]), 1)[0]


@pytest.mark.parametrize("method", [AGMEF, AGMEF1])
@pytest.mark.parametrize("scheme", ["primal", "dual"])
def test_smoothed_gap_decays_linearly_at_least_at_the_theorems_rate(method, scheme):
    """λ₂ > 0 (Ψ = λ/2‖w‖² in the primal, μ/2‖α‖² in the dual): the gap of Sec. 3.3 / 4.2
    decays linearly, at least as fast as the theorem's rate per step with the global L —
    AGM-EF-∞: (1 + √(λ₂/(4L)))⁻² (Theorem 6); AGM-EF-1: 1 − √(λ₂/(L + λ₂)) (Theorem 14) —
    with L fixed at its exact value, and (faster) with the adaptive L of Alg. 2 / 4."""
    X, _, prob = svm()
    eps = 1e-3
    mu = 2 * N * eps
    sq = float(np.linalg.norm(X, 2) ** 2)
    L = sq / (mu if scheme == "primal" else LAM)
    lam2 = LAM if scheme == "primal" else mu
    if method is AGMEF:
        theory = -2 * np.log1p(np.sqrt(lam2 / (4 * L)))
    else:
        theory = np.log1p(-np.sqrt(lam2 / (L + lam2)))
    fixed = method(scheme=scheme, epsilon=eps, spectral_norm_sq=sq, gamma_d=1 + 1e-12)
    adaptive = method(scheme=scheme, epsilon=eps)
    slope_fixed = tail_slope(np.asarray(trace(prob, fixed)[0]))
    slope_adaptive = tail_slope(np.asarray(trace(prob, adaptive)[0]))
    assert slope_fixed <= theory, (slope_fixed, theory)
    assert slope_adaptive <= slope_fixed, (slope_adaptive, slope_fixed)


def test_dual_gap_obeys_theorem_10_with_a_fixed_lipschitz_constant():
    """Dual scheme, L exact and fixed: J_μ(w_k) − D_μ(α_k) ≤ max_{α∈Q₂} ½‖α − α₀‖² / A_k
    (eq. 23) at every k, with α₀ = 1/n (the start from w⁰ = 0)."""
    X, _, prob = svm(1)
    sq = float(np.linalg.norm(X, 2) ** 2)
    solver = AGMEF(scheme="dual", epsilon=1e-4, spectral_norm_sq=sq, gamma_d=1 + 1e-12)
    smoothed, _, _, inv_A, L = map(np.asarray, trace(prob, solver))
    assert np.allclose(L, sq / LAM)  # never raised: the exact L satisfies (15)
    M = 0.5 * N * (1 / N) ** 2  # α₀ = 1/n is a corner of the box: the far corner is 0
    assert np.all(smoothed <= M * inv_A * (1 + 1e-9) + 1e-15)
    assert np.max(smoothed / (M * inv_A)) > 1e-3  # not vacuous


@pytest.mark.parametrize("method", [AGMEF, AGMEF1])
def test_primal_smoothing_to_epsilon_gives_a_2_epsilon_accurate_w(method):
    """Theorem 19: once J_μ(w_k) − min J_μ ≤ ε (certified here by the smoothed gap), J(w_k)
    − min J ≤ 2ε, with μ = ε/D₂ (eq. 57)."""
    X, y, prob = svm(2)
    J_star = cvxpy_optimum(X, y, LAM, loss="hinge", reg="l2")[0]
    for eps in (1e-2, 1e-3):
        smoothed, gap, value, *_ = map(np.asarray, trace(prob, method(scheme="primal",
                                                                      epsilon=eps)))
        k = int(np.argmax(smoothed <= eps))
        assert smoothed[k] <= eps, "the smoothed gap never reached ε"
        assert value[k] - J_star <= 2 * eps
        # The true certified gap is at most the smoothed one plus ε (D_μ ≥ D − μD₂).
        assert np.all(gap <= smoothed + eps + 1e-12)


def test_both_schemes_reach_the_optimum_on_real_data():
    X, y = nsjax.datasets.breast_cancer()
    X = (X - X.mean(0)) / X.std(0)
    lam = 1e-2
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    ref = nsjax.solve(prob, tol=1e-10)
    for solver in (AGMEF(), AGMEF(scheme="primal", epsilon=1e-8), AGMEF1()):
        sol = nsjax.solve(prob, solver, tol=1e-6, max_steps=20_000)
        assert sol.result == nsjax.RESULTS.successful, solver
        assert 0 <= float(sol.value - ref.value) + 1e-10 <= float(sol.gap) + 2e-10


@pytest.mark.parametrize("options, match", [
    (dict(scheme="decreasing"), "Pragam"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(gamma_u=1.0), "gamma_u"),
    (dict(gamma_d="2"), "gamma_d"),
    (dict(power_iterations=0), "power_iterations"),
    (dict(prox_function="diagonal"), "prox_function"),
])
@pytest.mark.parametrize("method", [AGMEF, AGMEF1])
def test_bad_options_are_refused(method, options, match):
    with pytest.raises(ValueError, match=match):
        method(**options)


def test_refuses_other_losses():
    X, y, _ = random_binary(0, 10, 3)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(0.1), X, y)
    with pytest.raises(ValueError, match=r"AGMEF needs the binary hinge.*AGMEF\(scheme='primal'\)"):
        nsjax.solve(prob, AGMEF())  # the dual scheme; the primal one takes it
    biased = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(0.1), X, y, bias=True)
    with pytest.raises(ValueError, match="with a bias needs the binary hinge"):
        nsjax.solve(biased, AGMEF(scheme="primal"))
    multi = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(0.1), X,
                          np.arange(10) % 3)
    with pytest.raises(ValueError, match="binary hinge"):
        nsjax.solve(multi, AGMEF(scheme="primal"))
    l1 = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L1(0.1), X, y)
    with pytest.raises(ValueError, match=r"needs the L2 regularizer.*AGMEF1\(scheme='primal'\)"):
        nsjax.solve(l1, AGMEF1())


def test_each_solver_says_which_bound_it_certifies():
    assert "Theorem 19" in AGMEF(scheme="primal").bound
    assert "Sec. 5.3" in AGMEF().bound and "Theorem 20" in AGMEF(epsilon=1e-3).bound
    assert "Theorem 14" in AGMEF1().bound
    assert "eq. 26" in nsjax.solvers.Pragam().bound


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("reg", ["l1", "elasticnet", "l2"])
def test_primal_scheme_solves_the_l1_svm_and_the_elastic_net(reg, bias):
    """The L1-SVM (Zhang et al. 2010, Example 2) and the elastic net: the primal scheme needs only
    Ψ's prox (soft-thresholding); the dual point of (22) is scaled into ‖Xᵀ(y∘α)‖∞ ≤ μ for
    the bound. With and without a bias, against cvxpy; the gap bounds the suboptimality at
    every step (for L1 it is loose: the scaled average is far from the dual optimum)."""
    X, y, _ = random_binary(7, N, D)
    mu, lam = 0.02, 0.05
    regs = {"l1": nsjax.regularizers.L1(mu), "elasticnet": nsjax.regularizers.ElasticNet(mu, lam),
            "l2": nsjax.regularizers.L2(lam)}
    prob = nsjax.Problem(nsjax.losses.Hinge(), regs[reg], X, y, bias=bias)
    J_star = cvxpy_optimum(X, y, mu if reg == "l1" else lam, loss="hinge", reg=reg, mu=mu,
                           bias=bias)[0]
    with pytest.warns(nsjax.ConvergenceWarning) if reg == "l1" else _no_warning():
        sol = nsjax.solve(prob, AGMEF(scheme="primal", epsilon=1e-8), tol=1e-7,
                          max_steps=20_000)
    # L1: Ψ is not strongly convex and L ∝ 1/ε, so 20k steps reach ~2e-6 (measured).
    assert abs(float(sol.value) - J_star) <= (1e-5 if reg == "l1" else 1e-6) * J_star
    best, gap = np.asarray(sol.history.best), np.asarray(sol.history.gap)
    done = np.isfinite(best)
    assert np.all(best[done] - J_star <= gap[done] + 1e-10)
    if reg != "l1":
        assert sol.result == nsjax.RESULTS.successful


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_optimized_prox_function_lowers_the_bound_on_L_times_D():
    """Zhang et al. (2010), §5.6: with bᵢ² = |xᵢᵀv*| the smoothed hinge's worst-case L = λ_max(Xᵀ
    diag(1/μ) X) at μ = ε/D is (Σ|xᵢᵀv*|)²/(nΣ(xᵢᵀv*)²) ≤ 1 times the uniform one's in the
    direction v* (eq. 71–72); checked with numpy's eigenvector. And g*_μ with the weights
    is the separable max of ⟨α, m⟩ − ½Σμᵢαᵢ² over the box (brute force on a grid)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 5)) * np.exp(2 * rng.normal(size=(80, 1)))  # rows of all sizes
    y = np.where(X @ rng.normal(size=5) > 0, 1, -1)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y)
    uniform = AGMEF(scheme="primal").smoothing_and_norm(prob)
    mu, L, _ = AGMEF(scheme="primal", power_iterations=200,
                     prox_function="optimized").smoothing_and_norm(prob)
    v = np.linalg.eigh(X.T @ X)[1][:, -1]
    a = np.abs(X @ v)
    b2 = np.maximum(a, 1e-2 * a.mean())
    np.testing.assert_allclose(np.asarray(mu) / float(uniform[0]), b2 * 80 / b2.sum(),
                               rtol=1e-6)
    L_uniform = float(uniform[1]) / float(uniform[0])
    assert float(L) < L_uniform
    # In the direction v*, the ratio of the two quadratic forms is the Cauchy–Schwarz one.
    ratio = (a @ (a / b2)) * b2.sum() / (80 * (a @ a))
    assert ratio <= 1.0 and ratio == pytest.approx(a.sum() ** 2 / (80 * (a @ a)), rel=1e-3)
    from nsjax.testing import smoothed_hinge
    margins = jnp.asarray(rng.normal(size=80) * 1e-3)
    value, alpha = smoothed_hinge(prob, margins, mu)
    grid = np.linspace(0, 1 / 80, 20001)[None, :]
    per = np.asarray(margins)[:, None] * grid - 0.5 * np.asarray(mu)[:, None] * grid ** 2
    assert float(value) == pytest.approx(per.max(1).sum(), rel=1e-6)
    assert np.all((np.asarray(alpha) >= 0) & (np.asarray(alpha) <= 1 / 80))


def test_optimized_prox_function_is_refused_where_it_does_not_apply():
    X, y, _ = random_binary(0, 30, 3)
    hinge = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y, bias=True)
    with pytest.raises(ValueError, match="without a bias"):
        nsjax.solve(hinge, AGMEF(scheme="primal", prox_function="optimized"))
    logistic = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(0.1), X, y)
    with pytest.raises(ValueError, match="prox_function"):
        nsjax.solve(logistic, AGMEF1(scheme="primal", prox_function="optimized"))
    plain = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y)
    with pytest.raises(ValueError, match="primal"):
        nsjax.solve(plain, AGMEF(prox_function="optimized"))  # the dual scheme
