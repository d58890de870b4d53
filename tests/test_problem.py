"""Problem: validation, labels, subgradients, the oracle (eqs. 22–23) and dual bounds."""

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from reference import cvxpy_optimum, hinge_objective, random_binary

import nsjax
from nsjax.programs import compiled_programs
from nsjax.solvers.memory import LBFGSMemory
from nsjax.testing import find_direction

HINGE, L2 = nsjax.losses.Hinge(), nsjax.regularizers.L2


def test_bad_inputs_are_refused_before_compiling():
    X = np.ones((4, 2))
    y = np.array([1, -1, 1, -1])
    cases = [
        (dict(X=np.array([[np.nan, 1.0]] * 4)), "NaN"),
        (dict(X=np.array([[np.inf, 1.0]] * 4)), "NaN or inf"),
        (dict(y=np.array([1, -1, 1])), "same length"),
        (dict(y=np.ones(4)), "two classes"),
        (dict(y=np.array([0, 1, 2, 1])), "two classes"),
        (dict(y=np.array([1.0, np.nan, 1.0, -1.0])), "NaN"),
        (dict(X=np.ones((0, 2)), y=np.array([])), "empty"),
        (dict(reg=L2(-1.0)), ">= 0"),
        (dict(reg=L2(np.nan)), ">= 0"),
        (dict(y=None), "needs labels"),
    ]
    for change, message in cases:
        kw = dict(loss=HINGE, reg=L2(0.1), X=X, y=y) | change
        with pytest.raises(ValueError, match=message):
            nsjax.Problem(**kw)
    with pytest.raises(TypeError, match="Did you mean 'memory'"):
        nsjax.solvers.SubLBFGS(memroy=3)
    with pytest.raises(ValueError, match="line_search"):
        nsjax.solvers.SubLBFGS(line_search="fast")
    prob = nsjax.Problem(HINGE, L2(0.1), X, y)
    with pytest.raises(ValueError, match="w0"):
        nsjax.solve(prob, w0=np.ones(3))
    with pytest.raises(ValueError, match="lam"):
        nsjax.sweep(prob, [0.1, -1.0])


def test_labels_any_two_values_are_mapped_and_kept():
    X, y01, lam = random_binary(0, 40, 5)
    y01 = (y01 > 0).astype(int)
    labels = np.where(y01 == 1, "spam", "ham")
    a = nsjax.Problem(HINGE, L2(lam), X, y01)
    b = nsjax.Problem(HINGE, L2(lam), X, labels)
    assert a.classes == (0, 1) and b.classes == ("ham", "spam")
    np.testing.assert_array_equal(np.asarray(a.y), np.asarray(b.y))
    np.testing.assert_array_equal(np.asarray(a.y), np.where(y01 == 1, 1.0, -1.0))


def test_problems_that_differ_in_a_part_have_different_structures():
    """Problems of one shape with different losses or regularizers (both frozen dataclasses
    with the same fields) must never share a compiled program. JAX 0.10.2 compares such
    parts' structures as equal; on a hash collision in jit's cache a logistic problem ran
    the hinge's program (seen in CI: the logistic runs reached the hinge's optimum)."""
    X, y, _ = random_binary(0, 20, 4)
    losses, regs = nsjax.losses, nsjax.regularizers
    variants = [(losses.Hinge(), regs.L2(0.1)), (losses.Logistic(), regs.L2(0.1)),
                (losses.Logistic(), regs.L1(0.1)), (losses.Squared(), regs.L1(0.1))]
    structures = [jax.tree_util.tree_structure(nsjax.Problem(loss, reg, X, y))
                  for loss, reg in variants]
    for a, b in itertools.combinations(structures, 2):
        assert a != b
    same = jax.tree_util.tree_structure(nsjax.Problem(losses.Hinge(), regs.L2(0.5), X, -y))
    assert same == structures[0]  # label values and λ do not change the program


def test_objective_takes_numpy_weights_on_sparse_data():
    X, y, _ = random_binary(1, 30, 6, sparse=True, nnz=60)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y)
    w = np.random.default_rng(0).normal(size=6)
    yy = np.where(y == prob.classes[1], 1.0, -1.0)
    assert float(prob.objective(w)) == pytest.approx(hinge_objective(w, X.toarray(), yy, 0.1),
                                                     rel=1e-12)


def test_value_and_subgradient_inequality():
    X, y, lam = random_binary(1, 30, 6)
    prob = nsjax.Problem(HINGE, L2(lam), X, y)
    rng = np.random.default_rng(0)
    w = rng.normal(size=6)
    S = prob.scores(jnp.asarray(w))
    assert float(prob.value(w, S)) == pytest.approx(hinge_objective(w, X, y, lam))
    g, _, _ = prob.subgradient(jnp.asarray(w), S)
    for _ in range(20):
        v = rng.normal(size=6)
        assert hinge_objective(v, X, y, lam) >= hinge_objective(w, X, y, lam) + np.dot(
            v - w, np.asarray(g)) - 1e-12


def test_oracle_attains_sup_over_subdifferential_vertices():
    """Put w on several hinges, then compare with all 2^|M| vertex choices of β on M."""
    rng = np.random.default_rng(2)
    n, d, lam = 12, 4, 0.1
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1, -1]
    w = rng.normal(size=d)
    # Shift y so that the first 4 examples sit exactly on their hinge: y_i x_iᵀw = 1.
    margin_idx = np.arange(4)
    X[margin_idx] *= (1.0 / (y[margin_idx] * (X[margin_idx] @ w)))[:, None]
    prob = nsjax.Problem(HINGE, L2(lam), X, y)
    S = prob.scores(jnp.asarray(w))
    p = rng.normal(size=d)
    _, u, sup = prob.oracle(jnp.asarray(w), S, jnp.asarray(p), prob.scores(jnp.asarray(p)))
    m = 1 - y * (X @ w)
    E = m > 1e-9
    best = -np.inf
    for bits in itertools.product([0.0, 1.0], repeat=len(margin_idx)):
        beta = E.astype(float)
        beta[margin_idx] = bits
        g = lam * w - X.T @ (beta * y) / n
        best = max(best, g @ p)
    assert float(sup) == pytest.approx(best, rel=1e-12)
    g_orac = lam * w + X.T @ np.asarray(u)
    assert float(g_orac @ p) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_direction_finding_success_means_descent(seed):
    rng = np.random.default_rng(seed)
    n, d, lam = 15, 3, 0.05
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1, -1]
    w = rng.normal(size=d)
    X[:5] *= (1.0 / (y[:5] * (X[:5] @ w)))[:, None]  # five examples on their hinges
    prob = nsjax.Problem(HINGE, L2(lam), X, y)
    wj = jnp.asarray(w)
    S = prob.scores(wj)
    g, u, g_reg = prob.subgradient(wj, S)
    memory = LBFGSMemory(5)
    d_ = find_direction(prob, memory, memory.init(wj), wj, S, g, u, g_reg, 1e-10, 200)
    p = np.asarray(d_.p)
    m = 1 - y * (X @ w)
    E = m > 1e-9
    sup = -np.inf
    for bits in itertools.product([0.0, 1.0], repeat=5):
        beta = E.astype(float)
        beta[:5] = bits
        sup = max(sup, (lam * w - X.T @ (beta * y) / n) @ p)
    if bool(d_.ok):
        assert sup < 0
    assert float(d_.sup) == pytest.approx(sup, rel=1e-9, abs=1e-14)


def test_dual_value_is_a_lower_bound():
    X, y, lam = random_binary(4, 60, 8)
    J_star, _ = cvxpy_optimum(X, y, lam)
    prob = nsjax.Problem(HINGE, L2(lam), X, y)
    rng = np.random.default_rng(0)
    for _ in range(10):
        beta = rng.random(60)
        u = jnp.asarray(-beta * np.asarray(prob.y) / 60)
        assert float(prob.dual_value(u)) <= J_star + 1e-10
    # The logistic conjugate obeys Fenchel–Young with equality at u = ∇R(S), which is what
    # dual_value uses for losses without a conjugate: R*(u) = ⟨u, S⟩ − R(S).
    logistic = nsjax.Problem(nsjax.losses.Logistic(), L2(lam), X, y)
    J_log, _ = cvxpy_optimum(X, y, lam, loss="logistic")
    S = logistic.scores(jnp.asarray(rng.normal(size=8)))
    u = logistic.loss.dscores(S, logistic.y)
    fenchel_young = float(jnp.vdot(u, S) - logistic.loss.risk(S, logistic.y))
    assert float(logistic.loss.conjugate(u, logistic.y)) == pytest.approx(fenchel_young, rel=1e-10)
    assert float(logistic.dual_value(u)) <= J_log + 1e-10
    with pytest.raises(ValueError, match="scores S"):
        nsjax.Problem(nsjax.losses.MaxAffine(np.ones((60, 2))), L2(lam), X).dual_value(u)


def test_design_matrix_products_agree():
    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.2, random_state=0, format="csr")
    w, a = rng.normal(size=12), rng.normal(size=30)
    from jax.experimental import sparse as jsparse

    for form in (X, X.tocsc(), X.toarray(), jsparse.BCOO.fromdense(X.toarray())):
        D = nsjax.DesignMatrix.from_any(form)
        np.testing.assert_allclose(np.asarray(D.mv(jnp.asarray(w))), X @ w, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(D.rmv(jnp.asarray(a))), X.T @ a, rtol=1e-12)
        A = rng.normal(size=(30, 3))  # multiclass scores: Xᵀ of each column
        np.testing.assert_allclose(np.asarray(D.rmv(jnp.asarray(A))), X.T @ A, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(D.row_sq_norms()),
                                   np.asarray(X.multiply(X).sum(1)).ravel(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(D.sq_rmv(jnp.asarray(a))),
                                   X.multiply(X).T @ a, rtol=1e-12)
    D32 = nsjax.DesignMatrix.from_any(X, np.float32)
    assert D32.mv(jnp.asarray(w, jnp.float32)).dtype == jnp.float32


@pytest.fixture(params=[False, True], ids=["chunks", "gpu_layout"])
def gpu_layout(request, monkeypatch):
    """Sparse X laid out as on a CPU (chunks only) and as on a GPU (rows with a dense head,
    columns in `Buckets`)."""
    monkeypatch.setattr(nsjax.data, "ROW_HEAD", request.param)
    monkeypatch.setattr(nsjax.data, "COL_BUCKETS", request.param)
    return request.param


def test_a_product_gathers_from_its_vector_computed_once():
    """Xᵀu with u computed from the scores (the hinge's cut): on CPUs XLA must not fuse
    u's arithmetic into the gather (two gathers and the margins per nonzero, not one),
    and the product equals scipy's."""
    M = sp.random(4000, 300, density=0.05, format="csr", random_state=0)
    rng = np.random.default_rng(0)
    S, y = rng.standard_normal(4000), rng.choice([-1.0, 1.0], 4000)
    cpu = jax.devices("cpu")[0]
    X = jax.device_put(nsjax.DesignMatrix.from_any(M, dtype=np.float64), cpu)
    S_, y_ = jax.device_put(S, cpu), jax.device_put(y, cpu)

    def product(X, S, y):
        return X.rmv(jnp.maximum(0.0, 1.0 - y * S))

    np.testing.assert_allclose(jax.jit(product)(X, S_, y_), M.T @ np.maximum(0, 1 - y * S),
                               rtol=1e-12, atol=1e-12)
    hlo = jax.jit(product).lower(X, S_, y_).compile().as_text()
    gathers = [line for line in hlo.splitlines() if "by_col_index" in line and " fusion(" in line]
    assert gathers and not any("%S" in line or "%y" in line for line in gathers)


@pytest.mark.parametrize("shape, density", [((40, 7), 0.9), ((300, 50), 0.02), ((5, 400), 0.3),
                                            ((3, 70_000), 1e-3)])
def test_chunked_sparse_products_match_scipy(shape, density, gpu_layout):
    # Row and column lengths that span several chunk widths, empty rows and columns,
    # duplicate and explicitly zero entries, and (d, K) weights.
    rng = np.random.default_rng(1)
    X = sp.random(*shape, density=density, random_state=2, format="coo")
    dup = sp.coo_matrix((np.r_[X.data, 1.5, 0.0], (np.r_[X.row, 0, 1], np.r_[X.col, 0, 2])),
                        shape=shape)
    X = dup.tocsr()  # sums the duplicate, keeps the explicit zero until from_any drops it
    D = nsjax.DesignMatrix.from_any(dup)
    assert D.nnz == X.count_nonzero()
    products = jax.jit(lambda D, w, a: (D.mv(w), D.rmv(a)))
    for K in (None, 3):
        wshape = (shape[1],) if K is None else (shape[1], K)
        ashape = (shape[0],) if K is None else (shape[0], K)
        w, a = rng.normal(size=wshape), rng.normal(size=ashape)
        Xw, Xta = products(D, jnp.asarray(w), jnp.asarray(a))
        np.testing.assert_allclose(np.asarray(Xw), X @ w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.asarray(Xta), X.T @ a, rtol=1e-12, atol=1e-14)
    assert (D.to_scipy() != X).nnz == 0
    assert (D.by_row.head_value is not None) == (gpu_layout and nsjax.data.head_width(
        np.diff(X.indptr)) > 0)
    assert isinstance(D.by_col, nsjax.data.Buckets if gpu_layout else nsjax.data.Chunks)
    col_index = D.by_col.index[0] if gpu_layout else D.by_col.index
    # 16-bit indices only where they fit.
    assert D.by_row.index.dtype == (jnp.uint16 if shape[1] <= 1 << 16 else jnp.int32)
    assert col_index.dtype == (jnp.uint16 if shape[0] <= 1 << 16 else jnp.int32)


def test_nearby_sparse_matrices_share_one_compiled_solve():
    # Three 300 x 40 matrices of density 0.1 (cross-validation folds, say): their layouts
    # need 409-412 chunks by row and 91-93 by column, rounded up to 416 and 96 (all-zero
    # chunks of the last row), and nnz is no part of the program, so they compile once.
    from nsjax.data import chunk_width

    solver = nsjax.solvers.BMRM(capacity=16)
    raw, compiled = set(), None
    for seed in (1, 3, 5):
        X = sp.random(300, 40, density=0.1, random_state=seed, format="csr")
        y = np.where(X @ np.linspace(-1, 1, 40) > 0, 1, -1)
        prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.01), X, y)
        for M, part in ((X, prob.X.by_row), (X.T.tocsr(), prob.X.by_col)):
            counts = np.diff(M.indptr)
            raw.add(int(np.sum(-(-counts // chunk_width(counts)))))
            assert part.owner.shape[0] in (416, 96)
        assert prob.X.nnz == X.nnz
        sol = nsjax.solve(prob, solver, tol=1e-8)
        J = 0.005 * float(sol.w @ sol.w) + np.mean(np.maximum(0, 1 - y * (X @ np.asarray(sol.w))))
        assert float(sol.value) == pytest.approx(J, rel=1e-12)
        if compiled is None:
            compiled = compiled_programs("solve")
    assert len(raw) == 6  # the rounding, not chance, gave one layout
    assert compiled_programs("solve") == compiled


def test_design_matrix_without_entries():
    D = nsjax.DesignMatrix.from_any(sp.csr_matrix((4, 3)))
    np.testing.assert_array_equal(np.asarray(D.mv(jnp.ones(3))), np.zeros(4))
    np.testing.assert_array_equal(np.asarray(D.rmv(jnp.ones(4))), np.zeros(3))
    D = nsjax.DesignMatrix.from_any(sp.csr_matrix((3, 0)))
    np.testing.assert_array_equal(np.asarray(D.mv(jnp.zeros(0))), np.zeros(3))
    assert D.rmv(jnp.ones(3)).shape == (0,)


def test_padding_keeps_non_finite_weights_in_their_rows(gpu_layout):
    # Row 0 uses column 0, rows 1-5 use columns 1-3 only, row 5 only 1-2 (and are padded,
    # in the chunks and in the head): an infinite w[0] must make row 0 infinite and leave
    # the others finite, as scipy's product does. The same for Xᵀa with an infinite a[0]
    # (the columns' blocks are padded too: column 0 has 1 entry, columns 1-3 have 5-6).
    X = np.zeros((6, 8))
    X[:, 1:4] = 1.0
    X[0, 0] = 1.0
    X[5, 3] = 0.0
    D = nsjax.DesignMatrix.from_any(sp.csr_matrix(X))
    assert (D.by_row.head_value is not None) == gpu_layout
    w = np.ones(8)
    w[0] = np.inf
    expected = sp.csr_matrix(X) @ w
    assert np.isinf(expected[0]) and np.all(np.isfinite(expected[1:]))
    np.testing.assert_array_equal(np.asarray(D.mv(jnp.asarray(w))), expected)
    a = np.ones(6)
    a[5] = np.inf  # row 5 holds columns 1 and 2 only
    expected = sp.csr_matrix(X).T @ a
    assert np.all(np.isinf(expected[1:3])) and np.all(np.isfinite(expected[[0, 3]]))
    np.testing.assert_array_equal(np.asarray(D.rmv(jnp.asarray(a))), expected)


def test_head_width_is_the_widest_head_within_its_padding_limit():
    # Brute force over every L of the rule in head_width's docstring, on row lengths of
    # several shapes: equal, Poisson, power-law (a head would hold too little), empty.
    from nsjax.data import HEAD_PADDING, head_width

    rng = np.random.default_rng(0)
    cases = [np.full(50, 7), rng.poisson(50, 1000), np.minimum(
        (rng.pareto(0.8, 1000) + 1).astype(int), 10_000), np.zeros(5, int), np.array([0, 3]),
        np.array([], int)]
    for counts in cases:
        total = counts.sum()
        ok = [L for L in range(1, int(counts.max(initial=0)) + 1)
              if counts.size * L <= (1 + HEAD_PADDING) * np.minimum(counts, L).sum()]
        expected = max(ok, default=0)
        if expected and np.minimum(counts, expected).sum() < 0.5 * total:
            expected = 0
        assert head_width(counts) == expected
    assert head_width(np.full(50, 7)) == 7
    assert head_width(cases[2]) == 0  # power-law lengths: no head


def test_the_gpu_layout_is_used_on_gpus_only_by_default(monkeypatch):
    X = sp.random(60, 20, density=0.3, random_state=0, format="csr")
    assert nsjax.data.ROW_HEAD == nsjax.data.COL_BUCKETS == "auto"
    D = nsjax.DesignMatrix.from_any(X)  # a CPU here
    assert D.by_row.head_value is None and isinstance(D.by_col, nsjax.data.Chunks)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    D = nsjax.DesignMatrix.from_any(X)
    L = nsjax.data.head_width(np.diff(X.indptr))
    assert L > 0 and D.by_row.head_value.shape == (60, L)
    # Columns in buckets from BUCKETS_MIN_NNZ entries on (small layouts keep rounded chunks).
    assert isinstance(D.by_col, nsjax.data.Chunks) and X.nnz < nsjax.data.BUCKETS_MIN_NNZ
    monkeypatch.setattr(nsjax.data, "BUCKETS_MIN_NNZ", X.nnz)
    D = nsjax.DesignMatrix.from_any(X)
    assert isinstance(D.by_col, nsjax.data.Buckets)
    assert D.nnz == X.nnz
    D.check_layout()
    hand_built = nsjax.DesignMatrix(None, dataclasses.replace(D.by_row, head_value=None),
                                    D.by_col, D.shape)
    with pytest.raises(ValueError, match="head must be None or"):
        hand_built.check_layout()
    bad_index = nsjax.DesignMatrix(None, dataclasses.replace(
        D.by_row, head_index=D.by_row.head_index + 100), D.by_col, D.shape)
    with pytest.raises(ValueError, match="head_index holds indices outside"):
        bad_index.check_layout()
    cols = D.by_col
    for bad, match in [
        (dataclasses.replace(cols, index=(cols.index[0] + 100,) + cols.index[1:]),
         "by_col.index holds indices outside"),
        (dataclasses.replace(cols, order=jnp.zeros_like(cols.order)),
         "order must place each of the blocks"),
        (dataclasses.replace(cols, value=cols.value[1:]), "does not fit a 20 x 60 matrix"),
        (dataclasses.replace(cols, value=(cols.value[0][::-1],) + cols.value[1:]),
         "hold different matrices")]:
        with pytest.raises(ValueError, match=match):
            nsjax.DesignMatrix(None, D.by_row, bad, D.shape).check_layout()


def test_buckets_group_rows_by_length():
    # Row lengths from 0 to 300 (power-law-like, empty rows between): each row in the
    # block of its ⌊log₂ length⌋, as wide as that group's longest row, rows placed once;
    # products against scipy's, in float64 and float32.
    from nsjax.data import Buckets

    rng = np.random.default_rng(3)
    lengths = np.minimum((rng.pareto(0.9, 200)).astype(int), 300)
    rows = np.repeat(np.arange(200), lengths)
    cols = np.concatenate([rng.choice(400, k, replace=False) for k in lengths])
    M = sp.csr_matrix((rng.normal(size=rows.size), (rows, cols)), shape=(200, 400))
    B = Buckets.from_csr(M, np.float64)
    products = jax.jit(lambda B, v, V: (B.mv(v), B.mv(V), B.sq_mv(v), B.row_sq_norms(),
                                        B.count_nonzero()))
    groups = np.unique(np.floor(np.log2(lengths[lengths > 0])).astype(int))
    assert len(B.index) == groups.size > 3
    order = np.asarray(B.order)
    start = 0
    for g, idx in zip(groups, B.index, strict=True):
        members = np.flatnonzero((lengths > 0) & (np.floor(np.log2(np.maximum(lengths, 1)))
                                                  == g))
        assert idx.shape == (members.size, lengths[members].max())
        np.testing.assert_array_equal(order[members], start + np.arange(members.size))
        start += members.size
    assert np.all(order[lengths == 0] == start)
    assert (B.to_csr(400) != M).nnz == 0
    v, V = rng.normal(size=400), rng.normal(size=(400, 2))
    Mv, MV, sq, norms, nnz = products(B, jnp.asarray(v), jnp.asarray(V))
    np.testing.assert_allclose(np.asarray(Mv), M @ v, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(MV), M @ V, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(sq), M.multiply(M) @ v, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(norms), np.asarray(M.multiply(M).sum(1)).ravel(),
                               rtol=1e-12)
    assert int(nnz) == M.nnz
    B32 = Buckets.from_csr(M, np.float32)
    out = jax.jit(Buckets.mv)(B32, jnp.asarray(v, jnp.float32))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(out), M @ v, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["hinge-float32", "l1_logistic-float64"])
def test_the_gpu_layout_gives_the_same_solutions(monkeypatch, case):
    # The GPU's layout (rows with a head, columns in buckets), run on the CPU: the default
    # solvers of a sparse hinge problem in float32 (the GPU's dtype; the Hybrid: subLBFGS,
    # then BMRM, here with the GPU's paths too: the compact B v and the multisection) and of
    # an L1 logistic one in float64 (OBA, which also uses (X∘X)ᵀa) reach the solution of the
    # chunks-only layout: the sums are the same up to their order (1e-10 in float64, 1e-4
    # in float32).
    X, y = nsjax.datasets.synthetic_sparse(400, 60, 0.1, seed=4)
    loss, reg, dtype, tol, rtol = {
        "hinge-float32": (nsjax.losses.Hinge(), L2(1e-3), np.float32, 1e-5, 1e-4),
        "l1_logistic-float64": (nsjax.losses.Logistic(), nsjax.regularizers.L1(1e-2),
                                np.float64, 1e-9, 1e-10)}[case]
    sols = []
    for gpu in (False, True):
        monkeypatch.setattr(nsjax.data, "ROW_HEAD", gpu)
        monkeypatch.setattr(nsjax.data, "COL_BUCKETS", gpu)
        prob = nsjax.Problem(loss, reg, X, y, dtype=dtype)
        assert (prob.X.by_row.head_value is not None) == gpu
        assert isinstance(prob.X.by_col, nsjax.data.Buckets) == gpu
        solver = nsjax.solvers.Hybrid(sublbfgs=nsjax.solvers.SubLBFGS(
            memory=nsjax.solvers.LBFGSMemory(15, form="compact"),
            line_search=nsjax.solvers.ExactLineSearch("multisect")))
        sols.append(nsjax.solve(prob, solver if gpu and dtype == np.float32 else None,
                                tol=tol))
    a, b = sols
    assert a.result == b.result == nsjax.RESULTS.successful, (a.result, b.result)
    assert float(b.value) == pytest.approx(float(a.value), rel=rtol)


def test_band_certificate_is_a_lower_bound_and_tight_near_the_optimum():
    from nsjax.testing import hinge_dual_certificate

    X, y, lam = random_binary(6, 80, 6)
    J_star, w_star = cvxpy_optimum(X, y, lam)
    prob = nsjax.Problem(HINGE, L2(lam), X, y)
    rng = np.random.default_rng(1)
    for scale in (1.0, 1e-2, 1e-5, 0.0):
        w = jnp.asarray(w_star + scale * rng.normal(size=6))
        D, products = hinge_dual_certificate(prob, w, prob.scores(w))
        assert float(D) <= J_star + 1e-10
        assert int(products) >= 4 * 3
    # At (cvxpy's) optimum the band fit recovers the dual optimum to cvxpy's accuracy.
    assert J_star - float(D) <= 1e-7
