"""Derivatives of solutions (nsjax.implicit): exact formulas where they exist (ridge, the
lasso on its support), finite differences of the whole solve (logistic), and finite
differences of the exact solution on a fixed margin set (hinge: the margin set is checked
first: it reproduces the solver's w, its multipliers lie strictly inside (0, 1) and no other
example is near the margin, so the finite differences stay on one piece)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nsjax

N, D = 60, 20


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = np.where(X[:, 0] + rng.normal(size=N) > 0, 1.0, -1.0)
    return X, y, X @ rng.normal(size=D) + 0.3 * rng.normal(size=N)


def _central_difference(f, h):
    """(f(h) − f(−h)) differenced to fourth order: (8(f(h) − f(−h)) − (f(2h) − f(−2h)))/(12h),
    so that the truncation error (O(h⁴)) stays far below the tolerances."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def _w_star(loss, reg, y, solver=None, bias=False, tol=1e-14):
    classes = None if isinstance(loss, nsjax.losses.Squared) else (-1, 1)

    def w_star(strength, X, targets=y):
        prob = nsjax.Problem(loss, reg(strength), X, targets, bias=bias, classes=classes)
        return nsjax.solve(prob, solver, tol=tol, max_steps=2000).w

    return w_star


def test_ridge_derivatives_equal_the_closed_form():
    # w* = (XᵀX/n + λI)⁻¹ Xᵀy/n: dw/dλ = −H⁻¹w*, dw/dy = H⁻¹Xᵀ/n, dw/dX by the formula
    # differentiated by hand for one entry.
    X, _, t = _data()
    lam = 0.1
    w_star = _w_star(nsjax.losses.Squared(), nsjax.regularizers.L2, t, nsjax.solvers.SubLBFGS())
    d_lam, d_X, d_y = jax.jacrev(w_star, argnums=(0, 1, 2))(lam, X, t)
    H = X.T @ X / N + lam * np.eye(D)
    w = np.linalg.solve(H, X.T @ t / N)
    np.testing.assert_allclose(d_lam, -np.linalg.solve(H, w), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(d_y, np.linalg.solve(H, X.T / N), rtol=1e-7, atol=1e-10)
    # ∂w/∂X_ij = H⁻¹ (e_j (t_i − x_iᵀw) − x_i w_j) / n
    i, j = 3, 2
    e = np.eye(D)[j]
    exact = np.linalg.solve(H, e * (t[i] - X[i] @ w) - X[i] * w[j]) / N
    np.testing.assert_allclose(d_X[:, i, j], exact, rtol=1e-7, atol=1e-10)


def test_lasso_derivative_on_its_support_equals_the_closed_form():
    # On the support S: X_Sᵀ(X_S w_S − y)/n + μ sign(w_S) = 0, so dw_S/dμ = −G⁻¹ sign(w_S)
    # with G = X_SᵀX_S/n, and dw/dμ = 0 off S. Default solver (OBA: exact zeros).
    X, _, t = _data(1)
    mu = 0.05
    w_star = _w_star(nsjax.losses.Squared(), nsjax.regularizers.L1, t)
    w = np.asarray(w_star(mu, X))
    support = w != 0
    assert 0 < support.sum() < D
    d_mu = np.asarray(jax.jacrev(w_star)(mu, X))
    G = X[:, support].T @ X[:, support] / N
    np.testing.assert_allclose(d_mu[support], -np.linalg.solve(G, np.sign(w[support])),
                               rtol=1e-7)
    assert np.all(d_mu[~support] == 0)


@pytest.mark.parametrize("bias", [False, True])
def test_logistic_derivatives_equal_finite_differences(bias):
    X, y, _ = _data(2)
    lam, h = 0.05, 1e-3
    w_star = _w_star(nsjax.losses.Logistic(), nsjax.regularizers.L2, y,
                     nsjax.solvers.SubLBFGS(), bias=bias)
    d_lam, d_X = jax.jacrev(w_star, argnums=(0, 1))(lam, X)

    def polished(lam, X):
        # A certified gap of 1e-14 J still leaves ‖w − w*‖ up to √(2 gap/λ) ~ 1e-7: two
        # Newton steps (numpy, by hand) take the solution to rounding before differencing.
        w = np.asarray(w_star(lam, X))
        Xb = np.c_[X, np.ones(N)] if bias else X
        ridge = lam * np.diag(np.r_[np.ones(D), np.zeros(int(bias))])
        for _ in range(2):
            p = 1 / (1 + np.exp(y * (Xb @ w)))  # σ(−y s)
            grad = ridge @ w - Xb.T @ (y * p) / N
            w = w - np.linalg.solve(ridge + (Xb.T * (p * (1 - p))) @ Xb / N, grad)
        return w

    fd = _central_difference(lambda e: polished(lam + e, X), h)
    np.testing.assert_allclose(d_lam, fd, rtol=1e-5, atol=1e-8)
    E = np.zeros_like(X)
    E[5, 1] = 1
    fd_X = _central_difference(lambda e: polished(lam, X + e * E), h)
    np.testing.assert_allclose(d_X[:, 5, 1], fd_X, rtol=1e-5, atol=1e-8)


def _hinge_on_margin_set(X, y, lam, bias, on_margin, errors):
    """The exact solution (w, α_M) of the KKT system of a fixed margin set M and error set E
    (dense least squares): λ n w = Σ_E y_i x̃_i + Σ_M α_i y_i x̃_i on w's rows (0 on the
    bias row), y_i x̃_iᵀ w = 1 on M."""
    Xb = np.c_[X, np.ones(len(y))] if bias else X
    A = (Xb[on_margin] * y[on_margin, None]).T
    reg = lam * len(y) * np.eye(Xb.shape[1])
    if bias:
        reg[-1, -1] = 0
    m = int(on_margin.sum())
    K = np.block([[reg, -A], [A.T, np.zeros((m, m))]])
    rhs = np.r_[(Xb[errors] * y[errors, None]).sum(0), np.ones(m)]
    z = np.linalg.lstsq(K, rhs, rcond=None)[0]
    return z[:Xb.shape[1]], z[Xb.shape[1]:]


@pytest.mark.parametrize("bias", [False, True])
def test_hinge_derivatives_equal_finite_differences_on_a_stable_margin_set(bias):
    X, y, _ = _data(3)
    lam, h = 0.5, 1e-6
    # The derivatives at w are those at w* only as far as w is w*: a certified gap of 1e-12
    # puts w within √(2·1e-12/λ) = 2e-6 of w* (J is λ-strongly convex in w), and the
    # default's proximity term (`BMRM.proximity`) stops there about 1e-6 away, its
    # derivatives 1e-4 off. The paper's OCAS-like phase 2 ends on the model's exact
    # minimizer, which is w* once the model is exact around it.
    solver = nsjax.solvers.Hybrid(bmrm=nsjax.solvers.BMRM(line_search="exact", proximity=0))
    w_star = _w_star(nsjax.losses.Hinge(), nsjax.regularizers.L2, y, solver, bias=bias,
                     tol=1e-12)
    w = np.asarray(w_star(lam, X))
    margins = y * ((np.c_[X, np.ones(N)] if bias else X) @ w)
    on_margin, errors = np.abs(margins - 1) < 1e-7, margins < 1 - 1e-7
    # The sets are those of the solution, and a stable one.
    exact, alpha = _hinge_on_margin_set(X, y, lam, bias, on_margin, errors)
    np.testing.assert_allclose(w, exact, atol=1e-7)
    assert 0 < on_margin.sum() < D and np.all((alpha > 1e-3) & (alpha < 1 - 1e-3))
    assert np.min(np.abs(margins[~on_margin] - 1)) > 1e-3
    d_lam, d_X = jax.jacrev(w_star, argnums=(0, 1))(lam, X)

    def fixed(lam, X):
        return _hinge_on_margin_set(X, y, lam, bias, on_margin, errors)[0]

    fd = (fixed(lam + h, X) - fixed(lam - h, X)) / (2 * h)
    np.testing.assert_allclose(d_lam, fd, rtol=1e-5, atol=1e-8)
    for i in (int(np.flatnonzero(on_margin)[0]), int(np.flatnonzero(errors)[0])):
        E = np.zeros_like(X)
        E[i, 4] = h
        fd_X = (fixed(lam, X + E) - fixed(lam, X - E)) / (2 * h)
        np.testing.assert_allclose(d_X[:, i, 4], fd_X, rtol=1e-5, atol=1e-8)
    if not bias:  # and the whole solve, finite-differenced, agrees too
        fd_solve = _central_difference(lambda e: w_star(lam + e, X), 1e-5)
        np.testing.assert_allclose(d_lam, fd_solve, rtol=1e-5, atol=1e-8)


def test_gradients_under_jit_and_vmap_equal_the_plain_ones():
    # A validation loss's gradient in λ, as a hyper-parameter search would use it.
    X, y, _ = _data(4)
    w_star = _w_star(nsjax.losses.Logistic(), nsjax.regularizers.L2, y,
                     nsjax.solvers.SubLBFGS(), tol=1e-12)

    def validation_loss(lam):
        return jnp.mean(jax.nn.softplus(-y * (X @ w_star(lam, X))))

    lams = jnp.asarray([0.03, 0.1, 0.3])
    plain = [float(jax.grad(validation_loss)(lam)) for lam in lams]
    np.testing.assert_allclose(jax.jit(jax.grad(validation_loss))(lams[1]), plain[1],
                               rtol=1e-9)
    np.testing.assert_allclose(jax.vmap(jax.grad(validation_loss))(lams), plain, rtol=1e-7)
    fd = _central_difference(lambda e: validation_loss(lams[1] + e), 1e-3)
    np.testing.assert_allclose(plain[1], fd, rtol=1e-5)


def test_unsupported_problems_and_forward_mode_refuse_clearly():
    X, y, _ = _data(5)
    labels = np.arange(N) % 3

    def multiclass(lam):
        prob = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(lam), X,
                             labels, classes=(0, 1, 2))
        return nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=5, tol=0.0).w.sum()

    with pytest.raises(NotImplementedError, match="MulticlassHinge with L2"):
        jax.grad(multiclass)(0.1)
    w_star = _w_star(nsjax.losses.Logistic(), nsjax.regularizers.L2, y,
                     nsjax.solvers.SubLBFGS(), tol=1e-6)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jacfwd(w_star)(0.1, X)
