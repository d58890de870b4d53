"""The elastic net both ways (Zhang et al. 2010, Example 6, eq. 52): regularized,
λ(γ‖w‖₁ + ½‖w‖²) (`ElasticNet(mu=λγ, lam=λ)`), and constrained to the ball γ‖w‖₁ + ½‖w‖² ≤ r
(`ElasticNetBall(r, gamma)`, AGM-EF on the exact projection of §5.5.2). Against cvxpy and
scikit-learn's ElasticNet, and the λ ↔ r correspondence along a path."""

from __future__ import annotations

import numpy as np
import pytest
from reference import cvxpy_optimum
from sklearn.linear_model import ElasticNet as SklearnElasticNet

import nsjax
from nsjax.losses import Squared
from nsjax.regularizers import ElasticNet, ElasticNetBall

S = nsjax.solvers


def regression(seed=0, n=60, d=8):
    """A seeded least-squares problem with a sparse truth (so the L1 part matters)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.where(rng.random(d) < 0.5, rng.normal(size=d) * 2, 0.0)
    return X, X @ w + 0.3 * rng.normal(size=n)


def level(w, gamma):
    return gamma * np.abs(w).sum() + 0.5 * w @ w


@pytest.mark.parametrize("r, gamma", [(0.5, 0.5), (2.0, 0.2), (0.2, 0.0)])
def test_constrained_form_reaches_the_cvxpy_optimum_with_valid_gaps(r, gamma):
    X, y = regression()
    J_star, w_star = cvxpy_optimum(X, y, r, loss="squared", reg="ball", gamma=gamma)
    prob = nsjax.Problem(Squared(), ElasticNetBall(r, gamma), X, y)
    sol = nsjax.solve(prob, tol=1e-8)  # the default solver: AGM-EF's primal scheme
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, rel=1e-7)
    w = np.asarray(sol.w)
    assert level(w, gamma) <= r * (1 + 1e-12)
    np.testing.assert_allclose(w, w_star, atol=1e-5)  # cvxpy's own accuracy on the SOCP
    steps = int(sol.num_steps)
    best, gap = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(gap >= best - J_star - 1e-10)


@pytest.mark.parametrize("solver", [None, S.AGMEF(scheme="primal")], ids=["default", "AGMEF"])
def test_regularized_form_matches_sklearn_and_cvxpy(solver):
    """scikit-learn minimizes (1/2n)‖y − Xw‖² + α ρ‖w‖₁ + ½α(1 − ρ)‖w‖² (ρ = l1_ratio):
    nsjax's Squared loss with ElasticNet(mu=αρ, lam=α(1 − ρ))."""
    X, y = regression(1)
    alpha, rho = 0.1, 0.6
    ref = SklearnElasticNet(alpha=alpha, l1_ratio=rho, fit_intercept=False, tol=1e-14,
                            max_iter=100_000).fit(X, y)
    reg = ElasticNet(mu=alpha * rho, lam=alpha * (1 - rho))
    J_star = cvxpy_optimum(X, y, alpha * (1 - rho), loss="squared", reg="elasticnet",
                           mu=alpha * rho)[0]
    sol = nsjax.solve(nsjax.Problem(Squared(), reg, X, y), solver, tol=1e-10, max_steps=5000)
    assert sol.result == nsjax.RESULTS.successful
    w = np.asarray(sol.w)
    np.testing.assert_allclose(w, ref.coef_, atol=1e-6)
    # The same support (AGM-EF's iterates are averages of prox points: zero to ~1e-9).
    zero = ref.coef_ == 0
    assert 0 < zero.sum() < 8 and np.all(np.abs(w[zero]) <= 1e-8) and np.all(w[~zero] != 0)
    assert float(sol.value) == pytest.approx(J_star, rel=1e-8)
    assert float(sol.value) - J_star <= float(sol.gap) + 1e-12


def test_lambda_and_r_give_the_same_solutions_along_a_path():
    """For each λ, r(λ) = γ‖w_λ‖₁ + ½‖w_λ‖² makes the constrained minimizer w_λ again (the
    equivalence Zhang et al. (2010) state below eq. 52); r falls as λ grows."""
    X, y = regression(2)
    gamma, radii = 0.3, []
    for lam in (0.01, 0.1, 1.0):
        regularized = nsjax.solve(nsjax.Problem(Squared(), ElasticNet(lam * gamma, lam), X, y),
                                  tol=1e-12, max_steps=5000)
        w_lam = np.asarray(regularized.w)
        r = level(w_lam, gamma)
        constrained = nsjax.solve(nsjax.Problem(Squared(), ElasticNetBall(r, gamma), X, y),
                                  tol=1e-12, max_steps=5000)
        assert constrained.result == nsjax.RESULTS.successful
        np.testing.assert_allclose(np.asarray(constrained.w), w_lam, atol=1e-6)
        radii.append(r)
    assert radii[0] > radii[1] > radii[2] > 0


def test_the_ball_is_refused_where_it_cannot_be_solved():
    X, y = regression()
    prob = nsjax.Problem(Squared(), ElasticNetBall(1.0, 0.5), X, y)
    for solver in (S.SubLBFGS(), S.OBA(), S.BMRM()):
        with pytest.raises(ValueError,
                           match=r"AGMEF\(scheme='primal'\), AGMEF1\(scheme='primal'\)"):
            nsjax.solve(prob, solver)
    with pytest.raises(ValueError, match="scheme='primal'|L2"):
        nsjax.solve(prob, S.AGMEF())  # the dual scheme: the hinge with L2 only
    with pytest.raises(ValueError, match="gamma"):
        nsjax.Problem(Squared(), ElasticNetBall(1.0, -0.5), X, y)
    with pytest.raises(ValueError, match="outside the set"):
        nsjax.solve(prob, w0=np.full(8, 10.0))
    # Its projection is a valid start.
    sol = nsjax.solve(prob, w0=prob.reg.prox(np.full(8, 10.0), 1.0), tol=1e-6)
    assert sol.result == nsjax.RESULTS.successful
