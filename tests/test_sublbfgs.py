"""subLBFGS / subBFGS against independent optima (cvxpy, LIBLINEAR) and the claims of
Yu et al. (2010)."""

import warnings

import jax
import numpy as np
import pytest
from reference import cvxpy_optimum, hinge_objective, random_binary
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import nsjax
from nsjax import RESULTS

# Large memory without secant scaling: on 200-example problems the hinge is so kinked that a
# 15-pair memory converges too slowly to test 1e-6 (see RESULTS.md); the algorithm is the same.
# The direction search to ε = 1e-6 (Alg. 2; 1e-5 by default): at 1e-5 it gave up on seed 16
# (direction_failed) at 3e-6 of J* in one of XLA's summation orders (`nsjax.programs`)
# and at 1e-10 in the other; at 1e-6, at 3e-10.
EXACT = nsjax.solvers.SubLBFGS(memory=256, scaling=False, eps=1e-6)


@pytest.mark.parametrize("seed", range(20))
def test_random_problems_reach_cvxpy_optimum(seed):
    sparse = seed % 2 == 1
    X, y, lam = random_binary(seed, 200, 50, sparse=sparse, nnz=2000)
    J_star, _ = cvxpy_optimum(X, y, lam)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, EXACT, max_steps=1500, tol=1e-9)
    value = float(sol.value)
    Xd = X.toarray() if sparse else X
    assert value == pytest.approx(hinge_objective(np.asarray(sol.w), Xd, y, lam), rel=1e-12)
    assert abs(value - J_star) <= 1e-6 * J_star
    # The reported gap bounds the true suboptimality (cvxpy's J* is itself accurate to
    # about 1e-10, hence the slack), at the end and at every recorded step.
    assert float(sol.gap) >= value - J_star - 1e-9
    steps = int(sol.num_steps)
    hv, hg = np.asarray(sol.history.value[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(hg >= hv - J_star - 1e-9)
    assert np.all(np.isnan(np.asarray(sol.history.value[steps:])))


@pytest.mark.parametrize("name", ["breast_cancer", "digits_binary"])
def test_matches_liblinear_on_real_data(name):
    X, y = getattr(nsjax.datasets, name)()
    n, lam = X.shape[0], 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(loss="hinge", dual=True, fit_intercept=False, tol=1e-10,
                        C=1.0 / (lam * n), max_iter=200_000).fit(X, y)
    yy = np.where(y == np.unique(y)[1], 1.0, -1.0)
    J_lib = hinge_objective(svc.coef_.ravel(), X, yy, lam)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.SubBFGS() if X.shape[1] <= 64 else EXACT,
                      max_steps=2000, tol=1e-9)
    assert abs(float(sol.value) - J_lib) <= 1e-5 * J_lib
    # Predictions of the default subLBFGS agree with LIBLINEAR's on almost all points.
    fast = nsjax.solve(prob, nsjax.solvers.SubLBFGS(), max_steps=300, tol=1e-6)
    agree = np.mean(np.sign(X @ np.asarray(fast.w)) == np.sign(X @ svc.coef_.ravel()))
    assert agree >= 0.97


def test_certified_gap_reaches_1e_8_at_the_optimum():
    X, y = nsjax.datasets.breast_cancer()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.SubBFGS(), max_steps=2000, tol=1e-8)
    assert sol.result == RESULTS.successful
    assert float(sol.gap) <= 1e-8


@pytest.mark.parametrize("solver", [nsjax.solvers.SubBFGS(), nsjax.solvers.SubLBFGS()])
def test_toy_problem_17_in_two_steps(solver):
    """f(x, y) = 10|x| + |y| from (1, 1): subBFGS with the exact line search lands on the
    hinge x = 0, then direction finding zeroes the x component (Yu et al. 2010, Sec. 2.4)."""
    slopes = np.array([[10.0, -10.0], [1.0, -1.0]])
    prob = nsjax.Problem(nsjax.losses.MaxAffine(slopes, reduction="sum"), None, np.eye(2))
    sol = nsjax.solve(prob, solver, w0=[1.0, 1.0], max_steps=2)
    np.testing.assert_allclose(np.asarray(sol.w), [0.0, 0.0], atol=1e-12)
    assert float(sol.value) <= 1e-12
    # And it then knows it is done: with λ = 0 the gap is certified only when direction
    # finding returns ḡ = 0 ∈ ∂f exactly, which may take one memory restart (B = I).
    done = nsjax.solve(prob, solver, w0=[1.0, 1.0], max_steps=10)
    assert done.result == RESULTS.successful and int(done.num_steps) <= 4
    assert float(done.gap) == 0.0


def test_logistic_uses_wolfe_line_search_and_matches_cvxpy():
    X, y, lam = random_binary(3, 150, 20)
    J_star, _ = cvxpy_optimum(X, y, lam, loss="logistic")
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(), max_steps=500, tol=1e-10)
    assert sol.result == RESULTS.successful
    assert abs(float(sol.value) - J_star) <= 1e-8 * J_star
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-10
    assert int(sol.stats["linesearch_evaluations"]) >= int(sol.num_steps)


def test_exact_line_search_refused_for_smooth_loss():
    X, y, lam = random_binary(0, 20, 3)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(lam), X, y)
    with pytest.raises(ValueError, match="lines"):
        nsjax.solve(prob, nsjax.solvers.SubLBFGS(line_search="exact"))


def test_wolfe_line_search_also_solves_the_hinge():
    X, y, lam = random_binary(5, 100, 10)
    J_star, _ = cvxpy_optimum(X, y, lam)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.SubBFGS(line_search="wolfe"), max_steps=1000,
                      tol=1e-9)
    assert abs(float(sol.value) - J_star) <= 1e-4 * J_star
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-9


def test_nonfinite_run_keeps_last_finite_iterate():
    X, y, _ = random_binary(1, 30, 4)
    ok = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(1e-3), X, y)
    # `Problem` refuses X this large (tests/test_hostile.py); data that overflows can still
    # arrive traced, so the loop's guard is tested by going around the checks.
    prob = jax.tree_util.tree_map(lambda a: a, ok)
    prob.X = nsjax.DesignMatrix.from_any(X * 1e160)
    sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(), max_steps=50)
    assert float(sol.gap) == np.inf
    assert sol.result == RESULTS.nonfinite
    assert np.all(np.isfinite(np.asarray(sol.w)))
    with pytest.raises(RuntimeError, match="non-finite"):
        nsjax.solve(prob, nsjax.solvers.SubLBFGS(), max_steps=50, throw=True)


def test_max_steps_and_stats():
    X, y = nsjax.datasets.digits_binary()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-4), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(), max_steps=5, tol=0.0)
    assert sol.result == RESULTS.max_steps_reached
    assert int(sol.num_steps) == 5
    assert np.all(np.isfinite(np.asarray(sol.history.value)))
    assert np.all(np.diff(np.asarray(sol.history.value)) <= 1e-15)  # monotone descent
    assert int(sol.stats["matvecs"]) >= 2 + 2 * 5
    assert set(sol.stats) >= {"direction_iterations", "skipped_updates", "matvecs"}
