"""How losses take their labels: each loss says what it accepts and how it encodes it.

`Loss` (in `base.py`) takes no labels; the mixins here give the binary, multiclass and
multilabel encodings. ``encode_labels(y, n, dtype, classes)`` returns the labels as the
loss computes with them and the original class values:

- binary: any two values, the sorted pair mapped to (−1, +1);
- multiclass: any K ≥ 2 values, mapped to indices 0..K−1 in sorted order;
- multilabel: label sets (list of lists, sparse indicator, dense 0/1) as an (n, K) mask.

With ``classes`` given, y is taken as already encoded (as under `jax.jit`/`jax.vmap`, where
labels are traced and cannot be sorted); its values are checked only when concrete.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp


def is_traced(x) -> bool:
    """True for a value being traced by jit/vmap/grad (its values are unknown)."""
    return isinstance(x, jax.core.Tracer)


def check_length(y, n, what="entries"):
    """Raise a ValueError unless y has n entries along its first axis."""
    got = jnp.shape(y)[0] if jnp.ndim(y) else None
    if got != n:
        raise ValueError(f"X has {n} rows but y has {got} {what}; they must have the same "
                         "length.")


def _needs(y, loss):
    if y is None:
        raise ValueError(f"{type(loss).__name__} needs labels y; got y=None.")


def _sorted_classes(y, n):
    """y as a 1-D array of n finite labels: its sorted classes and each label's index."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D labels with shape (n,); got shape {y.shape}.")
    check_length(y, n)
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf; every example needs a finite label.")
    return np.unique(y, return_inverse=True)


def _given(y, n, classes, dtype, valid, expected):
    """Already-encoded labels: cast, and check the values where they are concrete."""
    check_length(y, n)
    y = jnp.asarray(y, dtype)
    if not is_traced(y) and not bool(np.all(valid(np.asarray(y)))):
        raise ValueError(f"with classes={classes!r}, y must be already encoded: {expected}.")
    return y, tuple(classes)


class BinaryLabels:
    """Two classes, encoded as ±1 in the computation dtype."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            if len(classes) != 2:
                raise ValueError(f"a binary loss needs two classes; got classes={classes!r}.")
            return _given(y, n, classes, dtype, lambda v: np.abs(v) == 1, "±1 values")
        classes, index = _sorted_classes(y, n)
        if classes.size != 2:
            raise ValueError(
                f"a binary loss needs exactly two classes in y; found {classes.size} "
                f"({classes[:10].tolist()}{' ...' if classes.size > 10 else ''})."
            )
        return jnp.asarray(np.where(index == 1, 1.0, -1.0), dtype), tuple(classes.tolist())

    def num_outputs(self, classes):
        """K for (n, K) scores, None for one score per example."""
        return None


class MulticlassLabels:
    """K ≥ 2 classes, encoded as int32 indices; weights of shape (d, K)."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            K = len(classes)
            return _given(y, n, classes, jnp.int32, lambda v: (v >= 0) & (v < K),
                          f"class indices in 0..{K - 1}")
        classes, index = _sorted_classes(y, n)
        if classes.size < 2:
            raise ValueError(
                f"a multiclass loss needs at least two classes in y; found {classes}.")
        return jnp.asarray(index, jnp.int32), tuple(classes.tolist())

    def num_outputs(self, classes):
        """K for (n, K) scores, None for one score per example."""
        return len(classes)


class MultilabelLabels:
    """Label sets, encoded as an (n, K) bool mask; weights of shape (d, K)."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            return _given(y, n, classes, bool, lambda v: v.shape[1:] == (len(classes),),
                          f"an (n, {len(classes)}) 0/1 mask")
        Y, classes = _label_sets(y)
        check_length(Y, n, "label sets")
        if Y.shape[1] < 2:
            raise ValueError(f"a multilabel loss needs at least two labels; found {Y.shape[1]}.")
        empty = np.flatnonzero(~Y.any(axis=1))
        if empty.size:
            raise ValueError(
                f"{empty.size} examples have no label (first: row {empty[0]}); every example "
                "needs at least one."
            )
        return jnp.asarray(Y), classes

    def num_outputs(self, classes):
        """K for (n, K) scores, None for one score per example."""
        return len(classes)


def _label_sets(y):
    """(mask, classes) from lists of labels, a sparse indicator or a dense 0/1 matrix."""
    if sp.issparse(y):
        Y = np.asarray(y.toarray()) != 0
        return Y, tuple(range(Y.shape[1]))
    if isinstance(y, (list, tuple)) and (len(y) == 0 or not np.isscalar(y[0])):
        labels = sorted({z for row in y for z in row})
        pos = {z: k for k, z in enumerate(labels)}
        Y = np.zeros((len(y), len(labels)), bool)
        for i, row in enumerate(y):
            Y[i, [pos[z] for z in row]] = True
        return Y, tuple(labels)
    arr = np.asarray(y)
    if arr.ndim != 2 or not np.all((arr == 0) | (arr == 1)):
        raise ValueError(
            "multilabel y must be a list of label lists, a scipy sparse indicator matrix "
            f"or a dense 0/1 matrix of shape (n, K); got an array of shape {arr.shape}."
        )
    return arr.astype(bool), tuple(range(arr.shape[1]))


def checked_delta(loss, K, dtype):
    """``loss`` with its (K, K) label loss Δ checked and cast (None stays None)."""
    if loss.delta is None or is_traced(loss.delta):
        return loss
    D = np.asarray(loss.delta, dtype=float)
    if D.shape != (K, K):
        raise ValueError(f"delta must have shape (K, K) = ({K}, {K}); got {D.shape}.")
    if not np.all(np.isfinite(D)) or np.any(D < 0) or np.any(np.diag(D) != 0):
        raise ValueError("delta must be finite, >= 0, with a zero diagonal (Δ(z, z) = 0).")
    return dataclasses.replace(loss, delta=jnp.asarray(D, dtype))
