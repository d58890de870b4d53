"""Tests for nsjax.datasets."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from nsjax.datasets import (
    breast_cancer,
    diagonal_dominance,
    digits,
    digits_binary,
    load_svmlight,
    logistic_hessian_dominance,
    oba_synthetic,
    relative_function_error,
    synthetic_sparse,
)
from nsjax.testing import smallest_eigenvalue

# ----------------------------------------------------------------------------------------
# Bundled sets
# ----------------------------------------------------------------------------------------


def test_breast_cancer_shapes_dtypes_and_labels():
    X, y = breast_cancer()
    assert X.shape == (569, 30)
    assert X.dtype == np.float64
    assert y.shape == (569,)
    assert np.issubdtype(y.dtype, np.integer)
    assert set(np.unique(y).tolist()) == {0, 1}
    # Original labels: 212 malignant (0), 357 benign (1).
    assert np.count_nonzero(y == 0) == 212


def test_breast_cancer_columns_standardized():
    X, _ = breast_cancer()
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X.std(axis=0), 1.0, rtol=1e-10)


def test_digits_shapes_dtypes_and_range():
    X, y = digits()
    assert X.shape == (1797, 64)
    assert X.dtype == np.float64
    assert X.min() == 0.0 and X.max() == 1.0
    assert y.shape == (1797,)
    assert np.issubdtype(y.dtype, np.integer)
    assert sorted(np.unique(y).tolist()) == list(range(10))


def test_digits_binary_labels_match_parity():
    Xb, yb = digits_binary()
    X, y = digits()
    np.testing.assert_array_equal(Xb, X)
    assert np.issubdtype(yb.dtype, np.integer)
    assert set(np.unique(yb).tolist()) == {-1, 1}
    np.testing.assert_array_equal(yb == 1, y % 2 == 0)
    np.testing.assert_array_equal(yb == -1, y % 2 == 1)


# ----------------------------------------------------------------------------------------
# load_svmlight
# ----------------------------------------------------------------------------------------


def test_load_svmlight_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(40, 12, density=0.3, format="csr", random_state=1)
    y = rng.choice([-1.0, 1.0], size=40)
    path = tmp_path / "data.svm"
    dump_svmlight_file(X, y, str(path))

    X2, y2 = load_svmlight(path, n_features=12)
    assert isinstance(X2, sp.csr_matrix)
    assert X2.shape == (40, 12)
    assert X2.dtype == np.float64
    np.testing.assert_allclose(X2.toarray(), X.toarray(), rtol=1e-12)
    np.testing.assert_array_equal(y2, y)

    # Wider n_features pads with empty columns; dtype is honoured; str paths work.
    X3, _ = load_svmlight(str(path), n_features=20, dtype=np.float32)
    assert X3.shape == (40, 20)
    assert X3.dtype == np.float32
    np.testing.assert_allclose(X3.toarray()[:, :12], X.toarray(), rtol=1e-6)
    assert X3[:, 12:].nnz == 0


@pytest.mark.parametrize("ours", [True, False])
def test_load_svmlight_reads_as_scikit_learn_does(tmp_path, monkeypatch, ours):
    """Small files are parsed by nsjax (no scikit-learn import), larger ones by
    scikit-learn's parser: the same matrices either way."""
    from sklearn.datasets import load_svmlight_file

    import nsjax.datasets

    monkeypatch.setattr(nsjax.datasets, "SMALL_SVMLIGHT_BYTES", 1 << 22 if ours else 0)
    rng = np.random.default_rng(2)
    files = []
    for zero_based in (True, False):
        path = tmp_path / f"z{zero_based}.svm"
        dump_svmlight_file(sp.random(30, 9, density=0.3, format="csr", random_state=3),
                           rng.integers(-1, 3, 30).astype(float), str(path),
                           zero_based=zero_based, comment="a comment")
        files.append(path)
    files.append(tmp_path / "qid.svm")
    files[-1].write_text("1 qid:3 1:0.5 3:2 # c\n-1 qid:3 2:1\n\n# only a comment\n")
    for path in files:
        for width in (None, 12):
            X, y = load_svmlight(path, n_features=width)
            X_ref, y_ref = load_svmlight_file(str(path), n_features=width)
            assert X.shape == X_ref.shape and (X != X_ref).nnz == 0
            np.testing.assert_array_equal(y, y_ref)
    files[-1].write_text("1 1:0.5\n-1 2:x\n")
    with pytest.raises(ValueError, match="line 2: '2:x' is not an integer index"):
        load_svmlight(files[-1])


def test_load_svmlight_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_svmlight(tmp_path / "nope.svm")
    with pytest.raises(FileNotFoundError):
        load_svmlight(tmp_path)  # a directory is not a file either


# ----------------------------------------------------------------------------------------
# synthetic_sparse
# ----------------------------------------------------------------------------------------

SMALL = (5000, 2000, 0.005)
BENCH = (50_000, 20_000, 0.0025)


@pytest.fixture(scope="module")
def small():
    return synthetic_sparse(*SMALL, seed=0)


@pytest.fixture(scope="module")
def bench():
    return synthetic_sparse(*BENCH, seed=0)


def _check_structure(X, y, n, d, density):
    assert isinstance(X, sp.csr_matrix)
    assert X.shape == (n, d)
    assert X.dtype == np.float64
    target = round(n * d * density)
    assert abs(X.nnz - target) <= 0.01 * target
    # No empty rows.
    assert np.diff(X.indptr).min() >= 1
    # No duplicate (row, col) entries.
    Y = X.copy()
    Y.sum_duplicates()
    assert Y.nnz == X.nnz
    # Unit row norms and positive values.
    assert X.data.min() > 0
    row_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(row_norms, 1.0, rtol=0, atol=1e-12)
    # Labels.
    assert y.shape == (n,)
    assert np.issubdtype(y.dtype, np.integer)
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert 0.3 <= np.mean(y == 1) <= 0.7


def test_synthetic_small_structure(small):
    _check_structure(*small, *SMALL)


def test_synthetic_benchmark_size_structure(bench):
    _check_structure(*bench, *BENCH)


@pytest.mark.parametrize("data", ["small", "bench"])
def test_synthetic_power_law_columns(data, request):
    X, _ = request.getfixturevalue(data)
    n, d = X.shape
    col_counts = np.bincount(X.indices, minlength=d)
    k = d // 10
    head, tail = col_counts[:k].sum(), col_counts[-k:].sum()
    assert head > 5 * tail
    # Frequencies decrease along the columns (on average over blocks of columns).
    block_means = col_counts[: 10 * k].reshape(10, k).mean(axis=1)
    assert np.all(np.diff(block_means) < 0)
    # No column is in more than half of the rows.
    assert col_counts.max() <= n / 2


def test_synthetic_power_zero_is_uniform():
    X, _ = synthetic_sparse(2000, 500, 0.02, power=0.0)
    col_counts = np.bincount(X.indices, minlength=500)
    assert col_counts.max() - col_counts.min() <= 1


def test_synthetic_reproducible():
    X1, y1 = synthetic_sparse(800, 300, 0.02, seed=3)
    X2, y2 = synthetic_sparse(800, 300, 0.02, seed=3)
    np.testing.assert_array_equal(X1.indptr, X2.indptr)
    np.testing.assert_array_equal(X1.indices, X2.indices)
    np.testing.assert_array_equal(X1.data, X2.data)
    np.testing.assert_array_equal(y1, y2)

    X3, y3 = synthetic_sparse(800, 300, 0.02, seed=4)
    assert (X1 != X3).nnz > 0
    assert not np.array_equal(y1, y3)


def test_synthetic_noise_flips_labels():
    n = 2000
    X0, y0 = synthetic_sparse(n, 400, 0.02, seed=7, noise=0.0)
    X1, y1 = synthetic_sparse(n, 400, 0.02, seed=7, noise=0.2)
    # Same matrix and planted model; only the flips differ.
    assert (X0 != X1).nnz == 0
    assert np.count_nonzero(y0 != y1) == 400
    # Flips are balanced between the classes, so the class balance is unchanged.
    assert np.count_nonzero(y0 == 1) == np.count_nonzero(y1 == 1) == n // 2


def test_synthetic_noiseless_labels_are_linearly_separable():
    # With noise=0 the labels are a thresholded linear function of X, so a linear model
    # with an intercept fits them well (a random labelling would not).
    from sklearn.svm import LinearSVC

    X, y = synthetic_sparse(1000, 50, 0.2, seed=1, noise=0.0)
    acc = LinearSVC(C=100.0, max_iter=20_000).fit(X, y).score(X, y)
    assert acc > 0.97


@pytest.mark.parametrize(
    ("n", "d", "density"),
    [(1, 1, 1.0), (7, 3, 1.0), (50, 4, 0.9), (100, 3, 0.01), (2, 1, 0.3)],
)
def test_synthetic_edge_sizes(n, d, density):
    X, y = synthetic_sparse(n, d, density)
    assert X.shape == (n, d)
    assert X.nnz == max(round(n * d * density), n)
    assert np.diff(X.indptr).min() >= 1
    Y = X.copy()
    Y.sum_duplicates()
    assert Y.nnz == X.nnz
    if n >= 2:
        assert set(np.unique(y).tolist()) == {-1, 1}


def test_synthetic_float32():
    X, _ = synthetic_sparse(300, 100, 0.05, dtype=np.float32)
    assert X.dtype == np.float32
    row_norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
    np.testing.assert_allclose(row_norms, 1.0, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n=0, d=10, density=0.1), "n must be"),
        (dict(n=10, d=0, density=0.1), "d must be"),
        (dict(n=10.5, d=10, density=0.1), "n must be an integer"),
        (dict(n=10, d=10, density=0.0), "density must be in"),
        (dict(n=10, d=10, density=1.5), "density must be in"),
        (dict(n=10, d=10, density=-0.1), "density must be in"),
        (dict(n=10, d=10, density=0.1, noise=0.5), "noise must be in"),
        (dict(n=10, d=10, density=0.1, noise=-0.1), "noise must be in"),
        (dict(n=10, d=10, density=0.1, power=-1.0), "power must be"),
        (dict(n=10, d=10, density=0.1, dtype=np.int32), "dtype must be"),
    ],
)
def test_synthetic_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        synthetic_sparse(**kwargs)


# ----------------------------------------------------------------------------------------
# OBA (Keskar et al. 2016): oba_synthetic, diagonal dominance (eq. 16), relative error (eq. 15)
# ----------------------------------------------------------------------------------------


def _appendix_b_reference(n, seed):
    """Appendix B's MATLAB lines, transcribed one by one (full eig, numpy's Cholesky)."""
    rng = np.random.default_rng(seed)
    y = -1 + (rng.random(n) > 0.5) * 2
    X = rng.random((n, n))
    X = X + X.T
    mineig = np.linalg.eigvalsh(X).min()
    if mineig < 0:
        X = np.eye(n) * mineig * -2 + X
    R = np.linalg.cholesky(X).T  # MATLAB's chol: upper triangular R with R'R = X
    lo, hi = R.min(axis=0), R.max(axis=0)
    return -1 + 2 * (R - lo) / (hi - lo), R, y


def _dominance_brute_force(A):
    """Eq. (16) by loops: max over columns of the column norm, over max |diagonal|."""
    n = len(A)
    col = max(sum(A[k][i] ** 2 for k in range(n)) ** 0.5 for i in range(n))
    return col / max(abs(A[i][i]) for i in range(n))


def test_oba_synthetic_shapes_dtypes_labels_and_range():
    X, y = oba_synthetic(120, seed=3)
    assert X.shape == (120, 120) and X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (120,) and y.dtype == np.int64
    assert set(np.unique(y).tolist()) == {-1, 1}
    # Feature-wise min-max scaling to [-1, 1]: every column attains both ends exactly.
    np.testing.assert_array_equal(X.min(axis=0), -1.0)
    np.testing.assert_array_equal(X.max(axis=0), 1.0)


def test_oba_synthetic_reproducible_per_seed():
    X1, y1 = oba_synthetic(60, seed=7)
    X2, y2 = oba_synthetic(60, seed=7)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X3, y3 = oba_synthetic(60, seed=8)
    assert not np.array_equal(X1, X3)
    assert not np.array_equal(y1, y3)


@pytest.mark.parametrize("n", [2, 3, 80])
def test_oba_synthetic_follows_appendix_b(n):
    X_ref, R_ref, y_ref = _appendix_b_reference(n, seed=5)
    X, y = oba_synthetic(n, seed=5)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(X, X_ref, rtol=0, atol=1e-12)
    R, y_raw = oba_synthetic(n, seed=5, scale=False)
    np.testing.assert_array_equal(y_raw, y)
    np.testing.assert_allclose(R, R_ref, rtol=1e-12, atol=1e-12)
    # R is the upper triangular Cholesky factor of the shifted symmetric matrix.
    assert np.all(np.tril(R, -1) == 0) and np.all(np.diag(R) > 0)


def test_smallest_eigenvalue_lanczos_path_matches_dense():
    # oba_synthetic switches to (deflated) Lanczos above n = 1000; force it at n = 300.
    rng = np.random.default_rng(0)
    U = rng.random((300, 300))
    S = U + U.T
    exact = np.linalg.eigvalsh(S)[0]
    assert smallest_eigenvalue(S, dense_max_order=0) == pytest.approx(exact, abs=1e-10)


def test_oba_synthetic_reproduces_table3_dominance():
    # Table 3: D(∇²f(x⁰)) = 69.42 for Synthetic (n = 5000). Our generator is numpy's, not
    # MATLAB's, so D is a random variable: seeds 0-4 give 69.420, 69.421, 69.428, 69.422,
    # 69.423 (sd 0.003), and the paper rounds to ±0.005. A tolerance of 0.02 is then about
    # 6 sd, yet it rejects the nearest wrong reading of Appendix B (examples = columns of
    # chol's R instead of rows: D ≈ 69.36); the others are far off (row-wise scaling 70.6,
    # scaling to [0, 1] 22.4, no scaling 1.2).
    X, y = oba_synthetic(5000, seed=0)
    assert abs(logistic_hessian_dominance(X) - 69.42) <= 0.02
    assert abs(np.mean(y == 1) - 0.5) < 0.03  # balanced in expectation


def test_oba_synthetic_scaling_is_what_breaks_diagonal_dominance():
    X, _ = oba_synthetic(200, seed=0)
    R, _ = oba_synthetic(200, seed=0, scale=False)
    # Unscaled: R'R = X + X' + shift has a heavy diagonal. Scaled: close to sqrt(n) = 14.1.
    assert logistic_hessian_dominance(R) < 1.5
    assert 0.85 * np.sqrt(200) < logistic_hessian_dominance(X) <= np.sqrt(200)


def test_diagonal_dominance_known_values():
    assert diagonal_dominance(np.eye(5)) == 1.0
    assert diagonal_dominance(np.ones((9, 9))) == pytest.approx(3.0, rel=1e-15)
    # By hand: columns (2, 1) and (1, 3) have norms √5 and √10; max |diagonal| = 3.
    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    assert diagonal_dominance(A) == pytest.approx(np.sqrt(10.0) / 3.0, rel=1e-15)
    # Two separate maxima: the largest column need not hold the largest diagonal entry.
    B = np.array([[1.0, 5.0, 0.0], [5.0, 0.5, 0.0], [0.0, 0.0, 2.0]])
    assert diagonal_dominance(B) == pytest.approx(np.sqrt(26.0) / 2.0, rel=1e-15)
    # Scale invariance, negative diagonals, sparse input.
    assert diagonal_dominance(-3.0 * B) == pytest.approx(diagonal_dominance(B), rel=1e-15)
    assert diagonal_dominance(sp.csr_matrix(B)) == pytest.approx(diagonal_dominance(B),
                                                                 rel=1e-15)


def test_dominance_matches_brute_force_on_a_small_synthetic_problem():
    X, y = oba_synthetic(30, seed=2)
    # Hessian at x⁰ = 0 as a sum of per-example outer products, weight σ(0)σ(-0) = 1/4.
    H = sum(0.25 * np.outer(x, x) for x in X) / len(X)
    expected = _dominance_brute_force(H.tolist())
    assert diagonal_dominance(H) == pytest.approx(expected, rel=1e-12)
    assert logistic_hessian_dominance(X) == pytest.approx(expected, rel=1e-12)
    assert logistic_hessian_dominance(sp.csr_matrix(X)) == pytest.approx(expected, rel=1e-12)
    # At w != 0 the weights are σ(z)(1 - σ(z)) = 1 / (2 + e^z + e^-z), with z = x·w.
    w = np.random.default_rng(0).normal(size=30)
    Hw = sum(np.outer(x, x) / (2.0 + np.exp(x @ w) + np.exp(-(x @ w))) for x in X)
    expected_w = _dominance_brute_force(Hw.tolist())
    assert expected_w != pytest.approx(expected, rel=1e-3)  # the point matters
    assert logistic_hessian_dominance(X, w) == pytest.approx(expected_w, rel=1e-12)
    assert logistic_hessian_dominance(sp.csr_matrix(X), w) == pytest.approx(expected_w,
                                                                             rel=1e-12)


def test_relative_function_error_on_a_problem_with_known_minimizer():
    # φ(x) = log(1 + e^{-x}) + μ|x| with μ = 1/4 (one example, a = y = 1). For x > 0,
    # φ'(x) = -1 / (1 + e^x) + 1/4 = 0 at x* = log 3, φ* = log(4/3) + log(3)/4.
    mu = 0.25

    def phi(x):
        return np.logaddexp(0.0, -x) + mu * np.abs(x)

    x_star = np.log(3.0)
    assert -1.0 / (1.0 + np.exp(x_star)) + mu == pytest.approx(0.0, abs=1e-15)
    phi_star = np.log(4.0 / 3.0) + np.log(3.0) / 4.0
    assert phi(x_star) == pytest.approx(phi_star, rel=1e-15)
    assert phi(np.linspace(-3, 3, 6001)).min() >= phi_star - 1e-15  # it is the minimum
    # Eq. (15) by hand at x = 0: (log 2 - 0.5623351) / 1.5623351 = 0.0837285.
    assert relative_function_error(phi(0.0), phi_star) == pytest.approx(0.0837285, rel=1e-6)
    assert relative_function_error(phi(x_star), phi_star) == pytest.approx(0.0, abs=1e-15)
    assert isinstance(relative_function_error(phi(0.0), phi_star), float)
    # Any real scalar for φ(x*): numpy, 0-d arrays (a JAX Solution.value), integers.
    assert relative_function_error(1.0, np.float32(0.0)) == 1.0
    assert relative_function_error(3, jnp.asarray(1.0)) == 1.0
    # Arrays (a value history, NaN-padded) map elementwise.
    hist = np.array([phi(0.0), phi(1.0), phi(x_star), np.nan])
    err = relative_function_error(hist, phi_star)
    assert err.shape == (4,) and np.isnan(err[3])
    np.testing.assert_allclose(err[:3], (hist[:3] - phi_star) / (1 + phi_star), rtol=1e-15)
    assert err[0] > err[2] and err[1] > err[2]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(n=1), ValueError, "n must be >= 2"),
        (dict(n=0), ValueError, "n must be >= 1"),
        (dict(n=2.5), ValueError, "n must be an integer"),
        (dict(n=10, scale="yes"), TypeError, "scale must be True or False"),
    ],
)
def test_oba_synthetic_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        oba_synthetic(**kwargs)


@pytest.mark.parametrize(
    ("A", "match"),
    [
        (np.ones((2, 3)), "square"),
        (np.ones(4), "square"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), "symmetric"),
        (sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 1.0]])), "symmetric"),
        (np.array([[0.0, 1.0], [1.0, 0.0]]), "diagonal of A is all zeros"),
        (np.array([[np.nan, 1.0], [1.0, 1.0]]), "finite"),
    ],
)
def test_diagonal_dominance_bad_arguments(A, match):
    with pytest.raises(ValueError, match=match):
        diagonal_dominance(A)


def test_logistic_hessian_dominance_bad_arguments():
    X = np.eye(3)
    with pytest.raises(ValueError, match=r"w must have shape \(3,\)"):
        logistic_hessian_dominance(X, np.zeros(4))
    with pytest.raises(ValueError, match="w must be finite"):
        logistic_hessian_dominance(X, np.array([0.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match="2-D"):
        logistic_hessian_dominance(np.ones(3))
    with pytest.raises(ValueError, match="X must be finite"):
        logistic_hessian_dominance(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="all zeros"):
        logistic_hessian_dominance(np.zeros((3, 2)))


def test_relative_function_error_bad_arguments():
    with pytest.raises(ValueError, match="> -1"):
        relative_function_error(0.0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        relative_function_error(0.0, np.nan)
    for bad in ("0.5", True, np.array([0.5]), None, 1 + 2j):
        with pytest.raises(TypeError, match="optimal_value must be a real number"):
            relative_function_error(0.0, bad)
