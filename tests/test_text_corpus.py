"""Tests for nsjax.datasets.topic_corpus: synthetic text as sublinear TF-IDF."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from nsjax import datasets
from nsjax.datasets import topic_corpus

N, D, K = 600, 8000, 5


@pytest.fixture(scope="module")
def corpus():
    return topic_corpus(N, D, topics=K, seed=0)


def test_shape_dtype_and_format(corpus):
    X, y = corpus
    assert sp.isspmatrix_csr(X)
    assert X.shape == (N, D) and X.dtype == np.float64
    assert y.shape == (N,) and y.dtype == np.int64
    assert X.has_sorted_indices
    for i in range(N):  # strictly increasing columns: sorted, no duplicates
        assert np.all(np.diff(X.indices[X.indptr[i]:X.indptr[i + 1]]) > 0)
    assert X.indices.min() >= 0 and X.indices.max() < D


def test_values_positive_and_rows_unit(corpus):
    X, _ = corpus
    assert np.all(X.data > 0) and np.all(np.isfinite(X.data))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=0, atol=1e-12)


def test_float32():
    X, y = topic_corpus(200, 3000, topics=4, seed=1, dtype=np.float32)
    X64, y64 = topic_corpus(200, 3000, topics=4, seed=1)
    assert X.dtype == np.float32
    np.testing.assert_array_equal(X.indptr, X64.indptr)
    np.testing.assert_array_equal(X.indices, X64.indices)
    np.testing.assert_allclose(X.data, X64.data, rtol=1e-6)
    np.testing.assert_array_equal(y, y64)


def test_deterministic_by_seed(corpus):
    X, y = corpus
    X2, y2 = topic_corpus(N, D, topics=K, seed=0)
    assert (X != X2).nnz == 0
    np.testing.assert_array_equal(y, y2)
    X3, _ = topic_corpus(N, D, topics=K, seed=1)
    assert X3.nnz != X.nnz or (X != X3).nnz > 0


def test_text_like_statistics(corpus):
    """A few hundred distinct words a document (a heavy right tail), most of the
    vocabulary used, a Zipf-like column spread."""
    X, _ = corpus
    per_row = np.diff(X.indptr)
    assert 150 <= per_row.mean() <= 260
    assert per_row.max() > 2.5 * per_row.mean()  # log-normal lengths
    assert per_row.min() >= 1
    df = np.bincount(X.indices, minlength=D)
    assert 0.7 < np.mean(df > 0) <= 1.0
    top = np.sort(df)[::-1]
    assert top[0] == N  # the most frequent word is in every document
    assert top[D // 100] > 0.2 * N  # a hundredth of the words in a fifth of the documents
    assert top[D // 10] < 0.1 * N  # the tenth-percentile word is rare
    assert np.median(df) < 0.02 * N


def test_labels_minority_near_one_over_k(corpus):
    _, y = corpus
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert abs(np.mean(y == 1) - 1 / K) < 0.05


def test_positive_topics_and_noise():
    n = 2000
    _, y0 = topic_corpus(n, 3000, topics=10, positive_topics=(2, 7), noise=0.0, seed=3)
    assert abs(np.mean(y0 == 1) - 0.2) < 0.04
    _, y1 = topic_corpus(n, 3000, topics=10, positive_topics=(2, 7), noise=0.1, seed=3)
    # The same draws up to the flips: exactly round(0.1 n) labels differ.
    assert np.count_nonzero(y0 != y1) == 200
    _, y2 = topic_corpus(n, 3000, topics=10, positive_topics=np.array([2, 7]), noise=0.0,
                         seed=3)
    np.testing.assert_array_equal(y0, y2)


def test_tfidf_matches_scikit_learn():
    """The stated features: TfidfVectorizer(sublinear_tf=True)'s defaults on the counts."""
    from sklearn.feature_extraction.text import TfidfTransformer

    kw = dict(topics=4, positive_topics=(0,), mean_length=200.0, zipf=1.05, topic_words=300,
              topic_weight=0.25, mixing=0.3, noise=0.01, seed=5)
    counts, y_counts = datasets._topic_counts(300, 4000, **kw)
    X, y = topic_corpus(300, 4000, **kw)
    ref = TfidfTransformer(sublinear_tf=True).fit_transform(counts.astype(np.float64))
    ref.sort_indices()
    np.testing.assert_array_equal(X.indptr, ref.indptr)
    np.testing.assert_array_equal(X.indices, ref.indices)
    np.testing.assert_allclose(X.data, ref.data, rtol=1e-12)
    np.testing.assert_array_equal(y, y_counts)
    # Document lengths: log-normal with the requested mean.
    assert abs(counts.sum(axis=1).mean() / 200.0 - 1.0) < 0.08


def test_many_chunks(monkeypatch):
    """Documents longer than a chunk, and many chunks: the same kind of matrix."""
    monkeypatch.setattr(datasets, "_TOKENS_PER_CHUNK", 500)
    counts, _ = datasets._topic_counts(300, 3000, topics=3, positive_topics=(0,),
                                       mean_length=400.0, zipf=1.0, topic_words=200,
                                       topic_weight=0.3, mixing=0.2, noise=0.0, seed=0)
    assert counts.shape == (300, 3000) and counts.has_sorted_indices
    assert np.all(counts.data >= 1) and np.all(np.diff(counts.indptr) >= 1)
    assert abs(counts.sum() / 300 / 400.0 - 1.0) < 0.1


def test_linear_svm_realism():
    """A hinge SVM at C = 1 separates the topics well but, with 2% flipped labels, not
    perfectly; most rows are not support vectors, a good share are."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    X, y = topic_corpus(1000, 10000, topics=5, noise=0.02, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(loss="hinge", C=1.0, fit_intercept=False, dual=True,
                        max_iter=20000).fit(X, y)
    accuracy = clf.score(X, y)
    assert 0.9 < accuracy < 1.0
    margins = y * (X @ clf.coef_.ravel())
    assert 0.1 < np.mean(margins <= 1.0 + 1e-6) < 0.8


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(n=0), ValueError, "n must be"),
        (dict(n=2.5), ValueError, "n must be"),
        (dict(d=0), ValueError, "d must be"),
        (dict(d=350), ValueError, "d must be >= topic_words"),
        (dict(topics=1), ValueError, "topics must be >= 2"),
        (dict(topics=True), ValueError, "topics must be"),
        (dict(positive_topics=()), ValueError, "positive_topics"),
        (dict(positive_topics=(5,)), ValueError, "positive_topics"),
        (dict(positive_topics=(-1,)), ValueError, "positive_topics"),
        (dict(positive_topics=(1, 1)), ValueError, "positive_topics"),
        (dict(positive_topics=(0, 1, 2, 3, 4)), ValueError, "positive_topics"),
        (dict(positive_topics=(0.5,)), ValueError, "positive_topics"),
        (dict(positive_topics="0"), ValueError, "positive_topics"),
        (dict(positive_topics=None), ValueError, "positive_topics"),
        (dict(mean_length=0.5), ValueError, "mean_length"),
        (dict(mean_length=float("inf")), ValueError, "mean_length"),
        (dict(mean_length="long"), TypeError, "mean_length"),
        (dict(zipf=0.0), ValueError, "zipf"),
        (dict(zipf=float("nan")), ValueError, "zipf"),
        (dict(topic_words=0), ValueError, "topic_words"),
        (dict(topic_weight=0.0), ValueError, "topic_weight"),
        (dict(topic_weight=1.5), ValueError, "topic_weight"),
        (dict(mixing=1.0), ValueError, "mixing"),
        (dict(mixing=-0.1), ValueError, "mixing"),
        (dict(noise=0.5), ValueError, "noise"),
        (dict(noise=-0.01), ValueError, "noise"),
        (dict(noise=None), TypeError, "noise"),
        (dict(dtype=np.int32), ValueError, "dtype"),
    ],
)
def test_argument_errors(kwargs, error, match):
    args = dict(n=50, d=1000, topics=5)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        topic_corpus(**args)


def test_edge_arguments():
    X, y = topic_corpus(1, 500, topics=2, topic_words=10, mean_length=1.0, mixing=0.0,
                        noise=0.0, positive_topics=1)
    assert X.shape == (1, 500) and X.nnz == 1 and X.data[0] == pytest.approx(1.0)
    assert y.shape == (1,)
    X, y = topic_corpus(100, 2000, topics=2, topic_weight=1.0, mixing=0.0, noise=0.0)
    assert np.all(np.diff(X.indptr) >= 1)
