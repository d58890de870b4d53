"""Datasets for tests, examples and benchmarks.

Everything here is plain numpy / scipy / scikit-learn: the loaders return ``numpy.ndarray``
features and labels, or a ``scipy.sparse.csr_matrix`` for the sparse sets, so they can be
converted to JAX arrays (or kept sparse) by the caller.

* :func:`breast_cancer`: scikit-learn's Wisconsin breast cancer set, standardized.
* :func:`digits_binary` / :func:`digits`: scikit-learn's 8x8 digits, scaled to ``[0, 1]``.
* :func:`load_svmlight`: read a LIBSVM / svmlight file (e.g. rcv1, news20) from disk.
* :func:`synthetic_sparse`: a seeded sparse binary classification problem of any size and
  density, with power-law feature frequencies, for benchmarks.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits, load_svmlight_file

__all__ = [
    "breast_cancer",
    "digits",
    "digits_binary",
    "load_svmlight",
    "synthetic_sparse",
]

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
    X, y = load_breast_cancer(return_X_y=True)
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, np.asarray(y, dtype=np.int64)


def _digits_features() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return np.asarray(X, dtype=np.float64) / 16.0, np.asarray(y, dtype=np.int64)


def digits_binary() -> tuple[np.ndarray, np.ndarray]:
    """Handwritten digits (1797 samples, 64 pixels) as an even-vs-odd binary problem.

    Returns:
        A tuple ``(X, y)``: ``X`` is a float64 array of shape ``(1797, 64)`` with the pixel
        intensities divided by 16, so in ``[0, 1]``; ``y`` is an integer array of shape
        ``(1797,)`` with ``+1`` for even digits and ``-1`` for odd digits.
    """
    X, digit = _digits_features()
    y = np.where(digit % 2 == 0, 1, -1).astype(np.int64)
    return X, y


def digits() -> tuple[np.ndarray, np.ndarray]:
    """Handwritten digits (1797 samples, 64 pixels, 10 classes).

    Returns:
        A tuple ``(X, y)``: ``X`` is a float64 array of shape ``(1797, 64)`` with the pixel
        intensities divided by 16, so in ``[0, 1]``; ``y`` is an integer array of shape
        ``(1797,)`` with the digit labels ``0..9``.
    """
    return _digits_features()


def load_svmlight(
    path: str | os.PathLike[str],
    n_features: int | None = None,
    dtype: np.dtype | type = np.float64,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Load a LIBSVM / svmlight format file via ``sklearn.datasets.load_svmlight_file``.

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
    try:
        X, y = load_svmlight_file(str(file), n_features=n_features, dtype=dt)
    except ValueError as e:
        where = _first_bad_svmlight_line(file)
        if where is None:
            raise ValueError(f"{str(file)!r}: {e}") from e
        raise ValueError(f"{str(file)!r}, line {where[0]}: {where[1]}: {where[2]!r}. Each line "
                         "must read 'label index:value index:value ...' with ascending "
                         "indices (a '#' starts a comment).") from e
    return sp.csr_matrix(X), np.asarray(y)


def _first_bad_svmlight_line(file: Path):
    """(line number, what is wrong, the line) for the first malformed line of an svmlight
    file, or None. Only called after scikit-learn's parser failed, to say where."""
    import bz2
    import gzip

    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(file.suffix, open)
    with opener(file, "rb") as f:
        for number, raw in enumerate(f, start=1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            label, *pairs = line.split()
            try:
                float(label)
            except ValueError:
                return number, f"the label {label.decode(errors='replace')!r} is not a number", \
                    raw.decode(errors="replace").rstrip()
            last = -1
            for pair in pairs:
                if b":" not in pair:
                    return number, (f"{pair.decode(errors='replace')!r} has no colon (expected "
                                    "index:value)"), raw.decode(errors="replace").rstrip()
                key, value = pair.split(b":", 1)
                if key == b"qid":
                    continue
                try:
                    index, _ = int(key), float(value)
                except ValueError:
                    return number, (f"{pair.decode(errors='replace')!r} is not an integer "
                                    "index and a number"), raw.decode(errors="replace").rstrip()
                if index <= last:
                    return number, "feature indices must be ascending and unique", \
                        raw.decode(errors="replace").rstrip()
                last = index
    return None


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


def iris() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's iris set (150 x 4, 3 classes), features standardized."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
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


def hadamard_problem(d: int, lam: float, variant: str = "orthonormal"):
    """The lower-bound problem of paper 004, eq. 14: J(w) = max_i ⟨a_i, w⟩ + λ/2 ‖w‖².

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
