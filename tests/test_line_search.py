"""Exact line search against brute force; Wolfe line search against conditions (16)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax.solvers.line_search import exact_line_search, wolfe_line_search


def phi_numpy(eta, b, a, c_reg, h):
    return c_reg * eta + 0.5 * h * eta**2 + np.sum(np.max(b + eta * a, axis=1))


def brute_minimizer(b, a, c_reg, h):
    """Φ is convex piecewise quadratic: its minimizer over η ≥ 0 is 0, a kink, or the
    stationary point of some quadratic piece. Enumerate them all and take the best."""
    cands = [0.0]
    da = a[:, 1] - a[:, 0]
    nz = da != 0
    kinks = (b[nz, 0] - b[nz, 1]) / da[nz]
    kinks = kinks[kinks > 0]
    cands += list(kinks)
    edges = np.concatenate([[0.0], np.sort(kinks), [np.inf]])
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mid = lo + 1.0 if np.isinf(hi) else 0.5 * (lo + hi)
        act = np.argmax(b + mid * a, axis=1)
        slope = c_reg + np.sum(a[np.arange(len(a)), act])
        if h > 0:
            root = -slope / h
            if lo <= root <= hi:
                cands.append(root)
    vals = [phi_numpy(e, b, a, c_reg, h) for e in cands]
    return cands[int(np.argmin(vals))], min(vals)


def random_hinge_lines(rng, n, ties=False, zero_slopes=False):
    m = rng.normal(size=n)
    if ties:  # several examples share one kink, some sit exactly on it at η = 0
        m[: n // 3] = 0.0
        m[n // 3 : 2 * n // 3] = 0.7
    slope = rng.normal(size=n)
    if ties:
        slope[n // 3 : 2 * n // 3] = -1.0
    if zero_slopes:
        slope[rng.random(n) < 0.3] = 0.0
    b = np.stack([np.zeros(n), m], 1) / n
    a = np.stack([np.zeros(n), slope], 1) / n
    return b, a


BRACKETS = ["sort", "bisect", "multisect"]


PADDED = 40


@jax.jit
def search_all(b, a, c_reg, h):
    """The exact line search by each bracket (`BRACKETS`), in one compiled program."""
    return tuple(exact_line_search(b, a, c_reg, h, k) for k in BRACKETS)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("kind", ["plain", "ties", "zero_slopes"])
def test_exact_equals_brute_force(seed, kind):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, PADDED))
    b, a = random_hinge_lines(rng, n, ties=kind == "ties", zero_slopes=kind == "zero_slopes")
    h = float(rng.uniform(0.01, 2.0))
    c_reg = float(-abs(rng.normal()) - np.sum(np.maximum(a[:, 1], 0)))  # a descent direction
    eta_bf, val_bf = brute_minimizer(b, a, c_reg, h)
    # Padded with flat zero lines to PADDED examples (a flat line pair adds neither a kink
    # nor a slope: the same Φ), so that every size is one compiled program.
    flat = np.zeros((PADDED - n, 2))
    for res in search_all(jnp.asarray(np.concatenate([b, flat])),
                              jnp.asarray(np.concatenate([a, flat])), c_reg, h):
        assert bool(res.ok)
        assert float(res.eta) == pytest.approx(eta_bf, rel=1e-10, abs=1e-12)
        assert phi_numpy(float(res.eta), b, a, c_reg, h) <= val_bf + 1e-12
    if seed < 3:  # unpadded, eagerly, at this size
        for bracket in BRACKETS:
            res = exact_line_search(jnp.asarray(b), jnp.asarray(a), c_reg, h, bracket)
            assert float(res.eta) == pytest.approx(eta_bf, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sort_and_bisection_brackets_agree_on_large_instances(dtype):
    # Thousands of kinks, tie groups, zero slopes and kinks spread over many magnitudes:
    # both brackets must give the same step, tie split and kink count, jitted or not.
    rng = np.random.default_rng(7)
    for trial in range(6):
        n = 5000
        b, a = random_hinge_lines(rng, n, ties=trial % 2 == 0, zero_slopes=trial % 3 == 0)
        b[:, 1] *= 10.0 ** rng.uniform(-8, 3, size=n)
        h = [0.0, 1e-6, 1.0][trial % 3]
        c_reg = float(-abs(rng.normal()) - np.sum(np.maximum(a[:, 1], 0)) * rng.uniform(0, 2))
        args = jnp.asarray(b, dtype), jnp.asarray(a, dtype), dtype(c_reg), dtype(h)
        by_sort, *others = search_all(*args)
        assert by_sort.eta.dtype == dtype
        for other in others:
            for x, y in zip(by_sort, other, strict=True):
                assert np.asarray(x) == np.asarray(y)
        if np.isfinite(float(by_sort.eta)):  # and the step is a minimizer along the line
            eta = float(by_sort.eta)
            val = phi_numpy(eta, b, a, c_reg, h)
            for other in (eta * (1 - 1e-3), eta * (1 + 1e-3)):
                assert val <= phi_numpy(other, b, a, c_reg, h) + 1e-12 * abs(val)


@pytest.mark.parametrize("ties", [False, True])
def test_bisection_stops_at_one_kink_left_and_leaves_what_the_search_needs(ties):
    # The bisection stops once at most one kink is left in (lo, hi] and steps lo over it
    # where F < 0 there. Its lo must still be what exact_line_search relies on: F(lo) < 0
    # and no kink strictly between lo and the first kink κ* with F(κ*) ≥ 0 (F in float64
    # numpy, on the sorted kinks). Over these lines it stops both ways: at a stepped-over
    # kink, and short of κ* with no kink in between.
    from nsjax.solvers.line_search import bracket_by_bisection, kinks, sup_slope_at_zero

    bracket = jax.jit(bracket_by_bisection)
    rng = np.random.default_rng(5)
    stepped_over = stopped_short = 0
    for trial in range(60):
        b, a = random_hinge_lines(rng, 300, ties=ties)
        c_reg = -abs(rng.normal()) - np.sum(np.maximum(a[:, 1], 0)) * rng.uniform(0, 1)
        h = [0.0, 1e-3, 1.0][trial % 3]
        eta, jump, rows = kinks(jnp.asarray(b), jnp.asarray(a))
        c = c_reg + float(sup_slope_at_zero(jnp.asarray(b), jnp.asarray(a)))
        lo = float(bracket(eta, jump, rows, c, h))
        e, j = np.asarray(eta).ravel(), np.asarray(jump).ravel()
        e, j = e[np.isfinite(e)], j[np.isfinite(e)]

        def F(x, e=e, j=j, c=c, h=h):
            return c + h * x + np.sum(j[e <= x])

        if c >= 0 or F(e.max()) < 0:  # no search: lo is the last kink
            assert lo == e.max()
            continue
        assert F(lo) < 0
        first = np.min([x for x in e if F(x) >= 0])  # κ*
        assert not np.any((e > lo) & (e < first)), (trial, lo, first)
        stepped_over += bool(np.any(e == lo))
        stopped_short += bool(np.nextafter(lo, np.inf) < first and not np.any(e == lo))
    assert stepped_over > 0 and stopped_short > 0, (stepped_over, stopped_short)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_brackets_agree_where_the_root_rounds(dtype):
    # Many (c, h) on the same lines, so that η* is often the root of a quadratic piece,
    # whose rounding must not make the two brackets differ by an ulp.
    rng = np.random.default_rng(11)
    b, a = random_hinge_lines(rng, 64)
    cs = -np.abs(rng.normal(size=4000)) - np.sum(np.maximum(a[:, 1], 0))
    hs = 10.0 ** rng.uniform(-3, 1, size=4000)
    b, a = jnp.asarray(b, dtype), jnp.asarray(a, dtype)
    cs, hs = jnp.asarray(cs, dtype), jnp.asarray(hs, dtype)

    by_sort, by_bisection, by_multisection = (np.asarray(res.eta) for res in jax.vmap(
        search_all, in_axes=(None, None, 0, 0))(b, a, cs, hs))
    assert by_sort.dtype == dtype
    # The two sectionings evaluate F the same way: they agree exactly, in every dtype.
    np.testing.assert_array_equal(by_multisection, by_bisection)
    if dtype == np.float16:
        # Sum and cumsum of the slope jumps round differently; with 11 bits that can flip
        # the decision at a kink where F is 0 to rounding (1 case in 4000 here).
        assert np.mean(by_sort == by_bisection) > 0.99
        np.testing.assert_allclose(by_sort.astype(float), by_bisection.astype(float),
                                   rtol=2e-2)
    else:
        np.testing.assert_array_equal(by_sort, by_bisection)


def test_auto_bracket_and_bad_name():
    b, a = random_hinge_lines(np.random.default_rng(3), 50)
    auto = exact_line_search(jnp.asarray(b), jnp.asarray(a), -1.0, 0.5)
    by_sort = exact_line_search(jnp.asarray(b), jnp.asarray(a), -1.0, 0.5, "sort")
    assert float(auto.eta) == float(by_sort.eta)
    with pytest.raises(ValueError, match="bracket must be"):
        exact_line_search(jnp.asarray(b), jnp.asarray(a), -1.0, 0.5, "heap")


@pytest.mark.parametrize("n, r, dtype, gpu_bracket", [
    (2**22, 2, np.float64, "bisect"), (2**22 - 8, 2, np.float64, "multisect"),
    (2**22, 2, np.float32, "multisect"), (2**10, 2, np.float64, "multisect"),
    (2**16, 26, np.float32, "multisect"), (2**22, 26, np.float64, "multisect")])
def test_auto_bracket_on_gpus_multisects_unless_very_many_two_line_float64_examples(
        n, r, dtype, gpu_bracket):
    # "auto" as lowered for a GPU (no GPU needed to lower) and for the CPU: on CPUs always
    # the bisection, on GPUs the multisection unless there are BISECT_FROM (2^22) float64
    # examples of two lines each (the crossover measured on an H100, RESULTS.md). Neither
    # sorts; the multisection's program has its 15 points and no loop (its passes are
    # unrolled: a GPU's while loop syncs with the host every pass), the bisection's a loop.
    from nsjax.solvers.line_search import BISECT_FROM, MULTISECT_WAYS, auto_bracket

    assert BISECT_FROM == 2**22 and MULTISECT_WAYS == 16
    assert auto_bracket((n, r), dtype) == gpu_bracket
    lines, scalar = jax.ShapeDtypeStruct((n, r), dtype), jax.ShapeDtypeStruct((), dtype)
    search = jax.jit(lambda b, a, c, h: exact_line_search(b, a, c, h).eta)
    traced = search.trace(lines, lines, scalar, scalar)
    for platform, bracket in (("cuda", gpu_bracket), ("cpu", "bisect")):
        program = traced.lower(lowering_platforms=(platform,)).as_text()
        assert "stablehlo.sort" not in program, platform
        assert ("tensor<15x" in program) == (bracket == "multisect"), platform
        if r == 2:  # (the envelope of 26 lines has loops of its own)
            assert ("stablehlo.while" in program) == (bracket == "bisect"), platform


@pytest.mark.parametrize("bracket", BRACKETS)
def test_no_breakpoint_ahead_gives_quadratic_root(bracket):
    # Every kink is behind (η < 0): Φ is one quadratic piece on η ≥ 0.
    b = np.array([[0.0, -1.0], [0.0, -2.0]])
    a = np.array([[0.0, -1.0], [0.0, -3.0]])
    res = exact_line_search(jnp.asarray(b), jnp.asarray(a), -1.0, 2.0, bracket)
    assert float(res.eta) == pytest.approx(0.5)  # slope −1 + 2η = 0


@pytest.mark.parametrize("bracket", BRACKETS)
def test_unbounded_and_non_descent(bracket):
    b = np.array([[0.0, 1.0]])
    a = np.array([[0.0, 0.0]])  # Δf = 0: no kink ever
    res = exact_line_search(jnp.asarray(b), jnp.asarray(a), -1.0, 0.0, bracket)
    assert np.isinf(float(res.eta))
    res = exact_line_search(jnp.asarray(b), jnp.asarray(a), 0.5, 1.0, bracket)
    assert float(res.eta) == 0.0 and not bool(res.ok)


@pytest.mark.parametrize("bracket", BRACKETS)
def test_zero_slope_sum_stops_on_the_kink(bracket):
    # The slope crosses zero exactly at the kink η = 1 (Δ sup ∂Φ jumps from −1 to +1).
    b = np.array([[0.0, 1.0]])
    a = np.array([[0.0, -1.0]])
    res = exact_line_search(jnp.asarray(b), jnp.asarray(a), 0.0, 0.0, bracket)
    assert float(res.eta) == pytest.approx(1.0)


def test_wolfe_conditions_hold():
    rng = np.random.default_rng(0)
    b, a = random_hinge_lines(rng, 25)
    c_reg, h = -2.0, 0.3

    def phi(eta):
        vals = jnp.asarray(b) + eta * jnp.asarray(a)
        top = jnp.max(vals, 1, keepdims=True)
        slope = jnp.sum(jnp.max(jnp.where(vals == top, jnp.asarray(a), -jnp.inf), 1))
        return c_reg * eta + 0.5 * h * eta**2 + jnp.sum(top), c_reg + h * eta + slope

    res = wolfe_line_search(phi, c1=1e-4, c2=0.9)
    f0, g0 = phi(0.0)
    f, g = phi(res.eta)
    assert bool(res.ok) and float(res.eta) > 0
    assert float(f) <= float(f0) + 1e-4 * float(res.eta) * float(g0)
    assert float(g) >= 0.9 * float(g0)


def test_float32_solve_on_the_gpus_paths_equals_bisection_and_float64():
    # The GPU's paths (the multisection bracket, the compact L-BFGS form, float32) run end
    # to end on the CPU, so that a GPU run is never their first run: the multisection gives
    # the same iterates as the CPU's bisection (the brackets agree bit for bit), the compact
    # form certifies the same optimum, and J is within float32's reach of float64's.
    import nsjax
    from nsjax.solvers import ExactLineSearch, LBFGSMemory, SubLBFGS

    X, y = nsjax.datasets.breast_cancer()
    X = (X - X.mean(0)) / X.std(0)
    prob32 = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y,
                           dtype=np.float32)
    sols = {(bracket, form): nsjax.solve(prob32, SubLBFGS(
        memory=LBFGSMemory(15, form=form), line_search=ExactLineSearch(bracket)),
        max_steps=300, tol=1e-5)
        for bracket, form in [("multisect", "two-loop"), ("bisect", "two-loop"),
                              ("multisect", "compact")]}
    by_multisection, by_bisection = sols["multisect", "two-loop"], sols["bisect", "two-loop"]
    gpu = sols["multisect", "compact"]
    assert gpu.w.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(by_multisection.history.value),
                                  np.asarray(by_bisection.history.value))
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
    exact = nsjax.solve(prob, tol=1e-10)  # float64, the default solver
    assert exact.gap <= 1e-10
    for sol in (by_bisection, gpu):
        assert sol.result == nsjax.RESULTS.successful
        # The float32 solution, evaluated in float64, is as far from the optimum as its
        # certified gap says (up to float32's rounding of J, ~1e-8 here).
        j32 = float(prob.objective(jnp.asarray(sol.w, jnp.float64)))
        assert float(exact.value) - 1e-10 <= j32 <= float(exact.value) + float(sol.gap) + 1e-6
