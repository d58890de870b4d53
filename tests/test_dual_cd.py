"""`DualCD`, LIBLINEAR's dual coordinate descent (Hsieh et al. 2008) in nsjax: its optimum is
cvxpy's and LIBLINEAR's, its gap bounds the true suboptimality at every epoch, and it
refuses what it does not take. (The registry's invariants run it too: tests/solvers.py.)"""

import numpy as np
import pytest
import scipy.sparse as sp
from reference import cvxpy_optimum, random_binary
from sklearn.svm import LinearSVC

import nsjax
from nsjax.losses import Hinge, Logistic
from nsjax.regularizers import L1, L2
from nsjax.solvers import DualCD


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_optimum_equals_cvxpy_and_the_gap_bounds_the_suboptimality(sparse, weighted):
    X, y, lam = random_binary(3, 60, 12, sparse=sparse, nnz=300)
    c = np.random.default_rng(4).uniform(0.2, 3.0, 60) if weighted else None
    J_star, _ = cvxpy_optimum(X, y, lam, sample_weight=c)
    prob = nsjax.Problem(Hinge(), L2(lam), X, y, sample_weight=c)
    sol = nsjax.solve(prob, DualCD(), max_steps=3000, tol=1e-10)
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, rel=1e-7, abs=1e-9)
    steps = int(sol.num_steps)
    best, gaps = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    # Each epoch's certificate: 0 ≤ J(best) − J* ≤ gap (cvxpy's J* to ~1e-10).
    assert np.all(gaps >= 0)
    assert np.all(best - J_star <= gaps + 1e-9)


def test_optimum_equals_liblinear():
    rng = np.random.default_rng(0)
    X = sp.random(300, 2000, density=0.01, random_state=1, format="csr")
    y = np.where(X @ rng.normal(size=2000) + 0.1 * rng.normal(size=300) > 0, 1, -1)
    lam = 1e-3
    prob = nsjax.Problem(Hinge(), L2(lam), X, y)
    sol = nsjax.solve(prob, DualCD(), max_steps=5000, tol=1e-12)
    ref = LinearSVC(loss="hinge", C=1 / (lam * 300), fit_intercept=False, tol=1e-10,
                    max_iter=100_000).fit(X, y)
    J_ref = float(prob.objective(ref.coef_[0]))
    assert float(sol.value) <= J_ref * (1 + 1e-10)  # at least as good as LIBLINEAR's point
    assert J_ref - float(sol.value) <= 1e-7 * J_ref
    np.testing.assert_allclose(np.asarray(sol.w), ref.coef_[0], atol=1e-3)


def test_the_default_on_text_is_dual_cd_and_certifies_liblinears_optimum():
    X, y = nsjax.datasets.topic_corpus(300, 3000, topics=4, seed=1)
    lam = 1e-4
    prob = nsjax.Problem(Hinge(), L2(lam), X, y)
    assert isinstance(nsjax.solvers.default_solver(prob), DualCD)
    sol = nsjax.solve(prob, tol=1e-9)
    assert sol.result == nsjax.RESULTS.successful
    ref = LinearSVC(loss="hinge", C=1 / (lam * 300), fit_intercept=False, tol=1e-10,
                    max_iter=100_000).fit(X, y)
    J_ref = float(prob.objective(ref.coef_[0]))
    assert float(sol.value) - float(sol.gap) <= J_ref <= float(sol.value) + 1e-9


def test_an_empty_row_takes_its_bound():
    """xᵢ = 0: Qᵢᵢ = 0 and G = −1, so αᵢ = Cᵢ (the example's hinge is 1 whatever w)."""
    X, y, lam = random_binary(5, 30, 6)
    X[7] = 0.0
    J_star, _ = cvxpy_optimum(X, y, lam)
    sol = nsjax.solve(nsjax.Problem(Hinge(), L2(lam), X, y), DualCD(), tol=1e-10)
    assert float(sol.value) == pytest.approx(J_star, rel=1e-7)


def test_the_seed_changes_the_order_not_the_optimum():
    X, y, lam = random_binary(6, 40, 8)
    prob = nsjax.Problem(Hinge(), L2(lam), X, y)
    a, b = (nsjax.solve(prob, DualCD(seed=s), max_steps=3, tol=0.0) for s in (0, 1))
    assert float(a.history.value[0]) != float(b.history.value[0])
    c, d = (nsjax.solve(prob, DualCD(seed=s), tol=1e-10) for s in (0, 1))
    assert float(c.value) == pytest.approx(float(d.value), rel=1e-9)


@pytest.mark.parametrize("make, match", [
    (lambda X, y: nsjax.Problem(Hinge(), L2(0.1), X, y, bias=True),
     "does not support an unregularized bias"),
    (lambda X, y: nsjax.Problem(Logistic(), L2(0.1), X, y), "needs the binary hinge"),
    (lambda X, y: nsjax.Problem(Hinge(), L1(0.1), X, y), "needs the L2 regularizer"),
    (lambda X, y: nsjax.Problem(Hinge(), L2(0.0), X, y), "needs lam > 0"),
])
def test_refuses_what_it_does_not_take(make, match):
    X, y, _ = random_binary(0, 20, 4)
    with pytest.raises(ValueError, match=match):
        nsjax.solve(make(X, y), DualCD())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_blocks_reach_the_sequential_optimum(sparse, dtype):
    """The block path (every coordinate's step at once, then the exact line search of the
    dual quadratic) ascends D at every block size and ends at Alg. 1's optimum."""
    X, y, lam = random_binary(7, 90, 15, sparse=sparse, nnz=400)
    prob = nsjax.Problem(Hinge(), L2(lam), X, y, dtype=dtype)
    # n > d and dense: the coordinates are strongly coupled, CD's slow regime (thousands of
    # epochs to 1e-10 even one coordinate at a time).
    tol = 1e-5 if dtype == np.float32 else 1e-8
    one = nsjax.solve(prob, DualCD(), max_steps=20_000, tol=tol)
    for block in (4, 32, 90, 200):  # a last partial block, one block, a block beyond n
        sol = nsjax.solve(prob, DualCD(block=block), max_steps=20_000, tol=tol)
        assert sol.result == nsjax.RESULTS.successful
        assert float(sol.value) == pytest.approx(float(one.value), rel=10 * tol)
        lower = np.asarray(sol.history.best) - np.asarray(sol.history.gap)
        steps = int(sol.num_steps)
        assert np.all(np.diff(lower[:steps]) >= 0)  # the best lower bound never falls


@pytest.mark.parametrize("sparse", [False, True])
def test_shrinking_reaches_the_same_optimum(sparse):
    """Skipping the coordinates held at a bound (Hsieh et al. 2008, Sec. 3.2) changes which
    coordinates an epoch visits, not the optimum; the certificate stays the whole problem's."""
    X, y, lam = random_binary(8, 120, 30, sparse=sparse, nnz=700)
    prob = nsjax.Problem(Hinge(), L2(lam), X, y)
    J_star, _ = cvxpy_optimum(X, y, lam)
    for shrinking in (False, True):
        sol = nsjax.solve(prob, DualCD(shrinking=shrinking), max_steps=20_000, tol=1e-9)
        assert sol.result == nsjax.RESULTS.successful
        assert float(sol.value) == pytest.approx(J_star, rel=1e-7)


def test_refuses_bad_options():
    with pytest.raises(TypeError, match="seed"):
        DualCD(seed=0.5)
    with pytest.raises(ValueError, match="block"):
        DualCD(block=0)
    with pytest.raises(TypeError, match="shrinking"):
        DualCD(shrinking="yes")
