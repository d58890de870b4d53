"""BMRM (Smola et al. 2007), its line-search variants, the bundle QP, and the Hadamard bounds
of Saha et al. (2009)."""

import warnings

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import cvxpy_optimum, random_binary

import nsjax
from nsjax import testing
from nsjax.projections import project_simplex
from nsjax.testing import simplex_qp_objective

VARIANTS = {
    "qp": nsjax.solvers.BMRM(),
    "qp-exact-ls": nsjax.solvers.BMRM(line_search="exact"),
    # The OCAS-like BMRM of Yu et al. (2010), without the default proximity term.
    "qp-exact-ls-plain": nsjax.solvers.BMRM(line_search="exact", proximity=0),
    "ls": nsjax.solvers.LineSearchBMRM(),
}


# Compiled as BMRM runs it: one program per bundle size (λ traced). Called eagerly, each
# call traced and compiled its loops anew.
solve_simplex_qp = jax.jit(testing.solve_simplex_qp, static_argnames="iterations")


def _check_history(sol, J_star, prob):
    """ε_t bounds the suboptimality of the best iterate so far (w_0 included), every step."""
    steps = int(sol.num_steps)
    values = np.asarray(sol.history.value[:steps])
    gaps = np.asarray(sol.history.gap[:steps])
    w0 = jnp.zeros(prob.X.shape[1])
    best = np.minimum.accumulate(np.minimum(values, float(prob.value(w0, prob.scores(w0)))))
    assert np.all(gaps >= best - J_star - 1e-10)
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-10
    assert float(sol.value) == pytest.approx(best[-1], rel=1e-12)


# The exact line search needs lines, so that variant runs on the hinge only (and is refused
# on the logistic loss: see the next test).
CASES = [(v, loss) for v in VARIANTS for loss in ("hinge", "logistic")
         if not (v.startswith("qp-exact-ls") and loss == "logistic")]


@pytest.mark.parametrize(("variant", "loss"), CASES)
@pytest.mark.parametrize("seed", range(3))
def test_bmrm_reaches_cvxpy_optimum(variant, loss, seed):
    X, y, _ = random_binary(seed + 10, 120, 10)
    lam = 0.2  # ls-BMRM is O(1/(λε)): keep λ moderate so 1e-6 is reachable in the budget
    J_star, _ = cvxpy_optimum(X, y, lam, loss=loss)
    Loss = nsjax.losses.Hinge if loss == "hinge" else nsjax.losses.Logistic
    prob = nsjax.Problem(Loss(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, VARIANTS[variant], max_steps=10_000, tol=1e-8)
    assert abs(float(sol.value) - J_star) <= 1e-6 * J_star
    _check_history(sol, J_star, prob)


def test_exact_line_search_variant_needs_lines():
    X, y, lam = random_binary(0, 20, 3)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(lam), X, y)
    with pytest.raises(ValueError, match="lines"):
        nsjax.solve(prob, nsjax.solvers.BMRM(line_search="exact"))
    with pytest.raises(ValueError, match="lam > 0"):
        nsjax.solve(prob.with_strength(0.0), nsjax.solvers.BMRM())


@pytest.mark.parametrize(("shape", "used", "dtype"), [
    ((128, 30), [0, 1, 36], "float64"),      # filling from slot 0: 3 of 8 blocks read
    ((128, 30), [0, 1, 70], "float64"),      # half the slots in use: all of A at once
    ((128, 30), [0, 1, 70], "float32"),      # float32 cuts: by blocks (5 of 8) still
    ((128, 30), [0, 5, 77, 127], "float64"),  # holes, and the last slot in use
    ((40, 6, 3), [3, 17, 18], "float64"),    # 40 slots in blocks of 10; K = 3 classes
    ((40, 6, 3), [3, 7], "float64"),         # the same by blocks (1 of 4)
    ((7, 30), list(range(7)), "float64"),    # 7 slots: one block
])
def test_bundle_products_from_the_used_blocks_equal_the_full_ones(shape, used, dtype):
    """Σ α_i a_i and ⟨a_i, a⟩, read from the blocks of A up to the last valid slot or from
    all of A at once (`_by_blocks_or_at_once`), equal the products over the valid cuts; the
    rows off ``valid`` (stale cuts) do not count."""
    from nsjax.solvers.bmrm import BMRM, combine_cuts

    rng = np.random.default_rng(len(used))
    A = rng.standard_normal(shape).astype(dtype)
    valid = np.zeros(shape[0], bool)
    valid[used] = True
    A[~valid] = 1e300 if dtype == "float64" else 1e30  # stale cuts: α = 0 there, and their
    # Gram entries are masked (a read block or all of A holds some of them)
    alpha = np.where(valid, rng.random(shape[0]), 0.0)
    a = rng.standard_normal(shape[1:])
    Aalpha, q = jax.jit(lambda A, v, al, a: (combine_cuts(al, A, v), BMRM.gram_row(A, v, a)))(
        A, valid, alpha, a)
    Av = A[valid]
    np.testing.assert_allclose(Aalpha, np.tensordot(alpha[valid], Av, axes=1), rtol=1e-13,
                               atol=1e-13)
    want = np.zeros(shape[0])
    want[valid] = np.tensordot(Av, a, axes=a.ndim)
    np.testing.assert_allclose(q, want, rtol=1e-13, atol=1e-13)


def _bundle_after(solver, prob, steps):
    """The solver's state after ``steps`` compiled steps from 0, and that state's cuts
    inserted (as the next step's `iterate` sees them)."""
    step = jax.jit(lambda p, s: solver.step(p, s))
    state = solver.init(prob, prob.zeros())
    for _ in range(steps):
        state = step(prob, state)
    return state, jax.jit(solver.insert)(state)


@pytest.mark.parametrize("proximity", [0, 1.5, 10.0])
def test_the_model_minimizer_with_a_proximity_term_equals_cvxpy(proximity):
    """min_w λ/2‖w‖² + τ/2‖w − w_t‖² + max_i ⟨a_i, w⟩ + b_i over the bundle's cuts (τ =
    proximity · λ), solved by cvxpy on the state's own bundle and iterate, is the minimizer
    `BMRM.minimize_model` gives; its ⟨a_i, w⟩ (from Q, without reading A) are A w; and
    the certificate is the plain model's dual at its α (≤ the plain model's minimum)."""
    X, y, _ = random_binary(4, 60, 6)
    lam = 0.05
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    solver = nsjax.solvers.BMRM(line_search="exact", proximity=proximity)
    _, state = _bundle_after(solver, prob, 7)
    alpha, Aalpha, w_model, q_model = jax.jit(solver.minimize_model)(state, prob.lam)
    valid = np.asarray(state.valid)
    A, b = np.asarray(state.A)[valid], np.asarray(state.b)[valid]
    w_t, tau = np.asarray(state.core.w), proximity * lam

    def model(w):
        return cp.max(A @ w + b)

    w = cp.Variable(A.shape[1])
    cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + tau / 2 * cp.sum_squares(w - w_t)
                           + model(w))).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12,
                                              tol_gap_rel=1e-12, tol_feas=1e-12)
    np.testing.assert_allclose(np.asarray(w_model), w.value, rtol=1e-6, atol=1e-7)
    if proximity > 0:  # (without the term nothing uses them, and they are 0)
        np.testing.assert_allclose(np.asarray(q_model)[valid], A @ np.asarray(w_model),
                                   rtol=1e-10, atol=1e-12)
    assert np.all(np.asarray(q_model)[~valid if proximity > 0 else slice(None)] == 0)
    np.testing.assert_allclose(np.asarray(Aalpha), np.asarray(alpha)[valid] @ A, rtol=1e-12,
                               atol=1e-14)
    plain = cp.Variable(A.shape[1])
    min_model = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(plain) + model(plain))).solve(
        solver=cp.CLARABEL)
    dual = -np.sum(np.asarray(Aalpha) ** 2) / (2 * lam) + np.asarray(alpha)[valid] @ b
    assert dual <= min_model + 1e-9
    if proximity == 0:  # the plain model's own optimum: the dual attains its minimum
        assert dual == pytest.approx(min_model, rel=1e-7)


def test_the_products_with_the_iterate_follow_it_through_drops_and_merges():
    """``center_q``, ⟨a_i, w_t⟩ for the bundle's cuts, is kept without reading A: the new
    cut's by a dot product in `insert`, a merged cut's as the same mean, the others along
    the step's lines. After each step it is A w_t (to rounding), on a bundle of 4 that
    drops and merges cuts."""
    X, y, _ = random_binary(3, 150, 12)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.01), X, y)
    solver = nsjax.solvers.BMRM(line_search="exact", capacity=4)
    step = jax.jit(lambda p, s: solver.step(p, s))
    state = solver.init(prob, prob.zeros())
    for _ in range(60):
        state = step(prob, state)
        valid = np.asarray(state.valid)
        A, w = np.asarray(state.A)[valid], np.asarray(state.core.w)
        np.testing.assert_allclose(np.asarray(state.center_q)[valid], A @ w, rtol=1e-9,
                                   atol=1e-12 * np.abs(A).max() * np.abs(w).max())
        assert np.all(np.asarray(state.center_q)[~valid] == 0)
    stats = {k: int(v) for k, v in state.core.stats.items()}
    assert stats["dropped_cuts"] > 0 and stats["aggregations"] > 0, stats


@pytest.mark.parametrize(("options", "message"), [
    (dict(proximity=-1.0), "finite number >= 0"),
    (dict(line_search="exact", proximity=float("nan")), "finite number >= 0"),
    (dict(line_search="exact", proximity=float("inf")), "finite number >= 0"),
    (dict(line_search="exact", proximity="1"), "finite number >= 0"),
    (dict(line_search="exact", proximity=True), "finite number >= 0"),
    (dict(proximity=1.0), "needs line_search='exact'"),
])
def test_bad_proximity_is_refused(options, message):
    with pytest.raises(ValueError, match=message):
        nsjax.solvers.BMRM(**options)


def test_proximity_defaults_to_the_ocas_like_variant_only():
    BMRM = nsjax.solvers.BMRM
    assert BMRM().tau_over_lam == 0 and BMRM(proximity=0).tau_over_lam == 0
    assert BMRM(line_search="exact").tau_over_lam == 1.5
    assert BMRM(line_search="exact", proximity=0).tau_over_lam == 0
    # The hybrid falls back to plain BMRM on a loss without lines, proximity and all.
    X, y, _ = random_binary(0, 40, 4)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(0.1), X, y)
    hybrid = nsjax.solvers.Hybrid(bmrm=BMRM(line_search="exact", proximity=2.0))
    assert hybrid.bundle_solver(prob) == BMRM()


def test_full_bundle_keeps_a_valid_lower_bound():
    X, y, _ = random_binary(3, 150, 20)
    lam = 0.01
    J_star, _ = cvxpy_optimum(X, y, lam)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(capacity=6), max_steps=600, tol=1e-6)
    assert int(sol.stats["dropped_cuts"]) + int(sol.stats["aggregations"]) > 0
    _check_history(sol, J_star, prob)
    assert float(sol.value) - J_star <= 1e-3 * J_star  # slower than a full bundle, but on its way


@pytest.mark.parametrize(("capacity", "d", "merged", "dtype"),
                         [(8, 20, 2, np.float64), (24, 40, 3, np.float64),
                          (8, 20, 2, np.float32)])
def test_aggregation_merges_the_smallest_weights_into_one_minorant(capacity, d, merged,
                                                                  dtype):
    """A full bundle whose cuts are all active merges the share ``merge`` (1/8) of them with
    the smallest α (at least 2) into their α-weighted mean: the model's dual value at the
    carried weights is unchanged, the merged cut lies below the cuts it replaces, the
    other cuts stay, and the Gram matrix stays AAᵀ. A float32 problem stores its cuts in
    float32 (the bundle's arithmetic is float64): the merged mean is rounded to float32
    when stored, so these hold to float32's rounding there."""
    from nsjax.solvers.bmrm import BMRM

    X, y, _ = random_binary(3, 150, d)
    lam = 0.01
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y, dtype=dtype)
    rounding = 1e-12 if dtype == np.float64 else 1e-6
    solver = BMRM(capacity=capacity)
    step = jax.jit(lambda p, s: solver.step(p, s))
    state = solver.init(prob, prob.zeros())
    for _ in range(300):  # on to the first step whose next insert aggregates
        if bool(jnp.all(state.valid) & jnp.all(state.alpha > 0)):
            break
        state = step(prob, state)
    after = jax.jit(solver.insert)(state)
    assert int(after.core.stats["aggregations"]) == int(state.core.stats["aggregations"]) + 1
    assert state.A.dtype == dtype and state.Q.dtype == np.float64
    A, b, alpha = (np.asarray(v, np.float64) for v in (state.A, state.b, state.alpha))
    smallest = np.argsort(alpha)[:merged]
    part = np.zeros(capacity, bool)
    part[smallest] = True
    assert np.all(np.asarray(state.part) == part)
    valid = np.asarray(after.valid)
    assert valid.sum() == capacity - merged + 2  # the merged cut, the rest, the new cut
    assert np.all(valid[~part])
    new_slot = int(np.argmax(np.asarray(after.age)))
    into = np.setdiff1d(np.flatnonzero(valid & part), [new_slot])  # the new cut: a freed slot
    assert len(into) == 1
    A2, b2, alpha2 = (np.asarray(v, np.float64) for v in (after.A, after.b, after.alpha))
    weight = alpha[part].sum()
    np.testing.assert_allclose(A2[into[0]], alpha[part] @ A[part] / weight, rtol=rounding,
                               atol=1e-15)
    assert alpha2[into[0]] == pytest.approx(weight, rel=1e-14)
    assert alpha2[new_slot] == 0

    def dual(a, A, b):  # D(α) = −‖Σ α_i a_i‖² / (2λ) + αᵀb
        return -np.sum((a @ A) ** 2) / (2 * lam) + a @ b

    old = dual(alpha, A, b)
    assert dual(np.where(valid, alpha2, 0.0), np.where(valid[:, None], A2, 0.0),
                np.where(valid, b2, 0.0)) == pytest.approx(old, rel=rounding)
    W = np.random.default_rng(0).normal(size=(50, d))  # the merged cut is a minorant
    assert np.all(W @ A2[into[0]] + b2[into[0]] <= np.max(W @ A[part].T + b[part], axis=1)
                  + rounding)
    Av = A2[valid]
    np.testing.assert_allclose(np.asarray(after.Q)[np.ix_(valid, valid)], Av @ Av.T,
                               rtol=max(rounding, 1e-10), atol=1e-12)


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_hadamard_lower_bound_is_attained_exactly(lam):
    """Saha et al. (2009), Thms. 6–7 on the orthonormal A = H_d/√d: ε_t = J(w_t) = 1/(2λt)."""
    d = 64
    prob = nsjax.datasets.hadamard_problem(d, lam)
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=d, tol=0.0)
    t = np.arange(1, d)
    np.testing.assert_allclose(np.asarray(sol.history.value[: d - 1]), 1 / (2 * lam * t),
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(sol.history.gap[: d - 1]), 1 / (2 * lam * t),
                               rtol=0, atol=1e-9)
    # With all d cuts in, the model is exact: J* = −1/(2λd) and the gap closes.
    assert float(prob.value(sol.w, prob.scores(sol.w))) <= 1e-12  # best J is J(w_0) = 0
    assert abs(float(sol.history.value[d - 1]) + 1 / (2 * lam * d)) <= 1e-9
    assert float(sol.history.gap[d - 1]) <= 1e-9


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_hadamard_literal_instance_is_solved_in_two_steps(lam):
    prob = nsjax.datasets.hadamard_problem(64, lam, variant="literal")
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=2, tol=0.0)
    assert float(sol.history.gap[1]) <= 1e-12
    assert abs(float(sol.value)) <= 1e-12  # J* = 0 at w = 0


def test_hadamard_arguments_are_checked():
    with pytest.raises(ValueError, match="power of two"):
        nsjax.datasets.hadamard_problem(48, 0.1)
    with pytest.raises(ValueError, match="variant"):
        nsjax.datasets.hadamard_problem(8, 0.1, variant="printed")


@pytest.mark.parametrize("seed", range(6))
def test_simplex_qp_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    c, k = 16, int(rng.integers(2, 16))
    G = rng.normal(size=(30, c))
    Q, b, lam = G.T @ G, rng.normal(size=c) * 3, float(rng.uniform(0.05, 2))
    mask = np.zeros(c, bool)
    mask[rng.choice(c, k, replace=False)] = True
    a = cp.Variable(k)
    Qk = Q[np.ix_(mask, mask)]
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Qk)) / lam - b[mask] @ a),
                      [a >= 0, cp.sum(a) == 1])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    alpha = solve_simplex_qp(jnp.asarray(Q), jnp.asarray(b), lam, jnp.asarray(mask),
                             jnp.ones(c) / c)
    alpha = np.asarray(alpha)
    assert np.all(alpha >= 0) and abs(alpha.sum() - 1) <= 1e-12 and np.all(alpha[~mask] == 0)
    ours = float(simplex_qp_objective(jnp.asarray(alpha), jnp.asarray(Q), jnp.asarray(b), lam))
    assert abs(ours - prob.value) <= 1e-8 * max(1.0, abs(prob.value))


@pytest.mark.parametrize(("seed", "c"), [(0, 128), (1, 128), (2, 128), (0, 256)])
def test_simplex_qp_is_exact_on_degenerate_bundles(seed, c):
    """Bundles as BMRM's late steps make them: 128 slots, ~100 in use, many cuts repeated
    (a rank-deficient Q, many optimal α, singular KKT systems on large free sets): the
    polish must still reach the optimum (without its ridge it ended 0.4 off here). With
    256 slots the polish solves over the gathered free slots (`COMPACT_SLOTS`)."""
    rng = np.random.default_rng(seed)
    k = 100
    G = rng.normal(size=(12, 40))[:, rng.integers(0, 40, size=c)]  # 40 distinct cuts
    Q, b = G.T @ G, rng.normal(size=40)[rng.integers(0, 40, size=c)]
    lam = 1e-3
    mask = np.zeros(c, bool)
    mask[rng.choice(c, k, replace=False)] = True
    a = cp.Variable(k)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q[np.ix_(mask, mask)]))
                                  / lam - b[mask] @ a), [a >= 0, cp.sum(a) == 1])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    alpha = np.asarray(solve_simplex_qp(jnp.asarray(Q), jnp.asarray(b), lam,
                                        jnp.asarray(mask), jnp.ones(c) / c,
                                        iterations=300))
    assert np.all(alpha >= 0) and abs(alpha.sum() - 1) <= 1e-12 and np.all(alpha[~mask] == 0)
    ours = float(simplex_qp_objective(jnp.asarray(alpha), jnp.asarray(Q), jnp.asarray(b), lam))
    assert abs(ours - prob.value) <= 1e-8 * max(1.0, abs(prob.value))


@pytest.mark.parametrize("free_count", [5, 16, 20, 30, 35])
def test_kkt_solve_over_the_gathered_free_slots_equals_the_solve_over_all(free_count):
    """`equality_qp` gathers the free slots into ``compact`` (16) slots when at most that
    many are free (the system off them is the identity), else into 24, then 32 (5/4 of
    the last, up to a multiple of 8), else solves over all 40: the same α and m."""
    from nsjax.testing import equality_qp, equality_qp_on_slots

    rng = np.random.default_rng(free_count)
    c = 40
    G = rng.normal(size=(50, c))
    Q, b = G.T @ G, rng.normal(size=c)
    free = np.zeros(c, bool)
    free[rng.choice(c, free_count, replace=False)] = True
    alpha, m = jax.jit(lambda Q, b, f: equality_qp(Q, b, 0.3, f, compact=16))(Q, b, free)
    want_alpha, want_m = jax.jit(lambda Q, b, f: equality_qp_on_slots(Q, b, 0.3, f))(
        Q, b, free)
    np.testing.assert_allclose(alpha, want_alpha, rtol=1e-9, atol=1e-12)
    assert np.all(np.asarray(alpha)[~free] == 0)
    assert float(m) == pytest.approx(float(want_m), rel=1e-9)
    # The KKT conditions themselves: Q_FF α_F / λ + m = b_F, Σ α = 1.
    F = free
    np.testing.assert_allclose(Q[np.ix_(F, F)] @ np.asarray(alpha)[F] / 0.3 + float(m),
                               b[F], rtol=1e-8, atol=1e-8)
    assert float(np.sum(alpha)) == pytest.approx(1.0, abs=1e-12)


def test_simplex_projection_equals_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=7) * 2
        mask = rng.random(7) < 0.7
        mask[0] = True
        x = cp.Variable(int(mask.sum()))
        cp.Problem(cp.Minimize(cp.sum_squares(x - v[mask])), [x >= 0, cp.sum(x) == 1]).solve(
            solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        p = np.asarray(project_simplex(jnp.asarray(v), jnp.asarray(mask)))
        np.testing.assert_allclose(p[mask], x.value, atol=1e-8)
        assert np.all(p[~mask] == 0)


def test_logistic_gap_falls_linearly():
    """Smola et al. (2007), Thm. 4: for a smooth risk, ε_t eventually decreases
    geometrically. Fit the slope of log ε_t over the tail and require a clear, steady
    decrease."""
    X, y = nsjax.datasets.breast_cancer()
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(1e-2), X, y)
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=300, tol=1e-12)
    steps = int(sol.num_steps)
    gaps = np.asarray(sol.history.gap[:steps])
    tail = np.arange(steps // 3, steps)
    slope, intercept = np.polyfit(tail, np.log(gaps[tail]), 1)
    fit = slope * tail + intercept
    assert slope < -0.02  # at least a constant factor per step
    assert np.max(np.abs(np.log(gaps[tail]) - fit)) < 3.0  # a line, not a sudden drop
    assert gaps[-1] <= 1e-9 * float(sol.value)


@pytest.mark.parametrize(("dtype", "lam"), [(jnp.float32, 1e8), (jnp.float64, 1e20)])
def test_huge_lam_keeps_the_bound_valid(dtype, lam):
    # λ huge against ‖X‖²: the QP's gradient steps are huge, and the projection's rounding
    # used to leave the simplex, giving D(α) > J (a negative "certified" gap). (200 x 30:
    # the shape of test_default_solve.py's binary-dense problems, whose float64 Hybrid
    # program serves here; without the final projection in `solve_simplex_qp`, BMRM's gap
    # here is −2e4 in float64, as on 40 x 5.)
    X, y, _ = random_binary(0, 200, 30)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y, dtype=dtype)
    for solver in (nsjax.solvers.BMRM(), nsjax.solvers.Hybrid()):
        sol = nsjax.solve(prob, solver, max_steps=20)
        # J* = R(0) − O(‖X‖²/λ) = 1 to rounding; the bound may not pass it.
        assert float(sol.value) == pytest.approx(1.0, rel=1e-6)
        assert float(sol.gap) >= -4 * float(jnp.finfo(dtype).eps)


@pytest.mark.parametrize("solver", [nsjax.solvers.BMRM(line_search="exact"),
                                    # phase 2 after the first window
                                    nsjax.solvers.Hybrid(horizon=1.0, min_sublbfgs_steps=0)],
                         ids=["ocas-like", "hybrid"])
def test_float32_problem_keeps_float32_cuts_and_an_exact_float64_bundle(solver):
    # The QP weighs the Gram matrix by 1/λ; a Gram row summed in float32 over many
    # coordinates left the 1M x 1M solve at λ = 1e-6 stuck 1 % above J* (`bmrm.py`'s
    # docstring). With x64 on, a float32 problem's bundle arithmetic is float64 while its
    # cuts A stay float32 (as computed; half the bytes to read): Q is AAᵀ of the stored
    # cuts to float64 rounding, and the lower bound stays below the float64 optimum.
    X, y = nsjax.datasets.synthetic_sparse(300, 3000, 0.02, seed=1, power=1.1)
    lam = 1e-4
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y,
                         dtype=jnp.float32)
    # (init compiled: eagerly, its operations on the 3000 columns compile one by one.)
    state, bundle_steps = jax.jit(solver.init)(prob, prob.zeros()), 0
    step = jax.jit(solver.step)
    while bundle_steps < 25:  # the hybrid keeps Q up to date in its phase 2 only
        state = step(prob, state)
        bundle_steps += int(getattr(state, "phase", 1))
        assert int(state.core.stats["matvecs"]) < 400
    bundle = getattr(state, "bundle", state)
    assert bundle.Q.dtype == bundle.alpha.dtype == bundle.b.dtype == jnp.float64
    assert bundle.A.dtype == state.core.w.dtype == state.core.lower.dtype == jnp.float32
    A = np.asarray(bundle.A, np.float64)[np.asarray(bundle.valid)]
    Q = np.asarray(bundle.Q)[np.ix_(np.asarray(bundle.valid), np.asarray(bundle.valid))]
    assert len(A) >= 10
    np.testing.assert_allclose(Q, A @ A.T, rtol=0, atol=1e-13 * np.abs(Q).max())
    J_star = cvxpy_optimum(X, y, lam, loss="hinge")[0]
    assert float(state.core.lower) <= J_star * (1 + 1e-6)
    # Without x64 JAX has no float64: the bundle is then the problem's float32.
    with jax.enable_x64(False):
        prob32 = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
        narrow = jax.eval_shape(solver.init, prob32, prob32.zeros())
        assert getattr(narrow, "bundle", narrow).Q.dtype == jnp.float32


@pytest.mark.parametrize("keep_cuts", [False, True])
def test_hybrid_phase_two_starts_from_the_switch_cut_unless_phase_one_cuts_are_kept(keep_cuts):
    # Phase 2's bundle starts from the cut at the switch only (phase 1's early cuts can hold
    # the bundle method back for good: hybrid.py's docstring); with keep_cuts=True from
    # phase 1's cuts too. (That the default ends certified at the optimum:
    # test_default_solve.py.)
    X, y, _ = random_binary(3, 200, 30)
    lam = 1e-3
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    solver = nsjax.solvers.Hybrid(horizon=1.0, keep_cuts=keep_cuts,  # switch after a window
                                  min_sublbfgs_steps=0)
    state = jax.jit(solver.init)(prob, prob.zeros())
    step = jax.jit(solver.step)
    while int(state.phase) == 0:
        before, state = state, step(prob, state)
    # The switching step inserted one more phase-1 cut (its pending one) before switching.
    phase_one_cuts = int(np.sum(before.bundle.valid)) + 1
    assert phase_one_cuts > 5
    assert int(np.sum(state.bundle.valid)) == (phase_one_cuts if keep_cuts else 0)
    state = step(prob, state)  # phase 2's first step inserts the cut taken at the switch
    assert int(np.sum(state.bundle.valid)) == (phase_one_cuts + 1 if keep_cuts else 1)
    assert float(state.core.lower) <= cvxpy_optimum(X, y, lam, loss="hinge")[0] + 1e-9


@pytest.mark.parametrize("minimum", [0, 25])
def test_hybrid_switches_by_its_pace_only_after_its_minimum_of_sublbfgs_steps(minimum):
    # With horizon 1 the pace rule holds as soon as the window is full (step 11): the switch
    # waits for `min_sublbfgs_steps` (where subLBFGS is fast to the end, its loose gap made
    # the rule switch too early: hybrid.py's docstring). The result is the optimum either way.
    X, y, _ = random_binary(3, 200, 30)
    lam = 1e-3
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    solver = nsjax.solvers.Hybrid(horizon=1.0, min_sublbfgs_steps=minimum)
    sol = nsjax.solve(prob, solver, max_steps=500, tol=1e-8)
    assert int(sol.stats["switched_at"]) == max(minimum, solver.window + 1)
    assert sol.result == nsjax.RESULTS.successful
    J_star = cvxpy_optimum(X, y, lam, loss="hinge")[0]
    assert float(sol.value) == pytest.approx(J_star, rel=1e-6)


@pytest.mark.parametrize(("options", "message"), [
    (dict(min_sublbfgs_steps=-1), "min_sublbfgs_steps must be an int >= 0"),
    (dict(min_sublbfgs_steps=2.5), "min_sublbfgs_steps must be an int >= 0"),
    (dict(window=0), "window must be an int >= 1"),
    (dict(horizon=0.0), "horizon must be > 0"),
])
def test_hybrid_rejects_bad_switch_options(options, message):
    with pytest.raises(ValueError, match=message):
        nsjax.solvers.Hybrid(**options)


# 50 QP iterations before the polish (the default is 10): with 10, the hybrid closes the gap
# to exactly 0 at step 45 on the problem below, so its run never repeats itself.
SMALL_BUNDLE = nsjax.solvers.BMRM(line_search="exact", capacity=16, qp_iterations=50)


@pytest.mark.parametrize("solver", [SMALL_BUNDLE, nsjax.solvers.Hybrid(bmrm=SMALL_BUNDLE)],
                         ids=["ocas-like", "hybrid"])
def test_a_run_that_repeats_itself_ends_stalled(solver):
    # With tol = 0 no gap is small enough; once rounding leaves the iterate and the model's
    # minimizer unchanged for `capacity` steps in a row, every further step would repeat
    # the last: the run ends there (it used to run to max_steps), at the optimum to
    # rounding. A run whose gap rounds to exactly 0 (or below) ends `successful` instead.
    # Which problems do which depends on the rounding of each path (a seed chosen to stall
    # stopped stalling when the cuts' offsets changed, and under another LLVM
    # optimization level), so twelve problems are run: every run ends early, one way or
    # the other, with J = J(w) at J*; at least two stall.
    stalled = 0
    for seed in range(12):
        X, y, _ = random_binary(seed, 60, 6)
        prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", nsjax.ConvergenceWarning)
            sol = nsjax.solve(prob, solver, tol=0.0, max_steps=400)
        J_star = cvxpy_optimum(X, y, 0.1, loss="hinge")[0]
        value, gap, label = float(sol.value), float(sol.gap), f"seed {seed}"
        assert int(sol.num_steps) < 150, label
        assert value == pytest.approx(float(prob.objective(sol.w)), rel=1e-12), label
        assert value == pytest.approx(J_star, rel=1e-9), label
        # The gap is a valid bound (J* ≥ value − gap, to rounding) and closed.
        assert value - gap <= J_star * (1 + 1e-12), label
        assert gap <= 1e-12 * J_star, label
        if sol.result == nsjax.RESULTS.stalled:
            stalled += 1
            assert int(sol.stats["repeats"]) == SMALL_BUNDLE.capacity, label
            assert any("stalled" in str(w.message) for w in caught), label
        else:
            assert sol.result == nsjax.RESULTS.successful, label
    assert stalled >= 2


def _near_kinks(kind, off):
    """A problem, and a w whose scores put examples ``off`` from their kinks. At 3e-10 that
    is inside the losses' kink tolerance (`active_tol`, 3.7e-10): the subgradient taken
    there mixes in pieces that are not active at w."""
    if kind == "multiclass":  # X = I: the scores are W; example 1's label 2 is off
        X, y = np.eye(3), np.array([0, 1, 2])
        W = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0 + off], [0.0, 0.0, 1.0]])
        prob = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(0.1), X, y)
        return prob, jnp.asarray(W)
    if kind == "multilabel":  # X = I: the scores are W; example 0's pair (0, 2) is off
        X, labels = np.eye(2), [[0], [1, 2]]
        W = np.array([[1.0, 0.0, off], [0.0, 2.0, 2.0]])
        prob = nsjax.Problem(nsjax.losses.MultilabelHinge(), nsjax.regularizers.L2(0.1), X,
                             labels)
        return prob, jnp.asarray(W)
    if kind.startswith("max_affine"):  # X = I: a piece of each example off the maximum
        reduction = kind.split("-")[1]
        slopes = np.array([[1.0, -1.0, 0.5], [1.0, -1.0, 0.0]])
        offsets = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        w = np.array([off, 1.0 - off]) if reduction == "mean" else np.array([1.0 - off, 1.0])
        loss = nsjax.losses.MaxAffine(slopes, offsets, reduction=reduction)
        return nsjax.Problem(loss, nsjax.regularizers.L2(0.1), np.eye(2)), jnp.asarray(w)
    X = np.eye(4)
    if kind == "bias":  # margins −off, +off, 0.5, −0.5: any bias in [−off, off] is optimal
        y, w = np.array([1.0, 1.0, -1.0, -1.0]), np.array([1 + off, 1 - off, -0.5, -1.5, 0])
        return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y,
                             bias=True), jnp.asarray(w)
    y, w = np.array([1.0, 1.0, 1.0, -1.0]), np.array([1 + off, 1 - off, 0.3, -2.0])
    return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y), jnp.asarray(w)


@pytest.mark.parametrize("kind", ["hinge", "multiclass", "bias", "multilabel", "max_affine-mean",
                                  "max_affine-max"])
def test_a_cut_next_to_a_kink_stays_below_the_risk(kind):
    # A cut R(Xv) ≥ ⟨a, v⟩ + b must hold at every v, or the bundle's dual bound D(α) can
    # exceed J*. Taken 3e-10 from kinks, with b = R(w) − ⟨a, w⟩ it rose above R by ~1e-11
    # where those examples sit on their kinks (the default solve on test_bias.py's problem
    # certified a lower bound 5.7e-12 above J of cvxpy's w). With a bias the cut is of
    # R̃(v) = min_c R(Xv + c), found here by brute force over the kinks of R in c. The
    # losses without R* (multilabel, max-affine) give their planes' exact intercepts.
    prob, w = _near_kinks(kind, 3e-10)
    _, on_kinks = _near_kinks(kind, 0.0)
    _, _, _, a, b = nsjax.solvers.BMRM.cut(prob, w, prob.scores(w))
    a, b = np.asarray(a), float(b)

    def risk(v):
        if not prob.bias:
            return float(prob.loss.risk(prob.scores(jnp.asarray(v)), prob.y))
        S = np.asarray(prob.scores(jnp.asarray(np.append(v[:-1], 0.0))))
        shifts = np.concatenate([np.asarray(prob.y) - S, [0.0]])  # where 1 − y(S + c) = 0
        return min(float(prob.loss.risk(jnp.asarray(S + c), prob.y)) for c in shifts)

    rng = np.random.default_rng(0)
    points = [np.asarray(on_kinks)] + [np.asarray(on_kinks) + scale * rng.normal(size=w.shape)
                                       for scale in (1e-10, 1e-6, 1.0) for _ in range(20)]
    worst = max(float(np.vdot(a, v)) + b - risk(v) for v in points)
    assert worst <= 1e-15
