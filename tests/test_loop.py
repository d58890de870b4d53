"""The driver: sweep == loop of solves, jit == no-jit, one compile per shape, float32."""

import jax
import jax.numpy as jnp
import numpy as np
from reference import random_binary

import nsjax
from nsjax import RESULTS
from nsjax.loop import _run_jit, _sweep_jit

SOLVER = nsjax.solvers.SubLBFGS(memory=10)


def _problem(seed=0, lam=1e-2, n=60, d=8, dtype=None):
    X, y, _ = random_binary(seed, n, d)
    return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y, dtype=dtype)


def test_sweep_equals_separate_solves():
    # Logistic: smooth, so the vmapped and the single runs follow the same trajectory and
    # must agree to rounding.
    X, y, _ = random_binary(0, 60, 8)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(1.0), X, y)
    lams = np.logspace(-3, 0, 8)
    sols = nsjax.sweep(prob, lams, SOLVER, max_steps=200, tol=1e-10)
    assert sols.w.shape == (8, 8)
    for i, lam in enumerate(lams):
        one = nsjax.solve(prob.with_lam(lam), SOLVER, max_steps=200, tol=1e-10)
        np.testing.assert_allclose(np.asarray(sols.w[i]), np.asarray(one.w), rtol=1e-8,
                                   atol=1e-10)
        assert int(sols.result[i]) == int(one.result) == RESULTS.successful


def test_hinge_sweep_values_within_certified_gaps():
    # On the hinge, rounding differences between batched and single products can send the
    # runs down different kinks; both must still land within their certified gaps.
    prob = _problem()
    lams = np.logspace(-2, 0, 4)
    solver = nsjax.solvers.SubBFGS()
    sols = nsjax.sweep(prob, lams, solver, max_steps=400, tol=1e-9)
    for i, lam in enumerate(lams):
        one = nsjax.solve(prob.with_lam(lam), solver, max_steps=400, tol=1e-9)
        slack = float(sols.gap[i]) + float(one.gap) + 1e-12
        assert abs(float(sols.value[i]) - float(one.value)) <= slack
        assert slack <= 1e-5


def test_jit_equals_no_jit():
    prob = _problem(seed=1, n=30, d=4)
    a = nsjax.solve(prob, SOLVER, max_steps=6, tol=1e-8)
    b = nsjax.solve(prob, SOLVER, max_steps=6, tol=1e-8, jit=False)
    np.testing.assert_allclose(np.asarray(a.w), np.asarray(b.w), rtol=1e-9, atol=1e-12)
    assert a.result == b.result and int(a.num_steps) == int(b.num_steps)


def test_one_compile_per_shape():
    before = _run_jit._cache_size()
    for seed, lam in [(0, 1e-2), (1, 1e-3), (2, 0.5)]:
        nsjax.solve(_problem(seed=seed, lam=lam, n=41, d=7), SOLVER, max_steps=30)
    assert _run_jit._cache_size() == before + 1
    before = _sweep_jit._cache_size()
    for lams in ([1e-2, 1e-1], [3e-3, 2e-1]):
        nsjax.sweep(_problem(n=41, d=7), lams, SOLVER, max_steps=30)
    assert _sweep_jit._cache_size() == before + 1


def test_float32_runs_and_keeps_dtypes():
    prob = _problem(dtype=np.float32)
    sol = nsjax.solve(prob, SOLVER, max_steps=100, tol=1e-4)
    assert sol.w.dtype == jnp.float32 and sol.value.dtype == jnp.float32
    assert sol.history.value.dtype == jnp.float32
    ref = nsjax.solve(_problem(), SOLVER, max_steps=300, tol=1e-9)
    assert abs(float(sol.value) - float(ref.value)) <= 1e-3 * float(ref.value)
    assert sol.result in (RESULTS.successful, RESULTS.stalled, RESULTS.max_steps_reached)


def test_state_dtypes_are_stable_across_steps():
    prob = _problem()
    state = jax.jit(SOLVER.init)(prob, jnp.zeros(8))
    new = jax.jit(SOLVER.step)(prob, state)
    same = jax.tree_util.tree_map(lambda a, b: (a.dtype == b.dtype) & (a.shape == b.shape),
                                  state, new)
    assert all(jax.tree_util.tree_leaves(same))
