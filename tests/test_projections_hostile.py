"""Hostile input to `nsjax.projections` (issue 52): the edges of the floating-point range,
NaN and inf, empty and mismatched arguments, infeasible constraints, and the derivatives.

Every expected value comes from an independent reference: the exact projection in Python
fractions (the simplex's sorting formula; the box section's root found by evaluating g at
every kink in rational arithmetic), Python decimals at 60 digits where a square root is
involved (the elastic-net ball), or central finite differences in float64 (derivatives).

Float64 comes from the repository's conftest.py. The instances have few shapes (N = 4
coordinates, mostly) so that each function compiles once per dtype; most error cases never
compile.
"""

from __future__ import annotations

import decimal
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax.projections import (
    elastic_net_ball_support,
    entropic_capped_simplex,
    project_box_section,
    project_capped_simplex,
    project_chain_marginals,
    project_elastic_net_ball,
    project_simplex,
)

N = 4
F32, F64 = np.float32, np.float64
EPS32, EPS64 = float(np.finfo(F32).eps), float(np.finfo(F64).eps)

# ---------------------------------------------------------------------------------------
# Exact references
# ---------------------------------------------------------------------------------------


def _fractions(v):
    return [Fraction(float(t)) for t in np.asarray(v, F64).ravel()]


def exact_simplex(v):
    """The simplex projection of v (exact rationals) by the sorting formula: the largest k
    with u_k > (Σ_{j≤k} u_j − 1)/k, u sorted decreasing; x = max(v − θ, 0)."""
    u = sorted(_fractions(v), reverse=True)
    total, theta = Fraction(0), None
    for k, uk in enumerate(u, 1):
        total += uk
        if uk > (total - 1) / k:
            theta = (total - 1) / k
    return np.array([float(max(t - theta, 0)) for t in _fractions(v)])


def _bound(t):
    t = float(t)
    return Fraction(t) if np.isfinite(t) else t  # ±inf compares with fractions


def exact_box(m, a, b, lower, upper, w):
    """argmin Σ wᵢ/2 (xᵢ − mᵢ)² over l ≤ x ≤ u, aᵀx = b, in exact rationals: x(ν) =
    clip(m + ν a/w, l, u), g(ν) = aᵀx(ν) − b evaluated at every kink, and the root of the
    linear piece of g that holds it. Returns (x as floats, ν as a Fraction)."""
    n = len(m)
    m, a, w = (_fractions(np.broadcast_to(v, (n,))) for v in (m, a, w))
    lo = [_bound(t) for t in np.broadcast_to(lower, (n,))]
    up = [_bound(t) for t in np.broadcast_to(upper, (n,))]
    b = Fraction(float(b))

    def x_of(nu):
        return [min(max(m[i] + nu * a[i] / w[i], lo[i]), up[i]) for i in range(n)]

    def g(nu):
        return sum(a[i] * x_of(nu)[i] for i in range(n)) - b

    kinks = sorted({(bd - m[i]) * w[i] / a[i] for i in range(n) if a[i] != 0
                    for bd in (lo[i], up[i]) if bd not in (np.inf, -np.inf)})
    if not kinks:
        kinks = [Fraction(0)]
    gs = [g(k) for k in kinks]
    if gs[0] >= 0:  # the root is on the first piece (left of every kink)
        k1, k0 = kinks[0], kinks[0] - 1
    elif gs[-1] < 0:
        k0, k1 = kinks[-1], kinks[-1] + 1
    else:
        j = next(i for i, v in enumerate(gs) if v >= 0)
        k0, k1 = kinks[j - 1], kinks[j]
    g0, g1 = g(k0), g(k1)
    assert g1 != g0, "flat g: b is outside the range of aᵀx"
    nu = k0 - g0 * (k1 - k0) / (g1 - g0)
    assert g(nu) == 0
    return np.array([float(t) for t in x_of(nu)]), nu


D = decimal.Context(prec=60, Emax=10**6, Emin=-10**6)


def decimal_ball(g, r, gamma):
    """The elastic-net ball's projection in 60-digit decimals: for each k (the k largest
    |gᵢ| active), 1 + λ = sqrt(Σ_k (aᵢ + γ)² / (2r + kγ²)), kept where it falls between the
    k-th and (k+1)-th kinks aᵢ/γ; wᵢ = sign(gᵢ)(aᵢ − λγ)₊/(1 + λ)."""
    gd = [D.create_decimal(float(t)) for t in np.asarray(g, F64)]
    r, gamma = D.create_decimal(float(r)), D.create_decimal(float(gamma))
    a = [abs(t) for t in gd]
    if gamma * sum(a) + sum(t * t for t in a) / 2 <= r:
        return np.asarray(g, F64)
    s = sorted(a, reverse=True) + [D.create_decimal(0)]
    for k in range(1, len(a) + 1):
        one_plus = D.sqrt(sum((t + gamma) ** 2 for t in s[:k]) / (2 * r + k * gamma * gamma))
        lam = one_plus - 1
        if lam * gamma <= s[k - 1] and lam * gamma >= s[k]:
            break
    return np.array([float(D.copy_sign(max(t - lam * gamma, 0) / one_plus, x)) if t > 0 else 0.0
                     for t, x in zip(a, gd, strict=True)])


def central_differences(f, x, h=1e-6):
    """The Jacobian of f at x (float64) by central differences, one column per entry."""
    x = np.asarray(x, F64)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        cols.append((np.asarray(f(x + e), F64) - np.asarray(f(x - e), F64)) / (2 * h))
    return np.stack(cols, -1)


# ---------------------------------------------------------------------------------------
# project_simplex: the 1 is kept and nothing overflows
# ---------------------------------------------------------------------------------------

SIMPLEX_CASES = {
    # float32 |v| ≥ 3e7 (a spacing of 2): a sum of v − θ from unshifted entries loses the
    # 1 (issue 52).
    "f32 3e7": (F32, [3e7, 3e7 + 2, 3e7 - 2, 3e7 + 2]),
    "f32 -3e7": (F32, [-3e7, -3e7 + 2, -3e7 - 4, -3e7 + 4]),
    "f32 1e20": (F32, [1e20, 1e20, -1e20, 0.0]),
    # near the largest float32: v − max overflows to −inf for the smallest entry.
    "f32 3e38": (F32, [3e38, -3e38, 3e38, 1.0]),
    "f32 tiny": (F32, [1e-38, 2e-38, 0.0, -1e-37]),
    "f64 1e308": (F64, [1.7e308, -1.7e308, 1.7e308 * 0.5, 1e308]),
    "f64 1e16": (F64, [1e16, 1e16 + 2, 1e16 - 2, 1e16 + 4]),
    "f64 tiny": (F64, [1e-300, -1e-300, 3e-300, 0.0]),
}


@pytest.mark.parametrize("case", SIMPLEX_CASES)
def test_simplex_is_exact_across_the_range(case):
    dtype, v = SIMPLEX_CASES[case]
    v = np.asarray(v, dtype)
    x = np.asarray(project_simplex(jnp.asarray(v)))
    assert x.dtype == dtype
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(x, exact_simplex(v), rtol=0, atol=4 * eps)
    assert np.all(x >= 0) and abs(float(np.sum(x, dtype=F64)) - 1) <= 4 * N * eps


def test_simplex_derivatives_at_huge_float32_entries():
    """The Jacobian is I − 11ᵀ/|S| on the exact support S (fractions), whatever the size."""
    v = np.asarray([3e7, 3e7 + 2, 3e7 - 4, 3e7 + 2], F32)  # support {1, 3}
    support = exact_simplex(v) > 0
    expected = np.where(support[:, None] & support[None, :],
                        np.eye(N) - 1 / support.sum(), 0) * support[:, None]
    for jac in (jax.jacrev, jax.jacfwd):
        np.testing.assert_allclose(jac(project_simplex)(jnp.asarray(v)), expected, atol=1e-6)


# ---------------------------------------------------------------------------------------
# project_box_section across the range, against the exact rational projection
# ---------------------------------------------------------------------------------------

BIG32 = 3.4e38
BOX_CASES = {
    # Σm overflows float32; the unscaled search returned −inf with feasible=True.
    "f32 near max": (F32, [3e38, 1e38, 0.0, -2e38], 1.0, 3e38, -BIG32, BIG32, 1.0),
    "f32 near max, a spans": (F32, [3e38, -1e38, 2e37, 5e37], [1.0, -2.0, 0.5, 4.0], 1e38,
                              -BIG32, BIG32, [1.0, 3.0, 0.5, 2.0]),
    "f32 tiny": (F32, [3e-37, 1e-37, -2e-37, 0.0], 1.0, 1e-37, -1e-36, 2e-37, 1.0),
    "f64 near max": (F64, [1.5e308, 1e308, -1e308, 1.7e308], [1.0, 2.0, 1.0, -1.0], -1e308,
                     -1.7e308, 1.7e308, 1.0),
    # Weights 1e-300 … 1e300 (issue 52: aᵀx = 4 for b = 0.7, with feasible=True).
    "f64 weights span": (F64, [0.3, -0.2, 0.5, 1.0], 1.0, 0.7, -1.0, 1.0,
                         [1e-300, 1e300, 1.0, 1e-100]),
    "f64 a spans": (F64, [0.3, -0.2, 0.5, 1.0], [1e-150, 1e150, 1.0, -1e-100], 1e149, -1e10,
                    [1e10, 1.0, 1e10, 1e10], 1.0),
    "f64 tiny": (F64, [3e-300, 1e-300, -2e-300, 0.0], [1.0, 2.0, 3.0, 4.0], 1e-300, -np.inf,
                 np.inf, [1.0, 2.0, 0.5, 1.0]),
}


def _box_args(dtype, m, a, b, lower, upper, w):
    """Full-length arrays (one compilation per dtype) in ``dtype``."""
    arrays = [np.broadcast_to(np.asarray(v, dtype), (N,)) for v in (m, a, lower, upper, w)]
    m, a, lower, upper, w = arrays
    return m, a, np.asarray(b, dtype), lower, upper, w


@pytest.mark.parametrize("case", BOX_CASES)
def test_box_section_is_exact_across_the_range(case):
    dtype, *data = BOX_CASES[case]
    m, a, b, lower, upper, w = _box_args(dtype, *data)
    sol = project_box_section(*(jnp.asarray(v) for v in (m, a, b, lower, upper, w)))
    x = np.asarray(sol.x, F64)
    ref, nu = exact_box(m, a, b, lower, upper, w)
    eps = float(np.finfo(dtype).eps)
    scale = max(np.max(np.abs(ref)), np.max(np.abs(m.astype(F64))))
    assert sol.x.dtype == dtype and bool(sol.feasible)
    np.testing.assert_allclose(x, ref, rtol=8 * eps, atol=16 * N * eps * scale)
    assert float(sol.multiplier) == pytest.approx(float(nu), rel=64 * eps)


LIARS = {
    # Kinks 600 orders of magnitude apart: x₂ = 5e299 needs ν = 5e599, beyond float64.
    "f64 multiplier out of range": (F64, [1.0, 1e-300, 1.0, 1.0], 3.5),
    # x₄ = (b − 3)/1e-10 = 1e39 is beyond float32: no finite point is the answer.
    "f32 answer out of range": (F32, [1.0, 1.0, 1.0, 1e-10], 1e29),
}


@pytest.mark.parametrize("case", LIARS)
def test_box_section_feasible_is_never_a_lie(case):
    """Whatever the search gives where the answer is beyond the dtype, ``feasible`` says
    whether the returned point is feasible (checked here in exact fractions)."""
    dtype, a, b = LIARS[case]
    a = np.asarray(a, dtype)
    lower = np.array([0.0, -np.inf, 0.0, 0.0] if dtype == F64 else
                     [0.0, 0.0, 0.0, -np.inf], dtype)
    upper = np.where(np.isinf(lower), np.inf, 1.0).astype(dtype)
    sol = jax.jit(project_box_section)(np.zeros(N, dtype), a, dtype(b), lower, upper,
                                       np.ones(N, dtype))
    x = np.asarray(sol.x, F64)
    eps = float(np.finfo(dtype).eps)
    residual = sum(Fraction(float(ai)) * Fraction(float(xi)) for ai, xi in zip(a, x, strict=True)
                   ) - Fraction(float(dtype(b))) if np.all(np.isfinite(x)) else np.inf
    truly = (np.all(np.isfinite(x)) and np.all(x >= lower) and np.all(x <= upper)
             and abs(residual) <= Fraction(64 * eps) * abs(Fraction(float(dtype(b)))))
    assert bool(sol.feasible) == bool(truly)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_subnormal_inputs_are_exact_to_the_smallest_normal_number(dtype):
    """XLA on CPUs flushes subnormal numbers to zero (elsewhere they may be kept): either
    way the results are the exact ones (fractions) to within the smallest normal number,
    and never NaN."""
    tiny = float(np.finfo(dtype).tiny)
    sub = np.asarray([1, 3, 0, -2], dtype) * dtype(tiny / 64)
    x = np.asarray(project_simplex(jnp.asarray(sub)), F64)
    np.testing.assert_allclose(x, exact_simplex(sub), rtol=0, atol=4 * float(np.finfo(dtype).eps))
    ones, inf = np.ones(N, dtype), np.full(N, np.inf, dtype)
    b = dtype(tiny / 16)
    sol = project_box_section(jnp.asarray(sub), ones, b, -inf, inf, ones)
    assert not np.any(np.isnan(np.asarray(sol.x)))
    np.testing.assert_allclose(np.asarray(sol.x, F64), exact_box(sub, ones, b, -inf, inf, ones)[0],
                               rtol=0, atol=tiny)
    w = np.asarray(project_elastic_net_ball(jnp.asarray(sub), dtype(1.0), dtype(0.5)), F64)
    np.testing.assert_allclose(w, sub.astype(F64), rtol=0, atol=tiny)  # inside the ball


def test_box_section_vmap_over_rows_of_every_scale():
    """One vmapped call, rows from 1e-30 to 1e30 (float32), each against the exact one."""
    rng = np.random.default_rng(0)
    scales = np.array([1e-30, 1e-5, 1.0, 1e5, 1e30], F32)
    m = (rng.normal(size=(5, N)) * scales[:, None]).astype(F32)
    a = rng.uniform(0.5, 2, (5, N)).astype(F32)
    lower, upper = (-scales[:, None] * np.ones(N)).astype(F32), (scales[:, None] * np.ones(N))
    b = (0.3 * scales * a.sum(1)).astype(F32)
    sols = jax.jit(jax.vmap(project_box_section))(m, a, b, lower, upper.astype(F32),
                                                  np.ones((5, N), F32))
    assert np.all(np.asarray(sols.feasible))
    for i in range(5):
        ref, _ = exact_box(m[i], a[i], b[i], lower[i], upper[i], np.ones(N))
        np.testing.assert_allclose(sols.x[i], ref, rtol=1e-5, atol=1e-5 * float(scales[i]))


# ---------------------------------------------------------------------------------------
# project_elastic_net_ball and its support function across the range
# ---------------------------------------------------------------------------------------

BALL_CASES = {
    # ‖g‖² overflows float32: all zeros came out (issue 52).
    "f32 near max": (F32, [3e38, 2.9e38, -3e38, 1.0], 1.0, 0.5),
    "f32 huge g, huge r": (F32, [3e38, -1e38, 2e38, 0.0], 1e37, 2.0),
    "f32 tiny": (F32, [3e-18, -1e-18, 2e-19, 0.0], 1e-36, 1e-19),
    "f64 near max": (F64, [1.7e308, -1e308, 1e300, 3.0], 2.0, 0.25),
    "f64 tiny g, large gamma": (F64, [3e-200, -1e-200, 0.0, 2e-200], 1e-300, 1e-101),
}


@pytest.mark.parametrize("case", BALL_CASES)
def test_elastic_net_ball_is_exact_across_the_range(case):
    dtype, g, r, gamma = BALL_CASES[case]
    g = np.asarray(g, dtype)
    w = np.asarray(project_elastic_net_ball(jnp.asarray(g), dtype(r), dtype(gamma)), F64)
    ref = decimal_ball(g, dtype(r), dtype(gamma))
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(w, ref, rtol=64 * eps, atol=64 * eps * np.max(np.abs(ref)))
    assert np.any(w != 0)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_elastic_net_ball_support_of_huge_v(dtype):
    """σ = sup ⟨v, w⟩ over the ball = ⟨v, w*⟩ for the maximizer w* = sign(v)(|v| − tγ)₊/t:
    with γ = 0, sqrt(2r)‖v‖ (decimals); past the dtype's range, inf rather than NaN."""
    big = float(np.finfo(dtype).max) / 4
    v = np.asarray([big, -big / 2, big / 4, 0.0], dtype)
    sigma = float(elastic_net_ball_support(jnp.asarray(v), dtype(0.5), dtype(0.0)))
    norm = D.sqrt(sum(D.create_decimal(float(t)) ** 2 for t in v))
    assert sigma == pytest.approx(float(norm), rel=16 * float(np.finfo(dtype).eps))
    assert float(elastic_net_ball_support(jnp.asarray(v), dtype(1e4), dtype(0.0))) == np.inf


# ---------------------------------------------------------------------------------------
# The entropic capped simplex and the chain at the edges of the range
# ---------------------------------------------------------------------------------------


def test_entropic_capped_simplex_of_logits_near_the_float32_max():
    """Two tied top logits capped at 0.4 each; the rest goes to the next logit (0), as
    e^(−3e38 − 0) = 0: x = (0.4, 0.4, 0, 0.2), exactly."""
    logits = jnp.asarray([3e38, 3e38, -3e38, 0.0], F32)
    x = np.asarray(entropic_capped_simplex(logits, 0.4))
    np.testing.assert_allclose(x, [0.4, 0.4, 0.0, 0.2], rtol=4 * EPS32, atol=4 * EPS32)
    np.testing.assert_allclose(entropic_capped_simplex(logits), [0.5, 0.5, 0, 0],
                               atol=4 * EPS32)


def test_chain_of_float32_entries_spanning_the_range():
    """m − max overflows float32 here (entries ±3e38). The result is a feasible point
    (checked in numpy), equal to the float64 run on the same numbers (no overflow there)."""
    rng = np.random.default_rng(1)
    m = (rng.uniform(-1, 1, (2, 2, 2)) * 3e38).astype(F32)
    alpha = np.asarray(project_chain_marginals(jnp.asarray(m)), F64)
    assert np.all(alpha >= 0)
    np.testing.assert_allclose(alpha.sum((1, 2)), 1, atol=8 * EPS32)
    np.testing.assert_allclose(alpha[0].sum(0), alpha[1].sum(1), atol=8 * EPS32)
    np.testing.assert_allclose(alpha, project_chain_marginals(m.astype(F64)), atol=1e-6)


# ---------------------------------------------------------------------------------------
# NaN and inf: refused when concrete, NaN (feasible False) when traced
# ---------------------------------------------------------------------------------------

_M, _A, _L, _U, _W = (np.array([0.5, -0.2, 0.3, 0.9]), np.ones(N), np.zeros(N), np.ones(N),
                      np.ones(N))
BOX_ARGS = {"m": _M, "a": _A, "b": np.float64(1.0), "lower": _L, "upper": _U, "weights": _W}


def _with(name, bad):
    args = {k: np.array(v, F64) for k, v in BOX_ARGS.items()}
    if args[name].ndim:
        args[name][1] = bad
    else:
        args[name] = np.float64(bad)
    return args


@pytest.mark.parametrize("name", ["m", "a", "b", "lower", "upper", "weights"])
def test_box_section_nan_is_refused_naming_the_argument(name):
    with pytest.raises(ValueError, match=rf"project_box_section: {name}\b.*nan"):
        project_box_section(**_with(name, np.nan))


@pytest.mark.parametrize("name", ["m", "a", "b", "weights"])
def test_box_section_nan_or_inf_under_jit_gives_nan_and_infeasible(name):
    for bad in (np.nan, np.inf):
        sol = jax.jit(project_box_section)(**_with(name, bad))
        assert np.all(np.isnan(sol.x)) and np.isnan(float(sol.multiplier))
        assert not bool(sol.feasible)


@pytest.mark.parametrize("fn, arg", [
    (project_simplex, "v"),
    (lambda v: project_capped_simplex(v, 0.5), "v"),
    (lambda g: project_elastic_net_ball(g, 1.0, 0.5), "g"),
    (lambda v: elastic_net_ball_support(v, 1.0, 0.5), "v"),
    (entropic_capped_simplex, "logits"),
])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_refused_or_nan_under_jit(fn, arg, bad):
    v = np.array([0.3, bad, -1.0, 2.0])
    with pytest.raises(ValueError, match=rf"\b{arg}\b.*{'nan' if np.isnan(bad) else 'inf'}"):
        fn(v)
    out = jax.jit(fn)(v)
    out = out.x if hasattr(out, "x") else out
    assert np.all(np.isnan(np.asarray(out)))


def test_chain_nan_refused_or_nan_for_its_instance_only():
    m = np.random.default_rng(2).normal(size=(3, 2, 2, 2))
    bad = m.copy()
    bad[1, 0, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"project_chain_marginals: m\b.*nan"):
        project_chain_marginals(bad)
    alpha = np.asarray(jax.jit(project_chain_marginals)(bad))
    assert np.all(np.isnan(alpha[1]))
    np.testing.assert_allclose(alpha[[0, 2]], project_chain_marginals(m[[0, 2]]), atol=1e-12)


def test_entropic_nan_cap_and_infeasible_cap():
    with pytest.raises(ValueError, match="cap is NaN"):
        entropic_capped_simplex(np.zeros(N), np.nan)
    # Too few finite logits for the cap (one finite, cap 0.4): an empty set, NaN.
    assert np.all(np.isnan(entropic_capped_simplex(np.array([0.0, -np.inf, -np.inf, -np.inf]),
                                                   0.4)))
    with pytest.raises(ValueError, match="every entry of logits is -inf"):
        entropic_capped_simplex(np.full(N, -np.inf))


# ---------------------------------------------------------------------------------------
# Empty, mismatched, mistyped and infeasible arguments (none of these compiles anything)
# ---------------------------------------------------------------------------------------

EMPTY = np.zeros(0)


@pytest.mark.parametrize("call, name", [
    (lambda: project_simplex(EMPTY), "v"),
    (lambda: project_box_section(EMPTY, 1.0, 0.0, 0.0, 1.0), "m"),
    (lambda: project_capped_simplex(EMPTY, 1.0), "v"),
    (lambda: entropic_capped_simplex(EMPTY), "logits"),
    (lambda: project_elastic_net_ball(EMPTY, 1.0, 0.5), "g"),
    (lambda: elastic_net_ball_support(EMPTY, 1.0, 0.5), "v"),
    (lambda: project_chain_marginals(np.zeros((0, 2, 2))), "m"),
])
def test_empty_input_is_refused_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf": {name} is empty"):
        call()


@pytest.mark.parametrize("change, pattern", [
    (dict(a=np.ones(3)), r"a has shape \(3,\) but m has shape \(4,\)"),
    (dict(lower=np.zeros((2, 2))), r"lower has shape \(2, 2\) but m has shape \(4,\)"),
    (dict(upper=np.ones(5)), r"upper has shape \(5,\)"),
    (dict(weights=np.ones(2)), r"weights has shape \(2,\)"),
    (dict(b=np.ones(4)), r"b must be a scalar"),
    (dict(m=np.ones((2, 4))), r"m must be a vector.*jax.vmap"),
    (dict(lower=np.array([0.0, 2.0, 0.0, 0.0])), r"box is empty: lower\[1\] = 2.0 and upper\[1\]"),
    (dict(b=np.float64(5.0)), r"b = 5.0 is outside \[0.0, 4.0\]"),
    (dict(b=np.float64(-1e-3)), r"b = -0.001 is outside"),
    (dict(weights=np.array([1.0, 0.0, 1.0, 1.0])), r"weights must be finite and > 0"),
    (dict(upper=np.array([1.0, -np.inf, 1.0, 1.0])), r"box is empty"),
])
def test_box_section_bad_arguments_are_refused(change, pattern):
    args = dict(BOX_ARGS) | change
    with pytest.raises(ValueError, match=pattern):
        project_box_section(**args)


@pytest.mark.parametrize("call, pattern", [
    (lambda: project_simplex(np.array([1 + 2j, 0.5])), r"v must be real.*complex"),
    (lambda: project_simplex(np.array(["a", "b"])), r"v must be a real number or array"),
    (lambda: project_simplex(np.ones(3), np.array([1, 0, 1])), r"mask must be a bool array"),
    (lambda: project_simplex(np.ones(3), np.array([True, False])), r"mask has shape \(2,\)"),
    (lambda: project_simplex(np.ones(3), np.zeros(3, bool)), r"mask has no True entry"),
    (lambda: project_box_section(_M, np.array(["x"] * N), 1.0, 0.0, 1.0), r": a must be"),
    (lambda: project_box_section(_M, _A, 1j, 0.0, 1.0), r": b must be real"),
    (lambda: project_box_section(_M, _A, 1.0, 0.0, 1.0, newton_steps=2.5), r"newton_steps"),
    (lambda: project_capped_simplex(_M, 0.2), r"cap = 0.2 is below 1/n = 1/4"),
    (lambda: project_capped_simplex(_M, np.ones(2)), r"cap must be a scalar"),
    (lambda: project_elastic_net_ball(_M, 0.0, 0.5), r"r must be finite and > 0"),
    (lambda: project_elastic_net_ball(_M, 1.0, -0.5), r"gamma must be finite and >= 0"),
    (lambda: elastic_net_ball_support(_M, np.inf, 0.5), r"r must be finite and > 0"),
    (lambda: project_chain_marginals(np.ones((2, 2, 2)), total=-1.0), r"total must be"),
    (lambda: project_chain_marginals(np.ones((2, 2, 2)) * 1j), r"m must be real"),
])
def test_mistyped_and_infeasible_arguments_are_refused(call, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern):
        call()


def test_infeasible_input_under_jit_keeps_its_documented_result():
    """Traced, the value checks are skipped: lower > upper and b past max aᵀx give
    feasible=False with a finite x (the documented results), and a cap below 1/n the box
    point with the largest sum."""
    box = jax.jit(project_box_section)
    sol = box(_M, _A, 1.0, np.array([0.0, 2.0, 0.0, 0.0]), _U)
    assert not bool(sol.feasible) and np.all(np.isfinite(sol.x))
    sol = box(_M, _A, 5.0, _L, _U)
    assert not bool(sol.feasible)
    np.testing.assert_array_equal(sol.x, np.ones(N))
    sol = jax.jit(project_capped_simplex)(_M, 0.2)
    assert not bool(sol.feasible)
    np.testing.assert_array_equal(sol.x, np.full(N, 0.2))


# ---------------------------------------------------------------------------------------
# Derivatives: reverse and forward mode against central differences (float64, away from
# kinks)
# ---------------------------------------------------------------------------------------

_rng = np.random.default_rng(3)
_m, _a, _w = _rng.normal(size=N) * 2, _rng.normal(size=N), _rng.uniform(0.5, 3, N)
_lo, _up = -_rng.uniform(0.1, 2, N), _rng.uniform(0.1, 2, N)
_b = 0.3
_g = np.array([2.5, -1.0, 0.2, -3.5])
_v = np.array([0.3, 0.1, -0.2, 0.25])  # capped at 0.4: x = (0.4, 0.225, 0, 0.375), no kink


def _box_of_all(p):
    """x and ν as functions of (m, a, b, lower, upper, weights) together: one compilation
    per mode."""
    m, a, b, lo, up, w = p[:N], p[N:2 * N], p[2 * N], *(p[2 * N + 1 + k * N:][:N]
                                                        for k in range(3))
    sol = project_box_section(m, a, b, lo, up, w)
    return jnp.concatenate([sol.x, sol.multiplier[None]])


JACOBIANS = {
    "box section in m, a, b, bounds and weights, and its multiplier": (
        _box_of_all, [*_m, *_a, _b, *_lo, *_up, *_w]),
    "capped simplex in v and cap": (lambda p: project_capped_simplex(p[:N], p[N]).x,
                                    [*_v, 0.4]),
    "simplex": (project_simplex, _v),
    "elastic-net ball in g, r and gamma": (
        lambda p: project_elastic_net_ball(p[:N], p[N], p[N + 1]), [*_g, 1.0, 0.4]),
    "elastic-net ball (gamma = 0) in g and r": (
        lambda p: project_elastic_net_ball(p[:N], p[N], 0.0), [*_g, 1.0]),
    "elastic-net support in v, r, gamma": (
        lambda p: elastic_net_ball_support(p[:N], p[N], p[N + 1]), [*_g, 1.0, 0.4]),
    "entropic capped simplex in logits and cap": (
        lambda p: entropic_capped_simplex(p[:N], p[N]), [*_g, 0.3]),
}


@pytest.mark.parametrize("case", JACOBIANS)
def test_jacobians_match_central_differences(case):
    f, x = JACOBIANS[case]
    x = np.asarray(x, F64)
    reference = central_differences(f, x)
    assert np.max(np.abs(reference)) > 1e-3  # a derivative that could be wrong
    for jac in (jax.jacrev, jax.jacfwd):
        np.testing.assert_allclose(jac(f)(jnp.asarray(x)), reference, rtol=1e-6, atol=1e-8,
                                   err_msg=jac.__name__)


def test_grad_and_jvp_under_jit_and_vmap():
    """jax.grad of a loss through the projection under jit and vmap equals the
    finite-difference gradient, and jax.jvp's tangent the directional difference."""
    def loss(m, b):
        return jnp.sum(project_box_section(m, _a, b, _lo, _up, _w).x ** 2)

    ms = _m + _rng.normal(size=(3, N)) * 0.1
    grads = jax.jit(jax.vmap(jax.grad(loss), in_axes=(0, None)))(ms, _b)
    for i in range(3):
        ref = central_differences(lambda m, i=i: loss(jnp.asarray(m), _b), ms[i])
        np.testing.assert_allclose(grads[i], ref, rtol=1e-6, atol=1e-8)
    direction = _rng.normal(size=N)
    _, tangent = jax.jvp(lambda m: project_box_section(m, _a, _b, _lo, _up, _w).x,
                         (jnp.asarray(_m),), (jnp.asarray(direction),))
    h = 1e-6
    ref = (np.asarray(project_box_section(_m + h * direction, _a, _b, _lo, _up, _w).x)
           - np.asarray(project_box_section(_m - h * direction, _a, _b, _lo, _up, _w).x)) / (2 * h)
    np.testing.assert_allclose(tangent, ref, rtol=1e-6, atol=1e-8)
