"""Tests for nsjax.datasets."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from nsjax.datasets import (
    breast_cancer,
    digits,
    digits_binary,
    load_svmlight,
    synthetic_sparse,
)

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
