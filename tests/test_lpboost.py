"""Entropy-regularized LPBoost (Zhang et al. 2010, Example 5, eq. 51) and the max-score loss under
AGM-EF with its soft-max smoothing (Sec. 5.1, Example 2): `nsjax.losses.MaxScore` against
closed forms and `jax.grad`, and the solves against cvxpy (exponential cone)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import check_capped_simplex_run, cvxpy_optimum

import nsjax
from nsjax.losses import MaxScore
from nsjax.regularizers import L2, Entropy


def edges(seed, t=12, n=20):
    """t weak hypotheses' edge vectors on n examples: uᵢⱼ = yⱼ hᵢ(xⱼ) ∈ {−1, +1}, each a
    little better than chance on some examples (a seeded stand-in for a boosting round)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((t, n)) < 0.55, 1.0, -1.0)


def test_max_score_subgradients_conjugate_and_smoothing():
    loss = MaxScore()
    S = jnp.array([0.3, 1.2, 1.2, -4.0])
    assert float(loss.risk(S)) == 1.2
    np.testing.assert_array_equal(loss.dscores(S), [0, 1, 0, 0])
    # On the tie the steepest vertex along dS.
    np.testing.assert_array_equal(loss.argsup(S, jnp.array([9.0, 0.0, 1.0, 9.0])),
                                  [0, 0, 1, 0])
    assert float(loss.conjugate(jnp.array([0.2, 0.3, 0.5, 0.0]))) == 0.0
    assert float(loss.conjugate(jnp.array([0.2, 0.3, 0.6, 0.0]))) == np.inf
    assert float(loss.conjugate(jnp.array([-0.1, 0.3, 0.8, 0.0]))) == np.inf
    rng = np.random.default_rng(0)
    for mu in (1.0, 0.1, 1e-3):
        S = jnp.asarray(rng.normal(size=6))
        value, grad = loss.smoothed(S, mu)
        R = float(loss.risk(S))
        # g*_μ ≤ R ≤ g*_μ + μ log n, and the gradient is ∇g*_μ.
        assert float(value) <= R + 1e-15 and R <= float(value) + mu * math.log(6) + 1e-15
        np.testing.assert_allclose(grad, jax.grad(lambda s, m=mu: loss.smoothed(s, m)[0])(S),
                                   rtol=1e-12, atol=1e-300)
        # Fenchel: g*_μ(S) = ⟨α, S⟩ − μ d(α) at α = ∇g*_μ(S).
        assert float(value) == pytest.approx(
            float(grad @ S - loss.smoothing_term(grad, mu)), abs=1e-13)


@pytest.mark.parametrize("solver, lam, cap", [
    (None, 0.05, 1.0), (None, 0.05, 0.1),
    # AGM-EF-1 is slower here: more than 20,000 steps with the cap at 0.1.
    (nsjax.solvers.AGMEF1(scheme="primal"), 0.05, 1.0)],
    ids=["default", "default-capped", "AGMEF1-primal"])
def test_lpboost_reaches_the_cvxpy_optimum_with_valid_gaps(solver, lam, cap):
    U = edges(0)
    J_star, w_star = cvxpy_optimum(U, None, lam, loss="maxscore", reg="entropy", cap=cap)
    prob = nsjax.Problem(MaxScore(), Entropy(lam, cap), U)
    sol = nsjax.solve(prob, solver, max_steps=20_000, tol=1e-6)
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, abs=1e-6)
    check_capped_simplex_run(sol, J_star, cap)
    assert float(sol.gap) <= 1e-6 * max(1.0, abs(float(sol.value)))


def test_max_score_with_l2_reaches_the_cvxpy_optimum():
    """The Hadamard-type problem of Saha et al. (2009), λ/2‖w‖² + maxᵢ⟨aᵢ, w⟩, by AGM-EF's
    primal scheme (Euclidean geometry, soft-max smoothing)."""
    A = np.random.default_rng(1).normal(size=(10, 6))
    J_star = cvxpy_optimum(A, None, 0.1, loss="maxscore", reg="l2")[0]
    prob = nsjax.Problem(MaxScore(), L2(0.1), A)
    sol = nsjax.solve(prob, nsjax.solvers.AGMEF(scheme="primal"), max_steps=20_000, tol=1e-6)
    assert sol.result == nsjax.RESULTS.successful
    assert float(sol.value) == pytest.approx(J_star, abs=1e-6)
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-10


def test_max_score_is_refused_by_the_dual_schemes():
    prob = nsjax.Problem(MaxScore(), Entropy(0.05), edges(2))
    with pytest.raises(ValueError, match="scheme='primal'"):
        nsjax.solve(prob, nsjax.solvers.AGMEF())
    with pytest.raises(ValueError, match=r"AGMEF\(scheme='primal'\), AGMEF1\(scheme='primal'\)"):
        nsjax.solve(prob, nsjax.solvers.Pragam())
    with pytest.raises(ValueError, match="bias"):
        nsjax.Problem(MaxScore(), Entropy(0.05), edges(2), bias=True)
