"""Per-example weights, `Problem(..., sample_weight=c)`: R(S) = (1/n) Σᵢ cᵢ ℓ(Sᵢ, yᵢ).

Against cvxpy's weighted optimum (with and without a bias), against the unweighted problem
with examples repeated (integer weights) or dropped (zero weights), the ridge closed form
for derivatives with respect to the weights, and the refusals.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import cvxpy_multiclass_optimum, cvxpy_optimum

import nsjax

N, D, LAM = 60, 5, 0.05


def data(seed=0, n=N, d=D):
    rng = np.random.default_rng(seed + 900)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.8 + 0.5 * rng.normal(size=n) > 0, 1, -1)
    c = rng.uniform(0.0, 3.0, size=n)
    c[:3] = 0.0  # dropped examples
    return X, y, c


LOSSES = {"hinge": nsjax.losses.Hinge, "logistic": nsjax.losses.Logistic,
          "squared": nsjax.losses.Squared}


@pytest.mark.parametrize(("loss", "bias"), [("hinge", False), ("hinge", True),
                                            ("logistic", True), ("squared", False)])
def test_default_solve_reaches_the_weighted_cvxpy_optimum_with_a_valid_gap(loss, bias):
    X, y, c = data()
    y = y.astype(float) + (0.3 * X[:, 0] if loss == "squared" else 0.0)
    prob = nsjax.Problem(LOSSES[loss](), nsjax.regularizers.L2(LAM), X, y, bias=bias,
                         sample_weight=c)
    assert prob.weighted and "weighted" in repr(prob)
    J_star, w_star = cvxpy_optimum(X, y, LAM, loss=loss, bias=bias, sample_weight=c)
    sol = nsjax.solve(prob, tol=1e-9)
    assert sol.result == nsjax.RESULTS.successful
    # The certified gap bounds the true suboptimality (cvxpy's optimum up to its 1e-12).
    assert sol.value - J_star <= sol.gap + 1e-9
    assert sol.gap <= 1e-9 * max(1.0, abs(float(sol.value)))
    np.testing.assert_allclose(sol.w, w_star, atol=2e-4)
    # The objective is the weighted one, computed here independently.
    coef, b = (sol.w[:-1], sol.w[-1]) if bias else (sol.w, 0.0)
    S = X @ np.asarray(coef) + float(b)
    terms = {"hinge": np.maximum(0, 1 - y * S), "logistic": np.logaddexp(0, -y * S),
             "squared": 0.5 * (S - y) ** 2}[loss]
    J = 0.5 * LAM * float(coef @ coef) + np.mean(c * terms)
    assert float(sol.value) == pytest.approx(J, rel=1e-10)


def test_weighted_crammer_singer_reaches_the_cvxpy_optimum_with_a_valid_gap():
    """MulticlassHinge with weights: each example's pieces scaled by cᵢ, the end-of-run
    certificate (a band fit on those pieces) included."""
    X, _, c = data(4)
    y = np.argmax(X[:, :3] + 0.3 * np.random.default_rng(4).normal(size=(N, 3)), axis=1)
    prob = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(LAM), X, y,
                         sample_weight=c)
    J_star = cvxpy_multiclass_optimum(X, y, LAM, 3, sample_weight=c)
    sol = nsjax.solve(prob, tol=1e-8)
    assert sol.result == nsjax.RESULTS.successful
    assert -1e-9 <= float(sol.value) - J_star <= float(sol.gap) + 1e-9
    # The conjugate agrees with the pieces: a subgradient's dual value is a lower bound.
    # (Compiled: eagerly, its operations compile one by one, 2 s.)
    assert float(jax.jit(_dual_at_subgradient)(prob, sol.w)) <= J_star + 1e-9


def _dual_at_subgradient(prob, w):
    S = prob.scores(w)
    return prob.dual_value(prob.loss.dscores(S, prob.y), S=S)


@pytest.mark.parametrize("solver", [nsjax.solvers.BMRM(), nsjax.solvers.OBA()],
                         ids=["BMRM", "OBA"])
def test_integer_weights_equal_repeated_examples(solver):
    """cᵢ = k is example i taken k times: with n' = Σc rows, J_c(w; λ) = (n'/n) J(w; λ n/n')
    on the repeated data, so both give the same w."""
    X, y, _ = data(1)
    c = np.random.default_rng(5).integers(0, 4, size=N)
    c[:2] = [1, 2]
    loss = nsjax.losses.Logistic() if isinstance(solver, nsjax.solvers.OBA) else (
        nsjax.losses.Hinge())
    reg = nsjax.regularizers.L1 if isinstance(solver, nsjax.solvers.OBA) else (
        nsjax.regularizers.L2)
    weighted = nsjax.Problem(loss, reg(LAM), X, y, sample_weight=c)
    rows = np.repeat(np.arange(N), c)
    repeated = nsjax.Problem(loss, reg(LAM * N / rows.size), X[rows], y[rows])
    a = nsjax.solve(weighted, solver, tol=1e-11, max_steps=2000)
    b = nsjax.solve(repeated, solver, tol=1e-11, max_steps=2000)
    assert a.result == b.result == nsjax.RESULTS.successful
    assert float(a.value) == pytest.approx(float(b.value) * rows.size / N, rel=1e-8)
    np.testing.assert_allclose(a.w, b.w, atol=1e-4)


def test_ones_are_the_unweighted_problem_and_a_constant_rescales_lambda():
    X, y, _ = data(2)
    plain = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y)
    ones = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                         sample_weight=np.ones(N))
    w = np.random.default_rng(0).normal(size=D)
    assert float(ones.objective(w)) == pytest.approx(float(plain.objective(w)), rel=1e-14)
    # c = 2 everywhere: J_2(w; λ) = 2 J(w; λ/2).
    twos = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                         sample_weight=np.full(N, 2.0))
    half = plain.with_strength(LAM / 2)
    assert float(twos.objective(w)) == pytest.approx(2 * float(half.objective(w)), rel=1e-14)
    # Dual values of the weighted problem are lower bounds: at the subgradient of any w.
    for prob in (ones, twos):
        S = prob.scores(jnp.asarray(w))
        u = prob.loss.dscores(S, prob.y)
        assert float(prob.dual_value(u, S=S)) <= float(prob.value(jnp.asarray(w), S)) + 1e-12


def test_derivative_with_respect_to_the_weights_equals_the_ridge_closed_form():
    """Weighted ridge: w(c) = (XᵀCX/n + λI)⁻¹ XᵀCy/n, differentiated by hand."""
    X, y, c = data(3)
    y = y + 0.2 * X[:, 1]
    v = np.random.default_rng(1).normal(size=D)

    def w_of(weights):
        prob = nsjax.Problem(nsjax.losses.Squared(), nsjax.regularizers.L2(LAM), X, y,
                             sample_weight=weights)
        # The default solver (the Hybrid): the program of the squared-loss case of the
        # default-solve test above.
        return nsjax.solve(prob, tol=1e-13, max_steps=1000).w

    grad = jax.grad(lambda weights: jnp.vdot(v, w_of(weights)))(jnp.asarray(c))
    H = X.T @ (c[:, None] * X) / N + LAM * np.eye(D)
    w = np.linalg.solve(H, X.T @ (c * y) / N)
    z = np.linalg.solve(H, v)  # d(vᵀw)/dcᵢ = zᵀ xᵢ (yᵢ − xᵢᵀw) / n
    np.testing.assert_allclose(grad, (X @ z) * (y - X @ w) / N, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize(("weights", "error", "match"), [
    (np.ones(N - 1), ValueError, r"shape \(n,\) = \(60,\)"),
    (-np.ones(N), ValueError, "finite and >= 0"),
    (np.full(N, np.nan), ValueError, "finite and >= 0"),
    (np.zeros(N), ValueError, "zero for every example"),
    (np.array(["a"] * N), TypeError, "real numbers"),
])
def test_bad_weights_are_refused_naming_the_argument(weights, error, match):
    X, y, _ = data()
    with pytest.raises(error, match=match):
        nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                      sample_weight=weights)


def test_losses_and_solvers_without_weights_refuse_them_before_compiling():
    X, y, c = data()
    with pytest.raises(ValueError, match="sample_weight needs a loss that weighs"):
        nsjax.Problem(nsjax.losses.MultilabelHinge(), nsjax.regularizers.L2(LAM), X,
                      [[i % 3] for i in range(N)], sample_weight=c)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                         sample_weight=c)
    for solver in (nsjax.solvers.Pragam(), nsjax.solvers.AGMEF()):
        with pytest.raises(ValueError, match="does not take sample weights.*BMRM"):
            nsjax.solve(prob, solver)
