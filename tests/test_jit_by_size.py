"""nsjax.jit_by_size: small problems compiled with XLA's older CPU emitters, larger ones with
its defaults; the same solution either way, and without the option where XLA lacks it."""

import jax
import numpy as np
import pytest
from reference import cvxpy_optimum, random_binary

import nsjax
import nsjax.jit_by_size as jit_by_size
from nsjax.loop import _run_jit, _sweep_jit


def _hinge(seed=0):
    X, y, lam = random_binary(seed, 40, 5)
    return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y), X, y, lam


def _count_calls(monkeypatch, jitted):
    """Count the calls of ``jitted``'s two programs (whichever test compiled them first)."""
    calls = {"small": 0, "default": 0}

    def counting(way, program):
        def counted(*args, **kwargs):
            calls[way] += 1
            return program(*args, **kwargs)
        return counted

    for way in calls:
        monkeypatch.setattr(jitted, way, counting(way, getattr(jitted, way)))
    return calls


def test_small_and_large_problems_compile_their_own_way_to_the_same_solution(monkeypatch):
    prob, X, y, lam = _hinge()
    assert jit_by_size.is_small(prob)  # 40 x 5 on this CPU
    calls = _count_calls(monkeypatch, _run_jit)
    fast = nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-10)
    assert calls == {"small": 1, "default": 0}
    monkeypatch.setattr(jit_by_size, "SMALL_PROBLEM", prob.X.dense.size - 1)
    assert not jit_by_size.is_small(prob)
    plain = nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-10)
    assert calls == {"small": 1, "default": 1}
    J_star = cvxpy_optimum(X, y, lam, loss="hinge")[0]
    for sol in (fast, plain):
        assert sol.result == nsjax.RESULTS.successful
        assert float(sol.value) == pytest.approx(J_star, rel=1e-9)
    # The two programs differ only in the order of their additions.
    np.testing.assert_allclose(fast.w, plain.w, rtol=1e-7, atol=1e-9)


def test_the_size_counts_every_array_of_the_problem(monkeypatch):
    prob, *_ = _hinge()
    size = sum(np.size(x) for x in jax.tree_util.tree_leaves(prob))
    assert size > prob.X.dense.size  # y, λ, the norms...
    monkeypatch.setattr(jit_by_size, "SMALL_PROBLEM", size)
    assert jit_by_size.is_small(prob)
    monkeypatch.setattr(jit_by_size, "SMALL_PROBLEM", size - 1)
    assert not jit_by_size.is_small(prob)


def test_a_sweep_follows_the_same_choice(monkeypatch):
    prob, *_ = _hinge(1)
    calls = _count_calls(monkeypatch, _sweep_jit)
    nsjax.sweep(prob, [0.1, 0.01], nsjax.solvers.LineSearchBMRM(), tol=1e-8)
    assert calls == {"small": 1, "default": 0}


def test_a_solve_under_jit_or_vmap_is_compiled_by_the_outer_program(monkeypatch):
    prob, *_ = _hinge()
    calls = _count_calls(monkeypatch, _run_jit)
    solver = nsjax.solvers.LineSearchBMRM()
    value = jax.jit(lambda p: nsjax.solve(p, solver, tol=1e-10).value)(prob)
    values = jax.vmap(lambda lam: nsjax.solve(prob.with_lam(lam), solver, tol=1e-10).value)(
        jax.numpy.asarray([prob.lam, 2 * prob.lam]))
    closed = jax.jit(lambda: nsjax.solve(prob, solver, tol=1e-10).value)()  # no tracer
    assert calls == {"small": 0, "default": 3}
    top = nsjax.solve(prob, solver, tol=1e-10).value
    assert calls == {"small": 1, "default": 3}
    assert float(value) == pytest.approx(float(top), rel=1e-9)
    assert float(values[0]) == pytest.approx(float(top), rel=1e-9)
    assert float(closed) == pytest.approx(float(top), rel=1e-9)


def test_an_option_xla_does_not_know_leaves_every_program_on_the_defaults(monkeypatch):
    monkeypatch.setattr(jit_by_size, "FAST_COMPILE", {"xla_no_such_option_in_any_xla": 1})
    jit_by_size._fast_compile_works.cache_clear()
    try:
        prob, *_ = _hinge()
        assert not jit_by_size.is_small(prob)
    finally:
        monkeypatch.undo()
        jit_by_size._fast_compile_works.cache_clear()
    assert jit_by_size.is_small(prob)
