"""Exact projections (`nsjax.projections`): the box section of Zhang et al. (2010), §5.5.1 /
Saha et al. (2009), App. B, and the capped simplex, against cvxpy (Clarabel at tight
tolerances) and against the KKT conditions checked in numpy; every way to the root (Newton
passes and a check of the kinks around the pivot, or sorting); infeasible input; jit, vmap
and float32.

Float64 comes from the repository's conftest.py. Every instance has one shape (N) so that
each configuration compiles once.
"""

from __future__ import annotations

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax import testing
from nsjax.projections import (
    elastic_net_ball_support,
    project_box_section,
    project_capped_simplex,
    project_elastic_net_ball,
    project_simplex,
)

N = 12
# newton_steps: the default (Newton passes, then the check of the kinks around the pivot),
# 1 (one Newton pass and its check, then sorting if it is not the root), 0 (the papers'
# sort at once).
PATHS = (32, 1, 0)


# newton_steps is traced: one compilation serves every path. (`nsjax.testing.box_section`
# is project_box_section that also tells which passes it made.)
box_section = jax.jit(testing.box_section)
capped = jax.jit(project_capped_simplex)


def as_f64(*arrays):
    return [jnp.asarray(v, jnp.float64) for v in arrays]


def solve(m, a, b, lower, upper, w, newton_steps=32):
    sol, _ = box_section(*as_f64(m, a, b, lower, upper, w), newton_steps=newton_steps)
    return np.asarray(sol.x), float(sol.multiplier), bool(sol.feasible)


# ---------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------


def cvxpy_box_section(m, a, b, lower, upper, w):
    """min Σ wᵢ/2 (xᵢ − mᵢ)² s.t. l ≤ x ≤ u, aᵀx = b, by Clarabel (infinite bounds left out)."""
    x = cp.Variable(len(m))
    cons = [a @ x == b]
    lo, hi = np.isfinite(lower), np.isfinite(upper)
    if lo.any():
        cons.append(x[lo] >= lower[lo])
    if hi.any():
        cons.append(x[hi] <= upper[hi])
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum(cp.multiply(w, cp.square(x - m)))), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13,
               tol_ktratio=1e-10, max_iter=500)
    assert prob.status == "optimal", prob.status
    return x.value


def assert_kkt(m, a, b, lower, upper, w, x, nu):
    """x is optimal iff it is feasible and x = clip(m + ν a / w, l, u) for one ν (the QP is
    strictly convex; the KKT conditions are sufficient). Checked to rounding."""
    scale = 1 + np.abs(x)
    assert np.all(x >= lower) and np.all(x <= upper)
    assert abs(a @ x - b) <= 1e-12 * (np.abs(a) @ np.abs(x) + abs(b) + 1)
    np.testing.assert_array_less(np.abs(x - np.clip(m + nu * a / w, lower, upper)), 1e-12 * scale)


def assert_optimal(m, a, b, lower, upper, w, x, nu, cvxpy_atol=1e-10):
    assert_kkt(m, a, b, lower, upper, w, x, nu)
    ref = cvxpy_box_section(m, a, b, lower, upper, w)
    np.testing.assert_allclose(x, ref, rtol=0, atol=cvxpy_atol)


# ---------------------------------------------------------------------------------------
# Instances
# ---------------------------------------------------------------------------------------


def _range(a, lower, upper):
    at_low = np.where(a > 0, lower, upper) * a
    at_high = np.where(a > 0, upper, lower) * a
    return np.sum(np.where(a != 0, at_low, 0)), np.sum(np.where(a != 0, at_high, 0))


def instance(kind, seed):
    """(m, a, b, lower, upper, w), float64, n = N, seeded; b inside the range of aᵀx."""
    rng = np.random.default_rng(seed)
    m = rng.normal(size=N) * 2
    a = rng.normal(size=N)
    lower, upper = -rng.uniform(0.1, 2, N), rng.uniform(0.1, 2, N)
    w = rng.uniform(0.5, 3, N)
    if kind == "ties":  # repeated entries of m, a, w and bounds: repeated kinks
        m = rng.choice([-1.0, 0.0, 0.5, 1.0], N)
        a = rng.choice([-1.0, 1.0, 2.0], N)
        lower, upper, w = np.full(N, -1.0), np.full(N, 1.0), np.ones(N)
    elif kind == "zeros in a":
        a[rng.choice(N, 4, replace=False)] = 0.0
    elif kind == "infinite bounds":
        lower[rng.choice(N, 4, replace=False)] = -np.inf
        upper[rng.choice(N, 4, replace=False)] = np.inf
    elif kind == "fixed coordinates":  # lᵢ = uᵢ
        i = rng.choice(N, 4, replace=False)
        upper[i] = lower[i]
    elif kind == "unit weights, a > 0":
        a, w = np.abs(a) + 0.1, np.ones(N)
    least, largest = _range(a, lower, upper)
    if np.isfinite(least) and np.isfinite(largest):
        b = least + rng.uniform(0.1, 0.9) * (largest - least)
    else:  # aᵀx(ν) at a random ν, always inside the range
        b = a @ np.clip(m + rng.normal() * a / w, lower, upper)
    return m, a, b, lower, upper, w


KINDS = ("generic", "ties", "zeros in a", "infinite bounds", "fixed coordinates",
         "unit weights, a > 0")


# ---------------------------------------------------------------------------------------
# project_box_section
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(3))
def test_box_section_matches_cvxpy(kind, seed):
    """Every way to the root (`PATHS`) against one cvxpy solve."""
    m, a, b, lower, upper, w = instance(kind, seed)
    ref = cvxpy_box_section(m, a, b, lower, upper, w)
    for newton_steps in PATHS:
        x, nu, feasible = solve(m, a, b, lower, upper, w, newton_steps)
        assert feasible
        assert_kkt(m, a, b, lower, upper, w, x, nu)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10, err_msg=f"{newton_steps=}")


def _kinks(m, a, lower, upper, w):
    moves = a != 0
    ks = np.concatenate([(lower - m)[moves] * w[moves] / a[moves],
                         (upper - m)[moves] * w[moves] / a[moves]])
    return ks[np.isfinite(ks)]


@pytest.mark.parametrize("seed", range(4))
def test_root_at_a_kink(seed):
    """b = aᵀx(ν₀) with ν₀ a kink (several tied kinks for the "ties" instance): the root
    sits where the slope of g jumps.

    The QP is degenerate there (a bound active with a zero multiplier), and Clarabel stops
    ~1e-7 away from the optimum whatever its tolerances; the KKT check is the exact one.
    """
    m, a, _, lower, upper, w = instance("ties" if seed % 2 else "generic", seed)
    nu0 = np.random.default_rng(seed).choice(_kinks(m, a, lower, upper, w))
    b = a @ np.clip(m + nu0 * a / w, lower, upper)
    ref = cvxpy_box_section(m, a, b, lower, upper, w)
    for newton_steps in PATHS:
        x, nu, feasible = solve(m, a, b, lower, upper, w, newton_steps)
        assert feasible
        assert_kkt(m, a, b, lower, upper, w, x, nu)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-6, err_msg=f"{newton_steps=}")


@pytest.mark.parametrize("newton_steps", PATHS)
def test_flat_g_at_the_root(newton_steps):
    """g is zero on a whole interval of ν (no coordinate moves there): any ν of it."""
    m = np.array([0.5, 2.0, -1.0] * 4)
    a, lower, upper, w = np.ones(N), np.zeros(N), np.ones(N), np.ones(N)
    b = 4.0  # x = (0, 1, 0) four times, for every ν in [−1, −0.5]
    x, nu, feasible = solve(m, a, b, lower, upper, w, newton_steps)
    assert feasible and -1 <= nu <= -0.5
    np.testing.assert_array_equal(x, np.tile([0.0, 1.0, 0.0], 4))
    assert_kkt(m, a, b, lower, upper, w, x, nu)


@pytest.mark.parametrize("end", ["least", "largest"])
@pytest.mark.parametrize("kind", ["generic", "ties", "zeros in a", "fixed coordinates"])
def test_b_at_the_ends_of_its_range(kind, end):
    """b = min (max) of aᵀx over the box: the corner, every moving coordinate at a bound."""
    m, a, _, lower, upper, w = instance(kind, 7)
    b = dict(zip(["least", "largest"], _range(a, lower, upper), strict=True))[end]
    x, nu, feasible = solve(m, a, b, lower, upper, w)
    assert feasible
    assert_optimal(m, a, b, lower, upper, w, x, nu)
    corner = np.where((a > 0) == (end == "least"), lower, upper)
    np.testing.assert_allclose(x[a != 0], corner[a != 0], rtol=0, atol=1e-12)


def test_every_search_path_is_taken():
    """The parametrizations above reach each way to the root: Newton passes and a check of
    the kinks around the pivot; one Newton pass, a failed check, then sorting; sorting at
    once."""
    args = as_f64(*instance("generic", 0))
    default = box_section(*args, newton_steps=32)[1]
    assert int(default.cheap) >= 2 and int(default.checks) >= 1 and not bool(default.sorted)
    one = box_section(*args, newton_steps=1)[1]
    assert int(one.cheap) == int(one.checks) == 1 and bool(one.sorted)
    assert bool(box_section(*args, newton_steps=0)[1].sorted)


# ---------------------------------------------------------------------------------------
# Infeasible input: a documented status, finite x
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", [-1, 1])
def test_b_outside_the_range_gives_the_nearest_corner(side):
    m, a, _, lower, upper, w = instance("zeros in a", 4)
    least, largest = _range(a, lower, upper)
    b = largest + 1.0 if side > 0 else least - 1.0
    x, _, feasible = solve(m, a, b, lower, upper, w)
    assert not feasible and np.all(np.isfinite(x))
    corner = np.where((a > 0) == (side > 0), upper, lower)
    expected = np.where(a != 0, corner, np.clip(m, lower, upper))
    np.testing.assert_array_equal(x, expected)


def test_empty_box_gives_the_clip_into_the_swapped_bounds():
    m, a, b, lower, upper, w = instance("generic", 5)
    lower[3], upper[3] = upper[3] + 1.0, lower[3]  # l > u
    x, nu, feasible = solve(m, a, b, lower, upper, w)
    assert not feasible and np.all(np.isfinite(x)) and nu == 0.0
    np.testing.assert_array_equal(x, np.clip(m, np.minimum(lower, upper),
                                             np.maximum(lower, upper)))


def test_interval_with_no_real_point_is_infeasible_without_nan():
    m, a, b, lower, upper, w = instance("generic", 6)
    lower[2] = upper[2] = np.inf
    x, nu, feasible = solve(m, a, b, lower, upper, w)
    assert not feasible and not np.any(np.isnan(x)) and np.isfinite(nu)
    assert np.all(np.isfinite(np.delete(x, 2)))


def test_infinite_range_is_feasible_for_any_b():
    m, a, _, lower, upper, w = instance("generic", 8)
    lower[a > 0] = -np.inf  # aᵀx unbounded below
    for b in (-1e3, 1e3):
        b = min(b, _range(a, lower, upper)[1] - 1.0)
        x, nu, feasible = solve(m, a, b, lower, upper, w)
        assert feasible
        assert_kkt(m, a, b, lower, upper, w, x, nu)


# ---------------------------------------------------------------------------------------
# jit, vmap, float32
# ---------------------------------------------------------------------------------------


def test_jit_equals_no_jit():
    args = as_f64(*instance("infinite bounds", 9))
    eager = project_box_section(*args)
    jitted = box_section(*args)[0]
    np.testing.assert_allclose(jitted.x, eager.x, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jitted.multiplier, eager.multiplier, rtol=1e-12)
    assert bool(jitted.feasible) == bool(eager.feasible)


@jax.jit
def _batched(m, a, b, lower, upper, w, v, caps):
    """Both projections vmapped over rows, in one compilation."""
    return (jax.vmap(project_box_section)(m, a, b, lower, upper, w),
            jax.vmap(project_capped_simplex)(v, caps))


def test_vmap_over_rows_equals_a_loop():
    """Batches of rows in one call each (different data, b and caps, infeasible rows among
    them) equal the single calls."""
    rows = [instance(kind, 10 + i) for i, kind in enumerate(KINDS)]
    m, a, b, lower, upper, w = (np.stack(col) for col in zip(*rows, strict=True))
    b[2] = _range(a[2], lower[2], upper[2])[1] + 1.0  # infeasible: past max aᵀx
    v = np.random.default_rng(15).normal(size=(3, N))
    caps = np.array([0.1, 1.0, 0.5 / N])  # the last one infeasible
    boxes, capped_rows = _batched(m, a, b, lower, upper, w, v, caps)
    for i in range(len(rows)):
        x, _, feasible = solve(m[i], a[i], b[i], lower[i], upper[i], w[i])
        np.testing.assert_allclose(boxes.x[i], x, rtol=1e-12, atol=1e-14)
        assert bool(boxes.feasible[i]) == feasible == (i != 2)
    for i in range(3):
        single = capped(jnp.asarray(v[i]), caps[i])
        np.testing.assert_allclose(capped_rows.x[i], single.x, rtol=1e-12, atol=1e-15)
        assert bool(capped_rows.feasible[i]) == bool(single.feasible) == (i != 2)


def test_float32_runs_and_keeps_its_dtype():
    m, a, b, lower, upper, w = instance("generic", 11)
    args32 = [jnp.asarray(v, jnp.float32) for v in (m, a, b, lower, upper, w)]
    sol = jax.jit(project_box_section)(*args32)
    assert sol.x.dtype == jnp.float32 and sol.multiplier.dtype == jnp.float32
    x = np.asarray(sol.x, np.float64)
    assert bool(sol.feasible)
    assert abs(a @ x - b) <= 1e-5 * (np.abs(a) @ np.abs(x) + abs(b))
    np.testing.assert_allclose(x, solve(m, a, b, lower, upper, w)[0], atol=1e-5)


# ---------------------------------------------------------------------------------------
# project_capped_simplex
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [0.1, 0.25, 0.6])
@pytest.mark.parametrize("seed", range(3))
def test_capped_simplex_matches_cvxpy(seed, cap):
    v = np.random.default_rng(seed).normal(size=N)
    v[:3] = v[3]  # ties
    sol = capped(jnp.asarray(v), cap)
    x, nu = np.asarray(sol.x), float(sol.multiplier)
    assert bool(sol.feasible)
    ones = np.ones(N)
    assert_optimal(v, ones, 1.0, np.zeros(N), np.full(N, cap), ones, x, nu)


def test_capped_simplex_with_cap_one_over_n_is_its_one_point():
    v = np.random.default_rng(12).normal(size=N)
    sol = capped(jnp.asarray(v), 1 / N)
    assert bool(sol.feasible)
    np.testing.assert_allclose(sol.x, np.full(N, 1 / N), rtol=1e-15)


@pytest.mark.parametrize("cap", [1.0, 3.0])
def test_capped_simplex_with_cap_at_least_one_is_the_simplex(cap):
    v = jnp.asarray(np.random.default_rng(13).normal(size=N) * 3)
    sol = capped(v, cap)
    assert bool(sol.feasible)
    np.testing.assert_allclose(sol.x, project_simplex(v), rtol=0, atol=1e-14)


def test_capped_simplex_infeasible_cap():
    v = jnp.asarray(np.random.default_rng(14).normal(size=N))
    sol = capped(v, 0.5 / N)  # N·cap = 1/2 < 1
    assert not bool(sol.feasible)
    np.testing.assert_array_equal(sol.x, np.full(N, 0.5 / N))


# -- the elastic-net ball (Zhang et al. 2010, §5.5.2) -------------------------------------


def _bisection_elastic_net_ball(g, r, gamma):
    """Brute force: the multiplier λ by 200 bisections on the decreasing
    φ(λ) = γ‖w(λ)‖₁ + ½‖w(λ)‖², wᵢ(λ) = sign(gᵢ)(|gᵢ| − λγ)₊/(1 + λ) (eq. 69)."""
    def w(lam):
        return np.sign(g) * np.maximum(np.abs(g) - lam * gamma, 0) / (1 + lam)

    def phi(lam):
        x = w(lam)
        return gamma * np.abs(x).sum() + 0.5 * x @ x

    if phi(0.0) <= r:
        return g
    lo, hi = 0.0, 1.0
    while phi(hi) > r:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if phi(mid) > r else (lo, mid)
    return w(hi)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 2.0])
@pytest.mark.parametrize("r", [0.05, 1.0, 50.0])
@pytest.mark.parametrize("seed", range(2))
def test_elastic_net_ball_matches_bisection(seed, r, gamma):
    rng = np.random.default_rng(seed)
    g = 2 * rng.normal(size=12)
    g[:3] = g[0]  # ties
    g[5] = 0.0
    g[6] = -g[7]
    x = np.asarray(project_elastic_net_ball(jnp.asarray(g), r, gamma))
    np.testing.assert_allclose(x, _bisection_elastic_net_ball(g, r, gamma), rtol=1e-12,
                               atol=1e-13)
    value = gamma * np.abs(x).sum() + 0.5 * x @ x
    assert value <= r * (1 + 1e-12)
    if gamma * np.abs(g).sum() + 0.5 * g @ g > r:  # outside: on the boundary
        assert value == pytest.approx(r, rel=1e-12)
    else:
        np.testing.assert_array_equal(x, g)


def test_elastic_net_ball_is_optimal_by_its_kkt_conditions():
    """Independent of cvxpy: x = prox at the multiplier λ of the ball's function, and no
    feasible point is closer to g (checked against many random feasible points)."""
    rng = np.random.default_rng(7)
    g, r, gamma = rng.normal(size=9) * 3, 0.7, 0.5
    x = np.asarray(project_elastic_net_ball(jnp.asarray(g), r, gamma))
    Z = rng.normal(size=(2000, 9)) * rng.uniform(0, 1, size=(2000, 1))
    Z = np.asarray(_batched_ball(jnp.asarray(Z), r, gamma))  # into the ball (or kept)
    assert np.all(gamma * np.abs(Z).sum(1) + 0.5 * np.sum(Z * Z, 1) <= r * (1 + 1e-12))
    assert np.all(np.sum((Z - g) ** 2, 1) >= np.sum((x - g) ** 2) - 1e-12)


_batched_ball = jax.jit(jax.vmap(project_elastic_net_ball, in_axes=(0, None, None)))


@pytest.mark.parametrize("gamma", [0.0, 0.4])
def test_elastic_net_ball_support_matches_a_one_dimensional_minimization(gamma):
    """sup over the ball of ⟨v, w⟩ = min_{t > 0} t r + Σ(|vᵢ| − tγ)₊²/(2t) (Lagrange
    duality), here by 300 golden-section steps; and it is attained by a feasible point."""
    rng = np.random.default_rng(3)
    v, r = rng.normal(size=10), 0.8
    v[:2] = v[0]

    def dual(t):
        return t * r + np.sum(np.maximum(np.abs(v) - t * gamma, 0) ** 2) / (2 * t)

    lo, hi, ratio = 1e-9, 100.0, (np.sqrt(5) - 1) / 2
    for _ in range(300):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, b) if dual(a) < dual(b) else (a, hi)
    assert float(elastic_net_ball_support(jnp.asarray(v), r, gamma)) == pytest.approx(
        dual(0.5 * (lo + hi)), rel=1e-12)
    # Weak duality from the other side: no point of the ball does better.
    Z = np.asarray(_batched_ball(jnp.asarray(rng.normal(size=(200, 10)) * 5), r, gamma))
    assert np.all(Z @ v <= float(elastic_net_ball_support(jnp.asarray(v), r, gamma)) + 1e-12)
    assert float(elastic_net_ball_support(jnp.zeros(10), r, gamma)) == 0.0


def test_elastic_net_ball_batched_and_float32():
    rng = np.random.default_rng(4)
    G = jnp.asarray(rng.normal(size=(4, 6)) * 3)
    rs = jnp.array([0.1, 1.0, 5.0, 100.0])
    batched = jax.jit(jax.vmap(project_elastic_net_ball, in_axes=(0, 0, None)))(G, rs, 0.5)
    for i in range(4):
        np.testing.assert_allclose(batched[i], project_elastic_net_ball(G[i], rs[i], 0.5),
                                   rtol=1e-13, atol=1e-15)
    x32 = project_elastic_net_ball(G[0].astype(jnp.float32), 0.1, 0.5)
    assert x32.dtype == jnp.float32
    np.testing.assert_allclose(x32, batched[0], atol=1e-5)
