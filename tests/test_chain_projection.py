"""The projection onto a chain's local marginal polytope (`project_chain_marginals`,
Saha et al. 2009, App. E.3.1): against cvxpy (OSQP, polished, at tight tolerances), against
the optimality condition ⟨m − α, β − α⟩ ≤ 0 for feasible β (no solver), exact feasibility,
a single edge (the simplex projection), total ≠ 1, float32, vmap, degenerate input.

Float64 comes from the repository's conftest.py. Each configuration is one batch of N
instances of one shape, computed once per module (one compilation per shape).
"""

from __future__ import annotations

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax.projections import project_chain_marginals
from nsjax.testing import chain_marginals as chain_marginals_and_info

N = 6  # instances per batch: every batch of a shape is this size, so it compiles once
SHAPES = ((1, 2), (3, 3))  # (L − 1, K): each value of L − 1 and K in {1, 3} × {2, 3}


def chain_marginals(rng, E, K, total=1.0, concentration=1.0):
    """The pairwise marginals of a random Markov chain (feasible), scaled by total."""
    p = rng.dirichlet(np.full(K, concentration))
    out = []
    for _ in range(E):
        joint = p[:, None] * rng.dirichlet(np.full(K, concentration), size=K)
        out.append(joint)
        p = joint.sum(0)
    return total * np.array(out)


def instances(E, K, seed=0):
    """N instances: two Gaussian, a peaked one, one with ties (a few values), one sparse,
    and one already feasible (then it is its own projection)."""
    rng = np.random.default_rng(seed)
    return np.stack([
        rng.normal(size=(E, K, K)),
        0.3 * rng.normal(size=(E, K, K)),
        10 * rng.normal(size=(E, K, K)),
        rng.integers(0, 3, size=(E, K, K)) / 2.0,
        rng.normal(size=(E, K, K)) * (rng.random((E, K, K)) < 0.3),
        chain_marginals(rng, E, K),
    ])


def cvxpy_chain(m, total=1.0):
    """min ½‖α − m‖² over the local marginal polytope, every instance of the batch m
    (N, E, K, K) in one problem (separable), by OSQP with its active-set polishing: exact
    to ~1e-15 on single edges (against the sort-based simplex projection). Clarabel at
    tolerances of 1e-12 to 1e-14 was off by up to 1e-5 on these batches, or inaccurate."""
    n, E, K, _ = m.shape
    x = cp.Variable((n * E, K * K))
    rows = np.kron(np.eye(K), np.ones((1, K)))  # α ↦ Σ_b α(a, b), on α flattened
    cols = np.kron(np.ones((1, K)), np.eye(K))  # α ↦ Σ_a α(a, b)
    cons = [x >= 0, cp.sum(x, axis=1) == total]
    if E > 1:
        t = np.array([i * E + s for i in range(n) for s in range(E - 1)])
        cons.append(x[t] @ cols.T == x[t + 1] @ rows.T)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - m.reshape(n * E, K * K))), cons)
    prob.solve(solver=cp.OSQP, eps_abs=1e-12, eps_rel=1e-12, max_iter=100_000, polishing=True)
    assert prob.status == cp.OPTIMAL
    return x.value.reshape(n, E, K, K)


def infeasibility(alpha, total):
    """max of −min α, |edge sum − total| and |consistency gap|, relative to total."""
    sums = np.abs(alpha.sum((-1, -2)) - total).max()
    gap = np.abs(alpha.sum(-2)[..., :-1, :] - alpha.sum(-1)[..., 1:, :]).max(initial=0.0)
    return max(-alpha.min(), sums, gap) / total


def solve(m, total=1.0):
    """`project_chain_marginals` and how it went (`nsjax.testing.chain_marginals`): the
    same compiled program."""
    return chain_marginals_and_info(jnp.asarray(m), total, max_steps=50, tol=None)


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: f"L-1={s[0]},K={s[1]}")
def solved(request):
    E, K = request.param
    m = instances(E, K)
    alpha, info = solve(m)
    return m, np.asarray(alpha), info


@pytest.fixture(scope="module")
def float32_runs():
    """The (L − 1, K) = (3, 3) instances in float32, by vmap and one by one."""
    m = jnp.asarray(instances(3, 3), jnp.float32)
    return jax.vmap(project_chain_marginals)(m), [project_chain_marginals(mi) for mi in m]


def test_matches_cvxpy(solved):
    m, alpha, info = solved
    ref = cvxpy_chain(m)
    assert infeasibility(ref, 1.0) < 1e-9  # the reference is feasible, to its tolerance
    assert np.abs(alpha - ref).max() < 1e-8
    assert bool(np.all(info.converged))
    # The feasible instance is its own projection.
    np.testing.assert_allclose(alpha[-1], m[-1], rtol=0, atol=1e-14)


def test_exactly_feasible(solved):
    _, alpha, _ = solved
    assert alpha.min() >= 0  # exactly
    assert infeasibility(alpha, 1.0) < 1e-13


def test_optimality_condition(solved):
    """α is the projection iff ⟨m − α, β − α⟩ ≤ 0 for every feasible β: checked against the
    marginals of random Markov chains, some near vertices (no solver involved)."""
    m, alpha, _ = solved
    E, K = m.shape[1:3]
    rng = np.random.default_rng(1)
    for i in range(N):
        for concentration in (1.0, 0.05):
            for _ in range(10):
                beta = chain_marginals(rng, E, K, concentration=concentration)
                assert np.vdot(m[i] - alpha[i], beta - alpha[i]) <= 1e-9


@pytest.mark.parametrize("solved", [(1, 2)], indirect=True, ids=["L-1=1,K=2"])
def test_single_edge_is_the_simplex_projection(solved):
    m, alpha, _ = solved
    for mi, ai in zip(m, alpha, strict=True):
        v = np.sort(mi.ravel())[::-1]  # the sort-based simplex projection, in numpy
        css = np.cumsum(v) - 1
        rho = np.nonzero(v - css / np.arange(1, v.size + 1) > 0)[0][-1]
        np.testing.assert_allclose(ai.ravel(), np.maximum(mi.ravel() - css[rho] / (rho + 1), 0),
                                   rtol=0, atol=1e-12)


def test_total():
    """With total ≠ 1: against cvxpy, exactly feasible, and α(m, total) = total·α(m/total, 1)
    (the same compiled program: total is traced)."""
    m, total = instances(3, 3), 0.01
    alpha = np.asarray(solve(m, total)[0])
    assert infeasibility(alpha, total) < 1e-13 and alpha.min() >= 0
    assert np.abs(alpha - cvxpy_chain(m, total)).max() < 1e-8 * total
    scaled = np.asarray(solve(m / total)[0])
    np.testing.assert_allclose(alpha, total * scaled, rtol=0, atol=1e-12 * total)


def test_float32(float32_runs):
    batched, _ = float32_runs
    assert batched.dtype == jnp.float32
    alpha32 = np.asarray(batched, np.float64)
    alpha64 = np.asarray(solve(instances(3, 3))[0])
    assert alpha32.min() >= 0 and infeasibility(alpha32, 1.0) < 1e-6
    assert np.abs(alpha32 - alpha64).max() < 1e-5


def test_vmap_equals_loop(float32_runs):
    batched, loop = float32_runs
    assert all(a.dtype == jnp.float32 for a in loop)
    np.testing.assert_allclose(batched, jnp.stack(loop), rtol=0, atol=1e-6)


def test_degenerate_input():
    """All-equal, constant, huge and tiny m, a vertex already feasible (returned as it is):
    no NaN, exactly feasible; one label (K = 1): every α_t = total."""
    rng = np.random.default_rng(3)
    E, K = 3, 3
    vertex = np.zeros((E, K, K))
    vertex[:, 1, 1] = 1.0
    m = np.stack([np.zeros((E, K, K)), np.full((E, K, K), 5.0),
                  1e8 * rng.normal(size=(E, K, K)), 1e-12 * rng.normal(size=(E, K, K)),
                  vertex, chain_marginals(rng, E, K, concentration=0.1)])
    alpha = np.asarray(solve(m)[0])
    assert np.all(np.isfinite(alpha)) and alpha.min() >= 0
    assert infeasibility(alpha, 1.0) < 1e-13
    np.testing.assert_allclose(alpha[:2], 1 / K**2, rtol=0, atol=1e-15)  # uniform
    np.testing.assert_allclose(alpha[3], 1 / K**2, rtol=0, atol=1e-11)
    np.testing.assert_allclose(alpha[4:], m[4:], rtol=0, atol=1e-15)  # feasible: unchanged
    one_label = np.asarray(project_chain_marginals(jnp.asarray(rng.normal(size=(N, E, 1, 1))),
                                                   0.25))
    np.testing.assert_array_equal(one_label, 0.25)


def test_bad_input():
    with pytest.raises(ValueError, match="shape"):
        project_chain_marginals(jnp.zeros((3, 2, 3)))
    with pytest.raises(ValueError, match="positive"):
        project_chain_marginals(jnp.zeros((3, 2, 2)), total=0.0)
