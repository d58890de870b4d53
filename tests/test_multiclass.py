"""Multiclass / multilabel hinge: envelope kinks (Alg. 4's task), exact line search
(Alg. 5), oracles (eqs. 41, 53) and optima, against brute force, cvxpy and LIBLINEAR's
Crammer–Singer."""

import functools
import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import (
    cvxpy_multiclass_optimum,
    cvxpy_multilabel_optimum,
    random_multiclass,
    random_multilabel,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC
from test_line_search import search_all

import nsjax
from nsjax.testing import envelope_kinks

MC, ML, L2 = nsjax.losses.MulticlassHinge, nsjax.losses.MultilabelHinge, nsjax.regularizers.L2
ENVELOPE = jax.jit(envelope_kinks)


# --- envelope ----------------------------------------------------------------------------

def _random_lines(rng, r, kind):
    a = rng.integers(-4, 5, size=r).astype(float)
    b = rng.integers(-4, 5, size=r).astype(float)
    if kind == "ties_at_L":
        b[:] = 0.0
    elif kind == "parallel":
        a[: r // 2] = a[0]
    elif kind == "coincident":
        a[r // 2 :], b[r // 2 :] = a[0], b[0]
    elif kind == "real":
        a, b = rng.normal(size=r), rng.normal(size=r)
    return b, a


def _top(b, a, x):
    return np.max(b[None, :] + np.asarray(x)[:, None] * a[None, :], axis=1)


def _side_slope(b, a, pick, fill, x):
    """max (right derivative) or min (left) slope among the lines maximal at each x."""
    vals = b[None, :] + np.asarray(x)[:, None] * a[None, :]
    active = np.isclose(vals, _top(b, a, x)[:, None], rtol=0.0, atol=1e-12)
    return pick(np.where(active, a[None, :], fill), axis=1)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["ties_at_L", "parallel", "coincident", "real", "ints"])
def test_envelope_equals_brute_force(kind, seed):
    rng = np.random.default_rng(seed)
    # 40, 150 or 70 examples: one block of the walk's layout (`envelope.BLOCK` = 64) or
    # several, the last one padded.
    n = (40, 150, 70)[seed]
    sets = [_random_lines(rng, int(rng.integers(1, 31)), kind) for _ in range(n)]
    # Padded to 30 lines with masked ones (offset −inf): one call, masks tested.
    B = np.full((n, 30), -np.inf)
    A = np.zeros((n, 30))
    for i, (b, a) in enumerate(sets):
        B[i, : b.size], A[i, : a.size] = b, a
    eta, jump, rows = ENVELOPE(jnp.asarray(B), jnp.asarray(A))
    # The walk stops one step after the most kinked example's last kink.
    most = int(np.max(np.sum(np.isfinite(np.asarray(eta)), axis=0)))
    assert most <= int(rows) <= most + 1
    eta, jump = np.asarray(eta).T, np.asarray(jump).T  # (examples, kinks)
    for i, (b, a) in enumerate(sets):
        c = int(np.sum(np.isfinite(eta[i])))
        assert np.all(np.isinf(eta[i, c:])) and np.all(jump[i, c:] == 0.0)
        # Brute force: every kink of the max is a pairwise crossing where the maximum
        # changes slope; find them on the set of all crossings.
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = (b[None, :] - b[:, None]) / (a[:, None] - a[None, :])
        cand = np.unique(cross[np.isfinite(cross) & (cross > 0)])
        top = functools.partial(_top, b, a)
        right = functools.partial(_side_slope, b, a, np.max, -np.inf)
        left = functools.partial(_side_slope, b, a, np.min, np.inf)
        true_kinks = cand[right(cand) > left(cand) + 1e-12] if cand.size else cand
        np.testing.assert_allclose(eta[i, :c], true_kinks, rtol=1e-12)
        if c:
            np.testing.assert_allclose(jump[i, :c], right(true_kinks) - left(true_kinks),
                                       atol=1e-12)
        # The max rebuilt from its value and right slope at 0 and the kinks' jumps is the
        # brute-force max everywhere (the slope at 0⁺ is that of the steepest line there).
        grid = np.linspace(0.0, (eta[i, c - 1] if c else 0.0) + 3.0, 500)
        slope = right(np.zeros(1))[0] + np.concatenate(
            [[0.0], np.cumsum(jump[i, :c])])[np.searchsorted(eta[i, :c], grid, side="right")]
        knots = np.concatenate([[0.0], eta[i, :c]])
        values = top(knots)
        seg = np.searchsorted(knots, grid, side="right") - 1
        np.testing.assert_allclose(values[seg] + (grid - knots[seg]) * slope, top(grid),
                                   atol=1e-9)


# --- exact line search ---------------------------------------------------------------------

def _phi(eta, b, a, c_reg, h):
    return c_reg * eta + 0.5 * h * eta**2 + np.sum(np.max(b + eta * a, axis=1))


def _brute_line_search(b, a, c_reg, h):
    """Minimize Φ over η ≥ 0 by enumerating 0, every pairwise crossing, and the stationary
    point of each quadratic piece between consecutive candidates."""
    fin = np.isfinite(b)
    cands = [0.0]
    for i in range(b.shape[0]):
        bi, ai = b[i][fin[i]], a[i][fin[i]]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = (bi[None, :] - bi[:, None]) / (ai[:, None] - ai[None, :])
        cands += list(x[np.isfinite(x) & (x > 0)].ravel())
    cands = np.unique(cands)
    edges = np.concatenate([cands, [cands[-1] + 1e6]])
    best = list(cands)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mid = 0.5 * (lo + hi)
        v = np.where(fin, b + mid * a, -np.inf)
        act = np.argmax(v, axis=1)
        slope = c_reg + np.sum(a[np.arange(len(a)), act])
        root = -slope / h
        if lo <= root <= hi:
            best.append(root)
    vals = [_phi(e, np.where(fin, b, -np.inf), a, c_reg, h) for e in best]
    return best[int(np.argmin(vals))]






@pytest.mark.parametrize("kind", ["multiclass", "multiclass-slack", "multilabel"])
@pytest.mark.parametrize("seed", range(8))
def test_exact_line_search_equals_brute_force(kind, seed):
    rng = np.random.default_rng(seed)
    n, d, K = 25, 4, 4
    if kind == "multilabel":
        X, y = random_multilabel(rng, n, d, K)
        loss = ML()
    else:
        X, y = random_multiclass(rng, n, d, K)
        D = rng.uniform(0.5, 2.0, size=(K, K)) * (1 - np.eye(K))
        loss = MC(delta=D, rescaling="slack" if kind.endswith("slack") else "margin")
    prob = nsjax.Problem(loss, L2(0.05), X, y)
    W, P = jnp.asarray(rng.normal(size=(d, K))), jnp.asarray(rng.normal(size=(d, K)))
    S, dS = prob.scores(W), prob.scores(P)
    b, a, c_reg, h = prob.line(W, S, P, dS)
    c0 = float(c_reg) + float(np.sum(np.max(np.where(
        np.asarray(b) == np.max(np.asarray(b), 1, keepdims=True), np.asarray(a), -np.inf), 1)))
    if c0 >= 0:
        P, dS = -P, -dS  # make it a descent direction
        b, a, c_reg, h = prob.line(W, S, P, dS)
    by_bracket = search_all(b, a, c_reg, h)
    eta_bf = _brute_line_search(np.asarray(b), np.asarray(a), float(c_reg), float(h))
    for res in by_bracket:
        assert float(res.eta) == pytest.approx(eta_bf, rel=1e-10, abs=1e-12)
    # And Φ from the loss itself agrees at η*: the lines are the loss along the line.
    eta = float(by_bracket[0].eta)
    direct = float(prob.value(W + eta * P, S + eta * dS)) - float(prob.reg.value(W))
    lines_val = _phi(eta, np.asarray(b), np.asarray(a), float(c_reg), float(h))
    assert direct == pytest.approx(lines_val, rel=1e-10, abs=1e-12)


# --- oracles -------------------------------------------------------------------------------

def _pieces(prob, S, kind):
    """Each example's affine pieces in the scores, as the losses' docstrings define them:
    their values at S, (n, P), and their gradients times 1/n, (n, P, K). Multiclass: one
    piece per label z, Δ(z, y_i) + S_z − S_{y_i} with gradient e_z − e_{y_i} (margin
    rescaling), or Δ(z, y_i) (1 + S_z − S_{y_i}) with Δ(z, y_i) (e_z − e_{y_i}) (slack).
    Multilabel: one per pair (z, z'), z·K + z', Δ(z', z) + S_z' − S_z with gradient
    e_z' − e_z for z ∈ Z_i and z' ∉ Z_i or z' = z, −inf for the other pairs."""
    S = np.asarray(S)
    n, K = S.shape
    E = np.eye(K)
    if kind == "multilabel":
        Y = np.asarray(prob.y).astype(bool)
        D = 1.0 - E if prob.loss.delta is None else np.asarray(prob.loss.delta)
        v = D.T[None] + S[:, None, :] - S[:, :, None]  # [i, z, z'] = Δ(z', z) + S_z' − S_z
        valid = Y[:, :, None] & (~Y[:, None, :] | E.astype(bool)[None])
        values = np.where(valid, v, -np.inf).reshape(n, K * K)
        grads = np.broadcast_to((E[None, :, :] - E[:, None, :]).reshape(K * K, K) / n,
                                (n, K * K, K))
        return values, grads
    y = np.asarray(prob.y)
    onehot = E[y]
    D = 1.0 - onehot if prob.loss.delta is None else np.asarray(prob.loss.delta)[:, y].T
    diff = S - S[np.arange(n), y][:, None]
    margin = prob.loss.rescaling == "margin"
    values = D + diff if margin else D * (1.0 + diff)
    coef = np.ones_like(D) if margin else D
    return values, coef[:, :, None] * (E[None] - onehot[:, None, :]) / n


def _vertex_sup(prob, W, P, vertices_per_example):
    """sup gᵀP over ∂J by enumerating the vertices of each example's subdifferential."""
    best = -np.inf
    for choice in itertools.product(*vertices_per_example):
        u = np.sum(choice, axis=0)
        g = float(prob.lam) * np.asarray(W) + np.asarray(prob.X.rmv(jnp.asarray(u)))
        best = max(best, float(np.sum(g * np.asarray(P))))
    return best


@pytest.mark.parametrize("kind", ["multiclass", "multiclass-slack", "multilabel"])
@pytest.mark.parametrize("seed", range(4))
def test_oracle_attains_sup_and_is_a_subgradient(kind, seed):
    rng = np.random.default_rng(seed)
    n, d, K = 6, 3, 3
    if kind.startswith("multiclass"):
        X, y = random_multiclass(rng, n, d, K, integer=True)
        # Slack rescaling with label losses of 1 and 2 (integers keep the ties frequent).
        loss = (MC(delta=rng.integers(1, 3, size=(K, K)) * (1 - np.eye(K)), rescaling="slack")
                if kind.endswith("slack") else MC())
        prob = nsjax.Problem(loss, L2(0.1), X, y)
    else:
        X, y = random_multilabel(rng, n, d, K, integer=True)
        prob = nsjax.Problem(ML(), L2(0.1), X, y)
    # Integer data and weights make ties (several worst labels) frequent.
    W = jnp.asarray(rng.integers(-1, 2, size=(d, K)).astype(float))
    P = jnp.asarray(rng.normal(size=(d, K)))
    S, dS = prob.scores(W), prob.scores(P)
    _, u, sup = prob.oracle(W, S, P, dS)
    # Vertices of ∂R: per example, one-hot choices among its worst labels / pairs.
    values, grads = _pieces(prob, S, kind)
    verts = []
    for i in range(n):
        worst = np.flatnonzero(np.isclose(values[i], values[i].max(), rtol=0.0, atol=1e-12))
        opts = []
        for j in worst:
            vertex = np.zeros((n, K))
            vertex[i] = grads[i, j]
            opts.append(vertex)
        verts.append(opts)
    assert float(sup) == pytest.approx(_vertex_sup(prob, W, P, verts), rel=1e-12, abs=1e-12)
    g = float(prob.lam) * np.asarray(W) + np.asarray(prob.X.rmv(u))
    J = float(prob.value(W, S))
    for _ in range(20):
        V = jnp.asarray(np.asarray(W) + rng.normal(size=(d, K)))
        assert float(prob.value(V, prob.scores(V))) >= J + float(
            np.sum(g * (np.asarray(V) - np.asarray(W)))) - 1e-10


# --- optima --------------------------------------------------------------------------------





SOLVERS = {
    "subLBFGS": nsjax.solvers.SubLBFGS(memory=256, scaling=False),
    "qp-BMRM": nsjax.solvers.BMRM(),
    "ls-BMRM-exact": nsjax.solvers.BMRM(line_search="exact"),
}


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("kind", ["multiclass", "multilabel"])
@pytest.mark.parametrize("seed", range(2))
def test_solvers_reach_cvxpy_optimum(name, kind, seed):
    rng = np.random.default_rng(100 + seed)
    lam = 0.05
    if kind == "multiclass":
        X, y = random_multiclass(rng, 60, 5, 4)
        J_star = cvxpy_multiclass_optimum(X, y, lam, 4)
        prob = nsjax.Problem(MC(), L2(lam), X, y)
    else:
        X, y = random_multilabel(rng, 40, 5, 4)
        J_star = cvxpy_multilabel_optimum(X, y.astype(bool), lam)
        prob = nsjax.Problem(ML(), L2(lam), X, [list(np.flatnonzero(r)) for r in y])
    sol = nsjax.solve(prob, SOLVERS[name], max_steps=3000, tol=1e-10)
    assert abs(float(sol.value) - J_star) <= 1e-6 * J_star
    assert float(sol.gap) >= float(sol.value) - J_star - 1e-9
    assert sol.w.shape == (X.shape[1], 4)


def test_digits_matches_liblinear_crammer_singer():
    X, y = nsjax.datasets.digits()
    n, lam = X.shape[0], 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=1.0 / (lam * n),
                        tol=1e-8, max_iter=100_000).fit(X, y)
    prob = nsjax.Problem(MC(), L2(lam), X, y)
    W_lib = jnp.asarray(svc.coef_.T)
    J_lib = float(prob.value(W_lib, prob.scores(W_lib)))
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=1000, tol=1e-8)
    assert abs(float(sol.value) - J_lib) <= 1e-5 * J_lib
    assert float(sol.gap) >= float(sol.value) - J_lib - 1e-9  # LIBLINEAR's J bounds J* above


# --- labels and data ----------------------------------------------------------------------

def test_label_formats_agree():
    rng = np.random.default_rng(0)
    X, Y = random_multilabel(rng, 20, 3, 4)
    import scipy.sparse as sp

    lists = [list(np.flatnonzero(r)) for r in Y]
    a = nsjax.Problem(ML(), L2(0.1), X, Y)
    b = nsjax.Problem(ML(), L2(0.1), X, lists)
    c = nsjax.Problem(ML(), L2(0.1), X, sp.csr_matrix(Y))
    for other in (b, c):
        np.testing.assert_array_equal(np.asarray(a.y), np.asarray(other.y))
    with pytest.raises(ValueError, match="no label"):
        nsjax.Problem(ML(), L2(0.1), X, np.zeros_like(Y))
    with pytest.raises(ValueError, match="delta"):
        nsjax.Problem(MC(delta=np.ones((4, 4))), L2(0.1), X, np.arange(20) % 4)
    with pytest.raises(ValueError, match="SubBFGS"):
        nsjax.solve(nsjax.Problem(MC(), L2(0.1), X, np.arange(20) % 4), nsjax.solvers.SubBFGS())
    mc = nsjax.Problem(MC(), L2(0.1), X, np.array(["b", "a", "c", "a"] * 5))
    assert mc.classes == ("a", "b", "c") and mc.w_shape == (3, 3)


def test_multiclass_datasets():
    X, y = nsjax.datasets.iris()
    assert X.shape == (150, 4) and set(np.unique(y)) == {0, 1, 2}
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    Xs, ys = nsjax.datasets.synthetic_sparse(2000, 300, 0.02, n_classes=5, seed=1)
    assert Xs.shape == (2000, 300) and set(np.unique(ys)) == set(range(5))
    assert np.bincount(ys).min() >= 100  # no class starved
    Xm, labels = nsjax.datasets.synthetic_multilabel(400, 30, 6, seed=2)
    sizes = np.array([len(z) for z in labels])
    assert sizes.min() == 1 and sizes.max() == 3 and len(set(sizes)) == 3
    Xm2, labels2 = nsjax.datasets.synthetic_multilabel(400, 30, 6, seed=2)
    assert labels == labels2 and np.array_equal(Xm, Xm2)
    Xsp, _ = nsjax.datasets.synthetic_multilabel(100, 50, 4, density=0.1, seed=0)
    assert Xsp.nnz == round(100 * 50 * 0.1)


def test_multiclass_sweep_and_float32():
    rng = np.random.default_rng(7)
    X, y = random_multiclass(rng, 40, 4, 3)
    prob = nsjax.Problem(MC(), L2(0.1), X, y)
    solver = nsjax.solvers.BMRM()
    sols = nsjax.sweep(prob, [0.1, 0.01], solver, max_steps=300, tol=1e-9)
    for i, lam in enumerate([0.1, 0.01]):
        one = nsjax.solve(prob.with_strength(lam), solver, max_steps=300, tol=1e-9)
        slack = float(one.gap) + float(sols.gap[i]) + 1e-12
        assert abs(float(sols.value[i]) - float(one.value)) <= slack <= 1e-8
    p32 = nsjax.Problem(MC(), L2(0.1), X, y, dtype=np.float32)
    s32 = nsjax.solve(p32, nsjax.solvers.SubLBFGS(), max_steps=200, tol=1e-4)
    assert s32.w.dtype == jnp.float32 and s32.w.shape == (4, 3)
    assert abs(float(s32.value) - float(sols.value[0])) <= 1e-3 * float(sols.value[0])


@pytest.mark.parametrize("K", [1, 2, 26, 64, 65])
def test_row_argmax_is_the_first_maximum_of_each_row(K):
    # The oracles' argmax (by columns on CPUs up to 64 columns, jnp.argmax beyond): the
    # first index of each row's maximum, with many ties and rows of -inf.
    from nsjax.losses.base import row_argmax

    rng = np.random.default_rng(K)
    x = rng.integers(-2, 3, size=(300, K)).astype(float)
    x[rng.random(x.shape) < 0.3] = -np.inf
    x[:5] = -np.inf
    got = np.asarray(jax.jit(row_argmax)(jnp.asarray(x)))
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))
    # As lowered for a GPU (no GPU needed to lower) it is jnp.argmax, a reduction; on CPUs
    # the column comparisons, no reduction, up to 64 columns.
    traced = jax.jit(row_argmax).trace(jnp.asarray(x))
    for platform, reduces in (("cuda", True), ("cpu", K > 64)):
        program = traced.lower(lowering_platforms=(platform,)).as_text()
        assert ("stablehlo.reduce" in program) == reduces, platform
