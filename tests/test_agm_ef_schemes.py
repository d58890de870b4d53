"""AGM-EF's schemes as objects (`nsjax.solvers._agm_ef_schemes`): each problem gets the scheme
and primal risk its structure declares, and every scheme keeps its contract (f and ∇f
agree, the model minimizer is the argmin, the certificate is a valid bound)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from reference import random_binary

import nsjax
from nsjax import losses as L
from nsjax import regularizers as R
from nsjax.solvers import AGMEF, AGMEF1
from nsjax.testing import agm_ef_schemes as S

X, Y, _ = random_binary(7, 12, 4)
U = np.random.default_rng(2).normal(size=(6, 4))


def problem(loss, reg, bias=False):
    """On binary data, or on LPBoost's edges U for MaxScore (which takes no labels)."""
    if isinstance(loss, L.MaxScore):
        return nsjax.Problem(loss, reg, U, bias=bias)
    return nsjax.Problem(loss, reg, X, Y, bias=bias)


CASES = [  # (solver, loss, regularizer, bias, the scheme's class, its risk's class)
    (AGMEF(), L.Hinge(), R.L2(0.1), False, S.DualScheme, None),
    (AGMEF1(epsilon=1e-3), L.Hinge(), R.L2(0.1), True, S.DualScheme, None),
    (AGMEF(scheme="primal"), L.Hinge(), R.L2(0.1), True, S.PrimalScheme, S.SmoothedHinge),
    (AGMEF(scheme="primal", prox_function="optimized"), L.Hinge(), R.L2(0.1), False,
     S.PrimalScheme, S.OptimizedHinge),
    (AGMEF(scheme="primal"), L.Hinge(), R.L1(0.1), False, S.PrimalScheme, S.SmoothedHinge),
    (AGMEF(scheme="primal"), L.Logistic(), R.ElasticNet(0.1, 0.5), False, S.PrimalScheme,
     S.SmoothRisk),
    (AGMEF1(scheme="primal"), L.Squared(), R.Entropy(0.1, 0.5), False, S.EntropyScheme,
     S.SmoothRisk),
    (AGMEF(scheme="primal"), L.Hinge(), R.ElasticNetBall(1.0, 0.3), False,
     S.ConstrainedScheme, S.SmoothedHinge),
    (AGMEF(scheme="primal"), L.MaxScore(), R.Entropy(0.1), False, S.EntropyScheme,
     S.OwnSmoothing),
    (AGMEF(scheme="primal"), L.F1Loss(), R.L2(0.1), False, S.PrimalScheme, S.GibbsSmoothing),
]
IDS = [f"{type(c[0]).__name__}-{c[0].scheme}-{type(c[1]).__name__}-{type(c[2]).__name__}"
       for c in CASES]


@pytest.mark.parametrize("solver, loss, reg, bias, kind, risk", CASES, ids=IDS)
def test_each_problem_gets_the_scheme_its_structure_declares(solver, loss, reg, bias, kind,
                                                             risk):
    scheme = solver.scheme_for(problem(loss, reg, bias))
    assert type(scheme) is kind
    assert type(getattr(scheme, "risk", None)) is (type(None) if risk is None else risk)
    if type(solver) is AGMEF:  # (AGMEF1 names Theorem 14 for every scheme)
        assert S.SCHEMES[solver.scheme].bound(solver.target) == solver.bound


def test_the_schemes_default_epsilon_is_the_solvers_target():
    assert AGMEF(scheme="primal").target == S.PrimalScheme.default_epsilon == 1e-6
    assert AGMEF().target is S.DualScheme.default_epsilon is None
    assert AGMEF(scheme="primal", epsilon=1e-3).target == AGMEF(epsilon=1e-3).target == 1e-3


# The cases where f is differentiable (μ > 0 or a smooth loss) and its point is an array.
SMOOTH = [i for i, c in enumerate(CASES) if c[5] is not S.GibbsSmoothing]


@pytest.mark.parametrize("i", SMOOTH, ids=[IDS[i] for i in SMOOTH])
def test_f_its_gradient_and_the_model_minimizer_keep_the_contract(i):
    solver, loss, reg, bias, _, _ = CASES[i]
    prob = problem(loss, reg, bias)
    scheme = solver.scheme_for(prob)
    eps = 1e-2 if solver.scheme == "dual" else solver.target
    scheme = type(scheme).of(prob, eps, solver.optimized)  # a smoothing that jax.grad sees
    mu, _, _ = scheme.smoothing_and_norm(prob, None, 20)
    coef, _ = prob.split_bias(prob.start())
    x0 = scheme.start(prob, coef, prob.scores(prob.start()))
    x = x0 + 0.1 * jnp.abs(jnp.sin(jnp.arange(x0.shape[0], dtype=x0.dtype)))
    if isinstance(scheme, S.EntropyScheme):
        x = x / jnp.sum(x)
    elif isinstance(scheme, S.DualScheme):
        x = scheme.prox_step(prob, x, 1.0, jnp.zeros_like(x), 0.0)  # into Q₂

    def f(x):
        return scheme.smooth_part(prob, x, scheme.image(prob, x), mu)

    value, grad, _ = scheme.gradient(prob, x, scheme.image(prob, x), mu)
    assert float(value) == pytest.approx(float(f(x)), rel=1e-12, abs=1e-14)
    # ⟨∇f, d⟩ against a central difference (the projection with a bias has no jax.grad).
    d = jnp.cos(jnp.arange(x.shape[0], dtype=x.dtype))
    h = 1e-6
    assert float(jnp.vdot(grad, d)) == pytest.approx(
        float((f(x + h * d) - f(x - h * d)) / (2 * h)), rel=1e-5, abs=1e-7)
    # The model minimizer: no other feasible point has a lower model value.
    weight, linear = 2.0, 0.3 * grad

    def model(z):
        return (weight * scheme.divergence(prob, z, x0) + jnp.vdot(linear, z)
                + scheme.regularizer(prob, z, mu))

    z = scheme.prox_step(prob, x0, weight, linear, mu)
    for t in (0.9, 0.99):
        other = scheme.prox_step(prob, t * x0 + (1 - t) * x, weight, linear * t, mu)
        assert float(model(z)) <= float(model(other)) + 1e-12


@pytest.mark.parametrize("solver, loss, reg, bias, kind, risk", CASES, ids=IDS)
def test_a_run_certifies_a_valid_gap(solver, loss, reg, bias, kind, risk):
    """Through the scheme objects, the recorded bound stays below every J seen."""
    prob = problem(loss, reg, bias)
    sol = nsjax.solve(prob, solver, max_steps=50, tol=1e-12)
    assert np.isfinite(float(sol.value))
    assert float(sol.value) - float(sol.gap) <= np.nanmin(sol.history.value) + 1e-10
