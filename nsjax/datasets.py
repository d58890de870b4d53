"""Datasets for tests, examples and benchmarks.

Everything here is plain numpy / scipy / scikit-learn: the loaders return ``numpy.ndarray``
features and labels, or a ``scipy.sparse.csr_matrix`` for the sparse sets, so they can be
converted to JAX arrays (or kept sparse) by the caller. The bundled sets (`breast_cancer`,
`digits`, `iris`, `diabetes`) come from scikit-learn, an optional dependency: ``pip install
"nsjax[sklearn]"``; without it they raise an error that says so (`load_svmlight` then
parses large files itself, more slowly).

* `breast_cancer`: scikit-learn's Wisconsin breast cancer set, standardized.
* `digits_binary` / `digits`: scikit-learn's 8x8 digits, scaled to ``[0, 1]``.
* `load_svmlight`: read a LIBSVM / svmlight file (e.g. rcv1, news20) from disk.
* `synthetic_sparse`: a seeded sparse binary classification problem of any size and
  density, with power-law feature frequencies, for benchmarks.
* `topic_corpus`: seeded synthetic text, documents from a topic model over a Zipf
  vocabulary as sublinear TF-IDF with unit rows, labelled one topic against the rest.
* `oba_synthetic`: the "Synthetic" L1-logistic problem of the OBA paper (Keskar et al.
  2016), Appendix B, with `diagonal_dominance` / `logistic_hessian_dominance` (its eq. (16)
  and Table 3) and `relative_function_error` (its eq. (15)).

References: see docs/references.md.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = [
    "breast_cancer",
    "digits",
    "digits_binary",
    "diagonal_dominance",
    "load_svmlight",
    "logistic_hessian_dominance",
    "oba_synthetic",
    "relative_function_error",
    "synthetic_chains",
    "synthetic_sparse",
    "topic_corpus",
]


def _sklearn_datasets(loader: str):
    """`sklearn.datasets`, for the loader ``loader`` (its name here); where scikit-learn is
    not installed, an error naming the extra that installs it."""
    from nsjax._optional import sklearn_module

    return sklearn_module("sklearn.datasets", f"nsjax.datasets.{loader}()")


# Largest fraction of the rows a single column may occupy in `synthetic_sparse` (unless the
# requested density is itself larger, in which case the cap is the density).
_MAX_COLUMN_FRACTION = 0.5
# Rejection ("top up") rounds in `synthetic_sparse` before the exact per-column fallback.
_MAX_TOPUP_ROUNDS = 64


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """Wisconsin breast cancer data (569 samples, 30 features, 2 classes), standardized.

    The raw features span about five orders of magnitude (from ~1e-3 for the fractal
    dimension columns to ~1e3 for the area columns), which makes first-order solvers crawl,
    so every column is standardized to zero mean and unit variance (population standard
    deviation, ``ddof=0``).

    Returns:
        A tuple ``(X, y)``: ``X`` is a float64 array of shape ``(569, 30)`` with standardized
        columns, ``y`` an integer array of shape ``(569,)`` holding the original labels
        (0 = malignant, 1 = benign).
    """
    # Imported here: scikit-learn is slow to import, and optional.
    X, y = _sklearn_datasets("breast_cancer").load_breast_cancer(return_X_y=True)
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.asarray(y, dtype=np.int64)


def _digits_features(loader: str) -> tuple[np.ndarray, np.ndarray]:
    X, y = _sklearn_datasets(loader).load_digits(return_X_y=True)
    return np.asarray(X, dtype=np.float64) / 16.0, np.asarray(y, dtype=np.int64)


def digits_binary() -> tuple[np.ndarray, np.ndarray]:
    """Handwritten digits (1797 samples, 64 pixels) as an even-vs-odd binary problem.

    Returns:
        A tuple ``(X, y)``: ``X`` is a float64 array of shape ``(1797, 64)`` with the pixel
        intensities divided by 16, so in ``[0, 1]``; ``y`` is an integer array of shape
        ``(1797,)`` with ``+1`` for even digits and ``-1`` for odd digits.
    """
    X, digit = _digits_features("digits_binary")
    y = np.where(digit % 2 == 0, 1, -1).astype(np.int64)
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    """Handwritten digits (1797 samples, 64 pixels, 10 classes).

    Returns:
        A tuple ``(X, y)``: ``X`` is a float64 array of shape ``(1797, 64)`` with the pixel
        intensities divided by 16, so in ``[0, 1]``; ``y`` is an integer array of shape
        ``(1797,)`` with the digit labels ``0..9``.
    """
    return _digits_features("digits")


def load_svmlight(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    dtype: np.dtype | type = np.float64,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Load a LIBSVM / svmlight format file, as ``sklearn.datasets.load_svmlight_file``
    does (small files are parsed here, larger ones by scikit-learn's parser where it is
    installed).

    Args:
        path: Path of the file (it may be compressed with gzip or bz2, as scikit-learn
            detects from the extension).
        n_features: Number of feature columns. ``None`` infers it from the largest feature
            index in the file; pass it explicitly to give a train and a test file the same
            width.
        dtype: Floating dtype of the feature values.

    Returns:
        A tuple ``(X, y)``: ``X`` is a ``scipy.sparse.csr_matrix`` of shape
        ``(n_samples, n_features)``, ``y`` a float64 array of shape ``(n_samples,)`` with the
        labels as written in the file.

    Raises:
        FileNotFoundError: If ``path`` does not exist or is not a regular file.
        TypeError / ValueError: If an argument is of the wrong kind, or a line of the file
            is malformed (the message names the file and the line number).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike naming an svmlight file; got "
                        f"{path!r} ({type(path).__name__}).")
    if n_features is not None:
        n_features = _check_int("n_features", n_features)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype (np.float64 or np.float32); got "
                        f"{dtype!r}.") from None
    if dt.kind != "f":
        raise ValueError(f"dtype must be a floating dtype, got {dt}; pass np.float64 or "
                         "np.float32.")
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"svmlight file not found: {str(file)!r} (resolved to {str(file.resolve())!r}). "
            "Download the data set first (e.g. from the LIBSVM data sets page) or fix the path."
        )
    load_svmlight_file = None
    if file.stat().st_size > SMALL_SVMLIGHT_BYTES:  # scikit-learn's compiled parser
        try:
            from sklearn.datasets import load_svmlight_file
        except ImportError:  # scikit-learn is optional: parsed here, more slowly
            pass
    if load_svmlight_file is None:
        # Parsed here: importing scikit-learn would take longer than parsing a small file.
        X, y = _parse_svmlight(file, n_features)
        return sp.csr_matrix(X, dtype=dt), y
    try:
        X, y = load_svmlight_file(str(file), n_features=n_features, dtype=dt)
    except ValueError as e:
        _parse_svmlight(file, n_features)  # raises, naming the first malformed line
        raise ValueError(f"{str(file)!r}: {e}") from e
    return sp.csr_matrix(X), np.asarray(y)


#: Files up to this size are parsed by `load_svmlight` itself, larger ones by
#: scikit-learn's compiled parser (where scikit-learn is installed; else here too).
SMALL_SVMLIGHT_BYTES = 1 << 22


#: Feature indices must be below this (the width, the largest index + 1, is an int64).
_MAX_INDEX = int(np.iinfo(np.int64).max)


def _parse_svmlight(file: Path, n_features):
    """(X as a CSR matrix in float64, y) from an svmlight file, read as scikit-learn's
    ``load_svmlight_file`` reads it (comments after '#', ``qid:`` pairs skipped, indices
    one-based unless an index 0 occurs); a ValueError names the first malformed line."""
    import bz2
    import gzip

    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(file.suffix, open)
    labels, indptr, indices, values = [], [0], [], []

    def bad(number, what, raw):
        text = raw.decode(errors="replace").rstrip()
        text = text if len(text) <= 80 else text[:77] + "..."  # (a binary file: one long line)
        return ValueError(f"{str(file)!r}, line {number}: {what}: "
                          f"{text!r}. Each line must read "
                          "'label index:value index:value ...' with ascending indices (a "
                          "'#' starts a comment).")

    with opener(file, "rb") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            label, *pairs = line.split()
            try:
                labels.append(float(label))
            except ValueError:
                raise bad(number, f"the label {label.decode(errors='replace')!r} is not a "
                               "number", raw) from None
            last = -1
            for pair in pairs:
                if b":" not in pair:
                    raise bad(number, f"{pair.decode(errors='replace')!r} has no colon "
                                      "(expected index:value)", raw)
                key, value = pair.split(b":", 1)
                if key == b"qid":
                    continue
                try:
                    index, number_value = int(key), float(value)
                except ValueError:
                    raise bad(number, f"{pair.decode(errors='replace')!r} is not an integer "
                                      "index and a number", raw) from None
                if index <= last or index < 0:
                    raise bad(number, "feature indices must be ascending, unique and >= 0",
                              raw)
                if index >= _MAX_INDEX:
                    raise bad(number, f"the feature index {index} is too large (at most "
                                      f"{_MAX_INDEX - 1})", raw)
                last = index
                indices.append(index)
                values.append(number_value)
            indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and indices.min() > 0:  # one-based, as scikit-learn's "auto" decides
        indices -= 1
    width = int(indices.max()) + 1 if indices.size else 0
    if n_features is not None:
        if width > n_features:
            raise ValueError(f"{str(file)!r}: n_features was set to {n_features}, but the "
                             f"file holds {width} features; pass n_features >= {width}, or "
                             "None to infer it.")
        width = n_features
    X = sp.csr_matrix((np.asarray(values, dtype=np.float64), indices,
                       np.asarray(indptr, dtype=np.int64)), shape=(len(labels), width))
    return X, np.asarray(labels, dtype=np.float64)


# ----------------------------------------------------------------------------------------
# Synthetic sparse data
# ----------------------------------------------------------------------------------------


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}; pass e.g. {name}=1000.")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}; pass a positive number of {name}.")
    return int(value)


def _check_real(name: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} "
                        f"({type(value).__name__}).")
    return float(value)


def _column_fractions(d: int, target_fraction_sum: float, power: float, cap: float) -> np.ndarray:
    """Per-column row fractions ``q_j = min(cap, s * (j + 1) ** -power)`` with ``sum q = T``.

    ``s`` is found by water filling: columns that would exceed ``cap`` are pinned at it and
    the remaining mass is spread over the others, until no column exceeds the cap.
    """
    weights = np.arange(1, d + 1, dtype=np.float64) ** (-power)
    capped = np.zeros(d, dtype=bool)
    while True:
        free_mass = target_fraction_sum - cap * np.count_nonzero(capped)
        free_weight = weights[~capped].sum()
        scale = free_mass / free_weight if free_weight > 0 else 0.0
        newly = ~capped & (scale * weights > cap)
        if not newly.any():
            break
        capped |= newly
    return np.where(capped, cap, np.minimum(cap, scale * weights))


def _integer_counts(expected: np.ndarray, total: int, upper: int, rng: np.random.Generator):
    """Round ``expected`` (summing to about ``total``) to integers in ``[0, upper]``.

    Systematic randomized rounding: each count is the floor or ceiling of its expectation and
    the counts sum to exactly ``total``.
    """
    expected = expected * (total / expected.sum())
    edges = np.floor(np.cumsum(expected) + rng.random())
    counts = np.diff(np.concatenate(([0.0], edges))).astype(np.int64)
    counts = np.clip(counts, 0, upper)
    diff = total - int(counts.sum())
    # Floating point slack: add to (or remove from) the columns furthest from their bound.
    while diff != 0:
        if diff > 0:
            room = upper - counts
            order = np.argsort(-room, kind="stable")[:diff]
            step = np.minimum(room[order], 1)
        else:
            order = np.argsort(-counts, kind="stable")[:-diff]
            step = -np.minimum(counts[order], 1)
        counts[order] += step
        diff = total - int(counts.sum())
    return counts


def _anchor_counts(counts: np.ndarray, n: int) -> np.ndarray:
    """Split ``n`` anchors (one per row) over columns proportionally to ``counts``.

    Largest-remainder rounding of ``n * counts / counts.sum()``; the result never exceeds
    ``counts`` because ``n <= counts.sum()``.
    """
    total = int(counts.sum())
    numer = n * counts
    anchors = numer // total
    missing = n - int(anchors.sum())
    if missing:
        remainder = numer % total
        anchors[np.argsort(-remainder, kind="stable")[:missing]] += 1
    return anchors


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted unique values (sort + mask: faster than hash-based ``np.unique`` for int64)."""
    values = np.sort(values)
    keep = np.empty(values.size, dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def synthetic_sparse(
    n: int,
    d: int,
    density: float,
    *,
    seed: int = 0,
    power: float = 1.0,
    noise: float = 0.05,
    dtype: np.dtype | type = np.float64,
    n_classes: int = 2,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Seeded synthetic sparse classification data with power-law feature frequencies.

    Sparsity pattern: column ``j`` appears in a fraction of the rows proportional to
    ``(j + 1) ** -power`` (column 0 is the most frequent, as in bag-of-words data), capped so
    that no column is in more than half of the rows (or in more than a ``density`` fraction
    when ``density > 0.5``), and rescaled so that the matrix has exactly
    ``round(n * d * density)`` nonzeros (at least ``n``: see below). Per-column counts are the
    randomized rounding of these expectations, and the rows of each column are drawn
    uniformly without replacement. Every row has at least one nonzero: each row first gets
    one "anchor" entry in a column drawn in proportion to the column counts, and the rest of
    each column is filled in by vectorized rejection sampling (a few top-up rounds), so
    there are no duplicate ``(row, col)`` entries. If ``n * d * density < n`` the matrix
    therefore has ``n`` nonzeros, one per row.

    Values: uniform in ``[0.1, 1]``, then every row is scaled to unit Euclidean norm (computed
    in float64 before casting to ``dtype``).

    Labels: ``sign(X @ w - median(X @ w))`` for a planted weight vector ``w`` with standard
    normal entries, so the classes are split 50/50 (the ``ceil(n / 2)`` highest scores get
    ``+1``, ties broken at random), then ``2 * round(noise * n / 2)`` labels are flipped,
    half of them taken from each class, so the flips keep the class balance exactly.

    Args:
        n: Number of rows (samples), ``>= 1``.
        d: Number of columns (features), ``>= 1``.
        density: Fraction of nonzero entries, in ``(0, 1]``.
        seed: Seed for ``numpy.random.default_rng``; the same arguments give the same data.
        power: Power-law exponent of the column frequencies, finite and ``>= 0``
            (``0`` gives uniform column frequencies).
        noise: Fraction of labels flipped after planting, in ``[0, 0.5)``.
        dtype: Floating dtype of the matrix values.
        n_classes: ``2`` for the binary labels above; ``K > 2`` for class labels ``0..K-1``
            from a planted (d, K) weight matrix: ``argmax`` of the column-centred scores,
            then a fraction ``noise`` of the labels replaced by uniformly drawn classes.

    Returns:
        A tuple ``(X, y)``: ``X`` is a ``scipy.sparse.csr_matrix`` of shape ``(n, d)`` with
        sorted indices and unit-norm rows; ``y`` is an int64 array of shape ``(n,)`` with
        values in ``{-1, +1}`` (both present when ``n >= 2``).

    Raises:
        ValueError: If an argument is out of range.
    """
    n = _check_int("n", n)
    d = _check_int("d", d)
    density = _check_real("density", density)
    if not (0.0 < density <= 1.0):
        raise ValueError(
            f"density must be in (0, 1], got {density}; it is the fraction of nonzero entries, "
            "e.g. density=0.001 for 0.1% nonzeros."
        )
    noise = _check_real("noise", noise)
    if not (0.0 <= noise < 0.5):
        raise ValueError(
            f"noise must be in [0, 0.5), got {noise}; it is the fraction of flipped labels "
            "(0 for noiseless labels)."
        )
    power = _check_real("power", power)
    if not (math.isfinite(power) and power >= 0.0):
        raise ValueError(
            f"power must be finite and >= 0, got {power}; use 0 for uniform column "
            "frequencies or e.g. 1.0 for a Zipf-like law."
        )
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(
            f"dtype must be a floating dtype, got {dtype}; pass np.float64 or np.float32."
        )

    rng = np.random.default_rng(seed)

    # --- per-column nonzero counts -----------------------------------------------------
    nnz = max(int(round(n * d * density)), n)
    cap = max(_MAX_COLUMN_FRACTION, nnz / (n * d))
    fractions = _column_fractions(d, nnz / n, power, cap)
    upper = int(cap * n)  # most rows a column may occupy
    if upper * d < nnz:  # only when the cap is the density itself and n * cap is fractional
        upper = n
    col_counts = _integer_counts(fractions * n, nnz, upper, rng)

    # --- one anchor entry per row ------------------------------------------------------
    anchors = _anchor_counts(col_counts, n)
    anchor_cols = np.repeat(np.arange(d, dtype=np.int64), anchors)
    anchor_rows = rng.permutation(n).astype(np.int64)
    # Entries are tracked as sorted unique keys col * n + row (column-major order).
    keys = np.sort(anchor_cols * n + anchor_rows)
    have = anchors.copy()

    # --- fill each column up to its count: vectorized rejection rounds -----------------
    for _ in range(_MAX_TOPUP_ROUNDS):
        deficit = col_counts - have
        total_deficit = int(deficit.sum())
        if total_deficit == 0:
            break
        new_cols = np.repeat(np.arange(d, dtype=np.int64), deficit)
        new_keys = _sorted_unique(new_cols * n + rng.integers(0, n, size=total_deficit))
        pos = np.searchsorted(keys, new_keys)
        clash = keys[np.minimum(pos, keys.size - 1)] == new_keys
        new_keys = new_keys[~clash]
        # Both parts are sorted, so the stable (tim)sort is a linear merge.
        keys = np.sort(np.concatenate((keys, new_keys)), kind="stable")
        have += np.bincount(new_keys // n, minlength=d)
    else:
        # Nearly full columns (only possible for density > 0.5): finish them exactly.
        deficit = col_counts - have
        extra = []
        for j in np.flatnonzero(deficit):
            lo, hi = np.searchsorted(keys, [j * n, (j + 1) * n])
            free = np.setdiff1d(np.arange(n, dtype=np.int64), keys[lo:hi] - j * n)
            extra.append(j * n + rng.choice(free, size=int(deficit[j]), replace=False))
        if extra:
            keys = np.sort(np.concatenate([keys, *extra]))

    # --- assemble CSR (row-major, sorted column indices) --------------------------------
    cols = keys // n
    rows = keys - cols * n
    order = np.argsort(rows, kind="stable")  # keys are column-sorted: stable keeps that
    rows, cols = rows[order], cols[order]
    index_dtype = np.int32 if max(n, d, keys.size) < np.iinfo(np.int32).max else np.int64
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).astype(index_dtype)

    values = rng.uniform(0.1, 1.0, size=keys.size)
    row_norms = np.sqrt(np.add.reduceat(values * values, indptr[:-1]))
    values /= row_norms[rows]

    X = sp.csr_matrix((values.astype(dtype), cols.astype(index_dtype), indptr), shape=(n, d))
    X.has_sorted_indices = True

    # --- labels from a planted model ---------------------------------------------------
    if n_classes != 2:
        return X, _planted_classes(X, n_classes, noise, rng)
    w = rng.standard_normal(d)
    scores = np.asarray(X @ w.astype(dtype), dtype=np.float64)
    # Rank split at the median; random tie-breaking keeps it balanced even with tied scores.
    ranked = np.lexsort((rng.random(n), scores))
    y = np.ones(n, dtype=np.int64)
    y[ranked[: n // 2]] = -1
    n_half_flips = int(round(noise * n / 2))
    if n_half_flips:
        pos_idx = np.flatnonzero(y == 1)
        neg_idx = np.flatnonzero(y == -1)
        n_half_flips = min(n_half_flips, pos_idx.size, neg_idx.size)
        flip = np.concatenate(
            (
                rng.choice(pos_idx, size=n_half_flips, replace=False),
                rng.choice(neg_idx, size=n_half_flips, replace=False),
            )
        )
        y[flip] = -y[flip]
    return X, y


def _planted_classes(X, n_classes, noise, rng) -> np.ndarray:
    K = _check_int("n_classes", n_classes)
    if K < 2:
        raise ValueError(f"n_classes must be >= 2; got {K}.")
    W = rng.standard_normal((X.shape[1], K))
    scores = np.asarray(X @ W, dtype=np.float64)
    y = np.argmax(scores - np.median(scores, axis=0), axis=1)
    flip = rng.random(X.shape[0]) < noise
    y[flip] = rng.integers(0, K, size=int(flip.sum()))
    return y.astype(np.int64)


# ----------------------------------------------------------------------------------------
# Synthetic text: a topic model, sublinear TF-IDF
# ----------------------------------------------------------------------------------------

# Log-normal sigma of the document lengths: a coefficient of variation of about 0.66 and a
# longest document several times the mean, as in news articles.
_LENGTH_SIGMA = 0.6
# The most frequent words (function words) belong to no topic.
_FUNCTION_WORDS = 100
# Dirichlet concentration of a topic's weights over its own words.
_TOPIC_WORD_CONCENTRATION = 0.5
# Dirichlet concentration of a document's secondary topics.
_SECONDARY_CONCENTRATION = 0.5
# Tokens drawn per chunk of documents (bounds the memory: about 40 bytes a token).
_TOKENS_PER_CHUNK = 1 << 22


def topic_corpus(
    n: int = 2000,
    d: int = 20000,
    *,
    topics: int = 20,
    positive_topics=(0,),
    mean_length: float = 350.0,
    zipf: float = 1.05,
    topic_words: int = 300,
    topic_weight: float = 0.25,
    mixing: float = 0.3,
    noise: float = 0.01,
    seed: int = 0,
    dtype: np.dtype | type = np.float64,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Seeded synthetic text: bag-of-words documents from a topic model, as sublinear TF-IDF.

    A binary problem shaped like a news corpus classified one section against the rest
    (e.g. "business vs rest"): more columns than rows, a few hundred nonzeros a row,
    correlated columns, unit rows, and a minority positive class that a hinge SVM at a
    realistic regularization does not fit perfectly (with fewer documents than words the
    rows are almost surely linearly independent, so any labels are separable at a small
    enough regularization, as in real text of that shape).

    Vocabulary: ``d`` words with Zipf background frequencies ``p_r ∝ (r + 1) ** -zipf`` by
    frequency rank ``r``; ranks are assigned to columns by a random permutation, as a
    vectorizer's alphabetical vocabulary would (column 0 is not the most frequent word).

    Topics: each of the ``topics`` topics owns ``topic_words`` words, drawn without
    replacement in proportion to ``sqrt(p_r)`` (mid-frequency content words and rare names
    alike) among all but the 100 most frequent ranks (function words), independently for
    each topic, so topics share some words. A topic's own weights over its words are a
    Dirichlet(0.5) draw. Its word distribution is the background tilted toward its words:
    ``(1 - topic_weight) * background + topic_weight * own``.

    Documents: a dominant topic drawn uniformly, and a mixture ``θ = (1 - s) e_z + s ψ``
    with a secondary share ``s ~ Beta(1, 1 / mixing - 1)`` (mean ``mixing``) spread by
    ``ψ ~ Dirichlet(0.5)`` over all topics; its dominant topic is ``argmax θ``. The length
    is log-normal with mean ``mean_length`` and sigma 0.6 (a heavy right tail), at least 1;
    each token is a background word with probability ``1 - topic_weight``, otherwise a
    word of a topic drawn from ``θ``.

    Features: scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` with its defaults, i.e.
    ``tf = 1 + ln(count)`` times the smooth ``idf = ln((1 + n) / (1 + df)) + 1``, then each
    row scaled to unit Euclidean norm (computed in float64, then cast to ``dtype``). The
    width stays ``d``: words no document uses are kept as empty columns.

    Labels: ``+1`` where a document's dominant topic is in ``positive_topics``, else ``-1``
    (about ``len(positive_topics) / topics`` positive); then ``round(noise * n)`` labels,
    chosen at random, are flipped.

    At n = 2,225, d = 17,760 (the size of the BBC news corpus) and ``topics=5``, seed 0: 217
    nonzeros a row on average (median 194, 28 to 1,011), 98% of the columns used, 20.7%
    positive; scikit-learn's ``LinearSVC(loss="hinge", C=1)`` fits 99.3% of it with 31% of
    the rows on or inside the margin, and scores 97.3% on a held-out 30%. It takes about
    0.1 s; 100,000 x 1,000,000 takes about 7 s and 1.3 GB.

    Args:
        n: Number of documents (rows), ``>= 1``.
        d: Vocabulary size (columns), ``>= 1`` and ``>= topic_words + 100``.
        topics: Number of topics, ``>= 2``.
        positive_topics: The topics labelled ``+1``: distinct integers in
            ``[0, topics)``, at least one and not all.
        mean_length: Mean document length in tokens, ``>= 1``.
        zipf: Zipf exponent of the background frequencies, finite and ``> 0`` (natural
            language: about 1).
        topic_words: Words owned by each topic, ``>= 1``.
        topic_weight: Share of a document's tokens drawn from its topics' own words, in
            ``(0, 1]``; the larger, the easier the classes are to tell apart.
        mixing: Mean share of a document's topic mass given to secondary topics, in
            ``[0, 1)``; ``0`` gives single-topic documents.
        noise: Fraction of labels flipped, in ``[0, 0.5)``.
        seed: Seed for ``numpy.random.default_rng``; the same arguments give the same data.
        dtype: Floating dtype of the matrix values.

    Returns:
        A tuple ``(X, y)``: ``X`` is a ``scipy.sparse.csr_matrix`` of shape ``(n, d)`` with
        sorted indices, positive values and unit-norm rows; ``y`` is an int64 array of
        shape ``(n,)`` with values in ``{-1, +1}``.

    Raises:
        TypeError: If a real argument is not a number.
        ValueError: If an argument is out of range (the message names it).

    Example:
        >>> X, y = topic_corpus(300, 5000, topics=5, seed=0)
        >>> X.shape, X.dtype, y.dtype
        ((300, 5000), dtype('float64'), dtype('int64'))
        >>> bool(np.allclose(X.multiply(X).sum(axis=1), 1.0) and X.has_sorted_indices)
        True
        >>> 100 < X.nnz / X.shape[0] < 300  # distinct words a document
        True
        >>> sorted(set(y.tolist())), 0.1 < float(np.mean(y == 1)) < 0.3
        ([-1, 1], True)
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating dtype, got {dtype}; pass np.float64 or "
                         "np.float32.")
    counts, y = _topic_counts(n, d, topics=topics, positive_topics=positive_topics,
                              mean_length=mean_length, zipf=zipf, topic_words=topic_words,
                              topic_weight=topic_weight, mixing=mixing, noise=noise,
                              seed=seed)
    n, d = counts.shape
    df = np.bincount(counts.indices, minlength=d)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    values = (1.0 + np.log(counts.data)) * idf[counts.indices]
    rows = np.repeat(np.arange(n), np.diff(counts.indptr))
    values /= np.sqrt(np.add.reduceat(values * values, counts.indptr[:-1]))[rows]
    X = sp.csr_matrix((values.astype(dtype), counts.indices, counts.indptr), shape=(n, d))
    X.has_sorted_indices = True
    return X, y


def _check_fraction(name: str, value: object, low: float, high: float, closed: str,
                    meaning: str) -> float:
    """``value`` as a float in the interval from ``low`` to ``high``; ``closed`` names the
    closed ends: "left", "right", "both" or "neither"."""
    value = _check_real(name, value)
    above = value >= low if closed in ("left", "both") else value > low
    below = value <= high if closed in ("right", "both") else value < high
    if not (above and below):
        left = "[" if closed in ("left", "both") else "("
        right = "]" if closed in ("right", "both") else ")"
        raise ValueError(f"{name} must be in {left}{low:g}, {high:g}{right}, got {value}; it is "
                         f"{meaning}.")
    return value


def _topic_counts(n, d, *, topics, positive_topics, mean_length, zipf, topic_words,
                  topic_weight, mixing, noise, seed) -> tuple[sp.csr_matrix, np.ndarray]:
    """The word counts (an int64 CSR matrix, sorted indices) and the labels of
    `topic_corpus`, after its argument checks."""
    n, d = _check_int("n", n), _check_int("d", d)
    K = _check_int("topics", topics)
    if K < 2:
        raise ValueError(f"topics must be >= 2, got {K}; the labels are one group of topics "
                         "against the rest.")
    m = _check_int("topic_words", topic_words)
    if m + _FUNCTION_WORDS > d:
        raise ValueError(f"d must be >= topic_words + {_FUNCTION_WORDS} = "
                         f"{m + _FUNCTION_WORDS} (the {_FUNCTION_WORDS} most frequent words "
                         f"belong to no topic), got d={d}; pass a larger d or a smaller "
                         "topic_words.")
    if isinstance(positive_topics, numbers.Integral):
        positive_topics = (positive_topics,)
    try:
        positive = [int(t) for t in positive_topics
                    if isinstance(t, numbers.Integral) and not isinstance(t, bool)]
        complete = len(positive) == len(positive_topics)
    except TypeError:
        complete = False
    if (not complete or not positive or len(set(positive)) != len(positive)
            or not all(0 <= t < K for t in positive) or len(positive) == K):
        raise ValueError(f"positive_topics must be distinct integers in [0, topics={K}), at "
                         f"least one and not all; got {positive_topics!r}.")
    mean_length = _check_real("mean_length", mean_length)
    if not (math.isfinite(mean_length) and mean_length >= 1.0):
        raise ValueError(f"mean_length must be a finite number >= 1 (tokens a document), got "
                         f"{mean_length}; e.g. mean_length=350.")
    zipf = _check_real("zipf", zipf)
    if not (math.isfinite(zipf) and zipf > 0.0):
        raise ValueError(f"zipf must be finite and > 0, got {zipf}; natural language is "
                         "about 1.")
    topic_weight = _check_fraction("topic_weight", topic_weight, 0.0, 1.0, "right",
                                   "the share of tokens drawn from the topics' own words")
    mixing = _check_fraction("mixing", mixing, 0.0, 1.0, "left",
                             "the mean share of a document given to secondary topics")
    noise = _check_fraction("noise", noise, 0.0, 0.5, "left",
                            "the fraction of flipped labels (0 for none)")

    rng = np.random.default_rng(seed)
    # Vocabulary: frequency ranks -> columns, background CDF over ranks.
    column_of_rank = rng.permutation(d)
    background = np.arange(1, d + 1, dtype=np.float64) ** -zipf
    background_cdf = np.cumsum(background)
    background_cdf /= background_cdf[-1]
    # Topics: own words (columns) and the CDF of their weights, topic k's spanning [k, k + 1).
    content = np.sqrt(background[_FUNCTION_WORDS:])
    own = np.empty((K, m), dtype=np.int64)
    own_cdf = np.empty((K, m))
    for k in range(K):
        ranks = _FUNCTION_WORDS + rng.choice(d - _FUNCTION_WORDS, size=m, replace=False,
                                             p=content / content.sum())
        own[k] = column_of_rank[ranks]
        weights = rng.dirichlet(np.full(m, _TOPIC_WORD_CONCENTRATION))
        own_cdf[k] = k + np.cumsum(weights)
        own_cdf[k, -1] = k + 1.0
    own, own_cdf = own.ravel(), own_cdf.ravel()
    # Documents: topic mixtures, dominant topics, lengths.
    dominant = rng.integers(0, K, size=n)
    if mixing > 0.0:
        share = rng.beta(1.0, 1.0 / mixing - 1.0, size=n)
        theta = share[:, None] * rng.dirichlet(np.full(K, _SECONDARY_CONCENTRATION), size=n)
    else:
        theta = np.zeros((n, K))
    theta[np.arange(n), dominant] += 1.0 - theta.sum(axis=1)
    dominant = np.argmax(theta, axis=1)
    mu = math.log(mean_length) - 0.5 * _LENGTH_SIGMA**2  # mean exp(mu + sigma^2 / 2)
    lengths = np.maximum(1, np.rint(rng.lognormal(mu, _LENGTH_SIGMA, size=n))).astype(np.int64)
    theta_cdf = np.cumsum(theta, axis=1)
    theta_cdf[:, -1] = 1.0

    # Tokens, a chunk of documents at a time: sorted keys doc * d + column, then counts.
    ends = np.cumsum(lengths)
    starts = [0]
    while starts[-1] < n:  # each chunk: at least one document, about _TOKENS_PER_CHUNK tokens
        base = ends[starts[-1] - 1] if starts[-1] else 0
        stop = int(np.searchsorted(ends, base + _TOKENS_PER_CHUNK, side="right"))
        starts.append(max(stop, starts[-1] + 1))
    cols, counts, row_sizes = [], [], []
    for lo, hi in zip(starts[:-1], starts[1:], strict=True):
        docs = np.repeat(np.arange(hi - lo), lengths[lo:hi])
        words = np.empty(docs.size, dtype=np.int64)
        topical = rng.random(docs.size) < topic_weight
        # Background tokens: inverse CDF over the ranks.
        plain = ~topical
        ranks = np.searchsorted(background_cdf, rng.random(int(plain.sum())), side="right")
        words[plain] = column_of_rank[np.minimum(ranks, d - 1)]
        # Topic tokens: a topic from the document's mixture, then one of its own words.
        tdocs = docs[topical]
        flat = (np.arange(hi - lo)[:, None] + theta_cdf[lo:hi]).ravel()
        k = np.searchsorted(flat, tdocs + rng.random(tdocs.size), side="right")
        k = np.minimum(k, (tdocs + 1) * K - 1) - tdocs * K
        j = np.searchsorted(own_cdf, k + rng.random(k.size), side="right")
        words[topical] = own[np.minimum(j, (k + 1) * m - 1)]
        keys = np.sort(docs * d + words)
        first = np.empty(keys.size, dtype=bool)
        first[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        at = np.flatnonzero(first)
        unique = keys[at]
        counts.append(np.diff(np.append(at, keys.size)))
        cols.append(unique % d)
        row_sizes.append(np.bincount(unique // d, minlength=hi - lo))
    cols, counts, row_sizes = (np.concatenate(a) for a in (cols, counts, row_sizes))
    index_dtype = np.int32 if max(d, cols.size) < np.iinfo(np.int32).max else np.int64
    indptr = np.concatenate(([0], np.cumsum(row_sizes))).astype(index_dtype)
    C = sp.csr_matrix((counts, cols.astype(index_dtype), indptr), shape=(n, d))
    C.has_sorted_indices = True

    y = np.where(np.isin(dominant, positive), 1, -1).astype(np.int64)
    flips = int(round(noise * n))
    if flips:
        flip = rng.choice(n, size=flips, replace=False)
        y[flip] = -y[flip]
    return C, y


def diabetes() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's diabetes set (442 x 10, real targets: a disease progression score
    from 25 to 346), features standardized; a regression set (`nsjax.losses.Squared`)."""
    X, y = _sklearn_datasets("diabetes").load_diabetes(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.asarray(y, dtype=np.float64)


def iris() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's iris set (150 x 4, 3 classes), features standardized."""
    X, y = _sklearn_datasets("iris").load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.asarray(y, dtype=np.int64)


def synthetic_multilabel(
    n: int, d: int, n_labels: int, *, density: float | None = None, seed: int = 0
) -> tuple[np.ndarray | sp.csr_matrix, list[list[int]]]:
    """Seeded multilabel data: 1 to 3 labels per example from a planted linear model.

    Features are standard normal (dense), or, with ``density``, a `synthetic_sparse` matrix.
    Each example gets its top-scoring label under a planted (d, K) weight matrix, plus every
    other label whose score is within a margin of it, capped at 3 labels.

    Returns:
        ``(X, labels)`` with ``labels`` a list of n lists of label indices in ``0..K-1``.
    """
    n, d, K = _check_int("n", n), _check_int("d", d), _check_int("n_labels", n_labels)
    if K < 2:
        raise ValueError(f"n_labels must be >= 2; got {K}.")
    rng = np.random.default_rng(seed)
    if density is None:
        X = rng.standard_normal((n, d))
    else:
        X = synthetic_sparse(n, d, density, seed=seed)[0]
    W = rng.standard_normal((d, K))
    scores = np.asarray(X @ W, dtype=np.float64)
    scores -= scores.mean(axis=0)
    order = np.argsort(-scores, axis=1)
    top = np.take_along_axis(scores, order, axis=1)
    spread = np.std(scores)
    count = 1 + np.sum(top[:, 1:3] >= top[:, :1] - 0.5 * spread, axis=1)
    return X, [sorted(order[i, : count[i]].tolist()) for i in range(n)]


def synthetic_chains(
    n: int, length: int, n_labels: int, d: int, *, noise: float = 1.5, stay: float = 0.8,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded sequence-labelling data from a hidden Markov model, where the transitions
    carry information the tokens alone do not (for `nsjax.chains`).

    Labels: a Markov chain over ``n_labels`` states that keeps its state with probability
    ``stay`` and otherwise moves to the next state (cyclically), started uniformly. Tokens:
    the label's planted mean (standard normal, shape (K, d)) plus Gaussian noise of standard
    deviation ``noise``, so a per-token classifier errs often and the chain's regularity
    helps.

    Returns:
        ``(tokens, labels)``: float64 (n, length, d) and int (n, length) in ``0..K-1``.
    """
    n, length = _check_int("n", n), _check_int("length", length)
    K, d = _check_int("n_labels", n_labels), _check_int("d", d)
    noise, stay = _check_real("noise", noise), _check_real("stay", stay)
    if K < 2 or not 0 <= stay <= 1:
        raise ValueError(f"n_labels must be >= 2 and stay in [0, 1]; got {K}, {stay}.")
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((K, d))
    labels = np.empty((n, length), dtype=np.int64)
    labels[:, 0] = rng.integers(0, K, size=n)
    for t in range(1, length):  # a loop over positions at generation time only
        move = rng.random(n) >= stay
        labels[:, t] = (labels[:, t - 1] + move) % K
    tokens = means[labels] + noise * rng.standard_normal((n, length, d))
    return tokens, labels


def hadamard_problem(d: int, lam: float, variant: str = "orthonormal"):
    """The lower-bound problem of Saha et al. (2009), eq. 14: J(w) = max_i ⟨a_i, w⟩ + λ/2 ‖w‖².

    Returned as an `nsjax.Problem` with X = Aᵀ (so the scores are ⟨a_i, w⟩) and a
    `MaxAffine` loss with reduction="max".

    Two variants, because eq. 14 as printed does not do what its proof needs:

    - ``"literal"``: A = (1/√d) [[H, −H], [−H, H]] with H = H_{d/2}, as printed. Its columns
      come in antipodal pairs (a_{j+d/2} = −a_j), so they are not orthonormal, the risk is
      ≥ 0 with J* = 0 at w = 0, and BMRM closes the gap within two steps.
    - ``"orthonormal"``: A = H_d / √d, orthonormal columns as the proof of Thms. 6–7
      assumes. Then J* = −1/(2λd) (all d cuts active with α = 1/d), and BMRM from w_0 = 0 with
      an argmax (vertex) subgradient has, for 1 ≤ t < d, exactly
      J(w_t) = 1/(2λt) and ε_t = min_{t'≤t} J(w_{t'}) − J_t(w_t) = 1/(2λt) (J(w_0) = 0),
      the O(1/ε) lower bound reproduced step by step.

    Args:
        d: a power of two ≥ 2.
        lam: λ > 0.
        variant: "orthonormal" or "literal".
    """
    import nsjax  # local: datasets is imported by nsjax itself

    if not (isinstance(d, (int, np.integer)) and d >= 2 and d & (d - 1) == 0):
        raise ValueError(f"d must be a power of two >= 2; got {d!r}.")
    if variant == "orthonormal":
        A = _hadamard(d) / np.sqrt(d)
    elif variant == "literal":
        H = _hadamard(d // 2)
        A = np.block([[H, -H], [-H, H]]) / np.sqrt(d)
    else:
        raise ValueError(f"variant must be 'orthonormal' or 'literal'; got {variant!r}.")
    loss = nsjax.losses.MaxAffine(np.ones((d, 1)), reduction="max")
    return nsjax.Problem(loss, nsjax.regularizers.L2(lam), A.T)


def _hadamard(d: int) -> np.ndarray:
    """Sylvester's Hadamard matrix H_d (H_1 = 1, H_2d = [[H, H], [H, −H]])."""
    H = np.ones((1, 1))
    while H.shape[0] < d:
        H = np.block([[H, H], [H, -H]])
    return H


# ----------------------------------------------------------------------------------------
# OBA (Keskar et al. 2016): the "Synthetic" problem, the diagonal dominance D, the relative error
# ----------------------------------------------------------------------------------------

# Largest order solved with a dense LAPACK eigenvalue routine in `_smallest_eigenvalue`;
# above it, a Lanczos iteration (its O(n^2) matvecs beat the O(n^3) tridiagonal reduction).
_DENSE_EIGH_MAX_ORDER = 1000
# Power-iteration cap for the Perron pair deflated before the Lanczos iteration.
_PERRON_MAX_ITERATIONS = 200


def oba_synthetic(
    n: int = 5000, *, seed: int = 0, scale: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The "Synthetic" L1-logistic test problem of the OBA paper (Keskar et al. 2016), Appendix B.

    The paper's MATLAB recipe (Appendix B), with ``numpy.random.default_rng(seed)`` in
    place of MATLAB's ``rand`` (draws in the same order, labels first)::

        y = -1 + (rand(n,1) > 0.5)*2;            % labels +-1 with probability 1/2 each
        X = rand(n,n);  X = X + X';              % symmetric, entries in [0, 2)
        mineig = min(eig(X));
        if (mineig < 0)  X = eye(size(X))*mineig*-2 + X;  end   % shift to 2|mineig| > 0
        X = chol(X);                             % upper triangular R with R'R = X + X' + shift

    followed by the feature-wise (column) min-max normalization to ``[-1, 1]`` that Sec. 4
    applies to the Synthetic and Alpha sets: ``x <- -1 + 2 (x - min_j) / (max_j - min_j)``
    per column ``j``. The rows of ``R`` are the examples and its columns the features, so
    the problem is square: ``n`` examples and ``n`` features (Table 1: n = 5000). The labels
    are independent of ``X``, "balanced" only in expectation.

    The scaling is what makes the problem non-diagonally dominant: the unscaled ``R`` has
    ``RᵀR = X + X' + shift``, whose diagonal outweighs its columns (D of eq. (16) about
    1.2), while the scaled columns share a near-constant ``-1`` component (the zeros below
    the diagonal map close to ``-1``), so ``XᵀX`` is close to a multiple of the all-ones
    matrix and D approaches ``sqrt(n)``. With the scaling, `logistic_hessian_dominance`
    gives D = 69.42 at n = 5000 (seeds 0-4: 69.420 to 69.428), reproducing Table 3, and
    about 21.18 at n = 500 (seeds 0-4: 21.17 to 21.20); without it, about 1.2 at both.

    The smallest eigenvalue is computed by LAPACK for ``n <= 1000`` and above that by a
    Lanczos iteration (ARPACK) after deflating the Perron eigenvalue (about n); both agree
    to about 1e-13, below the rounding error of a dense ``eig``. The cost is one Cholesky
    factorization (O(n³)) and one extreme eigenvalue.

    Args:
        n: Number of examples, which is also the number of features; ``>= 2`` (with
            ``n = 1`` the single column is constant and cannot be min-max scaled).
        seed: Seed for ``numpy.random.default_rng``; the same arguments give the same data.
        scale: Apply the paper's column-wise min-max scaling to ``[-1, 1]`` (the default,
            as in the paper's experiments and Table 3). ``False`` returns the raw Cholesky
            factor ``R``.

    Returns:
        A tuple ``(X, y)``: ``X`` is a C-contiguous float64 array of shape ``(n, n)`` (every
        column spans exactly ``[-1, 1]`` when ``scale`` is true); ``y`` is an int64 array
        of shape ``(n,)`` with values in ``{-1, +1}``.

    Raises:
        ValueError: If ``n`` is not an integer ``>= 2``.
        TypeError: If ``scale`` is not a bool.

    Example:
        >>> X, y = oba_synthetic(200, seed=0)
        >>> X.shape, X.dtype, y.dtype
        ((200, 200), dtype('float64'), dtype('int64'))
        >>> bool(X.min(axis=0).max() == -1.0 and X.max(axis=0).min() == 1.0)
        True
        >>> sorted(set(y.tolist()))
        [-1, 1]
        >>> round(logistic_hessian_dominance(X), 1)  # close to sqrt(200) = 14.1
        13.0
    """
    n = _check_int("n", n)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}; with n = 1 the single feature is constant "
                         "and cannot be min-max scaled (the paper uses n = 5000).")
    if not isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"scale must be True or False, got {scale!r}.")

    import scipy.linalg as sla

    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) > 0.5, 1, -1).astype(np.int64)
    S = rng.random((n, n))
    S += S.T  # symmetric: numpy buffers the overlapping transpose
    mineig = _smallest_eigenvalue(S)
    if mineig < 0:
        S[np.diag_indices(n)] -= 2.0 * mineig
    # S is symmetric, so its (Fortran-ordered) transpose view is S itself: factor it as
    # L Lᵀ in place and take R = Lᵀ, C-ordered without a copy (R is MATLAB's chol(S)).
    R = sla.cholesky(S.T, lower=True, overwrite_a=True, check_finite=False).T
    if scale:
        lo, hi = R.min(axis=0), R.max(axis=0)
        R -= lo
        R *= 2.0 / (hi - lo)
        R -= 1.0
        # Pin the extremes exactly (rounding in the product can leave 1 - eps).
        R[np.argmin(R, axis=0), np.arange(n)] = -1.0
        R[np.argmax(R, axis=0), np.arange(n)] = 1.0
    return R, y


def _smallest_eigenvalue(S: np.ndarray, dense_max_order: int = _DENSE_EIGH_MAX_ORDER) -> float:
    """Smallest eigenvalue of the symmetric matrix ``S`` with positive entries.

    LAPACK (``numpy.linalg.eigvalsh``) up to ``dense_max_order``; above it, ARPACK's
    Lanczos (``eigsh``, ``which='SA'``) on ``S - λ₁ v vᵀ``, where the Perron pair (λ₁ ≈ n,
    v > 0, from a power iteration) is deflated: it would otherwise stretch the spectrum
    about fortyfold and slow the Lanczos iteration down. An error Δv ⊥ v in the Perron
    vector moves the other eigenvalues by O(λ₁ |Δv|²) only, far below rounding.
    """
    import scipy.sparse.linalg as spla

    n = S.shape[0]
    if n <= dense_max_order:
        return float(np.linalg.eigvalsh(S)[0])
    v = np.full(n, 1.0 / math.sqrt(n))
    for _ in range(_PERRON_MAX_ITERATIONS):
        Sv = S @ v
        v_new = Sv / np.linalg.norm(Sv)
        # The error is about |λ₂/λ₁| (< 0.03 here) times the last change.
        converged = np.linalg.norm(v_new - v) <= 1e-12
        v = v_new
        if converged:
            break
    lam = float(v @ (S @ v))

    def deflated(z: np.ndarray) -> np.ndarray:
        z = np.ravel(z)
        return S @ z - lam * v * (v @ z)

    op = spla.LinearOperator((n, n), matvec=deflated, dtype=np.float64)
    start = np.random.default_rng(0).standard_normal(n)  # fixed: results are reproducible
    # tol is ARPACK's relative residual bound; the eigenvalue error is below it (of order
    # residual² / gap for a symmetric matrix), and 1e-12 costs a fifth fewer matvecs than
    # tol=0 (machine precision) for the same value to about 1e-13 at n = 5000.
    return float(spla.eigsh(op, k=1, which="SA", tol=1e-12, v0=start,
                            return_eigenvectors=False)[0])


def diagonal_dominance(A) -> float:
    """The level of diagonal dominance D(A) of the OBA paper (Keskar et al. 2016), Sec. 4.3,
    eq. (16).

    For a symmetric matrix ``A``,

        D(A) = max_i ‖A_i‖₂ / max_i |A_ii|,

    with ``A_i`` the i-th column: the largest column norm over the largest diagonal entry
    (two separate maxima, as printed). ``D >= 1``; the smaller, the closer ``A`` is to
    diagonally dominant (D = 1 for a diagonal matrix, ``sqrt(n)`` for the n x n all-ones
    matrix). D is invariant under ``A -> c A`` for ``c != 0``. Table 3 of the paper reports
    D of the Hessian of the logistic loss at the starting point: see
    `logistic_hessian_dominance`.

    Args:
        A: A square symmetric matrix: a numpy array (or anything ``numpy.asarray``
            converts) or a ``scipy.sparse`` matrix, real and finite.

    Returns:
        D(A) as a Python float.

    Raises:
        ValueError: If ``A`` is not square, not finite, not symmetric (to a relative
            tolerance of 1e-8), or has an all-zero diagonal (D is undefined).

    Example:
        >>> diagonal_dominance(np.eye(3))
        1.0
        >>> diagonal_dominance(np.ones((4, 4)))  # sqrt(4)
        2.0
        >>> round(diagonal_dominance([[2.0, 1.0], [1.0, 3.0]]), 4)  # max(√5, √10) / 3
        1.0541
    """
    if sp.issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"A must be a square matrix, got shape {A.shape}.")
        if not np.all(np.isfinite(A.data)):
            raise ValueError("A must be finite; it has NaN or infinite entries.")
        scale = abs(A).max() if A.nnz else 0.0
        asym = abs(A - A.T).max() if A.nnz else 0.0
        col_norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=0)).ravel())
        diag = A.diagonal()
    else:
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"A must be a square matrix, got shape {A.shape}.")
        if not np.all(np.isfinite(A)):
            raise ValueError("A must be finite; it has NaN or infinite entries.")
        scale = np.abs(A).max() if A.size else 0.0
        asym = np.abs(A - A.T).max() if A.size else 0.0
        col_norms = np.sqrt(np.einsum("ij,ij->j", A, A))
        diag = np.diagonal(A)
    if asym > 1e-8 * scale:
        raise ValueError(f"A must be symmetric (eq. (16) is defined for symmetric matrices); "
                         f"max |A - Aᵀ| = {asym:.3g} against max |A| = {scale:.3g}.")
    return _dominance_ratio(col_norms, diag)


def _dominance_ratio(col_norms: np.ndarray, diag: np.ndarray) -> float:
    top = float(np.max(np.abs(diag))) if diag.size else 0.0
    if top == 0.0:
        raise ValueError("D(A) of eq. (16) is undefined: the diagonal of A is all zeros "
                         "(or A is empty).")
    return float(np.max(col_norms)) / top


def logistic_hessian_dominance(X, w=None) -> float:
    """D(∇²f(w)) of Keskar et al. (2016), eq. (16) and Table 3, for the logistic loss f.

    With scores ``z = X w``, the logistic loss ``f(w) = (1/m) Σ log(1 + exp(-y_i z_i))`` has
    Hessian ``∇²f(w) = (1/m) Xᵀ diag(σ(z) σ(-z)) X``, which does not depend on the labels
    (σ(z)σ(-z) is even in z) nor, for D, on the factor 1/m (or LIBLINEAR's C): D is
    scale-invariant. At the paper's starting point ``w = x⁰ = 0`` all weights are 1/4, so D
    is that of the Gram matrix ``XᵀX``; the paper's 1e-8 I Hessian regularization changes it
    by a relative 1e-8 at most and is left out. The d x d Hessian is formed explicitly
    (sparse if ``X`` is), so this is for moderate d (dense: O(d²) memory, O(m d²) time).

    Args:
        X: The (m, d) data matrix: a numpy array or a ``scipy.sparse`` matrix, finite.
        w: The (d,) point; ``None`` (default) is the paper's x⁰ = 0 of Table 3.

    Returns:
        D(∇²f(w)) as a Python float.

    Raises:
        ValueError: If ``X`` is not a finite 2-D array, ``w`` has the wrong shape, or a
            column of ``X`` carries no weight (all zero), so that D is undefined.

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 2.0]])
        >>> logistic_hessian_dominance(X)  # XᵀX = diag(1, 4)
        1.0
        >>> round(logistic_hessian_dominance(np.ones((3, 3))), 4)  # XᵀX = 3·ones: sqrt(3)
        1.7321
    """
    sparse = sp.issparse(X)
    if sparse:
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = bool(np.all(np.isfinite(X.data)))
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D (examples, features) matrix, got shape "
                             f"{X.shape}.")
        finite = bool(np.all(np.isfinite(X)))
    if not finite:
        raise ValueError("X must be finite; it has NaN or infinite entries.")
    m, d = X.shape
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (d,):
            raise ValueError(f"w must have shape ({d},) to match X's {d} columns, got "
                             f"{w.shape}.")
        if not np.all(np.isfinite(w)):
            raise ValueError("w must be finite; it has NaN or infinite entries.")
        z = np.asarray(X @ w).ravel()
        weights = np.exp(-np.logaddexp(0.0, z) - np.logaddexp(0.0, -z))  # σ(z)σ(-z)
    if sparse:
        Xw = X if w is None else sp.diags(np.sqrt(weights)) @ X
        H = sp.csr_matrix(Xw.T @ Xw)
        return _dominance_ratio(np.sqrt(np.asarray(H.multiply(H).sum(axis=0)).ravel()),
                                H.diagonal())
    Xw = X if w is None else X * np.sqrt(weights)[:, None]
    from scipy.linalg.blas import dsyrk

    # Upper triangle of XᵀX = (Xᵀ)(Xᵀ)ᵀ; Xᵀ of a C-ordered X is F-ordered, so no copy.
    U = dsyrk(1.0, np.asarray(Xw.T, order="F"), trans=0)
    diag = np.diagonal(U).copy()
    U *= U
    # Column norms of the symmetric H from its upper triangle: ‖H_i‖² = colsum + rowsum − H_ii².
    col_norms = np.sqrt(U.sum(axis=0) + U.sum(axis=1) - diag * diag)
    return _dominance_ratio(col_norms, diag)


def relative_function_error(value, optimal_value):
    """The relative function error of the OBA paper (Keskar et al. 2016), Sec. 4.1, eq. (15).

        (φ(x^k) − φ(x*)) / (1 + φ(x*)),

    with φ = f + μ‖·‖₁ the objective of eq. (1) and φ(x*) its optimal value (the paper
    obtains it by running OBA to a tolerance of 1e-10). This is what Figures 1 and 2 plot
    against CPU time. It is a difference of objective values, not an optimality measure
    based on subgradients: it is 0 exactly at a minimizer and positive elsewhere. The
    denominator is ``1 + φ(x*)``, not ``|φ(x*)|``, so the measure is not scale-invariant;
    it needs ``φ(x*) > -1`` (true for losses ≥ 0 such as the logistic loss).

    Args:
        value: φ(x^k): a float, or an array of them (e.g. a solver's value history; NaN
            entries, such as the padding of ``Solution.history``, give NaN).
        optimal_value: φ(x*), a finite real scalar ``> -1`` (a Python or numpy number, or
            a 0-d array such as ``Solution.value``).

    Returns:
        A float for a scalar ``value``, else a float64 array of the same shape.

    Raises:
        TypeError: If ``optimal_value`` is not a real scalar.
        ValueError: If ``optimal_value`` is not finite or is ``<= -1``.

    Example:
        >>> # φ(x) = log(1 + e^{-x}) + |x| is minimized at x* = 0 (|f'(0)| = 1/2 <= μ = 1).
        >>> phi = lambda x: np.logaddexp(0.0, -x) + abs(x)
        >>> round(relative_function_error(phi(1.0), phi(0.0)), 6)
        0.36625
        >>> relative_function_error([phi(0.0), np.nan], phi(0.0))
        array([ 0., nan])
    """
    # A real scalar of any kind (Python, numpy, or a 0-d JAX array such as Solution.value).
    if (isinstance(optimal_value, (str, bytes)) or np.ndim(optimal_value) != 0
            or np.asarray(optimal_value).dtype.kind not in "fiu"):
        raise TypeError(f"optimal_value must be a real number, got {optimal_value!r} "
                        f"({type(optimal_value).__name__}).")
    star = float(np.asarray(optimal_value))
    if not (math.isfinite(star) and star > -1.0):
        raise ValueError(f"optimal_value must be finite and > -1, got {star}; eq. (15) divides "
                         "by 1 + φ(x*).")
    value = np.asarray(value, dtype=np.float64)
    err = (value - star) / (1.0 + star)
    return float(err) if err.ndim == 0 else err
