"""The entropy geometry (issue 11): the capped soft-max (`entropic_capped_simplex`), the
`Entropy` regularizer (relative entropy on the capped simplex, Zhang et al. 2010, Example 5) and
AGM-EF / AGM-EF-1 in that geometry, against cvxpy (exponential cone, Clarabel at tight
tolerances) and closed forms. The registry runs AGMEF(scheme="primal") on it too
(`test_invariants.py`, kind "hinge-entropy")."""

from __future__ import annotations

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import check_capped_simplex_run, cvxpy_optimum, random_binary

import nsjax
from nsjax.projections import entropic_capped_simplex
from nsjax.regularizers import Entropy

TIGHT = dict(solver="CLARABEL", tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13,
             max_iter=500)


def _negentropy_objective(t, x):
    """⟨t, x⟩ − Σ x log x, the objective the capped soft-max maximizes."""
    return float(t @ x - np.sum(x[x > 0] * np.log(x[x > 0])))


def _cvxpy_capped_softmax(t, cap):
    x = cp.Variable(t.shape[0])
    prob = cp.Problem(cp.Maximize(t @ x + cp.sum(cp.entr(x))),
                      [x >= 0, x <= cap, cp.sum(x) == 1])
    prob.solve(**TIGHT)
    return prob.value, np.clip(x.value, 0.0, None)


def _logits(kind, seed, n=9):
    rng = np.random.default_rng(seed)
    t = 3 * rng.normal(size=n)
    if kind == "ties":
        t[:4] = t[0]
        t[5:7] = t[5]
    elif kind == "spread":  # soft-max entries from 1 down to e^-60
        t = np.linspace(0.0, -60.0, n)
    return t


@pytest.mark.parametrize("cap", [0.15, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("kind", ["generic", "ties", "spread"])
@pytest.mark.parametrize("seed", range(2))
def test_capped_softmax_matches_cvxpy(kind, seed, cap):
    t = _logits(kind, seed)
    x = np.asarray(entropic_capped_simplex(jnp.asarray(t), cap))
    value, x_cvx = _cvxpy_capped_softmax(t, cap)
    assert np.all(x >= 0) and np.all(x <= cap) and abs(x.sum() - 1) <= 1e-14
    # Optimal to cvxpy's accuracy: no better point exists (1-strong concavity in ‖·‖₁
    # turns the objective gap into a distance).
    assert _negentropy_objective(t, x) >= value - 1e-11
    np.testing.assert_allclose(x, x_cvx, atol=1e-6)


def test_capped_softmax_closed_forms():
    t = jnp.array([0.3, -1.2, 2.0, 0.0])
    np.testing.assert_allclose(entropic_capped_simplex(t, 1.0), jax.nn.softmax(t), rtol=1e-14)
    np.testing.assert_allclose(entropic_capped_simplex(t, 5.0), jax.nn.softmax(t), rtol=1e-14)
    # cap = 1/n: the one point of the set.
    np.testing.assert_allclose(entropic_capped_simplex(t, 0.25), np.full(4, 0.25), rtol=1e-14)
    # Below 1/n the set is empty: NaN, not a wrong point.
    assert np.all(np.isnan(entropic_capped_simplex(t, 0.2)))
    # Two capped entries, the rest in proportion to their soft-max.
    x = np.asarray(entropic_capped_simplex(jnp.array([5.0, 5.0, 0.0, np.log(3.0)]), 0.3))
    np.testing.assert_allclose(x, [0.3, 0.3, 0.1, 0.3], rtol=1e-14)


def test_capped_softmax_of_huge_logits_is_finite():
    t = jnp.array([1e4, -1e4, 3e3, 1e4, 0.0])
    for cap in (1.0, 0.4, 0.2):
        x = np.asarray(entropic_capped_simplex(t, cap))
        assert np.all(np.isfinite(x)) and abs(x.sum() - 1) <= 1e-14 and np.all(x <= cap)


def test_capped_softmax_batched_jit_and_float32():
    rng = np.random.default_rng(3)
    T = jnp.asarray(rng.normal(size=(5, 7)))
    caps = jnp.array([0.2, 0.3, 0.5, 1.0, 1 / 7])
    batched = jax.jit(jax.vmap(entropic_capped_simplex))(T, caps)
    for i in range(5):
        np.testing.assert_allclose(batched[i], entropic_capped_simplex(T[i], caps[i]),
                                   rtol=1e-14)
    x32 = entropic_capped_simplex(T[0].astype(jnp.float32), 0.3)
    assert x32.dtype == jnp.float32
    np.testing.assert_allclose(x32, entropic_capped_simplex(T[0], 0.3), atol=1e-6)


# -- the regularizer ----------------------------------------------------------------------


@pytest.mark.parametrize("cap", [0.2, 1.0])
@pytest.mark.parametrize("seed", range(2))
def test_conjugate_matches_cvxpy_and_fenchel_young(seed, cap):
    rng = np.random.default_rng(seed)
    d, lam = 8, 0.3
    v = rng.normal(size=d)
    reg = Entropy(lam, cap)
    w = cp.Variable(d)
    prob = cp.Problem(cp.Maximize(v @ w + lam * cp.sum(cp.entr(w)) - lam * np.log(d)),
                      [w >= 0, w <= cap, cp.sum(w) == 1])
    prob.solve(**TIGHT)
    conj = float(reg.conjugate(jnp.asarray(v)))
    assert conj == pytest.approx(prob.value, abs=1e-10)
    # Fenchel–Young: λΩ(w) + (λΩ)*(v) ≥ ⟨v, w⟩, with equality at the capped soft-max of v/λ.
    argmax = entropic_capped_simplex(jnp.asarray(v / lam), cap)
    assert float(reg.value(argmax)) + conj == pytest.approx(float(v @ argmax), abs=1e-13)
    for _ in range(5):
        other = jnp.asarray(entropic_capped_simplex(jnp.asarray(rng.normal(size=d)), cap))
        assert float(reg.value(other)) + conj >= float(v @ other) - 1e-13


def test_value_domain_start_and_divergence():
    reg = Entropy(0.5, 0.4)
    assert float(reg.value(jnp.full(4, 0.25))) == 0.0
    assert float(reg.value(jnp.array([0.4, 0.4, 0.2, 0.0]))) == pytest.approx(
        0.5 * (0.8 * np.log(1.6) + 0.2 * np.log(0.8)), rel=1e-14)
    for off in ([0.5, 0.3, 0.2, 0.0], [0.3, 0.3, 0.3, 0.3], [0.5, 0.5, 0.1, -0.1]):
        assert float(reg.value(jnp.array(off))) == np.inf  # over the cap, Σ ≠ 1, < 0
    np.testing.assert_array_equal(reg.start((4,), jnp.float64), np.full(4, 0.25))
    # The divergence is accurate relative to its size near its centre (≈ Σ δ²/(2c)),
    # where the plain formula Σ x log(x/c) rounds to noise.
    c = jnp.full(4, 0.25)
    delta = jnp.array([1e-9, -1e-9, 2e-9, -2e-9])
    assert float(Entropy.divergence(c + delta, c)) == pytest.approx(
        float(jnp.sum(delta**2 / (2 * c))), rel=1e-6)
    x = jnp.array([0.7, 0.0, 0.2, 0.1])
    naive = float(jnp.sum(jax.scipy.special.xlogy(x, x / c)))
    assert float(Entropy.divergence(x, c)) == pytest.approx(naive, rel=1e-14)


def test_bregman_prox_matches_cvxpy():
    rng = np.random.default_rng(5)
    d, lam, cap, weight = 7, 0.2, 0.3, 3.0
    centre = np.asarray(entropic_capped_simplex(jnp.asarray(rng.normal(size=d)), cap))
    linear = rng.normal(size=d)
    x = cp.Variable(d)
    kl = cp.sum(cp.kl_div(x, centre))  # x log(x/c) − x + c
    prob = cp.Problem(cp.Minimize(weight * kl + linear @ x - lam * cp.sum(cp.entr(x))),
                      [x >= 0, x <= cap, cp.sum(x) == 1])
    prob.solve(**TIGHT)
    ours = np.asarray(Entropy(lam, cap).bregman_prox(jnp.asarray(centre), weight,
                                                     jnp.asarray(linear)))
    obj = (weight * np.sum(ours * np.log(ours / centre)) + linear @ ours
           + lam * np.sum(ours * np.log(ours)))
    assert obj <= prob.value + 1e-11
    np.testing.assert_allclose(ours, x.value, atol=1e-6)
    # An underflowed weight (1/A_k after a long linear run) and zeros in the centre.
    zero_w = Entropy(lam, cap).bregman_prox(jnp.asarray(centre), 0.0, jnp.asarray(linear))
    np.testing.assert_allclose(zero_w, entropic_capped_simplex(jnp.asarray(-linear / lam), cap))
    holed = Entropy(lam, 1.0).bregman_prox(jnp.array([0.5, 0.5, 0.0]), 1.0, jnp.zeros(3))
    assert np.all(np.isfinite(holed)) and float(holed[2]) == 0.0


# -- the solvers --------------------------------------------------------------------------


def _entropy_problem(seed, lam, cap, n=60, d=8):
    X, y, _ = random_binary(seed + 300, n, d)
    return X, y, nsjax.Problem(nsjax.losses.Hinge(), Entropy(lam, cap), X, y)


@pytest.mark.parametrize("solver", [None, nsjax.solvers.AGMEF1(scheme="primal")],
                         ids=["default", "AGMEF1-primal"])
@pytest.mark.parametrize("lam, cap", [(0.01, 0.25)])  # (the registry: uncapped, λ = 0.05)
def test_reaches_the_cvxpy_optimum_with_valid_gaps(solver, lam, cap):
    X, y, prob = _entropy_problem(0, lam, cap)
    J_star, w_star = cvxpy_optimum(X, y, lam, reg="entropy", cap=cap)
    sol = nsjax.solve(prob, solver, max_steps=3000, tol=1e-7)  # default ε = 1e-6
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, abs=1e-6)
    check_capped_simplex_run(sol, J_star, cap)
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-10


@pytest.mark.parametrize("loss, solver", [("logistic", None),
                                          ("squared", nsjax.solvers.AGMEF1(scheme="primal"))])
def test_smooth_losses_in_the_entropy_geometry_reach_the_cvxpy_optimum(loss, solver):
    """AGM-EF on the composite J = R(Xw) + λΔ(w, w⁰) itself (f smooth, no smoothing)."""
    X, y, _ = random_binary(310, 60, 8)
    J_star = cvxpy_optimum(X, y, 0.05, loss=loss, reg="entropy", cap=0.3)[0]
    Loss = {"logistic": nsjax.losses.Logistic, "squared": nsjax.losses.Squared}[loss]
    prob = nsjax.Problem(Loss(), Entropy(0.05, 0.3), X, y)
    sol = nsjax.solve(prob, solver, max_steps=2000, tol=1e-9)
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, abs=1e-8)
    steps = int(sol.num_steps)
    best, gap = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(gap >= best - J_star - 1e-10)


def test_default_solver_is_agm_ef_primal_and_starts_uniform():
    _, _, prob = _entropy_problem(1, 0.05, 0.5)
    assert nsjax.loop.default_solver(prob) == nsjax.solvers.AGMEF(scheme="primal")
    sol = nsjax.solve(prob, max_steps=1)
    assert float(sol.history.best[0]) <= float(prob.objective(prob.start()))
    # A warm start on the boundary (zero weights) is moved inside, not stuck there.
    w0 = np.zeros(8)
    w0[:2] = 0.5
    warm = nsjax.solve(prob, w0=w0, max_steps=2000, tol=1e-7)
    cold = nsjax.solve(prob, max_steps=2000, tol=1e-7)
    assert float(warm.value) == pytest.approx(float(cold.value), abs=1e-6)


def test_other_solvers_and_options_are_refused_before_compiling():
    _, _, prob = _entropy_problem(2, 0.05, 0.5)
    for solver in (nsjax.solvers.SubLBFGS(), nsjax.solvers.BMRM(), nsjax.solvers.OBA()):
        with pytest.raises(ValueError, match=r"entropy geometry.*AGMEF\(scheme='primal'\), AGMEF1"):
            nsjax.solve(prob, solver)
    with pytest.raises(ValueError, match="scheme='primal'"):
        nsjax.solve(prob, nsjax.solvers.AGMEF())  # the dual scheme
    X, y, _ = _entropy_problem(2, 0.05, 0.5)
    with pytest.raises(ValueError, match="cap must be >= 1/d"):
        nsjax.solve(nsjax.Problem(nsjax.losses.Hinge(), Entropy(0.05, 0.1), X, y))
    with pytest.raises(ValueError, match="without a bias"):
        nsjax.solve(nsjax.Problem(nsjax.losses.Hinge(), Entropy(0.05), X, y, bias=True),
                    nsjax.solvers.AGMEF(scheme="primal"))
    with pytest.raises(ValueError, match="outside Entropy's domain"):  # J(w0) = inf
        nsjax.solve(prob, w0=np.ones(8))


@pytest.mark.parametrize("method", [nsjax.solvers.AGMEF, nsjax.solvers.AGMEF1])
def test_smoothed_gap_decays_linearly_in_the_entropy_geometry(method):
    """Ψ = λΔ(·, w⁰) is λ-strongly convex with respect to d (σ = 1 in ‖·‖₁), and the
    smoothed hinge's gradient is L-Lipschitz from ‖·‖₁ to ‖·‖∞ with L = max_j ‖X_{:j}‖²/μ:
    with that L fixed, the smoothed gap decays at least at Theorem 6's / 14's rate (as in
    test_agm_ef.py for the Euclidean geometry), and no slower with the adaptive L."""
    X, _, prob = _entropy_problem(3, 0.1, 0.5)
    eps = 1e-3
    mu = 2 * X.shape[0] * eps
    col_sq = float(np.max(np.sum(X * X, axis=0)))
    L, lam2 = col_sq / mu, 0.1
    if method is nsjax.solvers.AGMEF:
        theory = -2 * np.log1p(np.sqrt(lam2 / (4 * L)))
    else:
        theory = np.log1p(-np.sqrt(lam2 / (L + lam2)))

    def slope(solver, steps=200):
        @jax.jit
        def run(problem):
            state = solver.init(problem, problem.start())

            def body(state, _):
                state = solver.step(problem, state)
                return state, solver.smoothed_gap(problem, state)

            return jax.lax.scan(body, state, None, length=steps)[1]

        gaps = np.asarray(run(prob))
        assert np.all(gaps >= -1e-12)
        k = np.arange(steps)
        keep = (k >= 20) & (gaps > 1e-12)
        assert keep.sum() > 20
        return np.polyfit(k[keep], np.log(gaps[keep]), 1)[0]

    fixed = slope(method(scheme="primal", epsilon=eps, spectral_norm_sq=col_sq,
                         gamma_d=1 + 1e-12))
    adaptive = slope(method(scheme="primal", epsilon=eps))
    assert fixed <= theory, (fixed, theory)
    assert adaptive <= fixed, (adaptive, fixed)
