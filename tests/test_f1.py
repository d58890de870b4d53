"""The F1 loss (Zhang et al. 2010, Example 3, eq. 43, Δ = 1 − F1; Sec. 5.4, Algorithms 5–6): the
exact maximization, the subgradients and the entropy smoothing against enumeration of all
2ⁿ labelings (numpy and jax.numpy), stability at n in the thousands, jit/vmap/float32, and
BMRM against a cvxpy QP with one constraint per labeling."""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nsjax
from nsjax.losses import F1Loss

LOSS = F1Loss()
N = 12  # one size for the enumeration tests: each jitted function compiles once


def _labelings(n):
    return np.array(list(itertools.product([-1.0, 1.0], repeat=n)))


def _deltas(labs, y):
    """Δ = 1 − F1 of each labeling (rows of labs) against y, 0 where 2a + b + c = 0."""
    b = np.sum((y == 1) & (labs == -1), axis=1)
    c = np.sum((y == -1) & (labs == 1), axis=1)
    a = np.sum(y == 1) - b
    den = 2 * a + b + c
    return np.where(den > 0, 1.0 - 2.0 * a / np.maximum(den, 1), 0.0)


def _thetas(S, y, labs):
    """θ(y′) = Δ(y′, y) + (1/n) Σ Sᵢ(y′ᵢ − yᵢ) for every labeling."""
    return _deltas(labs, y) + (labs - y) @ S / len(S)


def _case(kind, seed, n=N):
    """Scores with ties (multiples of 0.25) and labels of the given pattern; "interior":
    positives scored high, negatives a little below 0 (multiples of 0.05), so that the
    maximizer keeps every positive and Δ's own growth in c decides how many negatives to
    flip."""
    rng = np.random.default_rng(seed)
    S = np.round(4 * rng.normal(size=n)) / 4
    if kind == "interior":
        S = np.round(20 * (-0.3 + 0.2 * rng.normal(size=n))) / 20
    y = {"balanced": np.where(rng.random(n) < 0.5, 1.0, -1.0),
         "interior": np.where(rng.permutation(n) < 4, 1.0, -1.0),
         "imbalanced": np.where(rng.permutation(n) < 3, 1.0, -1.0),
         "one-positive": np.where(rng.permutation(n) < 1, 1.0, -1.0),
         "one-negative": np.where(rng.permutation(n) < n - 1, 1.0, -1.0),
         "no-positive": -np.ones(n),
         "no-negative": np.ones(n)}[kind]
    if kind == "interior":
        S = np.where(y > 0, 2.0, S)
    return S, y


KINDS = ["balanced", "imbalanced", "interior", "one-positive", "one-negative", "no-positive",
         "no-negative"]
CASES = [(k, s) for k in KINDS
         for s in range(3 if k in ("balanced", "imbalanced", "interior") else 1)]

risk = jax.jit(LOSS.risk)
dscores = jax.jit(LOSS.dscores)
argsup = jax.jit(LOSS.argsup)
smoothed = jax.jit(lambda S, mu, y: LOSS.smoothed(S, mu, y))
expected_delta = jax.jit(lambda S, mu, y: LOSS.expected_delta(S, mu, y))


def _labeling_of(u, y):
    """y′ = y + n u, checked to be a labeling."""
    yp = y + len(y) * np.asarray(u)
    np.testing.assert_allclose(np.abs(yp), 1.0, atol=1e-12)
    return np.sign(yp)


@pytest.mark.parametrize(("kind", "seed"), CASES)
def test_risk_and_argmax_match_enumeration(kind, seed):
    S, y = _case(kind, seed)
    labs = _labelings(N)
    theta = _thetas(S, y, labs)
    R = float(risk(S, y))
    assert abs(R - theta.max()) <= 1e-12
    u = np.asarray(dscores(S, y))
    yp = _labeling_of(u, y)
    assert abs(_thetas(S, y, yp[None])[0] - theta.max()) <= 1e-12  # an exact maximizer
    rng = np.random.default_rng(100 + seed)
    for _ in range(20):  # u ∈ ∂R(S): R(S′) ≥ R(S) + ⟨u, S′ − S⟩
        S2 = S + rng.normal(size=N) * rng.choice([1e-3, 0.1, 3.0])
        assert _thetas(S2, y, labs).max() >= R + u @ (S2 - S) - 1e-12


@pytest.mark.parametrize(("kind", "seed"), CASES)
def test_argsup_is_the_steepest_maximizer(kind, seed):
    """⟨argsup(S, dS), dS⟩ = R′(S; dS) = the largest ⟨(y′ − y)/n, dS⟩ over the maximizers
    (the scores' ties give many; distinct θ differ by far more than the kink tolerance)."""
    S, y = _case(kind, seed)
    labs = _labelings(N)
    theta = _thetas(S, y, labs)
    top = np.flatnonzero(theta >= theta.max() - 1e-9)
    rng = np.random.default_rng(200 + seed)
    for dS in [rng.normal(size=N), np.round(rng.normal(size=N)), np.zeros(N)]:
        u = np.asarray(argsup(S, dS, y))
        yp = _labeling_of(u, y)
        assert _thetas(S, y, yp[None])[0] >= theta.max() - 1e-12
        best = np.max((labs[top] - y) @ dS / N)
        assert abs(u @ dS - best) <= 1e-12
        # and the directional derivative itself: R(S + t dS) ≈ R + t⟨u, dS⟩ for small t
        t = 1e-7
        assert abs((_thetas(S + t * dS, y, labs).max() - theta.max()) / t - u @ dS) <= 1e-6


def _smoothed_enumeration(S, y, mu):
    """(g*_μ, ∇g*_μ, E_α[Δ]) by log-sum-exp over the 2ⁿ labelings (numpy)."""
    labs = _labelings(len(S))
    z = _thetas(S, y, labs) / mu
    log_z = z.max() + np.log(np.sum(np.exp(z - z.max())))
    p = np.exp(z - log_z)
    value = mu * log_z - mu * len(S) * math.log(2.0)
    return value, p @ (labs - y) / len(S), p @ _deltas(labs, y)


def _smoothed_jnp(S, y, mu):
    """g*_μ by enumeration in jax.numpy (differentiated by jax.grad)."""
    labs = jnp.asarray(_labelings(len(S)))
    delta = jnp.asarray(_deltas(np.asarray(labs), np.asarray(y)))
    theta = delta + (labs - y) @ S / len(S)
    return mu * jax.nn.logsumexp(theta / mu) - mu * len(S) * math.log(2.0)


@pytest.mark.parametrize(("kind", "seed"), CASES)
def test_smoothed_matches_enumeration(kind, seed):
    S, y = _case(kind, seed)
    R = float(risk(S, y))
    for mu in (1.0, 0.1, 1e-3):
        value, grad, ed = _smoothed_enumeration(S, y, mu)
        got_value, got_grad = smoothed(S, mu, y)
        np.testing.assert_allclose(float(got_value), value, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got_grad), grad, rtol=0, atol=1e-12)
        np.testing.assert_allclose(float(expected_delta(S, mu, y)), ed, rtol=0, atol=1e-12)
        autodiff = jax.grad(_smoothed_jnp)(jnp.asarray(S), jnp.asarray(y), mu)
        np.testing.assert_allclose(np.asarray(got_grad), np.asarray(autodiff), rtol=0,
                                   atol=1e-12)
        # the gradient is −2 yᵢ p(y′ᵢ = −yᵢ)/n: flip probabilities in [0, 1]
        flip = -np.asarray(got_grad) * y * N / 2
        assert np.all((flip >= -1e-12) & (flip <= 1 + 1e-12))
        D = LOSS.smoothing_diameter(N)
        assert float(got_value) <= R + 1e-12
        assert R <= float(got_value) + mu * D + 1e-12
    assert LOSS.smoothing_diameter(N) == pytest.approx(N * math.log(2.0), rel=1e-15)


def _imbalanced(n, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
    S = rng.normal(size=n) + 0.5 * y
    return jnp.asarray(S), jnp.asarray(y)


@pytest.mark.optimized  # O(n²) work at n = 20,000: 31.6 s at -O0, 12.1 s optimized
def test_smoothed_is_stable_at_large_n():
    """n = 20,000 (10 % positives), μ down to 1e-6: Z spans e^(10⁶) and more, so only the
    log-space programme survives. The value is O(n²) time (a few seconds here); the
    gradient (about three times that) is checked at n = 5,000 for the test's time."""
    S, y = _imbalanced(20_000)
    R = float(risk(S, y))
    assert 0.0 < R < 3.0
    value = jax.jit(lambda S, mu, y: LOSS.smoothed(S, mu, y)[0])
    for mu in (1e-6,):  # (1e-2 at n = 5,000 below)
        v = float(value(S, mu, y))
        assert math.isfinite(v)
        assert R - mu * LOSS.smoothing_diameter(20_000) - 1e-9 <= v <= R + 1e-9
    S, y = _imbalanced(5_000, seed=1)
    R = float(risk(S, y))
    for mu in (1e-2, 1e-6):
        v, g = smoothed(S, mu, y)
        g = np.asarray(g)
        assert math.isfinite(float(v)) and np.all(np.isfinite(g))
        assert R - mu * LOSS.smoothing_diameter(5_000) - 1e-9 <= float(v) <= R + 1e-9
        flip = -g * np.asarray(y) * 5_000 / 2
        assert np.all((flip >= -1e-12) & (flip <= 1 + 1e-12))
        # E_α[θ] = E_α[Δ] + ⟨∇g*_μ, S⟩ lies between g*_μ (= E_α[θ] + μ(H(α) − n log 2))
        # and R: the certificate's ingredients are consistent
        mean_theta = float(expected_delta(S, mu, y)) + float(g @ np.asarray(S))
        assert float(v) - 1e-9 <= mean_theta <= R + 1e-9


def test_jit_vmap_and_float32():
    S, y = _case("balanced", 0)
    rng = np.random.default_rng(7)
    batch = jnp.asarray(S + rng.normal(size=(3, N)))
    dS = jnp.asarray(rng.normal(size=(3, N)))
    mu = 0.05
    v_risk = jax.vmap(risk, in_axes=(0, None))(batch, y)
    v_arg = jax.vmap(argsup, in_axes=(0, 0, None))(batch, dS, y)
    v_val, v_grad = jax.vmap(smoothed, in_axes=(0, None, None))(batch, mu, y)
    v_ed = jax.vmap(expected_delta, in_axes=(0, None, None))(batch, mu, y)
    for k in range(3):
        assert float(v_risk[k]) == pytest.approx(float(risk(batch[k], y)), abs=1e-14)
        np.testing.assert_array_equal(v_arg[k], argsup(batch[k], dS[k], y))
        value, grad = smoothed(batch[k], mu, y)
        assert float(v_val[k]) == pytest.approx(float(value), abs=1e-13)
        np.testing.assert_allclose(v_grad[k], grad, atol=1e-13)
        assert float(v_ed[k]) == pytest.approx(float(expected_delta(batch[k], mu, y)),
                                               abs=1e-13)
    # float32 follows the scores' dtype and stays close to float64
    S32, y32 = jnp.asarray(S, jnp.float32), jnp.asarray(y, jnp.float32)
    for mu in (1.0, 1e-3):
        value, grad = smoothed(S32, mu, y32)
        assert value.dtype == grad.dtype == jnp.float32
        ref_value, ref_grad = smoothed(S, mu, y)
        assert np.isfinite(float(value)) and np.all(np.isfinite(grad))
        assert float(value) == pytest.approx(float(ref_value), abs=1e-4)
        np.testing.assert_allclose(grad, ref_grad, atol=1e-5)
        assert float(expected_delta(S32, mu, y32)) == pytest.approx(
            float(expected_delta(S, mu, y)), abs=1e-4)
    assert risk(S32, y32).dtype == dscores(S32, y32).dtype == jnp.float32
    assert float(risk(S32, y32)) == pytest.approx(float(risk(S, y)), abs=1e-5)
    np.testing.assert_array_equal(dscores(S32, y32), np.asarray(dscores(S, y), np.float32))


# AGM-EF's certified gap (from averaged Gibbs distributions) falls about as 1/k here:
# 5e-6 after 5000 steps, 1e-6 after ~10,000, while its J is within 2e-8 of J* by then.
@pytest.mark.parametrize("solver, tol", [(nsjax.solvers.BMRM(), 1e-6),
                                         (nsjax.solvers.AGMEF(scheme="primal"), 1e-5)],
                         ids=["BMRM", "AGMEF-primal"])
def test_solvers_reach_the_cvxpy_optimum(solver, tol):
    """min λ/2‖w‖² + R(Xw) as the QP min λ/2‖w‖² + t, t ≥ Δ(y′) + (1/n)(Xw)ᵀ(y′ − y) for
    all 2ⁿ labelings (Clarabel), against BMRM with the exact argmax as its oracle and AGM-EF
    on the smoothed loss (μ = ε/(n log 2)), each with its certified gap: AGM-EF's bound is
    Ē[Δ] − (λΩ)*(−Xᵀū) from the averaged Gibbs distributions (`smoothed_dual`)."""
    rng = np.random.default_rng(3)
    n, d, lam = 8, 3, 0.05
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    labs = _labelings(n)
    w, t = cp.Variable(d), cp.Variable()
    qp = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + t),
                    [t >= _deltas(labs, y) + ((labs - y) @ X / n) @ w])
    qp.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert qp.status == "optimal"
    J_star = qp.value
    prob = nsjax.Problem(F1Loss(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, solver, tol=tol, max_steps=5000)
    assert sol.result == nsjax.RESULTS.successful
    assert abs(float(sol.value) - J_star) <= 1e-6 * J_star
    steps = int(sol.num_steps)
    best, gap = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(gap >= best - J_star - 1e-10)
    assert float(sol.gap) <= tol
