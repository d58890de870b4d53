"""Pragam (Saha et al. 2009, Alg. 1): the bound of eq. 26 at every step with the exact Lipschitz
constant, the power-iteration estimate and the backtracking that corrects it, and what it
refuses. The cvxpy optimum, gap validity, jit, dtypes and sweeps are in the registry's
invariant tests (`solvers.py`)."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from reference import cvxpy_optimum, random_binary

import nsjax
from nsjax.solvers.pragam import Pragam
from nsjax.testing import estimate_spectral_norm_sq

N, D = 60, 6


def _svm(seed, lam):
    X, y, _ = random_binary(seed + 300, N, D)
    return X, y, nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)


@functools.partial(jax.jit, static_argnames=("solver", "steps"))
def _gaps(problem, solver, steps):
    """J(w_k) − D(α_k) of Alg. 1's own pair (not the loop's best-so-far) for k = 0..steps,
    the final L and state."""
    state = solver.init(problem, problem.zeros())

    def body(state, _):
        return solver.step(problem, state), state.core.gap

    state, gaps = jax.lax.scan(body, state, None, length=steps)
    return gaps, state


@pytest.mark.parametrize("seed, lam", [(0, 1e-1), (1, 1e-2), (2, 1e-3)])
def test_gap_obeys_eq_26_with_the_exact_lipschitz_constant(seed, lam):
    """J(w_k) − D(α_k) ≤ 4 L D₂ / ((k+1)(k+2)) with L = σ_max(X)²/λ, D₂ = 1/(2n), σ₂ = 1,
    at every k; and the gap is no smaller than the true suboptimality (cvxpy)."""
    X, y, prob = _svm(seed, lam)
    sq = float(np.linalg.norm(X, 2) ** 2)  # = λ_max(YXᵀXY): Y is a ±1 diagonal
    gaps, state = _gaps(prob, Pragam(spectral_norm_sq=sq), 400)
    gaps = np.asarray(gaps)
    k = np.arange(len(gaps))
    L = sq / lam
    bound = 4 * L * (1 / (2 * N)) / ((k + 1) * (k + 2))
    assert np.all(gaps <= bound * (1 + 1e-9)), np.max(gaps / bound)
    assert int(state.core.stats["lipschitz_increases"]) == 0  # L was exact: never raised
    # Not vacuous: the bound is within a factor 100 of the gap somewhere, and the gap closes.
    assert np.max(gaps / bound) > 1e-2
    J_star = cvxpy_optimum(X, y, lam, loss="hinge", reg="l2")[0]
    assert float(state.core.value) - J_star <= float(state.core.gap) + 1e-12
    assert np.all(gaps >= -1e-12)


def test_power_iteration_estimates_the_spectral_norm_from_below():
    X, _, prob = _svm(0, 0.1)
    exact = np.linalg.norm(X, 2) ** 2
    rough = float(estimate_spectral_norm_sq(prob.X, 2))
    good = float(estimate_spectral_norm_sq(prob.X, 50))
    assert rough <= exact * (1 + 1e-12) and good <= exact * (1 + 1e-12)
    assert good == pytest.approx(exact, rel=1e-8)
    assert rough < good or rough == pytest.approx(exact, rel=1e-8)


def test_backtracking_raises_an_underestimated_lipschitz_constant():
    """Started 1000× too low, L is raised by the step's own check (at least doubling each
    time, so about log2(1000) = 10 raises) and the run still converges with a valid gap."""
    X, y, prob = _svm(1, 1e-2)
    exact = float(np.linalg.norm(X, 2) ** 2)
    _, state = _gaps(prob, Pragam(spectral_norm_sq=exact / 1000), 300)
    raises = int(state.core.stats["lipschitz_increases"])
    assert 1 <= raises <= 12
    # L never exceeds twice what was needed (doubling from below), and the step it took
    # satisfies the ascent inequality, so the run still converges.
    assert float(state.lipschitz) <= 2 * exact / 1e-2 * (1 + 1e-9)
    sol = nsjax.solve(prob, Pragam(spectral_norm_sq=exact / 1000), tol=1e-6, max_steps=5000)
    J_star = cvxpy_optimum(X, y, 1e-2, loss="hinge", reg="l2")[0]
    assert sol.result == nsjax.RESULTS.successful
    assert 0 <= float(sol.value) - J_star <= float(sol.gap) + 1e-12


def test_matches_liblinear_on_real_data():
    """breast_cancer, standardised: the same objective as LIBLINEAR's L1-loss SVC without an
    intercept (C = 1/(λn)), whose dual coordinate descent is the reference."""
    from sklearn.svm import LinearSVC

    X, y = nsjax.datasets.breast_cancer()
    X = (X - X.mean(0)) / X.std(0)
    lam = 1e-2
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, Pragam(), tol=1e-6, max_steps=20_000)
    ref = LinearSVC(loss="hinge", C=1 / (lam * len(y)), fit_intercept=False, tol=1e-10,
                    max_iter=100_000, dual=True).fit(X, y)
    J_ref = float(prob.objective(ref.coef_[0]))
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) <= J_ref + 1e-6  # as good as LIBLINEAR, to tol · max(1, |J|)
    assert J_ref >= float(sol.value - sol.gap)  # and its value respects Pragam's bound


@pytest.mark.parametrize("loss, reg, match", [
    (nsjax.losses.Logistic(), nsjax.regularizers.L2(0.1), "binary hinge"),
    (nsjax.losses.Hinge(), nsjax.regularizers.L1(0.1), "L2 regularizer"),
    (nsjax.losses.Hinge(), nsjax.regularizers.L2(0.0), "lam > 0"),
])
def test_refuses_what_it_cannot_solve(loss, reg, match):
    X, y, _ = random_binary(0, 10, 3)
    with pytest.raises(ValueError, match=match):
        nsjax.solve(nsjax.Problem(loss, reg, X, y), Pragam())


@pytest.mark.parametrize("options, match", [
    (dict(spectral_norm_sq=0.0), "spectral_norm_sq"),
    (dict(spectral_norm_sq=float("inf")), "spectral_norm_sq"),
    (dict(spectral_norm_sq="big"), "spectral_norm_sq"),
    (dict(power_iterations=0), "power_iterations"),
    (dict(power_iterations=2.5), "power_iterations"),
])
def test_bad_options_are_refused(options, match):
    with pytest.raises(ValueError, match=match):
        Pragam(**options)
